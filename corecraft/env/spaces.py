"""Gymnasium spaces for chat: observations are lists of chat messages, actions are what an
OpenAI-style model emits (an assistant message, one tool call, or text). Gymnasium's ``Text``
space rejects ordinary text, so these validate the real structure instead.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from gymnasium import spaces

ROLES = ("system", "user", "assistant", "tool")


def is_message(value: Any) -> bool:
    return (isinstance(value, dict) and value.get("role") in ROLES
            and (value.get("content") is None or isinstance(value.get("content"), str)))


class ChatMessages(spaces.Space[list[dict[str, Any]]]):
    """A list of chat messages (dicts with a ``role`` and string ``content``)."""

    def __init__(self, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        return isinstance(x, list) and all(is_message(m) for m in x)

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, Any]]:
        return [{"role": "user", "content": "Where is my order?"}]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChatMessages)

    def __hash__(self) -> int:
        return hash("ChatMessages")


class AgentAction(spaces.Space[Any]):
    """An assistant turn: final text, an assistant message (with tool calls), or a tool call.

    ``sample()`` returns a valid read-only tool call (Chat Completions shape) on one of
    ``sample_tools``, so an env's first step on a sample neither ends nor truncates the episode.
    """

    def __init__(self, sample_tools: tuple[str, ...] = ("search_products", "search_knowledge_base"),
                 seed: int | np.random.Generator | None = None) -> None:
        self.sample_tools = sample_tools
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        if isinstance(x, str):
            return True
        if isinstance(x, dict):
            return (x.get("role") == "assistant" or "function" in x or x.get("type") == "function_call"
                    or ("name" in x and "arguments" in x))
        return isinstance(x, list) and all(self.contains(item) and not isinstance(item, str) for item in x)

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        name = self.sample_tools[int(self.np_random.integers(len(self.sample_tools)))]
        words = ("gpu", "return", "psu", "warranty", "shipping", "ryzen")
        query = words[int(self.np_random.integers(len(words)))]
        return {"id": f"call_sample_{int(self.np_random.integers(1_000_000))}", "type": "function",
                "function": {"name": name, "arguments": json.dumps({"query": query})}}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AgentAction) and other.sample_tools == self.sample_tools

    def __hash__(self) -> int:
        return hash(("AgentAction", self.sample_tools))
