"""The world generator: recipe + seed + seed content -> a SQLite database (as bytes).

Deterministic: all randomness comes from one ``random.Random(seed)`` and one seeded Faker
instance, used in a fixed order, and nothing reads the wall clock. Stories are coherent:
orders come after their customer, payment before shipment, shipment events in time order,
tickets about real orders, refunds within their payment, resolutions linked to the refunds
they record, Slack messages about real orders and tickets. Nothing is dated after ``now``.
"""

from __future__ import annotations

import random
import sqlite3
import string
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from faker import Faker
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlmodel import SQLModel

from corecraft.world import models as m
from corecraft.world.compat import build_problems
from corecraft.world.db import insert_many
from corecraft.world.recipe import Recipe
from corecraft.world.seeds import CATEGORIES, WAREHOUSES, catalogue, handbook, phrases, policy

GENERATOR_VERSION = "1"
"""Bump when generated content changes; part of the template cache key."""

WAREHOUSE_CITIES = {"east": "Edison, NJ", "central": "Columbus, OH", "west": "Reno, NV"}
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
# Title -> how many of each in a world, before the remaining head-count is spread over agents.
_HEADS = ("VP Operations", "Director of Customer Experience")  # in rank order
_EXTRA_STAFF_WEIGHTS = {
    "Support Agent I": 10,
    "Support Agent II": 5,
    "Returns Specialist": 3,
    "Billing Specialist": 2,
    "Fulfillment Associate": 3,
    "Systems Engineer": 1,
    "Product Specialist": 1,
    "Support Team Lead": 1,
}
_EMAIL_DOMAINS = ("gmail.com", "outlook.com", "yahoo.com", "proton.me", "icloud.com", "hotmail.com")


def add_business_days(start: datetime, days: int) -> datetime:
    """``start`` moved forward by ``days`` weekdays."""
    current = start
    while days > 0:
        current += timedelta(days=1)
        if current.weekday() < 5:
            days -= 1
    return current


def _money(value: float) -> float:
    return round(value + 1e-9, 2)


