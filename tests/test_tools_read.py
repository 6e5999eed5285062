"""The 16 read tools on the tiny world, through the toolkit, cross-checked against the database."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from corecraft.domain import default_domain
from corecraft.tools import ToolContext
from corecraft.tools.common import fetch_rows as rows
from corecraft.world import db
from corecraft.world import models as m
from corecraft.world.rules import add_months


# -- helpers ---------------------------------------------------------------------------------------
def ok(ctx: ToolContext, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = TOOLKIT.call(ctx, name, args)
    assert "error" not in result, result
    return result

TOOLKIT = default_domain().toolkit
POLICY = default_domain().policy


def err(ctx: ToolContext, name: str, args: dict[str, Any], kind: str, field: str | None) -> str:
    result = TOOLKIT.call(ctx, name, args)
    assert "error" in result, result
    assert (result["error"]["type"], result["error"]["field"]) == (kind, field), result
    return result["error"]["message"]


def scalar(ctx: ToolContext, sql: str, params: tuple[Any, ...] = ()) -> Any:
    return ctx.conn.execute(sql, params).fetchone()[0]


def ids(result: dict[str, Any]) -> list[str]:
    return [r["id"] for r in result["results"]]


def everything(ctx: ToolContext, name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    """Every result of a search, page by page."""
    out: list[dict[str, Any]] = []
    while True:
        page = ok(ctx, name, {**args, "limit": 50, "offset": len(out)})
        out += page["results"]
        if not page["has_more"]:
            assert len(out) == page["total"]
            return out


def order_with_refund(ctx: ToolContext) -> str:
    return scalar(ctx, "SELECT p.order_id FROM refund r JOIN payment p ON p.id = r.payment_id ORDER BY r.id")


# -- one happy call per read tool (used by the read-only and registry-coverage tests) ----------------
HAPPY: dict[str, Callable[[ToolContext], dict[str, Any]]] = {
    "search_products": lambda c: {"query": "ryzen", "category": "cpu", "in_stock_only": True},
    "get_product": lambda c: {"product_id": scalar(c, "SELECT id FROM product ORDER BY id")},
    "search_customers": lambda c: {"query": scalar(c, "SELECT name FROM customer ORDER BY id")},
    "search_orders": lambda c: {"customer_id": scalar(c, 'SELECT customer_id FROM "order" ORDER BY id')},
    "get_order_details": lambda c: {"order_id": order_with_refund(c)},
    "search_payments": lambda c: {"status": "captured", "processed_after": "2025-01-01"},
    "search_shipments": lambda c: {"late_only": True},
    "search_tickets": lambda c: {"query": "order", "created_before": "2025-09-15"},
    "get_customer_ticket_history": lambda c: {
        "customer_id": scalar(c, "SELECT customer_id FROM supportticket")
    },
    "search_employees": lambda c: {"department": "support"},
    "search_builds": lambda c: {"owner_type": "customer"},
    "search_knowledge_base": lambda c: {"query": "refund"},
    "search_slack_messages": lambda c: {"channel": "#policy-discussion"},
    "validate_build_compatibility": lambda c: {"build_id": scalar(c, "SELECT id FROM build ORDER BY id")},
    "calculate_price": lambda c: {
        "items": [{"product_id": scalar(c, "SELECT id FROM product ORDER BY id")}],
        "shipping_method": "ups_ground",
    },
    "check_warranty_status": lambda c: dict(
        zip(
            ("order_id", "product_id"),
            c.conn.execute("SELECT order_id, product_id FROM orderline ORDER BY id").fetchone(),
            strict=True,
        )
    ),
}
READ_TOOLS = sorted(t.name for t in TOOLKIT if t.read_only)


def test_every_read_tool_is_covered_and_registered_read_only() -> None:
    assert sorted(HAPPY) == READ_TOOLS
    assert len(READ_TOOLS) == 16


@pytest.mark.parametrize("name", sorted(HAPPY))
def test_read_tools_leave_the_world_unchanged(ctx: ToolContext, name: str) -> None:
    before = ctx.world.hash()
    result = ok(ctx, name, HAPPY[name](ctx))
    assert result
    assert ctx.world.hash() == before
    json.dumps(result)  # JSON-ready


@pytest.mark.parametrize("name", sorted(HAPPY))
def test_unknown_argument_is_rejected(ctx: ToolContext, name: str) -> None:
    err(ctx, name, {**HAPPY[name](ctx), "bogus": 1}, "unexpected_argument", "bogus")


def test_a_guessed_argument_name_is_answered_with_the_tool_s_own(ctx: ToolContext) -> None:
    """A player passed ``created_after`` to the Slack search (round 49); the error names the date filters it takes."""
    message = err(ctx, "search_slack_messages", {"query": "PSU", "created_after": "2025-09-01"},
                  "unexpected_argument", "created_after")
    assert "posted_after" in message and "posted_before" in message and "query" in message


WRONG_TYPE = {
    "search_products": ({"in_stock_only": "yes"}, "in_stock_only"),
    "get_product": ({"product_id": 7}, "product_id"),
    "search_customers": ({"limit": "10"}, "limit"),
    "search_orders": ({"min_total": "100"}, "min_total"),
    "get_order_details": ({"order_id": ["ord-1"]}, "order_id"),
    "search_payments": ({"max_amount": "5"}, "max_amount"),
    "search_shipments": ({"late_only": 1}, "late_only"),
    "search_tickets": ({"unassigned_only": "true"}, "unassigned_only"),
    "get_customer_ticket_history": ({"customer_id": "cust-0001", "offset": -1}, "offset"),
    "search_employees": ({"limit": 51}, "limit"),
    "search_builds": ({"customer_id": 5}, "customer_id"),
    "search_knowledge_base": ({"include_deprecated": "no"}, "include_deprecated"),
    "search_slack_messages": ({"query": "x" * 201}, "query"),
    "validate_build_compatibility": ({"product_ids": "CPU-AMD-R7-7800X3D"}, "product_ids"),
    "calculate_price": (
        {"items": [{"product_id": "CPU-AMD-R7-7800X3D", "quantity": "2"}], "shipping_method": "ups_ground"},
        "items.0.quantity",
    ),
    "check_warranty_status": ({"order_id": "ord-1", "product_id": None}, "product_id"),
}


@pytest.mark.parametrize("name", sorted(WRONG_TYPE))
def test_wrong_type_is_an_invalid_argument(ctx: ToolContext, name: str) -> None:
    args, field = WRONG_TYPE[name]
    err(ctx, name, args, "invalid_argument", field)


BAD_ENUM = {
    "search_products": "category",
    "search_customers": "loyalty_tier",
    "search_orders": "status",
    "search_payments": "method",
    "search_shipments": "carrier",
    "search_tickets": "priority",
    "search_employees": "department",
    "search_builds": "owner_type",
}


@pytest.mark.parametrize("name", sorted(BAD_ENUM))
def test_unknown_enum_value_is_an_invalid_argument(ctx: ToolContext, name: str) -> None:
    message = err(ctx, name, {BAD_ENUM[name]: "nonsense"}, "invalid_argument", BAD_ENUM[name])
    assert "nonsense" in message or "Input should be" in message


NOT_FOUND = {
    "get_product": ({"product_id": "GPU-NOPE"}, "product_id"),
    "search_orders": ({"customer_id": "cust-9999"}, "customer_id"),
    "get_order_details": ({"order_id": "ord-000000-999"}, "order_id"),
    "search_payments": ({"order_id": "ord-000000-999"}, "order_id"),
    "search_shipments": ({"order_id": "ord-000000-999"}, "order_id"),
    "search_tickets": ({"assignee_id": "emp-999"}, "assignee_id"),
    "get_customer_ticket_history": ({"customer_id": "cust-9999"}, "customer_id"),
    "search_builds": ({"product_id": "GPU-NOPE"}, "product_id"),
    "search_slack_messages": ({"channel": "#nope"}, "channel"),
    "validate_build_compatibility": ({"build_id": "build-9999"}, "build_id"),
    "calculate_price": (
        {"items": [{"product_id": "GPU-NOPE"}], "shipping_method": "ups_ground"},
        "items.0.product_id",
    ),
    "check_warranty_status": ({"order_id": "ord-000000-999", "product_id": "GPU-NOPE"}, "order_id"),
}


@pytest.mark.parametrize("name", sorted(NOT_FOUND))
def test_unknown_id_is_not_found_naming_the_argument(ctx: ToolContext, name: str) -> None:
    args, field = NOT_FOUND[name]
    before = ctx.world.hash()
    err(ctx, name, args, "not_found", field)
    assert ctx.world.hash() == before


BAD_DATE = {
    "search_orders": "created_after",
    "search_payments": "processed_before",
    "search_shipments": "shipped_after",
    "search_tickets": "created_before",
    "search_slack_messages": "posted_after",
}


@pytest.mark.parametrize("name", sorted(BAD_DATE))
@pytest.mark.parametrize("value", ["2025-02-30", "15/09/2025", "2025-9-1"])
def test_bad_date_is_an_invalid_argument(ctx: ToolContext, name: str, value: str) -> None:
    err(ctx, name, {BAD_DATE[name]: value}, "invalid_argument", BAD_DATE[name])


def test_missing_required_argument(ctx: ToolContext) -> None:
    err(ctx, "get_order_details", {}, "missing_argument", "order_id")
    err(ctx, "calculate_price", {"items": [{"product_id": "x"}]}, "missing_argument", "shipping_method")


# -- paging and text search ------------------------------------------------------------------------
def test_paging_keeps_the_total_and_moves_the_offset(ctx: ToolContext) -> None:
    total = scalar(ctx, "SELECT count(*) FROM knowledgebasearticle")
    first = ok(ctx, "search_knowledge_base", {"limit": 7})
    second = ok(ctx, "search_knowledge_base", {"limit": 7, "offset": 7})
    last = ok(ctx, "search_knowledge_base", {"limit": 7, "offset": total - 3})
    assert first["total"] == second["total"] == last["total"] == total
    assert (first["offset"], first["limit"], first["has_more"], len(first["results"])) == (0, 7, True, 7)
    assert second["offset"] == 7 and not set(ids(first)) & set(ids(second))
    assert last["has_more"] is False and len(last["results"]) == 3
    assert ok(ctx, "search_knowledge_base", {"offset": total})["results"] == []
    assert len(everything(ctx, "search_knowledge_base", {})) == total


def test_knowledge_base_search_ranks_current_articles_by_the_query_words_in_their_title(ctx: ToolContext) -> None:
    found = everything(ctx, "search_knowledge_base", {"query": "refund limit"})
    hits = [sum(w in a["title"].lower() for w in ("refund", "limit")) for a in found]
    current = [h for a, h in zip(found, hits, strict=True) if not a["is_deprecated"]]
    assert current == sorted(current, reverse=True) and current[0] == 2  # round 141: "Employee Swag Store" came first
    assert [a["is_deprecated"] for a in found] == sorted(a["is_deprecated"] for a in found)
    same = [a["title"] for a, h in zip(found, hits, strict=True) if not a["is_deprecated"] and h == 1]
    assert same == sorted(same)  # then by title
    assert ok(ctx, "search_knowledge_base", {"query": "100%_off"})["total"] == 0  # LIKE wildcards are literal


def test_text_search_is_case_insensitive_and_matches_partial_words(ctx: ToolContext) -> None:
    products = rows(ctx, m.Product)

    def matches(p: dict[str, Any], words: list[str]) -> bool:
        text = " ".join((p["name"], p["brand"], p["sku"], p["description"])).lower()
        return all(w in text for w in words)

    expected = {p["id"] for p in products if matches(p, ["rtx", "50"])}
    assert expected
    found = {r["id"] for r in everything(ctx, "search_products", {"query": "rTx 50"})}
    assert found == expected
    assert ok(ctx, "search_products", {"query": "zzqx"})["total"] == 0
    wildcard = ok(ctx, "search_products", {"query": "%"})
    assert wildcard["total"] == sum("%" in " ".join((p["name"], p["description"])) for p in products)


# -- products --------------------------------------------------------------------------------------
def test_search_products_filters(ctx: ToolContext) -> None:
    gpus = everything(ctx, "search_products", {"category": "gpu"})
    assert len(gpus) == scalar(ctx, "SELECT count(*) FROM product WHERE category = 'gpu'")
    assert [g["name"] for g in gpus] == sorted(g["name"] for g in gpus)
    assert set(gpus[0]) == {"id", "name", "brand", "category", "price", "stock_status"}
    in_stock = everything(ctx, "search_products", {"in_stock_only": True})
    assert len(in_stock) == scalar(ctx, "SELECT count(*) FROM product WHERE stock_status != 'out_of_stock'")
    assert all(p["stock_status"] != "out_of_stock" for p in in_stock)
    priced = everything(ctx, "search_products", {"min_price": 100, "max_price": 300.0})
    assert len(priced) == scalar(ctx, "SELECT count(*) FROM product WHERE price BETWEEN 100 AND 300")
    brand = scalar(ctx, "SELECT brand FROM product ORDER BY id")
    by_brand = everything(ctx, "search_products", {"brand": brand.upper()})
    assert len(by_brand) == scalar(ctx, "SELECT count(*) FROM product WHERE brand = ?", (brand,))
    err(ctx, "search_products", {"min_price": -1}, "invalid_argument", "min_price")


def test_get_product_returns_the_full_row(ctx: ToolContext) -> None:
    pid = scalar(ctx, "SELECT id FROM product WHERE category = 'psu' ORDER BY id")
    result = ok(ctx, "get_product", {"product_id": pid})
    assert result == db.fetch(ctx.conn, m.Product, pid, ctx.world.tz)
    assert result["warranty_months"] == POLICY.warranty_months["psu"]
    assert set(result["inventory"]) == {"east", "central", "west"}
    err(ctx, "get_product", {}, "missing_argument", "product_id")


# -- customers -------------------------------------------------------------------------------------
def test_search_customers_tells_look_alikes_apart(ctx: ToolContext) -> None:
    name = scalar(ctx, "SELECT name FROM customer GROUP BY name HAVING count(*) > 1 ORDER BY name")
    first, last = name.split()[0], name.split()[-1]
    result = ok(ctx, "search_customers", {"query": f"{first.lower()} {last[:3].upper()}"})
    same = [r for r in result["results"] if r["name"] == name]
    assert len(same) >= 2 and len({r["email"] for r in same}) == len(same)
    for r in result["results"]:
        assert r["order_count"] == scalar(
            ctx, 'SELECT count(*) FROM "order" WHERE customer_id = ?', (r["id"],)
        )
        assert set(r) == {"id", "name", "email", "phone", "loyalty_tier", "created_at", "order_count"}
    target = rows(ctx, m.Customer, "ORDER BY id")[1]
    exact = ok(ctx, "search_customers", {"email": target["email"].upper()})
    assert ids(exact) == [target["id"]]
    assert ok(ctx, "search_customers", {"email": target["email"][:-1]})["total"] == 0
    tier = rows(ctx, m.Customer, "WHERE loyalty_tier != 'none' ORDER BY id")[0]["loyalty_tier"]
    tiered = everything(ctx, "search_customers", {"loyalty_tier": tier})
    assert tiered and len(tiered) == scalar(ctx, "SELECT count(*) FROM customer WHERE loyalty_tier = ?", (tier,))


# -- orders, payments, shipments ---------------------------------------------------------------------
def test_search_orders_filters_and_order(ctx: ToolContext) -> None:
    customer = scalar(ctx, 'SELECT customer_id FROM "order" GROUP BY 1 ORDER BY count(*) DESC, 1')
    mine = everything(ctx, "search_orders", {"customer_id": customer})
    assert len(mine) == scalar(ctx, 'SELECT count(*) FROM "order" WHERE customer_id = ?', (customer,))
    assert [o["created_at"] for o in mine] == sorted((o["created_at"] for o in mine), reverse=True)
    assert set(mine[0]) == {"id", "customer_id", "status", "total", "shipping_method", "replaces_order_id", "created_at"}
    product = scalar(ctx, "SELECT product_id FROM orderline GROUP BY 1 ORDER BY count(*) DESC, 1")
    with_product = {o["id"] for o in everything(ctx, "search_orders", {"product_id": product})}
    assert with_product == {
        r[0]
        for r in ctx.conn.execute("SELECT DISTINCT order_id FROM orderline WHERE product_id = ?", (product,))
    }
    order = rows(ctx, m.Order, "ORDER BY id")[3]
    day = order["created_at"][:10]
    same_day = everything(ctx, "search_orders", {"created_after": day, "created_before": day})
    assert order["id"] in {o["id"] for o in same_day}
    assert all(o["created_at"][:10] == day for o in same_day)
    low, high = order["total"] - 0.01, order["total"] + 0.01
    assert order["id"] in ids(ok(ctx, "search_orders", {"min_total": low, "max_total": high}))
    assert ok(ctx, "search_orders", {"created_after": "2025-09-16"})["total"] == 0
    statuses = everything(ctx, "search_orders", {"status": "fulfilled"})
    assert len(statuses) == scalar(ctx, "SELECT count(*) FROM \"order\" WHERE status = 'fulfilled'")


def test_get_order_details_gathers_everything(ctx: ToolContext) -> None:
    order_id = order_with_refund(ctx)
    result = ok(ctx, "get_order_details", {"order_id": order_id})
    order = db.fetch(ctx.conn, m.Order, order_id, ctx.world.tz)
    assert {k: result[k] for k in order} == order
    lines = rows(ctx, m.OrderLine, "WHERE order_id = ? ORDER BY id", (order_id,))
    assert [(ln["id"], ln["product_id"], ln["quantity"], ln["unit_price"]) for ln in result["lines"]] == [
        (ln["id"], ln["product_id"], ln["quantity"], ln["unit_price"]) for ln in lines
    ]
    assert math.isclose(sum(ln["line_total"] for ln in result["lines"]), order["subtotal"], abs_tol=0.011)
    for line in result["lines"]:
        product = db.fetch(ctx.conn, m.Product, line["product_id"], ctx.world.tz)
        assert (line["product_name"], line["category"]) == (product["name"], product["category"])
    payment = rows(ctx, m.Payment, "WHERE order_id = ?", (order_id,))[0]
    assert result["payment"] == payment and result["payments"] == [payment]
    assert result["refunds"] == rows(
        ctx, m.Refund, "WHERE payment_id = ? ORDER BY created_at", (payment["id"],)
    )
    assert result["refunds"]
    shipment = rows(ctx, m.Shipment, "WHERE order_id = ?", (order_id,))
    assert result["shipment"] == (shipment[0] if shipment else None)
    assert result["customer"]["id"] == order["customer_id"]
    tickets = {r[0] for r in ctx.conn.execute("SELECT id FROM supportticket WHERE order_id = ?", (order_id,))}
    assert {t["id"] for t in result["tickets"]} == tickets and tickets


def test_a_replacement_order_shows_what_it_replaces_and_has_no_payment(ctx: ToolContext,
                                                                       replacement: dict[str, str]) -> None:
    """The replacement names the order it replaces (details and summaries) and has no payment; the replaced
    order lists it; its unit keeps the warranty of the original purchase."""
    order, replaced = replacement["order"], replacement["replaced"]
    details = ok(ctx, "get_order_details", {"order_id": order})
    assert (details["replaces_order_id"], details["total"], details["payment"], details["refunds"]) == \
        (replaced, 0.0, None, [])
    assert [ln["line_total"] for ln in details["lines"]] == [0.0]
    assert [o["id"] for o in ok(ctx, "get_order_details", {"order_id": replaced})["replacement_orders"]] == [order]
    summary = next(o for o in everything(ctx, "search_orders", {"customer_id": details["customer_id"]})
                   if o["id"] == order)
    assert summary["replaces_order_id"] == replaced
    assert ok(ctx, "search_payments", {"order_id": order})["total"] == 0
    warranty = ok(ctx, "check_warranty_status", {"order_id": order, "product_id": replacement["product"]})
    assert (warranty["order_id"], warranty["purchase_order_id"], warranty["purchase_date"]) == \
        (order, replaced, replacement["created_at"][:10])


def test_an_order_paid_two_ways_shows_both_payments_and_the_refunds_on_each(ctx: ToolContext) -> None:
    """Split tender: the details list every payment (the first is still ``payment``) and the refunds against any
    of them, so a refund on the second payment is not hidden (blind round 34 found it only by searching)."""
    order_id = order_with_refund(ctx)
    first = rows(ctx, m.Payment, "WHERE order_id = ?", (order_id,))[0]
    second = f"{first['id']}b"
    ctx.conn.execute("INSERT INTO payment (id, order_id, amount, method, status, transaction_id, processed_at) "
                     "SELECT ?, order_id, 20.0, 'paypal', 'partially_refunded', 'txn_5b0e3a9c1d7f24', processed_at "
                     "FROM payment WHERE id = ?", (second, first["id"]))
    refund = rows(ctx, m.Refund, "WHERE payment_id = ?", (first["id"],))[0]["id"]
    columns = [c[1] for c in ctx.conn.execute("PRAGMA table_info(refund)") if c[1] not in ("id", "payment_id", "amount")]
    ctx.conn.execute(f"INSERT INTO refund (id, payment_id, amount, {', '.join(columns)}) SELECT 'ref-250101-999', ?, "
                     f"5.0, {', '.join(columns)} FROM refund WHERE id = ?", (second, refund))
    result = ok(ctx, "get_order_details", {"order_id": order_id})
    assert [p["id"] for p in result["payments"]] == [first["id"], second]
    assert result["payment"]["id"] == first["id"]
    assert "ref-250101-999" in {r["id"] for r in result["refunds"]}


def test_a_split_order_shows_every_parcel(ctx: ToolContext) -> None:
    """A split order's later parcel is in ``more_shipments`` (``shipment`` stays the first), so the details do not
    hide it (blind round 40 found the second parcel only by searching shipments), and each parcel says which lines
    it carries (round 149)."""
    first = rows(ctx, m.Shipment, "ORDER BY id")[0]
    columns = [c[1] for c in ctx.conn.execute("PRAGMA table_info(shipment)") if c[1] not in ("id", "shipped_at")]
    later = db.encode_datetime(datetime.fromisoformat(first["shipped_at"]) + timedelta(days=1))
    ctx.conn.execute(f"INSERT INTO shipment (id, shipped_at, {', '.join(columns)}) SELECT id || 'b', ?, "
                     f"{', '.join(columns)} FROM shipment WHERE id = ?", (later, first["id"]))
    line = rows(ctx, m.OrderLine, "WHERE order_id = ? ORDER BY id", (first["order_id"],))[0]["id"]
    ctx.conn.execute("UPDATE shipment SET lines = ? WHERE id = ?", (json.dumps([line]), f"{first['id']}b"))
    result = ok(ctx, "get_order_details", {"order_id": first["order_id"]})
    assert result["shipment"]["id"] == first["id"] and result["shipment"]["lines"] is None
    assert [(s["id"], s["lines"]) for s in result["more_shipments"]] == [(f"{first['id']}b", [line])]
    searched = ok(ctx, "search_shipments", {"order_id": first["order_id"]})["results"]
    assert {s["id"]: s["lines"] for s in searched} == {first["id"]: None, f"{first['id']}b": [line]}
    one = rows(ctx, m.Shipment, "WHERE order_id != ? ORDER BY id", (first["order_id"],))[0]
    assert ok(ctx, "get_order_details", {"order_id": one["order_id"]})["more_shipments"] == []


def test_get_order_details_without_shipment(ctx: ToolContext) -> None:
    order = rows(ctx, m.Order, "ORDER BY id")[0]
    ctx.conn.execute("DELETE FROM shipment WHERE order_id = ?", (order["id"],))
    assert ok(ctx, "get_order_details", {"order_id": order["id"]})["shipment"] is None


def test_search_payments_reports_refunded_amount(ctx: ToolContext) -> None:
    order_id = order_with_refund(ctx)
    result = ok(ctx, "search_payments", {"order_id": order_id})
    assert result["total"] == 1
    payment = result["results"][0]
    refunded = scalar(
        ctx,
        "SELECT sum(amount) FROM refund WHERE payment_id = ? AND status IN ('approved', 'processed')",
        (payment["id"],),
    )
    assert payment["refunded_amount"] == pytest.approx(refunded) and refunded > 0
    assert {k: payment[k] for k in payment if k != "refunded_amount"} == db.fetch(
        ctx.conn, m.Payment, payment["id"], ctx.world.tz
    )
    by_txn = ok(ctx, "search_payments", {"transaction_id": payment["transaction_id"]})
    assert ids(by_txn) == [payment["id"]]
    captured = everything(ctx, "search_payments", {"status": "captured", "method": "card"})
    assert len(captured) == scalar(
        ctx, "SELECT count(*) FROM payment WHERE status = 'captured' AND method = 'card'"
    )
    assert ok(ctx, "search_payments", {"min_amount": payment["amount"], "max_amount": payment["amount"]})[
        "total"
    ] == scalar(ctx, "SELECT count(*) FROM payment WHERE amount = ?", (payment["amount"],))


def test_search_shipments_lateness(ctx: ToolContext) -> None:
    now = ctx.world.now

    def late(s: dict[str, Any]) -> bool | None:
        if s["eta"] is None:
            return None
        eta = datetime.fromisoformat(s["eta"])
        return datetime.fromisoformat(s["delivered_at"]) > eta if s["delivered_at"] else now > eta

    every = everything(ctx, "search_shipments", {})
    assert len(every) == scalar(ctx, "SELECT count(*) FROM shipment")
    assert all(s["late"] == late(s) for s in every)
    late_ones = everything(ctx, "search_shipments", {"late_only": True})
    assert late_ones and {s["id"] for s in late_ones} == {s["id"] for s in every if late(s)}
    ship = every[0]
    assert ids(ok(ctx, "search_shipments", {"tracking_number": ship["tracking_number"]})) == [ship["id"]]
    day = ship["shipped_at"][:10]
    assert ship["id"] in ids(ok(ctx, "search_shipments", {"shipped_after": day, "shipped_before": day}))
    by_carrier = everything(ctx, "search_shipments", {"carrier": ship["carrier"], "status": ship["status"]})
    assert len(by_carrier) == scalar(
        ctx,
        "SELECT count(*) FROM shipment WHERE carrier = ? AND status = ?",
        (ship["carrier"], ship["status"]),
    )
    ctx.conn.execute("UPDATE shipment SET eta = NULL WHERE id = ?", (ship["id"],))
    assert ok(ctx, "search_shipments", {"order_id": ship["order_id"]})["results"][0]["late"] is None


# -- tickets ---------------------------------------------------------------------------------------
def test_search_tickets(ctx: ToolContext) -> None:
    ticket = rows(ctx, m.SupportTicket, "ORDER BY id")[0]
    word = max(ticket["subject"].split(), key=len)
    found = everything(ctx, "search_tickets", {"query": word[1:-1].swapcase()})
    assert ticket["id"] in {t["id"] for t in found}
    assert "body" not in found[0]
    assert [t["created_at"] for t in found] == sorted((t["created_at"] for t in found), reverse=True)
    unassigned = everything(ctx, "search_tickets", {"unassigned_only": True})
    assert len(unassigned) == scalar(ctx, "SELECT count(*) FROM supportticket WHERE assignee_id IS NULL")
    assignee = scalar(ctx, "SELECT assignee_id FROM supportticket WHERE assignee_id IS NOT NULL ORDER BY id")
    theirs = everything(ctx, "search_tickets", {"assignee_id": assignee})
    assert len(theirs) == scalar(ctx, "SELECT count(*) FROM supportticket WHERE assignee_id = ?", (assignee,))
    err(
        ctx,
        "search_tickets",
        {"assignee_id": assignee, "unassigned_only": True},
        "invalid_argument",
        "unassigned_only",
    )
    combo = everything(
        ctx,
        "search_tickets",
        {
            "customer_id": ticket["customer_id"],
            "type": ticket["type"],
            "status": ticket["status"],
            "priority": ticket["priority"],
        },
    )
    assert ticket["id"] in {t["id"] for t in combo}
    err(ctx, "search_tickets", {"status": "done"}, "invalid_argument", "status")


def test_customer_ticket_history(ctx: ToolContext) -> None:
    customer_id = scalar(ctx, "SELECT customer_id FROM supportticket GROUP BY 1 ORDER BY count(*) DESC, 1")
    count = scalar(ctx, "SELECT count(*) FROM supportticket WHERE customer_id = ?", (customer_id,))
    assert count >= 2
    result = ok(ctx, "get_customer_ticket_history", {"customer_id": customer_id, "limit": 1, "offset": 1})
    assert result["customer"]["id"] == customer_id
    assert (result["total"], result["offset"], result["has_more"]) == (count, 1, count > 2)
    history = everything(ctx, "get_customer_ticket_history", {"customer_id": customer_id})
    expected = rows(ctx, m.SupportTicket, "WHERE customer_id = ? ORDER BY created_at DESC", (customer_id,))
    assert [t["id"] for t in history] == [t["id"] for t in expected]
    assert history[1]["id"] == result["results"][0]["id"]
    for ticket, row in zip(history, expected, strict=True):
        assert {k: ticket[k] for k in row} == row
        assert ticket["resolutions"] == rows(ctx, m.Resolution, "WHERE ticket_id = ?", (row["id"],))
        assert ticket["escalations"] == rows(ctx, m.Escalation, "WHERE ticket_id = ?", (row["id"],))


# -- staff, builds, knowledge, Slack ---------------------------------------------------------------
def test_search_employees(ctx: ToolContext) -> None:
    billing = everything(ctx, "search_employees", {"department": "billing"})
    assert billing == rows(ctx, m.Employee, "WHERE department = 'billing' ORDER BY id")
    agents = everything(ctx, "search_employees", {"query": "AGENT i"})
    assert {e["id"] for e in agents} == {
        r[0] for r in ctx.conn.execute("SELECT id FROM employee WHERE title LIKE '%agent%'")
    }
    leads = everything(ctx, "search_employees", {"title": "Support Team Lead"})
    assert leads and all(e["can_approve_exceptions"] for e in leads)
    err(ctx, "search_employees", {"title": "CEO"}, "invalid_argument", "title")


def test_a_search_finds_a_record_by_the_start_of_its_id_not_by_digits_inside_it(ctx: ToolContext) -> None:
    employee, = ctx.conn.execute("SELECT id FROM employee ORDER BY id LIMIT 1").fetchone()
    assert [e["id"] for e in everything(ctx, "search_employees", {"query": employee})] == [employee]
    message, quoting, naming = [r[0] for r in ctx.conn.execute("SELECT id FROM slackmessage ORDER BY id LIMIT 3")]
    inside = message.split("-")[1][1:5]  # four digits from inside the id ("msg-250705-..." -> "5070")
    ctx.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", (f"see ord-2{inside}1-001", quoting))
    ctx.conn.execute("UPDATE slackmessage SET text = ? WHERE id = ?", (f"the RTX{inside} Ti is back", naming))
    by_digits = [m["id"] for m in everything(ctx, "search_slack_messages", {"query": inside})]
    assert naming in by_digits and quoting not in by_digits  # a number, not digits inside a quoted id
    assert by_digits == [r[0] for r in ctx.conn.execute("SELECT id, text FROM slackmessage ORDER BY ts DESC, id DESC")
                         if re.search(rf"(?<!\d){inside}", r[1])]
    assert message in [m["id"] for m in everything(ctx, "search_slack_messages", {"query": message[:8]})]


def test_search_builds(ctx: ToolContext) -> None:
    build = rows(ctx, m.Build, "ORDER BY id")[0]
    parts = rows(ctx, m.BuildComponent, "WHERE build_id = ? ORDER BY id", (build["id"],))
    result = ok(
        ctx, "search_builds", {"customer_id": build["customer_id"], "product_id": parts[0]["product_id"]}
    )
    found = next(b for b in result["results"] if b["id"] == build["id"])
    assert [(c["product_id"], c["quantity"]) for c in found["components"]] == [
        (p["product_id"], p["quantity"]) for p in parts
    ]
    assert {k: found[k] for k in build} == build
    containing = {b["id"] for b in everything(ctx, "search_builds", {"product_id": parts[0]["product_id"]})}
    assert containing == {
        r[0]
        for r in ctx.conn.execute(
            "SELECT DISTINCT build_id FROM buildcomponent WHERE product_id = ?", (parts[0]["product_id"],)
        )
    }
    by_name = ok(ctx, "search_builds", {"query": build["name"].split()[-2].upper()})
    assert build["id"] in ids(by_name)
    err(ctx, "search_builds", {"customer_id": "cust-9999"}, "not_found", "customer_id")


def test_search_knowledge_base_shows_deprecated_articles_flagged(ctx: ToolContext) -> None:
    found = everything(ctx, "search_knowledge_base", {"query": "WARRANT"})
    flags = [a["is_deprecated"] for a in found]
    assert True in flags and False in flags and flags == sorted(flags)
    current = everything(ctx, "search_knowledge_base", {"query": "warrant", "include_deprecated": False})
    assert current == [a for a in found if not a["is_deprecated"]]
    tagged = everything(ctx, "search_knowledge_base", {"tag": "Refunds"})
    assert len(tagged) == scalar(
        ctx, "SELECT count(*) FROM knowledgebasearticle, json_each(tags) WHERE json_each.value = 'refunds'"
    )
    assert set(tagged[0]) == {"id", "title", "version", "is_deprecated", "updated_at", "tags", "body"}


def test_search_slack_messages(ctx: ToolContext) -> None:
    with_hash = everything(ctx, "search_slack_messages", {"channel": "#policy-discussion"})
    without = everything(ctx, "search_slack_messages", {"channel": "policy-discussion"})
    assert with_hash == without
    assert len(with_hash) == scalar(
        ctx,
        "SELECT count(*) FROM slackmessage WHERE channel_id = "
        "(SELECT id FROM slackchannel WHERE name = '#policy-discussion')",
    )
    assert [msg["ts"] for msg in with_hash] == sorted((msg["ts"] for msg in with_hash), reverse=True)
    reply_id, parent_id = ctx.conn.execute(
        "SELECT id, thread_parent_id FROM slackmessage WHERE thread_parent_id IS NOT NULL ORDER BY id"
    ).fetchone()
    thread = ok(ctx, "search_slack_messages", {"thread_parent_id": parent_id})
    assert reply_id in ids(thread)
    parent = next(msg for msg in everything(ctx, "search_slack_messages", {}) if msg["id"] == parent_id)
    assert parent["reply_count"] == thread["total"]
    author = db.fetch(ctx.conn, m.Employee, parent["author_id"], ctx.world.tz)
    assert parent["author_name"] == author["name"]
    by_author = everything(ctx, "search_slack_messages", {"author_id": author["id"], "query": "the"})
    assert all(msg["author_id"] == author["id"] and "the" in msg["text"].lower() for msg in by_author)
    day = parent["ts"][:10]
    assert parent_id in ids(ok(ctx, "search_slack_messages", {"posted_after": day, "posted_before": day}))
    message = err(ctx, "search_slack_messages", {"channel": "nope"}, "not_found", "channel")
    assert "#policy-discussion" in message
    err(ctx, "search_slack_messages", {"author_id": "emp-999"}, "not_found", "author_id")


# -- calculators -----------------------------------------------------------------------------------
def _pair(ctx: ToolContext, same_socket: bool) -> list[str]:
    op = "=" if same_socket else "!="
    return list(
        ctx.conn.execute(
            "SELECT c.id, b.id FROM product c, product b "
            "WHERE c.category = 'cpu' AND b.category = 'motherboard' "
            f"AND json_extract(c.specs, '$.socket') {op} json_extract(b.specs, '$.socket') ORDER BY 1, 2"
        ).fetchone()
    )


def test_validate_compatible_and_incompatible_parts(ctx: ToolContext) -> None:
    good = ok(ctx, "validate_build_compatibility", {"product_ids": _pair(ctx, True)})
    assert good["compatible"] is True and good["problems"] == [] and good["required_psu_w"] is None
    assert [p["id"] for p in good["parts"]] == _pair(ctx, True)
    cpu_id, board_id = _pair(ctx, False)
    bad = ok(ctx, "validate_build_compatibility", {"product_ids": [cpu_id, board_id]})
    assert bad["compatible"] is False
    socket = next(p for p in bad["problems"] if p["rule"] == "socket")
    assert socket["parts"] == [cpu_id, board_id]


def test_validate_checks_every_card_against_the_case(ctx: ToolContext) -> None:
    # Round 21: a case and three cards too long for it reported only the first card's clearance problem.
    case, limit = ctx.conn.execute("SELECT id, json_extract(specs, '$.max_gpu_length_mm') FROM product "
                                   "WHERE category = 'case' ORDER BY 2, id").fetchone()
    long_cards = [r[0] for r in ctx.conn.execute(
        "SELECT id FROM product WHERE category = 'gpu' AND json_extract(specs, '$.length_mm') > ? ORDER BY id LIMIT 3",
        (limit,))]
    assert len(long_cards) >= 2
    result = ok(ctx, "validate_build_compatibility", {"product_ids": [case, *long_cards]})
    assert [p["parts"] for p in result["problems"] if p["rule"] == "gpu_clearance"] == [[c, case] for c in long_cards]


def test_validate_psu_sizing_and_saved_build(ctx: ToolContext) -> None:
    build_id = scalar(ctx, "SELECT id FROM build ORDER BY id")
    result = ok(ctx, "validate_build_compatibility", {"build_id": build_id})
    parts = {p["id"]: db.fetch(ctx.conn, m.Product, p["id"], ctx.world.tz) for p in result["parts"]}
    assert list(parts) == [
        r[0]
        for r in ctx.conn.execute(
            "SELECT product_id FROM buildcomponent WHERE build_id = ? ORDER BY id", (build_id,)
        )
    ]
    cpu = next(p for p in parts.values() if p["category"] == "cpu")
    gpu = next(p for p in parts.values() if p["category"] == "gpu")
    need = math.ceil((cpu["specs"]["tdp_w"] + gpu["specs"]["board_power_w"] + 100) * 1.3)
    assert result["required_psu_w"] == need


def test_validate_flags_an_undersized_psu(ctx: ToolContext) -> None:
    def top(category: str, spec: str, order: str) -> str:
        return scalar(
            ctx,
            f"SELECT id FROM product WHERE category = ? ORDER BY json_extract(specs, '$.{spec}') {order}, id",
            (category,),
        )

    parts = [top("cpu", "tdp_w", "DESC"), top("gpu", "board_power_w", "DESC"), top("psu", "wattage_w", "ASC")]
    result = ok(ctx, "validate_build_compatibility", {"product_ids": parts})
    wattage = db.fetch(ctx.conn, m.Product, parts[2], ctx.world.tz)["specs"]["wattage_w"]
    assert result["required_psu_w"] > wattage, (
        "the tiny catalogue should hold a PSU too small for its top parts"
    )
    assert result["compatible"] is False
    assert {"rule": "psu_wattage", "parts": parts} == {
        k: v for k, v in result["problems"][0].items() if k != "message"
    }


def test_validate_argument_errors(ctx: ToolContext) -> None:
    pair = _pair(ctx, True)
    err(ctx, "validate_build_compatibility", {}, "invalid_argument", "product_ids")
    err(
        ctx,
        "validate_build_compatibility",
        {"product_ids": pair, "build_id": "build-0001"},
        "invalid_argument",
        "product_ids",
    )
    err(ctx, "validate_build_compatibility", {"product_ids": []}, "invalid_argument", "product_ids")
    err(ctx, "validate_build_compatibility", {"product_ids": pair * 11}, "invalid_argument", "product_ids")
    message = err(
        ctx,
        "validate_build_compatibility",
        {"product_ids": [pair[0], "CPU-NOPE"]},
        "not_found",
        "product_ids",
    )
    assert "CPU-NOPE" in message


def test_calculate_price_with_tier_discount_and_free_ground_shipping(ctx: ToolContext) -> None:
    rules = POLICY
    cheap = rows(
        ctx, m.Product, "WHERE price < ? ORDER BY price, id", (rules.free_ground_shipping_threshold / 2,)
    )[0]
    dear = rows(
        ctx, m.Product, "WHERE price > ? ORDER BY price, id", (rules.free_ground_shipping_threshold * 2,)
    )[0]
    customer = rows(ctx, m.Customer, "WHERE loyalty_tier != 'none' ORDER BY id")[0]
    pct = rules.loyalty_discount_pct[customer["loyalty_tier"]]

    quote = ok(
        ctx,
        "calculate_price",
        {
            "items": [{"product_id": dear["id"], "quantity": 2}, {"product_id": cheap["id"]}],
            "customer_id": customer["id"],
            "shipping_method": "ups_ground",
        },
    )
    subtotal = round(dear["price"] * 2 + cheap["price"], 2)
    assert quote["subtotal"] == pytest.approx(subtotal)
    assert (quote["loyalty_tier"], quote["discount_pct"]) == (customer["loyalty_tier"], pct)
    assert quote["discount"] == pytest.approx(round(subtotal * pct / 100, 2))
    assert quote["shipping_cost"] == 0.0
    assert quote["total"] == pytest.approx(round(subtotal - quote["discount"], 2))
    assert [ln["line_total"] for ln in quote["lines"]] == [round(dear["price"] * 2, 2), cheap["price"]]

    small = ok(
        ctx,
        "calculate_price",
        {"items": [{"product_id": cheap["id"]}], "loyalty_tier": "silver", "shipping_method": "usps_ground"},
    )
    assert small["shipping_cost"] == rules.shipping["usps_ground"].price
    assert small["total"] == pytest.approx(
        round(small["subtotal"] - small["discount"] + small["shipping_cost"], 2)
    )
    platinum = ok(
        ctx,
        "calculate_price",
        {
            "items": [{"product_id": cheap["id"]}],
            "loyalty_tier": "platinum",
            "shipping_method": "usps_ground",
        },
    )
    assert platinum["shipping_cost"] == 0.0
    express = ok(
        ctx,
        "calculate_price",
        {
            "items": [{"product_id": dear["id"]}],
            "loyalty_tier": "platinum",
            "shipping_method": "fedex_express",
        },
    )
    assert express["shipping_cost"] == rules.shipping["fedex_express"].price
    plain = ok(
        ctx, "calculate_price", {"items": [{"product_id": cheap["id"]}], "shipping_method": "ups_ground"}
    )
    assert (plain["loyalty_tier"], plain["discount"]) == ("none", 0.0)


def test_calculate_price_argument_errors(ctx: ToolContext) -> None:
    item = {"product_id": scalar(ctx, "SELECT id FROM product ORDER BY id")}
    base = {"items": [item], "shipping_method": "ups_ground"}
    err(ctx, "calculate_price", {**base, "items": []}, "invalid_argument", "items")
    err(
        ctx,
        "calculate_price",
        {**base, "items": [{**item, "quantity": 0}]},
        "invalid_argument",
        "items.0.quantity",
    )
    err(
        ctx,
        "calculate_price",
        {**base, "items": [{**item, "colour": "red"}]},
        "unexpected_argument",
        "items.0.colour",
    )
    err(ctx, "calculate_price", {**base, "shipping_method": "dhl"}, "invalid_argument", "shipping_method")
    err(
        ctx,
        "calculate_price",
        {**base, "customer_id": "cust-0001", "loyalty_tier": "gold"},
        "invalid_argument",
        "loyalty_tier",
    )
    err(ctx, "calculate_price", {**base, "customer_id": "cust-9999"}, "not_found", "customer_id")


def test_check_warranty_status_in_and_out(ctx: ToolContext) -> None:
    order_id, product_id, months = ctx.conn.execute(
        "SELECT l.order_id, l.product_id, p.warranty_months "
        "FROM orderline l JOIN product p ON p.id = l.product_id ORDER BY p.warranty_months, l.id"
    ).fetchone()
    created = db.fetch(ctx.conn, m.Order, order_id, ctx.world.tz)["created_at"]
    bought = datetime.fromisoformat(created).date()
    expires = add_months(bought, months)
    product = db.fetch(ctx.conn, m.Product, product_id, ctx.world.tz)

    now = ok(ctx, "check_warranty_status", {"order_id": order_id, "product_id": product_id})
    assert now == {
        "order_id": order_id,
        "product_id": product_id,
        "product_name": product["name"],
        "category": product["category"],
        "purchase_order_id": order_id,
        "purchase_date": bought.isoformat(),
        "warranty_months": months,
        "expires_on": expires.isoformat(),
        "in_warranty": True,
        "days_remaining": (expires - ctx.world.now.date()).days,
        "exclusions": POLICY.warranty_exclusions,
    }
    assert months == POLICY.warranty_months[product["category"]]

    ctx.world.now = ctx.world.now.replace(year=expires.year, month=expires.month, day=expires.day)
    last_day = ok(ctx, "check_warranty_status", {"order_id": order_id, "product_id": product_id})
    assert (last_day["in_warranty"], last_day["days_remaining"]) == (True, 0)
    ctx.world.now += timedelta(days=1)
    later = ok(ctx, "check_warranty_status", {"order_id": order_id, "product_id": product_id})
    assert (later["in_warranty"], later["days_remaining"]) == (False, 0)


def test_check_warranty_status_errors(ctx: ToolContext) -> None:
    order_id = scalar(ctx, 'SELECT id FROM "order" ORDER BY id')
    other = scalar(
        ctx,
        "SELECT id FROM product WHERE id NOT IN (SELECT product_id FROM orderline WHERE order_id = ?)"
        " ORDER BY id",
        (order_id,),
    )
    message = err(
        ctx, "check_warranty_status", {"order_id": order_id, "product_id": other}, "not_found", "product_id"
    )
    assert order_id in message and other in message
    err(
        ctx,
        "check_warranty_status",
        {"order_id": order_id, "product_id": "GPU-NOPE"},
        "not_found",
        "product_id",
    )


SEARCH_BY_ID = {"search_customers": ("customer", "cust-"), "search_tickets": ("supportticket", "tick-"),
                "search_employees": ("employee", "emp-"), "search_builds": ("build", "build-"),
                "search_knowledge_base": ("knowledgebasearticle", "kb-"), "search_slack_messages": ("slackmessage", "msg-")}


@pytest.mark.parametrize("name", sorted(SEARCH_BY_ID))
def test_every_text_search_finds_a_record_by_its_id(ctx: ToolContext, name: str) -> None:
    table, prefix = SEARCH_BY_ID[name]
    row_id = scalar(ctx, f'SELECT id FROM "{table}" WHERE id LIKE ? ORDER BY id DESC LIMIT 1', (prefix + "%",))
    ids = [r["id"] for r in ok(ctx, name, {"query": row_id, "limit": 50})["results"]]
    assert row_id in ids and len(ids) <= 3
