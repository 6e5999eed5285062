"""Tools as data, and the :class:`Toolkit` that binds them to the company policy.

A tool is a typed function ``handler(ctx, args) -> dict`` wrapped by :func:`tool` into a
:class:`Tool`: its docstring is the description the model sees (``{placeholders}`` in it are
filled from the policy, so the numbers it states are the numbers the tool enforces) and its
argument model's field descriptions are the parameter docs. Nothing is registered by importing:
a :class:`Toolkit` is built from an explicit list of tools, and everything else (OpenAI schemas,
the MCP server, the CLI, the Gymnasium env) is derived from a toolkit.

:meth:`Toolkit.call` never raises: bad JSON, unknown tools, invalid arguments, unknown ids and
policy violations come back as ``{"error": {"type", "message", "field"}}`` and the world is left
exactly as it was (every call runs inside a SQLite savepoint that is rolled back on error).
"""

from __future__ import annotations

import importlib
import inspect
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import ModuleType
from typing import Any, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError

from corecraft.tools.schemas import CATALOG_VERSION, Shape, function_schema, parameters_schema, unwrap
from corecraft.world.rules import policy_facts
from corecraft.world.seeds import Policy
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
    """What a handler works on: the episode's world, the employee the agent acts as, the policy."""

    world: World
    actor_id: str
    policy: Policy

    @property
    def conn(self) -> sqlite3.Connection:
        return self.world.conn


A = TypeVar("A", bound=Args)
Handler = Callable[[ToolContext, Any], dict[str, Any]]


@dataclass(frozen=True)
class Tool:
    """One tool: its name, argument model, handler, whether it only reads, and its docstring.

    A tool pickles by reference (the module attribute it is defined as), so toolkits, episodes and
    envs can be pickled and copied.
    """

    name: str
    args: type[Args]
    handler: Handler
    read_only: bool
    doc: str

    def __reduce__(self) -> tuple[Callable[[str, str], Tool], tuple[str, str]]:
        return _tool_by_reference, (self.handler.__module__, self.name)


def _tool_by_reference(module: str, name: str) -> Tool:
    found = getattr(importlib.import_module(module), name)
    if not isinstance(found, Tool):
        raise TypeError(f"{module}.{name} is not a tool")
    return found


def tool(*, read_only: bool) -> Callable[[Callable[[ToolContext, A], dict[str, Any]]], Tool]:
    """Make a :class:`Tool` of a handler; its second parameter's type is the argument model."""

    def wrap(fn: Callable[[ToolContext, A], dict[str, Any]]) -> Tool:
        hints = get_type_hints(fn)
        params = list(inspect.signature(fn).parameters)
        return Tool(name=fn.__name__, args=hints[params[1]], handler=fn, read_only=read_only,
                    doc=inspect.cleandoc(fn.__doc__ or "").strip())

    return wrap


def tools_in(module: ModuleType) -> tuple[Tool, ...]:
    """The tools a module defines, in definition order."""
    return tuple(value for value in vars(module).values() if isinstance(value, Tool))


def _validation_error(exc: ValidationError, args: type[BaseModel]) -> dict[str, Any]:
    """The first problem of a rejected call; an argument the tool does not take (at the top level) is answered with
    the ones it does, so a model that guessed a name (``created_after`` for ``posted_after``) can correct it."""
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or None
    kind = {"extra_forbidden": "unexpected_argument", "missing": "missing_argument"}.get(first["type"], "invalid_argument")
    message = first["msg"]
    if kind == "unexpected_argument" and len(first["loc"]) == 1:
        message = f"not an argument of this tool; it takes {', '.join(args.model_fields) or 'no arguments'}"
    more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
    return ToolError(kind, f"{field}: {message}{more}", field).payload()


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


class Toolkit:
    """A domain's tools bound to its policy: lookup by name, descriptions, and calls that never raise."""

    def __init__(self, tools: Iterable[Tool], policy: Policy) -> None:
        self.tools: dict[str, Tool] = {}
        for entry in tools:
            if entry.name in self.tools:
                raise ValueError(f"tool {entry.name} given twice")
            self.tools[entry.name] = entry
        self.policy = policy
        facts = policy_facts(policy)
        self.descriptions = {name: unwrap(entry.doc.format_map(facts)) for name, entry in self.tools.items()}

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools.values())

    def __len__(self) -> int:
        return len(self.tools)

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def __getitem__(self, name: str) -> Tool:
        return self.tools[name]

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    @cached_property
    def parameters(self) -> dict[str, dict[str, Any]]:
        """Each tool's cleaned argument schema (computed once; treat as read-only)."""
        return {name: parameters_schema(entry.args) for name, entry in self.tools.items()}

    def schemas(self, names: Iterable[str] | None = None, shape: Shape = "chat") -> list[dict[str, Any]]:
        """OpenAI function schemas for the named tools (all by default), in toolkit order."""
        wanted = set(self.tools if names is None else names)
        unknown = wanted - set(self.tools)
        if unknown:
            raise KeyError(f"unknown tool(s): {', '.join(sorted(unknown))}")
        return [function_schema(name, self.descriptions[name], self.parameters[name], shape)
                for name in self.tools if name in wanted]

    def catalog(self) -> dict[str, Any]:
        """The tool surface as data: the document checked in as ``tools/catalog.json``."""
        return {"version": CATALOG_VERSION, "tools": [
            {"name": name, "read_only": entry.read_only, "description": self.descriptions[name],
             "parameters": self.parameters[name]} for name, entry in self.tools.items()]}

    def catalog_json(self) -> str:
        """:meth:`catalog` as the exact text of ``tools/catalog.json`` (pretty, trailing newline)."""
        return json.dumps(self.catalog(), indent=2, ensure_ascii=False) + "\n"

    def context(self, world: World, actor_id: str) -> ToolContext:
        return ToolContext(world=world, actor_id=actor_id, policy=self.policy)

    def call(self, ctx: ToolContext, name: str, arguments: Mapping[str, Any] | str | None,
             allowed: frozenset[str] | None = None) -> dict[str, Any]:
        """Run one tool call and return its result or a structured error; never raises."""
        entry = self.tools.get(name) if isinstance(name, str) else None
        if entry is None or (allowed is not None and name not in allowed):
            names = sorted(allowed if allowed is not None else self.tools)
            return ToolError("unknown_tool", f"no tool named {name!r}; available: {', '.join(names)}", "name").payload()
        try:
            args = entry.args.model_validate(parse_arguments(arguments))
        except ToolError as exc:
            return exc.payload()
        except ValidationError as exc:
            return _validation_error(exc, entry.args)
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
        if not entry.read_only:
            ctx.world.writes += 1  # the next write comes a minute later (World.clock)
        return result
