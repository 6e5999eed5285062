"""Support tickets and what became of them: resolutions, refunds, escalations, statuses."""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from corecraft.world import models as m
from corecraft.world.fidelity import (
    CARRIER_LABELS,
    DELIVERY_CLAIM,
    DURATION_CLAIMS,
    LATE_REFUND_ASKED,
    LATE_REFUND_FOLLOW_UP,
    OFF_THE_QUEUE,
    OPEN_TICKET_STATUSES,
    PRICE_DROP_QUOTE,
    RETURN_FOLLOW_UP,
    TICKET_ID,
    WORDING_GAP,
    card_problems,
    count_problems,
    days_past_window,
    duration_problems,
    measure,
    order_states,
    ordered_parts,
    paid_share,
    price_drops,
    priciest_products,
    received_products,
    reference_problem,
    refund_at_stake,
    restocked,
    stale_details,
    status_problems,
    symptom_problems,
    told_products,
    with_real_counts,
    with_real_specs,
)
from corecraft.world.generation.base import (
    TICKET_CHANNELS,
    TYPE_DEPARTMENT,
    GeneratorBase,
    add_business_days,
    money,
)
from corecraft.world.rules import (
    REFUND_PAYOUT_HOURS,
    SAFETY_RESPONSE,
    office_clock,
    office_time_after,
    phone_line_open,
)
from corecraft.world.seeds import TicketPhrase


@dataclass
class _TicketStory:
    """The records one ticket's text may speak of."""

    ticket: dict[str, Any]
    customer: dict[str, Any]
    order: dict[str, Any] | None
    ship: dict[str, Any] | None
    payment: dict[str, Any] | None
    lines: list[dict[str, Any]]
    held: list[dict[str, Any]]
    """The customer's parts the ticket is about: its order's lines and its build's parts."""
    own_orders: list[dict[str, Any]]
    earlier_tickets: list[dict[str, Any]]
    items: list[tuple[str, int]] = field(default_factory=list)
    """The order's lines as (product name, quantity)."""
    refunds_before: list[dict[str, Any]] = field(default_factory=list)
    excluded: set[str] = field(default_factory=set)
    """Products the text may not name (already returned and refunded)."""


def _named(ticket: dict[str, Any]) -> list[str]:
    """The product a generated ticket's text names (none: an empty list)."""
    return [ticket["_named"]] if ticket.get("_named") else []


