"""What changed between an episode's start and end worlds, computed in SQL.

The end world is a copy of the start snapshot's very bytes, changed in place by the tools. Two
consequences make the diff cheap (a few milliseconds on the default world):

- A table whose content changed has at least one of its start pages changed (the leaf holding a
  row, the parent of a split or freed leaf, the root of an emptied table, an overflow page).
  Comparing the two databases page by page, with SQLite's ``dbstat`` map of which table owns
  which start page (computed once per :class:`~corecraft.world.store.Snapshot`), names the only tables worth querying. Without
  ``dbstat`` every table is queried.
- An unchanged row keeps its rowid. With the start snapshot attached to the end connection, a
  join on rowid finds the rows whose columns differ and two anti-joins the added and deleted
  rows; only those rows are compared column by column. Changes are reported by primary key: a
  rowid now holding another id is one row deleted and one added, an id deleted and inserted
  again is one row updated (if anything differs).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from corecraft.world import db, models
from corecraft.world.store import Snapshot


@dataclass
class TableDiff:
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    updated: dict[str, list[str]] = field(default_factory=dict)  # id -> changed columns

    @property
    def changed(self) -> bool:
        return bool(self.added or self.deleted or self.updated)


def world_diff(end: sqlite3.Connection, start: Snapshot) -> dict[str, TableDiff]:
    """Model name -> its changes, for every table that changed."""
    end.execute("ATTACH DATABASE ':memory:' AS start")
    try:
        end.deserialize(start.data, name="start")
        touched = _touched_tables(end, start)
        out: dict[str, TableDiff] = {}
        for model in models.ALL_TABLES:
            if touched is not None and db.table_name(model) not in touched:
                continue
            diff = _table_diff(end, db.table(model), db.column_names(model))
            if diff.changed:
                out[model.__name__] = diff
        return out
    finally:
        end.execute("DETACH DATABASE start")


def _touched_tables(end: sqlite3.Connection, start: Snapshot) -> set[str] | None:
    """Names of the tables owning a start page that differs in the end world (None: cannot tell).

    Sound when every table keeps its root page: a table none of whose pages changed reads the same
    b-tree from the same root. (It always does here; the check guards against unrelated worlds.)
    """
    owners = start.page_owners
    layout = [end.execute(f"SELECT name, rootpage FROM {schema}.sqlite_master ORDER BY name").fetchall()
              + end.execute(f"PRAGMA {schema}.page_size").fetchall() for schema in ("main", "start")]
    if owners is None or layout[0] != layout[1]:
        return None
    size = layout[0][-1][0]
    now = end.serialize()
    before = start.data
    return {table for page, table in owners.items() if now[(page - 1) * size:page * size] != before[(page - 1) * size:page * size]}


def _changed_columns(names: tuple[str, ...], before: tuple[object, ...], after: tuple[object, ...]) -> list[str]:
    return [n for n, a, b in zip(names, before, after, strict=True) if a != b]


def _table_diff(end: sqlite3.Connection, t: str, names: tuple[str, ...]) -> TableDiff:
    """One table's changes; ``t`` is its quoted name, ``names`` its columns."""
    quoted = [f'"{n}"' for n in names]
    diff = TableDiff(
        added=[r[0] for r in end.execute(f"SELECT id FROM main.{t} WHERE rowid NOT IN (SELECT rowid FROM start.{t})")],
        deleted=[r[0] for r in end.execute(f"SELECT id FROM start.{t} WHERE rowid NOT IN (SELECT rowid FROM main.{t})")],
    )
    both = ", ".join(f"{side}.{q}" for side in ("s", "m") for q in quoted)
    differs = " OR ".join(f"m.{q} IS NOT s.{q}" for q in quoted)
    key, width = names.index("id"), len(names)
    for row in end.execute(f"SELECT {both} FROM main.{t} AS m JOIN start.{t} AS s ON s.rowid = m.rowid WHERE {differs}"):
        before, after = row[:width], row[width:]
        if before[key] != after[key]:  # the rowid now holds another row
            diff.deleted.append(before[key])
            diff.added.append(after[key])
        else:
            diff.updated[before[key]] = _changed_columns(names, before, after)
    moved = set(diff.added) & set(diff.deleted)  # an id deleted, then inserted again under another rowid
    if moved:
        diff.added = [i for i in diff.added if i not in moved]
        diff.deleted = [i for i in diff.deleted if i not in moved]
        for row_id in moved:
            before, after = (end.execute(f"SELECT {', '.join(quoted)} FROM {schema}.{t} WHERE id = ?", (row_id,)).fetchone()
                             for schema in ("start", "main"))
            if before != after:
                diff.updated[row_id] = _changed_columns(names, before, after)
    diff.added.sort()
    diff.deleted.sort()
    diff.updated = dict(sorted(diff.updated.items()))
    return diff
