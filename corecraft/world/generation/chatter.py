"""The knowledge base (from the handbook) and Slack: channels, chatter, the Slack-only exception."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from corecraft.world import models as m
from corecraft.world.fidelity import (
    DURATION_CLAIMS,
    LEDGER_CLAIMS,
    duration_problems,
    ledger_problems,
    measure,
    symptom_problems,
)
from corecraft.world.generation.base import GeneratorBase


@dataclass
class _SlackStory:
    """The records one Slack message may speak of, as of its moment."""

    ts: datetime
    order: dict[str, Any]
    ship: dict[str, Any] | None
    payment: dict[str, Any] | None
    refunds: list[dict[str, Any]]


class ChatterMixin(GeneratorBase):
    """KB articles and Slack channels and messages."""

    def knowledge_base(self) -> None:
        rows: list[dict[str, Any]] = []
        for a in self.seeds.handbook:
            updated = datetime.combine(a.updated_at, datetime.min.time(), tzinfo=self.tz).replace(hour=9)
            rows.append({"id": f"kb-{a.key}", "title": a.title, "body": a.body.strip(), "tags": a.tags,
                         "products": a.products, "version": a.version, "is_deprecated": a.is_deprecated,
                         "updated_at": updated})
        rows.sort(key=lambda r: r["id"])
        self.rows[m.KnowledgeBaseArticle] = rows

    def slack(self) -> None:
        bank = self.seeds.phrases
        staff = self.staff_by_department()
        everyone = [e["id"] for e in self.rows[m.Employee]]
        channel_teams = {
            "escalations": ("support", "returns", "engineering", "product", "leadership", "billing"),
            "fulfillment-updates": ("fulfillment", "support", "leadership"),
            "policy-discussion": ("support", "returns", "billing", "leadership"),
            "returns-updates": ("returns", "support", "leadership"),
            "kb-updates": ("support", "returns", "product", "leadership"),
            "engineering": ("engineering", "product"),
            "billing-ops": ("billing", "leadership", "support"),
            "shipping-carriers": ("fulfillment", "support"),
            "team-leads": ("leadership",),
        }
        channels: list[dict[str, Any]] = []
        for name in sorted(bank.channels):
            teams = channel_teams.get(name)
            members = everyone if teams is None else sorted(
                e["id"] for d in teams for e in staff[d]
            ) + ([] if name != "team-leads" else sorted(e["id"] for e in self.rows[m.Employee]
                                                          if "Lead" in e["title"] or "Manager" in e["title"]))
            channels.append({"id": f"ch-{name}", "name": f"#{name}", "purpose": bank.channels[name],
                             "members": sorted(set(members))})
        self.rows[m.SlackChannel] = channels
        work = [c for c in channels if c["name"] not in ("#general", "#random")]
        chatter = [c for c in channels if c["name"] in ("#general", "#random")] or work
        slack_start = self.now - timedelta(days=min(120, self.recipe.history_days))
        products = self.rows[m.Product]
        orders = [o for o in self.rows[m.Order] if o["created_at"] >= slack_start] or self.rows[m.Order]
        tickets = {t["order_id"]: t for t in self.rows[m.SupportTicket] if t["order_id"]}
        ships = {s["order_id"]: s for s in self.rows[m.Shipment]}
        refunds_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        order_of_payment = {p["id"]: p["order_id"] for p in self.rows[m.Payment]}
        for refund in sorted(self.rows[m.Refund], key=lambda r: r["created_at"]):
            refunds_of[order_of_payment[refund["payment_id"]]].append(refund)
        payments = {p["order_id"]: p for p in self.rows[m.Payment]}
        messages: list[dict[str, Any]] = []
        used: set[str] = set()
        for n in range(self.recipe.counts.slack_messages - 2 * len(self.policy.exceptions)):
            channel = self.rng.choice(chatter if self.rng.random() < self.recipe.noise.offtopic_slack_rate else work)
            order = self.rng.choice(orders)
            ticket = tickets.get(order["id"])
            low = max(order["created_at"], slack_start)
            ts = self.between(low, self.now)
            values = self.placeholders(None, order, self.rng.choice(products), ships.get(order["id"]),
                                       ticket["id"] if ticket else f"tick-{order['id'][4:]}", ts)
            if ticket is None:
                values["ticket_id"] = self.rng.choice(self.rows[m.SupportTicket])["id"]
            drawn = self.rng.choice(bank.slack[channel["name"][1:]])
            story = _SlackStory(ts, order, ships.get(order["id"]), payments.get(order["id"]),
                                [r for r in refunds_of[order["id"]] if r["created_at"] <= ts])
            rng = self.local_rng("slack", str(n))
            pool = bank.slack[channel["name"][1:]] + bank.slack_reserve.get(channel["name"][1:], [])
            text = next((t for t in (self.slack_text(c, dict(values), story, rng)
                                     for c in [drawn, *rng.sample(pool, len(pool))]) if t and t not in used),
                        drawn.format(**values))
            used.add(text)
            messages.append({"_order": n, "channel_id": channel["id"], "author_id": self.rng.choice(channel["members"]),
                             "text": text, "ts": ts, "reactions": self.reactions(), "thread_parent_id": None})
        director = next(e for e in self.rows[m.Employee] if e["department"] == "leadership")
        returns_lead = next((e for e in self.rows[m.Employee] if e["title"] == "Returns Lead"), director)
        for k, exc in enumerate(self.policy.exceptions):
            posted = exc.announced_at.replace(tzinfo=self.tz)
            messages.append({"_order": 10**6 + 2 * k, "channel_id": "ch-policy-discussion", "author_id": director["id"],
                             "text": exc.announcement, "ts": posted, "reactions": {"white_check_mark": 9, "eyes": 4},
                             "thread_parent_id": None, "_root": exc.id})
            messages.append({"_order": 10**6 + 2 * k + 1, "channel_id": "ch-policy-discussion",
                             "author_id": returns_lead["id"], "text": exc.reply, "ts": posted + timedelta(minutes=17),
                             "reactions": {"+1": 3}, "thread_parent_id": None, "_reply_to": exc.id})
        self.dated_ids(messages, "msg", "ts", width=4)
        roots = {msg["_root"]: msg["id"] for msg in messages if "_root" in msg}
        earlier: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for msg in messages:
            if "_reply_to" in msg:
                msg["thread_parent_id"] = roots[msg.pop("_reply_to")]
            elif "_root" not in msg and earlier[msg["channel_id"]] and self.rng.random() < 0.15:
                msg["thread_parent_id"] = self.rng.choice(earlier[msg["channel_id"]][-5:])["id"]
            msg.pop("_root", None)
            if msg["thread_parent_id"] is None:
                earlier[msg["channel_id"]].append(msg)
        self.rows[m.SlackMessage] = messages

    def slack_text(self, template: str, values: dict[str, Any], story: _SlackStory, rng: random.Random) -> str | None:
        """The template filled in so that it fits the records as of the message's moment, or None."""
        rules = self.seeds.fidelity
        quoted = self.ticket_row(values["ticket_id"])
        if "{ticket_id}" in template and (quoted["created_at"] > story.ts or (
                "{order_id}" in template and quoted["order_id"] != story.order["id"])):
            about_order = [t for t in self.rows[m.SupportTicket]
                           if t["order_id"] == story.order["id"] and t["created_at"] <= story.ts]
            earlier = about_order or ([] if "{order_id}" in template else
                                      [t for t in self.rows[m.SupportTicket] if t["created_at"] <= story.ts])
            if not earlier:
                return None
            values["ticket_id"] = rng.choice(earlier)["id"]
        allowed = rules.allowed_categories(template)
        names_product = any(f"{{{k}}}" in template for k in ("product", "sku"))
        product = next(p for p in self.rows[m.Product] if p["name"] == values["product"])
        if names_product and allowed is not None and product["category"] not in allowed:
            product = rng.choice([p for p in self.rows[m.Product] if p["category"] in allowed])
            values.update(product=product["name"], sku=product["sku"], brand=product["brand"])
        processed = [r["processed_at"] for r in story.refunds if r["processed_at"]]
        for pattern, kind in DURATION_CLAIMS:
            if pattern.search(template.format(**values)):
                actual = measure(kind, story.ts, self.tz, story.order, story.ship, story.payment, processed)
                if isinstance(actual, float):
                    values["days"] = max(1, round(actual))
                elif actual is not None:
                    values["date"] = actual.isoformat()
        if story.refunds and any(p.search(template.format(**values)) for p, _ in LEDGER_CLAIMS):
            values["amount"] = f"{story.refunds[-1]['amount']:.2f}"
        text = template.format(**values)
        if symptom_problems(text, [product] if names_product else [], None, self.seeds.fidelity) \
                or duration_problems(text, story.ts, self.tz, story.order, story.ship, story.payment, processed) \
                or ledger_problems(text, story.refunds):
            return None
        return text

    def ticket_row(self, ticket_id: str) -> dict[str, Any]:
        """The generated ticket with this id."""
        return next(t for t in self.rows[m.SupportTicket] if t["id"] == ticket_id)

    def reactions(self) -> dict[str, int]:
        if self.rng.random() < 0.6:
            return {}
        emoji = self.rng.sample(["+1", "eyes", "white_check_mark", "pray", "fire", "joy", "rotating_light"],
                                self.rng.randint(1, 3))
        return {e: self.rng.randint(1, 6) for e in sorted(emoji)}

