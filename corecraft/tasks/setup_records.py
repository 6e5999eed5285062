"""A task's setup rows held to the world's own rules, as ``corecraft tasks check`` reads them. A setup Shipment row
(inserted, or a seeded one updated) must read like a carrier's: its scans start with ``label_created``, no earlier
than its order was placed, each scan is written in the world's UTC offset of its day, no scan is after the world's
now, it leaves from the warehouse ``kb-warehouse-network`` assigns
(:func:`~corecraft.world.fidelity.origin_problem`, as lint's), its scans head for the order's city without
zig-zagging (``route_problems``, as lint's shipment_routes) and it goes out for delivery there on a morning truck,
then is delivered that day by the time the carriers' rounds end
(:func:`~corecraft.world.fidelity.delivery_hour_problem`, as lint's shipment_scans),
it is labelled and picked up on carrier business days (:func:`~corecraft.world.rules.is_business_day` with
``carrier_holidays`` from ``seeds/policy.yaml``) and within the dock's day
(:func:`~corecraft.world.fidelity.pickup_problem`: not before the first collection, by the last one if labelled in
time for it, on the label's day unless labelled after 20:00), picked up at the instant of its ``shipped_at`` (the ship date is
the pickup; one with its label alone has neither a ship date nor an ETA), it is scanned at a hub and delivered
on a business day too (the world's carriers never scan in transit or deliver on a weekend or holiday) and scanned
in transit at most once at each place, and
its tracking number is in its carrier's format (:data:`~corecraft.world.rules.TRACKING_FORMATS`, the generator's),
its drawn digits spelling nothing of its order's number (:func:`spells_order`); 30 hours or more on the road, it has
in-transit scans (:data:`HUB_SCAN_AFTER`), and one delivered went no more than
:data:`~corecraft.world.rules.SILENT_BUSINESS_DAYS` business days without a scan, nor more than
:data:`~corecraft.world.rules.FIRST_SCAN_BUSINESS_DAYS` after its pickup (one still on its way may have gone
quiet: that is a task's stuck parcel); its ETA is on a business day, and an inserted parcel once picked up has
one (an update may blank a seeded parcel's, as the carrier's data sometimes does). Its order takes no part after
that part ran out (lint's stock_outs: a part out of stock today ran out at its first order left on backorder, seeded
or set up). A SupportTicket inserted ``resolved`` or ``closed`` has its Resolution, as every generated one does, and
one inserted past ``new`` has its assignee. A setup Customer's phone is no placeholder (``placeholder_phone`` in
``seeds/fidelity.yaml``), carries a real US area code (a listed city's, as ``corecraft world lint``'s
customer_phones holds the world's) and is no other customer's, seeded or set up. A setup OrderLine (inserted, or a
seeded one updated) carries the price of the day, as lint's order_prices holds the world's lines
(:func:`~corecraft.world.fidelity.line_price_problem`): its product's price when its order was placed (the
``price_history`` step in force at the order's ``created_at``, else today's price), and $0 on a no-charge replacement
order (``replaces_order_id``); the order may be seeded, updated or set up. A setup Product whose price or price history
changes keeps every line of it, seeded or set up, at the price of its day. A setup Payment is named after its order
(``pay-`` for ``ord-``; a second one on the order adds a letter, ``…b``), and its transaction id has the processor's
shape (``txn_`` and 14 random hex digits), not one spelled from its order's number nor one beginning as another
payment's of the order (:data:`TXN_SHARED_DIGITS`). A setup Employee has a manager. A setup Refund names the ticket
it answers (``ticket_id``), as every generated refund does, lists its lines where ``create_refund`` requires them, and
one left approved was made within the processor's payout time (:data:`~corecraft.world.rules.REFUND_PAYOUT_HOURS`).
A setup Order that is fulfilled or has a return requested has its
Shipment, and ships to an address in its customer's address book, as written there
(:func:`~corecraft.world.fidelity.ship_to_problem`, as lint's order_addresses holds the world's). A seeded ticket or
order the setup rewrites is named by no Slack message the task leaves unmentioned (:func:`chatter_problems`), and the
task's actor wrote no Slack post the knowledge base contradicts (:func:`actor_voice_problems`). A customer's email,
chat, call or web ticket arrives on a ticket of theirs still in work (:func:`request_ticket_problems`), and a setup
customer's account is as old as its orders say (:func:`account_age_problems`). A setup Resolution links a
refund as ``create_resolution`` lets one: only with outcome ``refund_issued``, and only an approved or processed refund;
one of a refund someone else approved says on whose approval it was issued, as the generated ones do.
No inserted row is updated before it was created. Each row is judged as it stands in the world after the setup, so an
update is judged with the seeded fields it keeps. Inserted tickets, orders, refunds, resolutions, escalations,
customers, employees and builds number on from the world's last id of their stem, in the order they were made
(:func:`id_sequence_problems`), as the world counts its ids; an inserted Slack message is named by its minute, as every
message is (:func:`message_id_problems`). A split order's parcels each list the lines they carry, each line in one parcel
(:func:`_parcel_line_problems`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from corecraft.tasks.loader import Problem
from corecraft.tasks.model import DbAssert, SetupInsert, SetupStep, SetupUpdate, Task
from corecraft.tools.common import COUNTED_REFUNDS
from corecraft.tools.writes import LINE_REASONS
from corecraft.world import db, models
from corecraft.world.fidelity import (
    CASUAL_CHANNELS,
    Fidelity,
    approval_problem,
    delay_flag_problem,
    delivery_hour_problem,
    eta_problem,
    line_price_problem,
    origin_problem,
    pickup_problem,
    reaction_problems,
    repeated_scans,
    ship_to_problem,
    shipped_out_of_stock,
    stock_out_moments,
    unearned_tier,
    young_busy_account,
)
from corecraft.world.rules import (
    REFUND_PAYOUT_HOURS,
    SILENT_BUSINESS_DAYS,
    TRACKING_FORMATS,
    closed_line_call,
    is_business_day,
    is_tracking_number,
    silent_stretch,
)
from corecraft.world.seeds import Seeds
from corecraft.world.store import World

_SETTLED = ("resolved", "closed")
_OPEN_DAYS_ONLY = {
    "label_created": ("labelled", "an order paid on a closed day is picked, and labelled, the next business day "
                                  "(kb-warehouse-network)"),
    "picked_up": ("picked up", "carriers collect on business days only"),
    "delivered": ("delivered", "the world's carriers deliver on business days only"),
    "in_transit": ("scanned in transit", "the world's carrier hubs scan on business days only (lint's "
                                         "shipment_business_days)"),
}
"""Scans that happen on carrier business days only: what the scan says was done, and why not on a closed day."""
HUB_SCAN_AFTER = timedelta(hours=30)
"""A parcel this long from pickup to its delivery round has in-transit scans (the generator scans the first hop 18
hours after the label, and every world parcel this long on the road has one)."""
_SHIPPED = ("fulfilled", "refund_requested")
"""Order statuses that say the order shipped (``kb-order-status``: fulfilled when it ships; a return asked for)."""
TRANSACTION_ID = re.compile(r"txn_[0-9a-f]{14}")
"""A payment processor's transaction id as the generator draws them (``commerce``): random, so it never spells
the order's number or a word."""

