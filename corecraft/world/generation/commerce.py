"""Orders with their lines, payments and shipments (carrier timelines, late deliveries)."""

from __future__ import annotations

import random
import string
from collections import defaultdict
from collections.abc import Collection
from datetime import date, datetime, timedelta
from itertools import accumulate, combinations, pairwise, repeat
from typing import Any

from corecraft.world import models as m
from corecraft.world.compat import order_problems
from corecraft.world.fidelity import (
    FIRST_PICKUP,
    LAST_PICKUP,
    NEXT_DAY_LABELS,
    NIGHT_TRAILER_LABELS,
    ROUNDS_END,
    asked_at,
    assigned_warehouse,
    distance_km,
    price_at,
    stocked_parts,
)
from corecraft.world.generation.base import (
    GeneratorBase,
    add_business_days,
    is_business_day,
    money,
    shipping_price,
)
from corecraft.world.rules import (
    FIRST_SCAN_BUSINESS_DAYS,
    SILENT_BUSINESS_DAYS,
    business_days_after,
    max_delay,
    tracking_number,
)
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
                # Sold while the product was dearer (a spell of ``price_spells``), by this much.
                dearer = self.rng.uniform(1.05, 1.15) if self.rng.random() < 0.05 else None
                order_lines.append({"product_id": pid, "quantity": qty, "unit_price": price[pid], "_dearer": dearer})
            drawn = self.pick(self.recipe.shipping_methods)
            address = self.rng.choice(customer["addresses"])
            method = self.seeds.fidelity.shipping_method(drawn, address["state"])  # a service that reaches it
            order = {
                "_order": n, "customer_id": customer["id"], "shipping_method": method,
                "shipping_address": address, "build_id": build_id, "_drawn_method": drawn,
                "created_at": created, "updated_at": created, "_lines": order_lines, "_tier": customer["loyalty_tier"],
            }
            orders.append(order)
        self.one_build_a_season(orders, products)
        self.price_spells(orders)
        for order in orders:
            self.priced(order, order["_lines"])
        for part in self.rows[m.BuildComponent]:  # saved builds as they were ordered
            part["product_id"] = parts_by_build[part["build_id"]][int(part["id"].rsplit("-", 1)[1]) - 1]
        self.dated_ids(orders, "ord", "created_at")
        for order in orders:
            for k, line in enumerate(order.pop("_lines"), start=1):
                line.pop("_dearer")
                lines.append({"id": f"{order['id']}-L{k}", "order_id": order["id"], **line})
        self.rows[m.Order] = orders
        self.rows[m.OrderLine] = lines
        self.fulfil()

    def priced(self, order: dict[str, Any], lines: list[dict[str, Any]]) -> None:
        """Set ``order``'s amounts from its ``lines``: subtotal, loyalty discount, shipping and total."""
        subtotal = money(sum(ln["unit_price"] * ln["quantity"] for ln in lines))
        discount = money(subtotal * self.policy.loyalty_discount_pct[order["_tier"]] / 100)
        shipping = shipping_price(self.policy, order["shipping_method"], subtotal - discount, order["_tier"])
        order.update(subtotal=subtotal, discount=discount, shipping_cost=shipping,
                     total=money(subtotal - discount + shipping))

    def one_build_a_season(self, orders: list[dict[str, Any]], products: list[dict[str, Any]]) -> None:
        """A customer orders a saved build once a season (``repeat_order_days``): an order of the same build
        sooner after the last one adds a part to that PC instead (its lines were drawn all the same)."""
        window = timedelta(days=self.seeds.fidelity.repeat_order_days)
        last: dict[str, datetime] = {}
        for order in sorted(orders, key=lambda o: (o["created_at"], o["_order"])):
            build_id = order["build_id"]
            if build_id is None:
                continue
            if build_id in last and order["created_at"] - last[build_id] <= window:
                add_on = self.add_on(products, order["created_at"], str(order["_order"]))
                price = next(p["price"] for p in products if p["id"] == add_on)
                order["_lines"] = [{"product_id": add_on, "quantity": 1, "unit_price": price, "_dearer": None}]
                order["build_id"] = None
            else:
                last[build_id] = order["created_at"]

    def add_on(self, products: list[dict[str, Any]], when: datetime, key: str) -> str:
        """A part a customer adds to a PC they already ordered (more storage, memory or cooling) that was out
        at ``when``, drawn from randomness private to the order."""
        options: list[str] = [p["id"] for p in products if p["category"] in ("storage", "memory", "cooling")
                   and self.launched(p, when)] or [p["id"] for p in products if self.launched(p, when)]
        return self.local_rng("add-on", key).choice(options)

    def working(self, part_ids: list[str], by_id: dict[str, dict[str, Any]], when: datetime) -> list[str]:
        """``part_ids`` as they could be bought at ``when``: a part not yet released is swapped for the
        nearest-priced released part of its category, and CPU, board and memory are made to fit together
        (``order_problems``: as in a build, and one platform per basket) by swapping one part (a board
        first, then memory, then the CPU) for a fitting, released part of its category with the same
        availability, so the order's fate stands: a part at the same price when one
        fits (the amounts stand too), else the nearest price. Mismatched platforms are never generated by
        accident; a task that wants one builds it in its ``setup``."""
        def problems(ids: list[str]) -> list[dict[str, Any]]:
            return order_problems([by_id[i] for i in ids])

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

    def price_spells(self, orders: list[dict[str, Any]]) -> None:
        """Spells when a product sold dearer than its listed price (a supply squeeze), around the sales drawn
        as dearer: each at a shelf price (the listed price's cents, ``retail_cents``), lasting and followed by
        more than ``price_step_days``, over by ``now``. Every line sold during a spell is priced at it, and
        ``specs.price_history`` lists steps ``{"until": ISO datetime, "price": ...}`` in time order: the price
        in force before ``until``; after the last step the product sells at its listed price."""
        rules = self.seeds.fidelity
        step = timedelta(days=rules.price_step_days + 1)  # a day to spare for moving a change off a sale
        latest = self.midnight(self.now)
        sales: dict[str, list[tuple[datetime, dict[str, Any]]]] = defaultdict(list)
        for order in orders:
            for line in order["_lines"]:
                sales[line["product_id"]].append((order["created_at"], line))
        for product in self.rows[m.Product]:
            sold = sorted(sales.get(product["id"], []), key=lambda sale: sale[0])
            rng = self.local_rng("price", product["id"])
            spells: list[tuple[datetime, datetime, float]] = []
            for when, line in sold:
                if line["_dearer"] is None:
                    continue
                day = self.midnight(when)
                ran_on = bool(spells) and day < spells[-1][1] + step  # soon after the last spell: it ran on
                if ran_on:
                    start, end, dearer = spells[-1]
                    end = max(end, day + timedelta(days=1))
                else:
                    start = day - timedelta(days=rng.randint(1, step.days))
                    start = max(start, spells[-1][1] + step) if spells else start
                    end = max(start + timedelta(days=rng.randint(step.days, 3 * step.days)), day + timedelta(days=1))
                    dearer = self.shelf_price(product["price"], line["_dearer"])
                end = min(end, latest)  # a spell still running now would be today's price: it ended by today
                if not ran_on:
                    start = min(start, end - step)
                if end - start < step or when >= end or (not ran_on and spells and start < spells[-1][1] + step):
                    continue  # no spell fits: the sale was at the listed price
                spells[len(spells) - ran_on:] = [(start, end, dearer)]
            moments = [sale for sale, _ in sold]
            spells = [(self.off_sales(start, moments), self.off_sales(end, moments), dearer)
                      for start, end, dearer in spells]
            for when, line in sold:
                line["unit_price"] = next((dearer for start, end, dearer in spells if start <= when < end),
                                          product["price"])
            if spells:
                product["specs"] = {**product["specs"], "price_history": [
                    step for start, end, dearer in spells for step in (
                        {"until": start.isoformat(), "price": product["price"]},
                        {"until": end.isoformat(), "price": dearer})]}

    def midnight(self, moment: datetime) -> datetime:
        """The start of ``moment``'s day in the world's time zone."""
        return moment.astimezone(self.tz).replace(hour=0, minute=0, second=0, microsecond=0)

    @staticmethod
    def shelf_price(listed: float, factor: float) -> float:
        """``listed`` raised by ``factor`` to whole dollars, with the listed price's cents ($479.00 -> $526.00)."""
        cents = round(listed * 100) % 100
        return money(max(int(listed * factor), int(listed) + 1) + cents / 100)

    @staticmethod
    def off_sales(moment: datetime, sales: list[datetime]) -> datetime:
        """``moment``, or the first hour after it with no sale within half an hour: a price does not change
        at the minute of an order."""
        while any(abs(sale - moment) < timedelta(minutes=30) for sale in sales):
            moment += timedelta(hours=1)
        return moment

    def fulfil(self) -> None:
        """Order status, payment and shipment for each order, by its age."""
        products = {p["id"]: p for p in self.rows[m.Product]}
        stock = {pid: p["stock_status"] for pid, p in products.items()}
        lines_by_order = self.lines_by_order()
        payments, shipments = [], []
        out_since: dict[str, datetime] = {}  # an out-of-stock part's stock-out: its first backorder
        for order in self.rows[m.Order]:  # in time order
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
            if status in ("paid", "fulfilled") and not self.in_stock_instead(order, lines_by_order[order["id"]],
                                                                                products, out_since):
                status = "backorder"  # nothing in stock could stand in: it waits too
            order["status"] = status
            if status == "backorder":
                for pid in (part for ln in lines_by_order[order["id"]] for part in stocked_parts(products[ln["product_id"]])):
                    if stock[pid] == "out_of_stock":
                        out_since.setdefault(pid, order["created_at"])
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
            shipment = self.shipment(order, paid_at, [products[ln["product_id"]] for ln in
                                                      lines_by_order[order["id"]]]) if status == "fulfilled" else None
            if shipment is not None:
                shipments.append(shipment)
                order["updated_at"] = shipment["shipped_at"]
            elif status == "fulfilled":  # the carrier has not collected it yet
                order["status"] = "paid"
        self.rows[m.Payment] = payments
        self.rows[m.Shipment] = shipments

    def in_stock_instead(self, order: dict[str, Any], lines: list[dict[str, Any]], products: dict[str, dict[str, Any]],
                         out_since: dict[str, datetime]) -> bool:
        """Whether an order can ship: one placed after a part it takes ran out (``out_since``: it, or a prebuilt
        built with it) was placed for the nearest-priced part of the same category in stock then, fitting the
        rest of the order (the shopper took what was there rather than a backorder), at that part's price of the
        day, and its amounts follow; False (the lines untouched) when no such part exists. No draw is made, so
        every other record stays as it was."""
        when = order["created_at"]

        def gone(pid: str) -> bool:
            return any(out_since.get(part, when) < when for part in stocked_parts(products[pid]))

        part_ids = [ln["product_id"] for ln in lines]
        for k, pid in enumerate(part_ids):
            if gone(pid):
                part_ids[k] = next((o for o in self.swaps(part_ids, k, products, False, when, any_stock=True)
                                    if products[o]["stock_status"] != "out_of_stock" and not gone(o) and not
                                    order_problems([products[p] for p in [*part_ids[:k], o, *part_ids[k + 1:]]])), pid)
        if any(gone(pid) for pid in part_ids):
            return False
        if part_ids != [ln["product_id"] for ln in lines]:
            for line, pid in zip(lines, part_ids, strict=True):
                line.update(product_id=pid, unit_price=price_at(products[pid], when))
            self.priced(order, lines)
        return True

    def replacement_orders(self) -> None:
        """A replacement approved on a ticket becomes a no-charge order once returns logs the unit sent back,
        ``return_business_days`` carrier business days after the approval (a re-send of an item missing from
        its order once fulfillment logs the shortfall, ``resend.business_days`` after it): the replaced product for the
        replaced order's customer and address, $0 and with no payment, numbered after its day's orders (which
        keep their ids) and shipped as any order is, from randomness private to the ticket (the shared stream,
        and so every other record, stays as it was). The approval's details then say so, and its outcome is
        ``replacement_sent`` once the order ships (kb-writing-resolutions), the resolution updated then. A unit
        returned for a refund by then, or already replaced, is not replaced again (the details say which); an
        approval too recent for the return to be logged by now keeps its promise."""
        promise = self.seeds.fidelity.replacement_promise
        products = {p["id"]: p for p in self.rows[m.Product]}
        lines_by_order = self.lines_by_order()
        line_product = {ln["id"]: ln["product_id"] for ln in self.rows[m.OrderLine]}
        order_of_payment = {p["id"]: p["order_id"] for p in self.rows[m.Payment]}
        tickets = {t["id"]: t for t in self.rows[m.SupportTicket]}
        refunds_of: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)  # by (order, product)
        for refund in sorted(self.rows[m.Refund], key=lambda x: x["created_at"]):
            for ln in refund["lines"]:
                refunds_of[order_of_payment[refund["payment_id"]], line_product[ln["order_line_id"]]].append(
                    {"id": refund["id"], "created_at": refund["created_at"], "units": ln["quantity"],
                     "asked_at": asked_at(refund, tickets)})
        approvals = []
        for res in self.rows[m.Resolution]:
            if res["_replaces"] is not None:
                rng = self.local_rng("replacement", res["ticket_id"])
                logged = add_business_days(res["created_at"], rng.randint(*promise.business_days(res["details"])),
                                           self.policy.carrier_holidays).replace(hour=rng.randint(9, 16),
                                                                                 minute=rng.randint(0, 59))
                if logged <= self.now:
                    approvals.append((logged, res, rng))
        placed: list[dict[str, Any]] = []
        sent: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)  # replacement orders by what they replace
        withdrawn: list[tuple[dict[str, Any], str, str, dict[str, Any]]] = []  # (approval, why, field, record)
        for logged, res, rng in sorted(approvals, key=lambda a: (a[0], a[1]["_order"])):
            replaced, product_id, quantity = res["_replaces"]
            key = (replaced["id"], product_id)
            refunds = [x for x in refunds_of[key] if x["asked_at"] <= logged]  # asked back for a refund by then
            left = sum(ln["quantity"] for ln in lines_by_order[replaced["id"]] if ln["product_id"] == product_id) \
                - sum(x["units"] for x in refunds) - sum(o["_line"]["quantity"] for o in sent[key])
            if left <= 0:  # nothing left to replace: refunded, or replaced already
                withdrawn.append((res, "refunded", "refund_id", refunds[-1]) if refunds
                                 else (res, "replaced_before", "order_id", sent[key][-1]))
                continue
            placed.append({
                "_order": len(placed), "_resolution": res, "_rng": rng, "customer_id": replaced["customer_id"],
                "status": "paid", "subtotal": 0.0, "discount": 0.0, "shipping_cost": 0.0, "total": 0.0,
                "shipping_method": replaced["shipping_method"], "_drawn_method": replaced["_drawn_method"],
                "shipping_address": replaced["shipping_address"], "build_id": None,
                "replaces_order_id": replaced["id"], "created_at": logged, "updated_at": logged,
                "_line": {"product_id": product_id, "quantity": min(quantity, left), "unit_price": 0.0},
            })
            sent[key].append(placed[-1])
        self.dated_ids(placed, "ord", "created_at", after=(o["id"] for o in self.rows[m.Order]))
        for res, why, field, record in withdrawn:
            when = max(record["created_at"], res["created_at"])
            res["details"] = promise.settled(res["details"], why, date=when.date().isoformat(), **{field: record["id"]})
            self.updated(res, when)
        for order in placed:
            line = {"id": f"{order['id']}-L1", "order_id": order["id"], **order.pop("_line")}
            shipment = self.shipment(order, order["created_at"], [products[line["product_id"]]], order.pop("_rng"))
            res = order["_resolution"]  # kept: the parcel's clock moves its update with the shipment
            res["details"] = promise.settled(res["details"], "placed", date=order["created_at"].date().isoformat(),
                                             order_id=order["id"])
            if shipment is not None:
                self.rows[m.Shipment].append(shipment)
                order.update(status="fulfilled", updated_at=shipment["shipped_at"])
                res["outcome"] = "replacement_sent"
            # updated when placed, or when the replacement ships: its outcome changes then
            self.updated(res, order["created_at"] if shipment is None else shipment["shipped_at"])
            self.rows[m.OrderLine].append(line)
        self.rows[m.Order] += placed

    def restocks(self) -> None:
        """An order left on backorder more than ``backorder_kept_days`` ago waited ``backorder_wait_days`` for its
        missing parts to come back in stock and has shipped since. A restock of a part serves every order waiting on
        it then; the order ships (as any order does, from randomness private to it) on the first business day
        at or after its parts' restocks that follows the last record about it (its tickets and their records,
        a Slack post naming it), so whatever those records said of the backorder stays true. A part out of stock
        today ran out once, at the first order still waiting on it: an order whose restock would come after that
        (or after now) waits too. Done after every other draw, so the shared stream stays as it was."""
        rules = self.seeds.fidelity
        low, high = rules.backorder_wait_days
        holidays = self.policy.carrier_holidays
        products = {p["id"]: p for p in self.rows[m.Product]}
        lines_by_order = self.lines_by_order()
        moments = self.order_moments()
        waiting = sorted((o for o in self.rows[m.Order] if o["status"] == "backorder"), key=lambda o: o["created_at"])
        missing = {o["id"]: sorted({pid for ln in lines_by_order[o["id"]]
                                    for pid in stocked_parts(products[ln["product_id"]])
                                    if products[pid]["stock_status"] == "out_of_stock"}) for o in waiting}
        stays = {o["id"] for o in waiting if self.now - o["created_at"] <= timedelta(days=rules.backorder_kept_days)}
        while True:
            ran_out: dict[str, datetime] = {}
            for order in (o for o in waiting if o["id"] in stays):
                for pid in missing[order["id"]]:
                    ran_out.setdefault(pid, order["created_at"])
            restock: dict[str, datetime] = {}
            ships: list[tuple[dict[str, Any], datetime, random.Random]] = []
            for order in (o for o in waiting if o["id"] not in stays):
                rng = self.local_rng("restock", order["id"])
                for pid in missing[order["id"]]:
                    if restock.get(pid, order["created_at"]) <= order["created_at"]:
                        day = self.midnight(order["created_at"]) + timedelta(days=rng.randint(low, high))
                        restock[pid] = day.replace(hour=9) + timedelta(minutes=rng.randint(0, 240))
                when = max([restock[pid] for pid in missing[order["id"]]]
                           + [moment + timedelta(days=1) for moment in moments.get(order["id"], [])])
                while not is_business_day(when.date(), holidays):
                    when += timedelta(days=1)
                if when > self.now or any(pid in ran_out and ran_out[pid] <= when for pid in missing[order["id"]]):
                    stays.add(order["id"])
                    break
                ships.append((order, when, rng))
            else:
                break
        for order, when, rng in ships:
            shipment = self.shipment(order, when, [products[ln["product_id"]] for ln in lines_by_order[order["id"]]],
                                     rng)
            order.update(status="paid", updated_at=when)
            if shipment is not None:
                self.rows[m.Shipment].append(shipment)
                order.update(status="fulfilled", updated_at=shipment["shipped_at"])

    def clocks(self) -> None:
        """Give each parcel's label, pickup and hub scans their own minutes of the day's work, where the plain
        clock (picking at 09:00, the 13:00 collection, a hub scan 18 hours after the label) put hundreds of parcels
        on one minute. Done last, on the finished records, from randomness private to the parcel: every moment
        stays on its day and keeps its order, and moves only where no record about the order (its tickets, their
        resolutions, refunds and escalations, a Slack post naming it) falls between the old and new moments, so
        whatever was true of the order when each record was written stays true."""
        moments = self.order_moments()
        orders = {o["id"]: o for o in self.rows[m.Order]}
        paid = {p["order_id"]: p["processed_at"] for p in self.rows[m.Payment]}
        for ship in self.rows[m.Shipment]:
            times = self.working_clock(ship, paid.get(ship["order_id"]), moments.get(ship["order_id"], []))
            if times is None:
                continue
            for event, when in zip(ship["events"], times, strict=True):
                event["ts"] = when.isoformat()
            order = orders[ship["order_id"]]
            if order["updated_at"] == ship["shipped_at"]:
                order["updated_at"] = times[1]
            settled = order.get("_resolution")  # a replacement's approval, updated when the replacement shipped
            if settled is not None and settled["updated_at"] == ship["shipped_at"]:
                self.updated(settled, times[1])
            ship["shipped_at"] = times[1]

    def working_clock(self, ship: dict[str, Any], paid: datetime | None, near: list[datetime]) -> list[datetime] | None:
        """The parcel's scan moments on the day's work (see :meth:`clocks`): its label later in the morning, its
        pickup at another minute of the afternoon and its hub scans with the label, each give or take three quarters
        of an hour, or the label and pickup alone, or the label alone, whichever first holds (a label and pickup off
        the plain clock stay); None when it keeps its clock."""
        events = ship["events"]
        if len(events) < 2 or (events[0]["status"], events[1]["status"]) != ("label_created", "picked_up"):
            return None
        old = [datetime.fromisoformat(e["ts"]).astimezone(self.tz) for e in events]
        label, pickup = old[0], old[1]
        rng = self.local_rng("clock", ship["id"])
        picking, collection = timedelta(minutes=rng.randint(0, 140)), timedelta(minutes=rng.randint(-40, 150))
        new_label = label + picking if (label.hour, label.minute) == (9, 0) else label
        new_pickup = min(max(pickup + collection, new_label + timedelta(hours=2)),
                         datetime.combine(pickup.date(), LAST_PICKUP, pickup.tzinfo)) \
            if (pickup.hour, pickup.minute) == (13, 0) else pickup
        # Each hub scans the parcel when its own shift gets to it: a minute of its own, not the label's to the minute.
        shifts = self.local_rng("hub-clock", ship["id"])
        hubs = [t + (new_label - label) + timedelta(minutes=shifts.randint(-45, 45)) if e["status"] == "in_transit"
                else t for t, e in zip(old[2:], events[2:], strict=True)]
        return next((times for times in ([new_label, new_pickup, *hubs], [new_label, new_pickup, *old[2:]],
                                         [new_label, *old[1:]])
                     if self.clock_holds(ship, old, times, paid, near)), None)

    def clock_holds(self, ship: dict[str, Any], old: list[datetime], times: list[datetime], paid: datetime | None,
                    near: list[datetime]) -> bool:
        """Whether the parcel's scans may move from ``old`` to ``times``: in order, by now, after the payment, each
        on its day (and the carrier's on business days), at its service's speed, and with no record about the order
        (``near``) between a scan's old and new moment."""
        events, holidays = ship["events"], self.policy.carrier_holidays
        speed = self.seeds.fidelity.leg_speed_problem
        moved = [(t, o) for t, o in zip(times, old, strict=True) if t != o]
        legs = zip(zip(events, times, strict=True), zip(events[1:], times[1:], strict=True), strict=False)
        return times == sorted(times) and times[-1] <= self.now and (paid is None or times[0] > paid) \
            and all(t.date() == o.date() for t, o in moved) \
            and all(is_business_day(t.date(), holidays) for t in times[1:]) \
            and not any(min(t, o) <= x <= max(t, o) for t, o in moved for x in near) \
            and not any(speed(a["location"], ta, b["location"], tb, ship["carrier"]) for (a, ta), (b, tb) in legs)

    def order_moments(self) -> dict[str, list[datetime]]:
        """When each order's records were written: its tickets (created and updated), their resolutions,
        refunds and escalations, and the Slack posts that name it or its tracking number."""
        moments: dict[str, list[datetime]] = defaultdict(list)
        order_of = {t["id"]: t["order_id"] for t in self.rows[m.SupportTicket] if t["order_id"]}
        for t in self.rows[m.SupportTicket]:
            if t["order_id"]:
                moments[t["order_id"]] += [t["created_at"], t["updated_at"]]
        for row in [*self.rows[m.Resolution], *self.rows[m.Refund], *self.rows[m.Escalation]]:
            if row.get("ticket_id") in order_of:
                moments[order_of[row["ticket_id"]]] += [row[k] for k in ("created_at", "processed_at", "resolved_at")
                                                         if row.get(k) is not None]
        for msg, orders in self.slack_naming_orders():
            for order_id in orders:
                moments[order_id].append(msg["ts"])
        return moments

    def updated(self, resolution: dict[str, Any], when: datetime) -> None:
        """Date the update just added to ``resolution``'s details, on it and on its ticket (a ticket is updated
        whenever its records are)."""
        resolution["updated_at"] = when
        ticket = next(t for t in self.rows[m.SupportTicket] if t["id"] == resolution["ticket_id"])
        ticket["updated_at"] = max(ticket["updated_at"], when)

    def shipment(self, order: dict[str, Any], paid_at: datetime, items: list[dict[str, Any]],
                 rng: random.Random | None = None) -> dict[str, Any] | None:
        """The shipment of a fulfilled order (of ``items``), dated in business days that skip weekends and
        carrier holidays, from the warehouse ``kb-warehouse-network`` assigns; None when the carrier has not
        collected it by ``now`` (the order has not shipped). Its ship date (``shipped_at``) is the carrier's
        pickup, as ``kb-shipment-tracking-events`` counts it, not the label. Drawn from ``rng``, else the
        shared stream.

        The shared stream is drawn as it was before holidays were honoured and before orders to states a
        service does not reach took another one (the hop count over the weekday-only timeline of the
        service first drawn, from the label), so those fixes move only the shipments they touch."""
        carrier = order["shipping_method"]
        holidays = self.policy.carrier_holidays

        def labelled(off: Collection[date]) -> datetime:
            return min(max(add_business_days(paid_at.replace(hour=9, minute=0), lead, off), paid_at), self.now)

        def timeline(start: datetime, off: Collection[date], sla: int, delay: int) -> tuple[datetime, datetime]:
            eta = add_business_days(start, sla, off).replace(hour=ROUNDS_END.hour, minute=ROUNDS_END.minute)
            arrive = add_business_days(eta, delay, off) if late else eta - timedelta(hours=early)
            return eta, arrive.replace(hour=hour, minute=minute)

        draw = rng or self.rng
        lead = draw.choice([0, 1, 1, 2])
        late = draw.random() < self.recipe.noise.late_delivery_rate
        extra = draw.randint(1, 5) if late else 0
        early = 0 if late else draw.randint(1, 9)
        hour, minute = draw.randint(10, 19), draw.randint(0, 59)
        drawn_sla = self.policy.shipping[order["_drawn_method"]].sla_business_days
        weekday_label = labelled(())
        _, weekday_arrive = timeline(weekday_label, (), drawn_sla, extra)
        label = labelled(holidays)
        if not is_business_day(label.date(), holidays):  # paid on a closed day: picked the next business day
            label = min(add_business_days(label, 1, holidays).replace(hour=9, minute=0), self.now)
        run = self.local_rng("clock", order["id"]).randint(65, 150)  # the courier's run from 08:05: each parcel its minute
        shipped = label + timedelta(hours=4)
        if not is_business_day(shipped.date(), holidays):  # no collection on weekends and carrier holidays
            shipped = add_business_days(shipped, 1, holidays).replace(hour=FIRST_PICKUP.hour, minute=FIRST_PICKUP.minute)
        elif shipped.hour < 7:  # nor before the morning round
            shipped = shipped.replace(hour=FIRST_PICKUP.hour, minute=FIRST_PICKUP.minute)
        # The parcel travels as drawn; a service that stood in for one that does not reach the state
        # has its own ETA (a later one: the parcel is simply early, or no longer late).
        # A delay is in proportion to the service: a fast parcel runs late by a day or two, not a week (the
        # delay drawn above still paces the scans, so the shared stream stays as it was).
        _, arrive = timeline(shipped, holidays, drawn_sla, min(extra, max_delay(drawn_sla)))
        eta = add_business_days(shipped, self.policy.shipping[carrier].sla_business_days, holidays).replace(
            hour=ROUNDS_END.hour, minute=ROUNDS_END.minute)
        late = late and arrive > eta
        delivered = arrive if arrive <= self.now else None
        draw.choice(WAREHOUSES)  # the warehouse was once drawn here; the draw keeps the shared stream
        dest = f"{order['shipping_address']['city']}, {order['shipping_address']['state']}"
        city = assigned_warehouse(dest, items, self.seeds.fidelity)
        printed = later = label
        if label == paid_at:  # picked the moment it was paid: the label is printed once someone picks it, that
            minutes = self.local_rng("label", order["id"]).randint(20, 55)  # day, or before the morning pickup
            later = label + timedelta(minutes=minutes)
            if later.date() != label.date():
                later = shipped - timedelta(minutes=minutes + 10)
        if later.date() == shipped.date() and later.time() <= NIGHT_TRAILER_LABELS and shipped.time() > LAST_PICKUP:
            shipped = datetime.combine(shipped.date(), LAST_PICKUP, shipped.tzinfo)  # in time for the last collection
        if later.date() == shipped.date() and later.time() > NEXT_DAY_LABELS >= label.time():
            # printed in time for the night trailer it leaves on: between its picking and the trailer's last labels
            cutoff = datetime.combine(label.date(), NEXT_DAY_LABELS, label.tzinfo)
            later = label + timedelta(minutes=(cutoff - label) // timedelta(minutes=2))
        if label < later <= min(shipped - timedelta(minutes=30), self.now):
            printed = later
        events = [(printed, "label_created", city), (shipped, "picked_up", city)]
        gaps = self.hop_gaps(weekday_label, weekday_arrive if weekday_arrive <= self.now else self.now, draw)
        end = delivered or self.now
        spare, jitter = self.local_rng("hops", order["id"]), self.local_rng("hop-minutes", order["id"])
        hops, hop = [], label + timedelta(hours=18)
        while hop < arrive - timedelta(hours=12):  # the whole journey, the part still to come included
            hops.append(hop + timedelta(minutes=jitter.randint(-29, 29)))  # a hub scans when the parcel comes
            hop += timedelta(hours=gaps.pop(0) if gaps else spare.randint(16, 40))
        # The hubs on the way, then the local delivery facility; hubs scan on carrier business days.
        hops = [h for h in self.on_carrier_days(hops, holidays) if h > shipped + timedelta(hours=6)]
        route = [*(hub for hub in self.route(city, dest, order["id"], len(hops) - 2) if hub != dest), dest]
        # Each place scans the parcel once (no hub day after day), the scans spread evenly over the journey so
        # that none falls silent for days (``kb-shipment-tracking-events`` has a trace opened after five
        # business days without a scan). A trip with scans to spare is also scanned at the carrier's sort
        # centre in the warehouse city: the night after its pickup, or spread with the others, whichever
        # leaves the shorter longest silence. With fewer scans than stops, the last are the local facility's.
        if len(hops) > len(route) and city != dest:
            ways = [[hops[0], *self.spread(hops[1:], len(route), hops[0], arrive)],
                    self.spread(hops, len(route) + 1, shipped, arrive)]
            events += zip(min(ways, key=lambda way: max(b - a for a, b in pairwise([shipped, *way, arrive]))),
                          repeat("in_transit"), [city, *route])
        else:
            places = route[max(len(route) - len(hops), 0):]
            events += zip(self.spread(hops, len(places), shipped, arrive), repeat("in_transit"), places)
        out_for_delivery = delivered.replace(hour=7, minute=0) + timedelta(minutes=run) if delivered else None
        events = self.sorted_after_pickup(self.reachable(events, dest, out_for_delivery, carrier), dest,
                                          out_for_delivery, carrier, order["id"])
        due = self.local_rng("delay", order["id"])
        flagged = eta.replace(hour=due.randint(15, 18), minute=due.randint(0, 59))
        if late and flagged < end:  # the carrier flags the delay late on the due day (once it comes), where the
            held = max((e for e in events if e[0] <= flagged), key=lambda e: e[0])[2]  # parcel then is
            events = self.reachable([*events, (flagged, "delayed", held)], dest, out_for_delivery, carrier)
        if delivered and out_for_delivery:
            events.append((out_for_delivery, "out_for_delivery", dest))
            events.append((delivered, "delivered", dest))
        events = sorted((e for e in events if e[0] <= self.now), key=lambda e: e[0])
        status = "delivered" if delivered else ("exception" if late and self.now > eta else events[-1][1])
        if status == "picked_up":
            status = "in_transit"
        if status == "exception":  # the scan that put it there
            events.append((min(max(eta, events[-1][0]) + timedelta(hours=2), self.now), "exception", events[-1][2]))
        no_eta = draw.random() < self.recipe.noise.missing_eta_rate
        tracking = self.tracking(carrier, draw)
        if shipped > self.now:  # the label waits for the carrier: not shipped yet
            return None
        rows = [{"ts": ts.isoformat(), "status": st, "location": loc} for ts, st, loc in events]
        if status == "exception":  # the exception scan says what went wrong, in the carrier's words
            rows[-1]["description"] = self.local_rng("exception", order["id"]).choice(
                self.seeds.fidelity.carrier_exceptions)
        return {
            "id": order["id"].replace("ord-", "ship-"), "order_id": order["id"], "carrier": carrier,
            "tracking_number": tracking, "status": status, "shipped_at": shipped,
            "eta": None if no_eta else eta, "delivered_at": delivered, "events": rows,
        }

    def reachable(self, events: list[tuple[datetime, str, str]], dest: str, arrives: datetime | None,
                  carrier: str) -> list[tuple[datetime, str, str]]:
        """``events`` (moment, status, place) less the in-transit scans the parcel could not have made at its
        service's speed (:meth:`~corecraft.world.fidelity.Fidelity.leg_speed_problem`): one too soon after the
        scan before it, or too late to reach ``dest`` by ``arrives`` (its morning out for delivery). The scan
        moments were drawn apart from the route's distances; dropping a scan moves nothing else."""
        legal = self.seeds.fidelity.leg_speed_problem
        kept: list[tuple[datetime, str, str]] = []
        for event in sorted(events):
            if not (event[1] == "in_transit" and kept and legal(kept[-1][2], kept[-1][0], event[2], event[0], carrier)):
                kept.append(event)
        while arrives is not None and kept[-1][1] == "in_transit" and legal(kept[-1][2], kept[-1][0], dest, arrives,
                                                                             carrier):
            kept.pop()
        return kept

    def sorted_after_pickup(self, events: list[tuple[datetime, str, str]], dest: str, arrives: datetime | None,
                            carrier: str, order_id: str) -> list[tuple[datetime, str, str]]:
        """``events`` (moment, status, place: the label and the pickup first) with the carrier's sort-centre scan
        in the pickup city in the small hours of the business day after the pickup, where a long trip's few scans,
        spread over it, left the first one after the pickup more than
        :data:`~corecraft.world.rules.FIRST_SCAN_BUSINESS_DAYS` later: the sort-centre scan the trip had, moved
        there, or a new one (a day later when that leaves no silence longer than
        :data:`~corecraft.world.rules.SILENT_BUSINESS_DAYS` on the way on). From randomness private to the parcel;
        as they were where the leg on from the sort centre would outrun the service, or the parcel is not out of
        the pickup city before it arrives (``arrives``: its morning out for delivery at ``dest``)."""
        holidays = self.policy.carrier_holidays
        (_, _, city), (pickup, _, _) = events[:2]
        ahead = [*events[2:], *([(arrives, "out_for_delivery", dest)] if arrives else [])]
        if not ahead or business_days_after(pickup.date(), ahead[0][0].date(), holidays) <= FIRST_SCAN_BUSINESS_DAYS:
            return events
        moved = ahead[0][1:] == ("in_transit", city)
        on = ahead[moved] if len(ahead) > moved else None
        day = add_business_days(pickup, 1, holidays)
        while on and business_days_after(day.date(), on[0].date(), holidays) > SILENT_BUSINESS_DAYS and \
                business_days_after(pickup.date(), day.date(), holidays) < FIRST_SCAN_BUSINESS_DAYS:
            day = add_business_days(day, 1, holidays)
        rng = self.local_rng("sort-centre", order_id)
        scan = day.replace(hour=rng.randint(1, 4), minute=rng.randint(0, 59))
        if scan >= ahead[0][0] or (on and self.seeds.fidelity.leg_speed_problem(city, scan, on[2], on[0], carrier)):
            return events
        return [*events[:2], (scan, "in_transit", city), *events[2 + moved:]]

    @staticmethod
    def on_carrier_days(hops: list[datetime], holidays: Collection[date]) -> list[datetime]:
        """In-transit scan moments with each one on a weekend or carrier holiday moved into the small hours
        (1 to 6 am) of the next business day, in proportion to how far into the closed days it fell, and
        every moment a minute or more after the one before."""
        moved: list[datetime] = []
        for hop in hops:
            if not is_business_day(hop.date(), holidays):
                closed = hop.replace(hour=0, minute=0, second=0, microsecond=0)
                while not is_business_day((closed - timedelta(days=1)).date(), holidays):
                    closed -= timedelta(days=1)
                opens = add_business_days(closed, 1, holidays)
                share = (hop - closed) / (opens - closed)
                hop = (opens + timedelta(hours=1) + share * timedelta(hours=5)).replace(second=0, microsecond=0)
            moved.append(hop)
        moved.sort()
        for k in range(1, len(moved)):
            moved[k] = max(moved[k], moved[k - 1] + timedelta(minutes=1))
        return moved

    @staticmethod
    def spread(hops: list[datetime], count: int, start: datetime, end: datetime) -> list[datetime]:
        """``count`` of the moments ``hops`` (in order, at least ``count`` of them), each the nearest to its share
        of the way from ``start`` to ``end``: the k-th of n nearest ``start + k/(n+1)`` of the way."""
        chosen: list[int] = []
        for k in range(count):
            target = start + (end - start) * (k + 1) / (count + 1)
            first, last = chosen[-1] + 1 if chosen else 0, len(hops) - count + k
            chosen.append(min(range(first, last + 1), key=lambda i: abs(hops[i] - target)))
        return [hops[i] for i in chosen]

    def hop_gaps(self, shipped: datetime, end: datetime, rng: random.Random) -> list[int]:
        """Hours between in-transit scans, drawn from ``rng`` for a parcel shipped at ``shipped`` and
        travelling until ``end``."""
        gaps, hop = [], shipped + timedelta(hours=18)
        while hop < end - timedelta(hours=12):
            rng.choice(range(6))  # the hub was once drawn here; the draw keeps the shared stream
            gaps.append(rng.randint(16, 40))
            hop += timedelta(hours=gaps[-1])
        return gaps

    def route(self, origin: str, dest: str, order_id: str, scans: int) -> list[str]:
        """Up to three carrier hubs (or, for a trip of more ``scans``, that many) on the way from ``origin`` to the
        city ``dest`` (``City, ST``), each nearer it, with no zig-zag
        (:meth:`~corecraft.world.fidelity.Fidelity.route_problems`) in whatever part of the route gets scanned: a hub
        that makes one is dropped."""
        geo = self.seeds.fidelity
        start, goal = geo.coordinates(origin), geo.coordinates(dest)
        if start is None or goal is None:
            return []
        direct = distance_km(start, goal)
        on_the_way = [name for name, at in geo.hubs.items()
                      if distance_km(at, goal) < direct - 100 and not geo.route_problems([origin, name], dest)]
        rng = self.local_rng("route", order_id)
        chosen = rng.sample(on_the_way, min(len(on_the_way), max(rng.randint(1, 3), scans)))
        hubs = sorted(chosen, key=lambda name: -distance_km(geo.hubs[name], goal))
        # A parcel's scans show the warehouse and some of the hubs (the first ones go unscanned on a quick
        # trip, one too far for its pace is dropped): whichever are scanned must read as a route.
        while (wrong := next((stop for size in range(1, len(hubs) + 1) for some in combinations(hubs, size)
                              for stop, _ in geo.route_problems([origin, *some], dest)), None)) is not None:
            hubs.remove(wrong)
        return hubs

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

    def tracking(self, carrier: str, rng: random.Random) -> str:
        """A tracking number of ``carrier`` with digits drawn from ``rng``."""
        return tracking_number(carrier, "".join(rng.choices(string.digits, k=12)))

