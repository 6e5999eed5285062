"""World templates and episode copies.

A *template* is the built database for (recipe, seed, generator version), cached on disk under
:func:`corecraft.paths.cache_dir` (written to a temporary file and renamed atomically, so
concurrent builders never corrupt it) and in memory per process. An *episode world* is a fresh
in-memory copy of a template (``sqlite3`` deserialize, well under a millisecond), with foreign
keys enforced; a sqlmodel ``Session`` over it is available on demand.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache, cached_property
from pathlib import Path
from zoneinfo import ZoneInfo

import faker
from sqlalchemy import Engine, create_engine
from sqlalchemy.pool import StaticPool
from sqlmodel import Session

from corecraft.paths import cache_dir, content
from corecraft.world import compat, db, fidelity, generation, generator, models
from corecraft.world.generator import GENERATOR_VERSION, build_world, enable_foreign_keys
from corecraft.world.recipe import Recipe, load_recipe

_TEMPLATES: dict[tuple[str, int], bytes] = {}


@cache
def _content_fingerprint() -> str:
    """A digest of everything a template depends on besides the recipe: seeds, generator code, and the
    Faker and SQLite versions (their output is part of the bytes)."""
    digest = hashlib.sha256(f"{GENERATOR_VERSION}|{faker.VERSION}|{sqlite3.sqlite_version}".encode())
    for path in sorted(content("seeds").glob("*.yaml")):
        digest.update(path.read_bytes())
    code = [Path(module.__file__ or "") for module in (generator, models, compat, db, fidelity)]
    code += sorted(Path(generation.__file__ or "").parent.glob("*.py"))
    for path in code:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _cache_key(recipe: Recipe, seed: int) -> str:
    digest = hashlib.sha256((recipe.model_dump_json() + _content_fingerprint()).encode()).hexdigest()[:12]
    return f"{recipe.name}-s{seed}-{digest}"


def template_path(recipe: Recipe, seed: int) -> Path:
    return cache_dir() / "worlds" / f"{_cache_key(recipe, seed)}.sqlite"


def template_bytes(recipe_name: str = "default", seed: int | None = None, *, rebuild: bool = False) -> bytes:
    """The template database for a recipe and seed (the recipe's own seed by default).

    Looked up in memory, then on disk, then built and stored.
    """
    recipe = load_recipe(recipe_name)
    seed = recipe.seed if seed is None else seed
    key = (_cache_key(recipe, seed), seed)
    if not rebuild and key in _TEMPLATES:
        return _TEMPLATES[key]
    path = template_path(recipe, seed)
    if path.exists() and not rebuild:
        data = path.read_bytes()
    else:
        data = build_world(recipe, seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    _TEMPLATES[key] = data
    return data


def copy_connection(data: bytes) -> sqlite3.Connection:
    """A fresh, private, writable in-memory database holding ``data``; foreign keys on."""
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    conn.deserialize(data)
    enable_foreign_keys(conn)
    return conn


def world_hash(conn: sqlite3.Connection) -> str:
    """A stable digest of the world's content, independent of row insertion order."""
    digest = hashlib.sha256()
    names = [t.__tablename__ for t in models.ALL_TABLES]
    for name in sorted(names):
        digest.update(name.encode())
        for row in conn.execute(f'SELECT * FROM "{name}" ORDER BY id'):
            digest.update(json.dumps(row, separators=(",", ":"), default=str).encode())
    return digest.hexdigest()


@dataclass
class World:
    """One episode's world: a private in-memory copy of a template.

    ``conn`` is the raw connection the tools use; :meth:`session` gives a sqlmodel Session on it.
    """

    recipe: str
    seed: int
    conn: sqlite3.Connection
    now: datetime
    tz: ZoneInfo
    _session: Session | None = field(default=None, repr=False)

    @classmethod
    def open(cls, recipe: str = "default", seed: int | None = None, data: bytes | None = None) -> World:
        """A fresh copy of the (recipe, seed) world; builds the template on first use.

        ``data`` replaces the template with other bytes of the same world (e.g. after a task's setup).
        """
        spec = load_recipe(recipe)
        seed = spec.seed if seed is None else seed
        data = template_bytes(recipe, seed) if data is None else data
        tz = ZoneInfo(spec.timezone)
        return cls(recipe=spec.name, seed=seed, conn=copy_connection(data), now=spec.now_aware, tz=tz)

    @classmethod
    def from_bytes(cls, data: bytes) -> World:
        """A world from database bytes alone (reads the recipe, seed and now stored inside)."""
        conn = copy_connection(data)
        meta = dict(conn.execute("SELECT key, value FROM world_meta"))
        tz = ZoneInfo(meta["timezone"])
        return cls(recipe=meta["recipe"], seed=int(meta["seed"]), conn=conn,
                   now=datetime.fromisoformat(meta["now"]).astimezone(tz), tz=tz)

    def fork(self) -> World:
        """An independent copy of this world as it is now."""
        return World(recipe=self.recipe, seed=self.seed, conn=copy_connection(self.conn.serialize()),
                     now=self.now, tz=self.tz)

    @cached_property
    def engine(self) -> Engine:
        """A SQLAlchemy engine whose one connection is this world's."""
        return create_engine("sqlite://", creator=lambda: self.conn, poolclass=StaticPool)

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
        return row[0]

    def hash(self) -> str:
        return world_hash(self.conn)

    def counts(self) -> dict[str, int]:
        """Rows per entity type (the 14 types), by model name."""
        return {
            t.__name__: self.conn.execute(f'SELECT count(*) FROM "{t.__tablename__}"').fetchone()[0]
            for t in models.ENTITY_TYPES
        }

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
        self.conn.close()
