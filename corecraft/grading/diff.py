"""What changed between an episode's start and its end world, from the episode's change log.

Every world connection logs the first image of each row the episode touches (see
:mod:`corecraft.world.changelog`), so the diff reads only the touched rows: their start images
from the log, their end images by rowid. Its cost is the number of changed rows, whatever the size
of the world. Changes are reported by primary key: an id present only at the end was added, only
at the start deleted, and at both with a different row updated (with the columns that differ).
An id that kept its row is unchanged even if it moved to another rowid.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from corecraft.world import changelog, db


@dataclass
class TableDiff:
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    updated: dict[str, list[str]] = field(default_factory=dict)  # id -> changed columns

    @property
    def changed(self) -> bool:
        return bool(self.added or self.deleted or self.updated)


def world_diff(conn: sqlite3.Connection) -> dict[str, TableDiff]:
    """Model name -> its changes since the episode's start, for every table that changed."""
    out: dict[str, TableDiff] = {}
    for model, (start_rows, end_rows) in changelog.touched(conn).items():
        names = db.column_names(model)
        key = names.index("id")
        before = {row[key]: row for row in start_rows}
        after = {row[key]: row for row in end_rows}
        diff = TableDiff(
            added=sorted(after.keys() - before.keys()),
            deleted=sorted(before.keys() - after.keys()),
            updated={i: [n for n, a, b in zip(names, before[i], after[i], strict=True) if a != b]
                     for i in sorted(before.keys() & after.keys()) if before[i] != after[i]},
        )
        if diff.changed:
            out[model.__name__] = diff
    return out
