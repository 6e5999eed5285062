"""A task's ``setup``: rows added or changed on top of the seeded world, for that task only.

Rows go through the same models (field names and types checked, foreign keys enforced by
SQLite). Naive datetimes in setup are read as the world's local time.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from corecraft.tasks.model import SetupInsert, SetupStep
from corecraft.world import db, models
from corecraft.world.store import World


class SetupError(ValueError):
    def __init__(self, index: int, message: str) -> None:
        super().__init__(f"setup step {index + 1}: {message}")
        self.index = index


def _coerce(model: type, column: str, value: Any, world: World) -> Any:
    field = model.model_fields.get(column)  # type: ignore[attr-defined]
    if field is None:
        raise ValueError(f"{model.__name__} has no field {column!r}; fields: {', '.join(model.model_fields)}")  # type: ignore[attr-defined]
    try:
        parsed = TypeAdapter(field.annotation).validate_python(value)
    except ValidationError as exc:
        raise ValueError(f"{model.__name__}.{column}: {exc.errors()[0]['msg']}") from None
    if isinstance(parsed, datetime) and parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=world.tz)
    return parsed


def _check_references(world: World, model: type, values: dict[str, Any]) -> None:
    """Name the missing row when a value points at nothing (SQLite only says a constraint failed)."""
    columns = model.__table__.columns  # type: ignore[attr-defined]
    for column, value in values.items():
        for fk in columns[column].foreign_keys if value is not None else ():
            target = fk.column.table.name
            found = world.conn.execute(f'SELECT 1 FROM "{target}" WHERE {fk.column.name} = ?', (value,)).fetchone()
            if found is None:
                name = next(t.__name__ for t in models.ALL_TABLES if db.table_name(t) == target)
                raise ValueError(f"{model.__name__}.{column}: no {name} with id {value!r}")


def apply_setup(world: World, steps: list[SetupStep]) -> None:
    """Apply every step or raise :class:`SetupError` naming the step; the world is then unusable."""
    for i, step in enumerate(steps):
        name = step.insert if isinstance(step, SetupInsert) else step.update
        model = models.TABLES_BY_NAME.get(name)
        if model is None:
            raise SetupError(i, f"unknown table {name!r}")
        try:
            if isinstance(step, SetupInsert):
                row = {k: _coerce(model, k, v, world) for k, v in step.row.items()}
                missing = [n for n, f in model.model_fields.items() if f.is_required() and n not in row]
                if missing:
                    raise ValueError(f"{name} row lacks required field(s) {', '.join(missing)}")
                _check_references(world, model, row)
                db.insert_many(world.conn, model, [row])
            else:
                if not step.set:
                    raise ValueError("`set` is empty")
                parsed = {k: _coerce(model, k, v, world) for k, v in step.set.items()}
                _check_references(world, model, parsed)
                values = {k: db.encode_value(model, k, v) for k, v in parsed.items()}
                cur = world.conn.execute(
                    f"UPDATE {db.table(model)} SET {', '.join(f'{k} = ?' for k in values)} WHERE id = ?",
                    [*values.values(), step.id],
                )
                if cur.rowcount != 1:
                    raise ValueError(f"no {name} with id {step.id!r}")
        except (ValueError, sqlite3.Error) as exc:
            raise SetupError(i, str(exc)) from None
