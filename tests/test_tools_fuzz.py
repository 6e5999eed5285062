"""Fuzzing every tool through the toolkit on the tiny world: malformed and hostile arguments (wrong
types, missing and extra keys, huge and odd unicode strings, SQL injection, extreme numbers,
NaN/inf, deep nesting, non-objects, broken JSON) mixed with valid-looking arguments built from
real ids, so that some writes succeed and change the world.

For every call: nothing escapes, the result is a dict that serialises to strict JSON, an error
result has the structured shape and leaves the world's hash unchanged, and a read tool never
changes the world. After the run the world's invariants still hold. At least 5,000 calls."""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corecraft.domain import default_domain
from corecraft.world.invariants import violations
from corecraft.world.store import World

TOOLKIT = default_domain().toolkit
MIN_CALLS = 5000
BATCH = 20
EXAMPLES = 260

HOSTILE_STRINGS = [
    "", " ", "\t\n", "'; DROP TABLE customer; --", "%' OR 1=1 --", "\" OR \"\"=\"", "1; DELETE FROM refund",
    "') UNION SELECT * FROM employee --", "%", "_", "\\", "%%__\\\\", "NULL", "null", "None", "../../etc/passwd",
    "x" * 100_000, "ü🙂漢字 العربية", "\u202eevil\u202c", "a\x00b", "\ud800", "\ufeff", "🙂" * 5000,
    "2025-13-45", "9999-12-31", "0001-01-01", "0000-00-00", "2025-09-15T00:00:00", "#", "#" * 300,
    "{\"a\": 1}", "<script>alert(1)</script>", "-1", "1e999", "NaN",
]
HOSTILE_NUMBERS: list[Any] = [
    0, -1, 1, -(10**30), 10**30, 2**63, -(2**63) - 1, 10**400, float("nan"), float("inf"), float("-inf"),
    1e308, -0.0, 0.001, 1.005, 24.999, True, False,
]
BROKEN_JSON = ["{", "{\"a\":", "[1, 2", "{'single': 'quotes'}", "{\"limit\": NaN}", "{\"limit\": Infinity}",
               "nul", "\"just a string\"", "[]", "42", "{\"a\": 1}}", "[" * 50_000, "{\"a\":" * 50_000,
               "\x00", "{\"order_id\": \"\\ud800\"}"]


def deep(levels: int) -> Any:
    """Lists and dicts nested ``levels`` deep."""
    node: Any = "bottom"
    for n in range(levels):
        node = [node] if n % 2 else {"k": node}
    return node


scalars = st.one_of(
    st.none(), st.booleans(), st.sampled_from(HOSTILE_NUMBERS), st.integers(), st.floats(),
    st.sampled_from(HOSTILE_STRINGS), st.text(max_size=20),
)
DEEP = [deep(60), deep(900), deep(5000)]
junk = st.one_of(
    scalars, st.lists(scalars, max_size=4), st.dictionaries(st.text(max_size=8), scalars, max_size=4),
    st.lists(st.dictionaries(st.sampled_from(["id", "quantity", "product_id"]), scalars, max_size=3), max_size=3),
    st.sampled_from(DEEP),
)


class Pools:
    """Real values from the world, by argument name, so valid-looking calls reach the handlers."""

    def __init__(self, world: World) -> None:
        def column(sql: str) -> list[Any]:
            return [r[0] for r in world.conn.execute(sql)]

        ids = {table: column(f'SELECT id FROM "{table}" ORDER BY id')
               for table in ("customer", "order", "payment", "supportticket", "product", "build", "employee",
                             "refund", "slackmessage", "orderline")}
        channels = column("SELECT name FROM slackchannel ORDER BY name")
        self.by_name: dict[str, list[Any]] = {
            "customer_id": ids["customer"], "order_id": ids["order"], "payment_id": ids["payment"],
            "ticket_id": ids["supportticket"], "product_id": ids["product"], "product_ids": ids["product"],
            "build_id": ids["build"], "assignee_id": ids["employee"], "author_id": ids["employee"],
            "refund_id": ids["refund"], "thread_parent_id": ids["slackmessage"], "order_line_id": ids["orderline"],
            "channel": channels + [c.lstrip("#") for c in channels],
            "email": column("SELECT email FROM customer ORDER BY id"),
            "brand": column("SELECT DISTINCT brand FROM product ORDER BY brand"),
            "transaction_id": column("SELECT transaction_id FROM payment ORDER BY id"),
            "tracking_number": column("SELECT tracking_number FROM shipment ORDER BY id"),
            "tag": ["refunds", "returns", "policy", "how-to", "warranty"],
            "query": ["refund", "gpu", "order", "late", "RTX", "ryzen", "psu return", "cust"],
        }
        self.tickets = ids["supportticket"]
        self.bought = world.conn.execute("SELECT order_id, product_id FROM orderline ORDER BY id").fetchall()
        self.lines_by_payment: dict[str, list[str]] = {}
        for payment, line in world.conn.execute("SELECT p.id, l.id FROM payment p JOIN orderline l "
                                                "ON l.order_id = p.order_id ORDER BY p.id, l.id"):
            self.lines_by_payment.setdefault(payment, []).append(line)
        now = world.now.date()
        self.dates = [now.isoformat(), now.replace(day=1).isoformat(), "2025-01-01", "2024-06-30", "2025-12-31"]


