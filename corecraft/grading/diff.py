"""What changed between an episode's start and end worlds, computed in SQL.

The end world is a copy of the start snapshot's very bytes, changed in place by the tools. Two
consequences make the diff cheap (a few milliseconds on the default world):

- A table whose content changed has at least one of its start pages changed (the leaf holding a
  row, the parent of a split or freed leaf, the root of an emptied table, an overflow page).
  Comparing the two databases page by page, with SQLite's ``dbstat`` map of which table owns
  which start page (built once per snapshot), names the only tables worth querying. Without
  ``dbstat`` every table is queried.
- An unchanged row keeps its rowid. With the start snapshot attached to the end connection, a
  join on rowid finds the rows whose columns differ and two anti-joins the added and deleted
  rows; only those rows are compared column by column. Changes are reported by primary key: a
  rowid now holding another id is one row deleted and one added, an id deleted and inserted
  again is one row updated (if anything differs).

An episode's world usually logs its own changes (:mod:`corecraft.world.changelog`): then the
log names every touched rowid with its row at the start, and the diff reads only those rows,
in time proportional to the changes, whatever the size of the world. Both ways feed the same
comparison of ``(row at start, row now)`` pairs.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from corecraft.world import db, models
from corecraft.world.changelog import Row, logged_changes


@dataclass
class TableDiff:
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    updated: dict[str, list[str]] = field(default_factory=dict)  # id -> changed columns

    @property
    def changed(self) -> bool:
        return bool(self.added or self.deleted or self.updated)


def world_diff(end: sqlite3.Connection, start: bytes) -> dict[str, TableDiff]:
    """Model name -> its changes, for every table that changed."""
    logged = logged_changes(end, start)
    if logged is not None:
        out = {}
        for model in models.ALL_TABLES:
            diff = _compare(db.column_names(model), logged.get(model.__tablename__, []))
            if diff.changed:
                out[model.__name__] = diff
        return out
    end.execute("ATTACH DATABASE ':memory:' AS start")
    try:
        end.deserialize(start, name="start")
        touched = _touched_tables(end, start)
        out: dict[str, TableDiff] = {}
        for model in models.ALL_TABLES:
            if touched is not None and model.__tablename__ not in touched:
                continue
            diff = _table_diff(end, db.table(model), db.column_names(model))
            if diff.changed:
                out[model.__name__] = diff
        return out
    finally:
        end.execute("DETACH DATABASE start")


_OWNERS: dict[int, tuple[bytes, dict[int, str] | None]] = {}  # id(start) -> (start, page number -> table name)


def _page_owners(end: sqlite3.Connection, start: bytes) -> dict[int, str] | None:
    """Which table owns each page of the attached start snapshot (index pages count for their table)."""
    cached = _OWNERS.get(id(start))
    if cached is not None and cached[0] is start:
        return cached[1]
    try:
        tables = dict(end.execute("SELECT name, tbl_name FROM start.sqlite_master"))
        owners: dict[int, str] | None = {page: tables.get(name, name) for name, page in
                                         end.execute("SELECT name, pageno FROM dbstat('start')")}
    except sqlite3.OperationalError:  # SQLite built without dbstat
        owners = None
    if len(_OWNERS) >= 64:
        _OWNERS.pop(next(iter(_OWNERS)))
    _OWNERS[id(start)] = (start, owners)
    return owners


def _touched_tables(end: sqlite3.Connection, start: bytes) -> set[str] | None:
    """Names of the tables owning a start page that differs in the end world (None: cannot tell).

    Sound when every table keeps its root page: a table none of whose pages changed reads the same
    b-tree from the same root. (It always does here; the check guards against unrelated worlds.)
    """
    owners = _page_owners(end, start)
    layout = [end.execute(f"SELECT name, rootpage FROM {schema}.sqlite_master ORDER BY name").fetchall()
              + end.execute(f"PRAGMA {schema}.page_size").fetchall() for schema in ("main", "start")]
    if owners is None or layout[0] != layout[1]:
        return None
    size = layout[0][-1][0]
    now = end.serialize()
    return {table for page, table in owners.items() if now[(page - 1) * size:page * size] != start[(page - 1) * size:page * size]}


def _changed_columns(names: tuple[str, ...], before: tuple[object, ...], after: tuple[object, ...]) -> list[str]:
    return [n for n, a, b in zip(names, before, after, strict=True) if a != b]


def _table_diff(end: sqlite3.Connection, t: str, names: tuple[str, ...]) -> TableDiff:
    """One table's changes; ``t`` is its quoted name, ``names`` its columns."""
    quoted = ", ".join(f'"{n}"' for n in names)
    added = end.execute(f"SELECT {quoted} FROM main.{t} WHERE rowid NOT IN (SELECT rowid FROM start.{t})")
    deleted = end.execute(f"SELECT {quoted} FROM start.{t} WHERE rowid NOT IN (SELECT rowid FROM main.{t})")
    pairs: list[tuple[Row | None, Row | None]] = [(None, row) for row in added] + [(row, None) for row in deleted]
    both = ", ".join(f'{side}."{n}"' for side in ("s", "m") for n in names)
    differs = " OR ".join(f'm."{n}" IS NOT s."{n}"' for n in names)
    width = len(names)
    for row in end.execute(f"SELECT {both} FROM main.{t} AS m JOIN start.{t} AS s ON s.rowid = m.rowid WHERE {differs}"):
        pairs.append((row[:width], row[width:]))
    return _compare(names, pairs)


def _compare(names: tuple[str, ...], pairs: list[tuple[Row | None, Row | None]]) -> TableDiff:
    """A table's changes from ``(row at start, row now)`` pairs, one per rowid (``None``: no row there).

    A rowid holding another id is that id deleted and the other added; an id deleted and added
    again (under another rowid) is one row updated, if anything differs.
    """
    key = names.index("id")
    diff = TableDiff()
    gone: dict[str, Row] = {}
    new: dict[str, Row] = {}
    for before, after in pairs:
        if before == after:
            continue
        if before is not None and after is not None and before[key] == after[key]:
            diff.updated[str(before[key])] = _changed_columns(names, before, after)
            continue
        if before is not None:
            gone[str(before[key])] = before
        if after is not None:
            new[str(after[key])] = after
    for row_id in gone.keys() & new.keys():
        before, after = gone.pop(row_id), new.pop(row_id)
        if before != after:
            diff.updated[row_id] = _changed_columns(names, before, after)
    diff.added = sorted(new)
    diff.deleted = sorted(gone)
    diff.updated = dict(sorted(diff.updated.items()))
    return diff