TXN_SHARED_DIGITS = 6
"""How many leading hex digits two payments' transaction ids on one order never share: drawn afresh for each capture,
one pair in 16 million would."""

Report = Callable[[tuple[object, ...], str], list[Problem]]
"""Turns a location in the task file and a sentence into problems (``file:line: sentence``)."""


def setup_record_problems(index: int, step: SetupStep, world: World, seeds: Seeds, report: Report) -> list[Problem]:
    """What betrays setup step ``index`` (a Shipment, SupportTicket, Customer, OrderLine, Product, Payment, Refund,
    Resolution or SlackMessage row) as written by an author."""
    table, row_id = (step.insert, step.row.get("id")) if isinstance(step, SetupInsert) else (step.update, step.id)
    given = step.row if isinstance(step, SetupInsert) else step.set
    key = "row" if isinstance(step, SetupInsert) else "set"

    def problem(field: str, message: str) -> list[Problem]:
        where = ("setup", index, key, field) if field in given else ("setup", index)
        return report(where, f"setup step {index + 1}: {table} {row_id} {message}")

    if isinstance(step, SetupInsert) and given.get("created_at") and given.get("updated_at") and \
            _moment(given["updated_at"], world) < _moment(given["created_at"], world):
        return problem("updated_at", f"was last updated at {given['updated_at']}, before it was created "
                                     f"({given['created_at']})")
    if table == "Shipment":
        row = db.fetch(world.conn, models.Shipment, str(row_id), world.tz)
        return [] if row is None else [p for field, message in _shipment_problems(row, world, seeds,
                                                                                  isinstance(step, SetupInsert))
                                       for p in problem(field, message)]
    if table == "SupportTicket" and isinstance(step, SetupInsert) and given.get("status", "new") != "new" \
            and not given.get("assignee_id"):
        return problem("status", f"is inserted {given['status']} with nobody assigned: an agent opens a ticket by "
                                 "taking it (kb-ticket-status-lifecycle), and every generated ticket past new has an "
                                 "assignee")
    if table == "SupportTicket" and isinstance(step, SetupInsert) and given.get("channel") == "phone" \
            and not given.get("assignee_id"):
        return problem("channel", "came in by phone with nobody assigned: the agent who takes a call holds its ticket "
                                  "(kb-ticket-assignment), as every generated phone ticket is held")
    if table == "SupportTicket" and isinstance(step, SetupInsert) and given.get("channel") == "phone" and \
            given.get("created_at") and \
            (closed := closed_line_call(_moment(given["created_at"], world), seeds.policy.carrier_holidays)):
        return problem("channel", f"{closed}: a call then is a voicemail, which reaches the queue as an email "
                                  "(kb-ticket-assignment), as every generated one does")
    if table == "SupportTicket" and isinstance(step, SetupInsert) and given.get("status") in _SETTLED:
        resolved = world.conn.execute(f"SELECT 1 FROM {db.table(models.Resolution)} WHERE ticket_id = ?",
                                      (str(row_id),)).fetchone()
        return [] if resolved else problem("status", f"is inserted {given['status']} without a Resolution: every "
                                                     "generated resolved or closed ticket has one")
    if table == "Resolution" and isinstance(step, SetupInsert) and given.get("created_at"):
        ticket = world.conn.execute(f"SELECT created_at, updated_at FROM {db.table(models.SupportTicket)} "
                                    "WHERE id = ?", (str(given.get("ticket_id")),)).fetchone()
        written = _moment(given["created_at"], world)
        arrived, updated = (None, None) if ticket is None else (db.decode_datetime(t, world.tz) for t in ticket)
        if arrived is not None and arrived.replace(second=0) == written.replace(second=0):
            return problem("created_at", f"is written at {written:%Y-%m-%d %H:%M}, the minute its ticket arrived: a "
                                         "resolution comes once the work is done")
        if updated is not None and updated < written:
            return problem("created_at", f"is written at {written:%Y-%m-%d %H:%M}, after its ticket's last update "
                                         f"({updated:%Y-%m-%d %H:%M}): writing the resolution settles the ticket, so "
                                         "the ticket is updated then or later, as every generated one is")
    if table == "Resolution" and isinstance(step, SetupInsert) and \
            (given.get("outcome") == "refund_issued") != (given.get("refund_id") is not None):
        return problem("refund_id", f"is {given.get('outcome')} with refund_id {given.get('refund_id')}: only "
                                    "refund_issued links a refund, and it must (create_resolution's rule)")
    if table == "Resolution" and isinstance(step, SetupInsert) and given.get("refund_id"):
        found = world.conn.execute(f"SELECT status, approved_by_id FROM {db.table(models.Refund)} WHERE id = ?",
                                   (str(given["refund_id"]),)).fetchone()
        if found is not None and found[0] not in COUNTED_REFUNDS:
            return problem("refund_id", f"records refund {given['refund_id']} as issued, but it is {found[0]}: "
                                        "create_resolution takes only an approved or processed refund")
        if found is not None and found[1] != given.get("resolved_by_id") and "approval" not in given.get("details", ""):
            return problem("details", f"says its resolver issued refund {given['refund_id']}, which {found[1]} approved: "
                                      "a generated resolution of a refund over its resolver's limit says on whose "
                                      "approval it was issued")
    if table == "Customer" and {"phone", "loyalty_tier", "created_at"} & set(given):
        row = db.fetch(world.conn, models.Customer, str(row_id), world.tz)
        if row is None:
            return []
        found = [p for message in _phone_problems(row, world, seeds) for p in problem("phone", message)] \
            if "phone" in given else []
        first = _history_start(world)
        unearned = first and unearned_tier({**row, "created_at": _moment(row["created_at"], world)}, first)
        return found + (problem("loyalty_tier", unearned) if unearned else [])
    refund = db.fetch(world.conn, models.Refund, str(row_id), world.tz) if table == "Refund" else None
    if refund and refund["status"] == "approved" and \
            world.now - (made := _moment(refund["created_at"], world)) > timedelta(hours=REFUND_PAYOUT_HOURS[1]):
        return problem("status", f"is still approved {(world.now - made).days} days after it was made "
                                 f"({made:%Y-%m-%d %H:%M}): the processor pays every generated refund out within "
                                 f"{REFUND_PAYOUT_HOURS[1]} hours (processed, with its processed_at)")
    if refund and ({"amount", "approved_by_id"} & set(given)):
        approver = refund["approved_by_id"] and db.fetch(world.conn, models.Employee, str(refund["approved_by_id"]),
                                                         world.tz)
        if approver and (wrong := approval_problem(refund["amount"], approver)):
            return problem("approved_by_id", wrong)
    if table == "Refund" and isinstance(step, SetupInsert) and given.get("reason") in LINE_REASONS \
            and not given.get("lines"):
        return problem("lines", f"is a {given['reason']} refund that lists no order lines: create_refund requires "
                                "them for that reason, and every generated one lists them")
    if table == "Refund" and isinstance(step, SetupInsert) and not given.get("ticket_id"):
        return problem("ticket_id", "names no ticket: every generated refund names the ticket it answers (insert the "
                                    "SupportTicket that asked for it, with its Resolution, and set ticket_id)")
    if table == "Employee" and isinstance(step, SetupInsert) and not given.get("manager_id"):
        return problem("manager_id", "reports to no one: every generated employee but the VP at the top has a manager")
    if table == "OrderLine":
        row = db.fetch(world.conn, models.OrderLine, str(row_id), world.tz)
        return [] if row is None or (wrong := _line_price_problem(row, world)) is None else problem("unit_price", wrong)
    if table == "Order" and ("shipping_address" in given or "customer_id" in given or "status" in given
                             or "updated_at" in given):
        order = db.fetch(world.conn, models.Order, str(row_id), world.tz)
        last = _moment(order["updated_at"], world) if order is not None else None
        picked, at_delivery = world.conn.execute(
            f"SELECT max(shipped_at), max(delivered_at = ?) FROM {db.table(models.Shipment)} WHERE order_id = ?",
            (db.encode_datetime(last) if last is not None else None, str(row_id))).fetchone()
        pickup = db.decode_datetime(picked, world.tz).astimezone(world.tz) if picked is not None else None
        if last is not None and pickup is not None and last < pickup:
            return problem("updated_at", f"was last updated at {last:%Y-%m-%d %H:%M}, before its parcel was picked up "
                                         f"({pickup:%Y-%m-%d %H:%M}): an order is updated when it becomes fulfilled, "
                                         "and after")
        if order is not None and last is not None and order["status"] == "fulfilled" and at_delivery:
            return problem("updated_at", f"was last updated at {last:%Y-%m-%d %H:%M}, its parcel's delivery: a "
                                         "delivery changes no order (a fulfilled one was last updated at its pickup)")
        if order is not None and order["status"] in _SHIPPED and picked is None:
            return problem("status", f"is {order['status']} with no parcel the carrier has collected: a generated "
                                     "order is fulfilled once the carrier has collected it, and a return needs it "
                                     "delivered")
        customer = db.fetch(world.conn, models.Customer, str(order["customer_id"]), world.tz) if order else None
        wrong = ship_to_problem(order["shipping_address"], customer["addresses"]) if order and customer else None
        return [] if wrong is None else problem("shipping_address", wrong)
    named = str(given.get("order_id")).replace("ord-", "pay-", 1)
    if table == "Payment" and isinstance(step, SetupInsert) and given.get("order_id") and \
            not re.fullmatch(re.escape(named) + "[b-z]?", str(row_id)):
        return problem("id", f"is not named after its order {given['order_id']}: every generated payment takes its "
                             f"order's id ({named}), and a second one on the same order adds a letter (…b, …c)")
    if table == "Payment" and "transaction_id" in given:
        txn, payment = str(given["transaction_id"]), db.fetch(world.conn, models.Payment, str(row_id), world.tz)
        if not TRANSACTION_ID.fullmatch(txn):
            return problem("transaction_id", f"has transaction id {txn}, not the processor's shape (txn_ and 14 hex "
                                             "digits drawn at random, as every generated payment's)")
        if payment is not None and (spelled := spells_order(txn[4:], str(payment["order_id"]))) is not None:
            return problem("transaction_id", f"has transaction id {txn}, which spells {spelled} of its order "
                                             f"{payment['order_id']}: a processor's ids are random")
        twin = payment and world.conn.execute(
            "SELECT id, transaction_id FROM payment WHERE order_id = ? AND id != ? AND substr(transaction_id, 1, ?) = ?",
            (payment["order_id"], row_id, len("txn_") + TXN_SHARED_DIGITS, txn[:len("txn_") + TXN_SHARED_DIGITS])
        ).fetchone()
        if twin:
            return problem("transaction_id", f"has transaction id {txn}, which begins as {twin[0]}'s ({twin[1]}): a "
                                             "processor draws each capture's id afresh")
    if table == "Resolution" and "details" in given:
        res = db.fetch(world.conn, models.Resolution, str(row_id), world.tz)
        if res is not None and not str(res["details"]).startswith(f"[{res['ticket_id']}] "):
            return problem("details", f"details do not begin with its ticket id in square brackets "
                                      f"([{res['ticket_id']}] ...), as kb-writing-resolutions asks and every generated "
                                      "resolution's do")
        ticket = db.fetch(world.conn, models.SupportTicket, str(res["ticket_id"]), world.tz) if res else None
        if res is not None and ticket is not None and not OWN_STORY.search(str(res["details"])) and (
                unfit := seeds.fidelity.unfit_details(ticket, res, seeds.policy.stale_ticket_days)):
            return problem("details", f"details do not say what a generated {res['outcome']} resolution of "
                                      f"{ticket['id']} ({ticket['subject']!r}) says for its issue: {unfit!r}")
    if table == "SlackMessage" and "reactions" in given:
        msg = db.fetch(world.conn, models.SlackMessage, str(row_id), world.tz)
        channel = msg and db.fetch(world.conn, models.SlackChannel, str(msg["channel_id"]), world.tz)
        return [] if msg is None else [p for message in reaction_problems(
            msg["reactions"], msg["text"], channel is not None and channel["name"] in CASUAL_CHANNELS)
            for p in problem("reactions", message)]
    if table == "Product" and ("price" in given or "specs" in given):
        lines = [db.fetch(world.conn, models.OrderLine, line_id, world.tz) for line_id, in world.conn.execute(
            f"SELECT id FROM {db.table(models.OrderLine)} WHERE product_id = ? ORDER BY id", (str(row_id),))]
        field = "specs" if "specs" in given else "price"
        return [p for line in lines if line is not None and (wrong := _line_price_problem(line, world)) is not None
                for p in problem(field, f"prices order line {line['id']} off its day: it {wrong}")]
    return []