class _Generator:
    def __init__(self, recipe: Recipe, seed: int) -> None:
        self.recipe = recipe
        self.rng = random.Random(seed)
        self.fake = Faker("en_US")
        self.fake.seed_instance(seed)
        self.tz = ZoneInfo(recipe.timezone)
        self.now = recipe.now_aware
        self.start = self.now - timedelta(days=recipe.history_days)
        self.policy = policy()
        self.rows: dict[type[SQLModel], list[dict[str, Any]]] = defaultdict(list)

    # -- helpers -------------------------------------------------------------------------
    def pick(self, weights: dict[str, float]) -> str:
        keys = list(weights)
        return self.rng.choices(keys, weights=[weights[k] for k in keys])[0]

    def between(self, low: datetime, high: datetime) -> datetime:
        """A random minute-precision moment in [low, high]."""
        span = max(0, int((high - low).total_seconds() // 60))
        return (low + timedelta(minutes=self.rng.randint(0, span))).replace(second=0, microsecond=0)

    def dated_ids(self, rows: list[dict[str, Any]], prefix: str, key: str, width: int = 3) -> None:
        """Sort rows by ``key`` and give them ids ``prefix-YYMMDD-NNN`` (sequence within the day)."""
        rows.sort(key=lambda r: (r[key], r["_order"]))
        per_day: dict[str, int] = defaultdict(int)
        for row in rows:
            day = row[key].astimezone(self.tz).strftime("%y%m%d")
            per_day[day] += 1
            row["id"] = f"{prefix}-{day}-{per_day[day]:0{width}d}"

    # -- entities ------------------------------------------------------------------------
    def employees(self) -> None:
        titles = list(self.policy.titles)
        count = self.recipe.counts.employees
        roster = list(titles)
        extra = list(_EXTRA_STAFF_WEIGHTS)
        while len(roster) < count:
            roster.append(self.rng.choices(extra, weights=list(_EXTRA_STAFF_WEIGHTS.values()))[0])
        roster = roster[:count] if count >= len(titles) else roster
        seen_emails: set[str] = set()
        people = []
        for title in roster:
            first, last = self.fake.first_name(), self.fake.last_name()
            email = f"{first}.{last}@corecraft.example".lower()
            while email in seen_emails:
                email = f"{first}.{last}{self.rng.randint(2, 99)}@corecraft.example".lower()
            seen_emails.add(email)
            spec = self.policy.titles[title]
            people.append({
                "name": f"{first} {last}", "email": email, "title": title, "department": spec.department,
                "refund_limit": spec.refund_limit, "can_approve_exceptions": spec.can_approve_exceptions,
            })
        # Heads first, then managers/leads, then staff, so managers exist before reports.
        rank = {t: (_HEADS.index(t) if t in _HEADS else 2 if any(w in t for w in ("Lead", "Manager")) else 3)
                for t in titles}
        people.sort(key=lambda p: (rank[p["title"]], titles.index(p["title"])))
        for i, person in enumerate(people, start=1):
            person["id"] = f"emp-{i:03d}"
        vp, director = people[0], people[1]
        leads: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for person in people:
            if person is vp:
                person["manager_id"] = None
            elif person is director:
                person["manager_id"] = vp["id"]
            elif rank[person["title"]] == 2:
                leads[person["department"]].append(person)
                person["manager_id"] = director["id"] if person["department"] in ("support", "returns") else vp["id"]
            else:
                bosses = leads.get(person["department"]) or [director]
                person["manager_id"] = bosses[int(person["id"][4:]) % len(bosses)]["id"]
        self.rows[m.Employee] = people

    def customers(self) -> None:
        tiers = self.recipe.loyalty_tiers
        seen: set[str] = set()
        people = []
        latest = self.now - timedelta(days=7)
        for _ in range(self.recipe.counts.customers):
            people.append(self.customer(self.fake.first_name(), self.fake.last_name(), self.pick(tiers), latest, seen))
        for original in self.rng.sample(people, min(self.recipe.noise.lookalike_customers, len(people))):
            first, last = original["name"].split(" ", 1)
            people.append(self.customer(first, last, self.pick(tiers), latest, seen))
        people.sort(key=lambda p: (p["created_at"], p["email"]))
        for i, person in enumerate(people, start=1):
            person["id"] = f"cust-{i:04d}"
        self.rows[m.Customer] = people

    def customer(self, first: str, last: str, tier: str, latest: datetime, seen: set[str]) -> dict[str, Any]:
        style = self.rng.randint(0, 3)
        local = [f"{first}.{last}", f"{first[0]}{last}", f"{first}{last[:3]}", f"{last}.{first[0]}"][style].lower()
        domain = self.rng.choice(_EMAIL_DOMAINS)
        email = f"{local}@{domain}"
        while email in seen:
            email = f"{local}{self.rng.randint(2, 999)}@{domain}"
        seen.add(email)
        addresses = [self.address("home")]
        if self.rng.random() < 0.2:
            addresses.append(self.address("work"))
        has_phone = self.rng.random() >= self.recipe.noise.missing_phone_rate
        phone = f"({self.rng.randint(201, 989)}) {self.rng.randint(200, 999)}-{self.rng.randint(0, 9999):04d}"
        return {
            "name": f"{first} {last}", "email": email, "phone": phone if has_phone else None,
            "date_of_birth": self.now.date() - timedelta(days=self.rng.randint(18 * 365, 72 * 365)),
            "addresses": addresses, "loyalty_tier": tier,
            "created_at": self.between(self.start - timedelta(days=400), latest),
        }

    def address(self, label: str) -> dict[str, str]:
        return {
            "label": label, "line1": self.fake.street_address(), "city": self.fake.city(),
            "state": self.fake.state_abbr(include_territories=False), "zip": self.fake.zipcode(),
        }

    def products(self) -> None:
        items = list(catalogue())
        wanted = self.recipe.counts.products
        if wanted < len(items):
            items = self.product_subset(items, wanted)
        rows = []
        for item in items:
            stock = sum(item.inventory.get(w, 0) for w in WAREHOUSES)
            rows.append({
                "id": item.sku, "sku": item.sku, "name": item.name, "brand": item.brand,
                "category": item.category, "price": item.price, "description": item.description,
                "specs": item.specs, "warranty_months": self.policy.warranty_months[item.category],
                "inventory": {w: item.inventory.get(w, 0) for w in WAREHOUSES},
                "stock_status": "out_of_stock" if stock == 0 else "low_stock" if stock <= 5 else "in_stock",
            })
        rows.sort(key=lambda r: r["id"])
        self.rows[m.Product] = rows

    def product_subset(self, items: list[Any], wanted: int) -> list[Any]:
        """A deterministic subset with every category; a prebuilt brings its components along."""
        by_sku = {p.sku: p for p in items}
        chosen: dict[str, Any] = {}

        def take(item: Any) -> None:
            chosen[item.sku] = item
            for key, value in item.specs.items():
                if key.endswith("_sku") and value in by_sku:
                    chosen[value] = by_sku[value]

        pool = list(items)
        self.rng.shuffle(pool)
        for category in CATEGORIES:
            first = next((p for p in pool if p.category == category), None)
            if first is not None and not any(c.category == category for c in chosen.values()):
                take(first)
        for item in pool:
            if len(chosen) >= wanted:
                break
            take(item)
        return list(chosen.values())

    def builds(self) -> None:
        by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for p in self.rows[m.Product]:
            by_cat[p["category"]].append(p)
        customers = self.rows[m.Customer]
        builds, parts = [], []
        themes = ("1440p gaming", "4K gaming", "streaming", "workstation", "small form factor", "budget esports")
        for i in range(1, self.recipe.counts.builds + 1):
            internal = self.rng.random() < 0.2
            owner = None if internal else self.rng.choice(customers)
            components = self.compatible_parts(by_cat)
            if self.rng.random() < 0.3:  # a customer-made mistake: one part swapped at random
                swap = self.rng.choice(components)
                components[components.index(swap)] = self.rng.choice(by_cat[swap["category"]])
            theme = self.rng.choice(themes)
            name = f"Reference build: {theme}" if internal else f"{owner['name'].split()[0]}'s {theme} build"
            low = owner["created_at"] if owner else self.start
            build = {
                "id": f"build-{i:04d}", "name": name, "customer_id": owner["id"] if owner else None,
                "owner_type": "internal" if internal else "customer", "created_at": self.between(low, self.now),
            }
            builds.append(build)
            for n, part in enumerate(components, start=1):
                parts.append({"id": f"{build['id']}-{n}", "build_id": build["id"], "product_id": part["id"], "quantity": 1})
        self.rows[m.Build] = builds
        self.rows[m.BuildComponent] = parts

    def compatible_parts(self, by_cat: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """A build that passes every rule, when the catalogue allows one (tries a few draws)."""
        order = ("cpu", "motherboard", "memory", "gpu", "psu", "case", "cooling", "storage")
        best: list[dict[str, Any]] = []
        for _ in range(40):
            chosen: list[dict[str, Any]] = []
            for category in order:
                options = [p for p in by_cat.get(category, []) if not build_problems([*chosen, p])]
                if options:
                    chosen.append(self.rng.choice(options))
            if len(chosen) > len(best):
                best = chosen
            if len(chosen) == len([c for c in order if by_cat.get(c)]):
                break
        return best

    def orders(self) -> None:
        products = [p for p in self.rows[m.Product]]
        customers = self.rows[m.Customer]
        builds_by_customer: dict[str, list[str]] = defaultdict(list)
        for b in self.rows[m.Build]:
            if b["customer_id"]:
                builds_by_customer[b["customer_id"]].append(b["id"])
        parts_by_build: dict[str, list[str]] = defaultdict(list)
        for part in self.rows[m.BuildComponent]:
            parts_by_build[part["build_id"]].append(part["product_id"])
        price = {p["id"]: p["price"] for p in products}
        weights = [3 if p["category"] in ("gpu", "cpu", "memory", "storage", "peripheral") else 1 for p in products]
        # A long tail: a few customers order often, many once.
        cust_weights = [1 + (i % 7 == 0) * 4 + (i % 3 == 0) for i in range(len(customers))]
        orders, lines = [], []
        for n in range(self.recipe.counts.orders):
            customer = self.rng.choices(customers, weights=cust_weights)[0]
            low = max(customer["created_at"], self.start)
            created = self.between(low, self.now - timedelta(hours=1))
            build_id = None
            if builds_by_customer.get(customer["id"]) and self.rng.random() < 0.5:
                build_id = self.rng.choice(builds_by_customer[customer["id"]])
                items = [(pid, 1) for pid in parts_by_build[build_id]]
            else:
                count = self.rng.choices([1, 2, 3, 4], weights=[50, 30, 14, 6])[0]
                picked = self.rng.choices(products, weights=weights, k=count)
                items = list({p["id"]: (p["id"], self.rng.choice([1, 1, 1, 2])) for p in picked}.values())
            order_lines = []
            for pid, qty in items:
                unit = price[pid]
                if self.rng.random() < 0.05:  # the price has dropped since this order
                    unit = _money(unit * self.rng.uniform(1.05, 1.15))
                order_lines.append({"product_id": pid, "quantity": qty, "unit_price": unit})
            subtotal = _money(sum(ln["unit_price"] * ln["quantity"] for ln in order_lines))
            tier = customer["loyalty_tier"]
            discount = _money(subtotal * self.policy.loyalty_discount_pct[tier] / 100)
            method = self.pick(self.recipe.shipping_methods)
            shipping = shipping_price(method, subtotal - discount, tier)
            order = {
                "_order": n, "customer_id": customer["id"], "subtotal": subtotal, "discount": discount,
                "shipping_cost": shipping, "total": _money(subtotal - discount + shipping), "shipping_method": method,
                "shipping_address": self.rng.choice(customer["addresses"]), "build_id": build_id,
                "created_at": created, "updated_at": created, "_lines": order_lines, "_tier": tier,
            }
            orders.append(order)
        self.dated_ids(orders, "ord", "created_at")
        for order in orders:
            for k, line in enumerate(order.pop("_lines"), start=1):
                lines.append({"id": f"{order['id']}-L{k}", "order_id": order["id"], **line})
        self.rows[m.Order] = orders
        self.rows[m.OrderLine] = lines
        self.fulfil()

    def fulfil(self) -> None:
        """Order status, payment and shipment for each order, by its age."""
        stock = {p["id"]: p["stock_status"] for p in self.rows[m.Product]}
        lines_by_order: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for line in self.rows[m.OrderLine]:
            lines_by_order[line["order_id"]].append(line)
        payments, shipments = [], []
        for order in self.rows[m.Order]:
            age = self.now - order["created_at"]
            roll = self.rng.random()
            out_of_stock = any(stock[ln["product_id"]] == "out_of_stock" for ln in lines_by_order[order["id"]])
            if age < timedelta(hours=8):
                status = "pending" if roll < 0.5 else "paid"
            elif out_of_stock and roll < 0.6:
                status = "backorder"
            elif roll < 0.05:
                status = "cancelled"
            elif age < timedelta(days=2):
                status = "paid"
            else:
                status = "fulfilled"
            order["status"] = status
            paid_at = order["created_at"] + timedelta(minutes=self.rng.randint(1, 40))
            paid_at = min(paid_at, self.now)
            pay_status = {"pending": "pending", "cancelled": "failed"}.get(status, "captured")
            payments.append({
                "id": order["id"].replace("ord-", "pay-"), "order_id": order["id"], "amount": order["total"],
                "method": self.pick(self.recipe.payment_methods), "status": pay_status,
                "transaction_id": "txn_" + "".join(self.rng.choices(string.hexdigits.lower()[:16], k=14)),
                "processed_at": paid_at,
            })
            order["updated_at"] = paid_at
            if status == "fulfilled":
                shipment = self.shipment(order, paid_at)
                shipments.append(shipment)
                order["updated_at"] = shipment["shipped_at"]
        self.rows[m.Payment] = payments
        self.rows[m.Shipment] = shipments

    def shipment(self, order: dict[str, Any], paid_at: datetime) -> dict[str, Any]:
        carrier = order["shipping_method"]
        sla = self.policy.shipping[carrier].sla_business_days
        shipped = add_business_days(paid_at.replace(hour=9, minute=0), self.rng.choice([0, 1, 1, 2]))
        shipped = min(max(shipped, paid_at), self.now)
        eta = add_business_days(shipped, sla).replace(hour=20, minute=0)
        late = self.rng.random() < self.recipe.noise.late_delivery_rate
        arrive = add_business_days(eta, self.rng.randint(1, 5)) if late else eta - timedelta(hours=self.rng.randint(1, 9))
        arrive = arrive.replace(hour=self.rng.randint(10, 19), minute=self.rng.randint(0, 59))
        delivered = arrive if arrive <= self.now else None
        warehouse = self.rng.choice(WAREHOUSES)
        dest = f"{order['shipping_address']['city']}, {order['shipping_address']['state']}"
        events = [(shipped, "label_created", WAREHOUSE_CITIES[warehouse]),
                  (shipped + timedelta(hours=4), "picked_up", WAREHOUSE_CITIES[warehouse])]
        hop = shipped + timedelta(hours=18)
        end = delivered or self.now
        while hop < end - timedelta(hours=12):
            events.append((hop, "in_transit", self.rng.choice(["Memphis, TN", "Louisville, KY", "Indianapolis, IN",
                                                               "Dallas, TX", "Harrisburg, PA", "Ontario, CA"])))
            hop += timedelta(hours=self.rng.randint(16, 40))
        if late:
            events.append((min(eta, end), "delayed", "carrier network"))
        if delivered:
            events.append((delivered.replace(hour=8, minute=5), "out_for_delivery", dest))
            events.append((delivered, "delivered", dest))
        events = sorted((e for e in events if e[0] <= self.now), key=lambda e: e[0])
        status = "delivered" if delivered else ("exception" if late and self.now > eta else events[-1][1])
        if status == "picked_up":
            status = "in_transit"
        no_eta = self.rng.random() < self.recipe.noise.missing_eta_rate
        return {
            "id": order["id"].replace("ord-", "ship-"), "order_id": order["id"], "carrier": carrier,
            "tracking_number": self.tracking(carrier), "status": status, "shipped_at": shipped,
            "eta": None if no_eta else eta, "delivered_at": delivered,
            "events": [{"ts": ts.isoformat(), "status": st, "location": loc} for ts, st, loc in events],
        }

    def tracking(self, carrier: str) -> str:
        digits = "".join(self.rng.choices(string.digits, k=12))
        return {"usps_ground": "9400" + digits + "00", "ups_ground": "1Z" + digits[:6] + "03" + digits[6:],
                "fedex_express": digits, "fedex_overnight": digits}[carrier]

    def tickets(self) -> None:
        orders = self.rows[m.Order]
        ship_by_order = {s["order_id"]: s for s in self.rows[m.Shipment]}
        customers = {c["id"]: c for c in self.rows[m.Customer]}
        staff = self.staff_by_department()
        builds = [b for b in self.rows[m.Build] if b["customer_id"]]
        tickets = []
        n = 0
        attempts = 0
        while len(tickets) < self.recipe.counts.tickets and attempts < self.recipe.counts.tickets * 20:
            attempts += 1
            kind = self.pick(self.recipe.ticket_types)
            order, build_id, after = None, None, None
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
            "_phrase": self.rng.choice(phrases().tickets[kind]), "_customer": customer,
        }

    def staff_by_department(self) -> dict[str, list[dict[str, Any]]]:
        staff: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for e in self.rows[m.Employee]:
            staff[e["department"]].append(e)
        return staff

    def fill_ticket_text(self) -> None:
        orders = {o["id"]: o for o in self.rows[m.Order]}
        ships = {s["order_id"]: s for s in self.rows[m.Shipment]}
        products = {p["id"]: p for p in self.rows[m.Product]}
        lines_by_order: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for line in self.rows[m.OrderLine]:
            lines_by_order[line["order_id"]].append(line)
        for t in self.rows[m.SupportTicket]:
            order = orders.get(t["order_id"]) if t["order_id"] else None
            if order:
                product = products[self.rng.choice(lines_by_order[order["id"]])["product_id"]]
            else:
                product = self.rng.choice(self.rows[m.Product])
            ship = ships.get(t["order_id"]) if t["order_id"] else None
            values = self.placeholders(t.pop("_customer"), order, product, ship, t["id"], t["created_at"])
            phrase = t.pop("_phrase")
            t["subject"] = phrase.subject.format(**values)
            t["body"] = phrase.body.format(**values)

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
        }

    def outcomes(self) -> None:
        """Resolutions, refunds and escalations for tickets, and the statuses they imply."""
        orders = {o["id"]: o for o in self.rows[m.Order]}
        payments = {p["order_id"]: p for p in self.rows[m.Payment]}
        ships = {s["order_id"]: s for s in self.rows[m.Shipment]}
        products = {p["id"]: p for p in self.rows[m.Product]}
        lines_by_order: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for line in self.rows[m.OrderLine]:
            lines_by_order[line["order_id"]].append(line)
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
            if refund is not None:
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
        usable = payment is not None and payment["status"] in ("captured", "partially_refunded") \
            and order["status"] != "cancelled"
        left = _money(payment["amount"] - refunded[payment["id"]]) if payment else 0.0
        if kind == "return" and usable and self.rng.random() < 0.75:
            line = self.rng.choice(lines_by_order[order["id"]])
            category = products[line["product_id"]]["category"]
            amount = line["unit_price"] * line["quantity"]
            if category in self.policy.restocking_fee_categories and self.rng.random() < 0.4:
                amount *= 1 - self.policy.restocking_fee_pct / 100
            amount = min(_money(amount * (1 - order["discount"] / order["subtotal"] if order["subtotal"] else 1)), left)
            if amount > 0:
                return "refund_issued", {"payment_id": payment["id"], "amount": amount, "reason": "return",
                                         "lines": [{"order_line_id": line["id"], "quantity": line["quantity"]}]}
        if kind == "shipping" and usable and order["shipping_cost"] > 0:
            ship = ships.get(order["id"])
            if ship and ship["delivered_at"] and ship["eta"] and ship["delivered_at"] > ship["eta"] \
                    and order["shipping_cost"] <= left:
                return "refund_issued", {"payment_id": payment["id"], "amount": order["shipping_cost"],
                                         "reason": "shipping_delay", "lines": []}
        if kind == "billing" and usable and self.rng.random() < 0.5:
            amount = min(_money(order["subtotal"] * self.rng.uniform(0.03, 0.1)), left)
            if amount > 0:
                return "refund_issued", {"payment_id": payment["id"], "amount": amount,
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
        kind = {"troubleshooting": "technical", "recommendation": "product_specialist",
                "return": "policy_exception", "billing": "insufficient_permission"}.get(t["type"], "technical")
        notes = {
            "technical": "Customer's fault persists after standard troubleshooting; needs bench testing.",
            "product_specialist": "Customer wants a specialist to confirm part choices for a custom build.",
            "policy_exception": "Customer asks for a return outside the window; needs an exception decision.",
            "insufficient_permission": "Refund requested is above my approval limit.",
        }[kind]
        created = self.between(t["created_at"], t["updated_at"]) if t["updated_at"] > t["created_at"] else t["created_at"]
        creator = t["assignee_id"] or self.rng.choice(staff["support"])["id"]
        return {
            "_order": n, "ticket_id": t["id"], "type": kind, "destination": self.policy.escalation_routes[kind],
            "notes": notes, "created_by_id": creator, "created_at": created,
            "resolved_at": t["updated_at"] if t["status"] in ("resolved", "closed") else None,
        }

    def knowledge_base(self) -> None:
        rows = []
        for a in handbook():
            updated = datetime.combine(a.updated_at, datetime.min.time(), tzinfo=self.tz).replace(hour=9)
            rows.append({"id": f"kb-{a.key}", "title": a.title, "body": a.body.strip(), "tags": a.tags,
                         "products": a.products, "version": a.version, "is_deprecated": a.is_deprecated,
                         "updated_at": updated})
        rows.sort(key=lambda r: r["id"])
        self.rows[m.KnowledgeBaseArticle] = rows

    def slack(self) -> None:
        bank = phrases()
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
        channels = []
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
        messages = []
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
            text = self.rng.choice(bank.slack[channel["name"][1:]]).format(**values)
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

    def reactions(self) -> dict[str, int]:
        if self.rng.random() < 0.6:
            return {}
        emoji = self.rng.sample(["+1", "eyes", "white_check_mark", "pray", "fire", "joy", "rotating_light"],
                                self.rng.randint(1, 3))
        return {e: self.rng.randint(1, 6) for e in sorted(emoji)}

    def run(self) -> dict[type[SQLModel], list[dict[str, Any]]]:
        self.employees()
        self.customers()
        self.products()
        self.builds()
        self.orders()
        self.tickets()
        self.fill_ticket_text()
        self.outcomes()
        self.knowledge_base()
        self.slack()
        return self.rows


def shipping_price(method: str, merchandise_after_discount: float, tier: str) -> float:
    """What shipping costs per the handbook: free ground over the threshold or for free tiers."""
    rules = policy()
    ground = method in ("usps_ground", "ups_ground")
    if ground and (merchandise_after_discount >= rules.free_ground_shipping_threshold
                   or tier in rules.free_ground_shipping_tiers):
        return 0.0
    return rules.shipping[method].price


def create_schema(conn: sqlite3.Connection) -> None:
    """Create every table and index from the sqlmodel metadata, in a fixed order.

    SQLAlchemy keeps a table's indexes in a set, so ``create_all`` would create them in a
    hash-dependent order and the database bytes would differ between processes.
    """
    dialect = sqlite_dialect.dialect()
    for model in m.ALL_TABLES:
        table = model.__table__  # type: ignore[attr-defined]
        conn.execute(str(CreateTable(table).compile(dialect=dialect)))
        for index in sorted(table.indexes, key=lambda i: i.name):
            conn.execute(str(CreateIndex(index).compile(dialect=dialect)))


def enable_foreign_keys(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA foreign_keys = ON")


def build_world(recipe: Recipe, seed: int) -> bytes:
    """Generate the world for ``recipe`` and ``seed`` and return the SQLite database bytes."""
    rows = _Generator(recipe, seed).run()
    conn = sqlite3.connect(":memory:")
    try:
        enable_foreign_keys(conn)
        create_schema(conn)
        for model in (m.Employee, m.Customer, m.Product, m.Build, m.BuildComponent, m.Order, m.OrderLine,
                      m.Payment, m.Shipment, m.SupportTicket, m.Refund, m.Escalation, m.Resolution,
                      m.KnowledgeBaseArticle, m.SlackChannel, m.SlackMessage):
            insert_many(conn, model, _clean(rows[model]))
        conn.execute(
            "CREATE TABLE world_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        conn.executemany("INSERT INTO world_meta VALUES (?, ?)", [
            ("recipe", recipe.name), ("seed", str(seed)), ("now", recipe.now_aware.isoformat()),
            ("timezone", recipe.timezone), ("generator_version", GENERATOR_VERSION),
        ])
        conn.commit()
        conn.execute("VACUUM")
        return conn.serialize()
    finally:
        conn.close()


def _clean(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]


__all__ = ["GENERATOR_VERSION", "add_business_days", "build_world", "create_schema", "enable_foreign_keys",
           "shipping_price"]

