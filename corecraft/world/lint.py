"""Semantic lint of a world: records that hang together beyond foreign keys and sums.

:mod:`corecraft.world.invariants` proves the world is relationally sound; this module asks
whether a reader would believe it. Each check is a short named function over :class:`Records`
returning :class:`Finding` objects (the entity's id and a sentence); :data:`CHECKS` lists them
and :func:`lint` runs them all. The data they judge by (symptom families per product category,
the outcomes that fit a ticket's issue, shipping geography) is ``seeds/fidelity.yaml``; carrier
SLAs and holidays come from ``seeds/policy.yaml``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from itertools import combinations, pairwise
from typing import Any

from corecraft.world import db, models
from corecraft.world.compat import build_problems, order_problems
from corecraft.world.fidelity import (
    CASUAL_CHANNELS,
    CENT,
    DELIVERY_CLAIM,
    LAST_PICKUP,
    LATE_REFUND_ASKED,
    OFF_THE_QUEUE,
    OLD_PART_DAYS,
    OPEN_TICKET_STATUSES,
    ORDER_ID,
    PRICE_DROP_QUOTE,
    RAW_ID,
    RETURN_FOLLOW_UP,
    TICKET_ID,
    TRACKING,
    WORDING_GAP,
    WORK_WEEK_WORDS,
    Fidelity,
    OrderStory,
    approval_problem,
    asked_at,
    card_problems,
    category_problems,
    claim_problems,
    complained_of,
    complaints_by_product,
    count_problems,
    day_end_problems,
    days_past_window,
    delay_flag_problem,
    delivery_hour_problem,
    duration_problems,
    eta_problem,
    fill_words,
    first_deliveries,
    kb_edit_problems,
    label_created,
    ledger_problems,
    line_price_problem,
    names_first_name,
    order_states,
    ordered_parts,
    origin_problem,
    paid_share,
    pickup_problem,
    price_drops,
    priciest_products,
    reaction_problems,
    received_by,
    received_products,
    reference_problem,
    refund_at_stake,
    repeated_scans,
    restocked,
    rule_shape,
    ship_to_problem,
    shipped_out_of_stock,
    spec_problems,
    stale_dates,
    stale_details,
    status_problems,
    stock_out_moments,
    symptom_problems,
    ticket_handlings,
    ticket_problems,
    ticket_state_problems,
    told_products,
    unearned_tier,
    young_busy_account,
)
from corecraft.world.rules import (
    OFFICE_HOURS,
    SAFETY_RESPONSE,
    TRACKING_FORMATS,
    add_business_days,
    business_days_after,
    closed_line_call,
    is_business_day,
    is_tracking_number,
    max_delay,
    office_time_after,
    silent_stretch,
)
from corecraft.world.seeds import Seeds
from corecraft.world.store import World

HOME_AREA_CODE_SHARE = 0.8
"""The fewest of the customers' phones that carry an area code of the customer's home city, give or take
``HOME_AREA_CODE_SLACK`` phones (a small world's chance): the rest kept the number of a state they moved from
(the generator gives a tenth of them one)."""
HOME_AREA_CODE_SLACK = 2

Row = dict[str, Any]


@dataclass(frozen=True)
class Finding:
    """One problem: the check that found it, the entity it is about, and what is wrong."""

    check: str
    entity_id: str
    message: str


class Records:
    """The world's rows, decoded once, indexed by id, with the lookups the checks share."""

    def __init__(self, world: World, seeds: Seeds) -> None:
        self.rules: Fidelity = seeds.fidelity
        self.ticket_phrases = [p for pools in (seeds.phrases.tickets, seeds.phrases.ticket_reserve)
                               for pool in pools.values() for p in pool]
        """Every phrase a ticket may be written from."""
        self.policy = seeds.policy
        self.now = world.now
        self.tz = world.tz

        def load(model: type[Any]) -> dict[str, Row]:
            rows = (db.decode(model, r, world.tz) for r in world.conn.execute(db.select_all(model) + " ORDER BY id"))
            return {r["id"]: _with_datetimes(r) for r in rows}

        self.customers = load(models.Customer)
        self.employees = load(models.Employee)
        self.channels = load(models.SlackChannel)
        self.products = load(models.Product)
        self.builds = load(models.Build)
        self.orders = load(models.Order)
        self.payments = load(models.Payment)
        self.shipments = load(models.Shipment)
        self.tickets = load(models.SupportTicket)
        self.refunds = load(models.Refund)
        self.escalations = load(models.Escalation)
        self.resolutions = load(models.Resolution)
        self.messages = load(models.SlackMessage)
        self.articles = load(models.KnowledgeBaseArticle)
        self.lines: dict[str, list[Row]] = {}
        for line in load(models.OrderLine).values():
            self.lines.setdefault(line["order_id"], []).append(line)
        self.parts: dict[str, list[str]] = {}
        for part in load(models.BuildComponent).values():
            self.parts.setdefault(part["build_id"], []).append(part["product_id"])
        self.payment_of = {p["order_id"]: p for p in self.payments.values()}
        self.shipment_of = {s["order_id"]: s for s in self.shipments.values()}
        self.orders_of_customer: dict[str, list[Row]] = {}
        for o in self.orders.values():
            self.orders_of_customer.setdefault(o["customer_id"], []).append(o)
        self.first_names = {e: row["name"].split()[0] for e, row in self.employees.items()}
        """Employees' first names by id (how Slack names a colleague)."""
        self.tickets_of: dict[str, list[Row]] = {}
        for t in self.tickets.values():
            if t["order_id"]:
                self.tickets_of.setdefault(t["order_id"], []).append(t)
        self.refunds_of: dict[str, list[Row]] = {}
        for r in self.refunds.values():
            order_id = self.payments[r["payment_id"]]["order_id"]
            self.refunds_of.setdefault(order_id, []).append(r)
        self.line_product = {ln["id"]: ln["product_id"] for lines in self.lines.values() for ln in lines}
        self.replacements_of: dict[str, list[Row]] = {}
        """The no-charge replacement orders of an order (by its id), oldest first."""
        for o in sorted(self.orders.values(), key=lambda o: (o["created_at"], o["id"])):
            if o["replaces_order_id"]:
                self.replacements_of.setdefault(o["replaces_order_id"], []).append(o)
        self.order_of_tracking = {s["tracking_number"]: s["order_id"] for s in self.shipments.values()}
        self.brands: dict[str, set[str]] = {}
        for product in self.products.values():
            self.brands.setdefault(product["brand"], set()).add(product["category"])
        self.handlings = ticket_handlings(self.tickets, self.resolutions.values(), self.escalations.values(),
                                          self.refunds.values())
        """How each ticket was handled (its resolution, escalations and refunds), by ticket id."""
        self.called = seeds.called
        """What staff call each product on Slack, by product id."""
        self._names = [(re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])"), pid) for name, pid in sorted(
            {(str(name), pid) for pid, p in self.products.items() for name in (p["name"], self.called.get(pid, p["name"]))},
            key=lambda x: (-len(x[0]), x))]  # a name stands on its own: "5600X" is not in "PC-CC-SPARK-5600X-B580"

    def dated(self, entity_id: str) -> datetime | None:
        """When the entity came to be (None when there is no such entity)."""
        prefix = entity_id.split("-", 1)[0]
        table, column = _ID_KINDS[prefix]
        row = getattr(self, table).get(entity_id)
        if row is None:
            return None
        return row[column] if row[column] is not None else label_created(row)  # a parcel with its label alone

    def named_products(self, text: str) -> list[Row]:
        """Products ``text`` names, by full name, what staff call it or SKU (longest names first, each span
        once)."""
        found: list[Row] = []
        rest = text
        for name, pid in self._names:
            if name.search(rest):
                if self.products[pid] not in found:  # its full name and what staff call it are one product
                    found.append(self.products[pid])
                rest = name.sub(" ", rest)
        for pid, product in self.products.items():
            if re.search(rf"\b{re.escape(product['sku'])}\b", rest) and product not in found:
                found.append(self.products[pid])
        return found

    def placed_replacement(self, resolution: Row) -> re.Match[str] | None:
        """Where a resolution's details say its replacement order was placed (groups ``date``, ``order_id``)."""
        settled = self.rules.replacement_promise.settlement(resolution["details"])
        return settled[1] if settled and settled[0] == "placed" else None

    def replacement_shipment(self, resolution: Row) -> Row | None:
        """The shipment of the replacement order a resolution's details say was placed, if that order replaces
        its ticket's order and has shipped."""
        placed = self.placed_replacement(resolution)
        order = self.orders.get(placed["order_id"]) if placed else None
        replaces = order is not None and order["replaces_order_id"] == self.tickets[resolution["ticket_id"]]["order_id"]
        ship = self.shipment_of.get(order["id"]) if order is not None and replaces else None
        return ship if ship is not None and ship["shipped_at"] is not None else None

    def written(self, resolution: Row) -> datetime:
        """When a resolution's details were last written: at the latest of its record and the records its
        replacement's settlement names (the details were brought up to date when returns logged the unit)."""
        settled = self.rules.replacement_promise.settlement(resolution["details"])
        named = settled[1].groupdict() if settled else {}
        moments = [self.dated(named[field]) for field in ("order_id", "refund_id") if named.get(field)]
        recorded: datetime = resolution["created_at"]
        return max([recorded, *(moment for moment in moments if moment is not None)])

    def refunds_before(self, order_id: str | None, when: datetime) -> list[Row]:
        """The refunds on ``order_id`` made by ``when``, oldest first."""
        return sorted((x for x in self.refunds_of.get(order_id or "", []) if x["created_at"] <= when),
                      key=lambda x: (x["created_at"], x["id"]))

    def duration_problems(self, text: str, when: datetime, order_id: str | None) -> list[str]:
        """:func:`duration_problems` of ``text`` about ``order_id``'s records at ``when``."""
        refunds = [x["processed_at"] for x in self.refunds_of.get(order_id or "", []) if x["processed_at"]]
        return duration_problems(text, when, self.tz, self.orders.get(order_id or ""),
                                 self.shipment_of.get(order_id or ""), self.payment_of.get(order_id or ""), refunds,
                                 self.policy.carrier_holidays)

    def held(self, ticket: Row) -> list[Row]:
        """The customer's parts a ticket is about: its order's lines and its (or its order's) build's parts."""
        order = self.orders.get(ticket["order_id"] or "")
        builds = (ticket["build_id"], order["build_id"] if order else None)
        return [*(self.products[ln["product_id"]] for ln in self.lines.get(ticket["order_id"] or "", [])),
                *(self.products[pid] for b in builds if b for pid in self.parts.get(b, []))]

    def story(self, text: str) -> OrderStory | None:
        """The records of the order a Slack ``text`` names, by id or by its parcel's tracking number."""
        order_id = next(iter(ORDER_ID.findall(text)), None) or next(
            (self.order_of_tracking[t] for t in TRACKING.findall(text) if t in self.order_of_tracking), None)
        if order_id is None or order_id not in self.orders:
            return None
        refunds = sorted(self.refunds_of.get(order_id, []), key=lambda x: x["created_at"])
        return OrderStory(self.orders[order_id], self.shipment_of.get(order_id), refunds)

    def actor(self) -> str | None:
        """The default task actor: the first Support Agent I (as :meth:`World.first_employee` picks)."""
        return min((e for e, row in self.employees.items() if row["title"] == "Support Agent I"), default=None)

    def texts(self) -> Iterator[tuple[str, str, datetime, str | None]]:
        """Every free text with its author entity, its moment and the order it is about (a Slack message's
        is the one it names by id or by tracking number)."""
        for t in self.tickets.values():
            yield t["id"], f"{t['subject']}\n{t['body']}", t["created_at"], t["order_id"]
        for r in self.resolutions.values():
            yield r["id"], r["details"], self.written(r), self.tickets[r["ticket_id"]]["order_id"]
        for e in self.escalations.values():
            yield e["id"], e["notes"], e["created_at"], self.tickets[e["ticket_id"]]["order_id"]
        for msg in self.messages.values():
            story = self.story(msg["text"])
            yield msg["id"], msg["text"], msg["ts"], story.order["id"] if story else None


_ID_KINDS = {
    "ord": ("orders", "created_at"), "tick": ("tickets", "created_at"), "ship": ("shipments", "shipped_at"),
    "pay": ("payments", "processed_at"), "ref": ("refunds", "created_at"), "res": ("resolutions", "created_at"),
    "esc": ("escalations", "created_at"), "msg": ("messages", "ts"), "build": ("builds", "created_at"),
    "cust": ("customers", "created_at"),
}
_QUOTED_ID = re.compile(r"\b(?:(?:ord|tick|ship|pay|ref|res|esc)-\d{6}-\d{3}|msg-\d{6}-\d{4}[b-z]?|(?:build|cust)-\d{4})\b")


def _with_datetimes(row: Row) -> Row:
    for key in ("created_at", "updated_at", "processed_at", "shipped_at", "eta", "delivered_at", "ts",
                "resolved_at"):
        if isinstance(row.get(key), str):
            row[key] = datetime.fromisoformat(row[key])
    return row


# -- the checks ---------------------------------------------------------------------------------
def causal_references(r: Records) -> list[Finding]:
    """Every id quoted in text exists, is of a kind we know, dates from before the text, and is not
    the text's own entity; a ticket quotes only its own customer's orders, and the order and build it
    is about were placed and saved before it was written."""
    found = []
    for t in r.tickets.values():
        for quoted in (t["order_id"], t["build_id"]):
            dated = r.dated(quoted) if quoted else None
            if dated is not None and dated > t["created_at"]:
                found.append(Finding("causal_references", t["id"], f"is about {quoted}, created {dated:%Y-%m-%d} "
                                     f"after the ticket ({t['created_at']:%Y-%m-%d})"))
    for entity_id, text, when, _ in r.texts():
        for quoted in dict.fromkeys(_QUOTED_ID.findall(text)):
            dated = r.dated(quoted)
            if quoted == entity_id:
                found.append(Finding("causal_references", entity_id, f"quotes its own id {quoted}"))
            elif dated is None:
                found.append(Finding("causal_references", entity_id, f"quotes {quoted}, which does not exist"))
            elif dated > when:
                found.append(Finding("causal_references", entity_id,
                                     f"quotes {quoted}, created {dated:%Y-%m-%d} after the text ({when:%Y-%m-%d})"))
            elif entity_id.startswith("tick-") and quoted.startswith("ord-") \
                    and r.orders[quoted]["customer_id"] != r.tickets[entity_id]["customer_id"]:
                found.append(Finding("causal_references", entity_id, f"quotes {quoted}, another customer's order"))
    return found


