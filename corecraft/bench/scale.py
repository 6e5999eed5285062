"""``corecraft bench scale``: how an episode's costs grow with the size of the world.

The default recipe is scaled x1, x10 and x100: every count in ``world/default.yaml`` (look-alike
customers included) is multiplied. The product catalogue, the knowledge base and the Slack
channels are seed content and do not grow. Each scaled recipe is written once as a YAML file
under the cache directory; its template is built cold (timed) and cached like any other.

Per scale the table shows: the cold build; the reset (an :class:`~corecraft.episode.Episode` of a
setup-free task pointed at the scaled world, after a write call, closed and started again: the pooled
connection rewound, the acting employee looked up); resident memory per live env, each after ten real write calls
(measured in a child process); ``world_diff`` at grading, after a few real write calls; and every
tool's median latency (the calls of ``corecraft bench tools``, every scale measured in turn call by
call, so machine noise hits every scale alike). The last column is the largest
scale over x1: flat costs stay near 1x.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import yaml
from rich.console import Console
from rich.table import Table

from corecraft.bench.timing import console as bench_console
from corecraft.bench.timing import median, ms, rss_bytes, samples
from corecraft.bench.tools import candidates, measure_worlds
from corecraft.domain import default_domain
from corecraft.episode import Episode
from corecraft.grading.diff import world_diff
from corecraft.tasks.model import Task, WorldRef

FACTORS = (1, 10, 100)
QUICK_FACTORS = (1, 10)
WRITES = ("create_refund", "update_ticket_status", "create_resolution", "post_slack_message")
"""The write tools an episode calls before its world is diffed (one successful call each)."""
LIVE_ENVS = 16
"""Live episodes the memory figure holds at once, each after :data:`LIVE_WRITES` successful writes."""
LIVE_WRITES = 10


def scaled_recipe(factor: int) -> str:
    """The recipe to open for the default world scaled by ``factor``: ``default`` itself for 1,
    otherwise a YAML file (name ``default-x<factor>``) written under the cache directory."""
    if factor < 1:
        raise ValueError(f"scale factor must be at least 1, not {factor}")
    if factor == 1:
        return "default"
    store = default_domain().store
    data = store.recipe("default").model_dump(mode="json")
    data["name"] = f"default-x{factor}"
    data["counts"] = {kind: count * factor for kind, count in data["counts"].items()}
    data["noise"]["lookalike_customers"] *= factor
    text = f"# The default world with every count x{factor}, written by `corecraft bench scale`.\n"
    text += yaml.safe_dump(data, sort_keys=False)
    path = store.cache_dir / "recipes" / f"default-x{factor}.yaml"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    store.recipe(str(path))  # validates the scaled recipe
    return str(path)


@dataclass
class Figures:
    """One scale's measurements (seconds, bytes)."""

    factor: int
    entities: int = 0
    size: int = 0
    build: float = 0.0
    build_cpu: float = 0.0
    reset: float = 0.0
    memory: float = 0.0
    diff: float = 0.0
    tools: dict[str, float] = field(default_factory=dict)


def _task_on(recipe: str) -> Task:
    """A setup-free task of the train split, pointed at ``recipe`` (its rubric is never graded here)."""
    task = next(t.task for t in default_domain().tasks.split("train") if not t.task.setup and t.task.actor is None)
    return task.model_copy(update={"world": WorldRef(recipe=recipe)})


def _written_episode(task: Task, writes: int = len(WRITES)) -> Episode:
    """An episode of ``task`` after ``writes`` successful calls of the tools in :data:`WRITES`, in turn."""
    episode = default_domain().episode(task)
    options = {name: iter(calls) for name, calls in candidates(episode.world, episode.actor).items()}
    for n in range(writes):
        name = WRITES[n % len(WRITES)]
        if not any("error" not in episode.call(name, call.args) for call in options[name]):
            raise RuntimeError(f"no realistic call of {name} succeeds on world {task.world.recipe}")
    return episode


def memory_per_live_env(recipe: str, alive: int = LIVE_ENVS, writes: int = LIVE_WRITES) -> float:
    """Bytes of resident memory per live episode of ``recipe``, each after ``writes`` successful writes
    (one episode opened first, uncounted, so the template's shared pages are not charged to the others)."""
    task = _task_on(recipe)
    first = _written_episode(task, writes)
    before = rss_bytes()
    live = [_written_episode(task, writes) for _ in range(alive)]
    grown = rss_bytes() - before
    for episode in [first, *live]:
        episode.close()
    return grown / alive


