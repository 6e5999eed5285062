"""OpenAI function schemas and the checked-in catalogue, derived from the one tool registry.

Each tool becomes a function schema whose ``parameters`` is its pydantic argument model's JSON
schema, cleaned for function calling: no ``title`` keys, ``$ref``s inlined (no ``$defs``), every
object closed with ``additionalProperties: false``, and an optional field's ``anyOf [X, null]``
folded into ``X`` (leaving the field out means "no value"). Keys come in a fixed order so the
output, and ``tools/catalog.json`` written from :func:`catalog_json`, is byte-stable.

Two shapes: Chat Completions ``{"type": "function", "function": {name, description, parameters}}``
and Responses ``{"type": "function", name, description, parameters}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from typing import Any, Literal

from corecraft.tools import REGISTRY, Tool

Shape = Literal["chat", "responses"]
CATALOG_VERSION = 1

_KEY_ORDER = ("type", "description", "enum", "const", "format", "pattern", "minLength", "maxLength", "minimum",
              "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf", "default", "items", "minItems",
              "maxItems", "anyOf", "properties", "required", "additionalProperties")
"""The order keys are written in; any other key follows, alphabetically."""
_MAPS = ("properties", "$defs")
"""Keys whose value maps names to schemas (a property may itself be called ``title``)."""


def _ordered(schema: dict[str, Any]) -> dict[str, Any]:
    known = [k for k in _KEY_ORDER if k in schema]
    return {k: schema[k] for k in [*known, *sorted(set(schema) - set(known))]}


def _clean(node: Any, defs: dict[str, Any]) -> Any:
    """One JSON-schema node cleaned (see the module docstring); ``defs`` resolves ``$ref``s."""
    if isinstance(node, list):
        return [_clean(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        return _clean({**target, **{k: v for k, v in node.items() if k != "$ref"}}, defs)
    variants = node.get("anyOf")
    if isinstance(variants, list) and len(variants) == 2 and {"type": "null"} in variants:
        inner = next(v for v in variants if v != {"type": "null"})
        outer = {k: v for k, v in node.items() if k != "anyOf" and not (k == "default" and v is None)}
        return _clean({**inner, **outer}, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "$defs"):
            continue
        if key in _MAPS:
            out[key] = {name: _clean(sub, defs) for name, sub in value.items()}
        else:
            out[key] = _clean(value, defs)
    if out.get("type") == "object":
        out.setdefault("properties", {})
        out["additionalProperties"] = False
    return _ordered(out)


@cache
def parameters(entry: Tool) -> dict[str, Any]:
    """The cleaned JSON schema of a tool's arguments (computed once; treat as read-only)."""
    raw = entry.args.model_json_schema()
    return _clean(raw, raw.get("$defs", {}))


@cache
def description(entry: Tool) -> str:
    """The tool's docstring with wrapped lines joined (paragraph breaks kept)."""
    paragraphs = re.split(r"\n\s*\n", entry.description)
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def first_sentence(entry: Tool) -> str:
    """The description's first sentence (what ``corecraft tools list`` shows)."""
    text = description(entry)
    match = re.match(r"(.+?(?<!e\.g)(?<!i\.e)[.!?])(\s|$)", text, re.DOTALL)
    return match.group(1) if match else text


def _selected(names: Iterable[str] | None) -> list[Tool]:
    if names is None:
        return list(REGISTRY.values())
    wanted = set(names)
    unknown = wanted - set(REGISTRY)
    if unknown:
        raise KeyError(f"unknown tool(s): {', '.join(sorted(unknown))}")
    return [entry for name, entry in REGISTRY.items() if name in wanted]


def function_schema(entry: Tool, shape: Shape = "chat") -> dict[str, Any]:
    """One tool as an OpenAI function tool in the Chat Completions or Responses shape."""
    body = {"name": entry.name, "description": description(entry), "parameters": parameters(entry)}
    if shape == "chat":
        return {"type": "function", "function": body}
    if shape == "responses":
        return {"type": "function", **body}
    raise ValueError(f"unknown schema shape {shape!r}; use 'chat' or 'responses'")


def tool_schemas(names: Iterable[str] | None = None, shape: Shape = "chat") -> list[dict[str, Any]]:
    """OpenAI function schemas for the named tools (all by default), in registry order."""
    return [function_schema(entry, shape) for entry in _selected(names)]


def catalog() -> dict[str, Any]:
    """The tool surface as data: the document checked in as ``tools/catalog.json``."""
    return {"version": CATALOG_VERSION, "tools": [
        {"name": e.name, "read_only": e.read_only, "description": description(e), "parameters": parameters(e)}
        for e in REGISTRY.values()
    ]}


def catalog_json() -> str:
    """:func:`catalog` as the exact text of ``tools/catalog.json`` (pretty, trailing newline)."""
    return json.dumps(catalog(), indent=2, ensure_ascii=False) + "\n"
