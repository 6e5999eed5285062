"""``corecraft bench env``: reset and step medians through ``gymnasium.make`` (wrappers included),
and full-episode throughput replaying reference solutions. Targets: reset <= 1 ms, step <= 0.5 ms, and a
message to the scripted customer of a conversation task within 2x a tool step.
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


def _customer_steps(tasks: list[Task], split: str, repeat: int) -> list[float]:
    """Step times of a message to the scripted customer of the split's first conversation task (up to three
    messages per episode, none of which ends it), or none when the split has no conversation task."""
    task = next((t for t in tasks if t.user is not None), None)
    if task is None or task.user is None:
        return []
    env = gymnasium.make("CoreCraft-v0", task_id=task.id, split=split)
    message = "Thanks for getting in touch. Let me look into this for you."
    out: list[float] = []
    for _ in range(repeat // 3):
        env.reset(seed=0)
        out += samples(lambda: env.step(message), min(3, task.user.max_user_turns - 1), warmup=0)
    return out


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
    talks = _customer_steps(tasks, split, repeat)
    envs = {t.id: gymnasium.make("CoreCraft-v0", task_id=t.id, split=split) for t in tasks}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in tasks:  # warm each env's world connection, as a training run would
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
        *([("step, one message to the scripted customer", ms(median(talks)), "target 2x a tool step",
            f"{median(talks) / median(steps):.2f}x the tool step")] if talks else []),
        (f"full episodes, reference replay ({len(tasks)} {split} tasks)", f"{episodes / elapsed:.1f} episodes/s",
         "", f"{elapsed / episodes * 1e3:.1f} ms/episode incl. grading"),
    ]


def main(split: str = "train") -> None:
    report(f"corecraft bench env ({split} split, default world)", run(split))


if __name__ == "__main__":
    main()