def _known(ticket: dict[str, Any], products: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The product staff can name in a ticket's notes: the one it was written about, when its words name it or it
    is on the ticket's order or saved build ("a Gigabyte motherboard" on no order names no model)."""
    product = products[ticket["_named"]] if ticket.get("_named") else None
    if product is None or ticket["order_id"] or ticket.get("build_id"):
        return product
    return product if product["name"].casefold() in f"{ticket['subject']}\n{ticket['body']}".casefold() else None


@dataclass
class _TicketText:
    """A ticket's subject and body, and the product it names (if any)."""

    subject: str
    body: str
    named: str | None
    wording: str
    """The phrase's wording it was written in."""
    title: str
    """The phrase's subject line it carries."""


class SupportMixin(GeneratorBase):
    """Tickets about real orders, then their resolutions, refunds and escalations."""

    def tickets(self) -> None:
        orders = self.rows[m.Order]
        ship_by_order = {s["order_id"]: s for s in self.rows[m.Shipment]}
        customers = {c["id"]: c for c in self.rows[m.Customer]}
        staff = self.staff_by_department()
        builds = [b for b in self.rows[m.Build] if b["customer_id"]]
        tickets: list[dict[str, Any]] = []
        n = 0
        attempts = 0
        while len(tickets) < self.recipe.counts.tickets and attempts < self.recipe.counts.tickets * 20:
            attempts += 1
            kind = self.pick(self.recipe.ticket_types)
            order: dict[str, Any] | None = None
            build_id: str | None = None
            after: datetime = self.start
            if kind in ("return", "troubleshooting"):
                order = self.rng.choice(orders)
                ship = ship_by_order.get(order["id"])
                if not ship or not ship["delivered_at"]:
                    continue
                after = ship["delivered_at"]
            elif kind == "shipping":
                order = self.rng.choice(orders)
                ship = ship_by_order.get(order["id"])
                if not ship:
                    continue
                after = datetime.fromisoformat(ship["events"][0]["ts"]) + timedelta(days=1)  # a day after the label
            elif kind in ("billing", "order_issue"):
                order = self.rng.choice(orders)
                after = order["created_at"] + timedelta(hours=2)
            if order is not None:
                customer = customers[order["customer_id"]]
            elif kind == "recommendation" and builds and self.rng.random() < 0.4:
                build = self.rng.choice(builds)
                customer, build_id = customers[build["customer_id"]], build["id"]
                after = build["created_at"]
            else:
                customer = self.rng.choice(self.rows[m.Customer])
                after = customer["created_at"]
            created = self.between(after, min(after + timedelta(days=20), self.now))
            if created > self.now:
                continue
            tickets.append(self.ticket(n, kind, customer, order, build_id, created, staff))
            n += 1
        self.dated_ids(tickets, "tick", "created_at")
        self.rows[m.SupportTicket] = tickets

    def saved_builds(self) -> None:
        """A ticket is about a build its customer had saved by then: a build dated later (its parts came out
        after the ticket) gives way to the customer's latest build saved before the ticket, if any."""
        builds = {b["id"]: b for b in self.rows[m.Build]}
        for t in self.rows[m.SupportTicket]:
            build = builds.get(t["build_id"] or "")
            if build is not None and build["created_at"] > t["created_at"]:
                saved = [b for b in builds.values() if b["customer_id"] == t["customer_id"]
                         and b["created_at"] <= t["created_at"]]
                t["build_id"] = max(saved, key=lambda b: (b["created_at"], b["id"]))["id"] if saved else None

    def ticket(self, n: int, kind: str, customer: dict[str, Any], order: dict[str, Any] | None,
               build_id: str | None, created: datetime, staff: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        age = self.now - created
        roll = self.rng.random()
        if age < timedelta(days=3):
            status = "new" if roll < 0.45 else "open" if roll < 0.8 else "pending_customer"
        else:
            status = "closed" if roll < 0.45 else "resolved" if roll < 0.85 else "open" if roll < 0.93 else "pending_customer"
        priority = self.seeds.fidelity.ticket_priority(kind, "", order["total"] if order else None,
                                                       customer["loyalty_tier"])
        if self.rng.random() < 0.1:  # mis-triaged on intake; triage sets it by the rules (once not new)
            priority = self.rng.choice(["low", "normal", "high"])
        team = staff[TYPE_DEPARTMENT[kind]]
        queue = [e for e in team if e["title"] not in OFF_THE_QUEUE]  # those who work the team's queue
        picked = None if status == "new" and self.rng.random() < 0.7 else self.rng.choice(team)
        if picked is not None and picked["title"] in OFF_THE_QUEUE:  # drawn as it was, handed on to one who works
            picked = self.local_rng("queue", str(n)).choice(queue) if queue else picked
        assignee = picked["id"] if picked else None
        updated = self.between(created, min(created + timedelta(days=6), self.now)) if status != "new" else created
        stale = timedelta(days=self.policy.stale_ticket_days)
        went_stale = status in ("open", "pending_customer") and updated + stale < self.now
        if went_stale:  # no reply from the customer since: closed (kb ticket statuses)
            status, updated = "closed", updated + stale
        channel = self.pick(TICKET_CHANNELS)
        if channel == "phone" and not phone_line_open(created.astimezone(self.tz), self.policy.carrier_holidays):
            channel = "email"  # a call after hours is a voicemail, which reaches the queue as an email
        if channel == "phone" and assignee is None:  # the agent who takes a call holds its ticket
            assignee = self.local_rng("call", str(n)).choice(queue or team)["id"]
        return {
            "_order": n, "customer_id": customer["id"], "order_id": order["id"] if order else None,
            "build_id": build_id, "type": kind, "channel": channel, "priority": priority,
            "status": status, "assignee_id": assignee, "created_at": created, "updated_at": updated,
            "_phrase": self.rng.choice(self.seeds.phrases.tickets[kind]), "_customer": customer,
            "_stale": went_stale,
        }

    def fill_ticket_text(self) -> None:
        """Subject and body for each ticket: the drawn phrase if the records bear it out, else another of
        its type that they do (drawn from the ticket's own randomness). No two tickets share a body."""
        orders = {o["id"]: o for o in self.rows[m.Order]}
        ships = {s["order_id"]: s for s in self.rows[m.Shipment]}
        payments = {p["order_id"]: p for p in self.rows[m.Payment]}
        products = {p["id"]: p for p in self.rows[m.Product]}
        lines_by_order = self.lines_by_order()
        parts_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for part in self.rows[m.BuildComponent]:
            parts_of[part["build_id"]].append(products[part["product_id"]])
        orders_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for o in sorted(self.rows[m.Order], key=lambda o: o["created_at"]):
            orders_of[o["customer_id"]].append(o)
        earlier_tickets: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.ticket_bodies: set[str] = set()
        self.category_of = {pid: p["category"] for pid, p in products.items()}
        self.phrase_tickets: dict[TicketPhrase, list[dict[str, Any]]] = defaultdict(list)
        self.wording_uses: Counter[str] = Counter()
        self.wording_times: dict[str, list[datetime]] = defaultdict(list)  # when each wording's tickets were written
        self.staff_by_id: dict[str, dict[str, Any]] = {e["id"]: e for e in self.rows[m.Employee]}
        for t in sorted(self.rows[m.SupportTicket], key=lambda t: (t["created_at"], t["id"])):
            order = orders.get(t["order_id"]) if t["order_id"] else None
            if order:
                product = products[self.rng.choice(lines_by_order[order["id"]])["product_id"]]
            else:
                product = self.rng.choice(self.rows[m.Product])
                if not self.launched(product, t["created_at"]):  # asked about before it came out: its nearest peer
                    product = self.launched_peer(product, t["created_at"]) or product
            ship = ships.get(t["order_id"]) if t["order_id"] else None
            customer = t.pop("_customer")
            values = self.placeholders(customer, order, product, ship, t["id"], t["created_at"])
            drawn = t.pop("_phrase")
            lines = [products[ln["product_id"]] for ln in lines_by_order.get(t["order_id"] or "", [])]
            builds = (t["build_id"], (order or {}).get("build_id"))
            held = lines + [p for b in builds if b for p in parts_of[b]]
            story = _TicketStory(t, customer, order, ship, payments.get(t["order_id"] or ""), lines, held,
                                 [o for o in orders_of[t["customer_id"]] if o["created_at"] < t["created_at"]],
                                 earlier_tickets[t["customer_id"]],
                                 [(products[ln["product_id"]]["name"], ln["quantity"])
                                  for ln in lines_by_order.get(t["order_id"] or "", [])])
            t["_text"] = (drawn, story, product, values)
            self.write_ticket_text(t, self.seeds.phrases.tickets[t["type"]], self.local_rng("ticket-text", t["id"]),
                                   ships, product, first=drawn)
            earlier_tickets[t["customer_id"]].append(t)

    def write_ticket_text(self, t: dict[str, Any], pool: list[TicketPhrase], rng: random.Random,
                          ships: dict[str, dict[str, Any]], product: dict[str, Any], first: TicketPhrase | None = None,
                          fixed: bool = False, extra: dict[str, Any] | None = None, reserve: bool = True) -> None:
        """Give ``t`` the text of the first phrase (``first``, then ``pool`` in ``rng``'s order, then with
        ``reserve`` its type's reserve phrases) that its records bear out, naming ``product`` (only it when
        ``fixed``); its text stays as it was when none does."""
        drawn, story, _, values = t["_text"]
        old = t.get("body")
        self.ticket_bodies.discard(old or "")
        spare = self.seeds.phrases.ticket_reserve.get(t["type"], []) if reserve else []
        candidates = ([first] if first else []) + rng.sample(pool, len(pool)) + spare
        # a clash only as a last resort, and a wording of the last month's tickets just before it
        for phrase in sorted(candidates, key=lambda phrase: (self.clashes(t, phrase), self.crowding(phrase, t)[0])):
            text = self.ticket_text(phrase, story, product, {**values, **(extra or {})}, rng, ships, fixed)
            if text is not None:
                t["subject"], t["body"], t["_named"] = text.subject, text.body, text.named
                for key, wording in (("_wording", text.wording), ("_title", text.title)):
                    if key in t:
                        self.wording_uses[t[key]] -= 1
                        self.wording_times[t[key]].remove(t["created_at"])
                    self.wording_uses[wording] += 1
                    self.wording_times[wording].append(t["created_at"])
                    t[key] = wording
                if old is not None:
                    self.phrase_tickets[t["_text"][0]] = [o for o in self.phrase_tickets[t["_text"][0]] if o is not t]
                t["_text"] = (phrase, story, product, values)
                self.phrase_tickets[phrase].append(t)
                self.ticket_bodies.add(text.body)
                return
        if old is None:  # nothing fits: the drawn phrase as it comes, which lint will report
            t["subject"], t["body"], t["_named"] = drawn.subject.format(**values), drawn.body.format(**values), None
            self.ticket_bodies.add(t["body"])
        else:
            self.ticket_bodies.add(old)

    def clashes(self, t: dict[str, Any], phrase: TicketPhrase) -> bool:
        """Whether another ticket written from ``phrase`` is by ``t``'s customer, or may be in the queue alongside
        ``t`` (open, or a return written in the last two weeks: one resolved for now reopens while its item is
        awaited): one customer never writes the same words twice, and a queue in one wording reads machine-made."""
        def live(ticket: dict[str, Any]) -> bool:
            return ticket["status"] in OPEN_TICKET_STATUSES or (
                ticket["type"] == "return" and ticket["created_at"] > self.now - timedelta(days=14))
        return any(o is not t and (o["customer_id"] == t["customer_id"] or (live(t) and live(o)))
                   for o in self.phrase_tickets[phrase])

    def crowding(self, phrase: TicketPhrase, t: dict[str, Any]) -> tuple[bool, int]:
        """How crowded the least crowded wording of ``phrase`` is for ``t``: whether a ticket within
        :data:`WORDING_GAP` of it was written in that wording, and how many tickets were."""
        return min(self.wording_crowding(w, t) for w in self.wordings(phrase, t))

    @staticmethod
    def wordings(phrase: TicketPhrase, t: dict[str, Any]) -> list[str]:
        """The wordings ``t`` may be written in from ``phrase``: its ``first_contact`` alone when the phrase quotes
        an earlier ticket and ``t``'s customer has none to quote, else its body and variants."""
        earlier = t["_text"][1].earlier_tickets
        if "{ticket_id}" in phrase.body and phrase.first_contact \
                and not any(reference_problem(t, e) is None for e in earlier):
            return [phrase.first_contact]
        return [phrase.body, *phrase.variants]

    def wording_crowding(self, wording: str, t: dict[str, Any]) -> tuple[bool, int]:
        near = any(abs(t["created_at"] - when) < WORDING_GAP for when in self.wording_times[wording]
                   if when != t["created_at"])
        return near, self.wording_uses[wording]

    def wording(self, phrase: TicketPhrase, t: dict[str, Any]) -> str:
        """The least crowded wording of ``phrase`` for ``t`` (:meth:`crowding`; a tie drawn from the ticket's own
        randomness): customers with one complaint write it each in their own words, and a month's tickets never
        in the same ones."""
        return self.least_crowded(self.wordings(phrase, t), t, "wording")

    def title(self, phrase: TicketPhrase, t: dict[str, Any]) -> str:
        """The least crowded subject line of ``phrase`` for ``t``, as :meth:`wording` picks its body (a subject
        line shared by several phrases is counted once, across them)."""
        return self.least_crowded(phrase.subjects, t, "title")

    def least_crowded(self, wordings: list[str], t: dict[str, Any], what: str) -> str:
        best = min(self.wording_crowding(w, t) for w in wordings)
        return self.local_rng(what, t["id"]).choice([w for w in wordings if self.wording_crowding(w, t) == best])

    def ticket_text(self, phrase: TicketPhrase, story: _TicketStory, product: dict[str, Any], values: dict[str, Any],
                    rng: random.Random, ships: dict[str, dict[str, Any]], fixed: bool = False) -> _TicketText | None:
        """The phrase filled in so that it fits the ticket's records, or None when it cannot."""
        rules = self.seeds.fidelity
        t = story.ticket

        def naming(chosen: dict[str, Any] | str) -> dict[str, Any]:
            """The part the text names (a product, or its id), its name, sku and brand filled in."""
            part = next(p for p in self.rows[m.Product] if p["id"] == chosen) if isinstance(chosen, str) else chosen
            values.update(product=part["name"], sku=part["sku"], brand=part["brand"])
            return part

        product = naming(product)
        body = wording = self.wording(phrase, t)  # its first_contact when there is no earlier ticket to quote
        title = self.title(phrase, t)
        references = [e for e in story.earlier_tickets if reference_problem(t, e) is None]
        template = f"{title}\n{body}"
        allowed = rules.allowed_categories(template)
        names_product = any(f"{{{k}}}" in template for k in ("product", "sku", "brand"))
        if fixed and not names_product:
            return None
        excluded = set() if RETURN_FOLLOW_UP.search(template) else story.excluded
        quoting_ticket = template.replace("{ticket_id}", references[-1]["id"] if references else "")
        excluded = excluded | told_products(t, quoting_ticket, story.earlier_tickets, _named, rules)
        if rules.prospective(template):  # a part they may get is not one they hold
            excluded = excluded | {p["id"] for p in story.held}
        if rules.old_part_problems(template, ordered_parts(story.own_orders, lambda oid: self.lines_by_order()[oid],
                                                           self.category_of.__getitem__), t["created_at"]):
            return None  # a part they call years old is not one they have just bought from us
        if names_product and ((allowed is not None and product["category"] not in allowed)
                              or product["id"] in excluded):
            fitting = [p for p in (story.lines if story.order else self.rows[m.Product])
                       if (allowed is None or p["category"] in allowed) and p["id"] not in excluded
                       and self.launched(p, t["created_at"])]
            if fixed or not fitting:
                return None
            product = naming(rng.choice(fitting))
        if names_product and rules.owned(template):  # a part they review is one they had received from us
            received = received_products(story.own_orders, ships, self.lines_by_order(), t["created_at"])
            if product["id"] not in received:
                owned = sorted(received - excluded)
                if fixed or not owned:
                    return None
                product = naming(rng.choice(owned))
        if names_product and story.order and rules.calls_pricey(template):  # the costly part is the costliest one
            top = priciest_products(self.lines_by_order()[story.order["id"]])
            if product["id"] not in top:
                costliest = sorted(top - excluded)
                if fixed or not costliest:
                    return None
                product = naming(costliest[0])
        if names_product and story.order and rules.asks_stock(template):  # the part asked after is the one missing
            missing = sorted(p["id"] for p in story.lines if p["stock_status"] == "out_of_stock" and p["id"] not in excluded)
            if missing and product["id"] not in missing:
                if fixed:
                    return None
                product = naming(missing[0])
        if story.order is None:  # a budget or a price heard of: a round figure, plausible for what is asked
            values["amount"] = rules.budget(template, float(values["amount"]))
        elif "price_adjustment" in rules.fit(t["type"], template).refund_reasons:  # a drop is a share of the price
            share = rng.uniform(0.03, 0.1)  # a shelf price keeps the listed price's cents: a drop is whole dollars
            values["amount"] = values.get("refund_amount") or f"{max(1, round(product['price'] * share)):.2f}"
        quoting = template.format(**values)
        claims = [(pattern, kind) for pattern, kind in DURATION_CLAIMS if pattern.search(quoting)]
        measured, measured_ship, payment = story.order, story.ship, story.payment
        if story.order is None and ("{order_id}" in template or claims):  # one of the customer's orders
            bought = rules.bought_category(template)  # "I bought a motherboard from you on order X": X brought one
            candidates = [o for o in story.own_orders if bought is None or bought in {
                self.category_of[p] for p in received_products([o], ships, self.lines_by_order(), t["created_at"])}]
            if not candidates:
                return None
            measured = rng.choice(candidates)
            measured_ship, payment = ships.get(measured["id"]), None
            values.update(order_id=measured["id"], amount=f"{measured['total']:.2f}",
                          carrier=(measured_ship or {}).get("carrier", measured["shipping_method"]),
                          tracking=(measured_ship or {}).get("tracking_number", "not yet assigned"))
        values["carrier"] = CARRIER_LABELS.get(values["carrier"], values["carrier"])  # as people write it
        if "{ticket_id}" in template:  # the ticket quoted is about the same item, when both name one
            quoted = [e for e in references if not names_product or e.get("_named") in (None, product["id"])]
            if not quoted:
                return None
            values["ticket_id"] = quoted[-1]["id"]
            worker = self.staff_by_id[quoted[-1]["assignee_id"]]
            values["employee"] = worker["name"].split()[0]
        if "{tier}" in template:
            if story.customer["loyalty_tier"] == "none":
                return None
            values["tier"] = story.customer["loyalty_tier"]
        for _, kind in claims:
            actual = None if measured is None else measure(kind, t["created_at"], self.tz, measured, measured_ship,
                                                           payment, [], self.policy.carrier_holidays)
            if isinstance(actual, float):  # two at least: nobody writes "1 days" (off by more: the claim fails)
                values["days"] = max(2, round(actual))
            elif actual is not None:
                values["date"] = actual.isoformat()
        text = with_real_counts(with_real_specs(template.format(**values), story.held, rules), story.items)
        named = [product] if names_product else []
        held = {p["category"] for p in story.lines if p["id"] not in excluded} if story.order else None
        delivered = story.ship is not None and story.ship["delivered_at"] is not None \
            and story.ship["delivered_at"] <= t["created_at"]
        subject, body = text.split("\n", 1)
        if t["build_id"] and rules.plans_unbuilt(text):
            return None  # a plan for machines not yet designed is about no saved build
        if body in self.ticket_bodies or symptom_problems(text, named, held, rules) \
                or (story.order and DELIVERY_CLAIM.search(text) and not delivered) \
                or status_problems(text, t["created_at"], story.customer["loyalty_tier"], story.order, story.ship,
                                   story.refunds_before, rules, story.earlier_tickets) \
                or count_problems(text, story.items) \
                or duration_problems(text, t["created_at"], self.tz, measured, measured_ship, payment, [],
                                     self.policy.carrier_holidays) \
                or card_problems(text, payment, rules):
            return None
        return _TicketText(subject, body, product["id"] if names_product else None, wording, title)

    def outcomes(self) -> None:
        """Resolutions, refunds and escalations for tickets, and the statuses they imply."""
        orders = {o["id"]: o for o in self.rows[m.Order]}
        payments = {p["order_id"]: p for p in self.rows[m.Payment]}
        ships = {s["order_id"]: s for s in self.rows[m.Shipment]}
        products = {p["id"]: p for p in self.rows[m.Product]}
        lines_by_order = self.lines_by_order()
        line_product = {ln["id"]: ln["product_id"] for ln in self.rows[m.OrderLine]}
        employees = {e["id"]: e for e in self.rows[m.Employee]}
        tiers = {c["id"]: c["loyalty_tier"] for c in self.rows[m.Customer]}
        staff = self.staff_by_department()
        refunded: dict[str, float] = defaultdict(float)
        resolutions: list[dict[str, Any]] = []
        refunds: list[dict[str, Any]] = []
        escalations: list[dict[str, Any]] = []
        refunds_of: dict[str, list[dict[str, Any]]] = defaultdict(list)  # by payment id
        returned: set[str] = set()  # the order lines refunded so far
        self.shipping_back: set[str] = set()  # the orders whose shipping was refunded so far
        promise = self.seeds.fidelity.replacement_promise
        reports = self.missing_reports()
        for n, t in enumerate(self.rows[m.SupportTicket]):
            missing = {p for when, p in reports[t["order_id"] or ""] if when < t["updated_at"]}
            order = orders.get(t["order_id"]) if t["order_id"] else None
            payment = payments.get(order["id"]) if order else None
            if payment is not None:
                self.drop_refunded_items(t, [x for x in refunds_of[payment["id"]] if x["created_at"] <= t["created_at"]],
                                         line_product, ships, products)
            if t["type"] == "return" and t["status"] in OPEN_TICKET_STATUSES:
                self.request_refund(t, order)
            escalation = self.escalation(n, t, staff) if self.rng.random() < 0.12 else None
            safety = t["status"] != "new" and self.seeds.fidelity.safety(f"{t['subject']}\n{t['body']}")
            if escalation is None and safety:  # a triaged safety issue goes to engineering (the KB)
                escalation = self.escalation(n, t, staff, self.local_rng("safety-escalation", t["id"]))
            if escalation is not None and safety:  # at once: a safety issue is high priority
                soon = timedelta(minutes=self.local_rng("safety-soon", t["id"]).randint(
                    10, SAFETY_RESPONSE // timedelta(minutes=1) - 5))
                escalation["created_at"] = max(t["created_at"], min(t["updated_at"], office_time_after(
                    t["created_at"].astimezone(self.tz), soon, self.policy.carrier_holidays)))
            if t["_stale"]:
                resolutions.append({"_order": n, "ticket_id": t["id"], "resolved_by_id": t["assignee_id"],
                                    "outcome": "no_action", "refund": None, "created_at": t["updated_at"], "_replaces": None,
                                    "_details": stale_details(self.policy.stale_ticket_days)})
            elif t["status"] in ("resolved", "closed"):
                resolver = employees[t["assignee_id"]] if t["assignee_id"] else self.rng.choice(staff["support"])
                outcome, refund = self.outcome(t, order, payment, ships, lines_by_order, products, refunded,
                                               returned, missing)
                if refund is not None and refund["reason"] == "price_adjustment" \
                        and not self.refit_ticket_text(t, refund, products[refund["_line"]["product_id"]], ships):
                    outcome, refund = "no_action", None  # no text asks for that drop: nothing refunded
                    self.rng.randint(*REFUND_PAYOUT_HOURS)  # the hours a refund takes to process: the draw keeps the shared stream
                if refund is not None and refund["reason"] == "shipping_delay" \
                        and not LATE_REFUND_ASKED.search(f"{t['subject']}\n{t['body']}"):
                    self.refit_late_ask(t, ships)  # the shipping is refunded because the customer asks for it
                if outcome == "no_action" and PRICE_DROP_QUOTE.search(t["body"]):
                    self.refit_price_elsewhere(t, ships)  # nothing owed: the lower price was another store's
                if refund is not None and "_line" in refund:  # a line's price is adjusted once, and not returned after
                    returned.add(refund.pop("_line")["id"])
                if refund is not None and refund["lines"]:
                    self.name_refunded_item(t, products[line_product[refund["lines"][0]["order_line_id"]]], ships)
                    self.restock(refund, t)  # the text as rewritten says how many, and in what condition
                if refund is not None and not self.inspected_by_now(t, refund):  # the item is not back yet
                    self.rng.randint(*REFUND_PAYOUT_HOURS)  # the hours a refund takes to process: the draw keeps the shared stream
                    t["status"] = "pending_customer"  # the return instructions are sent; the item is awaited
                    self.request_refund(t, order)
                    refund = None
                elif refund is not None and order is not None and payment is not None:  # a refund has both
                    approver = resolver if resolver["refund_limit"] >= refund["amount"] else next(
                        e for e in self.rows[m.Employee] if e["department"] == "billing"
                        and e["refund_limit"] >= refund["amount"])
                    refund.update({"_order": n, "ticket_id": t["id"], "approved_by_id": approver["id"],
                                   "created_at": t["updated_at"]})
                    if refund["reason"] in ("doa", "shipping_delay"):
                        self.shipping_back.add(order["id"])
                    refund["processed_at"] = refund["created_at"] + timedelta(hours=self.rng.randint(*REFUND_PAYOUT_HOURS))
                    refund["status"] = "processed" if refund["processed_at"] <= self.now else "approved"
                    if refund["status"] == "approved":
                        refund["processed_at"] = None
                    refunds.append(refund)
                    refunds_of[payment["id"]].append(refund)
                    returned.update(ln["order_line_id"] for ln in refund["lines"])
                    refunded[payment["id"]] += refund["amount"]
                    full = refunded[payment["id"]] >= payment["amount"] - 0.005
                    payment["status"] = "refunded" if full else "partially_refunded"
                    order["status"] = "refunded" if full else "partially_refunded"
                    order["updated_at"] = max(order["updated_at"], refund["created_at"])
                if outcome == "order_updated" and order is not None and order["status"] != "cancelled":
                    order["updated_at"] = max(order["updated_at"], t["updated_at"])  # the correction is a change
                if t["status"] in ("resolved", "closed"):
                    details = self.details(t, outcome, refund, _known(t, products), resolver)
                    approved = outcome == "replacement_sent" and re.search(promise.approval, details) is not None
                    resolutions.append({  # a replacement (re-send) is placed once the return (shortfall) is logged
                        "_order": n, "ticket_id": t["id"], "resolved_by_id": resolver["id"],  # (replacement_orders)
                        "outcome": "no_action" if outcome == "replacement_sent" else outcome,
                        "refund": refund, "created_at": t["updated_at"], "_details": details,
                        "_replaces": self.replaced_units(t, order, lines_by_order, returned, missing,
                                                        promise.resends(details))
                        if approved else None,
                    })
            if escalation is not None:  # settled before the ticket was (a return's once the item was inspected)
                settled = t["updated_at"] - timedelta(minutes=self.local_rng("escalation-settled", t["id"]).randint(20, 150))
                escalation["resolved_at"] = max(settled, escalation["created_at"]) \
                    if t["status"] in ("resolved", "closed") else None
            if escalation is not None and self.fit_escalation(escalation, t, order, ships.get(t["order_id"] or ""),
                                                              employees[escalation["created_by_id"]], tiers[t["customer_id"]],
                                                              _known(t, products)):
                escalations.append(escalation)
        self.one_approval_a_unit(resolutions, lines_by_order, products)
        self.follow_returned_items(ships, products, refunds_of, line_product, payments)
        for t in self.rows[m.SupportTicket]:
            t.pop("_text")
            t.pop("_named")
            t.pop("_wording", None)
            t.pop("_title", None)
            t.pop("_stale")
            if t["status"] != "new":  # triaged: the priority follows the KB's rules, the text's words too
                order = orders.get(t["order_id"] or "")
                t["priority"] = self.seeds.fidelity.ticket_priority(
                    t["type"], f"{t['subject']}\n{t['body']}", order["total"] if order else None,
                    tiers[t["customer_id"]])
        self.dated_ids(refunds, "ref", "created_at")
        self.dated_ids(resolutions, "res", "created_at")
        self.dated_ids(escalations, "esc", "created_at")
        for r in resolutions:
            refund = r.pop("refund")
            r["refund_id"] = refund["id"] if refund else None
            r["details"] = f"[{r['ticket_id']}] " + r.pop("_details").format(refund=r["refund_id"] or "")
        self.rows[m.Refund] = refunds
        self.rows[m.Resolution] = resolutions
        self.rows[m.Escalation] = escalations

    def one_approval_a_unit(self, resolutions: list[dict[str, Any]], lines_by_order: dict[str, list[dict[str, Any]]],
                            products: dict[str, dict[str, Any]]) -> None:
        """A unit is replaced on one approval: a resolution that would approve a replacement for units of an
        order's product all approved already (by a resolution made before it, which its resolver sees) points the
        customer to the first of those tickets instead (``approved_before``), and no order comes of it. Done on
        the finished resolutions, with no draw."""
        promise = self.seeds.fidelity.replacement_promise
        approved: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for res in sorted((x for x in resolutions if x["_replaces"] is not None),
                          key=lambda x: (x["created_at"], x["_order"])):
            order, product_id, _ = res["_replaces"]
            earlier = approved[order["id"], product_id]
            units = sum(ln["quantity"] for ln in lines_by_order[order["id"]] if ln["product_id"] == product_id)
            if sum(x["_replaces"][2] for x in earlier) < units:
                earlier.append(res)
                continue
            first = earlier[0]
            name = products[product_id]["name"].replace("{", "{{").replace("}", "}}")  # the details are formatted
            res["_details"] = f"{name}: " + promise.approved_before.format(
                ticket_id=first["ticket_id"], date=first["created_at"].astimezone(self.tz).date().isoformat()) + "."
            res["_replaces"] = None

    def office_work(self) -> None:
        """Put what staff did (resolutions, the refunds they made, escalations made and settled) in working hours:
        each day's records move together on :func:`~corecraft.world.rules.office_clock`, so they keep their day,
        their order and their ids. Done on the finished records, with no draw; a day stays as it was when any of
        its records would move past a record about its order or ticket (its creation, another ticket on the
        order, a parcel scan, a Slack post naming it), or past the world's now."""
        tickets = {t["id"]: t for t in self.rows[m.SupportTicket]}
        orders = {o["id"]: o for o in self.rows[m.Order]}
        by_order: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for t in self.rows[m.SupportTicket]:
            if t["order_id"]:
                by_order[t["order_id"]].append(t)
        scans = {s["order_id"]: [datetime.fromisoformat(e["ts"]) for e in s["events"]] for s in self.rows[m.Shipment]}
        near: dict[str, list[datetime]] = {  # by ticket: the moments a move may not cross (its own creation too)
            t["id"]: [*(o["created_at"] for o in by_order.get(t["order_id"] or "", [t])),
                      *scans.get(t["order_id"] or "", [])] for t in self.rows[m.SupportTicket]}
        for msg, named in self.slack_naming_orders():
            for ticket_id in {*TICKET_ID.findall(msg["text"]), *(t["id"] for o in named for t in by_order.get(o, []))}:
                if ticket_id in near:
                    near[ticket_id].append(msg["ts"])
        moves: dict[str, list[tuple[dict[str, Any], str, str]]] = defaultdict(list)  # by day: (row, field, ticket)
        for table, fields in ((m.Resolution, ("created_at",)), (m.Refund, ("created_at",)),
                              (m.Escalation, ("created_at", "resolved_at"))):
            for row in self.rows[table]:
                for key in fields:
                    if row.get(key) is not None and row.get("ticket_id"):
                        moves[row[key].astimezone(self.tz).strftime("%Y-%m-%d")].append((row, key, row["ticket_id"]))
        for day in sorted(moves):
            planned = [(row, key, tid, row[key], office_clock(row[key].astimezone(self.tz)))
                       for row, key, tid in moves[day]]
            if any(new > self.now or new <= tickets[tid]["created_at"] or any(
                    min(old, new) < x < max(old, new) for x in near[tid]) for _, _, tid, old, new in planned):
                continue
            for row, key, tid, old, new in planned:
                row[key] = new
                ticket = tickets[tid]
                if key == "created_at" and ticket["updated_at"] == old:
                    ticket["updated_at"] = new
                if row.get("processed_at") is not None and row["processed_at"] < new:
                    row["processed_at"] = new + (row["processed_at"] - old)
                order = orders.get(ticket["order_id"] or "")
                if order is not None and order["updated_at"] == old:
                    order["updated_at"] = new
                if row.get("updated_at") == old:
                    row["updated_at"] = new

    def request_refund(self, t: dict[str, Any], order: dict[str, Any] | None) -> None:
        """A return ticket still being worked on puts its fulfilled order in ``refund_requested`` (kb-order-status)
        from when it was written."""
        if order is not None and order["status"] == "fulfilled":
            order["status"] = "refund_requested"
            order["updated_at"] = max(order["updated_at"], t["created_at"])

    def inspected_by_now(self, t: dict[str, Any], refund: dict[str, Any]) -> bool:
        """Whether the item ``refund`` pays for, when it is sent back (``return_inspection.reasons``), could be back
        and inspected by now: some ``return_inspection.business_days`` carrier business days after ``t`` was
        written (drawn from the ticket's own randomness), in working hours. When it could, the ticket is resolved
        (and the refund made) no earlier than that; True for a refund of nothing sent back."""
        inspection = self.seeds.fidelity.return_inspection
        if refund["reason"] not in inspection.reasons:
            return True
        rng = self.local_rng("return-inspected", t["id"])
        back = add_business_days(t["created_at"], rng.randint(*inspection.business_days),
                                 self.policy.carrier_holidays).replace(hour=rng.randint(9, 16), minute=rng.randint(0, 59))
        if back > self.now:
            return False
        t["updated_at"] = max(t["updated_at"], back)
        return True

    def missing_reports(self) -> dict[str, list[tuple[datetime, str]]]:
        """By order, when a ticket reported which product never came, or came wrong or used (``gone_on_report``):
        one story per item, so it is not returned or replaced after (only the report's own re-send or
        replacement sends it)."""
        pattern = self.seeds.fidelity.gone_on_report
        reports: dict[str, list[tuple[datetime, str]]] = defaultdict(list)
        for t in self.rows[m.SupportTicket]:
            if t["order_id"] and t["_named"] and re.search(pattern, f"{t['subject']}\n{t['body']}", re.IGNORECASE):
                reports[t["order_id"]].append((t["created_at"], t["_named"]))
        return reports

    def replaced_units(self, t: dict[str, Any], order: dict[str, Any] | None,
                       lines_by_order: dict[str, list[dict[str, Any]]], returned: set[str], missing: set[str],
                       resend: bool = False) -> tuple[dict[str, Any], str, int] | None:
        """What a replacement approved on ``t`` replaces: its order, the product (the one the ticket names if
        the order has it, else one of the order's lines not returned (refunded) so far nor reported ``missing``
        by an earlier ticket, drawn from the ticket's own randomness) and how many units (one, unless the ticket
        speaks of several; a ``resend`` of a missing item always one: "ordered 2 ... only received 1"); None for a
        ticket about no order."""
        if order is None:
            return None
        lines = lines_by_order[order["id"]]
        line = next((ln for ln in lines if ln["product_id"] == t["_named"]), None) \
            or self.local_rng("replaced-line", t["id"]).choice(
                [ln for ln in lines if ln["id"] not in returned and ln["product_id"] not in missing] or lines)
        several = re.search(self.seeds.fidelity.several_units, f"{t['subject']}\n{t['body']}", re.IGNORECASE)
        return order, line["product_id"], line["quantity"] if several and not resend else 1

    def phrases_of(self, ticket_type: str) -> list[TicketPhrase]:
        """Every phrase a ticket of ``ticket_type`` may be written in: its pool's, then its reserve's."""
        return [*self.seeds.phrases.tickets[ticket_type], *self.seeds.phrases.ticket_reserve.get(ticket_type, [])]

    def refit_ticket_text(self, t: dict[str, Any], refund: dict[str, Any], product: dict[str, Any],
                          ships: dict[str, dict[str, Any]]) -> bool:
        """Rewrite a ticket refunded as ``price_adjustment`` so it asks for one on ``product`` (whose price
        dropped), quoting the amount refunded: its own phrase if that fits, else another of its type that does
        and would not repeat the wording of another (from the ticket's own randomness). False when no phrase does."""
        phrase = t["_text"][0]
        rules = self.seeds.fidelity
        pool = [p for p in self.phrases_of(t["type"])
                if "${amount}" in p.body
                and refund["reason"] in rules.fit(t["type"], f"{p.subject}\n{p.body}").refund_reasons
                and (p is phrase or not self.clashes(t, p))]
        amount = f"{refund['amount']:.2f}"
        self.write_ticket_text(t, pool, self.local_rng("ticket-refit", t["id"]), ships, product,
                               first=phrase if phrase in pool else None, fixed=True, extra={"refund_amount": amount},
                               reserve=False)
        return t["_named"] == product["id"] and f"${amount}" in t["body"]

    def refit_late_ask(self, t: dict[str, Any], ships: dict[str, dict[str, Any]]) -> None:
        """Rewrite a ticket whose late parcel's shipping is refunded, but whose text asks about something else, so
        it asks for that shipping back (kb-late-delivery-compensation refunds it once asked): another phrase of its
        type that asks and that its records bear out when it was written (before the date: if the parcel misses
        it; after: that it came late), from the ticket's own randomness. As it was when none fits: the resolution
        then says the customer asked later (``LATE_REFUND_FOLLOW_UP``)."""
        rules = self.seeds.fidelity
        pool = [p for p in self.phrases_of(t["type"])
                if LATE_REFUND_ASKED.search(f"{p.subject}\n{p.body}")
                and "shipping_delay" in rules.fit(t["type"], f"{p.subject}\n{p.body}").refund_reasons
                and not self.clashes(t, p)]
        self.write_ticket_text(t, pool, self.local_rng("ticket-late-ask", t["id"]), ships, t["_text"][2],
                               reserve=False)

    def refit_price_elsewhere(self, t: dict[str, Any], ships: dict[str, dict[str, Any]]) -> None:
        """Rewrite a ticket that quotes a drop on our site but is owed nothing (no drop in the price history, or
        none weighed) so its customer saw the lower price at another store, which the resolution then explains:
        another phrase of its type that says so, on the item it named (from the ticket's own randomness); as it
        was when none fits, which lint's ``price_adjustments`` reports."""
        elsewhere = self.seeds.fidelity.issues["competitor_price"].pattern
        pool = [p for p in self.phrases_of(t["type"])
                if re.search(elsewhere, p.body, re.IGNORECASE) and not self.clashes(t, p)]
        named = next((p for p in self.rows[m.Product] if p["id"] == t["_named"]), t["_text"][2])
        self.write_ticket_text(t, pool, self.local_rng("ticket-elsewhere", t["id"]), ships, named, fixed=True,
                               reserve=False)

    def name_refunded_item(self, t: dict[str, Any], item: dict[str, Any], ships: dict[str, dict[str, Any]]) -> None:
        """A return refunds one line: the ticket asks to return that item (its own phrase if it names one,
        else another of its type that does), and a later ticket quoting it about the item it named before follows
        it to the refunded one."""
        was = t["_named"]
        if was == item["id"]:
            return
        phrase = t["_text"][0]
        self.write_ticket_text(t, self.seeds.phrases.tickets[t["type"]], self.local_rng("ticket-item", t["id"]),
                               ships, item, first=phrase, fixed=True)
        if was is None or t["_named"] != item["id"]:
            return
        for later in self.rows[m.SupportTicket]:
            if later is not t and later.get("_named") == was and t["id"] in later["body"]:
                self.write_ticket_text(later, self.seeds.phrases.tickets[later["type"]],
                                       self.local_rng("ticket-quote", later["id"]), ships, item,
                                       first=later["_text"][0], fixed=True)

    def follow_returned_items(self, ships: dict[str, dict[str, Any]], products: dict[str, dict[str, Any]],
                              refunds_of: dict[str, list[dict[str, Any]]], line_product: dict[str, str],
                              payments: dict[str, dict[str, Any]]) -> None:
        """A ticket following up on a return (``RETURN_FOLLOW_UP``: "I shipped the X back") names an item sent back
        on its order before it was written: one an earlier return ticket on the order named, or a line refunded
        as returned; one naming another item is rewritten with the last sent back (its own phrase first, from its
        own randomness)."""
        for t in self.rows[m.SupportTicket]:
            if not t["order_id"] or not t["_named"] or not RETURN_FOLLOW_UP.search(f"{t['subject']}\n{t['body']}"):
                continue
            paid = payments.get(t["order_id"])
            sent = [e["_named"] for e in self.rows[m.SupportTicket] if e["order_id"] == t["order_id"]
                    and e["type"] == "return" and e["_named"] and e["created_at"] < t["created_at"]] + [
                line_product[ln["order_line_id"]] for x in (refunds_of[paid["id"]] if paid else [])
                if x["created_at"] < t["created_at"] for ln in x["lines"]]
            if sent and t["_named"] not in sent:
                self.write_ticket_text(t, self.seeds.phrases.tickets[t["type"]],
                                       self.local_rng("ticket-sent-back", t["id"]), ships, products[sent[-1]],
                                       first=t["_text"][0], fixed=True)

    def drop_refunded_items(self, t: dict[str, Any], before: list[dict[str, Any]], line_product: dict[str, str],
                            ships: dict[str, dict[str, Any]], products: dict[str, dict[str, Any]]) -> None:
        """A ticket does not complain about an item already returned and refunded (it names another), nor tells
        another story of an item an earlier return ticket told one of, nor says of its order what the refunds
        made untrue ("still no refund")."""
        gone = {line_product[ln["order_line_id"]] for x in before for ln in x["lines"]}
        story = t["_text"][1]
        story.refunds_before, story.excluded = before, gone
        kept = {p["category"] for p in story.lines if p["id"] not in gone}
        text = f"{t['subject']}\n{t['body']}"
        stale = symptom_problems(text, [], kept, self.seeds.fidelity) if not t["_named"] else []
        told = told_products(t, text, story.earlier_tickets, _named, self.seeds.fidelity)
        if ((t["_named"] in gone or stale) and t["type"] != "billing" and not RETURN_FOLLOW_UP.search(text)) \
                or t["_named"] in told \
                or status_problems(text, t["created_at"], story.customer["loyalty_tier"], story.order, story.ship,
                                   before, self.seeds.fidelity, story.earlier_tickets):
            phrase = t["_text"][0]
            self.write_ticket_text(t, self.seeds.phrases.tickets[t["type"]], self.local_rng("ticket-kept", t["id"]),
                                   ships, products[t["_named"]] if t["_named"] else t["_text"][2], first=phrase)

    def restock(self, refund: dict[str, Any], t: dict[str, Any]) -> None:
        """A return's units (one, unless the ticket speaks of several), reason and amount by the handbook's rule:
        what was paid for them, less 15% of their price when the item was opened (as the ticket says, else as drawn
        at inspection) and is of a restocking-fee category. A faulty item (the ticket's issue refunds no plain
        return) is refunded in full, as ``doa`` when reported within the DOA window of delivery (with the
        order's shipping, unless refunded already), else ``defective``."""
        unit_price, quantity, paid_share, left, fee_category, drawn, delivered, shipping = refund["_return"]
        text = f"{t['subject']}\n{t['body']}"
        several = re.search(self.seeds.fidelity.several_units, text, re.IGNORECASE) is not None
        refund["lines"][0]["quantity"] = quantity if several else 1  # the units the ticket speaks of
        line_total = unit_price * refund["lines"][0]["quantity"]
        faulty = "return" not in self.seeds.fidelity.fit(t["type"], text).refund_reasons
        in_window = delivered is not None and t["created_at"] - delivered <= timedelta(days=self.policy.doa_window_days)
        refund["reason"] = ("doa" if in_window else "defective") if faulty else "return"
        opened = fee_category and not faulty and self.seeds.fidelity.item_condition.opened(text, drawn)
        fee_share = self.policy.restocking_fee_pct / 100 if opened else 0
        shipping = shipping if refund["reason"] == "doa" else 0.0  # a DOA refund includes the shipping paid
        refund["amount"] = min(money(line_total * (paid_share - fee_share) + shipping), left)
        refund["_restocked"] = opened

    def outcome(self, t: dict[str, Any], order: dict[str, Any] | None, payment: dict[str, Any] | None,
                ships: dict[str, dict[str, Any]], lines_by_order: dict[str, list[dict[str, Any]]],
                products: dict[str, dict[str, Any]], refunded: dict[str, float],
                returned: set[str], missing: set[str]) -> tuple[str, dict[str, Any] | None]:
        """What became of a resolved ticket: its outcome and the refund it issued (None: none). A return
        refunds a line not returned before nor reported ``missing`` from the box by an earlier ticket."""
        kind = t["type"]
        o: dict[str, Any] = order or {}  # both are set whenever ``usable``
        p: dict[str, Any] = payment or {}
        usable = payment is not None and order is not None and p["status"] in ("captured", "partially_refunded") \
            and o["status"] != "cancelled"
        left = money(p["amount"] - refunded[p["id"]]) if payment else 0.0
        if kind == "return" and usable and self.rng.random() < 0.75:
            fee_categories = self.policy.restocking_fee_categories
            drawn = self.rng.choice(lines_by_order[o["id"]])
            roll = self.rng.random() if products[drawn["product_id"]]["category"] in fee_categories else 1.0
            line = drawn
            kept = [ln for ln in lines_by_order[o["id"]] if ln["id"] not in returned and ln["product_id"] not in missing]
            if drawn not in kept:  # a line is returned once, one never received never: another, if any is left
                rng = self.local_rng("return-line", t["id"])
                line = rng.choice(kept or [drawn])
                roll = rng.random()
            category = products[line["product_id"]]["category"]
            unit_price = line["unit_price"] if line in kept else 0.0
            delivered = (ships.get(o["id"]) or {}).get("delivered_at")
            refund = {"payment_id": p["id"], "reason": "return",
                      "lines": [{"order_line_id": line["id"], "quantity": line["quantity"]}],
                      "_return": (unit_price, line["quantity"], paid_share(o), left, category in fee_categories, roll < 0.4,
                                  delivered, 0.0 if o["id"] in self.shipping_back else o["shipping_cost"])}
            self.restock(refund, t)
            if refund["amount"] > 0:
                return "refund_issued", refund
        if kind == "shipping" and usable and o["shipping_cost"] > 0:
            ship = ships.get(o["id"])
            if ship and ship["delivered_at"] and ship["eta"] and ship["delivered_at"] > ship["eta"] \
                    and o["shipping_cost"] <= left:
                # the ticket stays open until the parcel arrives (kb late-delivery): resolved, and refunded, then
                t["updated_at"] = max(t["updated_at"], ship["delivered_at"] + timedelta(minutes=40))
                return "refund_issued", {"payment_id": p["id"], "amount": o["shipping_cost"],
                                         "reason": "shipping_delay", "lines": []}
        if kind == "billing" and usable and self.rng.random() < 0.5:
            self.rng.uniform(0.03, 0.1)  # the share of the order once refunded; the draw keeps the shared stream
            if left > 0:  # a price adjustment is weighed: a real drop is refunded, else none is owed
                drops = price_drops([ln for ln in lines_by_order[o["id"]] if ln["id"] not in returned], products,
                                    o, t["updated_at"], self.policy.price_adjustment_days)
                dropped, amount = max(drops, key=lambda drop: drop[1]) if drops else (None, 0.0)
                if dropped is not None and 0 < amount <= left:  # refunded by (paid - lower) x quantity
                    return "refund_issued", {"payment_id": p["id"], "amount": amount, "reason": "price_adjustment",
                                             "lines": [], "_line": dropped}
                self.rng.randint(*REFUND_PAYOUT_HOURS)  # the hours a refund takes to process: the draw keeps the shared stream
                return "no_action", None
        steps = self.rng.choice(["troubleshooting_steps", "replacement_sent"])
        fit = self.seeds.fidelity.fit(kind, f"{t['subject']}\n{t['body']}")
        fits = fit.outcomes
        if kind == "troubleshooting":  # a fault is replaced; what is no fault (coil whine) is talked through
            return (steps if steps in fits else "replacement_sent" if "replacement_sent" in fits else fits[0]), None
        if kind == "return":  # not refunded: a faulty or wrong item is replaced, any other awaits its return
            return ("replacement_sent" if "replacement_sent" in fits else "no_action"), None
        if kind == "shipping" and order is not None and "replacement_sent" in fit.details \
                and "delivered" in order_states(t["updated_at"], order, ships.get(order["id"]), []):
            return "replacement_sent", None  # damaged in transit
        if kind == "order_issue" and order is not None:  # what can still be done depends on where the parcel is
            states = order_states(t["updated_at"], order, ships.get(order["id"]), [])
            if "not_shipped" in states and "order_updated" in fits:
                return "order_updated", None
            return ("replacement_sent" if "delivered" in states and "replacement_sent" in fits else "no_action"), None
        return {
            "return": "replacement_sent", "recommendation": "recommendation_provided", "order_issue": "no_action",
            "shipping": "no_action", "billing": "no_action", "other": "no_action",
        }[kind], None

    def details(self, t: dict[str, Any], outcome: str, refund: dict[str, Any] | None,
                product: dict[str, Any] | None, resolver: dict[str, Any]) -> str:
        """What the resolver wrote: the outcome in words that fit the ticket's type and the product it is about
        (named, when the ticket names one: a note that says only "the item" reads as a template), and a refund over
        the resolver's own limit as issued on its approver's say."""
        category = product["category"] if product else None
        name = product["name"].replace("{", "{{").replace("}", "}}") if product else None  # the details are formatted
        item = f"the {name}" if name else "the item"
        steps = {
            "gpu": "a clean driver install (DDU), reseating the card and checking its power cables",
            "storage": "checking the drive in BIOS, trying another M.2 slot and initialising it in Disk Management",
            "peripheral": "trying another port and cable and updating its firmware",
            "psu": "checking every power cable and testing with the paperclip method",
            "cooling": "remounting the cooler and checking its fan and pump headers",
            "case": "reseating the front-panel headers and cables",
        }.get(category or "", "reseating RAM, clearing CMOS and updating BIOS")
        wording = self.local_rng("resolution-wording", t["id"])  # resolvers word the same remedy their own ways
        fee = restocked(self.policy.restocking_fee_pct) if refund and refund.get("_restocked") else ""
        late = "."
        if refund and refund["reason"] == "shipping_delay":  # refunded once asked (the ticket, or a follow-up, asks)
            asked = LATE_REFUND_ASKED.search(f"{t['subject']}\n{t['body']}")
            late = (": the parcel was delivered after its carrier's SLA" if asked else f": {LATE_REFUND_FOLLOW_UP}") + \
                ", so the shipping paid is refunded (late-delivery article)."
        refused = self.seeds.fidelity.exception_asked(f"{t['subject']}\n{t['body']}") if fee else None
        if refused is not None and refused.declined:  # the fee taken from a customer who refused it: why it stands
            late += " " + refused.declined.replace("{", "{{").replace("}", "}}")
        texts = {
            "refund_issued": "Refund {refund} issued"
                             + (" on billing's approval" if refund and refund["approved_by_id"] != resolver["id"] else "")
                             + (f" (${refund['amount']:.2f}, {refund['reason']}{fee}){late}" if refund else "."),
            "replacement_sent": "Replacement approved" + (f" for {item}" if product else "")
                                + "; the replacement order is placed once returns logs the returned unit and ships from "
                                "the nearest warehouse with stock. Customer to return the faulty one with the prepaid label.",
            "troubleshooting_steps": f"Walked the customer through {steps}"
                                     + (f" for {item}" if product else "") + "; issue resolved.",
            "recommendation_provided": "Recommended compatible parts for what the customer asked about.",
            "order_updated": "Corrected the order details before it shipped and confirmed with the customer.",
            "no_action": wording.choice({
                "return": [f"The customer chose to keep {item} after all; no return was made and nothing is refunded.",
                           f"Customer decided to keep {item}; no return started, nothing refunded.",
                           f"The customer wrote back that they would keep {item} after all; no return, no refund."],
                "shipping": ["Went through the parcel's tracking with the customer and explained where it stands; "
                             "nothing to change.",
                             "Read the carrier's scans with the customer and said when to expect the parcel; "
                             "nothing to change.",
                             "Explained the latest tracking events and what they mean for delivery; no change "
                             "needed on the order."],
                "billing": ["Went through the charges on the order with the customer; nothing to refund.",
                            "Matched each line of the customer's statement to the order's payment; nothing to "
                            "refund.",
                            "Explained the order's charge line by line; the customer was satisfied, nothing to "
                            "refund."],
                "order_issue": ["Looked into the order with the customer and explained what happened; nothing to "
                                "change on it.",
                                "Checked the order's lines and status with the customer and cleared up the "
                                "confusion; the order stands as placed.",
                                "Went over the order record with the customer; it matched what they expected once "
                                "explained, nothing to change."],
            }.get(t["type"], ["Answered the customer's question; nothing to change on the account.",
                              "Gave the customer the answer they asked for; no change to the account.",
                              "Replied to the customer's question; the account needed no change."])),
        }
        wordings = self.seeds.fidelity.fit(t["type"], f"{t['subject']}\n{t['body']}").details.get(outcome)
        if wordings is None:
            return texts[outcome]
        issue = wording.choice(wordings)
        if product and outcome == "recommendation_provided":  # the advice opens with what it was asked about
            return f"Asked about {item}. {issue}"
        return f"{name}: {issue}" if name else issue  # an issue's note opens with the part it was about

    def escalation(self, n: int, t: dict[str, Any], staff: dict[str, list[dict[str, Any]]],
                   rng: random.Random | None = None) -> dict[str, Any]:
        """When and by whom a ticket went up the chain (its type and notes come once the outcome is known, and
        when it was settled once the ticket's resolution moment is), drawn from ``rng`` (else the shared stream)."""
        created = self.between(t["created_at"], t["updated_at"], rng) if t["updated_at"] > t["created_at"] \
            else t["created_at"]
        creator = t["assignee_id"] or (rng or self.rng).choice(staff["support"])["id"]
        return {
            "_order": n, "ticket_id": t["id"], "created_by_id": creator, "created_at": created,
        }

    def fit_escalation(self, escalation: dict[str, Any], t: dict[str, Any], order: dict[str, Any] | None,
                       ship: dict[str, Any] | None, creator: dict[str, Any], tier: str,
                       product: dict[str, Any] | None) -> bool:
        """Give the escalation a type and notes that fit the ticket's issue and the facts (naming the product the
        ticket names, if any); False when no type does (nothing about the ticket needs another department)."""
        text = f"{t['subject']}\n{t['body']}"
        notes = {kind: self.escalation_note(kind, t, text, order, ship, creator, tier, product)
                 for kind in self.seeds.fidelity.fit(t["type"], text).escalations}
        fitting = [kind for kind, note in notes.items() if note is not None]
        if not fitting:
            return False
        kind = {"troubleshooting": "technical", "recommendation": "product_specialist",
                "return": "policy_exception", "billing": "insufficient_permission"}.get(t["type"], "technical")
        if self.seeds.fidelity.safety(text):  # a safety issue is engineering's
            kind = "technical"
        if kind not in fitting:
            kind = self.local_rng("escalation", t["id"]).choice(fitting)
        escalation.update(type=kind, destination=self.policy.escalation_routes[kind], notes=notes[kind])
        return True

    def escalation_note(self, kind: str, t: dict[str, Any], text: str, order: dict[str, Any] | None,
                        ship: dict[str, Any] | None, creator: dict[str, Any], tier: str,
                        product: dict[str, Any] | None) -> str | None:
        """Why the ticket goes up the chain as ``kind`` (None: the facts give no reason to)."""
        named = f" ({product['name']})" if product else ""
        if kind == "technical" and self.seeds.fidelity.safety(text):
            return f"Safety report{named}: customer told to switch off at the wall and unplug; needs engineering's " \
                   "assessment."
        if kind == "technical":
            return f"Customer's fault{named} persists after standard troubleshooting; needs bench testing."
        if kind == "product_specialist":
            return (f"Customer wants a specialist to confirm the parts they asked about{named}."
                    if t["type"] == "recommendation"
                    else f"Customer asks whether the part{named} suits their system; needs a product specialist's "
                         "answer.")
        if kind == "policy_exception" and creator["can_approve_exceptions"]:  # decides it, escalates nothing
            return None
        if kind == "policy_exception":
            late = days_past_window(t["created_at"], tier, ship, self.policy.return_window_days) \
                if t["type"] == "return" else None
            if late is not None:
                return f"Return asked for {late} days past the customer's return window; needs an exception decision."
            asked = self.seeds.fidelity.exception_asked(text)
            return None if asked is None else f"Customer asks for {asked.ask}, beyond policy; needs an exception decision."
        if order is None or not self.seeds.fidelity.asks_refund(text):
            return None
        stake = refund_at_stake(order, self.lines_by_order()[order["id"]], _named(t))
        if stake <= creator["refund_limit"]:
            return None
        what = "the order" if stake == order["total"] else "the item asked about"
        return (f"Customer wants money back on {order['id']} (${stake:,.2f}, {what}); above my "
                f"${creator['refund_limit']:,.0f} approval limit.")
