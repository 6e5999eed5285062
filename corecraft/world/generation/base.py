"""Shared state and helpers of the world generator: randomness, ids, dates, placeholders.

All randomness comes from one ``random.Random(seed)`` and one seeded Faker instance, used in a
fixed order; nothing reads the wall clock.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from faker import Faker
from sqlmodel import SQLModel

from corecraft.world import models as m
from corecraft.world.fidelity import ORDER_ID, TRACKING
from corecraft.world.recipe import Recipe
from corecraft.world.rules import add_business_days, is_business_day, money, shipping_price
from corecraft.world.seeds import Seeds
from corecraft.world.vocab import WAREHOUSES

TICKET_CHANNELS = {"email": 0.45, "chat": 0.3, "web": 0.15, "phone": 0.1}
TYPE_DEPARTMENT = {
    "return": "returns",
    "billing": "billing",
    "shipping": "fulfillment",
    "order_issue": "fulfillment",
    "troubleshooting": "support",
    "recommendation": "product",
    "other": "support",
}

__all__ = ["TICKET_CHANNELS", "TYPE_DEPARTMENT", "GeneratorBase", "add_business_days",
           "is_business_day", "money", "shipping_price"]


class GeneratorBase:
    """What every part of the generator shares: the recipe, the randomness, the rows built so far."""

    def __init__(self, recipe: Recipe, seed: int, seeds: Seeds) -> None:
        self.recipe = recipe
        self.seeds = seeds
        self.seed = seed
        self.rng = random.Random(seed)
        self.fake = Faker("en_US")
        self.fake.seed_instance(seed)
        self.tz = ZoneInfo(recipe.timezone)
        self.now = recipe.now_aware
        self.start = self.now - timedelta(days=recipe.history_days)
        self.policy = seeds.policy
        self.rows: dict[type[SQLModel], list[dict[str, Any]]] = defaultdict(list)

    # -- helpers -------------------------------------------------------------------------
    def local_rng(self, *key: str) -> random.Random:
        """Randomness private to one story (e.g. one ticket's text): drawing from it never shifts the
        shared stream, so fixing one story leaves every other entity as it was."""
        return random.Random("|".join((str(self.seed), *key)))

    def pick(self, weights: dict[str, float]) -> str:
        keys = list(weights)
        return self.rng.choices(keys, weights=[weights[k] for k in keys])[0]

    def between(self, low: datetime, high: datetime, rng: random.Random | None = None) -> datetime:
        """A random minute-precision moment in [low, high] (drawn from ``rng``, else the shared stream)."""
        span = max(0, int((high - low).total_seconds() // 60))
        return (low + timedelta(minutes=(rng or self.rng).randint(0, span))).replace(second=0, microsecond=0)

    def dated_ids(self, rows: list[dict[str, Any]], prefix: str, key: str, after: Iterable[str] = ()) -> None:
        """Sort rows by ``key`` and give them ids ``prefix-YYMMDD-NNN`` (sequence within the day), numbered
        after the ids of their day in ``after``: rows added to days whose rows keep their ids."""
        rows.sort(key=lambda r: (r[key], r["_order"]))
        per_day: dict[str, int] = defaultdict(int)
        for taken in after:
            day, number = taken.rsplit("-", 2)[1:]
            per_day[day] = max(per_day[day], int(number))
        for row in rows:
            day = row[key].astimezone(self.tz).strftime("%y%m%d")
            per_day[day] += 1
            row["id"] = f"{prefix}-{day}-{per_day[day]:03d}"

    # -- entities ------------------------------------------------------------------------
    def staff_by_department(self) -> dict[str, list[dict[str, Any]]]:
        staff: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for e in self.rows[m.Employee]:
            staff[e["department"]].append(e)
        return staff

    def placeholders(self, customer: dict[str, Any] | None, order: dict[str, Any] | None,
                     product: dict[str, Any], ship: dict[str, Any] | None, ticket_id: str | None,
                     when: datetime) -> dict[str, Any]:
        customer = customer or self.rng.choice(self.rows[m.Customer])
        order = order or self.rng.choice(self.rows[m.Order])
        return {
            "customer": customer["name"], "first_name": customer["name"].split()[0], "order_id": order["id"],
            "ticket_id": ticket_id or "", "product": product["name"], "sku": product["sku"],
            "brand": product["brand"], "carrier": (ship or {}).get("carrier", order["shipping_method"]),
            "tracking": (ship or {}).get("tracking_number", "not yet assigned"),
            "amount": f"{order['total']:.2f}", "days": self.rng.randint(2, 12),
            "employee": self.rng.choice(self.rows[m.Employee])["name"].split()[0],
            "warehouse": self.rng.choice(WAREHOUSES), "date": when.astimezone(self.tz).date().isoformat(),
            "tier": customer["loyalty_tier"],
        }

    def launched(self, product: dict[str, Any], when: datetime) -> bool:
        """Whether ``product`` could be bought (or asked about) at ``when``: on or after its release."""
        return date.fromisoformat(product["specs"]["released"]) <= when.astimezone(self.tz).date()

    def launched_peer(self, product: dict[str, Any], when: datetime,
                      categories: set[str] | None = None) -> dict[str, Any] | None:
        """The product nearest ``product`` in price that was out by ``when`` (of its category if one is, and
        among ``categories`` when given), or None when none was."""
        out = [p for p in self.rows[m.Product] if self.launched(p, when)
               and (categories is None or p["category"] in categories)]
        peers = [p for p in out if p["category"] == product["category"]] or out
        return min(peers, key=lambda p: (abs(p["price"] - product["price"]), p["id"]), default=None)

    def slack_naming_orders(self) -> list[tuple[dict[str, Any], set[str]]]:
        """Each Slack message with the orders it names, by id or by a parcel's tracking number."""
        tracking = {s["tracking_number"]: s["order_id"] for s in self.rows[m.Shipment]}
        return [(msg, set(ORDER_ID.findall(msg["text"])) | {tracking[w] for w in TRACKING.findall(msg["text"])
                                                            if w in tracking}) for msg in self.rows[m.SlackMessage]]

    def lines_by_order(self) -> dict[str, list[dict[str, Any]]]:
        """The generated order lines grouped by order id."""
        grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for line in self.rows[m.OrderLine]:
            grouped[line["order_id"]].append(line)
        return grouped