OWN_STORY = re.compile(r"\bref-\d{6}-\d{3}\b|\bUpdate \d{4}-\d{2}-\d{2}\b")
"""Words of a setup resolution telling a story of its own, one its records bear out (the refund it names, an update
it was dated by): worded as its author chose. Any other says what a generated resolution says for its ticket's
issue (``issues[*].details``)."""


def chatter_problems(index: int, step: SetupStep, world: World, mentioned: str, report: Report) -> list[Problem]:
    """The world's Slack messages that name a ticket or order setup step ``index`` rewrites (an update of a seeded
    SupportTicket or Order) and that the task does not mention by id (``mentioned``: the task's own text): chatter
    written about the record as it was may contradict it as the task makes it, so the author either keeps the
    message true (mentions it, having checked it, or updates it too) or rewrites another record."""
    if not isinstance(step, SetupUpdate) or step.update not in ("SupportTicket", "Order"):
        return []
    named = world.conn.execute(f"SELECT id FROM {db.table(models.SlackMessage)} WHERE instr(text, ?) > 0 ORDER BY id",
                               (step.id,)).fetchall()
    return [p for msg_id, in named if msg_id not in mentioned
            for p in report(("setup", index), f"setup step {index + 1}: {step.update} {step.id} is rewritten, but "
                                              f"Slack {msg_id} talks about it as the world wrote it: check the "
                                              "message still holds and mention its id, update it too, or rewrite "
                                              "another record")]