def _memory_in_child(recipe: str) -> float:
    """:func:`memory_per_live_env` in a fresh process, so memory freed by earlier figures is not reused."""
    code = f"from corecraft.bench.scale import memory_per_live_env; print(memory_per_live_env({recipe!r}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def _reset_after_a_write(task: Task, repeat: int) -> list[float]:
    """Seconds per reset (the episode closed, the next one opened) after one real write call, untimed."""
    domain = default_domain()
    compiled = domain.compile(task)
    episode = Episode(compiled, domain)
    name = WRITES[1]
    call = next(c for c in candidates(episode.world, episode.actor)[name] if "error" not in episode.call(name, c.args))
    out = []
    for _ in range(repeat):
        episode.call(name, call.args)
        start = time.perf_counter()
        episode.close()
        episode = Episode(compiled, domain)
        out.append(time.perf_counter() - start)
    episode.close()
    return out


def measure_scale(factor: int, repeat: int) -> Figures:
    """Every figure but the tools' for the default world scaled by ``factor``."""
    recipe = scaled_recipe(factor)
    out = Figures(factor=factor)
    start, cpu = time.perf_counter(), time.process_time()
    domain = default_domain()
    data = domain.store.template(recipe, rebuild=True).data
    out.build, out.build_cpu = time.perf_counter() - start, time.process_time() - cpu
    out.size = len(data)
    task = _task_on(recipe)
    out.reset = median(_reset_after_a_write(task, min(max(repeat, 5), 100)))
    episode = _written_episode(task)
    try:
        out.entities = sum(episode.world.counts().values())
        out.diff = median(samples(lambda: world_diff(episode.world.conn), 20))
    finally:
        episode.close()
    out.memory = _memory_in_child(recipe)
    return out


def _ratio(last: float, first: float) -> str:
    return f"{last / first:.1f}x" if first else "-"


def table(figures: list[Figures]) -> Table:
    """The figures side by side, one column per scale, and the largest scale over the smallest."""
    first, last = figures[0], figures[-1]
    out = Table(title=f"corecraft bench scale: the default world x{', x'.join(str(f.factor) for f in figures)}; "
                      f"ratio = x{last.factor} / x{first.factor}", min_width=100)
    out.add_column("figure", no_wrap=True)
    for f in figures:
        out.add_column(f"x{f.factor}", justify="right", no_wrap=True)
    out.add_column("ratio", justify="right", no_wrap=True)

    out.add_row("entities (rows of the 14 types)", *[f"{f.entities:,}" for f in figures],
                _ratio(last.entities, first.entities))
    out.add_row("database size", *[f"{f.size / 2**20:.1f} MiB" for f in figures], _ratio(last.size, first.size))
    out.add_row("cold build", *[f"{f.build:.2f} s" for f in figures], _ratio(last.build, first.build))
    out.add_row("  its CPU time (this process)", *[f"{f.build_cpu:.2f} s" for f in figures],
                _ratio(last.build_cpu, first.build_cpu))
    out.add_row("env reset (Episode)", *[ms(f.reset) for f in figures], _ratio(last.reset, first.reset))
    out.add_row(f"resident memory per live env ({LIVE_WRITES} writes)", *[f"{f.memory / 2**20:.2f} MiB" for f in figures],
                _ratio(last.memory, first.memory))
    out.add_row("world_diff at grading", *[ms(f.diff) for f in figures], _ratio(last.diff, first.diff))
    for name in first.tools:
        out.add_row(f"{name} (median)", *[ms(f.tools[name]) for f in figures],
                    _ratio(last.tools[name], first.tools[name]))
    return out


def main(quick: bool = False, repeat: int = 200, console: Console | None = None) -> list[Figures]:
    """Measure each scale (x1, x10 and, unless ``quick``, x100) and print the table."""
    console = console or bench_console()
    default_domain().store.template("tiny", rebuild=True)  # untimed: loads seed content and Faker's providers
    figures = []
    for factor in QUICK_FACTORS if quick else FACTORS:
        console.print(f"measuring the default world x{factor} ...")
        figures.append(measure_scale(factor, repeat))
        f = figures[-1]
        console.print(f"  x{factor} done: {f.entities:,} rows, built in {f.build:.1f} s, reset {ms(f.reset)}, "
                      f"{f.memory / 2**20:.2f} MiB per live env, diff {ms(f.diff)}")
    console.print("measuring every tool on every scale, interleaved ...")
    for figure, (timings, _) in zip(figures, measure_worlds([scaled_recipe(f.factor) for f in figures], repeat),
                                    strict=True):
        figure.tools = {name: median(wall) for name, (wall, _) in timings.items()}
    console.print(table(figures))
    return figures


if __name__ == "__main__":
    main()
