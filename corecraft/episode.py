"""One attempt at one task: a fresh world (template + the task's setup), tool calls recorded
into a transcript, and grading at the end. The Gymnasium env, ``corecraft eval``, the MCP
server and the tests all run episodes through this class.
"""

from __future__ import annotations

from typing import Any

from corecraft.grading.grader import grade
from corecraft.grading.judge import Judge
from corecraft.grading.result import GradeResult
from corecraft.grading.transcript import CallRecord, Transcript
from corecraft.tasks.loader import resolved_rubric
from corecraft.tasks.model import Task
from corecraft.tasks.setup import apply_setup
from corecraft.tools import REGISTRY, ToolContext, call_tool
from corecraft.tools.registry import ToolError, parse_arguments
from corecraft.world.changelog import open_tracked
from corecraft.world.store import World, template_bytes

_START: dict[tuple[str, str, int | None], bytes] = {}


def start_bytes(task: Task) -> bytes:
    """The task's starting world (template + setup) as database bytes, built once per process."""
    key = (task.id, task.model_dump_json(include={"world", "setup"}), task.world.seed)
    if key not in _START:
        if not task.setup:
            _START[key] = template_bytes(task.world.recipe, task.world.seed)
        else:
            world = World.open(task.world.recipe, task.world.seed)
            apply_setup(world, task.setup)
            _START[key] = world.conn.serialize()
            world.close()
    return _START[key]


class Episode:
    """A task's world and transcript. ``call`` runs tools; ``finish`` grades."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.start = start_bytes(task)
        self.world = open_tracked(task.world.recipe, task.world.seed, self.start)
        self.actor = task.actor or self.world.first_employee()
        self.ctx = ToolContext(world=self.world, actor_id=self.actor)
        self.allowed = frozenset(task.allowed_tools) if task.allowed_tools is not None else None
        self.transcript = Transcript()

    @property
    def tool_names(self) -> list[str]:
        return [n for n in REGISTRY if self.allowed is None or n in self.allowed]

    def call(self, name: str, arguments: Any) -> dict[str, Any]:
        """Run one tool call (dict or JSON-string arguments) and record it. Arguments are parsed once."""
        try:
            args = parse_arguments(arguments)
        except ToolError as exc:
            result = exc.payload()
            self.transcript.calls.append(CallRecord(name=str(name), args={"_raw": str(arguments)[:2000]}, result=result))
            return result
        result = call_tool(self.ctx, name, args, self.allowed)
        self.transcript.calls.append(CallRecord(name=str(name), args=args, result=result))
        return result

    def finish(self, reply: str, messages: list[dict[str, Any]] | None = None,
               judge: Judge | None = None) -> GradeResult:
        """Grade the episode with the agent's final reply."""
        self.transcript.reply = reply or ""
        if messages is not None:
            self.transcript.messages = messages
        return grade(self.task, resolved_rubric(self.task), self.transcript, self.world, self.start, judge)

    def close(self) -> None:
        self.world.close()


def replay_reference(task: Task, judge: Judge | None = None) -> GradeResult:
    """Run the task's reference solution through the real tools and grade it."""
    episode = Episode(task)
    try:
        for call in task.reference_solution.calls:
            episode.call(call.tool, call.args)
        return episode.finish(task.reference_solution.reply, judge=judge)
    finally:
        episode.close()