def product_symptoms(r: Records) -> list[Finding]:
    """Symptoms described in a ticket or Slack text fit the category of the products it names."""
    found = []
    for entity_id, text, _, order_id in r.texts():
        if entity_id.startswith(("res-", "esc-")):
            continue
        held = {r.products[ln["product_id"]]["category"] for ln in r.lines.get(order_id or "", [])}
        about_order = entity_id.startswith("tick-") and order_id is not None
        found += [Finding("product_symptoms", entity_id, problem)
                  for problem in symptom_problems(text, r.named_products(text), held if about_order else None, r.rules)]
    return found


def _repeats(check: str, rows: Iterable[Row], moment: str, field: str, what: str) -> list[Finding]:
    """Rows whose ``field`` repeats an earlier row's word for word (earliest by ``moment`` counts as first)."""
    seen: dict[str, str] = {}
    found = []
    for row in sorted(rows, key=lambda x: (x[moment], x["id"])):
        first = seen.setdefault(row[field], row["id"])
        if first != row["id"]:
            found.append(Finding(check, row["id"], f"repeats the {what} of {first} word for word"))
    return found


def duplicate_slack_texts(r: Records) -> list[Finding]:
    """No Slack text is posted twice (a copy-paste is a generator's tell, not a person's)."""
    return _repeats("duplicate_slack_texts", r.messages.values(), "ts", "text", "text")


def shipment_routes(r: Records) -> list[Finding]:
    """Parcels are labelled and picked up on business days (an order paid on a weekend or carrier holiday is
    picked the next business day: ``kb-warehouse-network``) and their scans do not zig-zag on the way to the
    destination city (:meth:`~corecraft.world.fidelity.Fidelity.route_problems`: no stop farther from it than
    the warehouse, no leg heading elsewhere, no turning back)."""
    done = {"label_created": "labelled", "picked_up": "picked up"}
    found = []
    for ship in r.shipments.values():
        address = r.orders[ship["order_id"]]["shipping_address"]
        for event in ship["events"]:
            moment = datetime.fromisoformat(event["ts"]).astimezone(r.tz)
            if event["status"] in done and not is_business_day(moment.date(), r.policy.carrier_holidays):
                day = r.policy.carrier_holidays.get(moment.date(), moment.strftime("%A"))
                found.append(Finding("shipment_routes", ship["id"],
                                     f"{done[event['status']]} on {day} ({moment:%Y-%m-%d})"))
        stops = [event["location"] for event in ship["events"]]
        found += [Finding("shipment_routes", ship["id"], problem) for _, problem
                  in r.rules.route_problems(stops, f"{address['city']}, {address['state']}")]
    return found


def shipment_origins(r: Records) -> list[Finding]:
    """A parcel leaves from the warehouse ``kb-warehouse-network`` assigns: the nearest to the address with
    every item in stock (else the nearest with the most)."""
    found = []
    for ship in r.shipments.values():
        order = r.orders[ship["order_id"]]
        wrong = origin_problem(ship["events"], order["shipping_address"],
                               [r.products[ln["product_id"]] for ln in r.lines.get(order["id"], [])], r.rules)
        if wrong is not None:
            found.append(Finding("shipment_origins", ship["id"], wrong))
    return found


def shipment_hub_repeats(r: Records) -> list[Finding]:
    """A carrier hub scans a parcel in transit once, and one scan at a time: the same hub day after day
    (or two hubs at one moment) is no route."""
    return [Finding("shipment_hub_repeats", ship["id"], f"has {n} {what} {shared}") for ship in r.shipments.values()
            for key, what in (("location", "in-transit scans at"), ("ts", "in-transit scans at the moment"))
            for shared, n in repeated_scans(ship["events"], key)]


def shipment_speeds(r: Records) -> list[Finding]:
    """A parcel travels no faster than its service between two scans (``Fidelity.leg_speed_problem``: by road
    for ground, by air for express and overnight)."""
    found = []
    for ship in r.shipments.values():
        scans = [(datetime.fromisoformat(e["ts"]), e["location"]) for e in ship["events"]]
        found += [Finding("shipment_speeds", ship["id"], problem) for (left, start), (reached, end) in pairwise(scans)
                  if (problem := r.rules.leg_speed_problem(start, left, end, reached, ship["carrier"])) is not None]
    return found


def shipment_business_days(r: Records) -> list[Finding]:
    """An ETA is the carrier's SLA in business days after shipping (weekends and carrier holidays
    skipped, as the handbook counts), a late parcel arrives at most :func:`max_delay` business days after
    it, and no carrier scans a parcel in transit, out for delivery or delivered on a weekend or a carrier
    holiday."""
    found = []
    holidays = r.policy.carrier_holidays
    for ship in r.shipments.values():
        sla = r.policy.shipping[ship["carrier"]].sla_business_days
        if ship["eta"] is not None and ship["shipped_at"] is not None and \
                (problem := eta_problem(ship["shipped_at"], ship["eta"], sla, holidays)):
            found.append(Finding("shipment_business_days", ship["id"], problem))
        delivered = ship["delivered_at"]
        late = business_days_after(ship["eta"].date(), delivered.date(), holidays) \
            if delivered is not None and ship["eta"] is not None and delivered > ship["eta"] else 0
        if late > max_delay(sla):
            found.append(Finding("shipment_business_days", ship["id"], f"delivered {delivered:%Y-%m-%d}, {late} business "
                                 f"days after its ETA; a {sla}-day service runs at most {max_delay(sla)} late"))
        if delivered is not None and not is_business_day(delivered.date(), holidays):
            found.append(Finding("shipment_business_days", ship["id"], f"delivered on "
                                 f"{holidays.get(delivered.date(), delivered.strftime('%A'))} ({delivered:%Y-%m-%d})"))
        for event in ship["events"]:
            moment = datetime.fromisoformat(event["ts"]).astimezone(r.tz)
            if event["status"] in CARRIER_DAY_SCANS and not is_business_day(moment.date(), holidays):
                day = holidays.get(moment.date(), moment.strftime("%A"))
                found.append(Finding("shipment_business_days", ship["id"],
                                     f"has a {event['status']} scan on {day} ({moment:%Y-%m-%d})"))
    return found


def shipment_silences(r: Records) -> list[Finding]:
    """A parcel on the road is scanned at least every :data:`~corecraft.world.rules.SILENT_BUSINESS_DAYS` business
    days, from its pickup to its delivery (or to now, on its way): a longer silence is what
    ``kb-shipment-tracking-events`` opens a carrier trace for, which no generated parcel calls for. Its first scan
    after the pickup comes within :data:`~corecraft.world.rules.FIRST_SCAN_BUSINESS_DAYS` (the carrier sorts it
    the night after), not days later."""
    found = []
    for ship in r.shipments.values():
        scans = [datetime.fromisoformat(e["ts"]).astimezone(r.tz) for e in ship["events"]
                 if e["status"] != "label_created"]
        if (stretch := silent_stretch(scans, None if ship["delivered_at"] else r.now.astimezone(r.tz),
                                      r.policy.carrier_holidays)) is not None:
            found.append(Finding("shipment_silences", ship["id"], f"has no scan from {stretch[0]:%Y-%m-%d %H:%M} to "
                                 f"{stretch[1]:%Y-%m-%d %H:%M}, more than {stretch[2]} business days"))
    return found


CARRIER_DAY_SCANS = ("in_transit", "out_for_delivery")
"""Carrier scans made only on carrier business days (pickups: :func:`shipment_routes`; deliveries: ``delivered_at``)."""


def shipment_ship_dates(r: Records) -> list[Finding]:
    """A shipment's ``shipped_at`` is its ``picked_up`` scan: the ship date ``kb-shipment-tracking-events``
    counts SLAs from (the label is printed earlier, and the carrier does not have the parcel yet), so a parcel with
    only its label has none; and the pickup keeps the dock's day (:func:`~corecraft.world.fidelity.pickup_problem`)."""
    found = []
    for ship in r.shipments.values():
        pickup = next((datetime.fromisoformat(e["ts"]) for e in ship["events"] if e["status"] == "picked_up"), None)
        if pickup is None or ship["shipped_at"] is None:
            if pickup is not None or ship["shipped_at"] is not None:
                found.append(Finding("shipment_ship_dates", ship["id"], f"has shipped_at {ship['shipped_at']} and "
                                     f"pickup scan {pickup}: the ship date is the pickup, none before it"))
            continue
        if pickup != ship["shipped_at"]:
            found.append(Finding("shipment_ship_dates", ship["id"], f"shipped_at {ship['shipped_at']:%Y-%m-%d %H:%M} "
                                 f"is not its pickup scan ({pickup.astimezone(r.tz):%Y-%m-%d %H:%M})"))
        labelled = datetime.fromisoformat(ship["events"][0]["ts"]).astimezone(r.tz) if ship["events"] else None
        if (problem := pickup_problem(labelled, ship["shipped_at"].astimezone(r.tz))) is not None:
            found.append(Finding("shipment_ship_dates", ship["id"], problem))
    return found


CLOCK_SHARE = 0.05
"""The most parcels (a share of all) whose label, pickup or out-for-delivery scan may fall on one minute of the day."""


def shipment_clocks(r: Records) -> list[Finding]:
    """Parcels are scanned when the day's work reaches them, each at its own minute: no minute of the day holds more
    than :data:`CLOCK_SHARE` of the parcels' labels, pickups or deliveries out (the carrier's last collection at
    18:00 aside), where a plain clock once put hundreds on 09:00, 13:00 and 08:05."""
    seen: dict[tuple[str, str], list[str]] = defaultdict(list)  # parcels by (scan, minute of the day)
    for ship in sorted(r.shipments.values(), key=lambda s: s["id"]):
        for e in ship["events"]:
            if e["status"] in ("label_created", "picked_up", "out_for_delivery"):
                seen[(e["status"], f"{datetime.fromisoformat(e['ts']).astimezone(r.tz):%H:%M}")].append(ship["id"])
    most = max(10, int(CLOCK_SHARE * len(r.shipments)))
    return [Finding("shipment_clocks", ships[0], f"is one of {len(ships)} parcels with their {status} scan at {clock}")
            for (status, clock), ships in sorted(seen.items()) if len(ships) > most
            and (status, clock) != ("picked_up", f"{LAST_PICKUP:%H:%M}")]


HUB_ON_THE_HOUR_SHARE = 0.04
"""The most of the in-transit scans that may fall on the hour: by chance one in sixty does (1.7%), and a hub's
scans stepped in whole hours from a label on the hour once put 5.6% there. A small world may have up to three."""


def hub_scan_minutes(r: Records) -> list[Finding]:
    """A hub scans a parcel when the parcel comes, at any minute: no more than :data:`HUB_ON_THE_HOUR_SHARE` of the
    in-transit scans fall on the hour."""
    minutes = [datetime.fromisoformat(e["ts"]).minute for ship in r.shipments.values() for e in ship["events"]
               if e["status"] == "in_transit"]
    on_the_hour = sum(minute == 0 for minute in minutes)
    if on_the_hour <= max(3, HUB_ON_THE_HOUR_SHARE * len(minutes)):
        return []
    return [Finding("hub_scan_minutes", "shipment", f"{on_the_hour} of {len(minutes)} in-transit scans "
                    f"({on_the_hour / len(minutes):.1%}) fall on the hour, more than "
                    f"{HUB_ON_THE_HOUR_SHARE:.0%}")]


STAFF_NIGHT_SHARE = 0.05
"""The most of what staff did (resolutions, refunds, escalations made or settled) that may fall outside office
hours: a day's records keep their moments when moving them would cross a record about their order."""


def staff_hours(r: Records) -> list[Finding]:
    """Staff work in office hours (:data:`~corecraft.world.rules.OFFICE_HOURS`, world time): no more than
    :data:`STAFF_NIGHT_SHARE` of the resolutions, refunds and escalations are made (or settled) outside them, where
    half of them once were (a ticket resolved at 02:44)."""
    opens, closes = OFFICE_HOURS
    moments = [(table, row["id"], row[key]) for table, rows, keys in (
        ("resolution", r.resolutions, ("created_at",)), ("refund", r.refunds, ("created_at",)),
        ("escalation", r.escalations, ("created_at", "resolved_at"))) for row in rows.values() for key in keys
        if row.get(key) is not None]
    night = [(table, rid, when) for table, rid, when in moments if not opens <= when.astimezone(r.tz).hour < closes]
    if len(night) <= max(5, STAFF_NIGHT_SHARE * len(moments)):
        return []
    table, rid, when = night[0]
    return [Finding("staff_hours", rid, f"is one of {len(night)} of {len(moments)} staff records made outside office "
                                        f"hours (this {table} at {when.astimezone(r.tz):%H:%M})")]


SCAN_ORDER = ("label_created", "picked_up")
"""The scans every shipment starts with, in this order; the carrier's other scans follow the pickup."""


def shipment_scans(r: Records) -> list[Finding]:
    """Every shipment starts with ``label_created`` then, once it has a ship date, ``picked_up`` (one the carrier
    has not collected has its label alone), its scans are in
    time order, a ``delayed`` scan is made where the parcel is (the place of the scan before it), not in
    "carrier network", and not before the day of its ETA (a parcel is late once it misses it), one delivered after
    its ETA's day has one (:func:`~corecraft.world.fidelity.delay_flag_problem`), a label is not printed the
    very minute the payment was captured (someone picks the order first), and a parcel is delivered by the time the
    carriers' delivery rounds end, the day its truck left that morning
    (:func:`~corecraft.world.fidelity.delivery_hour_problem`)."""
    found = []
    for ship in r.shipments.values():
        statuses = [e["status"] for e in ship["events"]]
        moments = [datetime.fromisoformat(e["ts"]) for e in ship["events"]]
        paid = (r.payment_of.get(ship["order_id"]) or {}).get("processed_at")
        if moments and paid is not None and moments[0] == paid:
            found.append(Finding("shipment_scans", ship["id"], f"is labelled at {moments[0]:%Y-%m-%d %H:%M}, the minute "
                                 "its payment was captured"))
        found += [Finding("shipment_scans", ship["id"], f"has a delayed scan at {now['location']}, but the parcel "
                          f"was last scanned at {before['location']}")
                  for before, now in pairwise(ship["events"])
                  if now["status"] == "delayed" and now["location"] != before["location"]]
        found += [Finding("shipment_scans", ship["id"], f"is scanned delayed on {e['ts'][:10]}, before its ETA "
                          f"({ship['eta']:%Y-%m-%d})")
                  for e in ship["events"] if e["status"] == "delayed" and ship["eta"] is not None
                  and datetime.fromisoformat(e["ts"]).astimezone(r.tz).date() < ship["eta"].astimezone(r.tz).date()]
        if ship["shipped_at"] is None and statuses != list(SCAN_ORDER[:1]):
            found.append(Finding("shipment_scans", ship["id"], f"has no ship date but scans "
                                 f"{' > '.join(statuses) or 'none'}, not its label alone"))
        elif ship["shipped_at"] is not None and tuple(statuses[:2]) != SCAN_ORDER:
            found.append(Finding("shipment_scans", ship["id"], f"has a ship date ({ship['shipped_at']:%Y-%m-%d}) but "
                                 f"its scans begin {' > '.join(statuses[:3]) or 'with none'}, not label_created > "
                                 "picked_up"))
        if moments != sorted(moments):
            found.append(Finding("shipment_scans", ship["id"], f"has scans out of time order ({' > '.join(statuses)})"))
        if (problem := delay_flag_problem(statuses, ship["eta"] and ship["eta"].astimezone(r.tz),
                                          ship["delivered_at"] and ship["delivered_at"].astimezone(r.tz))):
            found.append(Finding("shipment_scans", ship["id"], problem))
        trucks = [moment for status, moment in zip(statuses, moments, strict=True) if status == "out_for_delivery"]
        if problem := delivery_hour_problem(ship["delivered_at"] and ship["delivered_at"].astimezone(r.tz),
                                            trucks[-1].astimezone(r.tz) if trucks else None):
            found.append(Finding("shipment_scans", ship["id"], problem))
    return found


