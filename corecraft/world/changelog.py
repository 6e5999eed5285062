"""A change log inside an episode's world, so grading can diff in time proportional to the changes.

:func:`tracked_bytes` turns a start snapshot into the same world plus, per entity table, a log
table and three triggers (after insert, update, delete). The first time a row is touched, its
rowid and its values before the change (none for a row the snapshot did not have) go into the
log; later changes to that rowid leave the log alone. So the log always holds, for every rowid
whose row may differ from the snapshot, the snapshot's row there: ``rowid -> (before, now)`` is
all a diff needs, without copying or scanning either world. Untouched rows are never read.

The log records its baseline as a token unique to the snapshot object (``_log_baseline``);
:func:`logged_changes` answers only for a connection whose token names the very bytes it is
asked about, and ``None`` otherwise (the caller then compares the worlds in full). The log lives
in the world's own database, so a serialized copy carries it along; the snapshot's bytes and the
world's content hash are untouched. ``PRAGMA recursive_triggers`` is switched on in
:func:`open_tracked`, so rows that ``REPLACE`` deletes are logged too.
"""

from __future__ import annotations

import sqlite3
import uuid
from functools import cache

from corecraft.world import db, models
from corecraft.world.store import World, copy_connection

_TRACKED: dict[int, tuple[bytes, str, bytes]] = {}  # id(start) -> (start, token, tracked bytes)
_BASELINES: dict[str, bytes] = {}  # token -> start
_KEEP = 64
"""How many start snapshots keep their tracked copy cached (oldest dropped first)."""

Row = tuple[object, ...]


def _log(table: str) -> str:
    return f'"_log_{table}"'


def _seen(log: str, row: str) -> str:
    """A subquery finding ``row`` (``old`` or ``new``) already in ``log``."""
    return f"SELECT 1 FROM {log} WHERE _rid = {row}.rowid"


@cache
def _schema() -> tuple[str, ...]:
    """The statements adding the log tables and triggers to a world."""
    out = ["CREATE TABLE _log_baseline (token TEXT NOT NULL)"]
    for model in models.ALL_TABLES:
        name, table, log = model.__tablename__, db.table(model), _log(model.__tablename__)
        columns = ", ".join(f'"{c}"' for c in db.column_names(model))
        old = ", ".join(f'old."{c}"' for c in db.column_names(model))
        # Not INSERT OR IGNORE: a trigger's conflict clause gives way to the outer statement's (REPLACE).
        before = f"INSERT INTO {log} SELECT old.rowid, 1, {old} WHERE NOT EXISTS ({_seen(log, 'old')});"
        new = f"INSERT INTO {log} (_rid, _existed) SELECT new.rowid, 0 WHERE NOT EXISTS ({_seen(log, 'new')});"
        out += [
            f"CREATE TABLE {log} (_rid INTEGER PRIMARY KEY, _existed INTEGER NOT NULL, {columns})",
            f'CREATE TRIGGER "_log_{name}_i" AFTER INSERT ON {table} BEGIN {new} END',
            f'CREATE TRIGGER "_log_{name}_u" AFTER UPDATE ON {table} BEGIN {before} {new} END',
            f'CREATE TRIGGER "_log_{name}_d" AFTER DELETE ON {table} BEGIN {before} END',
        ]
    return tuple(out)


def tracked_bytes(start: bytes) -> bytes:
    """``start`` with an empty change log whose baseline is ``start`` (built once per snapshot object)."""
    cached = _TRACKED.get(id(start))
    if cached is not None and cached[0] is start:
        return cached[2]
    conn = copy_connection(start)
    try:
        token = uuid.uuid4().hex
        for statement in _schema():
            conn.execute(statement)
        conn.execute("INSERT INTO _log_baseline VALUES (?)", (token,))
        data = conn.serialize()
    finally:
        conn.close()
    if len(_TRACKED) >= _KEEP:
        _, old_token, _ = _TRACKED.pop(next(iter(_TRACKED)))
        _BASELINES.pop(old_token, None)
    _TRACKED[id(start)] = (start, token, data)
    _BASELINES[token] = start
    return data


def open_tracked(recipe: str, seed: int | None, start: bytes) -> World:
    """A fresh copy of the ``start`` world (of ``recipe`` and ``seed``) that logs its changes."""
    world = World.open(recipe, seed, data=tracked_bytes(start))
    world.conn.execute("PRAGMA recursive_triggers = ON")
    return world


def _baseline(conn: sqlite3.Connection) -> bytes | None:
    try:
        row = conn.execute("SELECT token FROM main._log_baseline").fetchone()
    except sqlite3.OperationalError:  # no log in this world
        return None
    return None if row is None else _BASELINES.get(row[0])


def logged_changes(conn: sqlite3.Connection, start: bytes) -> dict[str, list[tuple[Row | None, Row | None]]] | None:
    """Per table name, ``(row at start, row now)`` for each rowid touched since ``start`` (``None``
    where there was or is no row), for the tables with a touched rowid; ``None`` when ``conn``
    does not log its changes since exactly these bytes."""
    if _baseline(conn) is not start:
        return None
    names = [m.__tablename__ for m in models.ALL_TABLES]
    touched = " UNION ALL ".join(f"SELECT '{n}' WHERE EXISTS (SELECT 1 FROM main.{_log(n)})" for n in names)
    return {name: _pairs(conn, name) for (name,) in conn.execute(touched).fetchall()}


def _pairs(conn: sqlite3.Connection, name: str) -> list[tuple[Row | None, Row | None]]:
    model = next(m for m in models.ALL_TABLES if m.__tablename__ == name)
    columns = db.column_names(model)
    width = len(columns)
    picked = ", ".join([*(f'l."{c}"' for c in columns), *(f'm."{c}"' for c in columns)])
    rows = conn.execute(f"SELECT l._existed, m.rowid IS NOT NULL, {picked} FROM main.{_log(name)} AS l "
                        f"LEFT JOIN main.{db.table(model)} AS m ON m.rowid = l._rid ORDER BY l._rid")
    return [((tuple(values[:width]) if existed else None), (tuple(values[width:]) if present else None))
            for existed, present, *values in rows]