def coherent_calls(pools: Pools) -> dict[str, st.SearchStrategy[dict[str, Any]]]:
    """Arguments that fit together (lines of the payment's order, the routed department, a small amount, a
    status change policy can allow, a product on the order), so that writes keep succeeding during the run."""
    rules = TOOLKIT.policy

    def refund_for(payment: str) -> st.SearchStrategy[dict[str, Any]]:
        line = st.sampled_from(pools.lines_by_payment[payment]).map(lambda i: {"order_line_id": i, "quantity": 1})
        return st.fixed_dictionaries({"payment_id": st.just(payment), "reason": st.sampled_from(rules.refund_reasons),
                                      "amount": st.integers(1, 3000).map(lambda cents: cents / 100),
                                      "lines": st.lists(line, max_size=1)})

    def ids(name: str) -> st.SearchStrategy[Any]:
        return st.sampled_from(pools.by_name[name])

    return {
        "create_refund": st.sampled_from(sorted(pools.lines_by_payment)).flatmap(refund_for),
        "create_escalation": st.builds(
            lambda ticket, route: {"ticket_id": ticket, "type": route[0], "destination": route[1],
                                   "notes": "Verified the order; needs a decision."},
            ids("ticket_id"), st.sampled_from(sorted(rules.escalation_routes.items()))),
        "update_order_status": st.fixed_dictionaries(
            {"order_id": ids("order_id"), "status": st.sampled_from(["refund_requested", "fulfilled"])}),
        "update_payment_status": st.fixed_dictionaries(
            {"payment_id": ids("payment_id"), "status": st.sampled_from(["partially_refunded", "refunded"])}),
        "update_ticket_status": st.fixed_dictionaries(
            {"ticket_id": ids("ticket_id"), "priority": st.sampled_from(["low", "normal", "high"])},
            optional={"assignee_id": ids("assignee_id")}),
        "check_warranty_status": st.sampled_from(pools.bought).map(
            lambda pair: {"order_id": pair[0], "product_id": pair[1]}),
    }


def valid_value(pools: Pools, name: str, schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A value the schema accepts, drawn from real ids and values where the argument names one."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        if name in pools.by_name:
            return st.sampled_from(pools.by_name[name])
        if "pattern" in schema:
            return st.sampled_from(pools.dates)
        if name in ("details", "text", "notes"):
            return st.builds(lambda t, words: f"[{t}] {words}", st.sampled_from(pools.tickets),
                             st.sampled_from(["Checked the order.", "Refunded the item.", "Customer asked again."]))
        return st.text(min_size=schema.get("minLength", 0), max_size=min(schema.get("maxLength", 40), 40))
    if kind == "integer":
        return st.integers(schema.get("minimum", -5), min(schema.get("maximum", 100), 100))
    if kind == "number":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1))
        return st.integers(max(1, int(low * 100)), 50_000).map(lambda cents: cents / 100)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(valid_value(pools, name, schema["items"]), min_size=schema.get("minItems", 0),
                        max_size=min(schema.get("maxItems", 3), 3))
    if kind == "object":
        return valid_object(pools, schema)
    return junk