NUMBERED = ("SupportTicket", "Order", "Refund", "Resolution", "Escalation", "Customer", "Employee", "Build")
"""Tables whose ids count up (``tick-250914-006``, ``cust-0414``): a setup row of one takes the next free number.
Payments, shipments, order lines and build components take their parent's id, and so follow it."""
_COUNTED_ID = re.compile(r"^(.*-)(\d+)$")
DATED_IDS = {"tick": "created_at", "ord": "created_at", "msg": "ts", "ref": "created_at", "res": "created_at",
             "esc": "created_at"}
"""Id prefixes dated by the row's own moment (``tick-YYMMDD-NNN``): payments and shipments take their order's. The
field also says when any numbered row was made (``created_at`` for the undated ones; an employee has none)."""


def id_sequence_problems(setup: list[SetupStep], world: World, report: Report) -> list[Problem]:
    """Setup rows numbered apart from the world's: the world counts each table's ids up without gaps, in the order
    the rows were made (a day's tickets are ``tick-250914-001`` to ``-006``, its customers ``cust-0001`` to
    ``cust-0414``), so the rows a task inserts number on from the last seeded id of their stem (``tick-250914-007``,
    ``-008``, ``cust-0415``), and among themselves in the order they were made. A block of its own
    (``tick-250914-901``, ``cust-0981``), or a later number on an earlier row, reads as planted."""
    stems: dict[tuple[str, str], list[tuple[int, int, str, datetime | None]]] = {}
    for index, step in enumerate(setup):
        if isinstance(step, SetupInsert) and step.insert in NUMBERED and \
                (counted := _COUNTED_ID.match(str(step.row.get("id", "")))) is not None:
            made = step.row.get(DATED_IDS.get(counted.group(1).split("-", 1)[0], "created_at"))
            stems.setdefault((step.insert, counted.group(1)), []).append(
                (int(counted.group(2)), index, counted.group(0), None if made is None else _moment(made, world)))
    out: list[Problem] = []
    for (table, stem), inserted in stems.items():
        ours = {rid for _, _, rid, _ in inserted}
        seeded = world.conn.execute(f"SELECT id FROM {db.table(getattr(models, table))} WHERE id >= ? AND id < ?",
                                    (stem, stem[:-1] + ".")).fetchall()
        last = max((int(rid[len(stem):]) for rid, in seeded if rid not in ours and rid[len(stem):].isdigit()),
                   default=0)
        width = len(inserted[0][2]) - len(stem)
        for expected, (number, index, rid, _) in enumerate(sorted(inserted), last + 1):
            if number != expected:
                out += report(("setup", index, "row", "id"),
                              f"setup step {index + 1}: {table} {rid} is numbered apart from the world's: its last "
                              f"{stem}… is {stem}{last:0{width}d}, so the set-up rows number on from it "
                              f"({stem}{expected:0{width}d} here), as the world counts its ids")
        made = [(number, index, rid, when) for number, index, rid, when in sorted(inserted) if when is not None]
        out += [p for (_, _, before, earlier), (_, index, rid, when) in pairwise(made) if when < earlier
                for p in report(("setup", index, "row", "id"),
                                f"setup step {index + 1}: {table} {rid} was made at {when.isoformat()}, before "
                                f"{before} ({earlier.isoformat()}), which it follows in number: number a stem's rows "
                                "in the order they were made")]
    return out


