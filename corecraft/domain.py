"""The CoreCraft domain bound together: content, policy, tools, world templates and tasks.

A :class:`Domain` is built from a content folder (``world/``, ``seeds/``, ``rubrics/``,
``tasks/``) and a cache folder; it owns the :class:`~corecraft.world.store.TemplateStore` (worlds
on disk, reusable episode connections over them), the :class:`~corecraft.tools.registry.Toolkit` (the 23
tools bound to its policy) and the :class:`~corecraft.tasks.library.TaskLibrary`. Everything that
runs episodes takes a domain; :func:`default_domain` is the one process-wide default (the shipped
content, ``$CORECRAFT_CACHE_DIR`` or the user cache folder, ``$CORECRAFT_STORE_MB`` of snapshots),
made on first use. ``default_domain.cache_clear()`` drops it.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache, cached_property, partial
from pathlib import Path
from typing import Any

import yaml

from corecraft.episode import Episode
from corecraft.grading.judge import Judge
from corecraft.grading.result import GradeResult
from corecraft.paths import cache_dir, content_root
from corecraft.tasks.compile import CompiledTask, RubricLibrary, compile_task
from corecraft.tasks.library import TaskLibrary
from corecraft.tasks.model import Task
from corecraft.tasks.setup import apply_setup
from corecraft.tools import Toolkit, corecraft_tools
from corecraft.users import ScriptedUser
from corecraft.world.seeds import Policy, Seeds
from corecraft.world.store import DEFAULT_MAX_BYTES, Setup, TemplateStore


class Domain:
    """Content, policy, tools, worlds and tasks of one CoreCraft installation."""

    def __init__(self, root: Path | None = None, cache: Path | None = None,
                 store_max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root or content_root()
        self.store = TemplateStore(self.root, cache or cache_dir(), store_max_bytes)
        self._libraries: dict[Path, TaskLibrary] = {}

    @property
    def seeds(self) -> Seeds:
        return self.store.seeds

    @property
    def policy(self) -> Policy:
        return self.seeds.policy

    @cached_property
    def toolkit(self) -> Toolkit:
        return Toolkit(corecraft_tools(), self.policy)

    @cached_property
    def rubrics(self) -> RubricLibrary:
        """Named reusable criteria from ``rubrics/*.yaml``."""
        out: dict[str, dict[str, Any]] = {}
        for path in sorted((self.root / "rubrics").glob("*.yaml")):
            out.update(yaml.safe_load(path.read_text(encoding="utf-8")).get("criteria", {}))
        return out

    @property
    def tasks(self) -> TaskLibrary:
        """The shipped task library (``tasks/``)."""
        return self.library()

    def library(self, root: Path | None = None) -> TaskLibrary:
        """The task library under ``root`` (default: the shipped ``tasks/``), kept per folder."""
        folder = (root or self.root / "tasks").resolve()
        if folder not in self._libraries:
            self._libraries[folder] = TaskLibrary(folder, self)
        return self._libraries[folder]

    def compile(self, task: Task | CompiledTask) -> CompiledTask:
        """A task built in memory, checked and resolved like a file (a compiled task passes through)."""
        return task if isinstance(task, CompiledTask) else compile_task(task, self.toolkit, self.rubrics)

    def setup(self, task: CompiledTask) -> Setup | None:
        """The task's setup as applied at the start of each of its episodes (None: the template as it is);
        tasks with the same world and setup share its key, so their episodes reuse the start state."""
        if not task.task.setup:
            return None
        body = task.task.model_dump_json(include={"world", "setup"})
        return Setup(key="setup:" + hashlib.sha256(body.encode()).hexdigest(),
                     apply=partial(apply_setup, steps=task.task.setup))

    def episode(self, task: Task | CompiledTask) -> Episode:
        """A fresh episode of ``task`` (close it, or use it as a context manager)."""
        return Episode(self.compile(task), self)

    def replay_reference(self, task: Task | CompiledTask, judge: Judge | None = None) -> GradeResult:
        """Run the task's reference solution through the real tools and grade it; in a conversation task the
        scripted customer answers each turn's message."""
        with self.episode(task) as episode:
            reference, profile = episode.task.task.reference_solution, episode.task.task.user
            user = ScriptedUser(profile) if profile is not None else None
            for turn in reference.steps():
                for call in turn.calls:
                    episode.call(call.tool, call.args)
                if user is not None:
                    episode.say(turn.say, user)
            return episode.finish(reference.reply, judge=judge)


@cache
def default_domain() -> Domain:
    """The process-wide default domain (made on first use; ``default_domain.cache_clear()`` drops it)."""
    megabytes = os.environ.get("CORECRAFT_STORE_MB")
    limit = int(float(megabytes) * 2**20) if megabytes else DEFAULT_MAX_BYTES
    return Domain(store_max_bytes=limit)
