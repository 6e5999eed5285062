"""Orders with their lines, payments and shipments (carrier timelines, late deliveries)."""

from __future__ import annotations

import string
from collections import defaultdict
from datetime import datetime, timedelta
from itertools import accumulate
from typing import Any

from corecraft.world import models as m
from corecraft.world.generation.base import (
    WAREHOUSE_CITIES,
    GeneratorBase,
    add_business_days,
    money,
    shipping_price,
)
from corecraft.world.seeds import WAREHOUSES


class CommerceMixin(GeneratorBase):
    """Orders, then payment and shipment for each by its age."""

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
        # Cumulative weights, summed once: ``choices(weights=...)`` would re-sum them on every draw
        # (quadratic in the world's size) and draws exactly as ``cum_weights`` does.
        weights = list(accumulate(3 if p["category"] in ("gpu", "cpu", "memory", "storage", "peripheral") else 1
                                  for p in products))
        # A long tail: a few customers order often, many once.
        cust_weights = list(accumulate(1 + (i % 7 == 0) * 4 + (i % 3 == 0) for i in range(len(customers))))
        orders, lines = [], []
        for n in range(self.recipe.counts.orders):
            customer = self.rng.choices(customers, cum_weights=cust_weights)[0]
            low = max(customer["created_at"], self.start)
            created = self.between(low, self.now - timedelta(hours=1))
            build_id = None
            if builds_by_customer.get(customer["id"]) and self.rng.random() < 0.5:
                build_id = self.rng.choice(builds_by_customer[customer["id"]])
                items = [(pid, 1) for pid in parts_by_build[build_id]]
            else:
                count = self.rng.choices([1, 2, 3, 4], weights=[50, 30, 14, 6])[0]
                picked = self.rng.choices(products, cum_weights=weights, k=count)
                items = list({p["id"]: (p["id"], self.rng.choice([1, 1, 1, 2])) for p in picked}.values())
            order_lines = []
            for pid, qty in items:
                unit = price[pid]
                if self.rng.random() < 0.05:  # the price has dropped since this order
                    unit = money(unit * self.rng.uniform(1.05, 1.15))
                order_lines.append({"product_id": pid, "quantity": qty, "unit_price": unit})
            subtotal = money(sum(ln["unit_price"] * ln["quantity"] for ln in order_lines))
            tier = customer["loyalty_tier"]
            discount = money(subtotal * self.policy.loyalty_discount_pct[tier] / 100)
            method = self.pick(self.recipe.shipping_methods)
            shipping = shipping_price(method, subtotal - discount, tier)
            order = {
                "_order": n, "customer_id": customer["id"], "subtotal": subtotal, "discount": discount,
                "shipping_cost": shipping, "total": money(subtotal - discount + shipping), "shipping_method": method,
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
        lines_by_order = self.lines_by_order()
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