def account_age_problems(setup: list[SetupStep], world: World, report: Report) -> list[Problem]:
    """Setup customers whose accounts are too young for their orders, as the world leaves them
    (:func:`~corecraft.world.fidelity.young_busy_account`, as lint's account_ages holds the world's): each customer a
    step inserts or updates, or gives an order, is judged once, at the first such step."""
    touched: dict[str, int] = {}
    for index, step in enumerate(setup):
        if isinstance(step, SetupInsert) and step.insert in ("Customer", "Order"):
            customer = step.row.get("id" if step.insert == "Customer" else "customer_id")
        else:
            customer = step.id if isinstance(step, SetupUpdate) and step.update == "Customer" else None
        if customer is not None:
            touched.setdefault(str(customer), index)
    first = _history_start(world)
    out: list[Problem] = []
    for customer, index in touched.items():
        row = db.fetch(world.conn, models.Customer, customer, world.tz)
        orders, = world.conn.execute(f"SELECT COUNT(*) FROM {db.table(models.Order)} WHERE customer_id = ?",
                                     (customer,)).fetchone()
        if row is not None and first is not None and (problem := young_busy_account(
                {**row, "created_at": _moment(row["created_at"], world)}, orders, first)) is not None:
            out += report(("setup", index), f"setup step {index + 1}: Customer {customer} {problem}: a new account's "
                                            "first months bring a few orders, so open it before the history began")
    return out


def priority_problems(task: Task, world: World, seeds: Seeds, report: Report) -> list[Problem]:
    """Set-up tickets triaged off the KB's priority rules (:meth:`~corecraft.world.fidelity.Fidelity.priority_problem`,
    as lint's ticket_priorities holds the world's), each judged as the setup leaves it, at the first step that writes
    it. A ticket whose priority a ``db_assert`` criterion wants at one value is the task's subject, planted wrong on
    purpose, and left to the task."""
    subjects = {str(ticket) for c in task.rubric if isinstance(c, DbAssert) and c.table == "SupportTicket"
                and "priority" in c.expect and c.expect["priority"].eq is not None and "id" in c.where
                for ticket in (c.where["id"].one_of or (c.where["id"].eq,))}
    touched: dict[str, int] = {}
    for index, step in enumerate(task.setup):
        if isinstance(step, SetupInsert) and step.insert == "SupportTicket":
            touched.setdefault(str(step.row.get("id")), index)
        elif isinstance(step, SetupUpdate) and step.update == "SupportTicket":
            touched.setdefault(str(step.id), index)
    out: list[Problem] = []
    for ticket_id, index in touched.items():
        ticket = db.fetch(world.conn, models.SupportTicket, ticket_id, world.tz)
        if ticket is None or ticket_id in subjects:
            continue
        order = db.fetch(world.conn, models.Order, str(ticket["order_id"]), world.tz) if ticket["order_id"] else None
        customer = db.fetch(world.conn, models.Customer, str(ticket["customer_id"]), world.tz)
        wrong = seeds.fidelity.priority_problem(ticket, order["total"] if order else None,
                                                customer["loyalty_tier"] if customer else "")
        if wrong is not None:
            out += report(("setup", index), f"setup step {index + 1}: SupportTicket {ticket_id} {wrong} "
                                            "(kb-ticket-priority): a triaged ticket has the priority its words, order "
                                            "and customer give it, unless a criterion checks it as the task's subject")
    return out


def message_id_problems(setup: list[SetupStep], world: World, report: Report) -> list[Problem]:
    """Inserted Slack messages not named by their minute: a message's id is its world-time day and minute
    (``msg-250912-0930``, ``…0930b`` when another message has it: :func:`models.message_id`), so a channel's ids
    read in time order, the world's messages and a task's alike."""
    posts = sorted((_moment(step.row["ts"], world), index, str(step.row.get("id")))
                   for index, step in enumerate(setup)
                   if isinstance(step, SetupInsert) and step.insert == "SlackMessage" and step.row.get("ts"))
    ours = {rid for _, _, rid in posts}
    table = db.table(models.SlackMessage)
    named: set[str] = set()

    def taken(ident: str) -> bool:
        return ident in named or (ident not in ours and world.conn.execute(
            f"SELECT 1 FROM {table} WHERE id = ?", (ident,)).fetchone() is not None)

    out: list[Problem] = []
    for moment, index, rid in posts:
        expected = models.message_id(moment.astimezone(world.tz), taken)
        named.add(expected)
        if rid != expected:
            out += report(("setup", index, "row", "id"),
                          f"setup step {index + 1}: SlackMessage {rid} is posted at {moment:%Y-%m-%d %H:%M}, so its id "
                          f"is {expected}: a message is named by its world-time day and minute (with a letter when "
                          "another message has that minute), as every generated message is")
    return out