def shipment_exceptions(r: Records) -> list[Finding]:
    """A shipment in status ``exception`` has an exception event, and every exception event says what went wrong
    (its ``description``, which ``kb-shipment-tracking-events`` has the agent read)."""
    found = [Finding("shipment_exceptions", s["id"], "is in status exception but no event records an exception")
             for s in r.shipments.values()
             if s["status"] == "exception" and not any(e["status"] == "exception" for e in s["events"])]
    return found + [Finding("shipment_exceptions", s["id"], f"has an exception scan at {e['ts']} with no description "
                                                            "of what went wrong")
                    for s in r.shipments.values() for e in s["events"]
                    if e["status"] == "exception" and not e.get("description")]


def order_prices(r: Records) -> list[Finding]:
    """Each order line's unit price is the product's price when ordered (its price history, if any), and $0
    on a no-charge replacement order (``replaces_order_id``), and only there."""
    return [Finding("order_prices", line["id"], wrong) for order in r.orders.values()
            for line in r.lines.get(order["id"], [])
            if (wrong := line_price_problem(line, r.products[line["product_id"]], order["created_at"],
                                            order["replaces_order_id"])) is not None]


def price_change_moments(r: Records) -> list[Finding]:
    """A price changes at a plausible moment (on the hour or half-hour, by now), not at the minute of an order
    of the product: a step ending within half an hour of a sale looks made to fit that sale."""
    sales: dict[str, list[datetime]] = {}
    for order in r.orders.values():
        if order["replaces_order_id"]:  # sent at no charge: not a sale
            continue
        for line in r.lines.get(order["id"], []):
            sales.setdefault(line["product_id"], []).append(order["created_at"])
    found = []
    for product in r.products.values():
        for step in product["specs"].get("price_history", []):
            until = datetime.fromisoformat(step["until"])
            near = [o for o in sales.get(product["id"], []) if abs(o - until) < timedelta(minutes=30)]
            if until.minute % 30 or until.second or until > r.now or near:
                found.append(Finding("price_change_moments", product["id"], f"price ${step['price']:.2f} ends at "
                                     f"{step['until']}" + (f", {len(near)} order(s) of it within 30 minutes" if near else
                                                           " (not on the hour or half-hour, or after now)")))
    return found


def price_steps(r: Records) -> list[Finding]:
    """A past price is shaped like a shelf price (``retail_cents``: $527.00, $109.99, not $1,033.71) and, once
    set, holds ``price_step_days`` or more before the next change (a sale lasts days, not hours)."""
    found = []
    for product in r.products.values():
        previous: datetime | None = None
        for step in product["specs"].get("price_history", []):
            until = datetime.fromisoformat(step["until"])
            if round(step["price"] * 100) % 100 not in r.rules.retail_cents:
                found.append(Finding("price_steps", product["id"], f"sold at ${step['price']:,.2f} until "
                                     f"{until:%Y-%m-%d}, not a shelf price (cents {r.rules.retail_cents})"))
            if previous is not None and until - previous < timedelta(days=r.rules.price_step_days):
                found.append(Finding("price_steps", product["id"], f"sold at ${step['price']:,.2f} for only "
                                     f"{(until - previous).total_seconds() / 3600:.0f} hours (until {until:%Y-%m-%d %H:%M})"))
            previous = until
    return found


REPEAT_ORDER_LINES = 3
"""Two orders of one customer placed within ``repeat_order_days`` of each other may not share
``REPEAT_ORDER_LINES`` or more products making three quarters of the smaller order: nobody buys the same PC
twice in a season."""


def repeat_orders(r: Records) -> list[Finding]:
    """A customer does not order (nearly) the same full set of parts again within ``repeat_order_days``."""
    by_customer: dict[str, list[Row]] = {}
    for order in sorted(r.orders.values(), key=lambda o: (o["created_at"], o["id"])):
        by_customer.setdefault(order["customer_id"], []).append(order)
    found = []
    for orders in by_customer.values():
        for k, order in enumerate(orders):
            parts = {ln["product_id"] for ln in r.lines.get(order["id"], [])}
            for earlier in orders[:k]:
                before = {ln["product_id"] for ln in r.lines.get(earlier["id"], [])}
                shared = len(parts & before)
                if shared >= REPEAT_ORDER_LINES and shared * 4 >= 3 * min(len(parts), len(before)) \
                        and order["created_at"] - earlier["created_at"] <= timedelta(days=r.rules.repeat_order_days):
                    days = (order["created_at"] - earlier["created_at"]).days
                    found.append(Finding("repeat_orders", order["id"], f"repeats {shared} of the {len(before)} "
                                         f"products of {earlier['id']}, ordered {days} days before by the same customer"))
    return found


def price_adjustments(r: Records) -> list[Finding]:
    """A price adjustment refunds a real drop: a product of the order sold for less within
    ``price_adjustment_days`` of the order (its price history), by (paid - lower price) x quantity for the
    line; the ticket asking for it quotes that amount. A ticket quoting a drop on our site is not answered that the
    price history shows none (its customer saw the lower price elsewhere: it says so)."""
    found = []
    adjusted: set[str] = set()
    for ref in sorted(r.refunds.values(), key=lambda x: (x["created_at"], x["id"])):
        if ref["reason"] != "price_adjustment":
            continue
        order = r.orders[r.payments[ref["payment_id"]]["order_id"]]
        drops = price_drops([ln for ln in r.lines.get(order["id"], []) if ln["id"] not in adjusted], r.products,
                            order, ref["created_at"], r.policy.price_adjustment_days)
        line = next((line for line, amount in drops if abs(amount - ref["amount"]) < CENT), None)
        if line is not None:
            adjusted.add(line["id"])
        else:
            shown = ", ".join(f"{line['product_id']} ${amount:.2f}" for line, amount in drops) or "none"
            found.append(Finding("price_adjustments", ref["id"], f"refunds ${ref['amount']:.2f} on {order['id']} as a "
                                 f"price adjustment; price drops within {r.policy.price_adjustment_days} days "
                                 f"not adjusted before: {shown}"))
        ticket = r.tickets.get(ref["ticket_id"] or "")
        quoted = PRICE_DROP_QUOTE.findall(f"{ticket['subject']}\n{ticket['body']}") if ticket else []
        found += [Finding("price_adjustments", ticket["id"], f"says it is ${q} cheaper, but {ref['id']} refunds "
                          f"${ref['amount']:.2f}") for q in quoted
                  if ticket and abs(float(q.replace(",", "")) - ref["amount"]) >= CENT]
    no_drop = r.rules.issues["price_drop"].details.get("no_action", [])
    for res in r.resolutions.values():
        ticket = r.tickets[res["ticket_id"]]
        if res["outcome"] == "no_action" and any(said in res["details"] for said in no_drop) and (
                claim := PRICE_DROP_QUOTE.search(f"{ticket['subject']}\n{ticket['body']}")):
            found.append(Finding("price_adjustments", ticket["id"], f"says it is {claim.group(0)} on our site, but "
                                 f"{res['id']} finds no drop in the price history: one of them is wrong"))
    return found


def order_compatibility(r: Records) -> list[Finding]:
    """An order whose core parts cannot work together (``order_problems``: as a build, and one platform per
    basket) is not left looking fine: some ticket is about it."""
    found = []
    for order in r.orders.values():
        problems = order_problems([r.products[ln["product_id"]] for ln in r.lines.get(order["id"], [])])
        if problems and not any(t["type"] in ("return", "troubleshooting") for t in r.tickets_of.get(order["id"], [])):
            found.append(Finding("order_compatibility", order["id"],
                                 f"ships parts that cannot work together ({problems[0]['message']}) and no "
                                 "ticket says so"))
    return found


def stock_outs(r: Records) -> list[Finding]:
    """A part out of stock today ran out once, when the first order left on backorder for it was placed: no
    order taking its stock (it, or a prebuilt built with it: ``stocked_parts``) ships after that."""
    since = stock_out_moments(((order["created_at"], r.products[line["product_id"]])
                               for order in r.orders.values() if order["status"] == "backorder"
                               for line in r.lines.get(order["id"], [])), r.products)
    return [Finding("stock_outs", order["id"], f"ships {pid}, out of stock since the backorder of {since[pid]:%Y-%m-%d}")
            for order in r.orders.values() if order["id"] in r.shipment_of
            for pid in shipped_out_of_stock((r.products[line["product_id"]] for line in r.lines.get(order["id"], [])),
                                            order["created_at"], since)]


def backorder_ages(r: Records) -> list[Finding]:
    """An order still on backorder today was placed within ``backorder_kept_days``: an older one's part came back
    in stock and it shipped (a store does not leave an order waiting for a year and a half)."""
    kept = timedelta(days=r.rules.backorder_kept_days)
    return [Finding("backorder_ages", o["id"], f"on backorder since {o['created_at']:%Y-%m-%d}, "
                    f"{(r.now - o['created_at']).days} days (at most {kept.days})")
            for o in r.orders.values() if o["status"] == "backorder" and r.now - o["created_at"] > kept]


def build_dates(r: Records) -> list[Finding]:
    """A build exists before any order made from it."""
    return [Finding("build_dates", o["id"], f"orders build {o['build_id']}, created "
                    f"{r.builds[o['build_id']]['created_at']:%Y-%m-%d} after the order ({o['created_at']:%Y-%m-%d})")
            for o in r.orders.values()
            if o["build_id"] and r.builds[o["build_id"]]["created_at"] > o["created_at"]]


def build_themes(r: Records) -> list[Finding]:
    """A build named for a theme (``build_themes``: "budget esports", "4K gaming" ...) holds parts of it, and an
    internal reference build passes the compatibility rules (a customer's may not: that is their mistake)."""
    found = []
    for build in r.builds.values():
        parts = [r.products[pid] for pid in r.parts.get(build["id"], [])]
        found += [Finding("build_themes", build["id"], f"is named {build['name']!r} but its parts are not a {theme} build")
                  for theme, rule in r.rules.build_themes.items()
                  if re.search(rf"\b{re.escape(theme)}\b", build["name"]) and not rule.fits(parts)]
        problems = build_problems(parts) if build["owner_type"] == "internal" else []
        if problems:
            found.append(Finding("build_themes", build["id"], f"is a reference build of incompatible parts: "
                                 f"{problems[0]['message']}"))
    return found


def text_durations(r: Records) -> list[Finding]:
    """Durations and dates quoted in tickets and Slack agree with the records they are about (a ticket about
    no order: with one of its customer's earlier orders)."""
    found = []
    for entity_id, text, when, order_id in r.texts():
        ticket = r.tickets.get(entity_id)
        quoted = [o["id"] for o in r.orders_of_customer.get(ticket["customer_id"], [])
                  if o["created_at"] < when] if ticket is not None and order_id is None else []
        found += [Finding("text_durations", entity_id, problem) for problem in min(
            (r.duration_problems(text, when, about) for about in [order_id, *quoted]), key=len)]
    return found


def card_claims(r: Records) -> list[Finding]:
    """A ticket or Slack post speaks of the card an order was paid with ("a different card", "on my card") only
    when the order it is about was paid by card or a card wallet (``card_methods``), not by PayPal or transfer."""
    return [Finding("card_claims", entity_id, problem) for entity_id, text, _, order_id in r.texts()
            if not entity_id.startswith(("res-", "esc-"))
            for problem in card_problems(text, r.payment_of.get(order_id or ""), r.rules)]


def delivery_claims(r: Records) -> list[Finding]:
    """A ticket that speaks of the parcel as arrived is about an order delivered before it was written."""
    found = []
    for t in r.tickets.values():
        claim = DELIVERY_CLAIM.search(f"{t['subject']}\n{t['body']}")
        if not t["order_id"] or not claim:
            continue
        ship = r.shipment_of.get(t["order_id"])
        delivered = ship["delivered_at"] if ship else None
        if delivered is None or delivered > t["created_at"]:
            found.append(Finding("delivery_claims", t["id"], f"says {claim.group(0)!r} but order {t['order_id']} "
                                 "had not been delivered when the ticket was written"))
    return found


def outcome_fit(r: Records) -> list[Finding]:
    """Resolutions, refund reasons and escalations fit the issue the ticket is about."""
    found = []
    rules = r.rules
    fits = {t["id"]: rules.fit(t["type"], f"{t['subject']}\n{t['body']}") for t in r.tickets.values()}
    for res in r.resolutions.values():
        if res["outcome"] not in fits[res["ticket_id"]].outcomes:
            found.append(Finding("outcome_fit", res["id"], f"resolves {res['ticket_id']} "
                                 f"({r.tickets[res['ticket_id']]['subject']!r}) with {res['outcome']}"))
    for ref in r.refunds.values():
        if ref["ticket_id"] and ref["reason"] not in fits[ref["ticket_id"]].refund_reasons:
            found.append(Finding("outcome_fit", ref["id"], f"refunds {ref['ticket_id']} "
                                 f"({r.tickets[ref['ticket_id']]['subject']!r}) as {ref['reason']}"))
    for esc in r.escalations.values():
        if esc["type"] not in fits[esc["ticket_id"]].escalations:
            found.append(Finding("outcome_fit", esc["id"], f"escalates {esc['ticket_id']} "
                                 f"({r.tickets[esc['ticket_id']]['subject']!r}) as {esc['type']}"))
    return found


