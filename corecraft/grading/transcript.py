"""What an episode leaves for the grader: the tool calls made, the final reply, the messages, and in
conversation tasks the dialogue with the simulated customer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

WRITTEN_TEXT = {"create_escalation": "notes", "create_resolution": "details", "post_slack_message": "text"}
"""The argument of each write tool that people read after the episode: an escalation's notes, a resolution's
details, a Slack post. A figure in them is a claim, as in the reply."""


def written_text(tool: str, args: dict[str, Any]) -> str | None:
    """The text a write call leaves for people to read (:data:`WRITTEN_TEXT`), or None."""
    text = args.get(WRITTEN_TEXT.get(tool, ""))
    return text if isinstance(text, str) else None


@dataclass(frozen=True)
class CallRecord:
    """One tool call as the agent made it and what came back."""

    name: str
    args: dict[str, Any]
    result: dict[str, Any]

    @property
    def ok(self) -> bool:
        return "error" not in self.result


@dataclass(frozen=True)
class DialogueTurn:
    """One message of a conversation task after the opening request: the agent's or the customer's."""

    role: Literal["agent", "user"]
    text: str


@dataclass
class Transcript:
    calls: list[CallRecord] = field(default_factory=list)
    reply: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    dialogue: list[DialogueTurn] = field(default_factory=list)

    @property
    def agent_messages(self) -> list[str]:
        """Everything the agent said to the requester, in order: its dialogue turns, else the final reply."""
        said = [t.text for t in self.dialogue if t.role == "agent"]
        return said or ([self.reply] if self.reply else [])
