"""World invariants: relational integrity, money that adds up, causal dates, coherent catalogue.

:func:`violations` returns a list of plain-sentence problems (empty when the world is sound).
Used by the tests on freshly built worlds and after fuzzing the tools.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from string import ascii_lowercase

from corecraft.world import db, models
from corecraft.world.compat import build_problems
from corecraft.world.seeds import Policy
from corecraft.world.store import World
from corecraft.world.vocab import CATEGORIES

CENT = 0.011

# (description, SQL returning offending ids) — each query must return no rows.
_SQL_CHECKS: tuple[tuple[str, str], ...] = (
    ("order lines do not add up to the subtotal",
     'SELECT o.id FROM "order" o JOIN orderline l ON l.order_id = o.id GROUP BY o.id '
     f"HAVING abs(sum(l.quantity * l.unit_price) - o.subtotal) > {CENT}"),
    ("order total != subtotal - discount + shipping",
     f'SELECT id FROM "order" WHERE abs(subtotal - discount + shipping_cost - total) > {CENT}'),
    ("order without line items",
     'SELECT o.id FROM "order" o WHERE NOT EXISTS (SELECT 1 FROM orderline l WHERE l.order_id = o.id)'),
    ("order without a payment that is not a no-charge replacement",
     'SELECT o.id FROM "order" o WHERE o.replaces_order_id IS NULL AND NOT EXISTS '
     "(SELECT 1 FROM payment p WHERE p.order_id = o.id)"),
    ("no-charge replacement order with a charge or a payment",
     f'SELECT o.id FROM "order" o WHERE o.replaces_order_id IS NOT NULL AND (abs(o.total) > {CENT} OR EXISTS '
     "(SELECT 1 FROM payment p WHERE p.order_id = o.id))"),
    ("payment amount differs from its order total",
     f'SELECT p.id FROM payment p JOIN "order" o ON o.id = p.order_id WHERE abs(p.amount - o.total) > {CENT}'),
    ("refunds exceed their payment",
     "SELECT p.id FROM payment p JOIN refund r ON r.payment_id = p.id WHERE r.status IN ('approved', 'processed') "
     f"GROUP BY p.id HAVING sum(r.amount) > p.amount + {CENT}"),
    ("refund amount not positive", "SELECT id FROM refund WHERE amount <= 0"),
    ("refunded payment whose refunds do not cover it",
     "SELECT p.id FROM payment p WHERE p.status = 'refunded' AND "
     "(SELECT coalesce(sum(amount), 0) FROM refund r WHERE r.payment_id = p.id "
     f"AND r.status IN ('approved', 'processed')) < p.amount - {CENT}"),
    ("partially refunded payment without refunds",
     "SELECT p.id FROM payment p WHERE p.status = 'partially_refunded' AND NOT EXISTS "
     "(SELECT 1 FROM refund r WHERE r.payment_id = p.id AND r.status IN ('approved', 'processed'))"),
    ("order before its customer existed",
     'SELECT o.id FROM "order" o JOIN customer c ON c.id = o.customer_id WHERE o.created_at < c.created_at'),
    ("payment before its order", 'SELECT p.id FROM payment p JOIN "order" o ON o.id = p.order_id '
                                 "WHERE p.processed_at < o.created_at"),
    ("shipment before its payment", "SELECT s.id FROM shipment s JOIN payment p ON p.order_id = s.order_id "
                                    "WHERE s.shipped_at < p.processed_at"),
    ("delivered before shipped", "SELECT id FROM shipment WHERE delivered_at IS NOT NULL AND delivered_at < shipped_at"),
    ("ticket before its order", 'SELECT t.id FROM supportticket t JOIN "order" o ON o.id = t.order_id '
                                "WHERE t.created_at < o.created_at"),
    ("ticket updated before created", "SELECT id FROM supportticket WHERE updated_at < created_at"),
    ("refund before its payment", "SELECT r.id FROM refund r JOIN payment p ON p.id = r.payment_id "
                                  "WHERE r.created_at < p.processed_at"),
    ("resolution before its ticket", "SELECT r.id FROM resolution r JOIN supportticket t ON t.id = r.ticket_id "
                                     "WHERE r.created_at < t.created_at"),
    ("escalation before its ticket", "SELECT e.id FROM escalation e JOIN supportticket t ON t.id = e.ticket_id "
                                     "WHERE e.created_at < t.created_at"),
    ("reply before its thread parent", "SELECT m.id FROM slackmessage m JOIN slackmessage p "
                                       "ON p.id = m.thread_parent_id WHERE m.ts < p.ts OR m.channel_id != p.channel_id"),
    ("refund_issued resolution without a refund",
     "SELECT id FROM resolution WHERE outcome = 'refund_issued' AND refund_id IS NULL"),
    ("refund on another order's payment than its ticket's",
     'SELECT r.id FROM refund r JOIN supportticket t ON t.id = r.ticket_id JOIN payment p ON p.id = r.payment_id '
     "WHERE t.order_id IS NOT NULL AND p.order_id != t.order_id"),
)


FORECASTS = {("shipment", "eta")}
"""Columns that hold a forecast, not an event: the only datetimes allowed after now."""


def _dated_columns() -> Iterator[tuple[str, str]]:
    for model in models.ALL_TABLES:
        for name in db.datetime_columns(model):
            if (db.table_name(model), name) not in FORECASTS:
                yield db.table_name(model), name


def violations(world: World, rules: Policy) -> list[str]:
    """Every broken invariant in ``world`` under the policy ``rules``, as sentences naming the offending rows."""
    conn = world.conn
    problems: list[str] = []
    fk = conn.execute("PRAGMA foreign_key_check").fetchall()
    problems += [f"foreign key in {t} row {rowid} points at a missing {parent}" for t, rowid, parent, _ in fk]
    for description, sql in _SQL_CHECKS:
        ids = [str(r[0]) for r in conn.execute(sql).fetchall()]
        if ids:
            problems.append(f"{description}: {', '.join(ids[:5])}{' …' if len(ids) > 5 else ''}")
    now = db.encode_datetime(world.clock)  # the episode's writes are stamped up to its clock
    for table, column in _dated_columns():
        late = conn.execute(f'SELECT id FROM "{table}" WHERE {column} > ? LIMIT 5', (now,)).fetchall()
        if late:
            problems.append(f"{table}.{column} after now: {', '.join(r[0] for r in late)}")
    unnamed = [msg_id for msg_id, ts in conn.execute("SELECT id, ts FROM slackmessage")
               if msg_id.rstrip(ascii_lowercase) != models.message_id(db.decode_datetime(ts, world.tz), lambda _: False)]
    if unnamed:
        problems.append(f"Slack messages not named by their minute (models.message_id): {', '.join(unnamed[:5])}")
    for ship_id, events in conn.execute("SELECT id, events FROM shipment"):
        stamps = [e["ts"] for e in json.loads(events)]
        if stamps != sorted(stamps) or (stamps and stamps[-1] > world.now.isoformat()):
            problems.append(f"shipment {ship_id} events out of order or after now")
    for route_type, destination in rules.escalation_routes.items():
        bad = conn.execute("SELECT id FROM escalation WHERE type = ? AND destination != ?",
                           (route_type, destination)).fetchall()
        if bad:
            problems.append(f"{route_type} escalations sent to the wrong department: {bad[0][0]}")
    products = {r["id"]: r for r in (db.decode(models.Product, row, world.tz)
                                     for row in conn.execute(db.select_all(models.Product)))}
    for p in products.values():
        if p["category"] not in CATEGORIES or p["warranty_months"] != rules.warranty_months[p["category"]]:
            problems.append(f"product {p['id']} has an unknown category or the wrong warranty")
        if p["category"] == "prebuilt":
            parts = [products.get(v) for k, v in p["specs"].items() if k.endswith("_sku")]
            if None in parts:
                problems.append(f"prebuilt {p['id']} names a component that is not in the catalogue")
            elif build_problems(parts):  # type: ignore[arg-type]
                problems.append(f"prebuilt {p['id']} is not compatible: {build_problems(parts)[0]['message']}")  # type: ignore[arg-type]
    return problems
