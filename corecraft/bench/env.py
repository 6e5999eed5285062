"""``corecraft bench env``: reset and step medians through ``gymnasium.make`` (wrappers included),
and full-episode throughput replaying reference solutions. Targets: reset <= 1 ms, step <= 0.5 ms.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import gymnasium

import corecraft  # noqa: F401  (registers CoreCraft-v0)
from corecraft.bench.timing import median, ms, p99, report, samples
from corecraft.domain import default_domain
from corecraft.tasks.model import Task


def _actions(task: Task) -> list[Any]:
    return task.reference_solution.actions()


def run(split: str = "train", repeat: int = 300) -> list[tuple[str, str, str, str]]:
    tasks = [t.task for t in default_domain().tasks.split(split)]
    task = max(tasks, key=lambda t: len(t.reference_solution.calls))
    env = gymnasium.make("CoreCraft-v0", task_id=task.id, split=split)
    env.reset(seed=0)
    resets = samples(lambda: env.reset(seed=0), repeat)
    read_call = next(a for a in _actions(task) if isinstance(a, dict))
    steps: list[float] = []
    for _ in range(repeat // 10):
        env.reset(seed=0)
        steps += samples(lambda: env.step(read_call), 10, warmup=0)
    envs = {t.id: gymnasium.make("CoreCraft-v0", task_id=t.id, split=split) for t in tasks}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in tasks:  # warm the per-task start snapshots, as a training run would
            envs[t.id].reset(seed=0)
        start, episodes = time.perf_counter(), 0
        while time.perf_counter() - start < 3.0:
            for t in tasks:
                e = envs[t.id]
                e.reset(seed=0)
                for action in _actions(t):
                    e.step(action)
                episodes += 1
        elapsed = time.perf_counter() - start
    return [
        ("reset (gymnasium.make env)", ms(median(resets)), "target 1 ms", f"{median(resets) / 1e-3:.2f}x target"),
        ("step, one read tool call", ms(median(steps)), "target 0.5 ms", f"{median(steps) / 5e-4:.2f}x target"),
        ("step p99", ms(p99(steps)), "", ""),
        (f"full episodes, reference replay ({len(tasks)} {split} tasks)", f"{episodes / elapsed:.1f} episodes/s",
         "", f"{elapsed / episodes * 1e3:.1f} ms/episode incl. grading"),
    ]


def main(split: str = "train") -> None:
    report(f"corecraft bench env ({split} split, default world)", run(split))


if __name__ == "__main__":
    main()
