"""A folder of task files as one library: lookup, splits, problems, statistics, digests.

Tasks are read and compiled once per file version and kept, so many environments of one process
share them. ``split("test")`` and ``get`` of a test task work only when asked for by name; the
default split (None) is train + dev. Every function that returns tasks returns
:class:`~corecraft.tasks.compile.CompiledTask` objects.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corecraft.tasks.check import check_task, replay_facts
from corecraft.tasks.compile import CompiledTask, compile_task
from corecraft.tasks.loader import SPLITS, Problem, TaskError, read_task, task_files
from corecraft.tasks.model import ArgFormat, DbDiff, Include, LlmJudge
from corecraft.tasks.split import Assignment, split_by_family
from corecraft.version import VERSION

if TYPE_CHECKING:
    from corecraft.domain import Domain


class TaskLibrary:
    """The task files under ``root`` (``root/<split>/*.yaml``), compiled in ``domain``."""

    def __init__(self, root: Path, domain: Domain) -> None:
        self.root = root
        self.domain = domain
        self._compiled: dict[Path, tuple[int, CompiledTask]] = {}

    @property
    def facts_path(self) -> Path:
        """The facts lock: task id -> a digest per reference call of the call and what it returns (opt-in: a
        library without the file has no facts check)."""
        return self.root / "facts.lock.json"

    def facts(self) -> dict[str, list[str]] | None:
        """The facts lock, or None when the library has none."""
        if not self.facts_path.exists():
            return None
        return dict(json.loads(self.facts_path.read_text(encoding="utf-8")))

    def lock(self, paths: Sequence[Path]) -> dict[str, list[str]]:
        """Record the facts digest of each task (after its facts were verified); returns what was written."""
        locked = self.facts() or {}
        fresh = {(task := self.load(path)).id: replay_facts(task, self.domain) for path in paths}
        locked.update(fresh)
        lines = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(locked.items())]
        self.facts_path.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
        return fresh

    def files(self, split: str | None = None) -> list[Path]:
        """Task files of one split (train + dev when None), sorted."""
        return task_files(self.root, split)

    def load(self, path: Path) -> CompiledTask:
        """One file read and compiled (kept until the file changes); raises :class:`TaskError`."""
        try:
            version = path.stat().st_mtime_ns
        except OSError as exc:
            raise TaskError([Problem(str(path), 1, f"cannot read the file: {exc}")]) from None
        kept = self._compiled.get(path)
        if kept is not None and kept[0] == version:
            return kept[1]
        task, lines = read_task(path)
        compiled = compile_task(task, self.domain.toolkit, self.domain.rubrics, path=path, lines=lines,
                                text=path.read_text(encoding="utf-8"))
        self._compiled[path] = (version, compiled)
        return compiled

    def split(self, name: str | None = None) -> list[CompiledTask]:
        """Every task of a split (train + dev when None); raises :class:`TaskError` listing all bad files."""
        tasks: list[CompiledTask] = []
        problems: list[Problem] = []
        for path in self.files(name):
            try:
                tasks.append(self.load(path))
            except TaskError as exc:
                problems += exc.problems
        if problems:
            raise TaskError(problems)
        return tasks

    def ids(self, split: str | None = None) -> list[str]:
        """The task ids of a split (file names), sorted."""
        return [p.stem for p in self.files(split)]

    def path(self, task_id: str) -> Path:
        """The file of a task, in any split (the test split too: it was asked for by id)."""
        for split in SPLITS:
            for path in self.files(split):
                if path.stem == task_id:
                    return path
        raise KeyError(f"no task with id {task_id!r} under {self.root}")

    def get(self, task_id: str) -> CompiledTask:
        """A task by id, from any split (the test split included, since it was asked for by id)."""
        return self.load(self.path(task_id))

    def problems(self, paths: Sequence[Path] | None = None, replay: bool = True,
                 each: Callable[[list[Path]], Iterable[Path]] = iter) -> list[Problem]:
        """Every problem in the files (all splits by default): per file (the facts lock applies to the
        library's own files), then across files (a task id used twice; a family spanning two splits,
        which would leak a template into evaluation).
        ``each`` wraps the per-file loop (e.g. with a progress bar)."""
        files = list(paths) if paths is not None else [p for s in SPLITS for p in self.files(s)]
        facts, root = self.facts(), self.root.resolve()
        problems = [p for path in each(files) for p in check_task(
            path, self.domain, replay=replay, facts=facts if path.resolve().is_relative_to(root) else None)]
        bad = {p.file for p in problems}
        by_id: dict[str, Path] = {}
        family_splits: dict[str, dict[str, Path]] = {}
        for path in files:
            if str(path) in bad:
                continue
            task = self.load(path).task
            if task.id in by_id:
                problems.append(Problem(str(path), _key_line(path, "id"),
                                        f"task id {task.id!r} is also used by {by_id[task.id]}"))
            by_id.setdefault(task.id, path)
            if task.split is not None:
                family_splits.setdefault(task.family, {}).setdefault(task.split, path)
        for family, splits in family_splits.items():
            if len(splits) > 1:
                path = list(splits.values())[-1]
                problems.append(Problem(str(path), _key_line(path, "family"),
                                        f"family {family!r} spans splits {', '.join(splits)}: a family belongs to "
                                        "one split"))
        return problems

    def assign_splits(self, ratios: Sequence[float], seed: int) -> Assignment:
        """A deterministic train/dev/test assignment of every task by family."""
        tasks = [t.task for s in SPLITS for t in self.split(s)]
        return split_by_family(tasks, ratios, seed)

    def digest(self, tasks: Sequence[CompiledTask]) -> dict[str, Any]:
        """What a score was measured on: a digest of the exact task contents and of the worlds they
        run in, plus the package version. Results are comparable only when this matches."""
        body = hashlib.sha256()
        for t in sorted(tasks, key=lambda t: t.id):
            body.update(t.task.model_dump_json().encode())
        worlds = sorted({(t.task.world.recipe, t.task.world.seed) for t in tasks}, key=str)
        hashes = {}
        for recipe, seed in worlds:
            world = self.domain.store.open(recipe, seed)
            try:
                hashes[f"{world.recipe}:{world.seed}"] = world.hash()[:16]
            finally:
                world.close()
        body.update(repr(sorted(hashes.items())).encode())
        return {"tasks": len(tasks), "digest": body.hexdigest()[:16], "worlds": hashes, "corecraft": VERSION}


def _key_line(path: Path, key: str) -> int:
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith(f"{key}:"):
            return n
    return 1


def library_stats(tasks: Sequence[CompiledTask]) -> dict[str, Any]:
    """Counts and rubric shape of a set of tasks (what ``tasks stats`` prints)."""
    weights = [c.weight for t in tasks for c in t.criteria]
    judged = [c.weight for t in tasks for c in t.criteria if isinstance(c, LlmJudge)]

    def counts(key: str) -> dict[str, int]:
        return dict(sorted(Counter(getattr(t.task, key) or "" for t in tasks).items()))

    def having(kind: type) -> int:
        return sum(any(isinstance(c, kind) for c in t.criteria) for t in tasks)

    sizes = [len(t.criteria) for t in tasks]
    by_difficulty = {d: [len(t.criteria) for t in tasks if t.task.difficulty == d] for d in ("hard", "expert")}
    return {
        "tasks": len(tasks),
        "families": len({t.task.family for t in tasks}),
        "by_split": counts("split"), "by_category": counts("category"), "by_difficulty": counts("difficulty"),
        "by_family": counts("family"),
        "criteria_per_task": {"mean": round(statistics.fmean(sizes), 2) if sizes else 0.0, "min": min(sizes, default=0)},
        "criteria_hard_expert": {d: {"mean": round(statistics.fmean(s), 2) if s else 0.0, "min": min(s, default=0)}
                                 for d, s in by_difficulty.items()},
        "reference_calls_mean": round(statistics.fmean(len(t.task.reference_solution.calls) for t in tasks), 2)
        if tasks else 0.0,
        "llm_judge_weight_share": round(sum(judged) / sum(weights), 4) if weights else 0.0,
        "tasks_with": {"llm_judge": having(LlmJudge), "arg_format": having(ArgFormat), "db_diff": having(DbDiff),
                       "minefields": sum(bool(t.task.minefields) for t in tasks),
                       "include": sum(any(isinstance(i, Include) for i in t.task.rubric) for t in tasks),
                       "user": sum(t.task.user is not None for t in tasks)},
    }
