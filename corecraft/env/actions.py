"""Reading an agent's action: OpenAI assistant messages (dict or client object), single tool
calls in Chat Completions or Responses shape, lists of them, or text.

**The final-reply rule:** a string is always the final reply, whatever it looks like — a reply
that happens to be JSON (``'{"answer": 7}'``) ends the episode and is graded as text. Tool calls
are structured values only (dicts, lists of dicts, or the openai client's objects); a model's raw
JSON text must be parsed by the caller (``json.loads``) before it is sent as an action.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class ActionError(ValueError):
    """An action the env cannot read; the agent gets the message and may try again."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str | dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """One assistant turn: optional text and zero or more tool calls. No calls = final reply."""

    text: str
    calls: tuple[ToolCall, ...]

    def message(self) -> dict[str, Any]:
        """The turn as an assistant message for the transcript."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {
                    "name": c.name,
                    "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)}}
                for c in self.calls
            ]
        return msg


def _call(item: dict[str, Any], default_id: str) -> ToolCall:
    if "function" in item and isinstance(item["function"], dict):
        fn = item["function"]
        name, args, call_id = fn.get("name"), fn.get("arguments", "{}"), item.get("id")
    elif item.get("type") == "function_call":
        name, args, call_id = item.get("name"), item.get("arguments", "{}"), item.get("call_id") or item.get("id")
    elif "name" in item:
        name, args, call_id = item.get("name"), item.get("arguments", {}), item.get("id")
    else:
        raise ActionError("a tool call needs a function name: use {'type': 'function', 'function': "
                          "{'name': ..., 'arguments': '{...}'}}")
    if not isinstance(name, str) or not name:
        raise ActionError("a tool call's function name must be a non-empty string")
    if not isinstance(args, str | dict):
        raise ActionError(f"tool call {name!r}: arguments must be a JSON object or its JSON string")
    return ToolCall(id=str(call_id) if call_id else default_id, name=name, arguments=args)


def read_action(action: Any, step: int) -> Turn:
    """Normalise any accepted action shape into a :class:`Turn`."""
    if hasattr(action, "model_dump"):  # an openai client object (ChatCompletionMessage, tool call…)
        action = action.model_dump(exclude_none=True)
    if isinstance(action, str):
        return Turn(text=action, calls=())
    default = f"call_{step}_{{}}"
    if isinstance(action, list):
        if not action:
            raise ActionError("an empty list is not an action")
        if not all(isinstance(a, dict) for a in action):
            raise ActionError("a list action must hold tool calls (objects)")
        return Turn(text="", calls=tuple(_call(a, default.format(i)) for i, a in enumerate(action)))
    if not isinstance(action, dict):
        raise ActionError(f"cannot read an action of type {type(action).__name__}; send text, an assistant "
                          "message or a tool call")
    if action.get("role") == "assistant":
        content = action.get("content") or ""
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            raise ActionError("assistant content must be text")
        calls = action.get("tool_calls") or []
        if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
            raise ActionError("tool_calls must be a list of tool-call objects")
        return Turn(text=content, calls=tuple(_call(c, default.format(i)) for i, c in enumerate(calls)))
    return Turn(text="", calls=(_call(action, default.format(0)),))