def valid_object(pools: Pools, schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    props, required = schema["properties"], set(schema.get("required", []))
    return st.fixed_dictionaries(
        {k: valid_value(pools, k, v) for k, v in props.items() if k in required},
        optional={k: valid_value(pools, k, v) for k, v in props.items() if k not in required},
    )


@st.composite
def tool_call(draw: st.DrawFn, valid: dict[str, st.SearchStrategy[dict[str, Any]]],
              actors: list[str]) -> tuple[str, Any, str]:
    """(tool name, arguments, actor id): valid-looking arguments, often mutated into something hostile.

    ``valid`` holds each tool's strategy for valid-looking arguments.
    """
    name = draw(st.sampled_from(list(TOOLKIT.tools)))
    actor = draw(st.sampled_from(actors))
    args: dict[str, Any] = draw(valid[name])
    keys = sorted(TOOLKIT.tools[name].args.model_fields)
    how = draw(st.sampled_from(["valid", "valid", "valid", "drop", "extra", "replace", "replace", "nested",
                                "not_a_dict", "json_text", "broken_json"]))
    if how == "drop" and args:
        args.pop(draw(st.sampled_from(sorted(args))))
    elif how == "extra":
        extra = draw(st.sampled_from(["extra", "__class__", "limit ", "'; --", "ORDER_ID", *HOSTILE_STRINGS[:5]]))
        args[extra] = draw(junk)
    elif how == "replace":
        args[draw(st.sampled_from(keys))] = draw(junk)
    elif how == "nested":
        args[draw(st.sampled_from(keys))] = draw(st.sampled_from(DEEP))
    elif how == "not_a_dict":
        return name, draw(st.one_of(st.none(), st.lists(junk, max_size=3), st.sampled_from(HOSTILE_NUMBERS),
                                    st.just(b"{}"), st.just(("order_id", "x")))), actor
    elif how == "json_text":
        return name, json.dumps(args), actor
    elif how == "broken_json":
        return name, draw(st.sampled_from(BROKEN_JSON)), actor
    return name, args, actor


class Checker:
    """Makes the calls and checks each one; keeps the world's hash current and counts what happened."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.hash = world.hash()
        self.calls = 0
        self.outcomes: Counter[tuple[str, str]] = Counter()

    def _footprint(self) -> tuple[int, int]:
        """Rows written so far (rolled-back writes included) and the schema version: equal before and after
        a call proves it wrote nothing, so the full hash is needed only when they move."""
        return self.world.conn.total_changes, self.world.conn.execute("PRAGMA schema_version").fetchone()[0]

    def __call__(self, name: Any, arguments: Any, actor: str, full_hash: bool = True) -> dict[str, Any]:
        footprint = self._footprint()
        result = TOOLKIT.call(TOOLKIT.context(self.world, actor), name, arguments)
        self.calls += 1
        assert isinstance(result, dict), (name, result)
        json.dumps(result, allow_nan=False)
        after = self.world.hash() if full_hash or self._footprint() != footprint else self.hash
        entry = TOOLKIT.tools.get(name) if isinstance(name, str) else None
        if "error" in result:
            error = result["error"]
            assert set(result) == {"error"} and set(error) == {"type", "message", "field"}, result
            assert isinstance(error["type"], str) and isinstance(error["message"], str) and error["message"]
            assert after == self.hash, f"{name} returned an error but changed the world: {error}"
            self.outcomes[(str(name), error["type"])] += 1
        else:
            assert entry is not None
            if entry.read_only:
                assert after == self.hash, f"read tool {name} changed the world"
            self.outcomes[(str(name), "ok")] += 1
        self.hash = after
        return result


@pytest.mark.slow
def test_fuzz_every_tool(world: World) -> None:
    started = time.perf_counter()
    actors = [world.first_employee("Support Agent I"), world.first_employee("Support Team Lead"),
              world.first_employee("Billing Manager"), "emp-999"]
    pools = Pools(world)
    valid = {name: valid_object(pools, TOOLKIT.parameters[name]) for name, entry in TOOLKIT.tools.items()}
    for name, coherent in coherent_calls(pools).items():
        valid[name] = coherent | valid[name]
    check = Checker(world)

    # A fixed sweep first: every argument of every tool given each hostile value alone, then
    # non-objects and broken JSON, then bad tool names. None of these can succeed at a write.
    start_hash = check.hash
    for name, entry in TOOLKIT.tools.items():
        for field in entry.args.model_fields:
            for value in [*HOSTILE_STRINGS, *HOSTILE_NUMBERS, *DEEP, [], {}, None]:
                result = check(name, {field: value}, actors[0], full_hash=False)
                assert "error" in result or entry.read_only, (name, field, result)
        for arguments in [None, "", [], 7, math.nan, b"{}", *BROKEN_JSON]:
            assert "error" in check(name, arguments, actors[0], full_hash=False) or entry.read_only
    for bad_name in [None, 5, "", "DROP TABLE customer", "search_products ", "SEARCH_PRODUCTS", "x" * 10_000]:
        assert check(bad_name, {}, actors[0], full_hash=False)["error"]["type"] == "unknown_tool"
    assert world.hash() == start_hash
    swept = check.calls
    check.outcomes.clear()

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(tool_call(valid, actors), min_size=BATCH, max_size=BATCH))
    def run(batch: list[tuple[str, Any, str]]) -> None:
        for name, arguments, actor in batch:
            check(name, arguments, actor, full_hash=False)

    run()
    fuzzed = check.calls - swept
    took = time.perf_counter() - started
    print(f"\nfuzz: {check.calls} tool calls ({swept} swept, {fuzzed} from hypothesis) in {took:.1f} s")

    assert check.calls >= MIN_CALLS and fuzzed >= MIN_CALLS, check.calls
    assert violations(world, default_domain().policy) == []
    per_tool = Counter(tool for (tool, _) in check.outcomes.elements())
    assert all(per_tool[name] >= 50 for name in TOOLKIT.tools), per_tool
    succeeded = {tool for (tool, kind) in check.outcomes if kind == "ok"}
    reads = {name for name, entry in TOOLKIT.tools.items() if entry.read_only}
    assert reads <= succeeded, sorted(reads - succeeded)
    assert len(succeeded - reads) >= 5, sorted(succeeded - reads)  # closing tickets etc. is final: some run dry