def ledger_claims(r: Records) -> list[Finding]:
    """Slack says a refund happened only when the ledger holds it (same order, amount or reason, earlier)."""
    found = []
    for msg in r.messages.values():
        order_id = next(iter(ORDER_ID.findall(msg["text"])), None)
        if order_id:
            refunds = [x for x in r.refunds_of.get(order_id, []) if x["created_at"] <= msg["ts"]]
            found += [Finding("ledger_claims", msg["id"], f"{problem} on {order_id}")
                      for problem in ledger_problems(msg["text"], refunds)]
    return found


def product_launches(r: Records) -> list[Finding]:
    """Nothing is ordered, built or talked about before the product came out (``specs.released``)."""
    def launch(product: Row) -> date:
        return date.fromisoformat(product["specs"]["released"])

    found = []
    for order in r.orders.values():
        day = order["created_at"].astimezone(r.tz).date()
        found += [Finding("product_launches", order["id"], f"orders {p['id']} on {day}, before its release "
                          f"({launch(p)})") for ln in r.lines.get(order["id"], [])
                  if launch(p := r.products[ln["product_id"]]) > day]
    for build in r.builds.values():
        day = build["created_at"].astimezone(r.tz).date()
        found += [Finding("product_launches", build["id"], f"holds {pid}, saved {day} before its release "
                          f"({launch(r.products[pid])})") for pid in r.parts.get(build["id"], [])
                  if launch(r.products[pid]) > day]
    for entity_id, text, when, _ in r.texts():
        day = when.astimezone(r.tz).date()
        found += [Finding("product_launches", entity_id, f"names {p['name']} on {day}, before its release "
                          f"({launch(p)})") for p in r.named_products(text) if launch(p) > day]
        quoted = [r.tickets[t] for t in TICKET_ID.findall(text) if t in r.tickets and t != entity_id]
        asked = min((t["created_at"].astimezone(r.tz).date() for t in quoted), default=day)
        found += [Finding("product_launches", entity_id, f"quotes a ticket of {asked} about {p['name']}, released "
                          f"{launch(p)}") for p in r.named_products(text) if asked < launch(p) <= day]
    return found


def shipping_service_areas(r: Records) -> list[Finding]:
    """Orders ship with a service that reaches their state (``unserved_states``: no UPS Ground to Hawaii)."""
    return [Finding("shipping_service_areas", o["id"], f"{o['shipping_method']} to {state}, which it does not serve")
            for o in r.orders.values()
            if r.rules.shipping_method(o["shipping_method"], state := o["shipping_address"]["state"])
            != o["shipping_method"]]


def prospective_products(r: Records) -> list[Finding]:
    """A ticket about a part the customer may get (``prospective_product``) names none they already hold."""
    found = []
    for t in r.tickets.values():
        text = f"{t['subject']}\n{t['body']}"
        if not r.rules.prospective(text):
            continue
        held = {p["id"] for p in r.held(t)}
        found += [Finding("prospective_products", t["id"], f"thinks of getting {p['name']}, which it already holds")
                  for p in r.named_products(text) if p["id"] in held]
    return found


def addresses(r: Records) -> list[tuple[str, dict[str, Any]]]:
    """Every postal address with the id of the record holding it: customers' address books, orders' ship-to."""
    return [*((c["id"], a) for c in r.customers.values() for a in c["addresses"]),
            *((o["id"], o["shipping_address"]) for o in r.orders.values())]


def address_zips(r: Records) -> list[Finding]:
    """Addresses are in one of the 50 states or DC, the zip code belongs to that state (``zip_prefixes``), the
    city is a real one of that state (``cities``, not a Faker town like "Port Kristin") and the zip is one of
    that city's (Naperville 60548 is Sandwich's)."""
    return [Finding("address_zips", owner, problem) for owner, address in addresses(r)
            if (problem := r.rules.address_problem(address)) is not None]


def work_addresses(r: Records) -> list[Finding]:
    """A customer's workplace is within a commute of home: in the home's city or one of the nearest others of its
    state (``Fidelity.commute_cities``), not across the country."""
    found = []
    for customer in r.customers.values():
        home = next((a for a in customer["addresses"] if a.get("label") == "home"), None)
        for work in (a for a in customer["addresses"] if a.get("label") == "work"):
            if home is None or home["state"] not in r.rules.cities or home["city"] not in r.rules.cities[home["state"]]:
                continue  # an address that is no real city is address_zips' finding
            near = r.rules.commute_cities(home["city"], home["state"])
            if work["state"] != home["state"] or work["city"] not in near:
                found.append(Finding("work_addresses", customer["id"], f"works in {work['city']}, {work['state']}, "
                                     f"far from home in {home['city']}, {home['state']} (near: {', '.join(near)})"))
    return found


def street_names(r: Records) -> list[Finding]:
    """Street lines are a house number, a common street name and a street type (``streets``), not Faker's
    invented "293 Moran Glens Suite 950", and a work address has no apartment."""
    found = [Finding("street_names", owner, problem) for owner, address in addresses(r)
             if (problem := r.rules.streets.problem(str(address.get("line1")))) is not None]
    return found + [Finding("street_names", owner, f"has a work address with an apartment ({address['line1']})")
                    for owner, address in addresses(r)
                    if address.get("label") == "work" and r.rules.streets.is_home_unit(str(address.get("line1")))]


def order_addresses(r: Records) -> list[Finding]:
    """Every order ships to an address in its customer's address book, as written there."""
    return [Finding("order_addresses", o["id"], problem) for o in r.orders.values()
            if (problem := ship_to_problem(o["shipping_address"], r.customers[o["customer_id"]]["addresses"]))]


def earned_tiers(r: Records) -> list[Finding]:
    """A customer with a loyalty tier opened the account before the order history began (:func:`unearned_tier`)."""
    if not r.orders:
        return []
    first = min(o["created_at"] for o in r.orders.values())
    return [Finding("earned_tiers", c["id"], problem) for c in r.customers.values()
            if (problem := unearned_tier(c, first)) is not None]


def account_ages(r: Records) -> list[Finding]:
    """An account opened once the order history runs has fewer than
    :data:`~corecraft.world.rules.ESTABLISHED_ORDERS` orders on record: a new customer's first months bring a few,
    and a busier account is a returning customer's, opened before
    (:func:`~corecraft.world.fidelity.young_busy_account`)."""
    if not r.orders:
        return []
    first = min(o["created_at"] for o in r.orders.values())
    orders = Counter(o["customer_id"] for o in r.orders.values())
    return [Finding("account_ages", c["id"], problem) for c in r.customers.values()
            if (problem := young_busy_account(c, orders[c["id"]], first)) is not None]


def customer_phones(r: Records) -> list[Finding]:
    """Customers' phones carry real US area codes (a listed city's, not Bermuda's 441), and at least
    :data:`HOME_AREA_CODE_SHARE` of them one of the customer's home city: when fewer do, every phone from
    elsewhere is a finding."""
    found, away = [], []
    phoned = [c for c in r.customers.values() if c["phone"]]
    for customer in phoned:
        phone = customer["phone"]
        if (problem := r.rules.phone_problem(phone)) is not None:
            found.append(Finding("customer_phones", customer["id"], problem))
            continue
        home = next((a for a in customer["addresses"] if a["label"] == "home"), customer["addresses"][0])
        if int(phone[1:4]) not in r.rules.area_codes(home["city"], home["state"]):
            away.append((customer, home))
    if len(away) > (1 - HOME_AREA_CODE_SHARE) * len(phoned) + HOME_AREA_CODE_SLACK:
        found += [Finding("customer_phones", customer["id"], f"has phone {customer['phone']}, an area code of "
                          f"{'/'.join(sorted(r.rules.area_code_states[int(customer['phone'][1:4])]))}, not of "
                          f"{home['city']}, {home['state']}: {len(away)} of {len(phoned)} phones are not their home "
                          f"city's (at most {1 - HOME_AREA_CODE_SHARE:.0%} may be)") for customer, home in away]
    return found


def slack_claims(r: Records) -> list[Finding]:
    """What Slack says happened to a named order or parcel (``slack_claims``) its records bear out as of
    the message: the event, its carrier, warehouse, tracking number and amount, and who made a refund the
    author says they made (the ledger's approver); events no record can
    hold (interceptions, splits, lost parcels, ...) are never pinned on an order."""
    return [Finding("slack_claims", msg["id"], problem) for msg in r.messages.values()
            for problem in claim_problems(msg["text"], msg["ts"], r.story(msg["text"]), r.rules, msg["author_id"],
                                          r.first_names)]


def brand_categories(r: Records) -> list[Finding]:
    """A brand named with a category in ticket or Slack text ("WD motherboard") makes that category in the
    catalogue (``category_words``)."""
    texts = [*((t["id"], f"{t['subject']}\n{t['body']}") for t in r.tickets.values()),
             *((msg["id"], msg["text"]) for msg in r.messages.values())]
    return [Finding("brand_categories", entity_id, problem) for entity_id, text in texts
            for problem in r.rules.brand_category_problems(text, r.brands)]


def safety_escalations(r: Records) -> list[Finding]:
    """A triaged ticket (not ``new``) reporting a safety issue (``safety_issue``: burning smell, sparks,
    smoke ...) is escalated ``technical`` to engineering, as the KB says, within the hour of office time a high
    priority ticket's first response is due in."""
    technical: dict[str, Row] = {}
    for e in sorted(r.escalations.values(), key=lambda e: e["created_at"]):
        if e["type"] == "technical":
            technical.setdefault(e["ticket_id"], e)
    found = []
    for t in r.tickets.values():
        if t["status"] == "new" or not r.rules.safety(f"{t['subject']}\n{t['body']}"):
            continue
        escalation = technical.get(t["id"])
        due = office_time_after(t["created_at"].astimezone(r.tz), SAFETY_RESPONSE, r.policy.carrier_holidays)
        if escalation is None:
            found.append(Finding("safety_escalations", t["id"], "reports a safety issue but has no technical escalation"))
        elif escalation["created_at"] > due:
            hours = (escalation["created_at"] - t["created_at"]).total_seconds() / 3600
            found.append(Finding("safety_escalations", t["id"], f"reports a safety issue but was escalated "
                                 f"{hours:.0f} hours later ({escalation['id']}), past its first response's "
                                 f"hour of office time"))
    return found


def tracking_numbers(r: Records) -> list[Finding]:
    """A shipment's tracking number is real-shaped for its carrier (``TRACKING_FORMATS``): UPS's 18-character 1Z
    number with its check digit, a USPS 22-digit package barcode with its check digit, FedEx 12 digits."""
    return [Finding("tracking_numbers", ship["id"], f"has {ship['carrier']} tracking number {ship['tracking_number']}, "
                    f"not in the format {TRACKING_FORMATS.get(ship['carrier'], 'of a carrier we ship with')} "
                    "(# a digit, % the check digit)")
            for ship in r.shipments.values() if not is_tracking_number(ship["carrier"], ship["tracking_number"])]


def ticket_priorities(r: Records) -> list[Finding]:
    """A triaged ticket (not ``new``) has the KB's priority: high for a DOA item or a safety issue in its
    words (``high_priority``), an order over $2,000 or a platinum customer; low for a general question."""
    found = []
    for t in r.tickets.values():
        order = r.orders.get(t["order_id"] or "")
        wrong = r.rules.priority_problem(t, order["total"] if order else None,
                                         r.customers[t["customer_id"]]["loyalty_tier"])
        if wrong is not None:
            found.append(Finding("ticket_priorities", t["id"], wrong))
    return found


MODEL_YEAR = re.compile(r"\((20\d\d)\)")


def product_model_years(r: Records) -> list[Finding]:
    """A product named for a model year ("Corsair RM850x (2024)") came out no earlier than the year before
    it (``specs.released``)."""
    return [Finding("product_model_years", p["id"], f"is the {year} model, released {p['specs']['released']}")
            for p in r.products.values() for year in MODEL_YEAR.findall(p["name"])
            if int(p["specs"]["released"][:4]) < int(year) - 1]


def ticket_budgets(r: Records) -> list[Finding]:
    """A budget or price a ticket quotes is plausible for what it asks (``budgets``): a CAD workstation
    costs thousands, not $250."""
    return [Finding("ticket_budgets", t["id"], problem) for t in r.tickets.values()
            for problem in r.rules.budget_problems(f"{t['subject']}\n{t['body']}")]


def slack_categories(r: Records) -> list[Finding]:
    """Slack talk fits the products and brands it names (``symptoms`` and ``slack_topics``): BIOS talk
    is about boards and CPUs of brands that make them, a cracked card is a graphics card."""
    return [Finding("slack_categories", msg["id"], problem) for msg in r.messages.values()
            for problem in category_problems(msg["text"], r.named_products(msg["text"]), r.brands, r.rules)]


def slack_tickets(r: Records) -> list[Finding]:
    """A Slack line about a named ticket says what the ticket is about (``slack_ticket_topics``), speaks
    of products on its order and of its own customer."""
    escalated: dict[str, datetime] = {}
    for esc in r.escalations.values():
        escalated[esc["ticket_id"]] = min(esc["created_at"], escalated.get(esc["ticket_id"], esc["created_at"]))
    found = []
    for msg in r.messages.values():
        ticket = r.tickets.get(next(iter(TICKET_ID.findall(msg["text"])), ""))
        if ticket is None:
            continue
        held = [r.products[ln["product_id"]] for ln in r.lines.get(ticket["order_id"] or "", [])]
        own = r.customers[ticket["customer_id"]]["name"]  # a look-alike customer may share it
        others = [c["name"] for c in r.customers.values() if c["name"] in msg["text"] and c["name"] != own]
        found += [Finding("slack_tickets", msg["id"], problem) for problem in ticket_problems(
            msg["text"], ticket, ticket["id"] in escalated and escalated[ticket["id"]] <= msg["ts"], held,
            r.named_products(msg["text"]), others, r.rules)]
    return found


def slack_ticket_states(r: Records) -> list[Finding]:
    """What a Slack line says of a named ticket's handling (``slack_ticket_states``: closed by someone,
    picked up, still open, escalated) its records bear out at the message: a ticket nobody touched is not
    closed, the colleague named closed it (or holds it), and no line claims a resolution is missing."""
    found = []
    for msg in r.messages.values():
        for ticket_id in dict.fromkeys(TICKET_ID.findall(msg["text"])):
            ticket = r.tickets.get(ticket_id)
            if ticket is not None:
                found += [Finding("slack_ticket_states", msg["id"], problem) for problem in ticket_state_problems(
                    msg["text"], msg["ts"], ticket, r.handlings[ticket_id], msg["author_id"], r.employees, r.rules)]
    return found


