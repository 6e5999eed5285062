"""One attempt at one task: a fresh world (the task's start snapshot), tool calls recorded into a
transcript, and grading at the end. The Gymnasium env, ``corecraft eval``, the MCP server, task
checks and the tests all run episodes through this class. Use it as a context manager (or call
:meth:`Episode.close`) so the world's connection is released. An episode pickles and deep-copies
mid-way (its world travels as database bytes), which is how envs are forked.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any

from corecraft.grading.grader import grade
from corecraft.grading.judge import Judge
from corecraft.grading.result import GradeResult
from corecraft.grading.transcript import CallRecord, Transcript
from corecraft.tasks.compile import CompiledTask
from corecraft.tools.registry import ToolError, parse_arguments

if TYPE_CHECKING:
    from corecraft.domain import Domain


class Episode:
    """A task's world and transcript. ``call`` runs tools; ``finish`` grades."""

    def __init__(self, task: CompiledTask, domain: Domain) -> None:
        self.task = task
        self.toolkit = domain.toolkit
        self.start = domain.start_snapshot(task)
        self.world = domain.store.open(task.task.world.recipe, task.task.world.seed, self.start)
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

    def finish(self, reply: str, messages: list[dict[str, Any]] | None = None,
               judge: Judge | None = None) -> GradeResult:
        """Grade the episode with the agent's final reply."""
        self.transcript.reply = reply or ""
        if messages is not None:
            self.transcript.messages = messages
        return grade(self.task, self.transcript, self.world, self.start, judge)

    def close(self) -> None:
        self.world.close()