INBOUND = re.compile(r"(?is)(?:live chat|chat|e-?mail|phone call|call|(?:new |web form |web )?ticket)\b"
                     r"(?:(?!\n\s*\n).){0,300}?([\w.+-]+@[\w-]+(?:\.[\w-]+)+)")
"""A prompt that hands the agent a customer's own request: it opens on the channel ("Email from", "Chat from",
"Live chat, customer signed in as", "Web form ticket from", ...) and its first paragraph gives the requester's
address. A colleague relaying a customer opens otherwise and does not match; an address of no account (a guest, or
an identity check) matches but asks for no ticket."""


def request_ticket_problems(prompt: str, world: World, report: Report) -> list[Problem]:
    """A customer's request with no ticket to work: the prompt opens on a customer's email, chat, call or ticket from
    an address that is a customer account's (:data:`INBOUND`), but the world, as the setup leaves it, holds no ticket
    of that customer still in work (new, open or pending_customer). The handbook has every request arrive as a ticket
    the agent opens, parks, escalates or resolves, and the agent cannot create one, so the setup inserts it (an
    address that matches no account is an identity check, and has none)."""
    found = INBOUND.match(prompt.lstrip())
    if found is None:
        return []
    customer = world.conn.execute(f"SELECT id FROM {db.table(models.Customer)} WHERE lower(email) = lower(?)",
                                  (found.group(1),)).fetchone()
    if customer is None:
        return []
    working = world.conn.execute(f"SELECT 1 FROM {db.table(models.SupportTicket)} WHERE customer_id = ? AND status "
                                 "NOT IN (?, ?) LIMIT 1", (customer[0], *_SETTLED)).fetchone()
    if working is not None:
        return []
    return report(("prompt",), f"the request from {found.group(1)} ({customer[0]}) reaches the agent with no ticket "
                               "in work (new, open or pending_customer): insert the SupportTicket it arrived on in "
                               "the setup, assigned to the actor (docs/writing-tasks.md)")


def actor_voice_problems(actor: str | None, world: World, fidelity: Fidelity, report: Report) -> list[Problem]:
    """The world's Slack posts, as the setup leaves them, in which the task's ``actor`` gives advice the knowledge
    base contradicts (``kb_contradicted_stances``): the agent would find its own wrong advice under its name, so
    the setup gives such a post another author (or the task another actor)."""
    if actor is None:
        return []
    posts = world.conn.execute(f"SELECT id, text FROM {db.table(models.SlackMessage)} WHERE author_id = ? ORDER BY id",
                               (actor,)).fetchall()
    return [p for msg_id, text in posts if (wrong := fidelity.kb_contradicts(text))
            for p in report(("actor",), f"actor {actor} posted Slack {msg_id}, whose advice the KB contradicts "
                                        f"({', '.join(wrong)}): the agent would read its own wrong advice; give the "
                                        "post another author in the setup, or the task another actor")]


def _line_price_problem(line: dict[str, Any], world: World) -> str | None:
    """What is wrong with a line's unit price as it stands after the setup, with its order's (None: nothing)."""
    order = db.fetch(world.conn, models.Order, str(line["order_id"]), world.tz)
    product = db.fetch(world.conn, models.Product, str(line["product_id"]), world.tz)
    if order is None or product is None:
        return None
    return line_price_problem(line, product, _moment(order["created_at"], world), order["replaces_order_id"])