def slack_ticket_ages(r: Records) -> list[Finding]:
    """Slack talks of live cases (``slack_ticket_age``): a ticket a line names was written (or escalated) in the
    weeks before it, not a year ago; only a refund chase or a macro's example reaches further back."""
    return [Finding("slack_ticket_ages", msg["id"], problem) for msg in r.messages.values()
            for ticket_id in dict.fromkeys(TICKET_ID.findall(msg["text"])) if ticket_id in r.tickets
            if (problem := r.rules.slack_ticket_age.problem(msg["text"], msg["ts"], r.tickets[ticket_id],
                                                            r.handlings[ticket_id]))]


def slack_warehouse_staff(r: Records) -> list[Finding]:
    """A colleague a Slack line places at a warehouse by first name ("Lynn at west says ...", the
    ``slack_warehouse_staff`` rule) works on its floor, in fulfillment, and is not the line's author."""
    return [Finding("slack_warehouse_staff", msg["id"], problem) for msg in r.messages.values()
            for problem in r.rules.slack_warehouse_staff.problems(msg["text"], r.employees[msg["author_id"]],
                                                                  r.employees.values())]


def slack_ticket_tags(r: Records) -> list[Finding]:
    """Slack etiquette (``slack_ticket_tags``): a post in #escalations that names a ticket begins with the
    ticket id in square brackets; a general reminder naming none is posted as it is."""
    return [Finding("slack_ticket_tags", msg["id"], problem) for msg in r.messages.values()
            if (problem := r.rules.ticket_tag_problem(r.channels[msg["channel_id"]]["name"][1:], msg["text"]))]


def slack_stances(r: Records) -> list[Finding]:
    """One person keeps one stance (``slack_stances``): colleagues may disagree, but nobody posts both sides
    of a question ("prebuilt warranty claims go to returns" and, later, "stay with support"), nor asks one they
    took a stance on (``slack_stance_asks``)."""
    taken: dict[tuple[str, str], tuple[int, str]] = {}
    found = []
    for msg in sorted(r.messages.values(), key=lambda m: (m["ts"], m["id"])):
        found += [Finding("slack_stances", msg["id"], f"{msg['author_id']} asks about {group.replace('_', ' ')} "
                          f"after answering it in {taken[(group, msg['author_id'])][1]}")
                  for group in r.rules.stance_asks_in(msg["text"]) if (group, msg["author_id"]) in taken]
        for group, k in r.rules.stances_in(msg["text"]):
            earlier, earlier_id = taken.setdefault((group, msg["author_id"]), (k, msg["id"]))
            if earlier != k:
                found.append(Finding("slack_stances", msg["id"], f"{msg['author_id']} takes the other side of "
                                     f"{group.replace('_', ' ')} from their {earlier_id}"))
    return found


def slack_hardware_tests(r: Records) -> list[Finding]:
    """A test or fix Slack reports on a fault is one that finds it (``hardware_tests``): coil whine is heard on
    a listening test, not found by thermal testing; a Wi-Fi drop is fixed by the wireless driver. A bench test of
    a fault on a product it names (no ticket or order quoted) answers a customer's complaint of that fault about
    the product, written by then."""
    complaints = complaints_by_product(r.tickets.values(), r.lines)
    found = [Finding("slack_hardware_tests", msg["id"], problem) for msg in r.messages.values()
             for problem in r.rules.hardware_test_problems(msg["text"])]
    for msg in r.messages.values():
        faults = r.rules.tested_faults(msg["text"])
        if not faults or TICKET_ID.search(msg["text"]) or ORDER_ID.search(msg["text"]):
            continue
        found += [Finding("slack_hardware_tests", msg["id"], f"reports a bench test of {fault} on {p['name']}, which "
                          f"no ticket about it had complained of by {msg['ts']:%Y-%m-%d}")
                  for p in r.named_products(msg["text"]) for fault in faults
                  if not complained_of(complaints.get(p["id"], []), fault, msg["ts"])]
    return found


def slack_held_products(r: Records) -> list[Finding]:
    """A Slack line about units customers hold (``held_product_line``: returns past the window, a bench test, a
    repeated DOA) names a product somebody had received by then, not one that only ever sat on backorder."""
    received = first_deliveries((ln for lines in r.lines.values() for ln in lines), r.shipment_of)
    return [Finding("slack_held_products", msg["id"], f"speaks of {p['name']} units customers hold, but none had "
                    f"been delivered by {msg['ts']:%Y-%m-%d}") for msg in r.messages.values()
            if re.search(r.rules.held_product_line, msg["text"]) for p in r.named_products(msg["text"])
            if not received_by(received, p["id"], msg["ts"])]


def slack_stale_dates(r: Records) -> list[Finding]:
    """A date Slack gives as ahead ("out of stock until ...") is after the day it is posted, a day of refunds it
    gives as over ("audit refunds from ...") before it, and a day refunds were processed on."""
    processed = sorted(x["processed_at"] for x in r.refunds.values() if x["processed_at"])
    return [Finding("slack_stale_dates", msg["id"], problem) for msg in r.messages.values()
            for problem in stale_dates(msg["text"], msg["ts"], r.tz, r.rules, processed)]


def slack_stock_claims(r: Records) -> list[Finding]:
    """A warehouse Slack says is out of a part until a day still ahead of now holds none of it now (the inventory
    is today's)."""
    by_sku = {p["sku"]: p for p in r.products.values()}
    today = r.now.astimezone(r.tz).date()
    return [Finding("slack_stock_claims", msg["id"], f"says {hit.group(0)!r}, but {hit.group(1)} holds "
                    f"{by_sku[hit.group(2)]['inventory'].get(hit.group(1), 0)} now")
            for msg in r.messages.values() for hit in r.rules.stock_outs_ahead(msg["text"], today)
            if hit.group(2) in by_sku and by_sku[hit.group(2)]["inventory"].get(hit.group(1), 0) > 0]


def slack_kb_edits(r: Records) -> list[Finding]:
    """Slack announcing a knowledge-base edit (``kb_edits``) is posted when the article's ``updated_at`` says
    it changed, not months before or after."""
    updated = {a["id"]: a["updated_at"].astimezone(r.tz).date() for a in r.articles.values()}
    return [Finding("slack_kb_edits", msg["id"], problem) for msg in r.messages.values()
            for problem in kb_edit_problems(msg["text"], msg["ts"], r.tz, updated, r.rules)]


def slack_repeats(r: Records) -> list[Finding]:
    """A standing rule (``standing_rule``: "exceptions over $X", "labels always via <carrier>") is not
    posted again with another value: one rumour is noise, a templated repeat reads as a slip."""
    first: dict[str, tuple[str, str]] = {}
    found = []
    for msg in sorted(r.messages.values(), key=lambda m: (m["ts"], m["id"])):
        shape = rule_shape(msg["text"], r.rules)
        if shape is None:
            continue
        earlier_id, earlier = first.setdefault(shape, (msg["id"], msg["text"]))
        if earlier != msg["text"]:
            found.append(Finding("slack_repeats", msg["id"], f"restates the rule of {earlier_id} with other values "
                                 f"({earlier!r})"))
    return found


def slack_actor_voice(r: Records) -> list[Finding]:
    """The default task actor posts no work-channel line: the agent never meets its own persona's
    claims (rumours included) as someone else's evidence."""
    actor = r.actor()
    work = _work_channels(r)
    return [Finding("slack_actor_voice", msg["id"], f"posted in {r.channels[msg['channel_id']]['name']} by the "
                    f"default actor {actor}") for msg in r.messages.values()
            if msg["author_id"] == actor and msg["channel_id"] in work]


def slack_thread_topics(r: Records) -> list[Finding]:
    """A Slack thread reply is on its parent's topic (``thread_topics``): a reply about something else reads
    as an answer to the wrong message."""
    found = []
    for msg in r.messages.values():
        parent = r.messages.get(msg["thread_parent_id"] or "")
        if parent is not None and not r.rules.thread_topics_of(msg["text"]) & r.rules.thread_topics_of(parent["text"]):
            found.append(Finding("slack_thread_topics", msg["id"], f"replies to {parent['id']} ({parent['text']!r}) "
                                 "on another topic"))
    return found


def _work_channels(r: Records) -> set[str]:
    """The ids of the channels for work (all but #general and #random)."""
    return {c for c, row in r.channels.items() if row["name"] not in CASUAL_CHANNELS}


def slack_voice_ranks(r: Records) -> list[Finding]:
    """A Slack line's voice fits its author's seniority and department (``slack_voices``): a manager does not
    ask who can approve, a VP does not pass on a rumour or relay warehouse news, a billing manager does not
    coach support agents."""
    voices, work = r.rules.slack_voices, _work_channels(r)
    found = []
    for msg in r.messages.values():
        author = r.employees[msg["author_id"]]
        problem = voices.problem(msg["text"], author, msg["channel_id"] in work)
        if problem:
            found.append(Finding("slack_voice_ranks", msg["id"], f"posted by a {author['title']} ({author['department']}); "
                                 f"{problem}: {msg['text']!r}"))
    return found


def slack_weekdays(r: Records) -> list[Finding]:
    """No Slack post plans the working week (``WORK_WEEK_WORDS``: "before the weekend", "by Friday") on a weekend
    or holiday."""
    holidays = r.policy.carrier_holidays
    return [Finding("slack_weekdays", msg["id"], f"plans the working week on {local:%A %Y-%m-%d}: {msg['text']!r}")
            for msg in r.messages.values() if WORK_WEEK_WORDS.search(msg["text"])
            and not is_business_day((local := msg["ts"].astimezone(r.tz)).date(), holidays)]


def slack_reactions(r: Records) -> list[Finding]:
    """Reactions fit their post (:func:`fitting_reaction`): no laughter on a work post, no fire or rotating
    light on a routine one, no folded hands on one that neither thanks nor asks, no check mark on a question; and
    they are counted as a crowd gives them (:func:`reaction_counts`), not each emoji its own random tally
    (:func:`reaction_problems`)."""
    work = _work_channels(r)
    return [Finding("slack_reactions", msg["id"], message) for msg in r.messages.values()
            for message in reaction_problems(msg["reactions"], msg["text"], msg["channel_id"] not in work)]


NEW_HIRE_DAYS = 21
"""A new hire welcomed in Slack has no record from more than this many days before the welcome."""


def slack_office_hours(r: Records) -> list[Finding]:
    """People post in Slack at work: from 08:00 to before 19:00 world time (``OFFICE_HOURS``), not at 03:00,
    and before the minute the agent starts (the world's now)."""
    start, end = OFFICE_HOURS
    return [Finding("slack_office_hours", msg["id"], f"is posted at {local:%H:%M} on {local:%A %Y-%m-%d}, outside "
                    f"office hours ({start:02d}:00-{end:02d}:00 world time)")
            for msg in r.messages.values() if not start <= (local := msg["ts"].astimezone(r.tz)).hour < end] + [
        Finding("slack_office_hours", msg["id"], f"is posted at {msg['ts'].astimezone(r.tz):%H:%M}, the world's now")
        for msg in r.messages.values() if msg["ts"] >= r.now]


def slack_self_named(r: Records) -> list[Finding]:
    """A post does not call a colleague by its own author's first name ("Brian please issue", posted by Brian)."""
    return [Finding("slack_self_named", msg["id"], f"is posted by {r.employees[msg['author_id']]['name']} and names "
                    f"{r.first_names[msg['author_id']]!r} as someone else")
            for msg in r.messages.values() if msg["author_id"] in r.first_names
            and names_first_name(msg["text"], r.first_names[msg["author_id"]])]


def slack_day_end(r: Records) -> list[Finding]:
    """A post that speaks of the day's end (a missed evening pickup, ``day_end_words``) comes late in the day, and
    one a day at most."""
    told: set[date] = set()
    found = []
    for msg in sorted(r.messages.values(), key=lambda m: (m["ts"], m["id"])):
        local = msg["ts"].astimezone(r.tz)
        found += [Finding("slack_day_end", msg["id"], problem)
                  for problem in day_end_problems(msg["text"], local, r.rules, told)]
        if r.rules.tells_day_end(msg["text"]):
            told.add(local.date())
    return found


def ticket_assignees(r: Records) -> list[Finding]:
    """Tickets are worked by those who work their department's queue: none is assigned to, or resolved by, a
    title :data:`OFF_THE_QUEUE` (the product manager)."""
    found = [Finding("ticket_assignees", t["id"], f"is assigned to {who['name']}, a {who['title']}")
             for t in r.tickets.values() if t["assignee_id"] and (who := r.employees[t["assignee_id"]])["title"]
             in OFF_THE_QUEUE]
    return found + [Finding("ticket_assignees", res["id"], f"is resolved by {who['name']}, a {who['title']}")
                    for res in r.resolutions.values() if (who := r.employees[res["resolved_by_id"]])["title"]
                    in OFF_THE_QUEUE]


def ticket_owned_products(r: Records) -> list[Finding]:
    """A ticket about a part the customer has used (``owned_product``: a review of it) names one they had received
    from us by then, not a product they never ordered."""
    found = []
    for t in r.tickets.values():
        text = f"{t['subject']}\n{t['body']}"
        if not r.rules.owned(text):
            continue
        received = received_products(r.orders_of_customer.get(t["customer_id"], []), r.shipment_of, r.lines,
                                     t["created_at"])
        found += [Finding("ticket_owned_products", t["id"], f"speaks of using {p['name']}, which the customer had not "
                          f"received from us by {t['created_at']:%Y-%m-%d}")
                  for p in r.named_products(text) if p["id"] not in received]
    return found


def ticket_old_parts(r: Records) -> list[Finding]:
    """A ticket calling the customer's CPU years old, or upgrading their GPU (``old_parts``), comes from a customer
    who ordered no such part from us (nor a prebuilt) in the two years before: not "my CPU is a few years old" ten
    days after a full build."""
    found = []
    for t in r.tickets.values():
        bought = ordered_parts(r.orders_of_customer.get(t["customer_id"], []), lambda oid: r.lines.get(oid, []),
                               lambda pid: r.products[pid]["category"])
        found += [Finding("ticket_old_parts", t["id"], f"calls the customer's {category} old, but they ordered one "
                          f"from us in the {OLD_PART_DAYS} days before {t['created_at']:%Y-%m-%d}")
                  for category in r.rules.old_part_problems(f"{t['subject']}\n{t['body']}", bought, t["created_at"])]
    return found


