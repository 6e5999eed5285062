"""Row codecs between Python values and the SQLite storage the sqlmodel tables declare.

Tools and the generator talk to SQLite through the raw ``sqlite3`` connection with bound
parameters (fast: a few microseconds a query); the column types come from the sqlmodel
metadata, so the storage format stays exactly what a sqlmodel ``Session`` reads back:
datetimes as UTC ``YYYY-MM-DD HH:MM:SS.ffffff``, dates as ``YYYY-MM-DD``, JSON as text,
booleans as 0/1.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, date, datetime, tzinfo
from types import MappingProxyType
from typing import Any

from sqlalchemy import JSON, Boolean, Date, DateTime
from sqlmodel import SQLModel

from corecraft.world import models

_DT_FORMAT = "%Y-%m-%d %H:%M:%S.%f"

Decoder = Callable[[Any, tzinfo], Any]
Encoder = Callable[[Any], Any]


def encode_datetime(value: datetime) -> str:
    """An aware datetime as stored: UTC, fixed width, sortable as text."""
    if value.tzinfo is None:
        raise ValueError("datetimes must carry a timezone")
    return value.astimezone(UTC).strftime(_DT_FORMAT)


def decode_datetime(value: str, tz: tzinfo) -> datetime:
    """A stored datetime as an aware datetime in the world's timezone."""
    return datetime.fromisoformat(value).replace(tzinfo=UTC).astimezone(tz)  # C parser; strptime is 20x slower


def _enc_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _enc_date(value: date | str) -> str:
    return value if isinstance(value, str) else value.isoformat()


def _dec_datetime_iso(value: str | None, tz: tzinfo) -> str | None:
    return None if value is None else decode_datetime(value, tz).isoformat()


def _dec_json(value: str | None, tz: tzinfo) -> Any:
    return None if value is None else json.loads(value)


def _dec_bool(value: Any, tz: tzinfo) -> bool | None:
    return None if value is None else bool(value)


def _dec_plain(value: Any, tz: tzinfo) -> Any:
    return value


def _enc_plain(value: Any) -> Any:
    return value


def _none_safe(fn: Encoder) -> Encoder:
    return lambda v: None if v is None else fn(v)


Codec = tuple[str, Encoder, Decoder]


def _build_codecs(model: type[SQLModel]) -> tuple[Codec, ...]:
    out: list[Codec] = []
    for column in model.__table__.columns:  # type: ignore[attr-defined]
        kind = column.type
        if isinstance(kind, JSON):
            out.append((column.name, _none_safe(_enc_json), _dec_json))
        elif isinstance(kind, DateTime) or getattr(kind, "impl", None).__class__ is DateTime:
            out.append((column.name, _none_safe(encode_datetime), _dec_datetime_iso))
        elif isinstance(kind, Date):
            out.append((column.name, _none_safe(_enc_date), _dec_plain))
        elif isinstance(kind, Boolean):
            out.append((column.name, _none_safe(int), _dec_bool))
        else:
            out.append((column.name, _enc_plain, _dec_plain))
    return tuple(out)


_CODECS = MappingProxyType({model: _build_codecs(model) for model in models.ALL_TABLES})
"""Every table's column codecs, in column order (a constant, built once at import)."""


def _codecs(model: type[SQLModel]) -> tuple[Codec, ...]:
    return _CODECS[model]


def table_name(model: type[SQLModel]) -> str:
    """The SQL table name of a model."""
    return str(model.__tablename__)


def table(model: type[SQLModel]) -> str:
    """The SQL table name of a model, quoted for use in SQL text."""
    return f'"{table_name(model)}"'


def column_names(model: type[SQLModel]) -> tuple[str, ...]:
    return tuple(name for name, _, _ in _codecs(model))


def datetime_columns(model: type[SQLModel]) -> tuple[str, ...]:
    """Names of the columns holding datetimes."""
    return tuple(name for name, _, dec in _codecs(model) if dec is _dec_datetime_iso)


def decode(model: type[SQLModel], row: sqlite3.Row | tuple[Any, ...], tz: tzinfo) -> dict[str, Any]:
    """A stored row (all columns, table order) as a JSON-ready dict; datetimes ISO 8601 with offset."""
    return {name: dec(value, tz) for (name, _, dec), value in zip(_codecs(model), row, strict=True)}


def encode(model: type[SQLModel], values: Mapping[str, Any]) -> tuple[Any, ...]:
    """Python values (by column name; missing ones are NULL) as a storage tuple in column order."""
    return tuple(enc(values.get(name)) for name, enc, _ in _codecs(model))


def encode_value(model: type[SQLModel], column: str, value: Any) -> Any:
    """One Python value as stored in ``column``."""
    for name, enc, _ in _codecs(model):
        if name == column:
            return enc(value)
    raise KeyError(f"{model.__name__} has no column {column!r}")


def insert_many(conn: sqlite3.Connection, model: type[SQLModel], rows: Iterable[Mapping[str, Any]]) -> None:
    """Insert rows given as dicts of Python values."""
    names = column_names(model)
    sql = f"INSERT INTO {table(model)} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    conn.executemany(sql, (encode(model, r) for r in rows))


def select_all(model: type[SQLModel]) -> str:
    """``SELECT <every column> FROM <table>`` in the column order :func:`decode` expects."""
    return f"SELECT {', '.join(column_names(model))} FROM {table(model)}"


def fetch(conn: sqlite3.Connection, model: type[SQLModel], row_id: str, tz: tzinfo) -> dict[str, Any] | None:
    """One row by primary key, decoded, or None."""
    row = conn.execute(f"{select_all(model)} WHERE id = ?", (row_id,)).fetchone()
    return None if row is None else decode(model, row, tz)
