"""The one tool registry: name, pydantic argument model, handler, read-only flag.

Tools are typed functions ``handler(ctx, args) -> dict`` registered with :func:`tool`; the
function's docstring is the description the model sees and the argument model's field
descriptions are the parameter docs. Everything else (OpenAI schemas, the MCP server, the
CLI, the Gymnasium env) is derived from :data:`REGISTRY`.

:func:`call_tool` never raises: bad JSON, unknown tools, invalid arguments, unknown ids and
policy violations come back as ``{"error": {"type", "message", "field"}}`` and the world is
left exactly as it was (every call runs inside a SQLite savepoint that is rolled back on error).
"""

from __future__ import annotations

import inspect
import json
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError

from corecraft.world.store import World


class Args(BaseModel):
    """Base of every tool's argument model: unknown keys and type coercion are rejected."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ToolError(Exception):
    """A call the agent can fix: raised by handlers, returned to the agent as a structured error."""

    def __init__(self, type_: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.type, self.message, self.field = type_, message, field

    def payload(self) -> dict[str, Any]:
        return {"error": {"type": self.type, "message": self.message, "field": self.field}}


@dataclass
class ToolContext:
    """What a handler works on: the episode's world and the employee the agent acts as."""

    world: World
    actor_id: str

    @property
    def conn(self) -> sqlite3.Connection:
        return self.world.conn


A = TypeVar("A", bound=Args)
Handler = Callable[[ToolContext, Any], dict[str, Any]]


@dataclass(frozen=True)
class Tool:
    name: str
    args: type[Args]
    handler: Handler
    read_only: bool
    description: str


REGISTRY: dict[str, Tool] = {}


def tool(*, read_only: bool) -> Callable[[Callable[[ToolContext, A], dict[str, Any]]], Callable[[ToolContext, A], dict[str, Any]]]:
    """Register a handler under its function name; its second parameter's type is the argument model."""

    def register(fn: Callable[[ToolContext, A], dict[str, Any]]) -> Callable[[ToolContext, A], dict[str, Any]]:
        hints = get_type_hints(fn)
        params = list(inspect.signature(fn).parameters)
        model = hints[params[1]]
        if fn.__name__ in REGISTRY:
            raise RuntimeError(f"tool {fn.__name__} registered twice")
        REGISTRY[fn.__name__] = Tool(
            name=fn.__name__, args=model, handler=fn, read_only=read_only,
            description=inspect.cleandoc(fn.__doc__ or "").strip(),
        )
        return fn

    return register


def _validation_error(exc: ValidationError) -> dict[str, Any]:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or None
    kind = {"extra_forbidden": "unexpected_argument", "missing": "missing_argument"}.get(first["type"], "invalid_argument")
    more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
    return ToolError(kind, f"{field}: {first['msg']}{more}", field).payload()


def parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Tool-call arguments as a dict, from a dict or the JSON string a model emits."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ToolError("invalid_json", f"arguments are not valid JSON: {exc}") from None
    if not isinstance(arguments, Mapping):
        raise ToolError("invalid_arguments", "arguments must be a JSON object of named arguments")
    return dict(arguments)


def call_tool(ctx: ToolContext, name: str, arguments: Mapping[str, Any] | str | None,
              allowed: frozenset[str] | None = None) -> dict[str, Any]:
    """Run one tool call and return its result or a structured error; never raises."""
    entry = REGISTRY.get(name) if isinstance(name, str) else None
    if entry is None or (allowed is not None and name not in allowed):
        names = sorted(allowed if allowed is not None else REGISTRY)
        return ToolError("unknown_tool", f"no tool named {name!r}; available: {', '.join(names)}", "name").payload()
    try:
        args = entry.args.model_validate(parse_arguments(arguments))
    except ToolError as exc:
        return exc.payload()
    except ValidationError as exc:
        return _validation_error(exc)
    except RecursionError:
        return ToolError("invalid_arguments", "arguments are nested too deeply").payload()
    conn = ctx.conn
    conn.execute("SAVEPOINT tool_call")
    try:
        result = entry.handler(ctx, args)
    except ToolError as exc:
        conn.execute("ROLLBACK TO tool_call")
        conn.execute("RELEASE tool_call")
        return exc.payload()
    except (sqlite3.Error, ValueError, OverflowError, RecursionError) as exc:
        conn.execute("ROLLBACK TO tool_call")
        conn.execute("RELEASE tool_call")
        return ToolError("invalid_request", f"{name} could not run with these arguments: {exc}").payload()
    conn.execute("RELEASE tool_call")
    return result
