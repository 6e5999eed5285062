"""World templates and episode worlds.

A *template* is the built database for (recipe, seed, generator fingerprint), kept on disk under
the cache folder (written to a temporary file and renamed atomically, so concurrent builders
never corrupt it, and never written again). A :class:`TemplateStore` keeps templates read into
memory (:class:`Snapshot`) in a least-recently-used cache bounded in bytes, for the few uses that
need the bytes. An *episode world* (:class:`World`) is not a copy: it is a transaction on a
connection reading the template file, with the task's :class:`Setup` applied inside it (see
:mod:`corecraft.world.overlay`), so starting one costs the same at any world size. Foreign keys
are enforced; a sqlmodel ``Session`` over it is available on demand.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import faker
from sqlalchemy import Engine, create_engine
from sqlalchemy.pool import StaticPool
from sqlmodel import Session

from corecraft.world import changelog, db, models
from corecraft.world.generator import GENERATOR_VERSION, build_world
from corecraft.world.overlay import NO_SETUP, Overlay, OverlayPool, SavepointConnection
from corecraft.world.recipe import Recipe, load_recipe
from corecraft.world.seeds import Seeds

DEFAULT_MAX_BYTES = 64 * 2**20
"""The default bound on the snapshot bytes a store keeps in memory (64 MiB)."""


class Snapshot:
    """Immutable database bytes: a template read into memory."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def world_hash(conn: sqlite3.Connection) -> str:
    """A stable digest of the world's content, independent of row insertion order."""
    digest = hashlib.sha256()
    for name in sorted(db.table_name(t) for t in models.ALL_TABLES):
        digest.update(name.encode())
        for row in conn.execute(f'SELECT * FROM "{name}" ORDER BY id'):
            digest.update(json.dumps(row, separators=(",", ":"), default=str).encode())
    return digest.hexdigest()


