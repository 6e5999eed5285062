"""The public task and grading API: what trainer glue and evaluation scripts need, without an env.

- :func:`tasks` — the tasks of a split (train by default; train + dev with ``split=None``).
- :func:`task` — one task by id.
- :func:`reference_actions` — a task's reference solution as env actions.
- :func:`grade` — a finished conversation graded against a task, deterministically: the
  assistant's tool calls are replayed through the real tools on a fresh copy of the task's world
  (tool results in the messages are ignored and recomputed), the last assistant message without
  tool calls is the final reply, and the rubric is applied. In a conversation task the customer's
  messages are taken as they are (not simulated again) and every assistant message without tool
  calls is one of the agent's turns. The judge is optional (plain data).

Held-out test tasks are refused unless asked for by name: ``split="test"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from corecraft.domain import default_domain
from corecraft.env.actions import ActionError, read_action
from corecraft.grading.judge import Judge, JudgeConfig
from corecraft.grading.result import GradeResult
from corecraft.grading.transcript import DialogueTurn
from corecraft.tasks.compile import CompiledTask
from corecraft.tasks.model import Task


def _compiled(task_id: str, split: str | None) -> CompiledTask:
    found = default_domain().tasks.get(task_id)
    if found.split == "test" and split != "test":
        raise ValueError(f"task {task_id!r} is in the held-out test split; pass split='test' to use it")
    return found


def tasks(split: str | None = "train") -> list[Task]:
    """The tasks of ``split`` (``"train"``, ``"dev"``, ``"test"``; None: train + dev), sorted by id."""
    return [t.task for t in default_domain().tasks.split(split)]


def task(task_id: str, split: str | None = None) -> Task:
    """One task by id (a test task only with ``split="test"``)."""
    return _compiled(task_id, split).task


def reference_actions(task_id: str, split: str | None = None) -> list[dict[str, Any] | str]:
    """The task's reference solution as env actions: one tool call per step, then the reply text (in a
    conversation task, each turn's calls and then its message to the customer)."""
    return _compiled(task_id, split).task.reference_solution.actions()


def grade(task_id: str | Task, messages: Sequence[Any], *, judge: JudgeConfig | dict[str, Any] | None = None,
          split: str | None = None) -> GradeResult:
    """Grade a finished conversation (OpenAI chat messages, dicts or client objects) against a task.

    ``task_id`` may also be a :class:`Task` built in memory. Raises ``ValueError`` on a message the
    env could not read either.
    """
    domain = default_domain()
    compiled = domain.compile(task_id) if isinstance(task_id, Task) else _compiled(task_id, split)
    config = JudgeConfig.model_validate(judge) if isinstance(judge, dict) else judge
    reply, plain = "", [m.model_dump(exclude_none=True) if hasattr(m, "model_dump") else m for m in messages]
    talking, opened = compiled.task.user is not None, False
    with domain.episode(compiled) as episode:
        for step, message in enumerate(plain, 1):
            role = message.get("role") if isinstance(message, dict) else None
            if role == "user" and talking:
                if opened:
                    episode.transcript.dialogue.append(DialogueTurn("user", str(message.get("content") or "")))
                opened = True
            if role != "assistant":
                continue
            try:
                turn = read_action(message, step)
            except ActionError as exc:
                raise ValueError(f"message {step}: {exc}") from None
            for call in turn.calls:
                episode.call(call.name, call.arguments)
            if talking and not turn.calls:
                episode.transcript.dialogue.append(DialogueTurn("agent", turn.text))
            reply = turn.text if not turn.calls else reply if talking else ""
        return episode.finish(reply, messages=list(plain), judge=Judge(config) if config else None)
