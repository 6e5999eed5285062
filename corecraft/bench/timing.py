"""Timing and memory helpers shared by the benchmarks, and the rich table they print."""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table


def samples(fn: Callable[[], Any], repeat: int, warmup: int = 3) -> list[float]:
    """Wall-clock seconds of ``repeat`` calls to ``fn`` (after ``warmup`` untimed calls)."""
    for _ in range(warmup):
        fn()
    out = []
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    finally:
        if gc_was:
            gc.enable()
    return out


def median(values: list[float]) -> float:
    return statistics.median(values)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc; 0 elsewhere)."""
    statm = Path("/proc/self/statm")
    if not statm.exists():
        return 0
    import os

    return int(statm.read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def console() -> Console:
    """A console wide enough for the figure tables even when output goes to a file or pipe."""
    return Console() if sys.stdout.isatty() else Console(width=150)


def report(title: str, rows: list[tuple[str, str, str, str]], out: Console | None = None) -> None:
    """Print (figure, value, floor/target, ratio) rows as a table."""
    table = Table(title=title)
    for name in ("figure", "value", "floor / target", "ratio"):
        table.add_column(name, justify="left" if name == "figure" else "right")
    for row in rows:
        table.add_row(*row)
    (out or console()).print(table)
