"""The world generator: recipe + seed + seed content -> a SQLite database (as bytes).

Deterministic: all randomness comes from one ``random.Random(seed)`` and one seeded Faker
instance, used in a fixed order (the order of :meth:`_Generator.run`), and nothing reads the wall
clock. Stories are coherent: orders come after their customer, payment before shipment, shipment
events in time order, tickets about real orders, refunds within their payment, resolutions linked
to the refunds they record, Slack messages about real orders and tickets. Nothing is dated after
``now``. Each part lives in :mod:`corecraft.world.generation`.
"""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlmodel import SQLModel

from corecraft.world import models as m
from corecraft.world import text_index
from corecraft.world.db import insert_many
from corecraft.world.generation.catalog import CatalogMixin
from corecraft.world.generation.chatter import ChatterMixin
from corecraft.world.generation.commerce import CommerceMixin
from corecraft.world.generation.people import PeopleMixin
from corecraft.world.generation.support import SupportMixin
from corecraft.world.recipe import Recipe
from corecraft.world.seeds import Seeds

GENERATOR_VERSION = "4"
"""Bump when generated content changes; part of the template cache key."""


class _Generator(PeopleMixin, CatalogMixin, CommerceMixin, SupportMixin, ChatterMixin):
    def run(self) -> dict[type[SQLModel], list[dict[str, Any]]]:
        self.employees()
        self.customers()
        self.products()
        self.builds()
        self.orders()
        self.earned_tiers()
        self.tickets()
        self.date_builds()
        self.saved_builds()
        self.fill_ticket_text()
        self.outcomes()
        self.knowledge_base()
        self.slack()
        self.replacement_orders()  # the orders they add leave every draw before them as it was
        self.restocks()  # old backorders ship, from randomness private to each
        self.office_work()  # what staff did, in working hours (no draw)
        self.clocks()  # each parcel's minutes, where no record about its order could see them move
        self.established_accounts()  # last: an account opened earlier moves no draw and holds up every record
        return self.rows



def create_schema(conn: sqlite3.Connection) -> None:
    """Create every table and index from the sqlmodel metadata, in a fixed order.

    SQLAlchemy keeps a table's indexes in a set, so ``create_all`` would create them in a
    hash-dependent order and the database bytes would differ between processes.
    """
    dialect = sqlite_dialect.dialect()
    for model in m.ALL_TABLES:
        table = model.__table__  # type: ignore[attr-defined]
        conn.execute(str(CreateTable(table).compile(dialect=dialect)))
        for index in sorted(table.indexes, key=lambda i: i.name):
            conn.execute(str(CreateIndex(index).compile(dialect=dialect)))


def enable_foreign_keys(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA foreign_keys = ON")


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cycle collector paused: the generator only ever adds records, so its collections (which scan every
    live dict, more of them the larger the world) free nothing and make the build grow faster than the world."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def build_world(recipe: Recipe, seed: int, seeds: Seeds) -> bytes:
    """Generate the world for ``recipe`` and ``seed`` and return the SQLite database bytes."""
    with _no_cycle_collection():
        rows = _Generator(recipe, seed, seeds).run()
    conn = sqlite3.connect(":memory:")
    try:
        enable_foreign_keys(conn)
        create_schema(conn)
        for model in (m.Employee, m.Customer, m.Product, m.Build, m.BuildComponent, m.Order, m.OrderLine,
                      m.Payment, m.Shipment, m.SupportTicket, m.Refund, m.Escalation, m.Resolution,
                      m.KnowledgeBaseArticle, m.SlackChannel, m.SlackMessage):
            insert_many(conn, model, _clean(rows[model]))
        text_index.create(conn)
        conn.execute(
            "CREATE TABLE world_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        conn.executemany("INSERT INTO world_meta VALUES (?, ?)", [
            ("recipe", recipe.name), ("seed", str(seed)), ("now", recipe.now_aware.isoformat()),
            ("timezone", recipe.timezone), ("generator_version", GENERATOR_VERSION),
        ])
        conn.commit()
        conn.execute("VACUUM")
        return conn.serialize()
    finally:
        conn.close()


def _clean(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]