def ticket_bought_parts(r: Records) -> list[Finding]:
    """A ticket saying the order it names brought a part of a category (``bought_parts``: "I bought a motherboard
    from you on order X") names an order of the customer's with such a line, delivered by then."""
    found = []
    for t in r.tickets.values():
        text = f"{t['subject']}\n{t['body']}"
        category = r.rules.bought_category(text)
        named = ORDER_ID.search(text) if category else None
        if named is None:
            continue
        order = r.orders.get(named.group())
        got = received_products([order], r.shipment_of, r.lines, t["created_at"]) \
            if order is not None and order["customer_id"] == t["customer_id"] else set()
        if category not in {r.products[p]["category"] for p in got}:
            found.append(Finding("ticket_bought_parts", t["id"], f"says {named.group()} brought a {category}, but "
                                 "no such line of the customer's had been delivered by then"))
    return found


def ticket_priciest_products(r: Records) -> list[Finding]:
    """A ticket calling the part it names the costly one of its order (``priciest_product``) names the order's
    costliest line, not a $259 PSU beside a $3,299 card."""
    found = []
    for t in r.tickets.values():
        text = f"{t['subject']}\n{t['body']}"
        if t["order_id"] is None or not r.rules.calls_pricey(text):
            continue
        top = priciest_products(r.lines.get(t["order_id"], []))
        found += [Finding("ticket_priciest_products", t["id"], f"calls {p['name']} the costly part of {t['order_id']}, "
                          f"whose costliest line is {', '.join(sorted(top))}")
                  for p in r.named_products(text) if p["id"] not in top]
    return found


def ticket_builds(r: Records) -> list[Finding]:
    """A ticket about machines not yet designed (``unbuilt_plans``: an office's CAD workstations, a first PC) is
    about no saved build."""
    return [Finding("ticket_builds", t["id"], f"plans machines not yet designed ({t['subject']!r}) but is linked to "
                    f"{t['build_id']}")
            for t in r.tickets.values()
            if t["build_id"] and r.rules.plans_unbuilt(f"{t['subject']}\n{t['body']}")]


def ticket_channels(r: Records) -> list[Finding]:
    """A phone ticket came in while the phone line was staffed (``phone_line_open``: office hours on a business
    day); a call at 02:00 on Christmas Day is a voicemail, which reaches the queue as an email. And the agent who
    took the call holds its ticket (kb-ticket-assignment: a live conversation opens assigned to that agent)."""
    phones = [t for t in r.tickets.values() if t["channel"] == "phone"]
    return [Finding("ticket_channels", t["id"], closed) for t in phones
            if (closed := closed_line_call(t["created_at"].astimezone(r.tz), r.policy.carrier_holidays))] + \
        [Finding("ticket_channels", t["id"], "came in by phone with nobody assigned: the agent who takes a call "
                 "holds its ticket") for t in phones if t["assignee_id"] is None]


def slack_new_hires(r: Records) -> list[Finding]:
    """A Slack welcome to a new hire (``new_hire``) names nobody who was already at work weeks before:
    an employee with an earlier Slack post or refund approval is not new."""
    first: dict[str, datetime] = {}
    acts = [(m["author_id"], m["ts"]) for m in r.messages.values()]
    acts += [(f["approved_by_id"], f["created_at"]) for f in r.refunds.values() if f["approved_by_id"]]
    for who, when in acts:
        first[who] = min(when, first.get(who, when))
    found = []
    for msg in r.messages.values():
        if not re.search(r.rules.new_hire, msg["text"], re.IGNORECASE):
            continue
        for emp in r.employees.values():
            since = first.get(emp["id"])
            named = names_first_name(msg["text"], emp["name"])
            if named and since is not None and since < msg["ts"] - timedelta(days=NEW_HIRE_DAYS):
                found.append(Finding("slack_new_hires", msg["id"], f"welcomes {emp['name']} as new; they were at "
                                     f"work on {since:%Y-%m-%d}"))
    return found


def slack_raw_ids(r: Records) -> list[Finding]:
    """Slack is written in words: no raw snake_case id (``usps_ground``) outside backticks."""
    return [Finding("slack_raw_ids", msg["id"], f"writes the raw id {hit!r}")
            for msg in r.messages.values() for hit in RAW_ID.findall(msg["text"])]


def ticket_raw_ids(r: Records) -> list[Finding]:
    """Customers write in words too: a ticket names "USPS Ground", never the ``usps_ground`` id, and "the Core
    i7-14700K", never the catalogue's SKU ``CPU-INT-I7-14700K`` (a code of ours no customer types)."""
    skus = re.compile("|".join(rf"(?<![\w-]){re.escape(p['sku'])}(?![\w-])" for p in r.products.values()))
    return [Finding("ticket_raw_ids", t["id"], f"writes the raw id {hit!r}")
            for t in r.tickets.values() for text in [f"{t['subject']}\n{t['body']}"]
            for hit in [*RAW_ID.findall(text), *skus.findall(text)]]


def slack_sentence_repeats(r: Records) -> list[Finding]:
    """A sentence (``said_sentences``: a policy reminder, a question) is posted once: the same words from
    several people on several days read as a template, unless the later one replies to the first."""
    first: dict[str, Row] = {}
    found = []
    names = fill_words(r.products.values(), [*r.employees.values(), *r.customers.values()], r.called)
    for msg in sorted(r.messages.values(), key=lambda m: (m["ts"], m["id"])):
        for sentence in sorted(names.said(msg["text"])):
            earlier = first.setdefault(sentence, msg)
            if earlier is not msg and msg["thread_parent_id"] != earlier["id"]:
                found.append(Finding("slack_sentence_repeats", msg["id"], f"repeats {earlier['id']}'s {sentence!r}"))
    return found


def handbook_steps(r: Records) -> list[Finding]:
    """Every step the knowledge base prescribes can be done with the tools (``undoable_steps``)."""
    found = []
    for article in r.articles.values():
        for pattern, instead in r.rules.undoable_steps.items():
            step = re.search(pattern, article["body"], re.IGNORECASE)
            if step:
                found.append(Finding("handbook_steps", article["id"], f"asks to {step.group(0)!r}: {instead}"))
    return found


CHANNEL_NAME = re.compile(r"(?<![\w&])#[a-z][a-z0-9-]*[a-z0-9]")


def handbook_channels(r: Records) -> list[Finding]:
    """Every Slack channel a current knowledge-base article sends a reader to exists (a deprecated one may name a
    channel renamed since)."""
    channels = {c["name"] for c in r.channels.values()}
    return [Finding("handbook_channels", article["id"], f"names {name}, which is no Slack channel")
            for article in r.articles.values() if not article["is_deprecated"]
            for name in sorted(set(CHANNEL_NAME.findall(article["body"]))) if name not in channels]


def handbook_ids(r: Records) -> list[Finding]:
    """An article's examples name a placeholder (``tick-YYMMDD-NNN``), never a record's id: a real-looking id names,
    or may one day name, some customer's record, which a reader then takes for the case in point."""
    return [Finding("handbook_ids", article["id"], f"names {found} as an example; write tick-YYMMDD-NNN")
            for article in r.articles.values() for found in sorted(set(_QUOTED_ID.findall(article["body"])))]


def status_claims(r: Records) -> list[Finding]:
    """What a ticket says of its order's state (delivered, arrived today, late, not received after a return,
    not shipped, express...) and of the customer's loyalty tier is what the records show when it was
    written (``status_claims``)."""
    found = []
    for t in r.tickets.values():
        order = r.orders.get(t["order_id"] or "")
        found += [Finding("status_claims", t["id"], problem) for problem in status_problems(
            f"{t['subject']}\n{t['body']}", t["created_at"], r.customers[t["customer_id"]]["loyalty_tier"], order,
            r.shipment_of.get(t["order_id"] or ""), r.refunds_before(t["order_id"], t["created_at"]), r.rules,
            [x for x in r.tickets_of.get(t["order_id"] or "", []) if x["created_at"] < t["created_at"]])]
    return found


def spec_claims(r: Records) -> list[Finding]:
    """Specs a ticket quotes of the customer's parts (``spec_claims``) are those of its build's or order's parts."""
    return [Finding("spec_claims", t["id"], problem) for t in r.tickets.values()
            for problem in spec_problems(f"{t['subject']}\n{t['body']}", r.held(t), r.rules)]


def ticket_references(r: Records) -> list[Finding]:
    """A ticket speaking of an earlier ticket means one of the same customer's, about the same order and
    issue, that someone worked."""
    found = []
    for t in r.tickets.values():
        for quoted in dict.fromkeys(re.findall(r"\btick-\d{6}-\d{3}\b", f"{t['subject']}\n{t['body']}")):
            if quoted in r.tickets and (problem := reference_problem(t, r.tickets[quoted])) is not None:
                found.append(Finding("ticket_references", t["id"], f"speaks of {quoted} as earlier, but it is {problem}"))
    return found


def ticket_counts(r: Records) -> list[Finding]:
    """Counts a ticket gives of its order ("had three items", "ordered 2 of the <product>") are the order's lines
    or units."""
    found = []
    for t in r.tickets.values():
        items = [(r.products[ln["product_id"]]["name"], ln["quantity"]) for ln in r.lines.get(t["order_id"] or "", [])]
        found += [Finding("ticket_counts", t["id"], problem)
                  for problem in count_problems(f"{t['subject']}\n{t['body']}", items)]
    return found


def refund_line_fit(r: Records) -> list[Finding]:
    """A refund of order lines refunds what its ticket names, each line once; no ticket complains about
    an item refunded before it was written (by name, or by a symptom only the refunded items could have)."""
    found = []
    refunded_lines: dict[str, str] = {}
    for ref in sorted(r.refunds.values(), key=lambda x: (x["created_at"], x["id"])):
        items = {r.line_product[ln["order_line_id"]] for ln in ref["lines"]}
        for ln in ref["lines"]:
            first = refunded_lines.setdefault(ln["order_line_id"], ref["id"])
            if first != ref["id"]:
                found.append(Finding("refund_line_fit", ref["id"], f"refunds line {ln['order_line_id']} again "
                                     f"(already refunded by {first})"))
        ticket = r.tickets.get(ref["ticket_id"] or "")
        named = {p["id"] for p in r.named_products(f"{ticket['subject']}\n{ticket['body']}")} if ticket else set()
        if items and named and named != items:
            found.append(Finding("refund_line_fit", ref["id"], f"refunds {', '.join(sorted(items))} but "
                                 f"{ref['ticket_id']} asks about {', '.join(sorted(named))}"))
    for t in r.tickets.values():
        if t["type"] == "billing" or RETURN_FOLLOW_UP.search(f"{t['subject']}\n{t['body']}"):
            continue  # asking after a refund, or after a return, is about it
        gone = {r.line_product[ln["order_line_id"]]: x["id"] for x in r.refunds_before(t["order_id"], t["created_at"])
                for ln in x["lines"]}
        text = f"{t['subject']}\n{t['body']}"
        about = r.named_products(text)
        found += [Finding("refund_line_fit", t["id"], f"is about {p['id']}, already refunded by {gone[p['id']]}")
                  for p in about if p["id"] in gone]
        if gone and not about:
            kept = {r.products[ln["product_id"]]["category"] for ln in r.lines[t["order_id"]]
                    if ln["product_id"] not in gone}
            found += [Finding("refund_line_fit", t["id"], f"{problem} left after the refunds before it")
                      for problem in symptom_problems(text, [], kept, r.rules)]
    return found


def return_follow_ups(r: Records) -> list[Finding]:
    """A ticket following up on a return ("I shipped the X back", :data:`~corecraft.world.fidelity.RETURN_FOLLOW_UP`)
    names an item sent back on its order before it was written: one an earlier return ticket on the order named,
    or a line a refund before it took back."""
    found = []
    for t in r.tickets.values():
        text = f"{t['subject']}\n{t['body']}"
        if not t["order_id"] or not RETURN_FOLLOW_UP.search(text) or not (named := r.named_products(text)):
            continue
        sent = {r.line_product[ln["order_line_id"]] for x in r.refunds_before(t["order_id"], t["created_at"])
                for ln in x["lines"]}
        sent |= {p["id"] for e in r.tickets.values() if e["order_id"] == t["order_id"] and e["type"] == "return"
                 and e["created_at"] < t["created_at"] for p in r.named_products(f"{e['subject']}\n{e['body']}")}
        if not sent & {p["id"] for p in named}:
            found.append(Finding("return_follow_ups", t["id"], f"follows up on a return of "
                                 f"{', '.join(sorted(p['id'] for p in named))}, but {t['order_id']} had "
                                 f"{', '.join(sorted(sent)) or 'nothing'} sent back before it"))
    return found


def ticket_stories(r: Records) -> list[Finding]:
    """Tickets on one order tell one story of each item: a later ticket does not tell another of an item an
    earlier return ticket on the order told one of (unless it follows up on that return or quotes the ticket),
    nor of one an earlier ticket reported missing from the box (it was never there to install or send back) or
    come wrong or used (it went back for a new one)."""
    found = []
    for t in r.tickets.values():
        text = f"{t['subject']}\n{t['body']}"
        told = told_products(t, text, r.tickets_of.get(t["order_id"] or "", []),
                             lambda e: [p["id"] for p in r.named_products(f"{e['subject']}\n{e['body']}")], r.rules)
        found += [Finding("ticket_stories", t["id"], f"tells another story of {p['id']} than an earlier return, "
                          "missing-item or wrong-item ticket on its order") for p in r.named_products(text) if p["id"] in told]
    return found


def ticket_quotes(r: Records) -> list[Finding]:
    """A ticket quoting an earlier one speaks of the item that ticket did: when both name products, they share one
    (a follow-up on a return label, or on a fault not yet sorted, is about the same part)."""
    named = {t["id"]: {p["id"] for p in r.named_products(f"{t['subject']}\n{t['body']}")} for t in r.tickets.values()}
    found = []
    for t in r.tickets.values():
        mine = named[t["id"]]
        for quoted_id in sorted(set(TICKET_ID.findall(t["body"])) - {t["id"]}):
            theirs = named.get(quoted_id, set())
            if mine and theirs and not mine & theirs:
                found.append(Finding("ticket_quotes", t["id"], f"quotes {quoted_id}, about {', '.join(sorted(theirs))}, "
                                     f"but speaks of {', '.join(sorted(mine))}"))
    return found


