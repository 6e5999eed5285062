"""Staff (titles, permissions, the manager tree) and customers (look-alikes included)."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timedelta
from typing import Any

from corecraft.world import models as m
from corecraft.world.fidelity import unassigned_exchange
from corecraft.world.generation.base import GeneratorBase
from corecraft.world.rules import ESTABLISHED_ORDERS

_HEADS = ("VP Operations", "Director of Customer Experience")  # in rank order
# Weights for spreading the head-count left after one employee per title.
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
MOVED_PHONE_SHARE = 0.1
"""The share of customers whose phone carries an area code of another state than their home's: people keep
their number when they move (lint's ``customer_phones`` lets up to a fifth do)."""


class PeopleMixin(GeneratorBase):
    """Employees (one per title first, then weighted by team) and customers."""

    def employees(self) -> None:
        titles = list(self.policy.titles)
        count = self.recipe.counts.employees
        roster = list(titles)
        extra = list(_EXTRA_STAFF_WEIGHTS)
        while len(roster) < count:
            roster.append(self.rng.choices(extra, weights=list(_EXTRA_STAFF_WEIGHTS.values()))[0])
        roster = roster[:count] if count >= len(titles) else roster
        seen_emails: set[str] = set()
        people: list[dict[str, Any]] = []
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
        people: list[dict[str, Any]] = []
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

    def earned_tiers(self) -> None:
        """A tier is earned from spending, purchases from before the order history included (kb-loyalty-program):
        an account opened once the history runs, with no order on record, has earned none (its drawn tier
        is dropped; the draw keeps the shared stream)."""
        ordered = {o["customer_id"] for o in self.rows[m.Order]}
        for customer in self.rows[m.Customer]:
            if customer["id"] not in ordered and customer["created_at"] >= self.start:
                customer["loyalty_tier"] = "none"

    def established_accounts(self) -> None:
        """Every order is priced at its customer's tier, the first too, and a new account brings a few orders: an
        account with a tier or :data:`ESTABLISHED_ORDERS` orders on record was opened before the order history
        began, when the purchases that earned the tier were made. Done last (an account opened earlier holds up
        every record about it), from each account's own randomness; its id keeps its place."""
        orders = Counter(o["customer_id"] for o in self.rows[m.Order])
        for customer in self.rows[m.Customer]:
            if customer["created_at"] >= self.start and (
                    customer["loyalty_tier"] != "none" or orders[customer["id"]] >= ESTABLISHED_ORDERS):
                customer["created_at"] = self.between(self.start - timedelta(days=400), self.start - timedelta(days=1),
                                                      self.local_rng("account-opened", customer["id"]))

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
            addresses.append(self.address("work", near=addresses[0]))
        has_phone = self.rng.random() >= self.recipe.noise.missing_phone_rate
        self.rng.randint(201, 989)  # the area code was once drawn here; the draw keeps the shared stream
        exchange, line = self.rng.randint(200, 999), self.rng.randint(0, 9999)
        if unassigned_exchange(exchange):  # the next exchange up is a subscriber's
            exchange += 1
        area = self.area_code(addresses[0], email)
        if exchange == area:  # "(410) 410-": a number that reads made up; the next exchange up
            exchange += 1 + unassigned_exchange(exchange + 1)
        phone = f"({area}) {exchange}-{line:04d}"
        return {
            "name": f"{first} {last}", "email": email, "phone": phone if has_phone else None,
            "date_of_birth": self.now.date() - timedelta(days=self.rng.randint(18 * 365, 72 * 365)),
            "addresses": addresses, "loyalty_tier": tier,
            "created_at": self.between(self.start - timedelta(days=400), latest),
        }

    def area_code(self, home: dict[str, str], email: str) -> int:
        """The area code of the phone of the customer with ``email`` living at ``home``: one of the home city's,
        or, for :data:`MOVED_PHONE_SHARE` of customers, one of a city of another state they moved from; drawn
        with phone-local randomness."""
        rng, places = self.local_rng("phone", email), self.seeds.fidelity
        city, state = home["city"], home["state"]
        if rng.random() < MOVED_PHONE_SHARE:
            state = rng.choice(sorted(set(places.cities) - {state}))
            city = rng.choice(sorted(places.cities[state]))
        return rng.choice(places.area_codes(city, state))

    def address(self, label: str, near: dict[str, str] | None = None) -> dict[str, str]:
        """A street address in one of the 50 states or DC: a street line of ``streets``, in a real city of that
        state (``cities``) with a zip code of that city; one ``near`` a home (a workplace) is in the home's city
        or one of the cities of its state nearest to it
        (``Fidelity.commute_cities``).

        Faker is drawn exactly as before (its stream feeds later names and texts), its invented street and town
        included; the street line, the state, the city and the zip are then settled with address-local
        randomness."""
        drawn_line, town = self.fake.street_address(), self.fake.city()
        drawn = self.fake.state_abbr(include_territories=False)
        self.fake.zipcode()
        local, places = self.local_rng("address", drawn_line, town), self.seeds.fidelity
        if near is not None:
            state = near["state"]
            city = local.choice(places.commute_cities(near["city"], state))
            zip_code = local.choice(places.cities[state][city].zips)
        else:
            state = drawn if drawn in places.cities else local.choice(sorted(places.cities))
            city, zip_code = places.city_and_zip(state, local)
        line1 = places.streets.line(self.local_rng("street", drawn_line, town), work=label == "work")
        return {"label": label, "line1": line1, "city": city, "state": state, "zip": zip_code}
