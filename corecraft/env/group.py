"""GRPO groups: N independent rollouts of one task from identical starting worlds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corecraft.domain import default_domain
from corecraft.env.core import CoreCraftEnv

Policy = Callable[[list[dict[str, Any]], list[dict[str, Any]]], Any]
"""policy(messages so far, tool schemas) -> action (anything ``CoreCraftEnv.step`` accepts)."""


def make_group(task_id: str, n: int, **kwargs: Any) -> list[CoreCraftEnv]:
    """``n`` envs pinned to ``task_id`` (pinned in the constructor, so autoreset keeps the task).

    A training helper: it refuses tasks of the held-out test split.
    """
    if n < 1:
        raise ValueError("a group needs at least one rollout")
    root = Path(kwargs["tasks_root"]) if kwargs.get("tasks_root") else None
    if default_domain().library(root).get(task_id).split == "test":
        raise ValueError(f"task {task_id!r} is in the held-out test split; training helpers refuse it")
    return [CoreCraftEnv(task_id=task_id, **kwargs) for _ in range(n)]


@dataclass
class GroupResult:
    task_id: str
    rewards: list[float]
    passed: list[bool]
    infos: list[dict[str, Any]]  # the final info of each rollout (criteria, minefields…)


def run_group(task_id: str, policy: Policy, n: int, seed: int = 0, **kwargs: Any) -> GroupResult:
    """Run ``policy`` for ``n`` rollouts of one task and collect rewards and per-criterion results."""
    rewards, passed, infos = [], [], []
    for i, env in enumerate(make_group(task_id, n, **kwargs)):
        _, info = env.reset(seed=seed + i)
        tools = info["tools"]
        done = False
        while not done:
            _obs, reward, terminated, truncated, info = env.step(policy(list(env.messages), tools))
            done = terminated or truncated
        rewards.append(reward)
        passed.append(bool(info["passed"]))
        infos.append(info)
        env.close()
    return GroupResult(task_id=task_id, rewards=rewards, passed=passed, infos=infos)
