"""Support tickets and what became of them: resolutions, refunds, escalations, statuses."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from corecraft.world import models as m
from corecraft.world.fidelity import DELIVERY_CLAIM, DURATION_CLAIMS, duration_problems, measure, symptom_problems
from corecraft.world.generation.base import TICKET_CHANNELS, TYPE_DEPARTMENT, GeneratorBase, money
from corecraft.world.seeds import TicketPhrase


@dataclass
class _TicketStory:
    """The records one ticket's text may speak of."""

    ticket: dict[str, Any]
    order: dict[str, Any] | None
    ship: dict[str, Any] | None
    payment: dict[str, Any] | None
    lines: list[dict[str, Any]]
    own_orders: list[dict[str, Any]]
    earlier_tickets: list[dict[str, Any]]


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
                after = ship["shipped_at"] + timedelta(days=1)
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

    def ticket(self, n: int, kind: str, customer: dict[str, Any], order: dict[str, Any] | None,
               build_id: str | None, created: datetime, staff: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        age = self.now - created
        roll = self.rng.random()
        if age < timedelta(days=3):
            status = "new" if roll < 0.45 else "open" if roll < 0.8 else "pending_customer"
        else:
            status = "closed" if roll < 0.45 else "resolved" if roll < 0.85 else "open" if roll < 0.93 else "pending_customer"
        if order is not None and (order["total"] > 2000 or customer["loyalty_tier"] == "platinum"):
            priority = "high"
        elif kind in ("recommendation", "other"):
            priority = "low"
        else:
            priority = "normal"
        if self.rng.random() < 0.1:  # mis-triaged on intake
            priority = self.rng.choice(["low", "normal", "high"])
        team = staff[TYPE_DEPARTMENT[kind]]
        assignee = None if status == "new" and self.rng.random() < 0.7 else self.rng.choice(team)["id"]
        updated = self.between(created, min(created + timedelta(days=6), self.now)) if status != "new" else created
        return {
            "_order": n, "customer_id": customer["id"], "order_id": order["id"] if order else None,
            "build_id": build_id, "type": kind, "channel": self.pick(TICKET_CHANNELS), "priority": priority,
            "status": status, "assignee_id": assignee, "created_at": created, "updated_at": updated,
            "_phrase": self.rng.choice(self.seeds.phrases.tickets[kind]), "_customer": customer,
        }

    def fill_ticket_text(self) -> None:
        """Subject and body for each ticket: the drawn phrase if the records bear it out, else another of
        its type that they do (drawn from the ticket's own randomness)."""
        orders = {o["id"]: o for o in self.rows[m.Order]}
        ships = {s["order_id"]: s for s in self.rows[m.Shipment]}
        payments = {p["order_id"]: p for p in self.rows[m.Payment]}
        products = {p["id"]: p for p in self.rows[m.Product]}
        lines_by_order = self.lines_by_order()
        orders_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for o in sorted(self.rows[m.Order], key=lambda o: o["created_at"]):
            orders_of[o["customer_id"]].append(o)
        earlier_tickets: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for t in sorted(self.rows[m.SupportTicket], key=lambda t: (t["created_at"], t["id"])):
            order = orders.get(t["order_id"]) if t["order_id"] else None
            if order:
                product = products[self.rng.choice(lines_by_order[order["id"]])["product_id"]]
            else:
                product = self.rng.choice(self.rows[m.Product])
                if not self.launched(product, t["created_at"]):  # asked about before it came out: its nearest peer
                    out = [p for p in self.rows[m.Product] if self.launched(p, t["created_at"])]
                    peers = [p for p in out if p["category"] == product["category"]] or out
                    product = min(peers, key=lambda p: (abs(p["price"] - product["price"]), p["id"]))
            ship = ships.get(t["order_id"]) if t["order_id"] else None
            values = self.placeholders(t.pop("_customer"), order, product, ship, t["id"], t["created_at"])
            drawn = t.pop("_phrase")
            rng = self.local_rng("ticket-text", t["id"])
            pool = self.seeds.phrases.tickets[t["type"]]
            story = _TicketStory(t, order, ship, payments.get(t["order_id"] or ""),
                                 [products[ln["product_id"]] for ln in lines_by_order.get(t["order_id"] or "", [])],
                                 [o for o in orders_of[t["customer_id"]] if o["created_at"] < t["created_at"]],
                                 earlier_tickets[t["customer_id"]])
            for phrase in [drawn, *rng.sample(pool, len(pool))]:
                text = self.ticket_text(phrase, story, product, dict(values), rng, ships)
                if text is not None:
                    t["subject"], t["body"] = text
                    break
            else:
                phrase = drawn
                t["subject"], t["body"] = drawn.subject.format(**values), drawn.body.format(**values)
            t["_text"] = (phrase, story, product, values)
            earlier_tickets[t["customer_id"]].append(t)

    def refit_ticket_text(self, t: dict[str, Any], refund: dict[str, Any], ships: dict[str, dict[str, Any]]) -> None:
        """Rewrite a ticket refunded as ``price_adjustment`` so it asks for one, quoting the amount refunded:
        its own phrase if that fits, else another of its type that does (from the ticket's own randomness)."""
        phrase, story, product, values = t["_text"]
        rules = self.seeds.fidelity
        rng = self.local_rng("ticket-refit", t["id"])
        pool = [p for p in self.seeds.phrases.tickets[t["type"]]
                if refund["reason"] in rules.fit(t["type"], f"{p.subject}\n{p.body}").refund_reasons]
        values = {**values, "amount": f"{refund['amount']:.2f}"}
        for candidate in ([phrase] if phrase in pool else []) + rng.sample(pool, len(pool)):
            text = self.ticket_text(candidate, story, product, dict(values), rng, ships)
            if text is not None:
                t["subject"], t["body"] = text
                return

    def ticket_text(self, phrase: TicketPhrase, story: _TicketStory, product: dict[str, Any], values: dict[str, Any],
                    rng: random.Random, ships: dict[str, dict[str, Any]]) -> tuple[str, str] | None:
        """The phrase filled in so that it fits the ticket's records, or None when it cannot."""
        rules = self.seeds.fidelity
        t = story.ticket
        body = phrase.body
        if "{ticket_id}" in body and not story.earlier_tickets and phrase.first_contact:
            body = phrase.first_contact
        template = f"{phrase.subject}\n{body}"
        allowed = rules.allowed_categories(template)
        names_product = any(f"{{{k}}}" in template for k in ("product", "sku", "brand"))
        if names_product and allowed is not None and product["category"] not in allowed:
            fitting = [p for p in (story.lines if story.order else self.rows[m.Product])
                       if p["category"] in allowed and self.launched(p, t["created_at"])]
            if not fitting:
                return None
            product = rng.choice(fitting)
            values.update(product=product["name"], sku=product["sku"], brand=product["brand"])
        if story.order is None and "{order_id}" in template:
            if not story.own_orders:
                return None
            quoted = rng.choice(story.own_orders)
            quoted_ship = ships.get(quoted["id"]) or {}
            values.update(order_id=quoted["id"], amount=f"{quoted['total']:.2f}",
                          carrier=quoted_ship.get("carrier", quoted["shipping_method"]),
                          tracking=quoted_ship.get("tracking_number", "not yet assigned"))
        if "{ticket_id}" in template:
            if not story.earlier_tickets:
                return None
            values["ticket_id"] = story.earlier_tickets[-1]["id"]
        for pattern, kind in DURATION_CLAIMS:
            if story.order is None or not pattern.search(template.format(**values)):
                continue
            actual = measure(kind, t["created_at"], self.tz, story.order, story.ship, story.payment, [])
            if isinstance(actual, float):
                values["days"] = max(1, round(actual * 5 / 7 if "business" in pattern.pattern else actual))
            elif actual is not None:
                values["date"] = actual.isoformat()
        text = template.format(**values)
        named = [product] if names_product else []
        held = {p["category"] for p in story.lines} if story.order else None
        delivered = story.ship is not None and story.ship["delivered_at"] is not None \
            and story.ship["delivered_at"] <= t["created_at"]
        if symptom_problems(text, named, held, self.seeds.fidelity) \
                or (story.order and DELIVERY_CLAIM.search(text) and not delivered) \
                or duration_problems(text, t["created_at"], self.tz, story.order, story.ship, story.payment, []):
            return None
        subject, body = text.split("\n", 1)
        return subject, body

    def outcomes(self) -> None:
        """Resolutions, refunds and escalations for tickets, and the statuses they imply."""
        orders = {o["id"]: o for o in self.rows[m.Order]}
        payments = {p["order_id"]: p for p in self.rows[m.Payment]}
        ships = {s["order_id"]: s for s in self.rows[m.Shipment]}
        products = {p["id"]: p for p in self.rows[m.Product]}
        lines_by_order = self.lines_by_order()
        employees = {e["id"]: e for e in self.rows[m.Employee]}
        staff = self.staff_by_department()
        refunded: dict[str, float] = defaultdict(float)
        resolutions, refunds, escalations = [], [], []
        for n, t in enumerate(self.rows[m.SupportTicket]):
            order = orders.get(t["order_id"]) if t["order_id"] else None
            payment = payments.get(order["id"]) if order else None
            if order and t["type"] == "return" and t["status"] in ("new", "open", "pending_customer") \
                    and order["status"] == "fulfilled":
                order["status"] = "refund_requested"
                order["updated_at"] = max(order["updated_at"], t["created_at"])
            if self.rng.random() < 0.12:
                escalations.append(self.escalation(n, t, order, staff))
            if t["status"] not in ("resolved", "closed"):
                continue
            resolver = employees[t["assignee_id"]] if t["assignee_id"] else self.rng.choice(staff["support"])
            outcome, refund = self.outcome(t, order, payment, ships, lines_by_order, products, refunded)
            if refund is not None and refund["reason"] == "price_adjustment":
                self.refit_ticket_text(t, refund, ships)
            if refund is not None and order is not None and payment is not None:  # a refund has both
                approver = resolver if resolver["refund_limit"] >= refund["amount"] else next(
                    e for e in self.rows[m.Employee] if e["department"] == "billing"
                    and e["refund_limit"] >= refund["amount"])
                refund.update({"_order": n, "ticket_id": t["id"], "approved_by_id": approver["id"],
                               "created_at": t["updated_at"]})
                refund["processed_at"] = refund["created_at"] + timedelta(hours=self.rng.randint(1, 30))
                refund["status"] = "processed" if refund["processed_at"] <= self.now else "approved"
                if refund["status"] == "approved":
                    refund["processed_at"] = None
                refunds.append(refund)
                refunded[payment["id"]] += refund["amount"]
                full = refunded[payment["id"]] >= payment["amount"] - 0.005
                payment["status"] = "refunded" if full else "partially_refunded"
                order["status"] = "refunded" if full else "partially_refunded"
                order["updated_at"] = max(order["updated_at"], refund["created_at"])
            resolutions.append({
                "_order": n, "ticket_id": t["id"], "outcome": outcome, "resolved_by_id": resolver["id"],
                "refund": refund, "created_at": t["updated_at"], "_details": self.details(t, outcome, refund),
            })
        for t in self.rows[m.SupportTicket]:
            t.pop("_text")
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

    def outcome(self, t: dict[str, Any], order: dict[str, Any] | None, payment: dict[str, Any] | None,
                ships: dict[str, dict[str, Any]], lines_by_order: dict[str, list[dict[str, Any]]],
                products: dict[str, dict[str, Any]], refunded: dict[str, float]) -> tuple[str, dict[str, Any] | None]:
        kind = t["type"]
        o: dict[str, Any] = order or {}  # both are set whenever ``usable``
        p: dict[str, Any] = payment or {}
        usable = payment is not None and order is not None and p["status"] in ("captured", "partially_refunded") \
            and o["status"] != "cancelled"
        left = money(p["amount"] - refunded[p["id"]]) if payment else 0.0
        if kind == "return" and usable and self.rng.random() < 0.75:
            line = self.rng.choice(lines_by_order[o["id"]])
            category = products[line["product_id"]]["category"]
            line_total = line["unit_price"] * line["quantity"]
            paid_share = 1 - o["discount"] / o["subtotal"] if o["subtotal"] else 1
            opened = category in self.policy.restocking_fee_categories and self.rng.random() < 0.4
            fee_share = self.policy.restocking_fee_pct / 100 if opened else 0
            # The handbook's rule: what was paid for the line, less 15% of the line's price.
            amount = min(money(line_total * (paid_share - fee_share)), left)
            if amount > 0:
                return "refund_issued", {"payment_id": p["id"], "amount": amount, "reason": "return",
                                         "lines": [{"order_line_id": line["id"], "quantity": line["quantity"]}]}
        if kind == "shipping" and usable and o["shipping_cost"] > 0:
            ship = ships.get(o["id"])
            if ship and ship["delivered_at"] and ship["eta"] and ship["delivered_at"] > ship["eta"] \
                    and o["shipping_cost"] <= left:
                return "refund_issued", {"payment_id": p["id"], "amount": o["shipping_cost"],
                                         "reason": "shipping_delay", "lines": []}
        if kind == "billing" and usable and self.rng.random() < 0.5:
            amount = min(money(o["subtotal"] * self.rng.uniform(0.03, 0.1)), left)
            if amount > 0:
                return "refund_issued", {"payment_id": p["id"], "amount": amount,
                                         "reason": "price_adjustment", "lines": []}
        return {
            "return": "replacement_sent", "troubleshooting": self.rng.choice(["troubleshooting_steps", "replacement_sent"]),
            "recommendation": "recommendation_provided", "order_issue": "order_updated",
            "shipping": "no_action", "billing": "no_action", "other": "no_action",
        }[kind], None

    def details(self, t: dict[str, Any], outcome: str, refund: dict[str, Any] | None) -> str:
        texts = {
            "refund_issued": "Refund {refund} issued" + (f" (${refund['amount']:.2f}, {refund['reason']})." if refund else "."),
            "replacement_sent": "Replacement unit shipped; customer to return the faulty one with the prepaid label.",
            "troubleshooting_steps": "Walked the customer through reseating RAM, clearing CMOS and updating BIOS; issue resolved.",
            "recommendation_provided": "Recommended compatible parts and confirmed PSU headroom for the build.",
            "order_updated": "Corrected the order details and confirmed with the customer.",
            "no_action": "No action needed; explained the situation to the customer.",
        }
        return texts[outcome]

    def escalation(self, n: int, t: dict[str, Any], order: dict[str, Any] | None,
                   staff: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        """An escalation of a type that fits the ticket's issue."""
        kind = {"troubleshooting": "technical", "recommendation": "product_specialist",
                "return": "policy_exception", "billing": "insufficient_permission"}.get(t["type"], "technical")
        fitting = self.seeds.fidelity.fit(t["type"], f"{t['subject']}\n{t['body']}").escalations
        if kind not in fitting:
            kind = self.local_rng("escalation", t["id"]).choice(fitting)
        notes = {
            "technical": "Customer's fault persists after standard troubleshooting; needs bench testing.",
            "product_specialist": "Customer wants a specialist to confirm part choices for a custom build.",
            "policy_exception": "Customer asks for a return outside the window; needs an exception decision.",
            "insufficient_permission": "Refund requested is above my approval limit.",
        }[kind]
        if t["type"] in ("shipping", "order_issue", "other"):
            notes = self.escalation_note(t, kind)
        created = self.between(t["created_at"], t["updated_at"]) if t["updated_at"] > t["created_at"] else t["created_at"]
        creator = t["assignee_id"] or self.rng.choice(staff["support"])["id"]
        return {
            "_order": n, "ticket_id": t["id"], "type": kind, "destination": self.policy.escalation_routes[kind],
            "notes": notes, "created_by_id": creator, "created_at": created,
            "resolved_at": t["updated_at"] if t["status"] in ("resolved", "closed") else None,
        }

    def escalation_note(self, t: dict[str, Any], kind: str) -> str:
        """Why a shipping, order or general ticket went up the chain."""
        return {
            "policy_exception": f"Customer on a {t['type'].replace('_', ' ')} ticket asks for more than policy "
                                "allows; needs a leadership decision.",
            "insufficient_permission": "Compensation asked for is above my approval limit.",
        }[kind]
