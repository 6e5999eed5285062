"""Trigram full-text indexes that let the text searches of growing tables skip the rows that cannot match.

The tools' text search (:meth:`corecraft.tools.common.Query.text`) keeps its exact meaning: every
word appears, case-insensitively, in one of the searched columns (``LIKE '%word%'``; a number with no
digit before it). Over a table
that grows with the world that is a full scan, so each such table has an FTS5 index with the
``trigram`` tokenizer over the columns searched (an external-content table kept in step with the
rows by triggers, built into the template and merged into one b-tree, so a lookup reads one segment
rather than one per batch of rows the build inserted). A word of three or more characters must then appear
as a phrase in the row's index entry: a superset of the ``LIKE`` matches (the index folds case
at least as widely as ``LIKE`` does), so the index only narrows the rows the exact ``LIKE``
clauses are checked on. Shorter words cannot be looked up in a trigram index; they are matched
by ``LIKE`` alone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from types import MappingProxyType

from sqlmodel import SQLModel

from corecraft.world import db
from corecraft.world import models as m

INDEXED: MappingProxyType[type[SQLModel], tuple[str, ...]] = MappingProxyType({
    m.Customer: ("id", "name", "email", "phone"),
    m.Employee: ("id", "name", "email", "title"),
    m.Build: ("id", "name"),
    m.SupportTicket: ("id", "subject", "body"),
    m.SlackMessage: ("id", "text"),
})
"""The tables whose text search grows with the world, and the columns their search reads."""

SHORTEST = 3
"""The shortest word a trigram index can look up."""


def index_name(model: type[SQLModel]) -> str:
    return f'"{db.table_name(model)}_text"'


def create(conn: sqlite3.Connection) -> None:
    """Create and fill every index, with the triggers that keep it in step with its table."""
    for model, columns in INDEXED.items():
        table, index = db.table_name(model), index_name(model)
        names = ", ".join(f'"{c}"' for c in columns)
        old = ", ".join(f'old."{c}"' for c in columns)
        new = ", ".join(f'new."{c}"' for c in columns)
        conn.execute(f"CREATE VIRTUAL TABLE {index} USING fts5({names}, content='{table}', tokenize='trigram')")
        forget = f"INSERT INTO {index} ({index}, rowid, {names}) VALUES ('delete', old.rowid, {old});"
        learn = f"INSERT INTO {index} (rowid, {names}) VALUES (new.rowid, {new});"
        conn.execute(f'CREATE TRIGGER "{table}_text_ins" AFTER INSERT ON "{table}" BEGIN {learn} END')
        conn.execute(f'CREATE TRIGGER "{table}_text_del" AFTER DELETE ON "{table}" BEGIN {forget} END')
        conn.execute(f'CREATE TRIGGER "{table}_text_upd" AFTER UPDATE ON "{table}" BEGIN {forget} {learn} END')
        conn.execute(f"INSERT INTO {index} ({index}) VALUES ('rebuild')")
        conn.execute(f"INSERT INTO {index} ({index}) VALUES ('optimize')")


def narrowing(table: str, columns: Sequence[str], words: Sequence[str]) -> tuple[str, str] | None:
    """A clause keeping only the rows whose index entry holds every word long enough to look up, and its
    MATCH parameter; None when ``table`` has no index covering ``columns`` or no word is long enough."""
    model = next((t for t in INDEXED if db.table_name(t) == table), None)
    long_words = [w for w in words if len(w) >= SHORTEST]
    if model is None or not long_words or not set(columns) <= set(INDEXED[model]):
        return None
    index = index_name(model)
    phrase = " AND ".join('"' + w.replace('"', '""') + '"' for w in long_words)
    return f"rowid IN (SELECT rowid FROM {index} WHERE {index} MATCH ?)", phrase