def restocking_fees(r: Records) -> list[Finding]:
    """A return refund takes the restocking fee as its ticket tells the item's condition (``item_condition``):
    none on an item it says is unopened (or dead, or our mistake), the fee on one it says was opened; a resolution
    that takes it from a customer who refused it says why it stands (``exception_requests[*].declined``)."""
    found = []
    pct = r.policy.restocking_fee_pct / 100
    note = restocked(r.policy.restocking_fee_pct)
    for ref in r.refunds.values():
        ticket = r.tickets.get(ref["ticket_id"] or "")
        if ref["reason"] != "return" or ticket is None or len(ref["lines"]) != 1:
            continue
        line = next(ln for ln in r.lines[ticket["order_id"]] if ln["id"] == ref["lines"][0]["order_line_id"])
        if r.products[line["product_id"]]["category"] not in r.policy.restocking_fee_categories:
            continue
        order = r.orders[ticket["order_id"]]
        price = line["unit_price"] * ref["lines"][0]["quantity"]
        paid = price * (1 - order["discount"] / order["subtotal"]) if order["subtotal"] else price
        text = f"{ticket['subject']}\n{ticket['body']}"
        taken = abs(ref["amount"] - (paid - price * pct)) < CENT
        opened = r.rules.item_condition.opened(text, taken)
        said = [res["id"] for res in r.resolutions.values() if res["refund_id"] == ref["id"]
                and (note in res["details"]) != taken]
        found += [Finding("restocking_fees", res_id, f"{'does not say' if taken else 'says'} the restocking fee was "
                          f"withheld from {ref['id']}, which it {'was' if taken else 'was not'}") for res_id in said]
        refused = r.rules.exception_asked(text) if taken else None
        if refused is not None and refused.declined:
            found += [Finding("restocking_fees", res["id"], f"takes the restocking fee {ticket['id']} refused without "
                              "saying why it stands") for res in r.resolutions.values()
                      if res["refund_id"] == ref["id"] and refused.declined not in res["details"]]
        if opened and abs(ref["amount"] - paid) < CENT:
            found.append(Finding("restocking_fees", ref["id"], f"refunds ${ref['amount']:.2f} in full, but "
                                 f"{ticket['id']} says the item was opened: the restocking fee applies"))
        elif not opened and taken:
            found.append(Finding("restocking_fees", ref["id"], f"takes the restocking fee (${price * pct:.2f}), but "
                                 f"{ticket['id']} says the item is unopened, dead or not what was ordered"))
    return found


def doa_refunds(r: Records) -> list[Finding]:
    """A DOA refund returns what was paid for its units and the order's shipping, unless an earlier DOA or
    shipping-delay refund returned that already (kb-doa-policy), or less only when it empties the payment."""
    found = []
    for ref in r.refunds.values():
        if ref["reason"] != "doa" or not ref["lines"]:
            continue
        payment = r.payments[ref["payment_id"]]
        order = r.orders[payment["order_id"]]
        lines = {ln["id"]: ln for ln in r.lines.get(order["id"], [])}
        paid = sum(lines[x["order_line_id"]]["unit_price"] * x["quantity"] for x in ref["lines"]) * paid_share(order)
        before = [x for x in r.refunds_of.get(order["id"], []) if (x["created_at"], x["id"]) < (ref["created_at"], ref["id"])]
        shipping = 0.0 if any(x["reason"] in ("doa", "shipping_delay") for x in before) else order["shipping_cost"]
        emptied = abs(sum(x["amount"] for x in before) + ref["amount"] - payment["amount"]) < CENT
        if abs(ref["amount"] - (paid + shipping)) >= CENT and not (ref["amount"] < paid + shipping and emptied):
            found.append(Finding("doa_refunds", ref["id"], f"refunds ${ref['amount']:.2f} as DOA, but the units paid "
                                 f"(${paid:.2f}) and the shipping (${shipping:.2f}) make ${paid + shipping:.2f}"))
    return found


def late_refunds_asked(r: Records) -> list[Finding]:
    """A shipping-delay refund answers a customer who asked for the shipping back (the late-delivery article refunds
    it once asked, never unasked): its ticket asks, or the resolution that issued it says the customer did."""
    details = {res["refund_id"]: res["details"] for res in r.resolutions.values() if res["refund_id"]}
    found = []
    for ref in r.refunds.values():
        ticket = r.tickets.get(ref["ticket_id"] or "")
        if ref["reason"] != "shipping_delay" or ticket is None:
            continue
        if not LATE_REFUND_ASKED.search(f"{ticket['subject']}\n{ticket['body']}\n{details.get(ref['id'], '')}"):
            found.append(Finding("late_refunds_asked", ref["id"], f"refunds the shipping of a late parcel, but "
                                 f"{ticket['id']} ({ticket['subject']!r}) never asks for it and no resolution says "
                                 "the customer did"))
    return found


def refund_approvers(r: Records) -> list[Finding]:
    """A refund is approved by someone whose refund limit covers its amount (kb-refund-approval-limits); above it,
    it goes to someone who can (create_refund refuses the rest), so a fulfillment associate ($0) approves none."""
    return [Finding("refund_approvers", ref["id"], wrong) for ref in r.refunds.values()
            if (emp := r.employees.get(ref["approved_by_id"] or "")) is not None
            and (wrong := approval_problem(ref["amount"], emp))]


def refund_units(r: Records) -> list[Finding]:
    """A return refunds the units its ticket speaks of: one, unless it speaks of several (``several_units``)."""
    found = []
    for ref in r.refunds.values():
        ticket = r.tickets.get(ref["ticket_id"] or "")
        if ref["reason"] != "return" or ticket is None:
            continue
        several = re.search(r.rules.several_units, f"{ticket['subject']}\n{ticket['body']}", re.IGNORECASE)
        found += [Finding("refund_units", ref["id"], f"refunds {ln['quantity']} units of {ln['order_line_id']}, but "
                          f"{ticket['id']} speaks of one") for ln in ref["lines"] if ln["quantity"] > 1 and not several]
    return found


def escalation_fit(r: Records) -> list[Finding]:
    """An escalation's type and notes stand on the facts: a policy exception is asked for (or a return is
    past the customer's window), a permission escalation is about money asked back on an order worth more
    than the creator may refund, and notes speak of a return outside the window only when it is; one who may approve
    exceptions decides them and escalates none."""
    found = []
    for esc in r.escalations.values():
        t = r.tickets[esc["ticket_id"]]
        order = r.orders.get(t["order_id"] or "")
        late = days_past_window(t["created_at"], r.customers[t["customer_id"]]["loyalty_tier"],
                                r.shipment_of.get(t["order_id"] or ""), r.policy.return_window_days) \
            if t["type"] == "return" else None
        text = f"{t['subject']}\n{t['body']}"
        if esc["type"] == "policy_exception" and late is None and r.rules.exception_asked(text) is None:
            found.append(Finding("escalation_fit", esc["id"], f"asks a policy exception for {t['id']} "
                                 f"({t['subject']!r}), which asks for nothing beyond policy"))
        creator = r.employees[esc["created_by_id"]]
        if esc["type"] == "policy_exception" and creator["can_approve_exceptions"]:
            found.append(Finding("escalation_fit", esc["id"], f"asks a policy exception of leadership, but its "
                                 f"creator, a {creator['title']}, may approve exceptions"))
        limit = creator["refund_limit"]
        if esc["type"] == "insufficient_permission" and not r.rules.asks_refund(text):
            found.append(Finding("escalation_fit", esc["id"], f"wants approval authority for {t['id']} "
                                 f"({t['subject']!r}), which asks for no money"))
        elif esc["type"] == "insufficient_permission" and (order is None or refund_at_stake(
                order, r.lines.get(order["id"], []), {p["id"] for p in r.named_products(text)}) <= limit):
            found.append(Finding("escalation_fit", esc["id"], f"says the amount is above the creator's limit "
                                 f"(${limit:,.0f}) but {t['id']} involves {'no order' if order is None else 'less'}"))
        if re.search(r"outside the window|past the customer's return window", esc["notes"]) and late is None:
            found.append(Finding("escalation_fit", esc["id"], f"speaks of a return past the window but {t['id']} "
                                 "is within it"))
    return found


NAMED_TEAM = re.compile(r"\bthe (\w+) team\b")
"""Words of a resolution handing work to a team by name."""


def resolution_teams(r: Records) -> list[Finding]:
    """A resolution hands work only to a team the company has: a department of its staff."""
    departments = {e["department"] for e in r.employees.values()}
    return [Finding("resolution_teams", res["id"], f"passes work to the {team.group(1)} team, but no department "
                    f"is called {team.group(1)!r}") for res in r.resolutions.values()
            for team in NAMED_TEAM.finditer(res["details"]) if team.group(1) not in departments]


def resolution_fit(r: Records) -> list[Finding]:
    """A resolution does what the order's state allowed then: order details are corrected only before it
    ships (and the order was updated then or later), a replacement is sent only for a delivered order."""
    found = []
    for res in r.resolutions.values():
        t = r.tickets[res["ticket_id"]]
        order = r.orders.get(t["order_id"] or "")
        if order is None:
            continue
        states = order_states(res["created_at"], order, r.shipment_of.get(order["id"]), [])
        if res["outcome"] == "order_updated" and t["type"] != "billing" and "shipped" in states:
            found.append(Finding("resolution_fit", res["id"], f"corrects {order['id']}, which had already shipped"))
        if res["outcome"] == "order_updated" and order["status"] != "cancelled" \
                and order["updated_at"] < res["created_at"]:
            found.append(Finding("resolution_fit", res["id"], f"corrects {order['id']}, but the order was last updated "
                                 f"{order['updated_at']:%Y-%m-%d %H:%M}, before it"))
        if res["outcome"] == "replacement_sent" and "delivered" not in states:
            found.append(Finding("resolution_fit", res["id"], f"sends a replacement for {order['id']}, "
                                 "which had not been delivered"))
    return found


SHIPPED_REPLACEMENT = re.compile(r"[Rr]eplacement (?:unit )?(?:has )?(?:shipped|been shipped|is on its way)")
"""Words of a resolution saying a replacement already left: only a shipped replacement order it names bears that
out."""


def stale_tickets(r: Records) -> list[Finding]:
    """No ticket waits for ever: one open or waiting on the customer with no update for ``stale_ticket_days``
    is closed (the ticket-status article), with a no_action resolution that says so."""
    quiet = timedelta(days=r.policy.stale_ticket_days)
    found = [Finding("stale_tickets", t["id"], f"is still {t['status']} with no update since {t['updated_at']:%Y-%m-%d}, "
                     f"more than {r.policy.stale_ticket_days} days before now")
             for t in r.tickets.values() if t["status"] in ("open", "pending_customer") and t["updated_at"] + quiet < r.now]
    for res in r.resolutions.values():
        t = r.tickets[res["ticket_id"]]
        if res["details"].endswith(stale_details(r.policy.stale_ticket_days)) and (
                t["status"] != "closed" or res["outcome"] != "no_action" or res["created_at"] != t["updated_at"]):
            found.append(Finding("stale_tickets", res["id"], f"closes {t['id']} for want of a reply, but the ticket is "
                                 f"{t['status']} and the resolution is {res['outcome']}, at {res['created_at']}"))
    return found


def resolution_details(r: Records) -> list[Finding]:
    """What the resolver wrote fits the ticket's issue (``issues[*].details`` in ``seeds/fidelity.yaml``: a
    missing item is not returned as faulty, transit damage is not "explained"), with a replacement promised
    or what became of it, and claims no replacement shipment but that of the replacement order it names."""
    found = []
    for res in r.resolutions.values():
        t = r.tickets[res["ticket_id"]]
        unfit = r.rules.unfit_details(t, res, r.policy.stale_ticket_days)
        promise = r.rules.replacement_promise
        if unfit:
            found.append(Finding("resolution_details", res["id"], f"{res['outcome']} of {t['id']} ({t['subject']!r}) "
                                 f"says {res['details']!r}, not what fits the issue: {unfit!r}"))
        found += [Finding("resolution_details", res["id"], f"speaks of {name.replace('_', ' ')} but {t['id']} "
                          f"({t['subject']!r}) is not about it") for name, topic in r.rules.detail_topics.items()
                  if re.search(topic.pattern, res["details"]) and not topic.fits(f"{t['subject']}\n{t['body']}", True)]
        if re.search(promise.approval, res["details"]) and not promise.pending_in(res["details"]) \
                and promise.settlement(res["details"]) is None:
            found.append(Finding("resolution_details", res["id"], "approves a replacement without saying its order "
                                 f"follows once the unit is back ({promise.pending!r}) or what became of it"))
        if SHIPPED_REPLACEMENT.search(res["details"]) and r.replacement_shipment(res) is None:
            found.append(Finding("resolution_details", res["id"], "says a replacement shipped, but no order "
                                 "records a replacement"))
    return found


def replacement_records(r: Records) -> list[Finding]:
    """A resolution is ``replacement_sent`` exactly when the replacement order its details name (an order at no
    charge replacing the ticket's order) has shipped, and is updated no earlier than that: until then an approved
    replacement is ``no_action`` (kb-writing-resolutions)."""
    found = []
    for res in r.resolutions.values():
        t = r.tickets[res["ticket_id"]]
        ship = r.replacement_shipment(res)
        if res["outcome"] == "replacement_sent" and ship is None:
            found.append(Finding("replacement_records", res["id"], f"sends {t['customer_id']} a replacement for "
                                 f"{t['id']}, but no shipped order at no charge records one"))
        elif ship is not None and res["outcome"] != "replacement_sent":
            found.append(Finding("replacement_records", res["id"], f"records {res['outcome']} for {t['id']}, but "
                                 f"its replacement {ship['order_id']} shipped on {ship['shipped_at']:%Y-%m-%d}"))
        elif ship is not None and res["updated_at"] is not None and res["updated_at"] < ship["shipped_at"]:
            found.append(Finding("replacement_records", res["id"], f"turned replacement_sent on "
                                 f"{res['updated_at']:%Y-%m-%d %H:%M}, before {ship['order_id']} shipped "
                                 f"({ship['shipped_at']:%Y-%m-%d %H:%M})"))
    return found