def code_fingerprint(seeds_folder: Path, world_package: Path = Path(models.__file__).parent) -> str:
    """A digest of everything a template depends on besides the recipe: the seed files, every module
    of the world package (generator, models, recipes, seeds, rules), and the Faker and SQLite versions
    (their output is part of the bytes)."""
    digest = hashlib.sha256(f"{GENERATOR_VERSION}|{faker.VERSION}|{sqlite3.sqlite_version}".encode())
    for path in sorted(seeds_folder.glob("*.yaml")):
        digest.update(path.read_bytes())
    for path in sorted(world_package.rglob("*.py")):
        digest.update(str(path.relative_to(world_package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


class TemplateStore:
    """Builds and caches world templates for one content folder, and opens episode worlds over them.

    Templates live on disk in ``cache_dir``; templates read into memory (for the uses that need the
    bytes) live in an LRU bounded by ``max_bytes``. Episode connections are reused through
    :attr:`overlays`.
    """

    def __init__(self, content_root: Path, cache_dir: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError("max_bytes must be >= 0")
        self.recipe_folder = content_root / "world"
        self.seeds = Seeds(content_root / "seeds")
        self.cache_dir = cache_dir
        self.max_bytes = max_bytes
        self._snapshots: OrderedDict[str, Snapshot] = OrderedDict()
        self._recipes: dict[tuple[str, int], Recipe] = {}
        self.overlays = OverlayPool()
        """Idle episode connections, reused by the next :meth:`open` of the same template."""

    @cached_property
    def fingerprint(self) -> str:
        return code_fingerprint(self.seeds.folder)

    def recipe(self, name_or_path: str) -> Recipe:
        """A parsed recipe, kept per file and modification time."""
        path = self.recipe_folder / f"{name_or_path}.yaml"
        path = path if path.is_file() else Path(name_or_path)
        key = (str(path), path.stat().st_mtime_ns if path.is_file() else -1)
        if key not in self._recipes:
            self._recipes[key] = load_recipe(name_or_path, self.recipe_folder)
        return self._recipes[key]

    def template_key(self, recipe: Recipe, seed: int) -> str:
        digest = hashlib.sha256((recipe.model_dump_json() + self.fingerprint).encode()).hexdigest()[:12]
        return f"{recipe.name}-s{seed}-{digest}"

    def template_path(self, recipe: Recipe, seed: int) -> Path:
        return self.cache_dir / "worlds" / f"{self.template_key(recipe, seed)}.sqlite"

    @property
    def nbytes(self) -> int:
        """Bytes of snapshots held in memory now."""
        return sum(len(s.data) for s in self._snapshots.values())

    def __len__(self) -> int:
        return len(self._snapshots)

    def clear(self) -> None:
        """Forget every in-memory snapshot and close the idle connections (templates stay on disk)."""
        self._snapshots.clear()
        self.overlays.clear()

    def snapshot(self, key: str, build: Callable[[], bytes]) -> Snapshot:
        """The snapshot stored under ``key``, built by ``build()`` when absent."""
        found = self._snapshots.get(key)
        if found is not None:
            self._snapshots.move_to_end(key)
            return found
        snap = Snapshot(build())
        self._snapshots[key] = snap
        while len(self._snapshots) > 1 and self.nbytes > self.max_bytes:
            self._snapshots.popitem(last=False)
        if self.nbytes > self.max_bytes:
            self._snapshots.clear()
        return snap

    def template(self, recipe_name: str = "default", seed: int | None = None, *, rebuild: bool = False) -> Snapshot:
        """The template for a recipe and seed (the recipe's own seed by default): from memory, else
        from disk, else built and stored on disk."""
        recipe = self.recipe(recipe_name)
        seed = recipe.seed if seed is None else seed
        key = f"template:{self.template_key(recipe, seed)}"
        if rebuild:
            self._snapshots.pop(key, None)
        return self.snapshot(key, lambda: self._load_or_build(recipe, seed, rebuild))

    def _load_or_build(self, recipe: Recipe, seed: int, rebuild: bool) -> bytes:
        path = self.template_path(recipe, seed)
        if path.exists() and not rebuild:
            return path.read_bytes()
        data = build_world(recipe, seed, self.seeds)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
        return data

    def template_file(self, recipe_name: str = "default", seed: int | None = None) -> Path:
        """The template file of a recipe and seed (built and stored on disk when absent, not kept in memory)."""
        recipe = self.recipe(recipe_name)
        seed = recipe.seed if seed is None else seed
        path = self.template_path(recipe, seed)
        if not path.exists():
            self._load_or_build(recipe, seed, rebuild=False)
        return path

    def open(self, recipe: str = "default", seed: int | None = None, setup: Setup | None = None) -> World:
        """The (recipe, seed) world at its start, or after ``setup``: an episode over the template file, on an
        idle connection of the pool when there is one. Close it to end the episode."""
        spec = self.recipe(recipe)
        seed = spec.seed if seed is None else seed
        overlay = self.overlays.take(self.template_file(recipe, seed), setup.key if setup else NO_SETUP)
        try:
            return World(recipe=spec.name, seed=seed, overlay=overlay, now=spec.now_aware, tz=ZoneInfo(spec.timezone),
                         setup=setup, pool=self.overlays)
        except BaseException:
            overlay.close()
            raise


@dataclass(frozen=True)
class Setup:
    """Rows a task adds or changes on top of a template, applied in each of its episodes' transaction.
    ``key`` names the resulting start state (episodes of one key reuse it); ``apply`` must pickle."""

    key: str
    apply: Callable[[World], None]


class World:
    """One episode's world: a transaction over a shared template (see :mod:`corecraft.world.overlay`).

    ``conn`` is the raw connection the tools use; :meth:`session` gives a sqlmodel Session on it.
    Closing the world ends its episode: the connection goes back to the store's pool, rewound.
    """

    def __init__(self, recipe: str, seed: int, now: datetime, tz: ZoneInfo, overlay: Overlay,
                 setup: Setup | None = None, pool: OverlayPool | None = None) -> None:
        self.recipe, self.seed, self.now, self.tz = recipe, seed, now, tz
        self.setup, self.pool = setup, pool
        self.writes = 0  # the tool calls that have changed this episode's world (see :attr:`clock`)
        self._overlay: Overlay | None = overlay
        self._session: Session | None = None
        overlay.begin(setup.key if setup else NO_SETUP, None if setup is None else lambda: setup.apply(self))

    @property
    def overlay(self) -> Overlay:
        if self._overlay is None:
            raise RuntimeError(f"world {self.recipe} is closed")
        return self._overlay

    @property
    def conn(self) -> sqlite3.Connection:
        return self.overlay.conn

    @property
    def clock(self) -> datetime:
        """The moment the episode's next write is stamped with: each write takes a minute, the first made at
        :attr:`now` (the moment the episode starts, which stays "today" for every date rule)."""
        return self.now + timedelta(minutes=self.writes)

    @property
    def query_plans(self) -> dict[str, bool]:
        """Per count query (SQL text): whether SQLite scans to answer it (the paged searches ask once)."""
        return self.overlay.query_plans

    @classmethod
    def from_bytes(cls, data: bytes) -> World:
        """A world over database bytes alone (reads the recipe, seed and now stored inside)."""
        overlay = Overlay(data)
        meta = dict(overlay.conn.execute("SELECT key, value FROM world_meta"))
        tz = ZoneInfo(meta["timezone"])
        return cls(recipe=meta["recipe"], seed=int(meta["seed"]), overlay=overlay,
                   now=datetime.fromisoformat(meta["now"]).astimezone(tz), tz=tz)

    def __getstate__(self) -> dict[str, object]:
        """Pickled as its base (a template path, or bytes), its setup and the rows it changed; the session and
        the pool are not kept. The template file must exist where the world is unpickled."""
        return {"recipe": self.recipe, "seed": self.seed, "now": self.now, "tz": self.tz, "base": self.overlay.base,
                "setup": self.setup, "changes": changelog.dump(self.conn), "writes": self.writes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["recipe"], state["seed"], state["now"], state["tz"],  # type: ignore[misc]
                      Overlay(state["base"]), state["setup"])
        changelog.replay(self.conn, state["changes"])
        self.writes = state.get("writes", 0)  # a world pickled before the clock counted writes starts it again

    def fork(self) -> World:
        """An independent copy of this world as it is now (a connection of the same base, the changes replayed)."""
        base = self.overlay.base
        overlay = self.pool.take(base, self.setup.key if self.setup else NO_SETUP) if self.pool is not None else Overlay(base)
        twin = World(self.recipe, self.seed, self.now, self.tz, overlay, self.setup, self.pool)
        changelog.replay(twin.conn, changelog.dump(self.conn))
        twin.writes = self.writes
        return twin

    @cached_property
    def engine(self) -> Engine:
        """A SQLAlchemy engine whose one connection is this world's; its transactions are savepoints in the episode."""
        conn = SavepointConnection(self.conn)
        return create_engine("sqlite://", creator=lambda: conn, poolclass=StaticPool)

    def session(self) -> Session:
        """A sqlmodel Session over this world (created on first use, then reused)."""
        if self._session is None:
            self._session = Session(self.engine)
        return self._session

    def first_employee(self, title: str = "Support Agent I") -> str:
        """The id of the first employee holding ``title`` (the default actor is a tier-1 agent)."""
        row = self.conn.execute("SELECT id FROM employee WHERE title = ? ORDER BY id LIMIT 1", (title,)).fetchone()
        if row is None:
            raise LookupError(f"no employee with title {title!r} in world {self.recipe}")
        return str(row[0])

    def employee(self, employee_id: str) -> tuple[str, str, str] | None:
        """An employee's (name, title, department), or None if there is no such employee."""
        row = self.conn.execute("SELECT name, title, department FROM employee WHERE id = ?", (employee_id,)).fetchone()
        return None if row is None else (str(row[0]), str(row[1]), str(row[2]))

    def hash(self) -> str:
        return world_hash(self.conn)

    def counts(self) -> dict[str, int]:
        """Rows per entity type (the 14 types), by model name."""
        return {
            t.__name__: int(self.conn.execute(f"SELECT count(*) FROM {db.table(t)}").fetchone()[0])
            for t in models.ENTITY_TYPES
        }

    def close(self) -> None:
        """End this world's episode: its changes are dropped and the connection goes back to the pool (or is closed)."""
        if self._overlay is None:
            return
        if self._session is not None:
            self._session.close()
            self.engine.dispose()
        overlay, self._overlay = self._overlay, None
        if self.pool is not None:
            self.pool.give(overlay)
        else:
            overlay.close()
