"""Paged searches and new ids answer exactly as the straightforward queries do.

``page`` counts the matches (exactly up to ``COUNT_CAP``) and reads one page in two indexed queries
(or, when no index narrows the filters, in one scan with a window count); ``next_id`` finds the
day's last id through an index on the ids' width. Both are checked here against the plain forms (every match
fetched and sliced in Python; a ``LIKE`` prefix scan) on the tiny and default worlds, over the
realistic calls of ``corecraft bench tools`` at many offsets, and on worlds with tied sort keys
and awkward ids.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

import pytest
from sqlmodel import SQLModel

from corecraft.bench.tools import candidates
from corecraft.domain import default_domain
from corecraft.tools import ToolContext, common, reads
from corecraft.tools.common import PageArgs, Query, next_id
from corecraft.world import db
from corecraft.world import models as m

PAGED = ("search_products", "search_customers", "search_orders", "search_payments", "search_shipments",
         "search_tickets", "get_customer_ticket_history", "search_employees", "search_builds",
         "search_knowledge_base", "search_slack_messages")
NEW_IDS = ((m.Refund, "ref"), (m.Escalation, "esc"), (m.Resolution, "res"))  # a message is named by its minute

TOOLKIT = default_domain().toolkit


def straightforward_page(ctx: ToolContext, model: type[SQLModel], query: Query, args: PageArgs, order_by: str,
                         shape: Any = None, columns: dict[str, str] | None = None,
                         order_params: Sequence[Any] = ()) -> dict[str, Any]:
    """Every match in order, sliced in Python: the answer ``page`` must give. Every column is read in full
    (``columns`` only spares ``page`` reading what the tool's ``shape`` drops, so the answers stay equal)."""
    rows = ctx.conn.execute(f"{db.select_all(model)}{query.where()} ORDER BY {order_by}",
                            [*query.params, *order_params]).fetchall()
    results = [db.decode(model, r, ctx.world.tz) for r in rows[args.offset:args.offset + args.limit]]
    if shape is not None:
        results = [shape(r) for r in results]
    cap = max(common.COUNT_CAP, args.offset + args.limit + 1)
    found = {"total": min(len(rows), cap), "offset": args.offset, "limit": args.limit,
             "has_more": args.offset + len(results) < len(rows), "results": results}
    return found | ({"total_is_lower_bound": True} if len(rows) >= cap else {})


def like_next_id(ctx: ToolContext, model: type[SQLModel], prefix: str) -> str:
    """The next id found with a ``LIKE`` prefix scan over the whole table."""
    stem = f"{prefix}-{ctx.world.now.strftime('%y%m%d')}-"
    last = ctx.conn.execute(f"SELECT id FROM {db.table(model)} WHERE id LIKE ? ORDER BY length(id) DESC, id DESC "
                            "LIMIT 1", (stem + "%",)).fetchone()
    return f"{stem}{int(last[0].rsplit('-', 1)[1]) + 1 if last else 1:03d}"


def _calls(ctx: ToolContext) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each paged tool with no filter and with every realistic filter set, at several pages."""
    realistic = candidates(ctx.world, ctx.actor_id)
    for name in PAGED:
        filters = [{}] if name != "get_customer_ticket_history" else []
        for args in [*filters, *(c.args for c in realistic[name])]:
            args = {k: v for k, v in args.items() if k not in ("limit", "offset")}
            total = TOOLKIT.call(ctx, name, args).get("total")
            if total is None:  # an argument error: nothing to page
                continue
            for limit, offset in ((10, 0), (1, 0), (50, 0), (7, 7), (3, max(total - 2, 0)), (10, total),
                                  (5, total + 4)):
                yield name, {**args, "limit": limit, "offset": offset}


def assert_pages_match(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> int:
    """Every paged call answers as the straightforward query does; returns how many were compared."""
    calls = list(_calls(ctx))
    answers = [TOOLKIT.call(ctx, name, args) for name, args in calls]
    with monkeypatch.context() as patch:
        patch.setattr(reads, "page", straightforward_page)
        expected = [TOOLKIT.call(ctx, name, args) for name, args in calls]
    for (name, args), got, want in zip(calls, answers, expected, strict=True):
        assert got == want, (name, args)
    assert {name for name, _ in calls} == set(PAGED)
    assert any(a.get("results") for a in answers) and any(a.get("has_more") for a in answers)
    assert set(ctx.world.query_plans.values()) == {True, False}  # both ways of paging were compared
    return len(calls)


def test_every_paged_tool_is_compared() -> None:
    assert set(PAGED) == {n for n, t in TOOLKIT.tools.items() if "offset" in t.args.model_fields}


def test_pages_match_the_straightforward_query_on_the_tiny_world(ctx: ToolContext,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert assert_pages_match(ctx, monkeypatch) > 300


def test_totals_past_the_cap_are_lower_bounds(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a cap of 7 many searches pass it: every page still matches the plain form, whose total stops at
    the cap (or just past the page asked for) with ``total_is_lower_bound``."""
    monkeypatch.setattr(common, "COUNT_CAP", 7)
    calls = list(_calls(ctx))
    answers = [TOOLKIT.call(ctx, name, args) for name, args in calls]
    assert assert_pages_match(ctx, monkeypatch) > 300
    capped = [(args, a) for (_, args), a in zip(calls, answers, strict=True) if a.get("total_is_lower_bound")]
    assert capped and all(a["has_more"] and a["total"] == max(7, args["offset"] + args["limit"] + 1)
                          for args, a in capped)
    assert any(a["total"] > 7 and "total_is_lower_bound" not in a for a in answers)  # a page past the cap


def test_pages_match_when_sort_keys_tie(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many rows sharing the first sort key: the id decides their order in both forms."""
    conn = ctx.conn
    for table, column in (("supportticket", "created_at"), ('"order"', "created_at"), ("payment", "processed_at"),
                          ("shipment", "shipped_at"), ("build", "created_at"), ("slackmessage", "ts")):
        conn.execute(f"UPDATE {table} SET {column} = (SELECT min({column}) FROM {table}) WHERE rowid % 2 = 0")
    conn.execute("UPDATE customer SET name = 'Alex Doe' WHERE rowid % 3 = 0")
    assert assert_pages_match(ctx, monkeypatch) > 300


@pytest.mark.slow
def test_pages_match_the_straightforward_query_on_the_default_world(monkeypatch: pytest.MonkeyPatch) -> None:
    world = default_domain().store.open("default")
    try:
        assert assert_pages_match(TOOLKIT.context(world, world.first_employee()), monkeypatch) > 1000
    finally:
        world.close()


def _copy_with_id(ctx: ToolContext, model: type[SQLModel], new_id: str) -> None:
    """A copy of the model's first row under another id (every reference stays valid)."""
    names = db.column_names(model)
    others = ", ".join(n for n in names if n != "id")
    ctx.conn.execute(f"INSERT INTO {db.table(model)} (id, {others}) SELECT ?, {others} FROM {db.table(model)} "
                     "ORDER BY id LIMIT 1", (new_id,))


@pytest.mark.parametrize(("model", "prefix"), NEW_IDS, ids=[p for _, p in NEW_IDS])
def test_next_id_matches_the_like_scan(ctx: ToolContext, model: type[SQLModel], prefix: str) -> None:
    day = ctx.world.now.strftime("%y%m%d")
    assert next_id(ctx, model, prefix) == like_next_id(ctx, model, prefix)
    neighbours = [f"{prefix}-{day}", f"{prefix}-{int(day) + 1}-0099", f"{prefix}-{int(day) - 1}-9999",
                  f"{prefix}-{day}.5-001", f"{prefix}-{day}0-777"]
    for new_id in [*neighbours, f"{prefix}-{day}-001", f"{prefix}-{day}-042", f"{prefix}-{day}-009", f"{prefix}-{day}-1003"]:
        _copy_with_id(ctx, model, new_id)
        got = next_id(ctx, model, prefix)
        assert got == like_next_id(ctx, model, prefix), new_id
    assert got == f"{prefix}-{day}-1004"


@pytest.mark.slow
def test_next_id_matches_the_like_scan_on_the_default_world() -> None:
    world = default_domain().store.open("default")
    try:
        ctx = TOOLKIT.context(world, world.first_employee())
        for model, prefix in NEW_IDS:
            assert next_id(ctx, model, prefix) == like_next_id(ctx, model, prefix)
        posted = [TOOLKIT.call(ctx, "post_slack_message", {"channel": "#escalations", "text": text})["id"]
                  for text in ("[tick-250911-003] Done.", "[tick-250911-003] And closed.")]
        assert posted == [f"msg-{world.now:%y%m%d-%H%M}", f"msg-{world.clock - timedelta(minutes=1):%y%m%d-%H%M}"]
    finally:
        world.close()