def replacements_placed(r: Records) -> list[Finding]:
    """A replacement approved (``replacement_promise.approval``) is settled once returns logs the unit sent back,
    at most ``return_business_days`` carrier business days after the approval (a re-send of a missing item once
    fulfillment logs the shortfall, at most ``resend.business_days`` after it): by then the approval names its
    replacement order (``placed``: an order replacing the ticket's order, placed on the day it says), or the
    refund the unit had been returned for (``refunded``: a return on the ticket's order asked for by then), or the
    order that had replaced the unit already (``replaced_before``: placed by then); the resolution, and its ticket,
    were last updated on the update's day, or on the day the replacement shipped (its outcome changed then)."""
    promise = r.rules.replacement_promise
    found = []
    for res in r.resolutions.values():
        t = r.tickets[res["ticket_id"]]
        if t["order_id"] is None or not re.search(promise.approval, res["details"]):
            continue
        due = add_business_days(res["created_at"], promise.business_days(res["details"])[1],
                                r.policy.carrier_holidays).replace(hour=23, minute=59)
        settled = promise.settlement(res["details"])
        if settled is None:
            if due < r.now:
                found.append(Finding("replacements_placed", res["id"], f"approved a replacement for {t['order_id']} "
                                     f"on {res['created_at']:%Y-%m-%d}, but no replacement order was placed by "
                                     f"{due:%Y-%m-%d}, when returns had logged the unit"))
            continue
        how, said = settled
        updated = res.get("updated_at")
        shipped = r.replacement_shipment(res)
        update_days = {said["date"], *([f"{shipped['shipped_at'].astimezone(r.tz):%Y-%m-%d}"] if shipped else [])}
        if updated is None or f"{updated.astimezone(r.tz):%Y-%m-%d}" not in update_days or updated > t["updated_at"]:
            found.append(Finding("replacements_placed", res["id"], f"carries an update dated {said['date']}, but was "
                                 f"last updated {'never' if updated is None else f'{updated.astimezone(r.tz):%Y-%m-%d}'}"
                                 f" and its ticket {t['updated_at'].astimezone(r.tz):%Y-%m-%d}"))
        if how == "refunded":
            refund = r.refunds.get(said["refund_id"])
            if refund is None or r.payments[refund["payment_id"]]["order_id"] != t["order_id"] or not refund["lines"] \
                    or asked_at(refund, r.tickets) > due:
                found.append(Finding("replacements_placed", res["id"], f"says the unit was returned for "
                                     f"{said['refund_id']} instead, but no return on {t['order_id']} was asked for by "
                                     f"{due:%Y-%m-%d}"))
            continue
        order = r.orders.get(said["order_id"])
        if order is None or order["replaces_order_id"] != t["order_id"] or order["created_at"] > due:
            found.append(Finding("replacements_placed", res["id"], f"names {said['order_id']} as replacing "
                                 f"{t['order_id']}, but no such order replaced it by {due:%Y-%m-%d}"))
        elif how == "placed" and f"{order['created_at']:%Y-%m-%d}" != said["date"]:
            found.append(Finding("replacements_placed", res["id"], f"says returns logged the unit on {said['date']}, "
                                 f"but {order['id']} was placed on {order['created_at']:%Y-%m-%d}"))
    return found


def replacement_approvals(r: Records) -> list[Finding]:
    """A unit is replaced on one approval: a resolution approves no replacement for a unit that an approval made
    before it had replaced (``replaced_before``), and one pointing the customer to an earlier approval
    (``approved_before``) names a ticket on its order whose resolution approved a replacement on the day it says,
    before it."""
    promise = r.rules.replacement_promise
    approvals = {res["ticket_id"]: res for res in r.resolutions.values() if re.search(promise.approval, res["details"])}
    placed_by = {said["order_id"]: res for res in approvals.values() if (said := r.placed_replacement(res))}
    found = []
    for res in r.resolutions.values():
        settled = promise.settlement(res["details"])
        first = placed_by.get(settled[1]["order_id"]) if settled and settled[0] == "replaced_before" else None
        if first is not None and first["created_at"] < res["created_at"]:
            found.append(Finding("replacement_approvals", res["id"], f"approves a second replacement for the unit "
                                 f"{first['id']} had approved on {first['created_at'].astimezone(r.tz):%Y-%m-%d}"))
        pointed = promise.approved_earlier(res["details"])
        if pointed is None:
            continue
        earlier = approvals.get(pointed["ticket_id"])
        order_id = r.tickets[res["ticket_id"]]["order_id"]
        if earlier is None or r.tickets[earlier["ticket_id"]]["order_id"] != order_id \
                or f"{earlier['created_at'].astimezone(r.tz):%Y-%m-%d}" != pointed["date"] \
                or earlier["created_at"] >= res["created_at"]:
            found.append(Finding("replacement_approvals", res["id"], f"points to a replacement approved on "
                                 f"{pointed['ticket_id']} on {pointed['date']}, but no resolution of a ticket on "
                                 f"{order_id} approved one then, before it"))
    return found


def replacement_orders(r: Records) -> list[Finding]:
    """A no-charge replacement order (``replaces_order_id``) is what a resolution approved: after a resolution on
    a ticket about the replaced order named it, for that order's customer and address, of its products (no
    more units of one, over its replacements and the refunds asked for before, than it had), at $0 with no
    payment."""
    named: dict[str, Row] = {}  # the approvals by the replacement order they say was placed
    for res in r.resolutions.values():
        placed = r.placed_replacement(res)
        if placed:
            named[placed["order_id"]] = res
    found = []
    for replaced_id, replacements in r.replacements_of.items():
        replaced = r.orders[replaced_id]
        ordered: Counter[str] = Counter()
        for line in r.lines.get(replaced_id, []):
            ordered[line["product_id"]] += line["quantity"]
        sent: Counter[str] = Counter()
        for order in replacements:
            problems = []
            approval = named.get(order["id"])
            if approval is None or r.tickets[approval["ticket_id"]]["order_id"] != replaced_id \
                    or approval["created_at"] >= order["created_at"]:
                problems.append(f"no resolution about {replaced_id} approved it before it was placed")
            if (order["customer_id"], order["shipping_address"]) != (replaced["customer_id"], replaced["shipping_address"]):
                problems.append(f"goes to another customer or address than {replaced_id}")
            lines = r.lines.get(order["id"], [])
            if any(abs(order[k]) > CENT for k in ("subtotal", "discount", "shipping_cost", "total")) \
                    or any(ln["unit_price"] > CENT for ln in lines) or order["id"] in r.payment_of:
                problems.append("is charged for (a no-charge replacement has $0 amounts and no payment)")
            refunded: Counter[str] = Counter()
            for refund in (x for x in r.refunds_of.get(replaced_id, []) if asked_at(x, r.tickets) <= order["created_at"]):
                for ln in refund["lines"]:
                    refunded[r.line_product[ln["order_line_id"]]] += ln["quantity"]
            for line in lines:
                sent[line["product_id"]] += line["quantity"]
                if sent[line["product_id"]] + refunded[line["product_id"]] > ordered[line["product_id"]]:
                    problems.append(f"sends {line['product_id']}, of which {replaced_id} had "
                                    f"{ordered[line['product_id']]} unit(s), {refunded[line['product_id']]} refunded "
                                    f"and {sent[line['product_id']] - line['quantity']} replaced before")
            found += [Finding("replacement_orders", order["id"], f"replaces {replaced_id} but {problem}")
                      for problem in problems]
    return found


def never_received_items(r: Records) -> list[Finding]:
    """An item a ticket reported never came (``never_received``), or came wrong or used (``swapped_on_report``), is
    not returned for a refund after the report, nor replaced by any order but the report's own re-send or
    replacement, unless that order was placed first: the report's own refund or re-send is its remedy."""
    found = []
    settled: dict[str, list[Row]] = defaultdict(list)  # resolutions by ticket
    for res in r.resolutions.values():
        settled[res["ticket_id"]].append(res)
    for t in r.tickets.values():
        text = f"{t['subject']}\n{t['body']}"
        if not t["order_id"] or not re.search(r.rules.gone_on_report, text, re.IGNORECASE):
            continue
        missing = re.search(r.rules.never_received, text, re.IGNORECASE) is not None
        what, remedy = ("never came", "re-send") if missing else ("came wrong or used", "replacement")
        named = {p["id"] for p in r.named_products(text)}
        resent = [r.orders[placed["order_id"]] for res in settled[t["id"]]
                  if (placed := r.placed_replacement(res)) and placed["order_id"] in r.orders]
        since = min((o["created_at"] for o in resent), default=None)
        for refund in r.refunds_before(t["order_id"], r.now):
            products = {r.line_product[ln["order_line_id"]] for ln in refund["lines"]} & named
            if products and refund["ticket_id"] != t["id"] and refund["created_at"] > t["created_at"] \
                    and (since is None or refund["created_at"] < since):
                found.append(Finding("never_received_items", refund["id"], f"refunds {', '.join(sorted(products))} "
                                     f"as returned, which {t['id']} reported {what}"))
        for order in r.replacements_of.get(t["order_id"], []):
            products = {ln["product_id"] for ln in r.lines.get(order["id"], [])} & named
            if products and order not in resent and order["created_at"] > t["created_at"] \
                    and (since is None or order["created_at"] < since):
                found.append(Finding("never_received_items", order["id"], f"replaces {', '.join(sorted(products))}, "
                                     f"which {t['id']} reported {what} (and no {remedy} was placed first)"))
    return found


def shipping_refund_timing(r: Records) -> list[Finding]:
    """A ticket refunded for a late delivery (``shipping_delay``) is resolved once the parcel arrived: it stays
    open until then (kb-late-delivery-compensation), whenever the refund was made."""
    found = []
    for ref in r.refunds.values():
        ship = r.shipment_of.get(r.payments[ref["payment_id"]]["order_id"])
        if ref["reason"] != "shipping_delay" or ship is None or not ref["ticket_id"]:
            continue
        found += [Finding("shipping_refund_timing", res["id"], f"resolves {ref['ticket_id']} on "
                          f"{res['created_at']:%Y-%m-%d %H:%M}, before its late parcel arrived")
                  for res in r.resolutions.values() if res["ticket_id"] == ref["ticket_id"]
                  and (ship["delivered_at"] is None or ship["delivered_at"] > res["created_at"])]
    return found


def return_refund_timing(r: Records) -> list[Finding]:
    """A refund the returns queue makes for an item sent back (``return_inspection.reasons``: a return, a DOA or
    defective item, on a ticket assigned to returns) is made once the item could be back and inspected
    (kb-returns-policy): not before the day ``business_days[0]`` carrier business days after its ticket was
    written. (A refund an agent approves goes out at once, with the label.)"""
    inspection = r.rules.return_inspection
    fewest = inspection.business_days[0]
    found = []
    for ref in r.refunds.values():
        t = r.tickets.get(ref["ticket_id"] or "")
        if t is None or ref["reason"] not in inspection.reasons or t["assignee_id"] is None \
                or r.employees[t["assignee_id"]]["department"] != "returns":
            continue
        earliest = add_business_days(t["created_at"], fewest, r.policy.carrier_holidays).date()
        if ref["created_at"].date() < earliest:
            found.append(Finding("return_refund_timing", ref["id"], f"refunds the item {t['id']} sends back "
                                 f"({ref['reason']}) on {ref['created_at']:%Y-%m-%d}, before it could be back and "
                                 f"inspected ({fewest} business days after the ticket: {earliest:%Y-%m-%d})"))
    return found


def duplicate_ticket_texts(r: Records) -> list[Finding]:
    """No two tickets share a body word for word (a template's tell, not a customer's)."""
    return _repeats("duplicate_ticket_texts", r.tickets.values(), "created_at", "body", "body")


def ticket_wording_repeats(r: Records) -> list[Finding]:
    """One customer never writes two tickets in one wording (a phrase's body or a variant of it) or under one
    subject line, no two tickets still being worked on (the queue an agent sees together) share one, and no two
    written within :data:`WORDING_GAP` of each other do: word-for-word wording across tickets is a template's tell."""
    written: dict[tuple[str, str], list[Row]] = defaultdict(list)  # by (how, wording), oldest first
    for t in sorted(r.tickets.values(), key=lambda t: (t["created_at"], t["id"])):
        written[("titled as {}", t["subject"])].append(t)
        for phrase in r.ticket_phrases:
            if (wording := phrase.wording_of(t["body"])) is not None:
                written[(f"worded as {{}} ({phrase.subject!r})", wording)].append(t)
    found = []
    for (how, _), tickets in written.items():
        for earlier, later in combinations(tickets, 2):
            why = ("by the same customer" if later["customer_id"] == earlier["customer_id"]
                   else "and both are still open" if {earlier["status"], later["status"]} <= OPEN_TICKET_STATUSES
                   else f"within {WORDING_GAP.days} days of it"
                   if later["created_at"] - earlier["created_at"] < WORDING_GAP else None)
            if why is not None:
                found.append(Finding("ticket_wording_repeats", later["id"],
                                     f"is {how.replace('{}', earlier['id'], 1)}, {why}"))
    return found


CHECKS: tuple[Callable[[Records], list[Finding]], ...] = (
    causal_references, product_symptoms, duplicate_slack_texts, shipment_routes, shipment_business_days, shipment_speeds,
    shipment_silences, shipment_ship_dates, shipment_clocks, shipment_scans, shipment_exceptions, shipment_origins,
    shipment_hub_repeats,
    staff_hours,
    price_change_moments, price_steps, order_prices, price_adjustments, repeat_orders, order_compatibility, stock_outs,
    backorder_ages, build_dates,
    text_durations, card_claims, delivery_claims, outcome_fit, ledger_claims,
    build_themes, product_launches, shipping_service_areas, prospective_products, address_zips, work_addresses,
    street_names, order_addresses, earned_tiers, account_ages, customer_phones, handbook_steps, handbook_channels,
    handbook_ids,
    hub_scan_minutes,
    status_claims, spec_claims, ticket_references, ticket_counts, refund_line_fit, return_follow_ups, ticket_stories,
    restocking_fees,
    refund_approvers, refund_units, doa_refunds, late_refunds_asked, escalation_fit, resolution_fit, resolution_teams,
    stale_tickets,
    resolution_details,
    replacement_records, replacements_placed, replacement_approvals,
    replacement_orders, never_received_items, return_refund_timing, shipping_refund_timing, duplicate_ticket_texts,
    ticket_wording_repeats, slack_claims,
    slack_tickets, slack_ticket_states, slack_ticket_ages, slack_warehouse_staff, slack_ticket_tags, slack_stances,
    slack_hardware_tests, brand_categories, slack_categories, slack_held_products, slack_stale_dates, slack_stock_claims,
    slack_kb_edits, slack_repeats,
    slack_actor_voice, slack_thread_topics, slack_voice_ranks, slack_office_hours, slack_day_end, slack_self_named,
    slack_weekdays, slack_reactions, slack_new_hires, slack_raw_ids,
    slack_sentence_repeats,
    ticket_raw_ids, ticket_quotes, ticket_builds, ticket_priciest_products, ticket_channels, ticket_assignees,
    ticket_owned_products, ticket_old_parts, ticket_bought_parts, ticket_budgets, product_model_years,
    ticket_priorities, safety_escalations, tracking_numbers,
)
"""Every lint check, in report order; each one's name is its finding class."""


def lint(world: World, seeds: Seeds) -> list[Finding]:
    """Every finding of every check on ``world``, judged by the content folder's ``seeds``."""
    records = Records(world, seeds)
    return [finding for check in CHECKS for finding in check(records)]


def counts(findings: list[Finding]) -> dict[str, int]:
    """Findings per check, every check listed (zero included), in report order."""
    tally = Counter(f.check for f in findings)
    return {check.__name__: tally[check.__name__] for check in CHECKS}
