"""Orders with their lines, payments and shipments (carrier timelines, late deliveries)."""

from __future__ import annotations

import string
from collections import defaultdict
from collections.abc import Collection
from datetime import date, datetime, timedelta
from itertools import accumulate
from typing import Any

from corecraft.world import models as m
from corecraft.world.compat import build_problems
from corecraft.world.fidelity import assigned_warehouse, distance_km
from corecraft.world.generation.base import (
    GeneratorBase,
    add_business_days,
    is_business_day,
    money,
    shipping_price,
)
from corecraft.world.rules import tracking_number
from corecraft.world.vocab import WAREHOUSES


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
        by_id = {p["id"]: p for p in products}
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
                parts_by_build[build_id] = self.working(parts_by_build[build_id], by_id, created)
                items = [(pid, 1) for pid in parts_by_build[build_id]]
            else:
                count = self.rng.choices([1, 2, 3, 4], weights=[50, 30, 14, 6])[0]
                picked = self.rng.choices(products, cum_weights=weights, k=count)
                items = list({p["id"]: (p["id"], self.rng.choice([1, 1, 1, 2])) for p in picked}.values())
                kept = self.working([pid for pid, _ in items], by_id, created)
                items = [(pid, qty) for pid, (_, qty) in zip(kept, items, strict=True)]
            order_lines = []
            for pid, qty in items:
                unit = price[pid]
                if self.rng.random() < 0.05:  # the price has dropped since this order
                    unit = money(unit * self.rng.uniform(1.05, 1.15))
                order_lines.append({"product_id": pid, "quantity": qty, "unit_price": unit})
            subtotal = money(sum(ln["unit_price"] * ln["quantity"] for ln in order_lines))
            tier = customer["loyalty_tier"]
            discount = money(subtotal * self.policy.loyalty_discount_pct[tier] / 100)
            drawn = self.pick(self.recipe.shipping_methods)
            address = self.rng.choice(customer["addresses"])
            method = self.seeds.fidelity.shipping_method(drawn, address["state"])  # a service that reaches it
            shipping = shipping_price(self.policy, method, subtotal - discount, tier)
            order = {
                "_order": n, "customer_id": customer["id"], "subtotal": subtotal, "discount": discount,
                "shipping_cost": shipping, "total": money(subtotal - discount + shipping), "shipping_method": method,
                "shipping_address": address, "build_id": build_id, "_drawn_method": drawn,
                "created_at": created, "updated_at": created, "_lines": order_lines, "_tier": tier,
            }
            orders.append(order)
        for part in self.rows[m.BuildComponent]:  # saved builds as they were ordered
            part["product_id"] = parts_by_build[part["build_id"]][int(part["id"].rsplit("-", 1)[1]) - 1]
        self.dated_ids(orders, "ord", "created_at")
        for order in orders:
            for k, line in enumerate(order.pop("_lines"), start=1):
                lines.append({"id": f"{order['id']}-L{k}", "order_id": order["id"], **line})
        self.rows[m.Order] = orders
        self.rows[m.OrderLine] = lines
        self.price_histories()
        self.fulfil()

    def working(self, part_ids: list[str], by_id: dict[str, dict[str, Any]], when: datetime) -> list[str]:
        """``part_ids`` as they could be bought at ``when``: a part not yet released is swapped for the
        nearest-priced released part of its category, and CPU, board and memory are made to fit together
        by swapping one part (a board first, then memory, then the CPU) for a fitting, released part of its
        category with the same availability, so the order's fate stands: a part at the same price when one
        fits (the amounts stand too), else the nearest price. Mismatched platforms are never generated by
        accident; a task that wants one builds it in its ``setup``."""
        def problems(ids: list[str]) -> list[dict[str, Any]]:
            core = [by_id[i] for i in ids if by_id[i]["category"] in ("cpu", "motherboard", "memory")]
            return build_problems(core) if len({p["category"] for p in core}) > 1 else []

        for k, pid in enumerate(part_ids):
            if not self.launched(by_id[pid], when):
                options = (self.swaps(part_ids, k, by_id, False, when)
                           or self.swaps(part_ids, k, by_id, False, when, any_stock=True)
                           or self.swaps(part_ids, k, by_id, False, when, any_stock=True, any_category=True))
                part_ids = [*part_ids[:k], options[0], *part_ids[k + 1:]]
        if not problems(part_ids):
            return part_ids
        swap_first = ("motherboard", "memory", "cpu")  # the platform is the usual slip; the CPU is the choice
        core = sorted((k for k, pid in enumerate(part_ids) if by_id[pid]["category"] in swap_first),
                      key=lambda k: (swap_first.index(by_id[part_ids[k]]["category"]), -k))
        for same_price in (True, False):
            for k in core:
                for option in self.swaps(part_ids, k, by_id, same_price, when):
                    candidate = [*part_ids[:k], option, *part_ids[k + 1:]]
                    if not problems(candidate):
                        return candidate
        for k in core:  # no single part fits the other two: change the board (or memory) and then what it needs
            better = next((o for o in self.swaps(part_ids, k, by_id, False, when)
                           if len(problems([*part_ids[:k], o, *part_ids[k + 1:]])) < len(problems(part_ids))), None)
            if better is not None:
                return self.working([*part_ids[:k], better, *part_ids[k + 1:]], by_id, when)
        return part_ids

    def swaps(self, part_ids: list[str], k: int, by_id: dict[str, dict[str, Any]], same_price: bool, when: datetime,
              any_stock: bool = False, any_category: bool = False) -> list[str]:
        """Released parts that could replace ``part_ids[k]``: (unless told otherwise) its category and its
        availability, nearest price first. Before the first prebuilt came out, only another category can
        stand in for one."""
        old = by_id[part_ids[k]]
        return [p["id"] for p in sorted(
            (p for p in by_id.values() if (any_category or p["category"] == old["category"]) and p["id"] not in part_ids
             and self.launched(p, when) and (abs(p["price"] - old["price"]) < 0.005 or not same_price)
             and (any_stock or (p["stock_status"] == "out_of_stock") == (old["stock_status"] == "out_of_stock"))),
            key=lambda p: (abs(p["price"] - old["price"]), p["id"]))]

    def price_histories(self) -> None:
        """Give each product sold at other than today's price the history that explains its order lines.

        ``specs.price_history`` lists steps ``{"until": ISO datetime, "price": ...}`` in time order: the
        price in force before ``until``; after the last step the product sells at its listed price.
        """
        created = {o["id"]: o["created_at"] for o in self.rows[m.Order]}
        sales: dict[str, list[tuple[datetime, float]]] = defaultdict(list)
        for line in self.rows[m.OrderLine]:
            sales[line["product_id"]].append((created[line["order_id"]], line["unit_price"]))
        for product in self.rows[m.Product]:
            sold = sorted(sales.get(product["id"], []))
            if all(abs(unit - product["price"]) < 0.005 for _, unit in sold):
                continue
            steps: list[dict[str, Any]] = []
            current, previous = sold[0][1], sold[0][0]
            for when, unit in sold[1:]:
                if abs(unit - current) >= 0.005:
                    steps.append({"until": self.price_change(previous, when).isoformat(), "price": current})
                    current = unit
                previous = when
            if abs(current - product["price"]) >= 0.005:
                steps.append({"until": self.price_change(sold[-1][0], self.now + timedelta(days=1)).isoformat(),
                              "price": current})
            product["specs"] = {**product["specs"], "price_history": steps}

    def price_change(self, last_old: datetime, first_new: datetime) -> datetime:
        """When a price changed between a sale at the old price and the first at the new one: at midnight,
        a day or more before the new price was first paid when the sales allow it, else on the hour or half-hour,
        never within half an hour of a sale.
        A change after the last sale (``first_new`` past ``now``) happened by ``now``."""
        high = min(first_new - timedelta(minutes=30), self.now)

        def midnight(moment: datetime) -> datetime:
            return moment.astimezone(self.tz).replace(hour=0, minute=0, second=0, microsecond=0)

        for moment in (midnight(min(first_new - timedelta(days=1), high)), midnight(high),
                       high.replace(minute=high.minute // 30 * 30, second=0, microsecond=0)):
            if last_old + timedelta(minutes=30) < moment <= high:
                return moment
        return (last_old + (first_new - last_old) / 2).replace(second=0, microsecond=0)

    def fulfil(self) -> None:
        """Order status, payment and shipment for each order, by its age."""
        products = {p["id"]: p for p in self.rows[m.Product]}
        stock = {pid: p["stock_status"] for pid, p in products.items()}
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
                shipment = self.shipment(order, paid_at,
                                         [products[ln["product_id"]] for ln in lines_by_order[order["id"]]])
                shipments.append(shipment)
                order["updated_at"] = shipment["shipped_at"]
        self.rows[m.Payment] = payments
        self.rows[m.Shipment] = shipments

    def shipment(self, order: dict[str, Any], paid_at: datetime, items: list[dict[str, Any]]) -> dict[str, Any]:
        """The shipment of a fulfilled order (of ``items``), dated in business days that skip weekends and
        carrier holidays, from the warehouse ``kb-warehouse-network`` assigns.

        The shared stream is drawn as it was before holidays were honoured and before orders to states a
        service does not reach took another one (the hop count over the weekday-only timeline of the
        service first drawn), so those fixes move only the shipments they touch."""
        carrier = order["shipping_method"]
        holidays = self.policy.carrier_holidays

        def timeline(off: Collection[date], sla: int) -> tuple[datetime, datetime, datetime]:
            shipped = min(max(add_business_days(paid_at.replace(hour=9, minute=0), lead, off), paid_at), self.now)
            eta = add_business_days(shipped, sla, off).replace(hour=20, minute=0)
            arrive = add_business_days(eta, extra, off) if late else eta - timedelta(hours=early)
            return shipped, eta, arrive.replace(hour=hour, minute=minute)

        lead = self.rng.choice([0, 1, 1, 2])
        late = self.rng.random() < self.recipe.noise.late_delivery_rate
        extra = self.rng.randint(1, 5) if late else 0
        early = 0 if late else self.rng.randint(1, 9)
        hour, minute = self.rng.randint(10, 19), self.rng.randint(0, 59)
        drawn_sla = self.policy.shipping[order["_drawn_method"]].sla_business_days
        weekday_shipped, _, weekday_arrive = timeline((), drawn_sla)
        # The parcel travels as drawn; a service that stood in for one that does not reach the state
        # has its own ETA (a later one: the parcel is simply early, or no longer late).
        shipped, _, arrive = timeline(holidays, drawn_sla)
        eta = add_business_days(shipped, self.policy.shipping[carrier].sla_business_days, holidays).replace(
            hour=20, minute=0)
        late = late and arrive > eta
        delivered = arrive if arrive <= self.now else None
        self.rng.choice(WAREHOUSES)  # the warehouse was once drawn here; the draw keeps the shared stream
        dest = f"{order['shipping_address']['city']}, {order['shipping_address']['state']}"
        city = assigned_warehouse(dest, items, self.seeds.fidelity)
        picked = shipped + timedelta(hours=4)
        if not is_business_day(picked.date(), holidays):  # no collection on weekends and carrier holidays
            picked = add_business_days(picked, 1, holidays).replace(hour=7, minute=30)
        events = [(shipped, "label_created", city), (picked, "picked_up", city)]
        gaps = self.hop_gaps(weekday_shipped, weekday_arrive if weekday_arrive <= self.now else self.now)
        end = delivered or self.now
        spare = self.local_rng("hops", order["id"])
        hops, hop = [], shipped + timedelta(hours=18)
        while hop < end - timedelta(hours=12):
            hops.append(hop)
            hop += timedelta(hours=gaps.pop(0) if gaps else spare.randint(16, 40))
        # The hubs on the way, then the local delivery facility.
        route = [*self.route(city, order["shipping_address"]["state"], order["id"]), dest]
        hops = [h for h in hops if h > picked + timedelta(hours=6)]
        # Each stop scans the parcel once, the scans spread over the journey (no hub day after day); with
        # fewer scans than stops, the last scans are the local facility's.
        stops = min(len(route), len(hops))
        route = route[len(route) - stops:]
        events += [(hops[(k + 1) * len(hops) // stops - 1], "in_transit", hub) for k, hub in enumerate(route)]
        if late:
            events.append((min(eta, end), "delayed", "carrier network"))
        if delivered:
            events.append((delivered.replace(hour=8, minute=5), "out_for_delivery", dest))
            events.append((delivered, "delivered", dest))
        events = sorted((e for e in events if e[0] <= self.now), key=lambda e: e[0])
        status = "delivered" if delivered else ("exception" if late and self.now > eta else events[-1][1])
        if status == "picked_up":
            status = "in_transit"
        if status == "exception":  # the scan that put it there
            events.append((min(max(eta, events[-1][0]) + timedelta(hours=2), self.now), "exception", events[-1][2]))
        no_eta = self.rng.random() < self.recipe.noise.missing_eta_rate
        return {
            "id": order["id"].replace("ord-", "ship-"), "order_id": order["id"], "carrier": carrier,
            "tracking_number": self.tracking(carrier), "status": status, "shipped_at": shipped,
            "eta": None if no_eta else eta, "delivered_at": delivered,
            "events": [{"ts": ts.isoformat(), "status": st, "location": loc} for ts, st, loc in events],
        }

    def hop_gaps(self, shipped: datetime, end: datetime) -> list[int]:
        """Hours between in-transit scans, drawn from the shared stream for a parcel shipped at
        ``shipped`` and travelling until ``end``."""
        gaps, hop = [], shipped + timedelta(hours=18)
        while hop < end - timedelta(hours=12):
            self.rng.choice(range(6))  # the hub was once drawn here; the draw keeps the shared stream
            gaps.append(self.rng.randint(16, 40))
            hop += timedelta(hours=gaps[-1])
        return gaps

    def route(self, origin: str, state: str, order_id: str) -> list[str]:
        """Up to three carrier hubs on the way from ``origin`` to ``state``, each nearer the destination."""
        geo = self.seeds.fidelity
        start, goal = geo.coordinates(origin), geo.states.get(state)
        if start is None or goal is None:
            return []
        direct = distance_km(start, goal)
        on_the_way = [name for name, at in geo.hubs.items()
                      if distance_km(at, goal) < direct - 100
                      and distance_km(start, at) + distance_km(at, goal) <= 1.2 * direct + 150]
        rng = self.local_rng("route", order_id)
        chosen = rng.sample(on_the_way, min(len(on_the_way), rng.randint(1, 3)))
        return sorted(chosen, key=lambda name: -distance_km(geo.hubs[name], goal))

    def date_builds(self) -> None:
        """A build was saved after its parts were released and, if a customer ordered it, before the
        first order made from it (within the 30 days before, when it had to move)."""
        first_order: dict[str, datetime] = {}
        for order in self.rows[m.Order]:
            if order["build_id"]:
                first_order[order["build_id"]] = min(order["created_at"], first_order.get(order["build_id"], self.now))
        customers = {c["id"]: c for c in self.rows[m.Customer]}
        released = {p["id"]: date.fromisoformat(p["specs"]["released"]) for p in self.rows[m.Product]}
        newest: dict[str, date] = {}
        for part in self.rows[m.BuildComponent]:
            newest[part["build_id"]] = max(released[part["product_id"]], newest.get(part["build_id"], date.min))
        for build in self.rows[m.Build]:
            launch = datetime.combine(newest.get(build["id"], date.min), datetime.min.time(), self.tz) \
                if build["id"] in newest else self.start
            ordered = first_order.get(build["id"])
            latest = ordered - timedelta(hours=1) if ordered else self.now
            if launch <= build["created_at"] <= latest:
                continue
            owner = customers[build["customer_id"]]["created_at"] if build["customer_id"] else self.start
            low = max(owner, launch, ordered - timedelta(days=30) if ordered else launch)
            low = min(low, latest)
            rng = self.local_rng("build", build["id"])
            span = max(0, int((latest - low).total_seconds() // 60))
            build["created_at"] = low + timedelta(minutes=rng.randint(0, span))

    def tracking(self, carrier: str) -> str:
        return tracking_number(carrier, "".join(self.rng.choices(string.digits, k=12)))

