"""What changed between an episode's start and end worlds, computed in SQL.

The start snapshot is attached to the end world's connection for the duration of the diff; per
table, ``EXCEPT`` queries find added, deleted and updated primary keys, and only the updated rows
are compared column by column.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from corecraft.world import db, models


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
    end.execute("ATTACH DATABASE ':memory:' AS start")
    try:
        end.deserialize(start, name="start")
        out: dict[str, TableDiff] = {}
        for model in models.ALL_TABLES:
            t = db.table(model)
            changed = end.execute(
                f"SELECT id FROM (SELECT * FROM main.{t} EXCEPT SELECT * FROM start.{t}) "
                f"UNION SELECT id FROM (SELECT * FROM start.{t} EXCEPT SELECT * FROM main.{t})"
            ).fetchall()
            if not changed:
                continue
            ids = sorted(r[0] for r in changed)
            diff = TableDiff()
            marks = ",".join("?" * len(ids))
            before = {r[0]: r for r in end.execute(f"SELECT * FROM start.{t} WHERE id IN ({marks})", ids)}
            after = {r[0]: r for r in end.execute(f"SELECT * FROM main.{t} WHERE id IN ({marks})", ids)}
            names = db.column_names(model)
            for row_id in ids:
                if row_id not in before:
                    diff.added.append(row_id)
                elif row_id not in after:
                    diff.deleted.append(row_id)
                else:
                    diff.updated[row_id] = [n for n, a, b in zip(names, before[row_id], after[row_id], strict=True) if a != b]
            out[model.__name__] = diff
        return out
    finally:
        end.execute("DETACH DATABASE start")
