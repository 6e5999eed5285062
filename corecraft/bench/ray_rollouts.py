"""``corecraft bench ray``: graded-episode throughput of GRPO groups over Ray actors vs one process.

Reference-replay groups of every task of a split, timed as a loop of :func:`corecraft.run_group`
in this process and as :meth:`RolloutPool.run` over ``workers`` local Ray actors (one CPU each).
Both sides are warm: this process and every actor build the start worlds of all tasks first, and
the actors are up before timing starts. Rounds alternate between the two sides so that changes in
the machine's load hit both; the ratio is the median of each round's pair.

On a machine shared with other busy processes the wall-clock ratio depends on them, so three
figures sit beside it: the load average; a control (the same pure-Python loop run by one process,
then split over ``workers`` processes: the most any parallel code can gain on this machine at this
moment); and the CPU time per episode on each side, with the speedup it allows on ``workers``
idle cores; and the CPUs each side got while timed (CPU seconds / wall seconds). Where Linux shares
the CPU per session (``sched_autogroup_enabled``), the driver and all its Ray processes form one
session and get one session's share on a busy machine, however many actors run: that row then
shows the Ray side getting about what one process gets, and the wall-clock ratio stays near 1x
(docs/scale-with-ray.md, "Why the shared development VM shows about 1x").
With ``RAY_ADDRESS`` set (``auto``, or a cluster's address) the actors run on that existing Ray
cluster instead of a local instance started here.
Target: Ray with 2 workers at >= 1.6x one process on a 2-core machine. The module is named
``ray_rollouts``, not ``ray``, so that running it as a script cannot make ``import ray`` import itself.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import statistics
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from corecraft.agents.baselines import ReferencePolicy
from corecraft.bench.timing import report
from corecraft.domain import default_domain
from corecraft.env.group import run_group

TARGET = 1.6
CONTROL_SECONDS = 0.5  # one process's share of the control loop per round


def spin(count: int) -> int:
    """The control's pure-Python CPU work."""
    total = 0
    for i in range(count):
        total += i
    return total


def _timed(run: Callable[[], Any], cpu: Callable[[], float] = time.process_time) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds by ``cpu``'s measure, result) of one call of ``run``."""
    wall, used = time.perf_counter(), cpu()
    result = run()
    return time.perf_counter() - wall, cpu() - used, result


def _cpu_sharing() -> str:
    autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled")
    return "per session" if autogroup.exists() and autogroup.read_text().strip() == "1" else "per process"


def run(split: str = "train", n: int = 4, workers: int = 2, rounds: int = 5) -> list[tuple[str, str, str, str]]:
    if min(n, workers, rounds) < 1:
        raise ValueError("n, workers and rounds must each be at least 1")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report sent from a benchmark
    try:
        import ray
    except ImportError as exc:
        raise SystemExit("corecraft bench ray needs Ray: pip install 'corecraft[ray]'") from exc

    from corecraft.integrations.ray_rollouts import RolloutPool, RolloutWorker

    tasks = [t.task for t in default_domain().tasks.split(split)]
    ids = [t.id for t in tasks]
    policy = ReferencePolicy(tasks)
    warnings.filterwarnings("ignore", message="no LLM judge configured")
    RolloutWorker(policy, {}).warm(ids)  # this process's start worlds, as the pool's actors build theirs
    count = int(1e6 * CONTROL_SECONDS / _timed(lambda: spin(10**6))[0])
    forked = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))  # before Ray's threads
    list(forked.map(spin, [1] * workers))
    started = not ray.is_initialized()
    if started and os.environ.get("RAY_ADDRESS"):  # an existing cluster (``ray start``); its nodes need CoreCraft
        ray.init(log_to_driver=False, logging_level=logging.ERROR)
    elif started:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    local: list[tuple[float, float]] = []
    remote: list[tuple[float, float]] = []
    control: list[float] = []
    try:
        with RolloutPool(policy, workers) as pool:
            pool.warm(ids)

            def cluster_cpu() -> float:  # the actors' CPU time plus this driver's
                return float(sum(ray.get([a.cpu_seconds.remote() for a in pool.actors]))) + time.process_time()

            for _ in range(rounds):
                wall, cpu, results = _timed(lambda: [run_group(t, policy, n) for t in ids])
                local.append((wall, cpu))
                wall, cpu, ray_results = _timed(lambda: pool.run(ids, n), cluster_cpu)
                remote.append((wall, cpu))
                alone = _timed(lambda: spin(count * workers))[0]
                control.append(alone / _timed(lambda: list(forked.map(spin, [count] * workers)))[0])
    finally:
        forked.shutdown()
        if started:
            ray.shutdown()
    if ray_results != results:
        raise RuntimeError("Ray rollouts differ from the run_group loop")
    episodes = sum(len(r.rewards) for r in results)
    passes = sum(sum(r.passed) for r in results)
    one = statistics.median(episodes / wall for wall, _ in local)
    many = statistics.median(episodes / wall for wall, _ in remote)
    ratio = statistics.median(lw / rw for (lw, _), (rw, _) in zip(local, remote, strict=True))
    ceiling = statistics.median(control)
    cpu_one = statistics.median(cpu for _, cpu in local) / episodes
    cpu_many = statistics.median(cpu for _, cpu in remote) / episodes
    busy_one = statistics.median(cpu / wall for wall, cpu in local)
    busy_many = statistics.median(cpu / wall for wall, cpu in remote)
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        (f"one process, run_group loop ({episodes} episodes, {passes} passed)", f"{one:.1f} episodes/s", "", ""),
        (f"Ray, {workers} workers (same {episodes} results)", f"{many:.1f} episodes/s",
         f"target {TARGET}x one process", f"{ratio:.2f}x one process"),
        ("each round, one process | Ray", " ".join(f"{episodes / w:.0f}" for w, _ in local),
         " ".join(f"{episodes / w:.0f}" for w, _ in remote), "episodes/s"),
        (f"control: a CPU loop, {workers} processes vs one", f"{ceiling:.2f}x",
         " ".join(f"{c:.2f}" for c in control), f"Ray rollouts at {ratio / ceiling:.0%} of it"),
        ("CPU per episode, one process | Ray (actors + driver)", f"{cpu_one * 1e3:.2f} ms",
         f"{cpu_many * 1e3:.2f} ms", f"{workers * cpu_one / cpu_many:.2f}x on {workers} idle cores"),
        ("CPUs busy while timed (CPU s / wall s), one process | Ray", f"{busy_one:.2f}", f"{busy_many:.2f}",
         f"Ray got {busy_many / busy_one:.2f}x one process's CPU"),
        ("load average 1 / 5 / 15 min at the end", load, f"{os.cpu_count()} CPUs", f"CPU shared {_cpu_sharing()}"),
    ]


def main(split: str = "train", n: int = 4, workers: int = 2, rounds: int = 5) -> None:
    report(f"corecraft bench ray ({split} split, groups of {n}, reference replay)", run(split, n, workers, rounds))
