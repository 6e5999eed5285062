"""One attempt at one task: a fresh world (the task's start state), tool calls recorded into a
transcript, and grading at the end. The Gymnasium env, ``corecraft eval``, the MCP server, task
checks and the tests all run episodes through this class. Use it as a context manager (or call
:meth:`Episode.close`) so the world's connection is released. An episode pickles and deep-copies
mid-way (its world travels as its template, setup and changed rows), which is how envs are forked.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any

from corecraft.grading.grader import grade
from corecraft.grading.judge import Judge
from corecraft.grading.result import GradeResult
from corecraft.grading.transcript import CallRecord, DialogueTurn, Transcript
from corecraft.tasks.compile import CompiledTask
from corecraft.tools.registry import ToolError, parse_arguments
from corecraft.users.base import UserReply, UserSimulator

if TYPE_CHECKING:
    from corecraft.domain import Domain


class Episode:
    """A task's world and transcript. ``call`` runs tools; ``finish`` grades."""

    def __init__(self, task: CompiledTask, domain: Domain) -> None:
        self.task = task
        self.toolkit = domain.toolkit
        self.world = domain.store.open(task.task.world.recipe, task.task.world.seed, domain.setup(task))
        self.actor = task.task.actor or self.world.first_employee()
        self.ctx = self.toolkit.context(self.world, self.actor)
        allowed = task.task.allowed_tools
        self.allowed = frozenset(allowed) if allowed is not None else None
        self.transcript = Transcript()

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @property
    def tool_names(self) -> list[str]:
        return [n for n in self.toolkit.names if self.allowed is None or n in self.allowed]

    def call(self, name: str, arguments: Any) -> dict[str, Any]:
        """Run one tool call (dict or JSON-string arguments) and record it. Arguments are parsed once."""
        try:
            args = parse_arguments(arguments)
        except ToolError as exc:
            result = exc.payload()
            self.transcript.calls.append(CallRecord(name=str(name), args={"_raw": str(arguments)[:2000]}, result=result))
            return result
        result = self.toolkit.call(self.ctx, name, args, self.allowed)
        self.transcript.calls.append(CallRecord(name=str(name), args=args, result=result))
        return result

    @property
    def user_turns(self) -> int:
        """How many times the simulated customer has answered (conversation tasks)."""
        return sum(t.role == "user" for t in self.transcript.dialogue)

    def say(self, text: str, user: UserSimulator) -> UserReply:
        """Send the agent's message to the simulated customer; both sides go into the transcript's dialogue
        (a failed simulator adds no customer turn)."""
        self.transcript.dialogue.append(DialogueTurn("agent", text))
        answer = user.reply(self.task.task.prompt.strip(), list(self.transcript.dialogue))
        if answer.error is None:
            self.transcript.dialogue.append(DialogueTurn("user", answer.text))
        return answer

    def finish(self, reply: str, messages: list[dict[str, Any]] | None = None,
               judge: Judge | None = None, user_error: str | None = None) -> GradeResult:
        """Grade the episode with the agent's final reply. A ``user_error`` (the simulated customer failed)
        is recorded and makes the episode fail with reward 0, whatever the rubric says."""
        self.transcript.reply = reply or ""
        if messages is not None:
            self.transcript.messages = messages
        result = grade(self.task, self.transcript, self.world, judge)
        if user_error is not None:
            result = result.model_copy(update={"reward": 0.0, "passed": False, "user_error": user_error})
        return result

    def close(self) -> None:
        self.world.close()
