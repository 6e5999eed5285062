"""What an episode leaves for the grader: the tool calls made, the final reply, the messages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CallRecord:
    """One tool call as the agent made it and what came back."""

    name: str
    args: dict[str, Any]
    result: dict[str, Any]

    @property
    def ok(self) -> bool:
        return "error" not in self.result


@dataclass
class Transcript:
    calls: list[CallRecord] = field(default_factory=list)
    reply: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