def _shipment_problems(row: dict[str, Any], world: World, seeds: Seeds, inserted: bool) -> list[tuple[str, str]]:
    events: list[dict[str, Any]] = row["events"]
    out = []
    if not events or events[0].get("status") != "label_created":
        first = events[0].get("status") if events else None
        out.append(("events", f"has scans starting with {first!r}, not 'label_created' (a carrier's first scan "
                              "is the label)"))
    order = db.fetch(world.conn, models.Order, str(row["order_id"]), world.tz)
    if events and order is not None and _moment(events[0]["ts"], world) < _moment(order["created_at"], world):
        out.append(("events", f"has its first scan at {events[0]['ts']}, before its order {order['id']} was placed "
                              f"({order['created_at']}): a label is printed for an order"))
    if order is not None:
        out += [("lines", problem) for problem in _parcel_line_problems(row, world)]
        items = [db.fetch(world.conn, models.Product, product, world.tz) for product, in world.conn.execute(
            f"SELECT product_id FROM {db.table(models.OrderLine)} WHERE order_id = ? ORDER BY id", (order["id"],))]
        wrong = origin_problem(events, order["shipping_address"], [p for p in items if p is not None], seeds.fidelity,
                               stock_then_unknown=True)
        if wrong is not None:
            out.append(("events", f"{wrong} (kb-warehouse-network)"))
        out += [("events", problem) for problem in _stock_out_problems(order, [p for p in items if p is not None], world)]
        address = order["shipping_address"]
        destination = f"{address['city']}, {address['state']}"
        out += [("events", f"{problem} (its scans zig-zag)")
                for _, problem in seeds.fidelity.route_problems([e["location"] for e in events], destination)]
        delivered = [e for e in events if e.get("status") in ("out_for_delivery", "delivered")]
        out += [("events", f"has a {e['status']!r} scan at {e['location']}, but its order ships to {destination}")
                for e in delivered if e["location"] != destination]
    out += [("events", f"{problem} (a scan the parcel could not have reached)")
            for before, after in pairwise(events)
            if (problem := seeds.fidelity.leg_speed_problem(
                before["location"], _moment(before["ts"], world), after["location"], _moment(after["ts"], world),
                str(row["carrier"]))) is not None]
    holidays = seeds.policy.carrier_holidays
    for event in events:
        moment = _moment(event["ts"], world)
        local = moment.astimezone(world.tz)
        if moment.utcoffset() != local.utcoffset():
            out.append(("events", f"has a {event.get('status')!r} scan at {event['ts']}, not in the world's offset "
                                  f"for that day ({local.isoformat()}): the generator writes world time"))
        if moment > world.now:
            out.append(("events", f"has a {event.get('status')!r} scan at {event['ts']}, after the world's now "
                                  f"({world.now.isoformat()}): a scan cannot be in the future"))
        day = local.date()
        if event.get("status") in _OPEN_DAYS_ONLY and not is_business_day(day, holidays):
            done, why = _OPEN_DAYS_ONLY[event["status"]]
            out.append(("events", f"is {done} on {holidays.get(day, day.strftime('%A'))} ({day}): {why}"))
        if event.get("status") == "picked_up" and (row["shipped_at"] is None
                                                   or datetime.fromisoformat(row["shipped_at"]) != moment):
            out.append(("shipped_at", f"has shipped_at {row['shipped_at']}, not its pickup scan at {event['ts']}: "
                                      "the ship date is the pickup"))  # shipped_at decoded aware, in world time
    pickup = next((e for e in events if e.get("status") == "picked_up"), None)
    if pickup is None and row["shipped_at"] is not None:
        out.append(("shipped_at", f"has shipped_at {row['shipped_at']} but no pickup scan: the ship date is the "
                                  "pickup, so a parcel the carrier has not collected has none (null)"))
    if pickup is None and row["eta"] is not None:
        out.append(("eta", "has an ETA, though the carrier has not collected it: a parcel gets its ETA at pickup"))
    if pickup is not None and (problem := pickup_problem(
            _moment(events[0]["ts"], world).astimezone(world.tz), _moment(pickup["ts"], world).astimezone(world.tz))):
        out.append(("events", f"{problem} (kb-warehouse-network)"))
    arrived = next((e for e in events if e.get("status") in ("out_for_delivery", "delivered")), None)
    if pickup and arrived and _moment(arrived["ts"], world) - _moment(pickup["ts"], world) >= HUB_SCAN_AFTER and not any(
            e.get("status") == "in_transit" for e in events):
        out.append(("events", f"goes from its pickup at {pickup['ts']} to its {arrived['status']!r} scan at "
                              f"{arrived['ts']} with no in-transit scan: every world parcel that long on the road is "
                              "scanned at the hubs on its way or its local facility"))
    if row.get("eta") and row.get("delivered_at") and (problem := delay_flag_problem(
            [str(e.get("status")) for e in events], _moment(row["eta"], world).astimezone(world.tz),
            _moment(row["delivered_at"], world).astimezone(world.tz))):
        out.append(("events", f"{problem}, as every late world parcel (kb-shipment-tracking-events)"))
    handed = next((_moment(e["ts"], world) for e in events if e.get("status") == "delivered"), None)
    truck = next((_moment(e["ts"], world) for e in reversed(events) if e.get("status") == "out_for_delivery"), None)
    if handed is not None and handed <= world.now and (problem := delivery_hour_problem(
            handed.astimezone(world.tz), truck and truck.astimezone(world.tz))):  # a future scan: reported above
        out.append(("events", f"{problem}, when no world parcel is"))
    # Delivered or still on its way, a parcel is scanned the night after pickup and then every few business days;
    # the silence after the last scan of one still on its way is left alone (a task's stuck parcel).
    scans = [moment for e in events if e.get("status") != "label_created"  # a future scan: reported above
             and (moment := _moment(e["ts"], world).astimezone(world.tz)) <= world.now]
    if (stretch := silent_stretch(scans, None, holidays)) is not None:
        out.append(("events", f"has no scan from {stretch[0]:%Y-%m-%d %H:%M} to {stretch[1]:%Y-%m-%d %H:%M}, more "
                              f"than {stretch[2]} business days: no world parcel goes that long unscanned (the carrier "
                              "sorts it the night after pickup), and kb-shipment-tracking-events opens a carrier trace "
                              f"for one silent more than {SILENT_BUSINESS_DAYS}"))
    out += [("events", f"has {n} in-transit scans at {place}: a place scans a parcel once on its way, as the world's "
                       "(lint's shipment_hub_repeats)") for place, n in repeated_scans(events, "location")]
    out += [("events", f"has an exception scan at {e['ts']} with no description: every world exception scan says "
                       "what went wrong, which kb-shipment-tracking-events has the agent read")
            for e in events if e.get("status") == "exception" and not e.get("description")]
    statuses = [e.get("status") for e in events]
    if "delivered" in statuses and "out_for_delivery" not in statuses[:statuses.index("delivered")]:
        out.append(("events", "is delivered with no 'out_for_delivery' scan before it: every world parcel goes out "
                              "for delivery the morning it is delivered"))
    if inserted and row["eta"] is None and pickup is not None:
        out.append(("eta", "has no ETA, though the carrier collected it: a parcel gets its ETA at pickup (the "
                           "service's SLA business days later, 20:00 world time, as the world's)"))
    elif row["eta"] is not None and not is_business_day((due := _moment(row["eta"], world).astimezone(world.tz).date()),
                                                        holidays):
        out.append(("eta", f"has its ETA on {holidays.get(due, due.strftime('%A'))} ({due}): the world's carriers "
                           "deliver on business days only"))
    elif row["eta"] is not None and row["shipped_at"] is not None and (problem := eta_problem(
            _moment(row["shipped_at"], world).astimezone(world.tz), _moment(row["eta"], world).astimezone(world.tz),
            seeds.policy.shipping[str(row["carrier"])].sla_business_days, holidays)):
        out.append(("eta", f"{problem}: a parcel's ETA is its service's SLA counted from the pickup, as the "
                           "world's (lint's shipment_business_days)"))
    carrier, number = row["carrier"], row["tracking_number"]
    if not is_tracking_number(carrier, number):
        shape = TRACKING_FORMATS.get(carrier, "no format: not a carrier we ship with")
        out.append(("tracking_number", f"has tracking number {number}, not in {carrier}'s format "
                                       f"({shape}, # a digit)"))
    elif (spelled := spells_order(_drawn_digits(carrier, number), str(row["order_id"]))) is not None:
        out.append(("tracking_number", f"has tracking number {number}, whose drawn digits spell {spelled} of its "
                                       f"order {row['order_id']}: a carrier's numbers are random"))
    return out


