"""``corecraft bench tools``: latency of every tool through ``call_tool`` on a world (default: ``default``).

Arguments are realistic: real ids and the filters an agent would use, screened so that each call
succeeds (the path an episode mostly takes). Write calls run inside a savepoint that is rolled back
after each call (untimed), so the world never drifts; a call that needs an earlier step (marking a
payment partially refunded needs a refund) runs that step first, untimed, inside the same savepoint.

Each tool's median and p99 are printed beside the floor, a raw ``sqlite3`` primary-key lookup on a
the world's own connection, as ratios, and beside the targets (median <= 0.3 ms, p99 <= 2 ms).
"""

from __future__ import annotations

import gc
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import cycle, islice
from typing import Any

from rich.console import Console
from rich.table import Table

from corecraft.bench.timing import console as bench_console
from corecraft.bench.timing import median, ms, p99, report
from corecraft.domain import default_domain
from corecraft.grading.diff import world_diff
from corecraft.tools import ToolContext
from corecraft.world.store import World

TARGET_MEDIAN = 0.3e-3
TARGET_P99 = 2e-3
VARIANTS = 40
"""How many different argument sets each tool is measured with (cycled)."""


@dataclass(frozen=True)
class Call:
    """One timed tool call, and the untimed calls that must run before it inside the same savepoint."""

    args: dict[str, Any]
    setup: tuple[tuple[str, dict[str, Any]], ...] = field(default=())


@contextmanager
def _no_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _column(conn: sqlite3.Connection, sql: str, *params: Any) -> list[Any]:
    return [row[0] for row in conn.execute(sql, params)]


