"""``corecraft bench world``: cold build, template load, per-episode copy, memory per live copy.

Each figure is printed beside the floor of raw ``sqlite3`` deserialize of the same bytes and
beside the issue's target (copy <= 1 ms, <= 3 MiB per live copy, cold build <= 5 s).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corecraft.bench.timing import median, ms, report, rss_bytes, samples
from corecraft.domain import Domain, default_domain


def _raw_copy(data: bytes) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(data)
    return conn


def _first_query(conn: sqlite3.Connection) -> None:
    conn.execute("SELECT id FROM customer LIMIT 1").fetchone()
    conn.close()


def memory_per_copy(recipe: str, alive: int, raw: bool) -> float:
    """Bytes of resident memory per live episode copy (every page touched, as a reading episode does)."""
    store = default_domain().store
    data = store.template(recipe).data
    before = rss_bytes()
    conns = [_raw_copy(data) for _ in range(alive)] if raw else [store.open(recipe).conn for _ in range(alive)]
    for conn in conns:
        conn.execute("SELECT count(*) FROM slackmessage").fetchone()
    return (rss_bytes() - before) / alive


def memory_in_child(recipe: str, alive: int, raw: bool) -> float:
    """:func:`memory_per_copy` in a fresh process, so freed memory from earlier figures is not reused."""
    code = f"from corecraft.bench.world import memory_per_copy; print(memory_per_copy({recipe!r}, {alive}, {raw}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def run(recipe: str = "default", repeat: int = 200) -> list[tuple[str, str, str, str]]:
    with tempfile.TemporaryDirectory() as cache:
        cold = Domain(cache=Path(cache)).store
        builds = []
        for _ in range(3):
            start = time.perf_counter()
            data = cold.template(recipe, rebuild=True).data
            builds.append(time.perf_counter() - start)
        spec = cold.recipe(recipe)
        path = cold.template_path(spec, spec.seed)
        loads = samples(lambda: path.read_bytes(), 20)
    store = default_domain().store
    store.template(recipe)  # in this process's memory cache from now on, as in a training run
    floor = median(samples(lambda: _raw_copy(data).close(), repeat))
    copy = median(samples(lambda: store.open(recipe).close(), repeat))
    first_floor = median(samples(lambda: _first_query(_raw_copy(data)), repeat))
    first = median(samples(lambda: _first_query(store.open(recipe).conn), repeat))
    rows = [
        ("cold build (median of 3)", f"{median(builds):.2f} s", "target 5 s", f"{median(builds) / 5:.2f}x target"),
        ("template load from disk", ms(median(loads)), "", ""),
        ("database size", f"{len(data) / 2**20:.2f} MiB", "", ""),
        ("per-episode copy", ms(copy), f"raw deserialize {ms(floor)}", f"{copy / floor:.2f}x floor"),
        ("", "", "target 1 ms", f"{copy / 1e-3:.2f}x target"),
        ("copy + first query (schema parse)", ms(first), f"raw {ms(first_floor)}", f"{first / first_floor:.2f}x floor"),
    ]
    for alive in (1, 16, 256):
        per, raw_per = memory_in_child(recipe, alive, raw=False), memory_in_child(recipe, alive, raw=True)
        rows.append((f"resident memory per live copy ({alive} alive)", f"{per / 2**20:.2f} MiB",
                     f"raw {raw_per / 2**20:.2f} MiB; target 3 MiB", f"{per / 2**20 / 3:.2f}x target"))
    return rows


def main(recipe: str = "default") -> None:
    report(f"corecraft bench world ({recipe})", run(recipe))


if __name__ == "__main__":
    main()
