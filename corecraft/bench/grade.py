"""``corecraft bench grade``: the time to grade one finished episode's deterministic criteria.

The task's reference solution is replayed once through the real tools on its world (by default
``doa_cpu_refund_kayla`` on the default world); then only :func:`~corecraft.grading.grader.grade`
is timed, over every criterion but ``llm_judge`` (``db_diff`` included), beside the target
(<= 10 ms per episode) and beside the floor of the world diff alone (read from the episode's change log). A per-kind
breakdown shows where the time goes.
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial

from corecraft.bench.timing import median, ms, p99, report, samples
from corecraft.domain import default_domain
from corecraft.episode import Episode
from corecraft.grading.criteria import CHECKS, Evidence
from corecraft.grading.diff import world_diff
from corecraft.grading.grader import grade
from corecraft.tasks.compile import CompiledTask
from corecraft.tasks.model import Criterion, LlmJudge

TASK = "doa_cpu_refund_kayla"
TARGET = 10e-3


def _replayed(task_id: str) -> tuple[Episode, CompiledTask]:
    """An episode after the task's reference solution, and the task with only its deterministic
    criteria (all met)."""
    domain = default_domain()
    full = domain.tasks.get(task_id)
    task = CompiledTask(task=full.task, criteria=tuple(c for c in full.criteria if not isinstance(c, LlmJudge)),
                        path=full.path)
    episode = Episode(task, domain)
    for call in task.task.reference_solution.calls:
        result = episode.call(call.tool, call.args)
        if "error" in result:
            raise RuntimeError(f"{task_id}: reference call {call.tool} failed: {result['error']}")
    episode.transcript.reply = task.task.reference_solution.reply
    graded = grade(task, episode.transcript, episode.world)
    if not graded.passed:
        raise RuntimeError(f"{task_id}: the reference solution does not pass: {graded.criteria}")
    return episode, task


def run(task_id: str = TASK, repeat: int = 200) -> list[tuple[str, str, str, str]]:
    episode, task = _replayed(task_id)
    criteria = task.criteria
    transcript, world = episode.transcript, episode.world
    try:
        times = samples(lambda: grade(task, transcript, world), repeat)
        floor = median(samples(lambda: world_diff(world.conn), repeat))
        by_kind: dict[str, list[Criterion]] = defaultdict(list)
        for c in criteria:
            by_kind[c.kind].append(c)

        def check_all(kind: str) -> None:
            ev = Evidence(transcript=transcript, world=world)  # fresh: db_diff recomputes its diff
            for c in by_kind[kind]:
                CHECKS[kind](c, ev)

        took = median(times)
        rows = [
            (f"grade, {len(criteria)} deterministic criteria", ms(took), "target 10 ms", f"{took / TARGET:.2f}x target"),
            ("", "", f"world diff alone {ms(floor)}", f"{took / floor:.2f}x floor"),
            ("grade p99", ms(p99(times)), "", ""),
        ]
        for kind, items in by_kind.items():
            rows.append((f"  {kind} ({len(items)})", ms(median(samples(partial(check_all, kind), repeat))), "", ""))
        return rows
    finally:
        episode.close()


def main(task_id: str = TASK, repeat: int = 200) -> None:
    report(f"corecraft bench grade ({task_id})", run(task_id, repeat))


if __name__ == "__main__":
    main()
