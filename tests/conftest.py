"""Shared fixtures: a private template cache per test session, the domain, the tiny world, a tool context.

Unless the caller names a cache folder (``$CORECRAFT_CACHE_DIR``, as ``.ci/run`` does), the
session gets a fresh temporary one, shared by its xdist workers (they inherit the environment)
and removed when the session ends.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import timedelta

import pytest

if "CORECRAFT_CACHE_DIR" not in os.environ:
    _private = tempfile.mkdtemp(prefix="corecraft-test-cache-")
    os.environ["CORECRAFT_CACHE_DIR"] = _private
    atexit.register(shutil.rmtree, _private, ignore_errors=True)

from corecraft.domain import Domain, default_domain
from corecraft.tools import ToolContext, Toolkit
from corecraft.world import db
from corecraft.world.models import Order, OrderLine
from corecraft.world.store import World


@pytest.fixture(scope="session")
def domain() -> Domain:
    """The default domain (shipped content, the session's cache folder)."""
    return default_domain()


@pytest.fixture(scope="session")
def toolkit(domain: Domain) -> Toolkit:
    return domain.toolkit


@pytest.fixture
def world(domain: Domain) -> Iterator[World]:
    """A fresh copy of the tiny world."""
    w = domain.store.open("tiny")
    yield w
    w.close()


@pytest.fixture
def ctx(world: World, toolkit: Toolkit) -> ToolContext:
    """Tools acting as the tiny world's first tier-1 support agent."""
    return toolkit.context(world, world.first_employee("Support Agent I"))


@pytest.fixture
def replacement(ctx: ToolContext) -> dict[str, str]:
    """A no-charge replacement order built in the tiny world (which approves none): one unit of the first line of
    the first fulfilled order, $0 with no payment, placed a day before now. Its ids (``order``, ``line``), the
    order it replaces (``replaced``, ``payment``, ``created_at``) and the ``product``."""
    replaced, payment, created, customer, method, address, product = ctx.conn.execute(
        'SELECT o.id, p.id, o.created_at, o.customer_id, o.shipping_method, o.shipping_address, l.product_id '
        'FROM "order" o JOIN payment p ON p.order_id = o.id JOIN orderline l ON l.order_id = o.id '
        "WHERE o.status = 'fulfilled' ORDER BY o.id, l.id").fetchone()
    placed = ctx.world.now - timedelta(days=1)
    order = f"ord-{placed:%y%m%d}-901"
    db.insert_many(ctx.conn, Order, [{
        "id": order, "customer_id": customer, "status": "paid", "subtotal": 0.0, "discount": 0.0,
        "shipping_cost": 0.0, "total": 0.0, "shipping_method": method, "shipping_address": json.loads(address),
        "build_id": None, "replaces_order_id": replaced, "created_at": placed, "updated_at": placed}])
    db.insert_many(ctx.conn, OrderLine, [{"id": f"{order}-L1", "order_id": order, "product_id": product,
                                          "quantity": 1, "unit_price": 0.0}])
    return {"order": order, "line": f"{order}-L1", "replaced": replaced, "payment": payment, "created_at": created,
            "product": product}
