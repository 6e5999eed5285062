"""The tasks a trainer adapter serves: a split, or named task ids, held-out test tasks only when asked for."""

from __future__ import annotations

from collections.abc import Sequence

from corecraft.api import task as checked_task
from corecraft.domain import Domain
from corecraft.tasks.compile import CompiledTask


def select_tasks(domain: Domain, split: str | None, task_ids: Sequence[str] | None) -> list[CompiledTask]:
    """The tasks of ``split``, or the named ``task_ids``; a test task only with ``split="test"``."""
    if task_ids is None:
        return domain.tasks.split(split)
    for task_id in task_ids:
        checked_task(task_id, split=split)  # refuses a held-out test task unless split="test"
    return [domain.tasks.get(task_id) for task_id in task_ids]
