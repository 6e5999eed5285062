"""OpenAI function schemas of tools: the cleaning and shaping rules a toolkit applies.

Each tool becomes a function schema whose ``parameters`` is its pydantic argument model's JSON
schema, cleaned for function calling: no ``title`` keys, ``$ref``s inlined (no ``$defs``), every
object closed with ``additionalProperties: false``, and an optional field's ``anyOf [X, null]``
folded into ``X`` (leaving the field out means "no value"). Keys come in a fixed order so the
output, and ``tools/catalog.json`` written from :meth:`Toolkit.catalog_json`, is byte-stable.

Two shapes: Chat Completions ``{"type": "function", "function": {name, description, parameters}}``
and Responses ``{"type": "function", name, description, parameters}``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel

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


def parameters_schema(args: type[BaseModel]) -> dict[str, Any]:
    """The cleaned JSON schema of a tool's argument model."""
    raw = args.model_json_schema()
    return dict(_clean(raw, raw.get("$defs", {})))


def unwrap(doc: str) -> str:
    """A docstring with wrapped lines joined (paragraph breaks kept)."""
    paragraphs = re.split(r"\n\s*\n", doc)
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def first_sentence(text: str) -> str:
    """A description's first sentence (what ``corecraft tools list`` shows)."""
    match = re.match(r"(.+?(?<!e\.g)(?<!i\.e)[.!?])(\s|$)", text, re.DOTALL)
    return match.group(1) if match else text


def function_schema(name: str, description: str, parameters: dict[str, Any], shape: Shape = "chat") -> dict[str, Any]:
    """One tool as an OpenAI function tool in the Chat Completions or Responses shape."""
    body = {"name": name, "description": description, "parameters": parameters}
    if shape == "chat":
        return {"type": "function", "function": body}
    if shape == "responses":
        return {"type": "function", **body}
    raise ValueError(f"unknown schema shape {shape!r}; use 'chat' or 'responses'")
