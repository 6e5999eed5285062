"""Episode worlds as transactions over a shared base: a reset costs the changes, not the world.

An :class:`Overlay` is one SQLite connection reading a *base*: a template file on disk, shared
by every connection of every process (opened with ``nolock``), or private database bytes. An
episode runs inside one transaction on it: ``BEGIN``, the task's setup, then ``SAVEPOINT
episode``. Writes stay in the connection's own page cache (journal in memory, cache spilling
off), so the base file is never written and each connection pays only for the pages it reads
and changes. The next episode of the same start rolls back to the savepoint; another start rolls
the transaction back and begins again. An authorizer refuses ``COMMIT``/``ROLLBACK``/``BEGIN``
from anyone but this module (a ``commit()`` through the DB-API or an ORM fails instead of
writing the shared file), and the savepoint ``episode`` is this module's alone.

Every connection carries the :mod:`~corecraft.world.changelog` triggers (installed once), so the
grading diff, forks and pickles cost the changed rows. An :class:`OverlayPool` keeps a few idle
overlays per base, so a process running episode after episode reuses one connection.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from corecraft.world import changelog
from corecraft.world.generator import enable_foreign_keys

Base = Path | bytes
"""What an overlay reads: a database file shared read-only, or private database bytes."""

PAGE_CACHE_KIB = 1024
"""Each connection's page cache for clean pages, in KiB (changed pages are kept on top of it)."""
IDLE_OVERLAYS = 8
"""How many idle overlays a pool keeps (least recently used beyond that are closed)."""
NO_SETUP = ""
"""The start key of a template's own state (no task setup)."""


def _connect(base: Base) -> sqlite3.Connection:
    if isinstance(base, Path):
        conn = sqlite3.connect(f"{base.resolve().as_uri()}?nolock=1", uri=True, check_same_thread=False,
                               isolation_level=None)
    else:
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        conn.deserialize(base)
    for pragma in ("journal_mode = MEMORY", "cache_spill = OFF", "temp_store = MEMORY",
                   "recursive_triggers = ON", f"cache_size = -{PAGE_CACHE_KIB}"):
        conn.execute(f"PRAGMA {pragma}")
    enable_foreign_keys(conn)
    return conn


class Overlay:
    """One connection over a base, holding an episode's changes in an open transaction."""

    def __init__(self, base: Base) -> None:
        self.base = base
        self.conn = _connect(base)
        self.start_key: str | None = None
        """Which start (setup) the savepoint ``episode`` holds; None outside an episode."""
        self.query_plans: dict[str, bool] = {}
        """Per count query (SQL text): whether SQLite scans to answer it (asked once per connection)."""
        self._own = False
        self._mark = f"/* overlay {secrets.token_hex(8)} */"
        """Appended to this class's own statements: the statement cache reuses a prepared statement without
        asking the authorizer again, so the SQL text a caller can send must never be one of these."""
        changelog.install(self.conn)
        self.conn.set_authorizer(self._guard)

    def _guard(self, action: int, arg1: str | None, arg2: str | None, schema: str | None, source: str | None) -> int:
        """Deny transaction control and the savepoint ``episode`` to everything but this class."""
        if self._own:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_TRANSACTION or (action == sqlite3.SQLITE_SAVEPOINT and arg2 == "episode"):
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    def _run(self, sql: str) -> None:
        self._own = True
        try:
            self.conn.execute(f"{sql} {self._mark}")
        finally:
            self._own = False

    def begin(self, key: str, setup: Callable[[], None] | None) -> None:
        """Start an episode at start ``key``: rewind to it when this connection holds it, else roll everything
        back and apply ``setup`` (None: the base itself). The change log starts empty."""
        if self.start_key == key:
            self.rewind()
            return
        self.start_key = None
        if self.conn.in_transaction:
            self._run("ROLLBACK")
        self._run("BEGIN")
        try:
            if setup is not None:
                setup()
            changelog.clear(self.conn)
        except BaseException:
            self._run("ROLLBACK")
            raise
        self._run("SAVEPOINT episode")
        self.start_key = key

    def rewind(self) -> None:
        """Undo every change since the start (O(changes)); the episode stays open."""
        self._run("ROLLBACK TO episode")

    def close(self) -> None:
        """Close the connection (an open episode is rolled back; the base is never written)."""
        self.start_key = None
        self.conn.close()


class OverlayPool:
    """Idle overlays of file bases, handed out again to the next episode of the same base."""

    def __init__(self, limit: int = IDLE_OVERLAYS) -> None:
        self.limit = limit
        self._idle: OrderedDict[int, Overlay] = OrderedDict()

    def __len__(self) -> int:
        return len(self._idle)

    def take(self, base: Base, key: str) -> Overlay:
        """An idle overlay of ``base`` (one holding start ``key`` first), or a new one."""
        matches = [i for i, o in self._idle.items() if o.base == base]
        found = next((i for i in matches if self._idle[i].start_key == key), matches[-1] if matches else None)
        return self._idle.pop(found) if found is not None else Overlay(base)

    def give(self, overlay: Overlay) -> None:
        """Keep an overlay whose episode ended (rewound to its start), closing the oldest beyond the limit;
        an overlay of private bytes is closed."""
        if not isinstance(overlay.base, Path) or overlay.start_key is None or self.limit == 0:
            overlay.close()
            return
        overlay.rewind()
        self._idle[id(overlay)] = overlay
        while len(self._idle) > self.limit:
            self._idle.popitem(last=False)[1].close()

    def clear(self) -> None:
        """Close every idle overlay."""
        while self._idle:
            self._idle.popitem(last=False)[1].close()


class SavepointConnection:
    """An overlay's connection as the DB-API connection of an ORM session: the session's transactions are
    savepoints inside the episode (``commit`` keeps its writes in the episode, ``rollback`` undoes them),
    and closing it leaves the connection open."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._open = False

    def cursor(self) -> sqlite3.Cursor:
        if not self._open:
            self._conn.execute("SAVEPOINT orm_session")
            self._open = True
        return self._conn.cursor()

    def commit(self) -> None:
        if self._open:
            self._conn.execute("RELEASE orm_session")
            self._open = False

    def rollback(self) -> None:
        if self._open:
            self._conn.execute("ROLLBACK TO orm_session")
            self._conn.execute("RELEASE orm_session")
            self._open = False

    def close(self) -> None:
        self.rollback()

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)