def _parcel_line_problems(row: dict[str, Any], world: World) -> list[str]:
    """A split order's parcels each list the lines they carry (``lines``), lines of their order that no other parcel
    of it carries; a lone parcel carries the whole order and lists none or all of them."""
    order_lines = {i for i, in world.conn.execute(
        f"SELECT id FROM {db.table(models.OrderLine)} WHERE order_id = ?", (row["order_id"],))}
    parcels = [db.fetch(world.conn, models.Shipment, i, world.tz) for i, in world.conn.execute(
        f"SELECT id FROM {db.table(models.Shipment)} WHERE order_id = ? ORDER BY id", (row["order_id"],))]
    lines: list[str] | None = row.get("lines")
    if lines is None:
        return [f"is one of {len(parcels)} parcels of {row['order_id']} but lists no lines (a split order's parcel "
                "says which lines it carries)"] if len(parcels) > 1 else []
    out = [f"lists {line}, which is no line of {row['order_id']}" for line in lines if line not in order_lines]
    out += [f"lists {line}, which parcel {other['id']} carries too" for other in parcels
            if other is not None and other["id"] != row["id"] for line in lines if line in (other.get("lines") or ())]
    if len(parcels) == 1 and set(lines) != order_lines:
        out.append(f"is {row['order_id']}'s only parcel but lists {len(lines)} of its {len(order_lines)} lines")
    return out


def _stock_out_problems(order: dict[str, Any], items: list[dict[str, Any]], world: World) -> list[str]:
    """The parts a shipped order takes after they ran out (lint's stock_outs): a part out of stock today ran out
    at the first order left on backorder for it, seeded or set up."""
    products = {p["id"]: p for p in (db.decode(models.Product, r, world.tz)
                                     for r in world.conn.execute(db.select_all(models.Product)))}
    backordered = [(db.decode_datetime(placed, world.tz), products[pid]) for placed, pid in world.conn.execute(
        f"SELECT o.created_at, l.product_id FROM {db.table(models.Order)} o JOIN {db.table(models.OrderLine)} l "
        "ON l.order_id = o.id WHERE o.status = 'backorder'")]
    since = stock_out_moments(backordered, products)
    return [f"ships {pid} for order {order['id']} placed {order['created_at']}, but {pid} is out of stock and ran out "
            f"at the backorder of {since[pid].isoformat()}: a later order takes a part in stock"
            for pid in shipped_out_of_stock(items, _moment(order["created_at"], world), since)]


def _drawn_digits(carrier: str, number: str) -> str:
    """The digits a carrier drew for ``number`` (its format's ``#`` places: no prefix, service code or check digit)."""
    return "".join(char for char, place in zip(number, TRACKING_FORMATS[carrier], strict=True) if place == "#")


def spells_order(drawn: str, order_id: str) -> str | None:
    """What of ``order_id``'s number the random characters ``drawn`` spell (None: nothing): five digits in a row of
    its ``YYMMDDNNN``, or its sequence ``NNN`` at the end ("txn_…933" for ord-250901-933), as an author writes
    them and no processor or carrier would."""
    number = "".join(re.findall(r"\d", order_id))
    if len(number) != 9:
        return None
    run = next((number[i:i + 5] for i in range(len(number) - 4) if number[i:i + 5] in drawn), None)
    if run is not None:
        return f"the digits {run}"
    return f"the sequence {number[-3:]}" if drawn.endswith(number[-3:]) else None


def _history_start(world: World) -> datetime | None:
    """When the world's order history begins (its first order, world time), or None with no order."""
    first, = world.conn.execute(f"SELECT MIN(created_at) FROM {db.table(models.Order)}").fetchone()
    return None if first is None else db.decode_datetime(first, world.tz)


def _moment(written: object, world: World) -> datetime:
    """A timestamp as written in a setup row (a naive one is in world time)."""
    moment = datetime.fromisoformat(str(written))
    return moment if moment.tzinfo else moment.replace(tzinfo=world.tz)


def _phone_problems(row: dict[str, Any], world: World, seeds: Seeds) -> list[str]:
    phone = row["phone"]
    if phone is None:
        return []
    out = []
    if seeds.fidelity.is_placeholder_phone(phone):
        out.append(f"has phone {phone}, a placeholder number (placeholder_phone in seeds/fidelity.yaml)")
    elif (wrong := seeds.fidelity.phone_problem(phone)) is not None:
        out.append(wrong)
    others = [r[0] for r in world.conn.execute(f"SELECT id FROM {db.table(models.Customer)} WHERE phone = ? "
                                               "AND id != ? ORDER BY id", (phone, row["id"]))]
    if others:
        out.append(f"has phone {phone}, which {', '.join(others)} also {'have' if len(others) > 1 else 'has'}")
    return out
