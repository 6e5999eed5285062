"""``corecraft bench memory``: resident memory of one process that touches every task.

Each figure comes from a fresh process that opens (and closes) an episode of every task of every
split, as a long training or evaluation run does, with the template store bounded at a given
limit. Episodes copy no world (each is a transaction over the template file on a reused
connection), so growth stays flat whatever the limit; the bound applies to templates read into memory.
"""

from __future__ import annotations

import subprocess
import sys

from corecraft.bench.timing import report

MIB = 2**20


def touch_every_task(limit_bytes: int) -> tuple[float, float, int]:
    """(RSS growth in bytes, snapshot bytes held, tasks touched) in this process, store bounded at ``limit_bytes``."""
    from corecraft.bench.timing import rss_bytes
    from corecraft.domain import Domain, default_domain

    domain = Domain(cache=default_domain().store.cache_dir, store_max_bytes=limit_bytes)
    domain.toolkit.parameters  # noqa: B018  (schemas built before the baseline)
    tasks = [t for split in ("train", "dev", "test") for t in domain.tasks.split(split)]
    with domain.episode(tasks[0]):
        pass
    before = rss_bytes()
    for task in tasks:
        with domain.episode(task) as episode:
            episode.call("search_knowledge_base", {"query": "refund"})
    return rss_bytes() - before, domain.store.nbytes, len(tasks)


def _in_child(limit_bytes: int) -> tuple[float, float, int]:
    code = f"from corecraft.bench.memory import touch_every_task; print(*touch_every_task({limit_bytes}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    grown, held, n = out.stdout.split()
    return float(grown), float(held), int(n)


def run(limits_mib: tuple[int, ...] = (16, 64, 4096)) -> list[tuple[str, str, str, str]]:
    rows = []
    for limit in limits_mib:
        grown, held, n = _in_child(limit * MIB)
        label = "no effective bound" if limit >= 4096 else f"store limit {limit} MiB"
        rows.append((f"RSS growth touching {n} tasks ({label})", f"{grown / MIB:.1f} MiB",
                     f"snapshots held {held / MIB:.1f} MiB", f"{grown / (limit * MIB):.2f}x limit"
                     if limit < 4096 else ""))
    return rows


def main() -> None:
    report("corecraft bench memory (one process, every task of every split)", run())


if __name__ == "__main__":
    main()
