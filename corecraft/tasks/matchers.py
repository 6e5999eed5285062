"""Value matchers used by rubric criteria and minefields: eq, ne, approx, regex, in, contains,
comparisons and null checks. A bare scalar in YAML means ``eq``.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, model_validator
from pydantic.json_schema import JsonSchemaValue, SkipJsonSchema
from pydantic_core import CoreSchema

Scalar = str | int | float | bool | None



_LEADING_FLAGS = re.compile(r"(?:\(\?[a-zA-Z]+\))*")
_SCAN = "(?=[\\s\\S]*"


def whole_text_lookaheads(pattern: str) -> bool:
    """Whether ``pattern`` (after its inline flags) is nothing but lookaheads that each scan the rest of the text,
    ``(?=[\\s\\S]*...)``: it then matches somewhere exactly when it matches at the start, so it is tried there
    alone (``re.search`` would retry it from every position of a long reply, in quadratic time)."""
    body = pattern[_LEADING_FLAGS.match(pattern).end():]  # type: ignore[union-attr]
    depth, i, starts = 0, 0, []
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":  # a character class: skip to its closing bracket
            i += 2 if body[i + 1:i + 2] in ("]", "^") else 1
            while i < len(body) and body[i] != "]":
                i += 2 if body[i] == "\\" else 1
        elif ch == "(":
            if depth == 0:
                starts.append(i)
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0:
            return False
        i += 1
    return bool(starts) and depth == 0 and all(body.startswith(_SCAN, k) for k in starts)


def regex_found(pattern: str, text: str, flags: int = 0) -> bool:
    """Whether ``pattern`` matches somewhere in ``text`` (:func:`whole_text_lookaheads` tried at the start only)."""
    find = re.match if whole_text_lookaheads(pattern) else re.search
    return find(pattern, text, flags) is not None


class Matcher(BaseModel):
    """One or more conditions on a value; all given conditions must hold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    eq: Scalar | list[Any] | dict[str, Any] = Field(default=None, description="Equal to (strings compare exactly).")
    ne: Scalar = Field(default=None, description="Not equal to.")
    approx: float | None = Field(default=None, description="A number within `tol` of this.")
    tol: float = Field(default=0.01, ge=0, description="Tolerance for `approx` (default one cent).")
    regex: str | None = Field(default=None, description="Python regex searched in the value (case-insensitive).")
    one_of: list[Scalar] | None = Field(default=None, alias="in", description="The value is one of these.")
    contains: str | None = Field(default=None, description="Substring (case-insensitive), or list element.")
    not_contains: str | None = Field(default=None, description="Must not contain (case-insensitive).")
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None
    is_null: bool | None = Field(default=None, description="True: the value is missing/null; false: it is set.")
    set_fields: SkipJsonSchema[frozenset[str]] = Field(default=frozenset(), exclude=True)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """Editors must accept the bare-value shorthand for ``eq`` as well as the mapping."""
        shorthand = {"type": ["string", "number", "boolean", "null", "array"], "description": "Shorthand for `eq`."}
        return {"anyOf": [shorthand, handler(core_schema)]}

    @model_validator(mode="before")
    @classmethod
    def _scalar_is_eq(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return {"eq": value, "set_fields": frozenset({"eq"})}
        return {**value, "set_fields": frozenset(k if k != "in" else "one_of" for k in value)}

    @model_validator(mode="after")
    def _check(self) -> Matcher:
        if self.regex is not None:
            re.compile(self.regex)
        if not self.set_fields - {"tol"}:
            raise ValueError("a matcher needs at least one condition (eq, approx, regex, in, contains, …)")
        return self

    def matches(self, value: Any) -> bool:
        return not self.mismatch(value)

    def mismatch(self, value: Any) -> str:
        """Empty when the value matches; otherwise why not, in a few words."""
        f = self.set_fields
        if "is_null" in f and (value is None) != self.is_null:
            return f"is {'set' if value is not None else 'null'}"
        if "eq" in f and value != self.eq and not _loose_eq(value, self.eq):
            return f"{value!r} != {self.eq!r}"
        if "ne" in f and value == self.ne:
            return f"{value!r} == {self.ne!r}"
        number = _number(value)
        for name, bound in (("approx", self.approx), ("gt", self.gt), ("gte", self.gte), ("lt", self.lt),
                            ("lte", self.lte)):
            if name in f and (number is None or bound is None or not _compare(name, number, bound, self.tol)):
                return f"{value!r} fails {name} {bound!r}"
        if "regex" in f and (value is None or not regex_found(self.regex, str(value), re.IGNORECASE)):  # type: ignore[arg-type]
            return f"{_short(value)} does not match /{self.regex}/"
        if "one_of" in f and value not in (self.one_of or []):
            return f"{value!r} not in {self.one_of!r}"
        if "contains" in f and not _contains(value, self.contains):
            return f"{_short(value)} does not contain {self.contains!r}"
        if "not_contains" in f and _contains(value, self.not_contains):
            return f"{_short(value)} contains {self.not_contains!r}"
        return ""


def _compare(name: str, number: float, bound: float, tol: float) -> bool:
    """``number`` against ``bound`` by the comparison ``name`` (approx, gt, gte, lt, lte)."""
    if name == "approx":
        return abs(number - bound) <= tol + 1e-9
    return {"gt": number > bound, "gte": number >= bound, "lt": number < bound, "lte": number <= bound}[name]


def _loose_eq(value: Any, expected: Any) -> bool:
    a, b = _number(value), _number(expected)
    return a is not None and b is not None and not isinstance(value, bool) and abs(a - b) < 1e-9


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def _contains(value: Any, needle: str | None) -> bool:
    if value is None or needle is None:
        return False
    if isinstance(value, list):
        return any(str(v).lower() == needle.lower() for v in value) or needle.lower() in str(value).lower()
    return needle.lower() in str(value).lower()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "...'"
