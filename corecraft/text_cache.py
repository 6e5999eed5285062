"""A persistent key -> text cache in a SQLite file, safe for several processes at once (WAL mode).

The LLM judge keeps its verdicts here and the LLM customer its answers, so a re-run makes no
requests for what it has seen.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


class TextCache:
    """Texts by key in the table ``table`` of the SQLite file ``path`` (created on first use)."""

    def __init__(self, path: Path, table: str) -> None:
        if not table.isidentifier():
            raise ValueError(f"cache table name must be an identifier, not {table!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.table = path, table
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, text TEXT NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def get(self, key: str) -> str | None:
        with self._connect() as conn:
            row = conn.execute(f"SELECT text FROM {self.table} WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    def put(self, key: str, text: str) -> None:
        with self._connect() as conn:
            conn.execute(f"INSERT OR REPLACE INTO {self.table} VALUES (?, ?)", (key, text))