def candidates(world: World, actor: str) -> dict[str, list[Call]]:
    """Argument sets an agent would plausibly send, per tool, built from the world's real rows (a customer
    is looked up by email, full name or last name, staff by id, name or first name, in the mix blind
    players used; the first :data:`VARIANTS` that work are measured)."""
    conn = world.conn

    def rows(sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return conn.execute(sql + f" LIMIT {VARIANTS}", params).fetchall()

    def ids(sql: str, *params: Any) -> list[Any]:
        return [r[0] for r in rows(sql, *params)]

    products = ids("SELECT id FROM product ORDER BY id")
    customers = ids("SELECT id FROM customer ORDER BY id")
    orders = ids('SELECT id FROM "order" ORDER BY created_at DESC')
    open_tickets = ids("SELECT id FROM supportticket WHERE status != 'closed' ORDER BY created_at DESC")
    captured = ids("SELECT id FROM payment WHERE status = 'captured' ORDER BY processed_at DESC")
    today = world.now.date()
    month_ago = today.replace(day=1).isoformat()
    channels = _column(conn, "SELECT name FROM slackchannel WHERE EXISTS (SELECT 1 FROM json_each(members) "
                             "WHERE value = ?) ORDER BY name", actor)
    words = ["rtx", "ryzen 7", "ddr5", "1000W", "nvme", "atx case", "cooler", "4070"]
    return {
        "search_products": [Call({"query": w}) for w in words]
        + [Call({"category": c, "in_stock_only": True}) for c in ("cpu", "gpu", "psu", "memory")]
        + [Call({"brand": b}) for b in ids("SELECT DISTINCT brand FROM product ORDER BY brand")]
        + [Call({"min_price": 100.0, "max_price": 400.0, "limit": 20})],
        "get_product": [Call({"product_id": p}) for p in products],
        "search_customers": [Call(args) for name, email in rows("SELECT name, email FROM customer ORDER BY id")
                             for args in ({"email": email}, {"query": name}, {"query": name.split()[-1]})]
        + [Call({"loyalty_tier": t}) for t in ("gold", "platinum")],
        "search_orders": [Call({"customer_id": c}) for c in customers]
        + [Call({"status": "fulfilled", "created_after": month_ago}), Call({"product_id": products[0]})],
        "get_order_details": [Call({"order_id": o}) for o in orders],
        "search_payments": [Call({"order_id": o}) for o in orders]
        + [Call({"transaction_id": t}) for t in ids("SELECT transaction_id FROM payment ORDER BY id")]
        + [Call({"status": "partially_refunded", "limit": 20})],
        "search_shipments": [Call({"order_id": o}) for o in orders]
        + [Call({"tracking_number": t}) for t in ids("SELECT tracking_number FROM shipment ORDER BY id")]
        + [Call({"late_only": True}), Call({"status": "in_transit"})],
        "search_tickets": [Call({"customer_id": c}) for c in ids("SELECT customer_id FROM supportticket")]
        + [Call({"status": s}) for s in ("new", "open", "pending_customer")]
        + [Call({"query": q}) for q in ("refund", "late", "dead on arrival", "compatible")]
        + [Call({"unassigned_only": True}), Call({"created_after": month_ago, "priority": "high"})],
        "get_customer_ticket_history": [Call({"customer_id": c})
                                        for c in ids("SELECT DISTINCT customer_id FROM supportticket")],
        "search_employees": [Call(args) for e, name in rows("SELECT id, name FROM employee ORDER BY id")
                             for args in ({"query": e}, {"query": name}, {"query": name.split()[0]})]
        + [Call({"department": d}) for d in ("support", "billing", "returns", "leadership")]
        + [Call({"query": q}) for q in ("lead", "manager")] + [Call({"title": "Billing Manager"})],
        "search_builds": [Call({"customer_id": c}) for c in ids("SELECT customer_id FROM build WHERE "
                                                              "customer_id IS NOT NULL")]
        + [Call({"owner_type": "internal"}), Call({"product_id": products[0]})],
        "search_knowledge_base": [Call({"query": q}) for q in ("return window", "refund", "warranty", "escalation")]
        + [Call({"tag": "refunds"}), Call({"include_deprecated": False, "limit": 20})],
        "search_slack_messages": [Call({"channel": c}) for c in channels]
        + [Call({"query": q}) for q in ("exception", "recall", "delay")]
        + [Call({"posted_after": month_ago, "channel": "policy-discussion"})],
        "validate_build_compatibility": [Call({"build_id": b}) for b in ids("SELECT id FROM build ORDER BY id")],
        "calculate_price": [Call({"items": [{"product_id": p, "quantity": 1} for p in products[i:i + 3]],
                                  "customer_id": c, "shipping_method": "ups_ground"})
                            for i, c in enumerate(customers)],
        "check_warranty_status": [Call({"order_id": o, "product_id": p})
                                  for o, p in rows("SELECT order_id, product_id FROM orderline ORDER BY id DESC")],
        "create_refund": [Call({"payment_id": p, "amount": 12.5, "reason": "duplicate_charge"}) for p in captured]
        + [Call({"payment_id": p, "amount": min(amount, 200.0), "reason": "return",
                 "lines": [{"order_line_id": line, "quantity": 1}]})
           for p, amount, line in rows("SELECT p.id, l.unit_price, l.id FROM payment p JOIN orderline l "
                                       "ON l.order_id = p.order_id WHERE p.status = 'captured' "
                                       "ORDER BY p.processed_at DESC")],
        "create_escalation": [Call({"ticket_id": t, "type": "technical", "destination": "engineering",
                                    "notes": "Checked the order and the logs; the fault reproduces."})
                              for t in open_tickets],
        "create_resolution": [Call({"ticket_id": t, "outcome": "troubleshooting_steps",
                                    "details": f"[{t}] Walked the customer through a BIOS update."})
                              for t in open_tickets],
        "update_order_status": [Call({"order_id": o, "status": "refund_requested"})
                                for o in ids("SELECT id FROM \"order\" WHERE status = 'fulfilled' ORDER BY id")],
        "update_payment_status": [Call({"payment_id": p, "status": "partially_refunded"},
                                       (("create_refund", {"payment_id": p, "amount": 5.0,
                                                           "reason": "duplicate_charge"}),))
                                  for p in captured],
        "update_ticket_status": [Call({"ticket_id": t, "priority": "high"}) for t in open_tickets]
        + [Call({"ticket_id": t, "status": "pending_customer"})
           for t in ids("SELECT id FROM supportticket WHERE status = 'open'")],
        "post_slack_message": [Call({"channel": c, "text": "[tick-250911-003] Customer confirmed the fix."})
                               for c in channels],
    }


def _run(ctx: ToolContext, name: str, call: Call, read_only: bool) -> tuple[float, float, dict[str, Any]]:
    """One call: wall-clock and thread-CPU seconds, and the result; writes and their setup are rolled back
    (untimed)."""
    conn, toolkit = ctx.conn, default_domain().toolkit
    if not read_only:
        conn.execute("SAVEPOINT bench")
        for step, args in call.setup:
            toolkit.call(ctx, step, args)
    start, cpu_start = time.perf_counter(), time.thread_time()
    result = toolkit.call(ctx, name, call.args)
    took, cpu = time.perf_counter() - start, time.thread_time() - cpu_start
    if not read_only:
        conn.execute("ROLLBACK TO bench")
        conn.execute("RELEASE bench")
    return took, cpu, result


def working_calls(ctx: ToolContext) -> dict[str, list[Call]]:
    """The candidate calls that succeed on this world, per tool (an empty list is a broken benchmark)."""
    out = {}
    for name, calls in candidates(ctx.world, ctx.actor_id).items():
        read_only = default_domain().toolkit[name].read_only
        out[name] = [c for c in calls if "error" not in _run(ctx, name, c, read_only)[2]][:VARIANTS]
        if not out[name]:
            raise RuntimeError(f"no realistic call of {name} succeeds on world {ctx.world.recipe}")
    return out


def floor_samples(world: World, repeat: int) -> list[float]:
    """Seconds per raw ``sqlite3`` primary-key lookup on the world's own connection."""
    conn = world.conn
    keys = _column(conn, "SELECT id FROM customer ORDER BY id")
    out = []
    with _no_gc():
        for key in islice(cycle(keys), repeat):
            start = time.perf_counter()
            conn.execute("SELECT * FROM customer WHERE id = ?", (key,)).fetchone()
            out.append(time.perf_counter() - start)
    return out


Timings = dict[str, tuple[list[float], list[float]]]
"""Per tool: wall-clock seconds per call, and thread-CPU seconds of the same calls."""


def measure(recipe: str = "default", repeat: int = 1000) -> tuple[Timings, list[float]]:
    """Per-tool call latencies (``repeat`` calls each, after the screening pass has warmed up every call)
    and the floor's samples."""
    (timings, floor), = measure_worlds([recipe], repeat)
    return timings, floor


def measure_worlds(recipes: list[str], repeat: int) -> list[tuple[Timings, list[float]]]:
    """:func:`measure` for several worlds at once, interleaved call by call, so machine noise hits every world
    alike (the figures of one world are comparable with another's)."""
    domain = default_domain()
    worlds = [domain.store.open(recipe) for recipe in recipes]
    contexts = [domain.toolkit.context(world, world.first_employee()) for world in worlds]
    calls = [working_calls(ctx) for ctx in contexts]
    timings: list[Timings] = [{name: ([], []) for name in options} for options in calls]
    rounds = [{name: cycle(options) for name, options in per_world.items()} for per_world in calls]
    with _no_gc():
        for _ in range(repeat):  # round-robin, so a burst of machine noise hits every tool alike
            for name in calls[0]:
                for ctx, per_world, out in zip(contexts, rounds, timings, strict=True):
                    took, cpu, _ = _run(ctx, name, next(per_world[name]), domain.toolkit[name].read_only)
                    out[name][0].append(took)
                    out[name][1].append(cpu)
    results = []
    for world, out in zip(worlds, timings, strict=True):
        if world_diff(world.conn):
            raise RuntimeError("the benchmark changed the world: a write was not rolled back")
        results.append((out, floor_samples(world, repeat * 5)))
        world.close()
    return results


def _ratio(value: float, reference: float) -> str:
    return f"{value / reference:.1f}x"


def main(recipe: str = "default", repeat: int = 1000, console: Console | None = None) -> None:
    console = console or bench_console()
    timings, floor = measure(recipe, repeat)
    floor_med, floor_p99 = median(floor), p99(floor)
    table = Table(title=f"corecraft bench tools ({recipe}): {repeat} calls per tool; floor = raw sqlite3 "
                        f"primary-key lookup, median {ms(floor_med)}, p99 {ms(floor_p99)}; targets median "
                        f"{ms(TARGET_MEDIAN)}, p99 {ms(TARGET_P99)}; p99 cpu = thread CPU time (leaves out "
                        "time the OS gave to other processes)", min_width=100)
    for column in ("tool", "kind", "median", "/ floor", "p99", "/ floor", "p99 cpu", "on target"):
        table.add_column(column, justify="left" if column in ("tool", "kind") else "right", no_wrap=True)
    for name, (wall, cpu) in timings.items():
        med, tail = median(wall), p99(wall)
        ok = med <= TARGET_MEDIAN and tail <= TARGET_P99
        table.add_row(name, "read" if default_domain().toolkit[name].read_only else "write", ms(med), _ratio(med, floor_med),
                      ms(tail), _ratio(tail, floor_p99), ms(p99(cpu)), "yes" if ok else "[red]no[/red]")
    console.print(table)
    wall = [t for samples, _ in timings.values() for t in samples]
    cpu = [t for _, samples in timings.values() for t in samples]
    med, tail = median(wall), p99(wall)
    report(f"all {len(timings)} tools ({len(wall)} calls)", [
        ("median", ms(med), f"floor {ms(floor_med)}", f"{_ratio(med, floor_med)} floor"),
        ("", "", f"target {ms(TARGET_MEDIAN)}", f"{med / TARGET_MEDIAN:.2f}x target"),
        ("p99", ms(tail), f"floor {ms(floor_p99)}", f"{_ratio(tail, floor_p99)} floor"),
        ("", "", f"target {ms(TARGET_P99)}", f"{tail / TARGET_P99:.2f}x target"),
        ("p99 (thread CPU time)", ms(p99(cpu)), f"target {ms(TARGET_P99)}", f"{p99(cpu) / TARGET_P99:.2f}x target"),
    ], console)


if __name__ == "__main__":
    main()
