"""The change log of a world connection: which rows an episode touched, and how they were at its start.

Per table, a TEMP table ``changelog_<table>`` keyed by rowid holds the first image of every row
the episode touched: the row as it was (``present`` = 1) or a marker that the rowid was empty
(``present`` = 0). TEMP triggers fill it on INSERT, UPDATE and DELETE (first touch wins, through
``INSERT OR IGNORE``), so its size is the number of rows changed, whatever the size of the world.
The log lives in the connection's private temp database and inside the episode's transaction:
rolling the episode back empties it too. Everything here is installed once per connection.

From the log, :func:`touched` gives the start and end images of the touched rows (what the grading
diff compares), :func:`dump` the end images (what a fork or a pickle carries) and :func:`replay`
writes them into another connection opened on the same start.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from sqlmodel import SQLModel

from corecraft.world import db, models

Row = tuple[Any, ...]
Dump = dict[str, list[tuple[int, Row | None]]]
"""Model name -> (rowid, its row at the end, or None if the rowid is empty at the end) per touched rowid."""


def _log(model: type[SQLModel]) -> str:
    return f'temp."changelog_{db.table_name(model)}"'


def install(conn: sqlite3.Connection) -> None:
    """Create the log tables and the triggers that fill them (once per connection, outside a transaction)."""
    for model in models.ALL_TABLES:
        name, log = db.table_name(model), f'"changelog_{db.table_name(model)}"'  # triggers cannot name a schema
        columns = [f'"{c}"' for c in db.column_names(model)]
        old = ", ".join(f"old.{c}" for c in columns)
        conn.execute(f"CREATE TEMP TABLE {log} "
                     f"(rid INTEGER PRIMARY KEY, present INTEGER NOT NULL, {', '.join(columns)})")
        logged_old = f"INSERT OR IGNORE INTO {log} VALUES (old.rowid, 1, {old});"
        logged_new = f"INSERT OR IGNORE INTO {log} (rid, present) VALUES (new.rowid, 0);"
        conn.executescript(f"""
            CREATE TEMP TRIGGER "changelog_ins_{name}" AFTER INSERT ON main."{name}" BEGIN {logged_new} END;
            CREATE TEMP TRIGGER "changelog_upd_{name}" BEFORE UPDATE ON main."{name}" BEGIN {logged_old} END;
            CREATE TEMP TRIGGER "changelog_mov_{name}" AFTER UPDATE ON main."{name}"
                WHEN new.rowid IS NOT old.rowid BEGIN {logged_new} END;
            CREATE TEMP TRIGGER "changelog_del_{name}" BEFORE DELETE ON main."{name}" BEGIN {logged_old} END;
        """)


def clear(conn: sqlite3.Connection) -> None:
    """Forget every logged row (the current state becomes the start the log compares with)."""
    for model in models.ALL_TABLES:
        conn.execute(f"DELETE FROM {_log(model)}")


def _logged(conn: sqlite3.Connection) -> list[type[SQLModel]]:
    return [m for m in models.ALL_TABLES if conn.execute(f"SELECT 1 FROM {_log(m)} LIMIT 1").fetchone()]


def touched(conn: sqlite3.Connection) -> dict[type[SQLModel], tuple[list[Row], list[Row]]]:
    """Per table with logged rows: (start images of the touched rowids that held a row, their rows now)."""
    out: dict[type[SQLModel], tuple[list[Row], list[Row]]] = {}
    for model in _logged(conn):
        names = ", ".join(f'"{c}"' for c in db.column_names(model))
        log = _log(model)
        before = conn.execute(f"SELECT {names} FROM {log} WHERE present = 1").fetchall()
        after = conn.execute(f"SELECT {names} FROM main.{db.table(model)} WHERE rowid IN (SELECT rid FROM {log})")
        out[model] = (before, after.fetchall())
    return out


def dump(conn: sqlite3.Connection) -> Dump:
    """Every touched rowid's row now (None where the rowid is now empty), per table."""
    out: Dump = {}
    for model in _logged(conn):
        names = ", ".join(f'm."{c}"' for c in db.column_names(model))
        rows = conn.execute(f"SELECT l.rid, m.rowid IS NOT NULL, {names} FROM {_log(model)} AS l "
                            f"LEFT JOIN main.{db.table(model)} AS m ON m.rowid = l.rid ORDER BY l.rid")
        out[model.__name__] = [(rid, tuple(values) if present else None) for rid, present, *values in rows]
    return out


def replay(conn: sqlite3.Connection, changes: Dump) -> None:
    """Write a :func:`dump` taken from a connection with the same start into ``conn`` (inside its transaction):
    every touched rowid emptied, then refilled with its end row. Foreign keys are not checked row by
    row (a row may point at one written later); the state written back satisfies them as the source did."""
    conn.execute("PRAGMA defer_foreign_keys = ON")
    try:
        for name, rows in changes.items():
            _delete(conn, name, [rid for rid, _ in rows])
        for name, rows in changes.items():
            model = models.TABLES_BY_NAME[name]
            columns = db.column_names(model)
            conn.executemany(f"INSERT INTO {db.table(model)} (rowid, {', '.join(columns)}) "
                             f"VALUES ({', '.join('?' * (len(columns) + 1))})",
                             [(rid, *row) for rid, row in rows if row is not None])
    finally:
        conn.execute("PRAGMA defer_foreign_keys = OFF")


def _delete(conn: sqlite3.Connection, name: str, rowids: Sequence[int]) -> None:
    table = db.table(models.TABLES_BY_NAME[name])
    conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(rid,) for rid in rowids])
