"""The 7 write tools, called through the toolkit on the tiny world: each writes what it says, stamped
with the actor and the world's now, and each policy rule rejects with a specific error and leaves
the world unchanged. Rows are found with SQL; missing situations are built by editing rows."""

from __future__ import annotations

import json
import pickle
from datetime import date, datetime, timedelta
from typing import Any

import pytest

from corecraft.domain import default_domain
from corecraft.tools import ToolContext
from corecraft.world import db
from corecraft.world.models import Product
from corecraft.world.store import World

TOOLKIT = default_domain().toolkit
POLICY = TOOLKIT.policy


# -- helpers --------------------------------------------------------------------------------
def as_title(world: World, title: str) -> ToolContext:
    return TOOLKIT.context(world, world.first_employee(title))


def ok(ctx: ToolContext, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = TOOLKIT.call(ctx, name, args)
    assert "error" not in result, result
    return result


def rejected(ctx: ToolContext, name: str, args: dict[str, Any], kind: str) -> str:
    """Call a tool that must fail with error type ``kind`` and change nothing; returns the message."""
    before = ctx.world.hash()
    result = TOOLKIT.call(ctx, name, args)
    assert "error" in result, result
    assert result["error"]["type"] == kind, result
    assert ctx.world.hash() == before
    return result["error"]["message"]


def now_iso(ctx: ToolContext) -> str:
    return ctx.world.now.isoformat()


def one(ctx: ToolContext, sql: str, *params: Any) -> Any:
    row = ctx.conn.execute(sql, params).fetchone()
    assert row is not None, sql
    return row


def stored(ctx: ToolContext, when: datetime) -> str:
    return db.encode_datetime(when)


def day_of(ctx: ToolContext, stored_value: str) -> date:
    return db.decode_datetime(stored_value, ctx.world.tz).date()


def return_candidates(ctx: ToolContext) -> list[dict[str, Any]]:
    """Unrefunded lines of fulfilled, delivered orders with a captured payment, with their return window."""
    rows = ctx.conn.execute(
        'SELECT p.id, o.id, c.loyalty_tier, s.delivered_at, l.id, l.quantity, l.unit_price, pr.brand, '
        'pr.category FROM payment p JOIN "order" o ON o.id = p.order_id JOIN customer c ON c.id = o.customer_id '
        "JOIN shipment s ON s.order_id = o.id JOIN orderline l ON l.order_id = o.id "
        "JOIN product pr ON pr.id = l.product_id "
        "WHERE p.status = 'captured' AND o.status = 'fulfilled' AND s.delivered_at IS NOT NULL ORDER BY l.id"
    ).fetchall()
    out = []
    for pay, order, tier, delivered, line, qty, unit, brand, category in rows:
        last = day_of(ctx, delivered) + timedelta(days=POLICY.return_window_days[tier])
        out.append({"payment_id": pay, "order_id": order, "line_id": line, "quantity": qty, "value": unit * qty,
                    "in_window": ctx.world.now.date() <= last, "brand": brand, "category": category})
    return out


def in_window_line(ctx: ToolContext, max_value: float = 250) -> dict[str, Any]:
    return next(c for c in return_candidates(ctx) if c["in_window"] and c["value"] <= max_value)


def out_of_window_line(ctx: ToolContext, max_value: float = 250) -> dict[str, Any]:
    return next(c for c in return_candidates(ctx) if not c["in_window"] and c["value"] <= max_value
                and not (c["brand"] == "CoreCraft" and c["category"] == "psu"))


def refund_args(c: dict[str, Any], amount: float | None = None, reason: str = "return") -> dict[str, Any]:
    return {"payment_id": c["payment_id"], "amount": amount if amount is not None else c["value"],
            "reason": reason, "lines": [{"order_line_id": c["line_id"], "quantity": c["quantity"]}]}


def open_ticket_on(ctx: ToolContext, order_id: str | None) -> str:
    """The latest ticket, reopened (no resolution) and attached to ``order_id`` (test setup: the tiny world's
    queue is settled, every ticket in it older than the stale-ticket rule allows to wait)."""
    ticket = one(ctx, "SELECT id FROM supportticket ORDER BY created_at DESC")[0]
    ctx.conn.execute("DELETE FROM resolution WHERE ticket_id = ?", (ticket,))
    ctx.conn.execute("UPDATE supportticket SET order_id = ?, status = 'open' WHERE id = ?", (order_id, ticket))
    return ticket


def closed_ticket(ctx: ToolContext) -> str:
    return one(ctx, "SELECT id FROM supportticket WHERE status = 'closed' ORDER BY id")[0]


# -- create_refund --------------------------------------------------------------------------
def test_create_refund_writes_an_approved_refund_by_the_actor(ctx: ToolContext) -> None:
    c = in_window_line(ctx)
    paid_before = one(ctx, "SELECT amount, status FROM payment WHERE id = ?", c["payment_id"])
    order_before = one(ctx, 'SELECT status, updated_at FROM "order" WHERE id = ?', c["order_id"])
    result = ok(ctx, "create_refund", refund_args(c))
    day = ctx.world.now.strftime("%y%m%d")
    assert result["id"] == f"ref-{day}-001"
    assert result["remaining_refundable"] == round(paid_before[0] - c["value"], 2)
    row = one(ctx, "SELECT payment_id, amount, reason, status, approved_by_id, created_at, processed_at, lines "
                   "FROM refund WHERE id = ?", result["id"])
    assert row[:5] == (c["payment_id"], c["value"], "return", "approved", ctx.actor_id)
    assert row[5] == stored(ctx, ctx.world.now) and row[6] is None
    assert json.loads(row[7]) == [{"order_line_id": c["line_id"], "quantity": c["quantity"]}]
    assert result["created_at"] == now_iso(ctx)
    email = one(ctx, 'SELECT c.email FROM "order" o JOIN customer c ON c.id = o.customer_id WHERE o.id = ?',
                c["order_id"])[0]
    assert result["return_label"] == f"prepaid return label for the refunded lines emailed to {email}"
    # The procedure's later steps are separate tools: payment and order are untouched.
    assert one(ctx, "SELECT amount, status FROM payment WHERE id = ?", c["payment_id"]) == paid_before
    assert one(ctx, 'SELECT status, updated_at FROM "order" WHERE id = ?', c["order_id"]) == order_before


def test_create_refund_for_items_already_back_sends_no_return_label(ctx: ToolContext) -> None:
    c = in_window_line(ctx)
    result = ok(ctx, "create_refund", {**refund_args(c), "item_received": True})
    assert result["reason"] == "return" and "return_label" not in result


def test_refund_ids_increment_within_the_day(world: World) -> None:
    vp = as_title(world, "VP Operations")
    pay = one(vp, "SELECT id FROM payment WHERE status = 'captured' ORDER BY id")[0]
    day = world.now.strftime("%y%m%d")
    first = ok(vp, "create_refund", {"payment_id": pay, "amount": 1.0, "reason": "goodwill"})
    second = ok(vp, "create_refund", {"payment_id": pay, "amount": 2.5, "reason": "goodwill"})
    assert (first["id"], second["id"]) == (f"ref-{day}-001", f"ref-{day}-002")
    assert second["remaining_refundable"] == round(first["remaining_refundable"] - 2.5, 2)


def test_refund_unknown_and_unrefundable_payments(ctx: ToolContext) -> None:
    c = in_window_line(ctx)
    rejected(ctx, "create_refund", {**refund_args(c), "payment_id": "pay-000000-999"}, "not_found")
    for status in ("pending", "failed", "refunded"):
        ctx.conn.execute("UPDATE payment SET status = ? WHERE id = ?", (status, c["payment_id"]))
        assert status in rejected(ctx, "create_refund", refund_args(c), "policy_violation")


def test_refund_amount_is_limited_to_what_is_left_of_the_payment(world: World) -> None:
    vp = as_title(world, "VP Operations")
    pay, amount = one(vp, "SELECT id, amount FROM payment WHERE status = 'partially_refunded' ORDER BY id")
    done = one(vp, "SELECT sum(amount) FROM refund WHERE payment_id = ? AND status IN ('approved', 'processed')",
               pay)[0]
    left = round(amount - done, 2)
    message = rejected(vp, "create_refund", {"payment_id": pay, "amount": round(left + 0.01, 2),
                                             "reason": "goodwill"}, "policy_violation")
    assert f"${left:.2f} left" in message
    assert ok(vp, "create_refund", {"payment_id": pay, "amount": left, "reason": "goodwill"})[
        "remaining_refundable"] == 0


def test_refund_above_the_actor_limit_says_escalate_to_billing(ctx: ToolContext) -> None:
    limit = one(ctx, "SELECT refund_limit FROM employee WHERE id = ?", ctx.actor_id)[0]
    c = in_window_line(ctx)
    ctx.conn.execute("UPDATE payment SET amount = ? WHERE id = ?", (limit + 100, c["payment_id"]))  # room above it
    message = rejected(ctx, "create_refund", refund_args(c, limit + 0.01), "insufficient_permission")
    assert "insufficient_permission" in message and "billing" in message
    assert ok(ctx, "create_refund", refund_args(c, limit))["amount"] == limit


def test_goodwill_needs_a_title_that_can_approve_exceptions(world: World) -> None:
    agent, lead = as_title(world, "Support Agent II"), as_title(world, "Support Team Lead")
    pay = one(agent, "SELECT id FROM payment WHERE status = 'captured' ORDER BY id")[0]
    args = {"payment_id": pay, "amount": 20.0, "reason": "goodwill"}
    assert "policy_exception" in rejected(agent, "create_refund", args, "insufficient_permission")
    assert ok(lead, "create_refund", args)["approved_by_id"] == lead.actor_id


def test_refund_lines_are_checked(ctx: ToolContext) -> None:
    c = in_window_line(ctx)
    for reason in ("return", "doa", "defective"):
        rejected(ctx, "create_refund", {**refund_args(c, reason=reason), "lines": []}, "invalid_argument")
    other = one(ctx, "SELECT id FROM orderline WHERE order_id != ? ORDER BY id", c["order_id"])[0]
    bad = {**refund_args(c), "lines": [{"order_line_id": other, "quantity": 1}]}
    assert c["order_id"] in rejected(ctx, "create_refund", bad, "invalid_argument")
    missing = {**refund_args(c), "lines": [{"order_line_id": "ord-000000-001-L9", "quantity": 1}]}
    rejected(ctx, "create_refund", missing, "not_found")
    twice = {**refund_args(c), "lines": [{"order_line_id": c["line_id"], "quantity": 1}] * 2}
    rejected(ctx, "create_refund", twice, "invalid_argument")
    too_many = {**refund_args(c), "lines": [{"order_line_id": c["line_id"], "quantity": c["quantity"] + 1}]}
    rejected(ctx, "create_refund", too_many, "policy_violation")
    rejected(ctx, "create_refund", {**refund_args(c), "amount": 1.005}, "invalid_argument")
    rejected(ctx, "create_refund", {**refund_args(c), "amount": 0}, "invalid_argument")


def test_already_refunded_units_cannot_be_refunded_again(world: World) -> None:
    vp = as_title(world, "VP Operations")
    refund_lines, pay = one(vp, "SELECT r.lines, r.payment_id FROM refund r JOIN payment p ON p.id = r.payment_id "
                                "WHERE r.status = 'processed' AND p.status = 'partially_refunded' ORDER BY r.id")
    line = json.loads(refund_lines)[0]
    total = one(vp, "SELECT quantity FROM orderline WHERE id = ?", line["order_line_id"])[0]
    args = {"payment_id": pay, "amount": 1.0, "reason": "defective",
            "lines": [{"order_line_id": line["order_line_id"], "quantity": total - line["quantity"] + 1}]}
    assert "already refunded" in rejected(vp, "create_refund", args, "policy_violation")


def test_refund_ticket_must_exist_and_match_the_order(ctx: ToolContext) -> None:
    c = in_window_line(ctx)
    rejected(ctx, "create_refund", {**refund_args(c), "ticket_id": "tick-000000-001"}, "not_found")
    other = one(ctx, "SELECT id FROM supportticket WHERE order_id IS NOT NULL AND order_id != ? ORDER BY id",
                c["order_id"])[0]
    rejected(ctx, "create_refund", {**refund_args(c), "ticket_id": other}, "invalid_argument")
    no_order = one(ctx, "SELECT id FROM supportticket WHERE order_id IS NULL ORDER BY id")[0]
    ctx.conn.execute('UPDATE supportticket SET customer_id = (SELECT customer_id FROM "order" WHERE id = ?) '
                     "WHERE id = ?", (c["order_id"], no_order))
    assert ok(ctx, "create_refund", {**refund_args(c), "ticket_id": no_order})["ticket_id"] == no_order


def test_return_window_is_enforced_unless_the_actor_can_approve_exceptions(world: World) -> None:
    agent, lead = as_title(world, "Support Agent I"), as_title(world, "Returns Lead")
    c = out_of_window_line(agent)
    message = rejected(agent, "create_refund", refund_args(c), "policy_violation")
    assert "return window closed" in message and "policy_exception" in message
    assert ok(lead, "create_refund", refund_args(c))["approved_by_id"] == lead.actor_id


def test_never_shipped_orders_are_cancellations_without_a_window(ctx: ToolContext) -> None:
    c = out_of_window_line(ctx)
    ctx.conn.execute('UPDATE "order" SET status = \'paid\' WHERE id = ?', (c["order_id"],))
    ctx.conn.execute("DELETE FROM shipment WHERE order_id = ?", (c["order_id"],))
    refund = ok(ctx, "create_refund", refund_args(c))
    assert refund["reason"] == "return" and "return_label" not in refund  # nothing shipped, nothing comes back


def test_undelivered_orders_count_the_window_from_the_order_date(ctx: ToolContext) -> None:
    c = out_of_window_line(ctx)
    ctx.conn.execute("UPDATE shipment SET delivered_at = NULL, status = 'in_transit' WHERE order_id = ?",
                     (c["order_id"],))
    assert "order date" in rejected(ctx, "create_refund", refund_args(c), "policy_violation")
    ctx.conn.execute('UPDATE "order" SET created_at = ? WHERE id = ?',
                     (stored(ctx, ctx.world.now - timedelta(days=3)), c["order_id"]))
    ok(ctx, "create_refund", refund_args(c))


def _house_psu(ctx: ToolContext, brand: str, ordered: datetime) -> dict[str, Any]:
    """A PSU of ``brand`` on a delivered order whose return window closed long ago (test setup)."""
    db.insert_many(ctx.conn, Product, [{
        "id": "PSU-TEST-850", "sku": "PSU-TEST-850", "name": f"{brand} Test 850", "brand": brand,
        "category": "psu", "price": 129.0, "description": "test unit", "specs": {"wattage": 850},
        "warranty_months": POLICY.warranty_months["psu"], "inventory": {"east": 1}, "stock_status": "in_stock"}])
    c = out_of_window_line(ctx)
    ctx.conn.execute("UPDATE orderline SET product_id = 'PSU-TEST-850' WHERE id = ?", (c["line_id"],))
    ctx.conn.execute('UPDATE "order" SET created_at = ? WHERE id = ?', (stored(ctx, ordered), c["order_id"]))
    ctx.conn.execute("UPDATE shipment SET delivered_at = ? WHERE order_id = ?",
                     (stored(ctx, ordered + timedelta(days=3)), c["order_id"]))
    return c


def test_slack_only_psu_exception_allows_an_out_of_window_corecraft_psu_return(ctx: ToolContext) -> None:
    c = _house_psu(ctx, "CoreCraft", datetime(2025, 6, 2, 12, tzinfo=ctx.world.tz))
    refund = ok(ctx, "create_refund", refund_args(c))
    assert refund["status"] == "approved" and refund["approved_by_id"] == ctx.actor_id


@pytest.mark.parametrize(("brand", "ordered"), [("Corsair", datetime(2025, 6, 2, 12)),
                                               ("CoreCraft", datetime(2025, 5, 30, 12))])
def test_psu_exception_covers_only_house_brand_orders_from_june(ctx: ToolContext, brand: str,
                                                               ordered: datetime) -> None:
    c = _house_psu(ctx, brand, ordered.replace(tzinfo=ctx.world.tz))
    rejected(ctx, "create_refund", refund_args(c), "policy_violation")


def test_psu_exception_ends_after_valid_until(world: World) -> None:
    later = world.fork()
    later.now = datetime(2025, 11, 1, 12, tzinfo=world.tz)
    try:
        agent = as_title(later, "Support Agent I")
        c = _house_psu(agent, "CoreCraft", datetime(2025, 6, 2, 12, tzinfo=world.tz))
        rejected(agent, "create_refund", refund_args(c), "policy_violation")
    finally:
        later.close()


def test_doa_window_counts_from_delivery(ctx: ToolContext) -> None:
    c = out_of_window_line(ctx)
    message = rejected(ctx, "create_refund", refund_args(c, reason="doa"), "policy_violation")
    assert "defective" in message
    last_day = ctx.world.now - timedelta(days=POLICY.doa_window_days)
    ctx.conn.execute("UPDATE shipment SET delivered_at = ? WHERE order_id = ?",
                     (stored(ctx, last_day), c["order_id"]))
    assert ok(ctx, "create_refund", refund_args(c, reason="doa"))["reason"] == "doa"


def test_defective_needs_every_line_under_warranty(ctx: ToolContext) -> None:
    c = out_of_window_line(ctx)
    months = one(ctx, "SELECT p.warranty_months FROM orderline l JOIN product p ON p.id = l.product_id "
                      "WHERE l.id = ?", c["line_id"])[0]
    bought = one(ctx, 'SELECT created_at FROM "order" WHERE id = ?', c["order_id"])[0]
    ordered = ctx.world.now - timedelta(days=months * 31)
    ctx.conn.execute('UPDATE "order" SET created_at = ? WHERE id = ?', (stored(ctx, ordered), c["order_id"]))
    assert "out of warranty" in rejected(ctx, "create_refund", refund_args(c, 1.0, reason="defective"),
                                         "policy_violation")
    ctx.conn.execute('UPDATE "order" SET created_at = ? WHERE id = ?', (bought, c["order_id"]))
    ok(ctx, "create_refund", refund_args(c, 1.0, reason="defective"))


def test_price_adjustment_only_within_days_of_the_order_date(ctx: ToolContext) -> None:
    c = out_of_window_line(ctx)
    args = {"payment_id": c["payment_id"], "amount": 5.0, "reason": "price_adjustment"}
    rejected(ctx, "create_refund", args, "policy_violation")
    recent = ctx.world.now - timedelta(days=POLICY.price_adjustment_days)
    ctx.conn.execute('UPDATE "order" SET created_at = ? WHERE id = ?', (stored(ctx, recent), c["order_id"]))
    ok(ctx, "create_refund", args)


def test_shipping_delay_is_at_most_the_shipping_paid(ctx: ToolContext) -> None:
    pay, shipping = one(ctx, 'SELECT p.id, o.shipping_cost FROM payment p JOIN "order" o ON o.id = p.order_id '
                             "WHERE p.status = 'captured' AND o.shipping_cost > 0 ORDER BY p.id")
    args = {"payment_id": pay, "amount": round(shipping + 0.01, 2), "reason": "shipping_delay"}
    rejected(ctx, "create_refund", args, "policy_violation")
    assert ok(ctx, "create_refund", {**args, "amount": shipping})["amount"] == shipping


# -- create_escalation ----------------------------------------------------------------------
def test_create_escalation(ctx: ToolContext) -> None:
    ticket = open_ticket_on(ctx, None)
    args = {"ticket_id": ticket, "type": "insufficient_permission", "destination": "billing",
            "notes": f"{ticket}: refund of $300.00 is above my limit."}
    esc = ok(ctx, "create_escalation", args)
    assert esc["id"] == f"esc-{ctx.world.now:%y%m%d}-001"
    row = one(ctx, "SELECT ticket_id, type, destination, created_by_id, created_at, resolved_at FROM escalation "
                   "WHERE id = ?", esc["id"])
    assert row == (ticket, "insufficient_permission", "billing", ctx.actor_id, stored(ctx, ctx.world.now), None)


def test_escalation_rules(ctx: ToolContext) -> None:
    ticket = open_ticket_on(ctx, None)
    base = {"ticket_id": ticket, "type": "policy_exception", "destination": "leadership", "notes": "Out of window."}
    for kind, route in POLICY.escalation_routes.items():
        wrong = next(d for d in POLICY.departments if d != route)
        message = rejected(ctx, "create_escalation", {**base, "type": kind, "destination": wrong},
                           "policy_violation")
        assert f"routed to {route}" in message
    rejected(ctx, "create_escalation", {**base, "ticket_id": closed_ticket(ctx)}, "conflict")
    rejected(ctx, "create_escalation", {**base, "ticket_id": "tick-000000-001"}, "not_found")
    rejected(ctx, "create_escalation", {**base, "notes": ""}, "invalid_argument")
    rejected(ctx, "create_escalation", {**base, "notes": "x" * 2001}, "invalid_argument")
    rejected(ctx, "create_escalation", {**base, "destination": "marketing"}, "invalid_argument")


# -- create_resolution ----------------------------------------------------------------------
def test_create_resolution_without_a_refund(ctx: ToolContext) -> None:
    ticket = open_ticket_on(ctx, None)
    res = ok(ctx, "create_resolution", {"ticket_id": ticket, "outcome": "recommendation_provided",
                                        "details": f"[{ticket}] Recommended a 850 W PSU."})
    row = one(ctx, "SELECT ticket_id, outcome, resolved_by_id, refund_id, created_at FROM resolution WHERE id = ?",
              res["id"])
    assert row == (ticket, "recommendation_provided", ctx.actor_id, None, stored(ctx, ctx.world.now))


def test_resolution_refund_linkage(ctx: ToolContext) -> None:
    c = in_window_line(ctx)
    ticket = open_ticket_on(ctx, c["order_id"])
    refund = ok(ctx, "create_refund", {**refund_args(c), "ticket_id": ticket})
    base = {"ticket_id": ticket, "outcome": "refund_issued", "details": f"[{ticket}] Refunded."}
    rejected(ctx, "create_resolution", base, "invalid_argument")
    rejected(ctx, "create_resolution", {**base, "outcome": "no_action", "refund_id": refund["id"]},
             "invalid_argument")
    rejected(ctx, "create_resolution", {**base, "refund_id": "ref-000000-001"}, "not_found")
    foreign = one(ctx, "SELECT r.id FROM refund r JOIN payment p ON p.id = r.payment_id WHERE p.order_id != ? "
                       "ORDER BY r.id", c["order_id"])[0]
    rejected(ctx, "create_resolution", {**base, "refund_id": foreign}, "invalid_argument")
    ctx.conn.execute("UPDATE refund SET status = 'denied' WHERE id = ?", (refund["id"],))
    rejected(ctx, "create_resolution", {**base, "refund_id": refund["id"]}, "conflict")
    ctx.conn.execute("UPDATE refund SET status = 'approved' WHERE id = ?", (refund["id"],))
    assert ok(ctx, "create_resolution", {**base, "refund_id": refund["id"]})["refund_id"] == refund["id"]
    rejected(ctx, "create_resolution", {**base, "ticket_id": closed_ticket(ctx), "outcome": "no_action"},
             "conflict")


def test_a_ticket_about_no_one_order_takes_refunds_on_its_customers_orders_only(ctx: ToolContext) -> None:
    """A chat spanning several orders is a ticket with no order: a refund on any order of its customer may name it
    and be recorded on it; another customer's order may not."""
    c = in_window_line(ctx)
    ticket = open_ticket_on(ctx, None)
    owner = one(ctx, 'SELECT customer_id FROM "order" WHERE id = ?', c["order_id"])[0]
    ctx.conn.execute("UPDATE supportticket SET customer_id = ? WHERE id = ?", (owner, ticket))
    refund = ok(ctx, "create_refund", {**refund_args(c), "ticket_id": ticket})
    base = {"ticket_id": ticket, "outcome": "refund_issued", "details": f"[{ticket}] Refunded."}
    assert ok(ctx, "create_resolution", {**base, "refund_id": refund["id"]})["refund_id"] == refund["id"]
    stranger = one(ctx, "SELECT id FROM customer WHERE id != ? ORDER BY id", owner)[0]
    ctx.conn.execute("DELETE FROM resolution WHERE ticket_id = ?", (ticket,))
    ctx.conn.execute("UPDATE supportticket SET customer_id = ? WHERE id = ?", (stranger, ticket))
    assert rejected(ctx, "create_resolution", {**base, "refund_id": refund["id"]}, "invalid_argument") \
        == f"ticket {ticket} is {stranger}'s, but order {c['order_id']} is {owner}'s"
    assert rejected(ctx, "create_refund", {**refund_args(c), "ticket_id": ticket}, "invalid_argument") \
        == f"ticket {ticket} is {stranger}'s, but order {c['order_id']} is {owner}'s"


# -- update_order_status / update_payment_status --------------------------------------------
def test_order_transitions(ctx: ToolContext) -> None:
    order = one(ctx, "SELECT id FROM \"order\" WHERE status = 'fulfilled' ORDER BY id")[0]
    message = rejected(ctx, "update_order_status", {"order_id": order, "status": "cancelled"},
                       "invalid_transition")
    assert all(target in message for target in POLICY.order_transitions["fulfilled"])
    assert "already" in rejected(ctx, "update_order_status", {"order_id": order, "status": "fulfilled"},
                                 "invalid_transition")
    rejected(ctx, "update_order_status", {"order_id": "ord-000000-001", "status": "paid"}, "not_found")
    rejected(ctx, "update_order_status", {"order_id": order, "status": "shipped"}, "invalid_argument")
    rejected(ctx, "update_order_status", {"order_id": order, "status": "refunded"}, "policy_violation")
    rejected(ctx, "update_order_status", {"order_id": order, "status": "partially_refunded"}, "policy_violation")
    updated = ok(ctx, "update_order_status", {"order_id": order, "status": "refund_requested"})
    assert updated["status"] == "refund_requested" and updated["updated_at"] == now_iso(ctx)
    assert one(ctx, 'SELECT status, updated_at FROM "order" WHERE id = ?', order) == (
        "refund_requested", stored(ctx, ctx.world.now))


def test_cancelling_needs_no_money_held(ctx: ToolContext) -> None:
    order, pay = one(ctx, 'SELECT o.id, p.id FROM "order" o JOIN payment p ON p.order_id = o.id '
                          "WHERE p.status = 'captured' ORDER BY o.id")
    ctx.conn.execute('UPDATE "order" SET status = \'paid\' WHERE id = ?', (order,))
    assert pay in rejected(ctx, "update_order_status", {"order_id": order, "status": "cancelled"},
                           "policy_violation")
    ctx.conn.execute("UPDATE payment SET status = 'pending' WHERE id = ?", (pay,))
    ctx.conn.execute('UPDATE "order" SET status = \'pending\' WHERE id = ?', (order,))
    assert ok(ctx, "update_order_status", {"order_id": order, "status": "cancelled"})["status"] == "cancelled"


def test_payment_transitions_and_refund_totals(world: World) -> None:
    vp = as_title(world, "VP Operations")
    pay, amount = one(vp, "SELECT id, amount FROM payment WHERE status = 'captured' ORDER BY id")
    for status in ("partially_refunded", "refunded"):
        assert "$0.00" in rejected(vp, "update_payment_status", {"payment_id": pay, "status": status},
                                   "policy_violation")
    rejected(vp, "update_payment_status", {"payment_id": pay, "status": "pending"}, "invalid_transition")
    rejected(vp, "update_payment_status", {"payment_id": pay, "status": "captured"}, "invalid_transition")
    ok(vp, "create_refund", {"payment_id": pay, "amount": 10.0, "reason": "goodwill"})
    rejected(vp, "update_payment_status", {"payment_id": pay, "status": "refunded"}, "policy_violation")
    partial = ok(vp, "update_payment_status", {"payment_id": pay, "status": "partially_refunded"})
    assert partial["refunded_total"] == 10.0
    ok(vp, "create_refund", {"payment_id": pay, "amount": round(amount - 10.0, 2), "reason": "goodwill"})
    rejected(vp, "update_payment_status", {"payment_id": pay, "status": "partially_refunded"},
             "invalid_transition")
    assert ok(vp, "update_payment_status", {"payment_id": pay, "status": "refunded"})["status"] == "refunded"
    assert one(vp, "SELECT status FROM payment WHERE id = ?", pay)[0] == "refunded"
    order = one(vp, "SELECT order_id FROM payment WHERE id = ?", pay)[0]
    assert ok(vp, "update_order_status", {"order_id": order, "status": "refunded"})["status"] == "refunded"


def test_capturing_a_pending_payment_stamps_processed_at(ctx: ToolContext) -> None:
    pay = one(ctx, "SELECT id FROM payment WHERE status = 'captured' ORDER BY id")[0]
    ctx.conn.execute("UPDATE payment SET status = 'pending' WHERE id = ?", (pay,))
    assert ok(ctx, "update_payment_status", {"payment_id": pay, "status": "captured"})["processed_at"] == \
        now_iso(ctx)


def test_cancelling_a_paid_order_refunds_it_first(world: World) -> None:
    vp = as_title(world, "VP Operations")
    c = out_of_window_line(vp, max_value=100_000)
    order_id, pay = c["order_id"], c["payment_id"]
    world.conn.execute('UPDATE "order" SET status = \'paid\' WHERE id = ?', (order_id,))
    world.conn.execute("DELETE FROM shipment WHERE order_id = ?", (order_id,))
    amount = one(vp, "SELECT amount FROM payment WHERE id = ?", pay)[0]
    lines = [{"order_line_id": i, "quantity": q}
             for i, q in vp.conn.execute("SELECT id, quantity FROM orderline WHERE order_id = ?", (order_id,))]
    ok(vp, "create_refund", {"payment_id": pay, "amount": amount, "reason": "return", "lines": lines})
    ok(vp, "update_payment_status", {"payment_id": pay, "status": "refunded"})
    assert ok(vp, "update_order_status", {"order_id": order_id, "status": "cancelled"})["status"] == "cancelled"


# -- update_ticket_status -------------------------------------------------------------------
def test_update_ticket_priority_and_assignee(ctx: ToolContext) -> None:
    ticket = open_ticket_on(ctx, None)
    other = one(ctx, "SELECT id FROM employee WHERE id != ? ORDER BY id", ctx.actor_id)[0]
    updated = ok(ctx, "update_ticket_status", {"ticket_id": ticket, "priority": "high", "assignee_id": other})
    assert (updated["priority"], updated["assignee_id"], updated["updated_at"]) == ("high", other, now_iso(ctx))
    assert one(ctx, "SELECT status, priority, assignee_id, updated_at FROM supportticket WHERE id = ?", ticket) \
        == ("open", "high", other, stored(ctx, ctx.world.now))


def test_update_ticket_type_fixes_a_mistyped_ticket(ctx: ToolContext) -> None:
    ticket = open_ticket_on(ctx, None)
    returns = one(ctx, "SELECT id FROM employee WHERE department = 'returns' ORDER BY id")[0]
    updated = ok(ctx, "update_ticket_status", {"ticket_id": ticket, "type": "return", "assignee_id": returns})
    assert (updated["type"], updated["assignee_id"]) == ("return", returns)
    assert one(ctx, "SELECT type FROM supportticket WHERE id = ?", ticket) == ("return",)
    rejected(ctx, "update_ticket_status", {"ticket_id": ticket, "type": "refund"}, "invalid_argument")


def test_ticket_rules(ctx: ToolContext) -> None:
    ticket = open_ticket_on(ctx, None)
    rejected(ctx, "update_ticket_status", {"ticket_id": ticket}, "missing_argument")
    assert "already" in rejected(ctx, "update_ticket_status", {"ticket_id": ticket, "status": "open"},
                                 "invalid_transition")
    rejected(ctx, "update_ticket_status", {"ticket_id": ticket, "status": "new"}, "invalid_transition")
    assert "create_resolution" in rejected(ctx, "update_ticket_status", {"ticket_id": ticket,
                                                                         "status": "resolved"}, "policy_violation")
    rejected(ctx, "update_ticket_status", {"ticket_id": ticket, "assignee_id": "emp-999"}, "not_found")
    rejected(ctx, "update_ticket_status", {"ticket_id": ticket, "priority": "urgent"}, "invalid_argument")
    rejected(ctx, "update_ticket_status", {"ticket_id": "tick-000000-001", "priority": "low"}, "not_found")
    closed = closed_ticket(ctx)
    assert "final" in rejected(ctx, "update_ticket_status", {"ticket_id": closed, "status": "open"},
                               "invalid_transition")
    rejected(ctx, "update_ticket_status", {"ticket_id": closed, "priority": "low"}, "invalid_transition")
    assert ok(ctx, "update_ticket_status", {"ticket_id": ticket, "status": "pending_customer"})["status"] == \
        "pending_customer"


# -- post_slack_message ---------------------------------------------------------------------
def test_post_slack_message(ctx: ToolContext) -> None:
    now = ctx.world.now
    msg = ok(ctx, "post_slack_message", {"channel": "#escalations", "text": "[tick-250911-003] above my limit"})
    assert msg["id"] == f"msg-{now:%y%m%d-%H%M}" and msg["channel"] == "#escalations"  # named by its minute
    row = one(ctx, "SELECT channel_id, author_id, text, ts, reactions, thread_parent_id FROM slackmessage "
                   "WHERE id = ?", msg["id"])
    assert row == ("ch-escalations", ctx.actor_id, "[tick-250911-003] above my limit", stored(ctx, now), "{}", None)
    reply = ok(ctx, "post_slack_message", {"channel": "escalations", "text": "done", "thread_parent_id": msg["id"]})
    later = now + timedelta(minutes=1)  # each write takes a minute (World.clock)
    assert reply["id"] == f"msg-{later:%y%m%d-%H%M}" and reply["thread_parent_id"] == msg["id"]
    assert one(ctx, "SELECT ts FROM slackmessage WHERE id = ?", reply["id"]) == (stored(ctx, later),)
    nested = ok(ctx, "post_slack_message", {"channel": "escalations", "text": "ok", "thread_parent_id": reply["id"]})
    assert nested["thread_parent_id"] == msg["id"]


def test_a_taken_minute_gives_the_message_a_letter(ctx: ToolContext) -> None:
    """A message already posted at the clock's minute (the world's, or a set-up's) makes the agent's the second."""
    now = ctx.world.now
    ctx.conn.execute("UPDATE slackmessage SET id = ? WHERE id = (SELECT min(id) FROM slackmessage)",
                     (f"msg-{now:%y%m%d-%H%M}",))
    msg = ok(ctx, "post_slack_message", {"channel": "#escalations", "text": "[tick-250911-003] above my limit"})
    assert msg["id"] == f"msg-{now:%y%m%d-%H%M}b"


def test_each_write_takes_a_minute_and_a_rejected_one_none(ctx: ToolContext) -> None:
    """Round 130: every write of an episode was stamped at 14:00. The clock moves a minute per write; a rejected
    call moves it not at all, and a fork or a pickle of the world keeps it."""
    now = ctx.world.now
    first = ok(ctx, "post_slack_message", {"channel": "#general", "text": "first"})
    rejected(ctx, "post_slack_message", {"channel": "#nope", "text": "lost"}, "not_found")
    ok(ctx, "search_tickets", {"limit": 1})
    second = ok(ctx, "post_slack_message", {"channel": "#general", "text": "second"})
    assert [first["id"], second["id"]] == [f"msg-{now:%y%m%d-%H%M}", f"msg-{now + timedelta(minutes=1):%y%m%d-%H%M}"]
    twin, thawed, older = ctx.world.fork(), pickle.loads(pickle.dumps(ctx.world)), World.__new__(World)
    older.__setstate__({k: v for k, v in ctx.world.__getstate__().items() if k != "writes"})  # pickled before it
    try:
        assert twin.clock == thawed.clock == ctx.world.clock == now + timedelta(minutes=2)
        assert older.clock == now and older.hash() == ctx.world.hash()
    finally:
        for world in (twin, thawed, older):
            world.close()


def test_slack_rules(ctx: ToolContext) -> None:
    closed_to_actor = next(name for name, members in ctx.conn.execute("SELECT name, members FROM slackchannel")
                           if ctx.actor_id not in json.loads(members))
    assert closed_to_actor in rejected(ctx, "post_slack_message", {"channel": closed_to_actor, "text": "hi"},
                                       "insufficient_permission")
    assert "#escalations" in rejected(ctx, "post_slack_message", {"channel": "#nope", "text": "hi"}, "not_found")
    rejected(ctx, "post_slack_message", {"channel": "#general", "text": ""}, "invalid_argument")
    elsewhere = one(ctx, "SELECT id FROM slackmessage WHERE channel_id != 'ch-general' ORDER BY id")[0]
    rejected(ctx, "post_slack_message", {"channel": "#general", "text": "hi", "thread_parent_id": elsewhere},
             "invalid_argument")
    rejected(ctx, "post_slack_message", {"channel": "#general", "text": "hi", "thread_parent_id": "msg-0"},
             "not_found")


# -- the whole procedure ---------------------------------------------------------------------
def test_full_refund_procedure(ctx: ToolContext) -> None:
    c = in_window_line(ctx)
    ticket = open_ticket_on(ctx, c["order_id"])
    refund = ok(ctx, "create_refund", {**refund_args(c), "ticket_id": ticket})
    assert refund["remaining_refundable"] > 0
    ok(ctx, "update_payment_status", {"payment_id": c["payment_id"], "status": "partially_refunded"})
    ok(ctx, "update_order_status", {"order_id": c["order_id"], "status": "partially_refunded"})
    ok(ctx, "create_resolution", {"ticket_id": ticket, "outcome": "refund_issued", "refund_id": refund["id"],
                                  "details": f"[{ticket}] Refunded ${c['value']:.2f} (return)."})
    ok(ctx, "update_ticket_status", {"ticket_id": ticket, "status": "resolved"})
    assert one(ctx, "SELECT status FROM payment WHERE id = ?", c["payment_id"])[0] == "partially_refunded"
    assert one(ctx, 'SELECT status FROM "order" WHERE id = ?', c["order_id"])[0] == "partially_refunded"
    assert one(ctx, "SELECT status, updated_at FROM supportticket WHERE id = ?", ticket) == (
        "resolved", stored(ctx, ctx.world.now + timedelta(minutes=4)))  # the episode's fifth write
    assert one(ctx, "SELECT refund_id, resolved_by_id FROM resolution WHERE ticket_id = ? ORDER BY id DESC",
               ticket) == (refund["id"], ctx.actor_id)


def test_channel_names_match_case_insensitively_as_in_search(world: World) -> None:
    ctx = as_title(world, "Support Agent I")
    posted = ok(ctx, "post_slack_message", {"channel": "ESCALATIONS", "text": "[tick-250720-001] Checking."})
    assert posted["channel"] == "#escalations"
    found = ok(ctx, "search_slack_messages", {"channel": "#Escalations", "query": posted["id"]})
    assert [m["id"] for m in found["results"]] == [posted["id"]]


def test_nothing_on_a_no_charge_replacement_order_can_be_refunded(ctx: ToolContext,
                                                                  replacement: dict[str, str]) -> None:
    """A replacement order has no payment to refund; its line cannot be refunded on the replaced order's payment,
    and it takes no refund status, each with an error that says why."""
    order, replaced = replacement["order"], replacement["replaced"]
    assert rejected(ctx, "create_refund", {"payment_id": replacement["payment"], "amount": 5.0, "reason": "defective",
                                           "lines": [{"order_line_id": replacement["line"], "quantity": 1}]},
                    "invalid_argument") == f"order line {replacement['line']} belongs to {order}, not to {replaced} " \
                                           "(the order of this payment)"
    ticket = one(ctx, "SELECT id FROM supportticket ORDER BY id")[0]
    ctx.conn.execute("UPDATE supportticket SET order_id = ? WHERE id = ?", (order, ticket))
    assert rejected(ctx, "create_refund", {"payment_id": replacement["payment"], "amount": 5.0,
                                           "reason": "price_adjustment", "ticket_id": ticket}, "invalid_argument") \
        == f"ticket {ticket} is about order {order}, but the money is on order {replaced}"
    refusal = f"order {order} is a no-charge replacement for {replaced}: nothing was paid on it"
    assert rejected(ctx, "update_order_status", {"order_id": order, "status": "refund_requested"},
                    "policy_violation").startswith(refusal)  # paid -> refund_requested, allowed on a paid order
    assert ok(ctx, "update_order_status", {"order_id": order, "status": "fulfilled"})["status"] == "fulfilled"
    for status in ("partially_refunded", "refunded"):
        assert rejected(ctx, "update_order_status", {"order_id": order, "status": status},
                        "policy_violation").startswith(refusal)
