"""The one interface every simulated customer offers, and what it answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from corecraft.grading.transcript import DialogueTurn

STOP = "###STOP###"
"""The marker a simulated customer puts at the end of its last message to end the conversation."""


@dataclass(frozen=True)
class UserReply:
    """The customer's next message; ``stop``: it ends the conversation; ``error``: the simulator failed
    (no message, and the episode must not count as a success)."""

    text: str = ""
    stop: bool = False
    error: str | None = None


class UserSimulator(Protocol):
    """Answers the agent as the customer. It sees only the opening request and the dialogue so far
    (the agent's messages to the customer and its own answers): never the rubric, the reference
    solution or tool output."""

    def reply(self, opening: str, dialogue: Sequence[DialogueTurn]) -> UserReply: ...

    def describe(self) -> dict[str, Any]:
        """What to record about the simulator in results (kind, and for a model its name, temperature and seed)."""
        ...
