"""What makes the world's records hang together, as data (``seeds/fidelity.yaml``) and small helpers.

Shared by ``corecraft world lint`` (:mod:`corecraft.world.lint`), which checks a world against it,
and by the generator, which draws from it: symptom families per product category, the outcomes
that fit a ticket's issue, and the geography of addresses, phones and parcels (cities with their zips,
centres and area codes, warehouses, hubs, state centres).
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from functools import cached_property, lru_cache, partial
from itertools import pairwise
from typing import Any, Literal, TypeGuard

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from corecraft.world.rules import ESTABLISHED_ORDERS, business_days_after, is_business_day


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class City(_Data):
    """A real city we ship to: zip codes of it, where it is, its area codes."""

    zips: list[str] = Field(min_length=1)
    """Five-digit zip codes the USPS gives the city's name (strings: New England's start with 0)."""
    at: tuple[float, float]
    """Latitude and longitude of its centre."""
    area_codes: list[int] = Field(min_length=1)
    """The area codes of its phone numbers, overlays included."""


class Streets(_Data):
    """How a street address's first line is written: a house number, a street of ``names`` with one of
    ``suffixes`` or an ordinal street up to ``numbered`` (St or Ave), and for ``unit_share`` of addresses an
    apartment or unit."""

    names: list[str] = Field(min_length=1)
    """Common US street names (not Faker's "Moran Glens" or "Brian Prairie")."""
    suffixes: list[str] = Field(min_length=1)
    """Street types, as the USPS abbreviates them."""
    numbered: int
    """Ordinal streets run 1st to this one."""
    units: list[str] = Field(min_length=1)
    """How an apartment or unit is written (``{n}``: its number)."""
    office_unit: str
    """How a unit is written in a work address, in place of an apartment (``{n}``: its number)."""
    unit_share: float

    @cached_property
    def regex(self) -> re.Pattern[str]:
        """A first line written as :meth:`line` writes it."""
        ordinal = r"\d+(?:st|nd|rd|th)"
        names = "|".join(re.escape(n) for n in self.names)
        units = "|".join(re.escape(u).replace(re.escape("{n}"), r"\d+[A-D]?") for u in [*self.units, self.office_unit])
        suffixes = "|".join(re.escape(x) for x in self.suffixes)
        return re.compile(rf"[1-9]\d{{0,4}} (?:{names}|{ordinal}) (?:{suffixes})(?:, (?:{units}))?")

    def line(self, rng: random.Random, work: bool = False) -> str:
        """A first line drawn from ``rng``: "4127 Maple Ave", "88 3rd St, Apt 12" (a ``work`` address has a
        suite, not an apartment)."""
        n, named = rng.randint(1, self.numbered), rng.random() < 0.85
        street = f"{rng.choice(self.names)} {rng.choice(self.suffixes)}" if named \
            else f"{n}{_ordinal(n)} {rng.choice(['St', 'Ave'])}"
        line = f"{rng.randint(10, 9899)} {street}"
        if rng.random() < self.unit_share:
            unit = rng.choice(self.units)
            unit = self.office_unit if work and self.is_home_unit(unit) else unit
            line += ", " + unit.format(n=f"{rng.randint(1, 40)}{rng.choice(['', '', 'A', 'B'])}")
        return line

    @staticmethod
    def is_home_unit(text: str) -> bool:
        """Whether ``text`` (a unit, or a line holding one) names an apartment: a home's unit, not an office's."""
        return re.search(r"\bApt\b", text) is not None

    def problem(self, line1: str) -> str | None:
        """Why ``line1`` is not a street line as :meth:`line` writes them (None: it is)."""
        if self.regex.fullmatch(line1):
            return None
        return f"street line {line1!r} is not a house number, a listed street name and type (streets in seeds/fidelity.yaml)"


def _ordinal(n: int) -> str:
    """The English ordinal suffix of ``n`` (1st, 2nd, 3rd, 11th)."""
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


class Symptom(_Data):
    pattern: str
    categories: list[str]
    kinds: list[str] | None = None
    """Within the categories, only products whose ``specs.kind`` is one of these (None: any)."""
    case_sensitive: bool = False
    about_order: bool = False

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern, 0 if self.case_sensitive else re.IGNORECASE)


class Fit(_Data):
    outcomes: list[str]
    refund_reasons: list[str]
    escalations: list[str]
    details: dict[str, list[str]] = {}
    """What the resolver writes for an outcome of this issue, in each wording a resolver may use (an outcome not
    listed: the general text)."""


class Issue(_Data):
    pattern: str
    outcomes: list[str] | None = None
    refund_reasons: list[str] | None = None
    escalations: list[str] | None = None
    details: dict[str, list[str]] = {}
    """What the resolver writes for an outcome: the wordings resolvers use for the same remedy (one note in the
    seeds is a list of one)."""

    @field_validator("details", mode="before")
    @classmethod
    def _one_note_is_a_wording(cls, value: Any) -> Any:
        return {k: [v] if isinstance(v, str) else v for k, v in value.items()} if isinstance(value, dict) else value


class StatusClaim(_Data):
    pattern: str
    requires: list[str]


class SpecClaim(_Data):
    pattern: str
    category: str
    spec: str


class Budget(_Data):
    pattern: str
    low: int
    high: int


class BuildTheme(_Data):
    """What a build named for a theme holds: each condition given holds of its parts."""

    min_gpu_price: float | None = None
    max_gpu_price: float | None = None
    min_cores: int | None = None
    max_total: float | None = None
    sff: bool = False
    """Its case takes no ATX board."""

    def fits(self, parts: Sequence[Row]) -> bool:
        """Whether a build of ``parts`` (product rows) is one of the theme."""
        first = {p["category"]: p for p in reversed(parts)}
        gpu, cpu, case = (first.get(c) for c in ("gpu", "cpu", "case"))
        checks = [
            self.min_gpu_price is None or (gpu is not None and gpu["price"] >= self.min_gpu_price),
            self.max_gpu_price is None or (gpu is not None and gpu["price"] <= self.max_gpu_price),
            self.min_cores is None or (cpu is not None and cpu["specs"].get("cores", 0) >= self.min_cores),
            self.max_total is None or sum(p["price"] for p in parts) <= self.max_total,
            not self.sff or (case is not None and "ATX" not in case["specs"].get("form_factors", ["ATX"])),
        ]
        return all(checks)


PENDING_AS = {"no_action": ("no_action", "replacement_sent")}
"""Outcomes recorded for remedies not yet carried out: a replacement approved is sent once the return is logged,
so until its replacement order ships it is recorded as ``no_action`` with the replacement's details."""
SETTLED = ("placed", "refunded", "replaced_before")
"""What can become of a replacement approved once returns logs the unit (:class:`ReplacementPromise` texts)."""
_TEMPLATE_FIELDS = {"date": r"\d{4}-\d{2}-\d{2}", "order_id": r"ord-\d{6}-\d{3}", "refund_id": r"ref-\d{6}-\d{3}",
                    "ticket_id": r"tick-\d{6}-\d{3}"}
"""What each ``{field}`` of a :class:`ReplacementPromise` text stands for, as a regex."""


class ResendPromise(_Data):
    approval: str
    """Words of a resolution approving a re-send of an item missing from its order (a regex)."""
    pending: str
    """The words such a resolution must also say: when the re-send order comes."""
    placed: str
    """What it says instead once the order is placed (``{date}`` fulfillment logged the shortfall, ``{order_id}``)."""
    business_days: tuple[int, int]
    """The fewest and most carrier business days from the approval until fulfillment logs the shortfall (nothing
    is sent back first)."""


class ReturnInspection(_Data):
    """When an item sent back is refunded: once it could be back at the warehouse and inspected."""

    reasons: list[str]
    """Refund reasons for which the item physically comes back (a return, a DOA or defective item)."""
    business_days: tuple[int, int]
    """The fewest and most carrier business days from the ticket asking for the refund until the item is back
    and inspected (its refund is made no earlier)."""


class ReplacementPromise(_Data):
    approval: str
    """Words of a resolution approving a replacement or a re-send (a regex)."""
    pending: str
    """The words such a resolution must also say: when the replacement order comes."""
    placed: str
    """The update it gains once the order is placed (``{date}`` returns logged the unit, ``{order_id}``)."""
    refunded: str
    """The update it gains when the unit had been returned for a refund (``{refund_id}`` of ``{date}``) by then."""
    replaced_before: str
    """The update it gains when the unit had already been replaced (``{order_id}`` of ``{date}``) by then."""
    approved_before: str
    """What a resolution says instead of approving a replacement when one was approved for the same unit already
    (on ``{ticket_id}``, on ``{date}``): the resolver, who sees that ticket, points the customer to it."""
    return_business_days: tuple[int, int]
    """The fewest and most carrier business days from the approval until returns logs the unit sent back."""
    resend: ResendPromise
    """The same promise for an item missing from its order: re-sent, with nothing to send back first."""

    def resends(self, details: str) -> bool:
        """Whether ``details`` approve a re-send of a missing item rather than a replacement."""
        return re.search(self.resend.approval, details) is not None

    def business_days(self, details: str) -> tuple[int, int]:
        """The fewest and most carrier business days from the approval ``details`` tell of until its order is
        placed (a re-send's shortfall is logged sooner than a return arrives)."""
        return self.resend.business_days if self.resends(details) else self.return_business_days

    def pending_in(self, details: str) -> bool:
        """Whether ``details`` still promise an order to come (a replacement's or a re-send's)."""
        return self.pending in details or self.resend.pending in details

    def settled(self, details: str, outcome: str, **values: str) -> str:
        """``details`` once returns (or, for a re-send, fulfillment) logged the unit: the note as first written,
        promise included, then a dated update saying ``outcome`` (one of :data:`SETTLED`, filled with ``values``,
        ``date`` among them). A note is appended to, never rewritten: what it said on its day stays said."""
        said = self.resend.placed if self.resends(details) and outcome == "placed" else getattr(self, outcome)
        return f"{details} {said.format(**values)}."

    @cached_property
    def settled_regexes(self) -> list[tuple[str, re.Pattern[str]]]:
        """Each of :data:`SETTLED` (and a re-send's ``placed``) as said with any values (a named group per
        ``{field}``)."""
        return [(outcome, _template_regex(getattr(self, outcome))) for outcome in SETTLED] \
            + [("placed", _template_regex(self.resend.placed))]

    def approved_earlier(self, details: str) -> re.Match[str] | None:
        """Where ``details`` point to an earlier approval for the same unit (groups ``ticket_id``, ``date``)."""
        return self.approved_before_regex.search(details)

    @cached_property
    def approved_before_regex(self) -> re.Pattern[str]:
        """:attr:`approved_before` as said with any values."""
        return _template_regex(self.approved_before)

    def settlement(self, details: str) -> tuple[str, re.Match[str]] | None:
        """What ``details`` say became of the replacement or re-send (one of :data:`SETTLED`), with a group per
        field of its text; None when they say none did."""
        for outcome, regex in self.settled_regexes:
            found = regex.search(details)
            if found:
                return outcome, found
        return None


def _template_regex(template: str) -> re.Pattern[str]:
    """``template`` as said with any values (a named group per ``{field}``)."""
    pattern = re.escape(template)
    for name, value in _TEMPLATE_FIELDS.items():
        pattern = pattern.replace(re.escape(f"{{{name}}}"), f"(?P<{name}>{value})")
    return re.compile(pattern)


class ItemCondition(_Data):
    no_fee: str
    fee: str

    def opened(self, text: str, drawn: bool) -> bool:
        """Whether a return ticket saying ``text`` takes the restocking fee (``drawn``: when it says neither)."""
        if re.search(self.no_fee, text, re.IGNORECASE):
            return False
        return True if re.search(self.fee, text, re.IGNORECASE) else drawn


class ExceptionRequest(_Data):
    pattern: str
    ask: str
    declined: str = ""
    """What a resolver adds when policy was applied instead (the restocking fee taken though the ticket refused it)."""


ClaimEvent = Literal["shipped", "delivered", "late", "overdue", "refunded", "refund_due"]


class SlackClaim(_Data):
    """Something Slack may say happened to a named order: the event its records must hold (None: none can)."""

    pattern: str
    needs: ClaimEvent | None
    reasons: list[str] = []
    days: float = 0.0
    by_author: bool = False
    """The line says its author made the refund: the ledger's approver of the backing refund posts it."""
    names_approver: bool = False
    """The colleague the line names (by first name) is the backing refund's approver."""

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


class TicketTopic(_Data):
    """What a Slack line naming a ticket says it is about: the words the ticket itself must use."""

    pattern: str
    ticket: str
    escalated: bool = False

    def fits(self, ticket_text: str, escalated: bool) -> bool:
        """Whether a ticket with this subject and body (escalated or not by then) is about the topic."""
        return bool(re.search(self.ticket, ticket_text, re.IGNORECASE)) and (escalated or not self.escalated)


@dataclass(frozen=True)
class Handling:
    """How a ticket was handled: its resolution (None: never resolved), escalations and the refunds made on it."""

    resolution: Row | None
    escalations: Sequence[Row]
    refunds: Sequence[Row]


def ticket_handlings(ticket_ids: Iterable[str], resolutions: Iterable[Row], escalations: Iterable[Row],
                     refunds: Iterable[Row]) -> dict[str, Handling]:
    """How each ticket (by id) was handled: its first resolution, its escalations and the refunds made on it,
    each in time order."""
    first: dict[str, Row] = {}
    for res in sorted(resolutions, key=lambda x: x["created_at"], reverse=True):
        first[res["ticket_id"]] = res
    escalated: dict[str, list[Row]] = defaultdict(list)
    for esc in sorted(escalations, key=lambda x: x["created_at"]):
        escalated[esc["ticket_id"]].append(esc)
    refunded: dict[str, list[Row]] = defaultdict(list)
    for refund in sorted(refunds, key=lambda x: x["created_at"]):
        if refund["ticket_id"]:
            refunded[refund["ticket_id"]].append(refund)
    return {t: Handling(first.get(t), escalated.get(t, []), refunded.get(t, [])) for t in ticket_ids}


class TicketState(_Data):
    """What a Slack line says of the handling of the ticket it names, as of the message: someone handled it
    (it is not left ``new``), it is resolved or still open, escalated or not (to ``destination``), a refund
    on it settled, and the employee the line names is its ``assignee`` or its ``resolver``. ``never``: no
    record holds it (every resolution carries a note)."""

    pattern: str
    resolved: bool | None = None
    escalated: bool | None = None
    settled: bool | None = None
    destination: str | None = None
    employee: Literal["assignee", "resolver"] | None = None
    departments: list[str] | None = None
    """The departments the employee the line names works in (None: any): goodwill is handed to support or
    returns, who may refund, not to a warehouse associate assigned a tracking ticket."""
    by_manager: bool = False
    """The line is posted by the named employee's manager ("... is covering tick-250912-007 while I'm out")."""
    never: bool = False

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern, re.IGNORECASE)

    def holds(self, when: datetime, ticket: Row, handling: Handling, departments: dict[str, str]) -> bool:
        """Whether the ticket's records (its resolution, escalations and refunds) bear the line out at ``when``,
        the employee it names working in one of ``departments`` (employees' departments by id)."""
        handler = self.handler(ticket, handling)
        if self.departments is not None and (handler is None or departments[handler] not in self.departments):
            return False
        if self.never or ticket["status"] == "new" or ticket["created_at"] > when:
            return False
        resolution = handling.resolution
        resolved = resolution is not None and resolution["created_at"] <= when
        escalated = any(e["created_at"] <= when and self.destination in (None, e["destination"])
                        for e in handling.escalations)
        settled = any(r["processed_at"] is not None and r["processed_at"] <= when for r in handling.refunds)
        return (self.resolved in (None, resolved) and self.escalated in (None, escalated)
                and self.settled in (None, settled)
                and (self.employee is None or self.handler(ticket, handling) is not None))

    def author(self, ticket: Row, handling: Handling, managers: dict[str, str | None]) -> str | None:
        """Who posts the line (``by_manager``: the named employee's manager, by ``managers`` of employees' ids),
        or None when any voice may."""
        handler = self.handler(ticket, handling)
        return managers[handler] if self.by_manager and handler is not None else None

    def handler(self, ticket: Row, handling: Handling) -> str | None:
        """The id of the employee the line names (None when it names none, or the records have none)."""
        if self.employee == "assignee":
            return ticket["assignee_id"]  # type: ignore[no-any-return]
        if self.employee == "resolver" and handling.resolution is not None:
            return handling.resolution["resolved_by_id"]  # type: ignore[no-any-return]
        return None


class HardwareTest(_Data):
    """A test or fix Slack reports on (``pattern``) and the faults it finds or fixes (``finds``), regexes."""

    pattern: str
    finds: str


class KbEdit(_Data):
    pattern: str
    article: str
    """The key of the article the Slack line says was edited (``kb-<key>``)."""
    days_before: int = 0
    days_after: int = 1
    """The line is posted from ``days_before`` the article's ``updated_at`` to ``days_after`` it."""


class LongerAge(_Data):
    """Slack lines (``pattern``) that may name a ticket written up to ``days`` before (None: any age)."""

    pattern: str
    days: int | None


class TicketAge(_Data):
    """How recently a ticket a Slack line names was alive (``slack_ticket_age``): written, or escalated, at most
    ``days`` before the line for a live case, or a ``longer`` entry's days (None: any age) for a line matching
    its pattern."""

    days: int
    longer: dict[str, LongerAge] = {}

    def limit(self, text: str) -> int | None:
        """The most days before the message a ticket named in ``text`` may be alive (None: no limit)."""
        reach = [age.days for age in self.longer.values() if re.search(age.pattern, text, re.IGNORECASE)]
        if not reach:
            return self.days
        return None if None in reach else max(d for d in reach if d is not None)

    def problem(self, text: str, when: datetime, ticket: Row, handling: Handling) -> str | None:
        """Why ``ticket`` (handled as ``handling``) is too old to be the case ``text``, posted at ``when``, talks
        of: written, and last escalated by then, more than the line's :meth:`limit` of days before; or None."""
        limit = self.limit(text)
        escalated = [e["created_at"] for e in handling.escalations if e["created_at"] <= when]
        alive: datetime = max([ticket["created_at"], *escalated])
        if limit is None or when - alive <= timedelta(days=limit):
            return None
        done = "written or last escalated" if escalated else "written"
        return (f"talks of {ticket['id']} as a live case; it was {done} {(when - alive).days} days before "
                f"(at most {limit})")


class WarehouseStaff(_Data):
    """Colleagues Slack places at a warehouse by first name (``pattern``: group ``name`` is the first name, group
    ``warehouse`` the warehouse): they work on its floor, in one of ``departments`` with a title ``titles`` matches
    (an associate, not the manager of every warehouse), and are not the author (a colleague relays what they say)."""

    pattern: str
    departments: list[str]
    titles: str

    def on_a_floor(self, employee: Row) -> bool:
        """Whether ``employee`` works on a warehouse floor."""
        return employee["department"] in self.departments and re.search(self.titles, employee["title"]) is not None

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)

    def placed(self, text: str, employees: Iterable[Row]) -> dict[str, str]:
        """The colleagues ``text`` places at a warehouse: the warehouse by first name, of ``employees``' first
        names only (a capitalised word before "at west" may be no one's name)."""
        names = {e["name"].split()[0] for e in employees}
        return {hit["name"]: hit["warehouse"] for hit in self.regex.finditer(text) if hit["name"] in names}

    def problems(self, text: str, author: Row | None, employees: Iterable[Row]) -> list[str]:
        """Why the colleagues ``text`` (posted by ``author``, None: not yet known) places at a warehouse could not
        be there: nobody of that first name works on a floor (:meth:`on_a_floor`), or it is the author's own name."""
        staff = list(employees)
        problems = []
        for name, warehouse in self.placed(text, staff).items():
            if not any(e["name"].split()[0] == name and self.on_a_floor(e) for e in staff):
                problems.append(f"places {name} at {warehouse}; no {name} works on a warehouse floor")
            if author is not None and author["name"].split()[0] == name:
                problems.append(f"places {name} at {warehouse}, relaying them; {name} posted it")
        return problems


class Unserved(_Data):
    states: list[str]
    instead: str


class Voice(_Data):
    pattern: str
    ranks: list[str] | None = None
    """The ranks (``SlackVoices.ranks``) whose members may post a Slack text matching ``pattern`` (None: any)."""
    departments: list[str] | None = None
    """The departments whose members may post it (None: any)."""


class SlackVoices(_Data):
    ranks: dict[str, str]
    """Seniority ranks, each with the titles in it (a regex; the first rank whose regex matches wins)."""
    work_ranks: list[str]
    """The ranks who post a work-channel text no ``lines`` voice with ranks matches (floor-level chatter)."""
    lines: dict[str, Voice]
    """What a line's voice says of its author: asking for approval, passing on a rumour, deciding, coaching
    agents, shipping code."""

    def rank(self, title: str) -> str:
        """The rank of an employee with ``title``."""
        return next(rank for rank, titles in self.ranks.items() if re.search(titles, title))

    def speakers(self, text: str, work: bool) -> tuple[set[str], list[list[str]]]:
        """Who would post ``text`` (in a work channel, or in #general/#random): the ranks, and the department
        lists (one per voice that names some) an author's department must be in."""
        voiced = [voice for voice in self.lines.values() if re.search(voice.pattern, text, re.IGNORECASE)]
        ranked = [set(voice.ranks) for voice in voiced if voice.ranks is not None]
        ranks = set.intersection(*ranked) if ranked else set(self.work_ranks) if work else set(self.ranks)
        return ranks, [voice.departments for voice in voiced if voice.departments is not None]

    def problem(self, text: str, employee: Row, work: bool) -> str | None:
        """Why ``employee`` would not post ``text`` (in a work channel, or in #general/#random), or None."""
        return self.mismatch(self.speakers(text, work), employee, self.rank(employee["title"]))

    @staticmethod
    def mismatch(speakers: tuple[set[str], list[list[str]]], employee: Row, rank: str) -> str | None:
        """Why ``employee`` of ``rank`` is not among ``speakers`` (:meth:`speakers`), or None."""
        ranks, departments = speakers
        if rank not in ranks:
            return f"only {'/'.join(sorted(ranks))} would say it"
        for allowed in departments:
            if employee["department"] not in allowed:
                return f"only {'/'.join(allowed)} would say it"
        return None


class Fidelity(_Data):
    symptoms: dict[str, Symptom]
    slack_topics: dict[str, Symptom]
    """Like ``symptoms``, checked on Slack only (BIOS talk is about boards and CPUs)."""
    slack_claims: dict[str, SlackClaim]
    slack_ticket_topics: dict[str, TicketTopic]
    slack_ticket_states: dict[str, TicketState]
    """What Slack may say of a named ticket's handling (closed by, picked up by, still open, escalated)."""
    slack_ticket_age: TicketAge
    """How recently a ticket Slack names was written or escalated: Slack talks of live cases."""
    slack_warehouse_staff: WarehouseStaff
    """Colleagues Slack places at a warehouse ("Lynn at west says ...") work on its floor, in fulfillment."""
    slack_ticket_tags: list[str]
    """Channels (names without ``#``) whose posts naming a ticket begin with its id in square brackets."""
    slack_stances: dict[str, list[str]]
    """Opposing Slack stances by question (a regex each): one author keeps to one stance of a question."""
    slack_stance_asks: dict[str, str] = {}
    """Lines that ask a question of ``slack_stances`` (a regex each, by question): someone who already took a
    stance on it does not ask it later."""
    kb_contradicted_stances: dict[str, int]
    """For the questions the knowledge base settles, the stance (index in ``slack_stances``) it contradicts."""
    hardware_faults: str
    """Faults Slack reports a test or fix on (a regex, case-insensitive)."""
    hardware_tests: dict[str, HardwareTest]
    """Tests and fixes, each with the faults it finds: a line naming a test and a fault names one that finds it."""
    standing_rule: str
    """A Slack phrase stating a standing rule (which may be said once, with one value)."""
    stale_date_claim: str
    """A Slack phrase giving a future date ("until 2025-09-11"): the date is group 1."""
    stock_out_claim: str
    """A Slack phrase saying a warehouse is out of a part until a date: the warehouse, SKU and date are groups 1-3."""
    past_date_claim: str
    """A Slack phrase giving a day of refunds already over ("audit refunds from 2025-08-22"): the date is group 1."""
    held_product_line: str
    """A Slack line about units customers hold: the product it names was delivered to someone by then (a regex)."""
    ticket_fits: dict[str, Fit]
    issues: dict[str, Issue]
    status_claims: dict[str, StatusClaim]
    """What a ticket may say of its order's state: pattern -> the states the order must be in then."""
    spec_claims: dict[str, SpecClaim]
    """Specs a ticket quotes of the customer's own parts."""
    exception_requests: dict[str, ExceptionRequest]
    """Requests for more than policy gives: what a policy exception escalation is about."""
    refund_asked: str
    """Words of a ticket asking for money back (a regex, case-insensitive)."""
    places: dict[str, tuple[float, float]]
    hubs: dict[str, tuple[float, float]]
    states: dict[str, tuple[float, float]]
    zip_prefixes: dict[str, list[tuple[int, int]]]
    """The first three digits of each state's zip codes (inclusive ranges); the states we ship to."""
    cities: dict[str, dict[str, City]]
    """Real cities of each state, each with its zips, centre and area codes."""
    streets: Streets
    """How street lines are written (a customer's street is one of these, not a Faker invention)."""
    retail_cents: list[int]
    """The cents a shelf price ends in (a past price too)."""
    price_step_days: int
    """The fewest days a past price holds before the next change."""
    backorder_wait_days: tuple[int, int]
    """The fewest and most days an order placed more than ``backorder_kept_days`` ago waited on backorder for its
    part's restock: it has shipped since, after the last record about it (``restocks``)."""
    backorder_kept_days: int
    """The oldest an order still on backorder today may be (a scarce or discontinued part's long shortage)."""
    repeat_order_days: int
    """The fewest days between two orders of one customer sharing most of a full set of parts (a saved build)."""
    undoable_steps: dict[str, str]
    """Handbook step patterns no tool can do -> what the handbook should point to instead."""
    kb_edits: dict[str, KbEdit]
    """Slack lines announcing an edit to a knowledge-base article: posted when the article was updated."""
    placeholder_phone: str
    """A phone number no customer holds: an author's placeholder (a regex)."""
    unserved_states: dict[str, Unserved]
    """Shipping methods that do not reach some states, and the method orders there ship with instead."""
    prospective_product: str
    """Ticket words about a part the customer may get (a regex): the part named is not one they hold."""
    owned_product: str
    """Ticket words about a part the customer has used (a review of it): one they had received from us by then."""
    old_parts: dict[str, str]
    """Ticket words calling the customer's part of a category old (a regex per category): they bought none of
    it from us lately (:meth:`old_part_problems`)."""
    priciest_product: str
    """Ticket words calling the part they name the costly one of their order: it is the order's priciest line."""
    stock_question: str
    """Ticket words asking whether the part they name is in stock: of an order that waits, the part holding it up."""
    bought_parts: dict[str, str]
    """Ticket words saying the order they name holds a part of a category (a regex per category)."""
    category_words: dict[str, str]
    """Words that name a product category (a regex per category): a brand written just before one makes it."""
    thread_topics: dict[str, str]
    """What a Slack text is about (a regex per topic): a thread reply shares a topic with its parent."""
    slack_voices: SlackVoices
    """Which ranks may post which Slack lines: managers approve, directors and VPs announce and decide."""
    new_hire: str
    """Slack words welcoming a new hire (a regex): an employee named with them has no earlier record."""
    unbuilt_plans: str
    """Ticket words about machines not yet designed (a regex, case-insensitive): such a ticket links no build."""

    def plans_unbuilt(self, text: str) -> bool:
        """Whether a ticket ``text`` plans machines not yet designed (``unbuilt_plans``)."""
        return re.search(self.unbuilt_plans, text, re.IGNORECASE) is not None

    def tells_day_end(self, text: str) -> bool:
        """Whether a Slack ``text`` speaks of the end of a working day (``day_end_words``)."""
        return re.search(self.day_end_words, text) is not None

    day_end_words: str
    """Slack words about the end of a working day (a missed evening pickup; a regex)."""
    day_end_hour: int
    """The hour (world time) from which a post may speak of the day's end."""
    card_claim: str
    """Words about the card an order was paid with (a regex, case-insensitive)."""
    card_methods: list[str]
    """The payment methods that charge a card (a wallet's too): only their orders' texts speak of the card."""
    high_priority: str
    """Ticket words that make it high priority (a regex): a DOA item (and any ``safety_issue``)."""
    safety_issue: str
    """Ticket words of a safety issue (a regex): high priority, and escalated ``technical`` once triaged."""
    budgets: dict[str, Budget]
    """Dollar figures a pre-sales ticket quotes (a regex capturing one) and the range plausible for what it asks."""
    build_themes: dict[str, BuildTheme]
    """Themes a saved build is named for, each with what such a build holds."""
    detail_topics: dict[str, TicketTopic]
    """What a resolution's details may claim only of a ticket about it (``pattern`` in the details, ``ticket``
    in the ticket's text): PSU headroom for a build, a GPU or a PSU."""
    replacement_promise: ReplacementPromise
    """A resolution approving a replacement says the replacement order follows once the unit is back."""
    return_inspection: ReturnInspection
    """A refund for an item sent back comes once the item could be back and inspected."""
    item_condition: ItemCondition
    """What a return ticket says of the item's condition, which decides the restocking fee."""
    several_units: str
    """Words of a return ticket about several units of its item (a regex): else it returns one."""
    never_received: str
    """Words of a ticket reporting the item it names never came, no unit of it (a regex): no later ticket on the
    order installs, returns or replaces it (:func:`told_products`)."""
    swapped_on_report: str
    """Words of a ticket reporting the unit it names came wrong or used (a regex): it goes back for a new one, so
    no later ticket on the order tells another story of it (:func:`told_products`)."""
    carrier_exceptions: list[str]
    """What a late parcel's exception scan says went wrong (its ``description``): holds the carrier clears on its
    own, none an address problem (which ``kb-shipment-tracking-events`` has need the customer)."""

    @model_validator(mode="after")
    def _places_hold_together(self) -> Fidelity:
        """Every city's zips are five digits within its state's ``zip_prefixes``, and a warehouse or hub city
        that is also a listed city is where the city is."""
        for state, cities in self.cities.items():
            for name, city in cities.items():
                wrong = [z for z in city.zips if not (len(z) == 5 and z.isdigit() and any(
                    lo <= int(z[:3]) <= hi for lo, hi in self.zip_prefixes.get(state, [])))]
                if wrong:
                    raise ValueError(f"cities: {name}, {state} has zips {wrong} outside {state}'s zip_prefixes")
        for place, at in {**self.places, **self.hubs}.items():
            name, _, state = place.rpartition(", ")
            listed = self.city(name, state)
            if listed is not None and listed.at != at:
                raise ValueError(f"{place} is at {at} in places/hubs but at {listed.at} in cities")
        return self

    @model_validator(mode="after")
    def _kb_stances_are_stances(self) -> Fidelity:
        """Every stance marked as the one the knowledge base contradicts is a stance of ``slack_stances``."""
        for question, k in self.kb_contradicted_stances.items():
            if not 0 <= k < len(self.slack_stances.get(question, [])):
                raise ValueError(f"kb_contradicted_stances: {question} has no stance {k} in slack_stances")
        return self

    def city(self, name: str, state: str) -> City | None:
        """The listed city ``name`` of ``state`` (None: not listed in ``cities``)."""
        return self.cities.get(state, {}).get(name)

    def thread_topics_of(self, text: str) -> set[str]:
        """The ``thread_topics`` ``text`` is about."""
        return {topic for topic, words in self.thread_topics.items() if re.search(words, text, re.IGNORECASE)}

    @property
    def gone_on_report(self) -> str:
        """Words of a ticket after which no unit of the item it names is the customer's to tell another story of
        (a regex): ``never_received`` or ``swapped_on_report``."""
        return f"{self.never_received}|{self.swapped_on_report}"

    def safety(self, text: str) -> bool:
        """Whether ``text`` reports a safety issue."""
        return re.search(self.safety_issue, text, re.IGNORECASE) is not None

    def ticket_priority(self, kind: str, text: str, order_total: float | None, tier: str) -> str:
        """The KB's priority for a ticket of type ``kind`` saying ``text``: high for a DOA item, a safety issue,
        an order over $2,000 or a platinum customer; low for a general question (recommendation, other);
        else normal."""
        if (order_total is not None and order_total > HIGH_PRIORITY_TOTAL) or tier == "platinum" \
                or re.search(self.high_priority, text, re.IGNORECASE) or self.safety(text):
            return "high"
        return "low" if kind in ("recommendation", "other") else "normal"

    def priority_problem(self, ticket: Mapping[str, Any], order_total: float | None, tier: str) -> str | None:
        """What is wrong with a triaged ``ticket``'s priority (None: it is the KB's, or the ticket is still new)."""
        rule = self.ticket_priority(ticket["type"], f"{ticket['subject']}\n{ticket['body']}", order_total, tier)
        if ticket["status"] == "new" or ticket["priority"] == rule:
            return None
        return f"is {ticket['priority']} priority, the rules make it {rule}"

    def budget_problems(self, text: str) -> list[str]:
        """Sentences on every budget or price ``text`` quotes outside the range for what it asks."""
        return [f"quotes ${amount:,} for {name.replace('_', ' ')}, not within ${rule.low:,}-${rule.high:,}"
                for name, rule in self.budgets.items() for found in re.findall(rule.pattern, text)
                if not rule.low <= (amount := int(found.replace(",", ""))) <= rule.high]

    def budget(self, template: str, drawn: float) -> str:
        """The round figure (to $50) a pre-sales ``template`` quotes for ``drawn``: folded into the range of
        what the template asks, if one of ``budgets`` fits it."""
        amount = max(50, round(drawn / 50) * 50)
        for rule in self.budgets.values():
            if re.search(rule.pattern, template.replace("{amount}", "0")) and not rule.low <= amount <= rule.high:
                amount = rule.low + amount % (rule.high - rule.low + 50)
        return str(amount)

    def brand_category(self, text: str, brand: str) -> set[str]:
        """The categories ``text`` names right after ``brand`` ("WD motherboard": motherboard)."""
        if brand not in text:  # the patterns are case-sensitive: no brand, no category
            return set()
        return {category for category, words in self.category_words.items()
                if re.search(rf"(?<!\w){re.escape(brand)}\s+(?:{words})\b", text)}

    def brand_category_problems(self, text: str, brands: dict[str, set[str]]) -> list[str]:
        """Sentences on every brand ``text`` names with a category it does not make (``brands``: brand -> the
        categories it makes in the catalogue)."""
        return [f"speaks of a {brand} {category}, but {brand} makes only {'/'.join(sorted(made))}"
                for brand, made in sorted(brands.items()) for category in sorted(self.brand_category(text, brand))
                if category not in made]

    def shipping_method(self, method: str, state: str) -> str:
        """The method an order to ``state`` ships with when ``method`` was chosen."""
        rule = self.unserved_states.get(method)
        return rule.instead if rule is not None and state in rule.states else method

    def owned(self, text: str) -> bool:
        """Whether ``text`` talks about a part the customer has used (``owned_product``)."""
        return re.search(self.owned_product, text) is not None

    def stock_outs_ahead(self, text: str, today: date) -> list[re.Match[str]]:
        """The stock-outs ``text`` announces (``stock_out_claim``) until a day after ``today``: a warehouse out of
        a part still, whose inventory must hold none of it."""
        return [hit for hit in re.finditer(self.stock_out_claim, text) if date.fromisoformat(hit.group(3)) > today]

    def asks_stock(self, text: str) -> bool:
        """Whether ``text`` asks if the part it names is in stock (``stock_question``)."""
        return re.search(self.stock_question, text) is not None

    def bought_category(self, text: str) -> str | None:
        """The category ``text`` says the order it names holds (``bought_parts``), if it says one."""
        return next((category for category, pattern in self.bought_parts.items() if re.search(pattern, text)), None)

    def calls_pricey(self, text: str) -> bool:
        """Whether ``text`` calls the part it names the costly one of its order (``priciest_product``)."""
        return re.search(self.priciest_product, text) is not None

    def old_part_problems(self, text: str, bought: Iterable[tuple[str, datetime]], when: datetime) -> list[str]:
        """The categories ``text`` calls the customer's old ones ("my CPU is a few years old", "upgrade my GPU")
        although ``bought`` (the category and order time of each part they ordered from us; a prebuilt holds every
        category) has one ordered in the :data:`OLD_PART_DAYS` before ``when``."""
        said = [category for category, pattern in self.old_parts.items() if re.search(pattern, text)]
        if not said:
            return []
        recent = {category for category, at in bought if timedelta(0) <= when - at <= timedelta(days=OLD_PART_DAYS)}
        return [category for category in said if category in recent or "prebuilt" in recent]

    def prospective(self, text: str) -> bool:
        """Whether ``text`` talks about a part the customer is thinking of getting."""
        return re.search(self.prospective_product, text) is not None

    def address_problem(self, address: dict[str, Any]) -> str | None:
        """What is wrong with a postal address (None: nothing): one of our states, a real city of that state
        (``cities``) and one of that city's listed zips."""
        state, zip_code = address.get("state"), str(address.get("zip"))
        ranges = self.zip_prefixes.get(str(state))
        if ranges is None:
            return f"ships to {state!r}, which is not a US state or DC"
        if not (len(zip_code) == 5 and zip_code.isdigit() and any(lo <= int(zip_code[:3]) <= hi for lo, hi in ranges)):
            spans = ", ".join(f"{lo:03d}-{hi:03d}" for lo, hi in ranges)
            return f"zip {zip_code} is not a {state} zip code (prefixes {spans})"
        city = str(address.get("city"))
        listed = self.city(city, str(state))
        if listed is None:
            return f"is in {city}, {state}, not a city of {state} (cities in seeds/fidelity.yaml)"
        if zip_code not in listed.zips:
            return f"zip {zip_code} is not a {city} zip code (listed: {', '.join(listed.zips)})"
        return None

    @cached_property
    def area_code_states(self) -> dict[int, set[str]]:
        """Every listed city's area codes (real US ones), each with the states whose cities carry it."""
        found: dict[int, set[str]] = defaultdict(set)
        for state, cities in self.cities.items():
            for listed in cities.values():
                for code in listed.area_codes:
                    found[code].add(state)
        return dict(found)

    def area_codes(self, city: str, state: str) -> list[int]:
        """The area codes of ``city``, ``state`` (none for a place not listed in ``cities``)."""
        listed = self.city(city, state)
        return listed.area_codes if listed is not None else []

    def phone_problem(self, phone: str) -> str | None:
        """What is wrong with a customer's phone number (None: nothing): it is written ``(NNN) NXX-XXXX`` (an
        exchange starts 2-9, is neither an N11 service code nor fiction's 555, and does not repeat the area code) with
        a real US area code, one of a listed city's (``cities``); 441 is Bermuda's, 328 nobody's."""
        shape = PHONE.fullmatch(phone)
        if shape is None:
            return f"has phone {phone!r}, not a US number written (NNN) NXX-XXXX"
        if unassigned_exchange(int(shape.group(2))):
            return f"has phone {phone}, whose exchange {shape.group(2)} is no subscriber's (N11 codes, fiction's 555)"
        if shape.group(1) == shape.group(2):
            return f"has phone {phone}, whose exchange repeats its area code: a number that reads made up"
        if int(shape.group(1)) not in self.area_code_states:
            return f"has phone {phone}, whose area code {shape.group(1)} is no listed US city's (cities in seeds/fidelity.yaml)"
        return None

    def is_placeholder_phone(self, phone: str) -> bool:
        """Whether ``phone`` reads as an author's placeholder rather than a customer's number."""
        return re.search(self.placeholder_phone, phone) is not None

    def commute_cities(self, city: str, state: str) -> list[str]:
        """The cities a workplace of someone living in ``city`` may be in: it and the nearest others of its state,
        ``COMMUTE_CITIES`` in all, nearest first."""
        cities = self.cities[state]
        return sorted(cities, key=lambda c: (distance_km(cities[c].at, cities[city].at), c))[:COMMUTE_CITIES]

    def city_and_zip(self, state: str, rng: random.Random) -> tuple[str, str]:
        """A city of ``state`` and one of that city's zip codes, drawn from ``rng``."""
        city = rng.choice(sorted(self.cities[state]))
        return city, rng.choice(self.cities[state][city].zips)

    @cached_property
    def symptom_finder(self) -> Callable[[str], tuple[tuple[str, Symptom], ...]]:
        """:meth:`symptoms_in`, remembered for the texts seen lately (a generated text is checked several
        times, and a large world repeats its texts)."""
        @lru_cache(maxsize=1 << 14)
        def find(text: str) -> tuple[tuple[str, Symptom], ...]:
            return tuple((name, s) for name, s in self.symptoms.items() if s.regex.search(text))
        return find

    def symptoms_in(self, text: str) -> list[tuple[str, Symptom]]:
        """The symptom families ``text`` describes."""
        return list(self.symptom_finder(text))

    def allowed_categories(self, text: str) -> set[str] | None:
        """Product categories ``text`` may name (None: any)."""
        allowed: set[str] | None = None
        for _, symptom in self.symptoms_in(text):
            allowed = set(symptom.categories) if allowed is None else allowed & set(symptom.categories)
        named = self.brand_category(text, "{brand}")
        if named:
            allowed = named if allowed is None else allowed & named
        return allowed

    def slack_categories(self, text: str) -> set[str] | None:
        """Product categories a Slack ``text`` may name, by symptom and by Slack topic (None: any)."""
        allowed = self.allowed_categories(text)
        for topic in self.slack_topics.values():
            if topic.regex.search(text):
                allowed = set(topic.categories) if allowed is None else allowed & set(topic.categories)
        return allowed

    def claims_in(self, text: str) -> list[tuple[str, SlackClaim]]:
        """The claims about an order a Slack ``text`` makes."""
        return [(name, c) for name, c in self.slack_claims.items() if c.regex.search(text)]

    def ticket_topics_in(self, text: str) -> list[tuple[str, TicketTopic]]:
        """The topics a Slack ``text`` says the ticket it names is about."""
        return [(name, t) for name, t in self.slack_ticket_topics.items() if re.search(t.pattern, text, re.IGNORECASE)]

    def hardware_test_problems(self, text: str) -> list[str]:
        """Faults a Slack ``text`` reports a test or fix on that none of the tests it names finds (coil whine
        from thermal testing)."""
        tests = [name for name, t in self.hardware_tests.items() if re.search(t.pattern, text, re.IGNORECASE)]
        if not tests:
            return []
        return [f"puts {fault.group(0)!r} down to {'/'.join(tests).replace('_', ' ')}, which does not find or fix it"
                for fault in re.finditer(self.hardware_faults, text, re.IGNORECASE)
                if not any(re.search(self.hardware_tests[t].finds, fault.group(0), re.IGNORECASE) for t in tests)]

    def tested_faults(self, text: str) -> list[str]:
        """The faults a Slack ``text`` reports a bench test on (a test of ``hardware_tests`` and the faults it
        names, lower case): "a listening test ... the coil whine is in the normal range" -> ["coil whine"]."""
        if not any(re.search(t.pattern, text, re.IGNORECASE) for t in self.hardware_tests.values()):
            return []
        return sorted({m.group(0).lower() for m in re.finditer(self.hardware_faults, text, re.IGNORECASE)})

    def stances_in(self, text: str) -> list[tuple[str, int]]:
        """The stances (question, which of its stances) a Slack ``text`` takes."""
        return [(group, k) for group, stances in self.slack_stances.items()
                for k, stance in enumerate(stances) if re.search(stance, text, re.IGNORECASE)]

    def stance_asks_in(self, text: str) -> list[str]:
        """The questions of ``slack_stances`` a Slack ``text`` asks (``slack_stance_asks``)."""
        return [question for question, asks in self.slack_stance_asks.items() if re.search(asks, text, re.IGNORECASE)]

    def kb_contradicts(self, text: str) -> list[str]:
        """The questions on which a Slack ``text`` takes the stance the knowledge base contradicts."""
        return [question for question, k in self.stances_in(text) if self.kb_contradicted_stances.get(question) == k]

    def ticket_tag_problem(self, channel: str, text: str) -> str | None:
        """Why ``text`` posted in ``channel`` (its name, without ``#``) breaks the Slack etiquette: it names a
        ticket in a ``slack_ticket_tags`` channel but does not begin with a ticket id in square brackets."""
        named = TICKET_ID.search(text)
        if channel not in self.slack_ticket_tags or named is None or re.match(rf"\[{TICKET_ID.pattern}\]", text):
            return None
        return f"names {named[0]} in #{channel} but does not begin with the ticket id in square brackets"

    def ticket_states_in(self, text: str) -> list[tuple[str, TicketState]]:
        """What a Slack ``text`` says of the handling of the ticket it names."""
        return [(name, t) for name, t in self.slack_ticket_states.items() if t.regex.search(text)]

    def fit(self, ticket_type: str, text: str) -> Fit:
        """What may become of a ticket of ``ticket_type`` whose subject and body are ``text``."""
        base = self.ticket_fits[ticket_type]
        outcomes, reasons, escalations = base.outcomes, base.refund_reasons, base.escalations
        details: dict[str, list[str]] = {}
        for issue in self.issues.values():
            if re.search(issue.pattern, text, re.IGNORECASE):
                outcomes = issue.outcomes if issue.outcomes is not None else outcomes
                reasons = issue.refund_reasons if issue.refund_reasons is not None else reasons
                escalations = issue.escalations if issue.escalations is not None else escalations
                details = {**details, **issue.details}
        return Fit(outcomes=outcomes, refund_reasons=reasons, escalations=escalations, details=details)

    def unfit_details(self, ticket: Mapping[str, Any], resolution: Mapping[str, Any], stale_days: int) -> str | None:
        """The words a resolution of ``ticket`` says for the ticket's issue (``issues[*].details``, by its outcome;
        a replacement approved and awaiting the return is recorded ``no_action``: :data:`PENDING_AS`) but its
        details lack. None when they fit, when the ticket was closed for want of a reply (:func:`stale_details`) and
        when the details point to a replacement approved earlier (``approved_before``: no remedy of its own)."""
        details = resolution["details"]
        if (ticket["status"] == "closed" and details.endswith(stale_details(stale_days))) \
                or self.replacement_promise.approved_earlier(details):
            return None
        fit = self.fit(ticket["type"], f"{ticket['subject']}\n{ticket['body']}").details
        fitting = [f for k in PENDING_AS.get(resolution["outcome"], (resolution["outcome"],)) if k in fit for f in fit[k]]
        return fitting[0] if fitting and not any(f in details for f in fitting) else None

    def exception_asked(self, text: str) -> ExceptionRequest | None:
        """The request for more than policy gives that ``text`` makes (None: none)."""
        return next((x for x in self.exception_requests.values() if re.search(x.pattern, text, re.IGNORECASE)), None)

    def asks_refund(self, text: str) -> bool:
        """Whether ``text`` asks for money back."""
        return re.search(self.refund_asked, text, re.IGNORECASE) is not None

    def coordinates(self, place: str) -> tuple[float, float] | None:
        """Latitude and longitude of a warehouse city, a hub, or a ``City, ST`` destination: the city's own
        (``cities``), else (a place not listed) its state's centre; None for no place ("carrier network")."""
        if place in self.places:
            return self.places[place]
        if place in self.hubs:
            return self.hubs[place]
        city, _, state = place.rpartition(", ")
        listed = self.city(city, state)
        return listed.at if listed is not None else self.states.get(state)

    def leg_speed_problem(self, start: str, left: datetime, end: str, reached: datetime, carrier: str) -> str | None:
        """Why a parcel scanned at ``start`` at ``left`` cannot have been scanned at ``end`` at ``reached``: it
        would have covered the distance faster than its service travels (:data:`TRUCK_KMH` by road for the ground
        services, :data:`AIR_KMH` door to door by air for the others); None when it could (or for places without
        coordinates, or a leg under :data:`ROUTE_SLACK_KM`)."""
        a, b = self.coordinates(start), self.coordinates(end)
        if a is None or b is None or (km := distance_km(a, b)) <= ROUTE_SLACK_KM:
            return None
        speed = TRUCK_KMH if "ground" in carrier else AIR_KMH
        hours = (reached - left).total_seconds() / 3600
        if hours * speed >= km:
            return None
        return (f"goes {start} -> {end}, {km:.0f} km in {max(hours, 0):.1f} h: faster than {speed} km/h "
                f"({carrier.replace('_', ' ')})")

    def route_problems(self, stops: Sequence[str], destination: str) -> list[tuple[str, str]]:
        """Where a parcel's route zig-zags on the way to ``destination`` (``City, ST``), judged on the places'
        coordinates: ``stops`` are where it was scanned, in order, the warehouse first (places without
        coordinates skipped, a place scanned twice in a row counted once), and it goes on to the destination.
        A stop is at fault when it is farther from the destination than the warehouse; when the leg to it does
        not head for the destination (it brings the parcel less than :data:`ROUTE_PROGRESS` of its length
        nearer, give or take :data:`ROUTE_SLACK_KM`: Columbus -> Charlotte for Lake Charles); or when the route
        turns back at it (the way through it from the stop before to the next is longer than
        :data:`ROUTE_TURN` times the straight leg plus :data:`ROUTE_SLACK_KM`: Albany -> Boston -> Worcester).
        Each problem: the stop at fault and a sentence."""
        goal = self.coordinates(destination)
        path: list[tuple[str, tuple[float, float]]] = []
        for stop in [*stops, destination]:
            at = self.coordinates(stop)
            if at is not None and (not path or path[-1][0] != stop):
                path.append((stop, at))
        if goal is None or not path:
            return []
        problems = []
        start = distance_km(path[0][1], goal)
        for (before, was), (stop, at) in pairwise(path):
            left, previous, leg = distance_km(at, goal), distance_km(was, goal), distance_km(was, at)
            if left > start:
                problems.append((stop, f"goes to {stop}, farther from {destination} than the warehouse {path[0][0]} "
                                       f"({start:.0f} km -> {left:.0f} km)"))
            elif left > previous:
                problems.append((stop, f"goes from {before} to {stop}, away from {destination} "
                                       f"({previous:.0f} km -> {left:.0f} km)"))
            elif previous - left < ROUTE_PROGRESS * leg - ROUTE_SLACK_KM:
                problems.append((stop, f"goes from {before} to {stop}, {leg:.0f} km for {previous - left:.0f} km "
                                       f"nearer {destination}"))
        for (before, a), (stop, b), (after, c) in zip(path, path[1:], path[2:], strict=False):
            through, straight = distance_km(a, b) + distance_km(b, c), distance_km(a, c)
            if through > ROUTE_TURN * straight + ROUTE_SLACK_KM:
                problems.append((stop, f"turns back at {stop}: {before} -> {stop} -> {after} is {through:.0f} km "
                                       f"for {straight:.0f} km"))
        return problems


PHONE = re.compile(r"\((\d{3})\) ([2-9]\d{2})-\d{4}")
"""A US phone number as the world writes it, ``(NPA) NXX-XXXX``: the area code is group 1, the exchange group 2."""


def unassigned_exchange(exchange: int) -> bool:
    """An exchange no subscriber's line is in: fiction's 555 and the N11 service codes (211 ... 911)."""
    return exchange == 555 or exchange % 100 == 11

ROUTE_PROGRESS = 0.5
"""The least share of a leg's length by which it brings a parcel nearer the destination (the leg heads within
about 60 degrees of it)."""
ROUTE_TURN = 1.1
"""How much longer than the straight leg between a stop's neighbours the way through it may be (a tenth, plus
``ROUTE_SLACK_KM``: Reno -> Louisville -> South Bend, 17% longer, turns back)."""
ROUTE_SLACK_KM = 60.0
"""What the route rules give or take, in km (a hub across town from the destination)."""
TRUCK_KMH = 80
"""The fastest a ground parcel travels between two scans, on average by road (a team of drivers, few stops)."""
AIR_KMH = 300
"""The fastest an express or overnight parcel travels between two scans, door to door (flight, sorting, trucks)."""


def distance_km(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Great-circle distance between two (latitude, longitude) points."""
    lat1, lon1, lat2, lon2 = map(math.radians, (*a, *b))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 6371.0 * 2 * math.asin(math.sqrt(h))


Row = dict[str, Any]


def asked_at(refund: Row, tickets: Mapping[str, Row]) -> datetime:
    """When ``refund`` was asked for: the creation of its ticket (``tickets``, by id), or the refund itself when it
    has no ticket (or came first). A unit asked back for a refund is the customer's no more from then."""
    ticket = tickets.get(refund["ticket_id"] or "")
    made: datetime = refund["created_at"]
    return made if ticket is None else min(made, ticket["created_at"])


DAY_TOLERANCE = 1.0
"""How far (in days) a duration quoted in text may be from the records: people round."""

DURATION_CLAIMS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), kind) for p, kind in (
    (r"'processing' for (\d+) days", "order_age"),
    (r"paid \$[\d,.]+ (\d+) days ago", "order_age"),
    (r"ordered the .{1,80}? about (\d+) days ago", "order_age"),
    (r"[Bb]ought (?:it|the .{1,80}?) (\d+) days ago", "order_age"),
    (r"(\d+) days since delivery", "since_delivery"),
    (r"It is only (\d+) days", "since_delivery"),
    (r"It's been (\d+) days and nothing", "since_delivery"),
    (r"(\d+) days late\b", "days_late"),
    (r"(\d+) (?:calendar )?days after its ETA", "days_late"),
    (r"hub for (\d+) days", "at_hub"),
    (r"but took (\d+)", "transit_days"),
    (r"'label created' for (\d+) days", "since_label"),
    (r"been (\d+) business days", "business_days_shipped"),
    (r"(\d+) days since the ship email", "since_shipped"),
    (r"arrived on (\d{4}-\d{2}-\d{2})", "delivered_date"),
    (r"facility since (\d{4}-\d{2}-\d{2})", "last_scan_date"),
    (r"Delivered (\d{4}-\d{2}-\d{2})", "delivered_date"),
    (r"processed on (\d{4}-\d{2}-\d{2})", "refund_date"),
    (r"\$[\d,.]+ on (\d{4}-\d{2}-\d{2})", "payment_date"),
    (r"bought around (\d{4}-\d{2}-\d{2})", "order_date"),
))
"""Durations and dates people quote, and which record each is measured against (a ticket about no order
quotes one of its customer's earlier orders). Every ticket phrase quoting ``{days}`` or ``{date}`` matches one."""

PRICE_DROP_QUOTE = re.compile(r"\$(\d[\d,]*\.\d{2}) cheaper")
"""A ticket's quote of how much cheaper an item it bought is now on our site (another store's price is not quoted)."""

DELIVERY_CLAIM = re.compile(r"\barrived\b|(?<!haven't )(?<!never )\breceived\b|\bcame in\b|packing slip|"
                            r"\bInstalled\b|in the box|since delivery", re.IGNORECASE)
"""Words that speak of a parcel as already delivered."""


ONE_DAYS = re.compile(r"\b1 (?:business )?days\b")
"""A count of one written with a plural: a template's tell (a customer waits two days before writing so)."""


def _days(later: datetime, earlier: datetime) -> float:
    return (later - earlier).total_seconds() / 86400


def measure(kind: str, when: datetime, tz: tzinfo, order: Row, ship: Row | None, payment: Row | None,
            refunds_processed: Sequence[datetime], holidays: Collection[date]) -> float | date | None:
    """The record-backed value behind a quoted duration or date, as of ``when`` (None: no such record); business
    days skip weekends and the carrier ``holidays``."""
    delivered = ship["delivered_at"] if ship and ship["delivered_at"] and ship["delivered_at"] <= when else None
    label = label_created(ship)
    measures: dict[str, Callable[[], float | date | None]] = {
        "order_age": lambda: _days(when, order["created_at"]),
        "order_date": lambda: order["created_at"].astimezone(tz).date(),
        "since_delivery": lambda: _days(when, delivered) if delivered else None,
        "since_label": lambda: _days(when, label) if label is not None and label <= when else None,
        "since_shipped": lambda: _days(when, ship["shipped_at"]) if shipped_by(ship, when) else None,
        "business_days_shipped": lambda: float(business_days_after(ship["shipped_at"].astimezone(tz).date(),
                                                                   when.astimezone(tz).date(), holidays))
        if shipped_by(ship, when) else None,
        "days_late": lambda: _days(delivered or when, ship["eta"]) if ship and ship["eta"] else None,
        "transit_days": lambda: _days(delivered, ship["shipped_at"]) if shipped_by(ship, when) and delivered else None,
        "delivered_date": lambda: delivered.astimezone(tz).date() if delivered else None,
        "last_scan_date": lambda: _last_scan_day(when, tz, ship),
        "at_hub": lambda: _at_hub(when, ship),
        "payment_date": lambda: payment["processed_at"].astimezone(tz).date() if payment else None,
        "refund_date": lambda: min(refunds_processed).astimezone(tz).date() if refunds_processed else None,
    }
    return measures[kind]()


def shipped_by(ship: Row | None, when: datetime) -> TypeGuard[Row]:
    """Whether a parcel had been collected by the carrier (its ship date, its pickup scan) at ``when``; one with only
    its label has no ship date."""
    return ship is not None and ship["shipped_at"] is not None and ship["shipped_at"] <= when


def label_created(ship: Row | None) -> datetime | None:
    """When a parcel's label was created (its first scan, ``label_created``), if it has one."""
    events = (ship or {}).get("events") or []
    return datetime.fromisoformat(events[0]["ts"]) if events and events[0]["status"] == "label_created" else None


def _at_hub(when: datetime, ship: Row | None) -> float | None:
    """How long a parcel has sat without a scan as of ``when`` (None: it has no scan yet, or its last one is
    out for delivery or delivered: no longer at a hub)."""
    scans = [e for e in (ship or {}).get("events", []) if datetime.fromisoformat(e["ts"]) <= when]
    if not scans or scans[-1]["status"] in ("out_for_delivery", "delivered"):
        return None
    return _days(when, datetime.fromisoformat(scans[-1]["ts"]))


def _last_scan_day(when: datetime, tz: tzinfo, ship: Row | None) -> date | None:
    """The day of a parcel's last carrier scan before ``when``, if that day is before ``when``'s (a parcel
    scanned today is not stuck since today)."""
    scans = [datetime.fromisoformat(e["ts"]) for e in (ship or {}).get("events", [])
             if e["status"] in ("picked_up", "in_transit") and datetime.fromisoformat(e["ts"]) <= when]
    day = max(scans).astimezone(tz).date() if scans else None
    return day if day is not None and day < when.astimezone(tz).date() else None


def duration_problems(text: str, when: datetime, tz: tzinfo, order: Row | None, ship: Row | None,
                      payment: Row | None, refunds_processed: Sequence[datetime],
                      holidays: Collection[date]) -> list[str]:
    """Sentences on every duration or date in ``text`` that the records do not bear out."""
    problems = [f"says {m.group(0)!r}: one day is not 'days'" for m in ONE_DAYS.finditer(text)]
    for pattern, kind in DURATION_CLAIMS:
        for match in pattern.finditer(text):
            actual = None if order is None else measure(kind, when, tz, order, ship, payment, refunds_processed,
                                                        holidays)
            claim = match.group(1)
            if actual is None:
                problems.append(f"says {match.group(0)!r} but the records have no {kind.replace('_', ' ')}")
            elif isinstance(actual, date):
                if claim != actual.isoformat():
                    problems.append(f"says {match.group(0)!r}; the records say {actual.isoformat()}")
            elif abs(int(claim) - actual) > DAY_TOLERANCE:
                problems.append(f"says {match.group(0)!r}; the records say {actual:.1f} days")
    return problems


def symptom_problems(text: str, named: Sequence[Row], order_categories: set[str] | None, rules: Fidelity) -> list[str]:
    """Sentences on every symptom in ``text`` that does not fit the category of a product it names (or,
    for order-level symptoms with no product named, of any product on the order)."""
    problems = []
    for family, symptom in rules.symptoms_in(text):
        label = family.replace("_", " ")
        problems += [f"describes {label} on {p['name']}, a {p['specs'].get('kind') or p['category']}"
                     for p in named if p["category"] not in symptom.categories
                     or (symptom.kinds is not None and p["specs"].get("kind") not in symptom.kinds)]
        if symptom.about_order and not named and order_categories is not None \
                and not order_categories & set(symptom.categories):
            problems.append(f"describes {label} but the order holds no {'/'.join(symptom.categories)}")
    return problems


LEDGER_CLAIMS: tuple[tuple[re.Pattern[str], str | None], ...] = tuple((re.compile(p), reason) for p, reason in (
    (r"[Rr]efund of \$(\d[\d,]*(?:\.\d{2})?) on ord-\d{6}-\d{3} issued", None),
    (r"refunding the difference of \$(\d[\d,]*(?:\.\d{2})?)", None),
    (r"\$(\d[\d,]*(?:\.\d{2})?) refunded", None),
    (r"Double charge confirmed on", "duplicate_charge"),
))
"""Things Slack says happened to money: (pattern, the refund reason it needs or None for 'the amount')."""


def ledger_problems(text: str, refunds: Sequence[Row]) -> list[str]:
    """Sentences on every refund ``text`` claims that none of ``refunds`` (the order's, so far) backs."""
    problems = []
    for pattern, reason in LEDGER_CLAIMS:
        match = pattern.search(text)
        if not match:
            continue
        if reason:
            backed = any(x["reason"] == reason for x in refunds)
        else:
            amount = float(match.group(1).replace(",", ""))
            backed = any(abs(x["amount"] - amount) <= 0.011 for x in refunds)
        if not backed:
            problems.append(f"claims {match.group(0)!r}; the ledger has no such refund")
    return problems


LATE_REFUND_ASKED = re.compile(r"\blate\b|\bon time\b|compensat|shipping (?:cost|charge)s? (?:back|refund)|"
                               r"refund(?:ed)? (?:the |my )?shipping|\btook \d+|supposed to arrive|"
                               r"asked for the shipping back", re.IGNORECASE)
"""Words of a ticket, or of the resolution that refunded it, by which the customer asks for the shipping back on a
late parcel: the late-delivery article refunds it once the customer asks, never unasked."""
LATE_REFUND_FOLLOW_UP = "the customer asked for the shipping back once the parcel came after its carrier's SLA"
"""How a resolver records a late refund asked for after the ticket was written (its text asks about something else)."""


RETURN_FOLLOW_UP = re.compile(r"for returned|shipped the .{1,80}? back|I returned the", re.IGNORECASE)
"""Words of a ticket that follows up on an item already sent back (it may name a refunded item)."""

def restocked(pct: float) -> str:
    """What a return refund's resolution adds when the restocking fee (``pct`` percent) was withheld (the KB:
    record the fee)."""
    return f", less the {pct:g}% restocking fee"


STORY_TICKET_TYPES = ("return", "troubleshooting", "order_issue")
"""Ticket types that tell a story of an item (why it goes back, what is wrong with it, what came instead)."""


def told_products(ticket: Row, text: str, earlier: Iterable[Row], named: Callable[[Row], Iterable[str]],
                  rules: Fidelity) -> set[str]:
    """The products an earlier ticket about ``ticket``'s order told a story of (``named``: the products a ticket
    names), of which ``ticket`` saying ``text``, if of a :data:`STORY_TICKET_TYPES` type, may not tell another:
    those of a return ticket, unless it follows up on the return, and those reported missing from the box
    (``never_received``), never there to install or send back, or come wrong or used (``swapped_on_report``),
    gone back for a new one; either unless it quotes that ticket."""
    if not ticket["order_id"] or ticket["type"] not in STORY_TICKET_TYPES:
        return set()
    before = [e for e in earlier if e["order_id"] == ticket["order_id"] and e["created_at"] < ticket["created_at"]
              and e["id"] not in text]
    told = {p for e in before if re.search(rules.gone_on_report, f"{e['subject']}\n{e['body']}", re.IGNORECASE)
            for p in named(e)}
    if RETURN_FOLLOW_UP.search(text):
        return told
    return told | {p for e in before if e["type"] == "return" for p in named(e)}


ALARM_WORDS = re.compile(r"\b(urgent|asap|safety|burn\w*|smok\w*|melt\w*|recall\w*|outage|down|fraud\w*|"
                         r"duplicate|chargeback|escalat\w*|blocked|stuck)\b", re.IGNORECASE)
"""Words of a Slack post that raises an alarm: only such a post draws fire or rotating-light reactions."""


def refund_at_stake(order: Mapping[str, Any], lines: Iterable[Mapping[str, Any]], named: Collection[str]) -> float:
    """The money a request for money back on ``order`` puts at stake: its lines of the products the request
    names (``named`` ids), or the whole order when it names none of them."""
    asked = [ln for ln in lines if ln["product_id"] in named]
    return sum(ln["unit_price"] * ln["quantity"] for ln in asked) if asked else float(order["total"])


WORDING_GAP = timedelta(days=30)
"""The least time between two tickets written in one wording: a month's tickets never share one."""

LAST_PICKUP = time(18, 0)
"""The carrier's last collection of the day at the warehouse dock (the world's clock; kb-warehouse-network)."""

NIGHT_TRAILER_LABELS = time(17, 30)
"""A parcel labelled later than this misses the last collection and leaves on the carrier's night trailer that
evening (kb-warehouse-network); one labelled by then goes with the last collection at the latest."""

NEXT_DAY_LABELS = time(20, 0)
"""A parcel labelled after this leaves with the first collection of the next business day (kb-warehouse-network);
one labelled earlier leaves the day it was labelled."""

FIRST_PICKUP = time(7, 30)
"""The carrier's first collection of the day at the dock: no parcel is picked up earlier (kb-warehouse-network)."""

FIRST_ROUND_ENDS = time(8, 0)
"""By when the first collection has scanned the parcels labelled after :data:`NEXT_DAY_LABELS` the evening before."""

ROUNDS_END = time(20, 0)
"""When the carriers' delivery rounds end (kb-shipping-policy): the time of every ETA, and the latest a parcel is
delivered."""


def pickup_problem(labelled: datetime | None, picked: datetime) -> str | None:
    """What is wrong with a parcel picked up at ``picked`` after its label at ``labelled`` (both world time), as
    kb-warehouse-network tells the dock's day: no pickup before the first collection, a parcel labelled in time
    for the last collection goes with it at the latest (a later one leaves on the night trailer), and one labelled
    after the night trailer's last labels goes with the next business day's first collection."""
    if picked.time() < FIRST_PICKUP:
        return f"is picked up at {picked:%H:%M}, before the carrier's first collection ({FIRST_PICKUP:%H:%M})"
    if labelled is not None and picked.date() > labelled.date() and labelled.time() < NEXT_DAY_LABELS:
        return (f"is picked up on {picked:%Y-%m-%d}, though labelled at {labelled:%H:%M} on {labelled:%Y-%m-%d}, in "
                f"time for that day's collection or night trailer")
    if labelled is not None and labelled.time() > NEXT_DAY_LABELS and picked.date() == labelled.date():
        return (f"is picked up at {picked:%H:%M} on the evening it was labelled ({labelled:%H:%M}), after the night "
                f"trailer's last labels ({NEXT_DAY_LABELS:%H:%M}): it leaves with the next business day's first collection")
    if labelled is not None and labelled.time() > NEXT_DAY_LABELS and picked.date() > labelled.date() \
            and picked.time() >= FIRST_ROUND_ENDS:
        return (f"is picked up at {picked:%H:%M} on {picked:%Y-%m-%d}, though labelled after "
                f"{NEXT_DAY_LABELS:%H:%M} the evening before: it leaves with the first collection ({FIRST_PICKUP:%H:%M})")
    if labelled is not None and labelled.time() <= NIGHT_TRAILER_LABELS and picked.time() > LAST_PICKUP:
        return (f"is picked up at {picked:%H:%M}, after the carrier's last collection ({LAST_PICKUP:%H:%M}), though "
                f"labelled at {labelled:%H:%M}")
    return None


def unearned_tier(customer: Mapping[str, Any], first_order: datetime) -> str | None:
    """What betrays ``customer``'s tier as unearned (None: nothing): a tier is earned from spending, purchases from
    before the order history included (kb-loyalty-program), and every order is priced at its customer's tier from
    the first, so an account with a tier was opened before the history's ``first_order``."""
    if customer["loyalty_tier"] == "none" or customer["created_at"] <= first_order:
        return None
    return (f"is {customer['loyalty_tier']} on an account opened {customer['created_at']:%Y-%m-%d}, after the order "
            f"history began ({first_order:%Y-%m-%d})")


def eta_problem(shipped: datetime, eta: datetime, sla: int, holidays: Collection[date]) -> str | None:
    """What is wrong with a parcel's ``eta`` (both moments world time; None: nothing): it is the carrier's ``sla`` in
    business days after shipping, weekends and carrier ``holidays`` skipped, as the handbook counts, and so a
    business day."""
    counted = business_days_after(shipped.date(), eta.date(), holidays)
    if counted == sla and is_business_day(eta.date(), holidays):
        return None
    return (f"has its ETA on {eta:%Y-%m-%d}, {counted} business days after shipping ({shipped:%Y-%m-%d}); the SLA "
            f"is {sla}")


def young_busy_account(customer: Mapping[str, Any], orders: int, first_order: datetime) -> str | None:
    """What betrays ``customer``'s account, with ``orders`` orders on record, as too young for them (None: nothing):
    a new account's first months bring a few orders, so one with :data:`~corecraft.world.rules.ESTABLISHED_ORDERS`
    or more was opened before the history's ``first_order`` (a returning customer's)."""
    if orders < ESTABLISHED_ORDERS or customer["created_at"] <= first_order:
        return None
    return (f"has {orders} orders on an account opened {customer['created_at']:%Y-%m-%d}, after the order history "
            f"began ({first_order:%Y-%m-%d})")


def delay_flag_problem(statuses: Sequence[str], eta: datetime | None, delivered: datetime | None) -> str | None:
    """What is wrong with the scans (``statuses``) of a parcel delivered at ``delivered`` against its ``eta`` (both
    world time): one delivered after its ETA's day carries the carrier's ``delayed`` scan, which the carrier makes
    on the due day once the parcel will miss it (kb-shipment-tracking-events); None when it does or was on time."""
    if eta is None or delivered is None or delivered.date() <= eta.date() or "delayed" in statuses:
        return None
    return (f"was delivered {delivered:%Y-%m-%d}, after its ETA ({eta:%Y-%m-%d}), with no delayed scan: the carrier "
            "flags a parcel late on its due day")


TRUCKS_LEAVE = (time(6, 0), time(12, 0))
"""When the delivery trucks leave the local facility (the ``out_for_delivery`` scan): in the morning."""


def delivery_hour_problem(delivered: datetime | None, out_for_delivery: datetime | None = None) -> str | None:
    """What is wrong with a parcel delivered at ``delivered`` (world time): it is delivered by the time the carriers'
    rounds end (:data:`ROUNDS_END`), and when it went out for delivery at ``out_for_delivery``, that was the
    morning (:data:`TRUCKS_LEAVE`) of the day it was delivered; None when it is, or is not delivered. Shared by lint's
    shipment_scans and ``corecraft tasks check``'s setup parcels (round 153: a parcel out for delivery at 16:15
    and delivered at 03:17 the next night)."""
    if delivered is None:
        return None
    if delivered.time() > ROUNDS_END:
        return f"is delivered at {delivered:%H:%M}, after the carriers' delivery rounds end ({ROUNDS_END:%H:%M})"
    if out_for_delivery is None:
        return None
    if out_for_delivery.date() != delivered.date() or out_for_delivery > delivered:
        return (f"is delivered at {delivered:%Y-%m-%d %H:%M} but went out for delivery at "
                f"{out_for_delivery:%Y-%m-%d %H:%M}: a truck delivers the day it leaves, after it leaves")
    start, end = TRUCKS_LEAVE
    if not start <= out_for_delivery.time() < end:
        return (f"went out for delivery at {out_for_delivery:%H:%M}: the trucks leave between {start:%H:%M} and "
                f"{end:%H:%M}")
    return None


OPEN_TICKET_STATUSES = frozenset({"new", "open", "pending_customer"})
"""Statuses of a ticket still being worked on: the queue an agent sees together."""

OFF_THE_QUEUE = frozenset({"Product Manager"})
"""Titles that do not work their department's ticket queue: the product manager leaves recommendation tickets
to the product specialists (a product manager closing tickets reads as odd)."""


WORK_WEEK_WORDS = re.compile(r"\b(?:before the weekend|this week|by (?:Monday|Tuesday|Wednesday|Thursday|Friday)|"
                             r"(?:Monday|Tuesday|Wednesday|Thursday|Friday)s?|tomorrow morning)\b")
"""Words of a Slack post that plan the working week: not posted on a weekend or holiday (who writes "before the
weekend" on a Sunday?)."""


THANKS_WORDS = re.compile(r"\b(thanks?|thank you|please|pls|appreciate\w*|help\w*|kudos|shout-?out|"
                          r"welcome|congrat\w*)\b", re.IGNORECASE)
"""Words of a Slack post that thanks or asks: only such a post draws folded hands."""


def fitting_reaction(emoji: str, text: str, casual: bool) -> str:
    """The reaction a Slack post of ``text`` draws where ``emoji`` was drawn: laughter only in the casual
    channels (``casual``: #general, #random), fire and the rotating light only on a post that raises an
    alarm (:data:`ALARM_WORDS`), folded hands only on one that thanks or asks (:data:`THANKS_WORDS`), the check
    mark ("done", "agreed") only on one that asks nothing (a question is answered in its thread); an emoji that
    does not fit becomes an acknowledgement."""
    if emoji == "joy" and not casual:
        return "+1"
    if emoji == "white_check_mark" and "?" in text:
        return "eyes"
    if emoji in ("fire", "rotating_light") and ALARM_WORDS.search(text) is None:
        return "+1" if emoji == "fire" else "eyes"
    if emoji == "pray" and THANKS_WORDS.search(text) is None:
        return "+1"
    return emoji


def ordered_parts(orders: Iterable[Mapping[str, Any]], lines_of: Callable[[str], Iterable[Mapping[str, Any]]],
                  category_of: Callable[[str], str]) -> Iterator[tuple[str, datetime]]:
    """The category and order time of each part a customer ordered from us (``orders``, cancelled ones left out), as
    :meth:`Fidelity.old_part_problems` reads them; read only when iterated."""
    for order in orders:
        if order["status"] != "cancelled":
            for line in lines_of(order["id"]):
                yield category_of(line["product_id"]), order["created_at"]


def reaction_counts(counts: dict[str, int]) -> dict[str, int]:
    """A post's reactions as a crowd gives them: most people pick the same emoji, so each reaction after the
    most given has at most half the count of the one before it (at least 1), in name order."""
    tallied, cap = {}, None
    for emoji, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        tallied[emoji] = count if cap is None else max(1, min(count, cap))
        cap = tallied[emoji] // 2
    return dict(sorted(tallied.items()))


CASUAL_CHANNELS = ("#general", "#random")
"""The channels for chatter, not work: only there does a post draw laughter."""


def reaction_problems(reactions: Mapping[str, int] | None, text: str, casual: bool) -> list[str]:
    """What betrays a Slack post's reactions as drawn rather than given: an emoji that does not fit the post
    (:func:`fitting_reaction`; ``casual``: posted in one of :data:`CASUAL_CHANNELS`), or a tally no crowd gives
    (:func:`reaction_counts`)."""
    given = dict(reactions or {})
    return [f"draws {emoji} on {text!r}" for emoji in given if fitting_reaction(emoji, text, casual) != emoji] + (
        [f"has reactions {given}: as many people pick a second emoji as the first, where a crowd mostly gives one "
         "(at most half as many for each next one)"] if given and reaction_counts(given) != given else [])


TIER_CLAIM = re.compile(r"\b(silver|gold|platinum) member\b", re.IGNORECASE)
"""A customer saying which loyalty tier they hold."""

OLD_PART_DAYS = 730
"""A part a customer calls years old, or is upgrading, was not ordered from us in this many days before."""

RECENT_ORDER_DAYS = 2.0
"""How old an order may be for its customer to say they 'just placed' it."""


RECENT_DELIVERY_DAYS = 2
"""How many calendar days after delivery a customer may say the parcel 'just arrived'."""


HIGH_PRIORITY_TOTAL = 2000.0
"""An order total over which (strictly) a ticket about the order is high priority."""

HELD_TICKET_TYPES = ("troubleshooting", "return")
"""Ticket types written by a customer who has the order's goods (a part to fix or to send back)."""


COMMUTE_CITIES = 3
"""A workplace is in its worker's home city or one of the cities of its state nearest to it: this many in all."""

RETURN_TRANSIT_DAYS = 2
"""The fewest weekdays from a return asked for (or refunded as returned) until the customer can say the parcel
sent back has reached the warehouse (``returned_a_while``)."""


def order_states(when: datetime, order: Row, ship: Row | None, refunds_before: Sequence[Row],
                 earlier_tickets: Sequence[Row] = ()) -> set[str]:
    """The states (``status_claims``' words) ``order`` was in at ``when`` (``earlier_tickets``: the tickets
    about it written before then). Days are calendar days of the world's time zone, which every moment is in."""
    shipped = shipped_by(ship, when)
    delivered = ship is not None and shipped and ship["delivered_at"] is not None and ship["delivered_at"] <= when
    states = {"shipped" if shipped else "not_shipped", "delivered" if delivered else "not_delivered"}
    if shipped and not delivered:
        states.add("in_transit")
    label = label_created(ship)
    if not shipped and label is not None and label <= when:
        states.add("label_only")
    if ship is not None and delivered and ship["eta"] is not None and ship["delivered_at"] <= ship["eta"]:
        states.add("on_time")
    if ship is not None and ship["eta"] is not None and shipped and (
            ship["delivered_at"] if delivered else when).date() > ship["eta"].date():
        states.add("late")
    if ship is not None and delivered:
        days = (when.date() - ship["delivered_at"].date()).days
        states.add({0: "delivered_today", 1: "delivered_yesterday"}.get(days, "delivered_earlier"))
        states.add("delivered_recently" if days <= RECENT_DELIVERY_DAYS else "delivered_a_while_ago")
        if days >= 1:
            states.add("delivered_before_today")
    sent_back = [x["created_at"] for x in refunds_before if x["lines"]] + [
        t["created_at"] for t in earlier_tickets if t["type"] == "return" and t["order_id"] == order["id"]
        and t["created_at"] < when]
    states.add("returned" if sent_back else "not_returned")
    if sent_back and business_days_after(min(sent_back).date(), when.date(), ()) >= RETURN_TRANSIT_DAYS:
        states.add("returned_a_while")
    in_hand = any(t["type"] in HELD_TICKET_TYPES and t["order_id"] == order["id"] and t["created_at"] < when
                  for t in earlier_tickets)
    states.add("in_hand" if in_hand else "not_in_hand")
    if order["status"] == "cancelled" and order["updated_at"] <= when:
        states.add("cancelled")
    if order["status"] == "backorder" and not shipped:
        states.add("backorder")
    states.add(order["shipping_method"])
    if ship is None or ship["carrier"] == order["shipping_method"]:
        states.add("carrier_as_chosen")
    states.add("express" if order["shipping_method"] in ("fedex_express", "fedex_overnight") else "ground")
    if order["shipping_method"] != "fedex_overnight":
        states.add("not_overnight")
    if not order["discount"]:
        states.add("no_discount")
    if order["shipping_cost"] > 0:
        states.add("shipping_charged")
    if _days(when, order["created_at"]) <= RECENT_ORDER_DAYS:
        states.add("recent")
    states.add("refunded" if refunds_before else "not_refunded")
    return states


def day_end_problems(text: str, local: datetime, rules: Fidelity, told: Collection[date] = ()) -> list[str]:
    """Sentences when a Slack ``text`` posted at ``local`` (world time) speaks of the day's end before it came, or
    on a day whose end was already told of (``told``: one missed pickup a day is news, two read as a template)."""
    match = re.search(rules.day_end_words, text)
    if match is None:
        return []
    early = [f"says {match.group(0)!r} at {local:%H:%M}, before {rules.day_end_hour:02d}:00"] \
        if local.hour < rules.day_end_hour else []
    return early + ([f"says {match.group(0)!r} on {local:%Y-%m-%d}, a day already told of"]
                    if local.date() in told else [])


def card_problems(text: str, payment: Row | None, rules: Fidelity) -> list[str]:
    """A sentence when ``text`` speaks of the card its order was paid with but the order's ``payment`` (None: the
    records hold none) charged no card."""
    match = re.search(rules.card_claim, text, re.IGNORECASE)
    if match is None or (payment is not None and payment["method"] in rules.card_methods):
        return []
    paid = "no payment" if payment is None else f"a {payment['method'].replace('_', ' ')} payment"
    return [f"says {match.group(0)!r} but the records show {paid}"]


def status_problems(text: str, when: datetime, tier: str, order: Row | None, ship: Row | None,
                    refunds_before: Sequence[Row], rules: Fidelity, earlier_tickets: Sequence[Row] = ()) -> list[str]:
    """Sentences on every claim in a ticket's ``text`` about its order's state, or about the customer's
    loyalty ``tier``, that the records at ``when`` (and the tickets written before it) do not bear out."""
    problems = []
    states = order_states(when, order, ship, refunds_before, earlier_tickets) if order is not None else set()
    for name, claim in rules.status_claims.items():
        match = re.search(claim.pattern, text, re.IGNORECASE)
        if match is None:
            continue
        missing = [s for s in claim.requires if s not in states]
        if order is None or missing:
            what = "show no order" if order is None else "do not show an order " + " and ".join(
                s.replace("_", " ") for s in missing)
            problems.append(f"says {match.group(0)!r} ({name.replace('_', ' ')}) but the records {what} at the time")
    for match in TIER_CLAIM.finditer(text):
        if match.group(1).lower() != tier:
            problems.append(f"says {match.group(0)!r} but the customer's tier is {tier}")
    return problems


NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
COUNT_CLAIMS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bhad (\w+) items\b"), "order_items"),
    (re.compile(r"\bordered (\w+) of (?:the )?(.+?)(?= but\b|[,;:!?]|\.(?:\s|$)|$)"), "product_quantity"),
    (re.compile(r"\b(everything) else (?:is|was) there\b", re.IGNORECASE), "other_units"),
)
"""How many items a ticket says its order had (the order's lines or units), how many of one product it ordered (by
its name), or that it had units besides the one it speaks of (an item missing from a box the rest of the order came
in)."""


def _number(word: str) -> int | None:
    return int(word) if word.isdigit() else NUMBER_WORDS.index(word.lower()) if word.lower() in NUMBER_WORDS else None


def _counted(n: int) -> str:
    return NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else str(n)


def count_problems(text: str, items: Sequence[tuple[str, int]]) -> list[str]:
    """Sentences on every count ``text`` gives of its order's items (``items``: each line's product name and quantity)
    that the order does not bear out."""
    problems = []
    for pattern, kind in COUNT_CLAIMS:
        for match in pattern.finditer(text):
            said = _number(match.group(1))
            if kind == "other_units":
                if sum(q for _, q in items) < 2:
                    problems.append(f"says {match.group(0)!r}; the order has no unit besides the one it speaks of")
                continue
            if kind == "order_items":
                real = {len(items), sum(q for _, q in items)}
                what = f"{len(items)} line(s), {sum(q for _, q in items)} unit(s)"
            else:
                real = {q for name, q in items if name == match.group(2)}
                what = f"{'/'.join(str(q) for q in sorted(real)) or 'none'} of {match.group(2)}"
            if said not in real:
                problems.append(f"says {match.group(0)!r}; the order has {what}")
    return problems


def with_real_counts(text: str, items: Sequence[tuple[str, int]]) -> str:
    """``text`` with every count it gives of its order's items replaced by the order's (where more than one:
    a text about one item of several does not fit an order of one)."""
    lines = len(items)
    if lines > 1:
        text = COUNT_CLAIMS[0][0].sub(lambda m: m.group(0).replace(m.group(1), _counted(lines), 1), text)

    def quantity(match: re.Match[str]) -> str:
        real = [q for name, q in items if name == match.group(2)]
        return match.group(0).replace(match.group(1), str(real[0]), 1) if real and real[0] > 1 else match.group(0)

    return COUNT_CLAIMS[1][0].sub(quantity, text)


def spec_problems(text: str, held: Sequence[Row], rules: Fidelity) -> list[str]:
    """Sentences on every spec ``text`` quotes of a part that the customer's ``held`` parts contradict."""
    problems = []
    for claim in rules.spec_claims.values():
        owned = [p for p in held if p["category"] == claim.category]
        for match in re.finditer(claim.pattern, text):
            if owned and all(str(p["specs"].get(claim.spec)) != match.group(1) for p in owned):
                problems.append(f"says {match.group(0)!r} but the customer's {claim.category} is {owned[0]['name']}")
    return problems


def with_real_specs(text: str, held: Sequence[Row], rules: Fidelity) -> str:
    """``text`` with every spec it quotes replaced by that of the customer's own part, where they hold one."""
    for claim in rules.spec_claims.values():
        owned = next((p for p in held if p["category"] == claim.category), None)
        if owned is not None and claim.spec in owned["specs"]:
            text = re.sub(claim.pattern, partial(_quote_spec, str(owned["specs"][claim.spec])), text)
    return text


def _quote_spec(value: str, match: re.Match[str]) -> str:
    return match.group(0).replace(match.group(1), value, 1)


def reference_problem(ticket: Row, quoted: Row) -> str | None:
    """What is wrong with ``ticket`` speaking of ``quoted`` as the customer's earlier ticket (None: nothing):
    it must be the same customer's, earlier, worked by someone, and about the same order and issue
    (a complaint, type ``other``, may be about any ticket)."""
    if quoted["customer_id"] != ticket["customer_id"]:
        return "another customer's ticket"
    if quoted["created_at"] >= ticket["created_at"]:
        return "a ticket that is not earlier"
    if quoted["assignee_id"] is None:
        return "a ticket nobody worked"
    if ticket["order_id"] and quoted["order_id"] != ticket["order_id"]:
        return f"a ticket about {quoted['order_id'] or 'no order'}, not {ticket['order_id']}"
    if ticket["type"] != "other" and quoted["type"] != ticket["type"]:
        return f"a {quoted['type']} ticket, not a {ticket['type']} one"
    return None


def price_at(product: Row, when: datetime) -> float:
    """A product's price at ``when``: the first ``price_history`` step still in force, else today's."""
    for step in product["specs"].get("price_history", []):
        if when < datetime.fromisoformat(step["until"]):
            return float(step["price"])
    return float(product["price"])


def stocked_parts(product: Row) -> list[str]:
    """The stock a unit of ``product`` takes: the product itself, and a prebuilt's component SKUs too (it is
    assembled from them)."""
    return [product["id"], *(v for k, v in product["specs"].items() if k.endswith("_sku"))]


def stock_out_moments(backordered: Iterable[tuple[datetime, Row]], products: Mapping[str, Row]) -> dict[str, datetime]:
    """When each part out of stock today ran out, by product id: the moment of the first order left on backorder
    that takes its stock (``backordered``: each backorder line's order ``created_at`` and product)."""
    since: dict[str, datetime] = {}
    for placed, product in backordered:
        for pid in stocked_parts(product):
            if products[pid]["stock_status"] == "out_of_stock":
                since[pid] = min(since.get(pid, placed), placed)
    return since


def shipped_out_of_stock(products: Iterable[Row], placed: datetime, since: Mapping[str, datetime]) -> list[str]:
    """The parts an order placed at ``placed`` and shipped would have taken after they ran out (``since``:
    :func:`stock_out_moments`), sorted: none, in a world whose stock runs out once."""
    held = {pid for product in products for pid in stocked_parts(product)}
    return sorted(pid for pid in held if pid in since and placed > since[pid])


def first_deliveries(lines: Iterable[Row], shipment_of: dict[str, Row]) -> dict[str, datetime]:
    """When a customer first received each product (its earliest delivery), by product id: order ``lines`` and the
    shipments of their orders (``shipment_of``, by order id)."""
    received: dict[str, datetime] = {}
    for line in lines:
        delivered: datetime | None = (shipment_of.get(line["order_id"]) or {}).get("delivered_at")
        if delivered is not None:
            received[line["product_id"]] = min(received.get(line["product_id"], delivered), delivered)
    return received


def priciest_products(lines: Iterable[Mapping[str, Any]]) -> set[str]:
    """The products of an order's costliest lines (by unit price; a tie names each)."""
    lines = list(lines)
    top = max((ln["unit_price"] for ln in lines), default=None)
    return {ln["product_id"] for ln in lines if ln["unit_price"] == top}


def received_products(orders: Iterable[Row], shipment_of: Mapping[str, Row], lines_of: Mapping[str, list[Row]],
                      when: datetime) -> set[str]:
    """The products of ``orders`` (one customer's) delivered by ``when``: what the customer had received from us
    (``shipment_of``: shipments by order id; ``lines_of``: order lines by order id)."""
    return {line["product_id"] for order in orders if (ship := shipment_of.get(order["id"])) is not None
            and ship["delivered_at"] is not None and ship["delivered_at"] <= when
            for line in lines_of.get(order["id"], [])}


def complaints_by_product(tickets: Iterable[Row], lines_of: Mapping[str, list[Row]]) -> dict[str, list[Row]]:
    """Tickets by each product their order holds (``lines_of``: order lines by order id)."""
    out: dict[str, list[Row]] = defaultdict(list)
    for t in tickets:
        for line in lines_of.get(t["order_id"] or "", []):
            out[line["product_id"]].append(t)
    return out


def complained_of(tickets: Iterable[Row], fault: str, when: datetime) -> bool:
    """Whether one of ``tickets`` written by ``when`` speaks of ``fault`` in its subject or body: a bench test
    on a product answers a customer's complaint about it."""
    return any(t["created_at"] <= when and fault in f"{t['subject']}\n{t['body']}".lower() for t in tickets)


def received_by(received: dict[str, datetime], product_id: str, when: datetime) -> bool:
    """Whether some customer had received ``product_id`` by ``when`` (``received``: :func:`first_deliveries`)."""
    first = received.get(product_id)
    return first is not None and first <= when


CENT = 0.011
"""Two amounts of money this close are the same amount (a rounding's worth apart)."""


def ship_to_problem(address: dict[str, Any], book: list[dict[str, Any]]) -> str | None:
    """Why an order's ``address`` is none of its customer's address ``book`` (None: it is one, every field
    alike): an order ships to an address the customer keeps, "home" to their home as the book has it."""
    if address in book:
        return None

    def written(a: dict[str, Any]) -> str:
        return f"{a.get('line1')}, {a.get('city')} {a.get('state')} {a.get('zip')}"

    label = address.get("label")
    kept = next((a for a in book if a.get("label") == label), None)
    if kept is None:
        return f"ships to {written(address)}, labelled {label!r}, an entry the customer's address book lacks"
    return f"ships to {written(address)} as {label!r}, but the customer's {label!r} address is {written(kept)}"


def approval_problem(amount: float, approver: Row) -> str | None:
    """What is wrong with ``approver`` approving a refund of ``amount`` (None: nothing): their refund limit covers it
    (kb-refund-approval-limits; create_refund refuses the rest). Shared by lint's refund_approvers and ``corecraft
    tasks check``'s setup refunds."""
    if amount <= approver["refund_limit"] + CENT:
        return None
    return (f"is approved by {approver['name']} ({approver['title']}, limit ${approver['refund_limit']:,.2f}) for "
            f"${amount:,.2f}, over that limit")


def line_price_problem(line: Row, product: Row, ordered: datetime, replaces: str | None) -> str | None:
    """What is wrong with an order line's unit price, if anything: it is ``product``'s price when the order was
    placed at ``ordered`` (:func:`price_at`), and $0 on a no-charge replacement of order ``replaces``. Shared by
    lint's order_prices and ``corecraft tasks check``'s setup rows, so both say it alike."""
    expected = 0.0 if replaces is not None else price_at(product, ordered)
    if abs(line["unit_price"] - expected) <= CENT:
        return None
    listed = (f"on a no-charge replacement of {replaces}" if replaces is not None
              else f"listed at ${expected:.2f} on {ordered:%Y-%m-%d}")
    return f"charges ${line['unit_price']:.2f} for {line['product_id']}, {listed}"


def lowest_price(product: Row, start: datetime, end: datetime) -> float:
    """The lowest price ``product`` sold at from ``start`` to ``end`` (its price history, then today's)."""
    moments = [start, end] + [until for step in product["specs"].get("price_history", [])
                              if start <= (until := datetime.fromisoformat(step["until"])) <= end]
    return min(price_at(product, moment) for moment in moments)


def paid_share(order: Mapping[str, Any]) -> float:
    """The share of its listed prices the customer paid on ``order``: 1 less its loyalty discount's rate."""
    return 1 - order["discount"] / order["subtotal"] if order["subtotal"] else 1.0


def price_drops(lines: Sequence[Row], products: dict[str, Row], order: Mapping[str, Any], asked: datetime,
                window_days: int) -> list[tuple[Row, float]]:
    """The ``order``'s ``lines`` whose product sold for less than was paid within ``window_days`` of its purchase
    (and by ``asked``), each with what a price adjustment refunds for it: (paid - lowest) x quantity, less the
    order's loyalty discount rate (kb-price-adjustment)."""
    bought = order["created_at"]
    end = min(bought + timedelta(days=window_days), asked)
    drops = []
    for line in lines:
        lower = lowest_price(products[line["product_id"]], bought, end)
        if line["unit_price"] - lower > 0.005:
            drops.append((line, round((line["unit_price"] - lower) * line["quantity"] * paid_share(order) + 1e-9, 2)))
    return drops


def days_past_window(when: datetime, tier: str, ship: Row | None, windows: dict[str, int]) -> int | None:
    """How many days past the ``tier``'s return window (counted from delivery) ``when`` is, if it is past
    (None: within it, or not delivered)."""
    if ship is None or ship["delivered_at"] is None or ship["delivered_at"] > when:
        return None
    late = int(_days(when, ship["delivered_at"])) - windows[tier]
    return late if late > 0 else None
WAREHOUSE_OF_CITY = {"Edison, NJ": "east", "Columbus, OH": "central", "Reno, NV": "west"}
"""The warehouse a parcel leaves from, by the city of its first scan."""
CARRIER_LABELS = {"usps_ground": "USPS Ground", "ups_ground": "UPS Ground", "fedex_express": "FedEx Express",
                  "fedex_overnight": "FedEx Overnight"}
"""How people write each shipping method (Slack says "UPS Ground", never the ``ups_ground`` id)."""
CARRIER_IDS = {label: method for method, label in CARRIER_LABELS.items()}
CARRIER_NAME = re.compile(rf"\b(?:{'|'.join(map(re.escape, [*CARRIER_LABELS, *CARRIER_LABELS.values()]))})\b")
"""A shipping method named by its id or its label (:data:`CARRIER_LABELS`)."""
RAW_ID = re.compile(r"(?<![`\w-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![`\w-])")
"""A raw snake_case id (``usps_ground``, ``refund_requested``) outside backticks: a record's value, not a word."""
SENTENCE = re.compile(r"(?<=[.!?])\s+")
REPEAT_WORDS = 5
"""A sentence this long said twice in Slack (not a reply quoting it) is a templated repeat."""
WAREHOUSE_NAME = re.compile(r"\b(?:east|central|west)\b")
DOLLARS = re.compile(r"\$(\d[\d,]*\.\d{2})\b")
def names_first_name(text: str, full_name: str) -> bool:
    """Whether ``text`` calls someone by ``full_name``'s first name, as a word ("Brian please issue")."""
    return re.search(rf"\b{re.escape(full_name.split()[0])}\b", text) is not None


ORDER_ID = re.compile(r"\bord-\d{6}-\d{3}\b")
"""An order id as records quote it."""

TRACKING = re.compile(r"\b(?=[0-9A-Z]*\d)[0-9A-Z]{12,22}\b")
"""Tokens shaped like a carrier's tracking number."""


@dataclass(frozen=True)
class OrderStory:
    """An order's records as Slack may speak of them: its shipment and every refund (any date)."""

    order: Row
    ship: Row | None
    refunds: Sequence[Row]

    def refunds_by(self, when: datetime) -> list[Row]:
        """The refunds created by ``when``."""
        return [r for r in self.refunds if r["created_at"] <= when]


def origin(ship: Row) -> str | None:
    """The warehouse a shipment left from (its first scan's city)."""
    return WAREHOUSE_OF_CITY.get(ship["events"][0]["location"]) if ship["events"] else None


def assigned_warehouse(destination: str, items: Sequence[Row], rules: Fidelity) -> str:
    """The warehouse an order ships from, as ``kb-warehouse-network`` assigns it: the one nearest the
    delivery address (``City, ST``) that has every item in stock, else the nearest with the most of them."""
    goal = rules.coordinates(destination)

    def key(city: str) -> tuple[int, float, str]:
        missing = sum(1 for p in items if p["inventory"].get(WAREHOUSE_OF_CITY[city], 0) <= 0)
        at = rules.coordinates(city)
        return missing, distance_km(at, goal) if at and goal else 0.0, city

    return min(WAREHOUSE_OF_CITY, key=key)


def stale_details(days: int) -> str:
    """The resolution details of a ticket closed because the customer did not reply for ``days`` days after
    our last message (``stale_ticket_days`` in the policy, the ticket-status article)."""
    return (f"No reply from the customer in the {days} days after our last message; closed as the ticket-status "
            "article says. A new message from the customer opens a new ticket.")


def repeated_scans(events: Sequence[Row], key: str) -> list[tuple[str, int]]:
    """What a parcel's in-transit scans share, and how many share it, by ``key``: ``"location"`` (a hub scans a
    parcel once on its way) or ``"ts"`` (one scan at a time). Lint holds the world's parcels to it, ``tasks check``
    the setups'."""
    counted = Counter(e[key] for e in events if e.get("status") == "in_transit")
    return [(shared, n) for shared, n in sorted(counted.items()) if n > 1]


def origin_problem(events: Sequence[Row], address: Row, items: Sequence[Row], rules: Fidelity,
                   stock_then_unknown: bool = False) -> str | None:
    """What is wrong with where a parcel (its scan ``events``) left from, for an order to ``address`` of
    ``items``: it leaves from the warehouse ``kb-warehouse-network`` assigns (:func:`assigned_warehouse`),
    by today's stock; when the stock on the day it shipped is unknown (a task's setup may have sold a
    warehouse out since), the nearest warehouse will do too. None when it does."""
    dest = f"{address['city']}, {address['state']}"
    expected = assigned_warehouse(dest, items, rules)
    actual = events[0]["location"] if events else None
    if actual == expected or (stock_then_unknown and actual == assigned_warehouse(dest, (), rules)):
        return None
    return f"ships from {actual} to {dest}; the nearest warehouse with the items in stock is {expected}"


def claim_backing(claim: SlackClaim, when: datetime, story: OrderStory) -> Row | None:
    """The record (shipment or refund) that bears out ``claim`` about ``story``'s order at ``when``, or None."""
    ship, window = story.ship, timedelta(days=claim.days)
    if claim.needs in ("refunded", "refund_due"):
        low, high = (when - window, when) if claim.needs == "refunded" else (when, when + window)
        return next((r for r in story.refunds if r["reason"] in claim.reasons and low <= r["created_at"] <= high), None)
    if ship is None or not shipped_by(ship, when):
        return None
    delivered = ship["delivered_at"] if ship["delivered_at"] and ship["delivered_at"] <= when else None
    backed = {
        "shipped": delivered is None and when <= ship["shipped_at"] + window,
        "delivered": delivered is not None and when <= delivered + window,
        "late": delivered is not None and when <= delivered + window and ship["eta"] is not None
        and delivered.date() > ship["eta"].date(),
        "overdue": delivered is None and ship["eta"] is not None and ship["eta"] + timedelta(days=1) <= when,
    }
    return ship if claim.needs is not None and backed[claim.needs] else None


def claim_problems(text: str, when: datetime, story: OrderStory | None, rules: Fidelity,
                   author: str | None = None, first_names: dict[str, str] | None = None) -> list[str]:
    """Sentences on every claim ``text`` makes about ``story``'s order that its records do not bear out
    (the event, or the carrier, warehouse, tracking number or amount quoted, or, posted by ``author``,
    who made the refund, or, given employees' ``first_names``, who is asked to make it). A text naming no
    order speaks in general and makes no such claim."""
    if story is None:
        return []
    problems = []
    order_id = story.order["id"]
    for name, claim in rules.claims_in(text):
        label = name.replace("_", " ")
        backing = None if claim.needs is None else claim_backing(claim, when, story)
        if claim.needs is None:
            problems.append(f"pins {label} on {order_id}, which no record can bear out")
        elif backing is None:
            problems.append(f"says {label} of {order_id}; its records show no {claim.needs.replace('_', ' ')} "
                            f"as of {when:%Y-%m-%d}")
        elif "carrier" in backing:
            quoted = {*(CARRIER_IDS.get(c, c) for c in CARRIER_NAME.findall(text)), *WAREHOUSE_NAME.findall(text),
                      *TRACKING.findall(text)}
            wrong = quoted - {backing["carrier"], origin(backing), backing["tracking_number"]}
            problems += [f"says {label} of {order_id} with {w}; the shipment says otherwise" for w in sorted(wrong)]
        else:
            wrong_amounts = {a for a in DOLLARS.findall(text) if abs(float(a.replace(",", "")) - backing["amount"]) > 0.011}
            problems += [f"says ${a} for {order_id}; the refund is ${backing['amount']:.2f}" for a in sorted(wrong_amounts)]
            if claim.by_author and author is not None and backing["approved_by_id"] != author:
                problems.append(f"says its author {author} made the {label} on {order_id}; the ledger's "
                                f"{backing['id']} was approved by {backing['approved_by_id']}")
            approver = (first_names or {}).get(backing["approved_by_id"] or "")
            if claim.names_approver and first_names is not None and (
                    approver is None or not re.search(rf"\b{re.escape(approver)}\b", text)):
                problems.append(f"asks someone other than the approver of {backing['id']} ({approver}) to make the "
                                f"{label} on {order_id}")
    return problems


def category_problems(text: str, products: Sequence[Row], brands: dict[str, set[str]], rules: Fidelity) -> list[str]:
    """Sentences on every product, and every brand (``brands``: brand -> the categories it makes) named in
    a Slack ``text``, that its symptoms and topics do not fit."""
    allowed = rules.slack_categories(text)
    if allowed is None:
        return []
    problems = [f"speaks of {p['name']}, a {p['category']}, where only {'/'.join(sorted(allowed))} fit"
                for p in products if p["category"] not in allowed]
    problems += [f"speaks of {brand}, which makes no {'/'.join(sorted(allowed))}"
                 for brand, made in sorted(brands.items())
                 if not made & allowed and brand in text and re.search(rf"(?<!\w){re.escape(brand)}(?!\w)", text)]
    return problems


def refund_days(processed: list[datetime], when: datetime, tz: tzinfo) -> list[date]:
    """The days (in world time, earliest first) on which a refund of ``processed`` (moments, earliest first) was
    processed by ``when``."""
    return sorted({moment.astimezone(tz).date() for moment in processed if moment <= when})


def stale_dates(text: str, when: datetime, tz: tzinfo, rules: Fidelity, processed: list[datetime]) -> list[str]:
    """Sentences on every future date ``text`` gives ("until 2025-09-11") that is already past when posted, and
    every day of refunds it gives ("refunds from 2025-08-22") that is not over yet or on which none of
    ``processed`` (refunds' processing moments, earliest first) was."""
    today = when.astimezone(tz).date()
    ahead = [f"says {m.group(0)!r} on {today.isoformat()}" for m in re.finditer(rules.stale_date_claim, text)
             if date.fromisoformat(m.group(1)) <= today]
    past = [(m.group(0), date.fromisoformat(m.group(1))) for m in re.finditer(rules.past_date_claim, text)]
    refunded = set(refund_days(processed, when, tz)) if past else set()  # most lines name no day of refunds
    return ahead + [f"says {said!r} on {today.isoformat()}, before that day is over" if day >= today
                    else f"says {said!r}, a day no refund was processed on"
                    for said, day in past if day >= today or day not in refunded]


def kb_edit_problems(text: str, when: datetime, tz: tzinfo, updated: dict[str, date], rules: Fidelity) -> list[str]:
    """Sentences on every knowledge-base edit ``text`` announces that the article's ``updated_at`` (``updated``:
    article id -> day) does not bear out as of ``when``."""
    posted = when.astimezone(tz).date()
    problems = []
    for name, edit in rules.kb_edits.items():
        day = updated.get(f"kb-{edit.article}")
        if re.search(edit.pattern, text, re.IGNORECASE) and (day is None or not (
                day - timedelta(days=edit.days_before) <= posted <= day + timedelta(days=edit.days_after))):
            problems.append(f"announces {name.replace('_', ' ')} on {posted.isoformat()}; kb-{edit.article} "
                            f"was last updated {day.isoformat() if day else 'never'}")
    return problems


QUOTED_ID = re.compile(r"\b(?:ord|tick|ship|pay|ref|res|esc)-\d{6}-\d{3}\b")
_RULE_VALUES = re.compile(rf"\$\d[\d,]*(?:\.\d{{2}})?|{CARRIER_NAME.pattern}|\b(?:east|central|west)\b")


def rule_shape(text: str, rules: Fidelity) -> str | None:
    """A standing rule ``text`` states, with its carriers, warehouses and amounts blanked (None: it states
    none, or it is about a named order or ticket). Two texts of one shape give the rule different values."""
    if QUOTED_ID.search(text) or not re.search(rules.standing_rule, text, re.IGNORECASE):
        return None
    return _RULE_VALUES.sub("#", text)


TICKET_ID = re.compile(r"\btick-\d{6}-\d{3}\b")


_WORD = re.compile(r"\w+")
_PLACEHOLDER = re.compile(r"\{\w+\}")


class FillWords:
    """The names a Slack line fills in besides carriers, warehouses and numbers (:func:`fill_words`), found as
    whole words, the longest at a place first: looked up by their first word, so the cost of blanking a
    text does not grow with the number of names (one alternation of every customer's name would)."""

    def __init__(self, names: Iterable[str]) -> None:
        by_first: dict[str, list[str]] = {}
        for name in sorted(set(names), key=lambda n: (-len(n), n)):
            first = _WORD.match(name)
            if first is not None and first.start() == 0:
                by_first.setdefault(first.group(), []).append(name)
        self._by_first = by_first
        self._said: dict[str, frozenset[str]] = {}
        self._said_templates: dict[str, frozenset[str]] = {}

    def said(self, text: str) -> frozenset[str]:
        """:func:`said_sentences` of ``text``, remembered (a build checks the same texts again and again)."""
        if text not in self._said:
            self._said[text] = said_sentences(text, self)
        return self._said[text]

    def said_template(self, template: str) -> frozenset[str]:
        """The sentences a Slack template says whatever it is filled with (its placeholders blanked as
        numbers), remembered per template."""
        if template not in self._said_templates:
            self._said_templates[template] = said_sentences(_PLACEHOLDER.sub("0", template), self)
        return self._said_templates[template]

    def sub(self, blank: str, text: str) -> str:
        """``text`` with every name (not inside a longer word) replaced by ``blank``, left to right."""
        out, done = [], 0
        for word in _WORD.finditer(text):
            start = word.start()
            if start < done:
                continue
            for name in self._by_first.get(word.group(), ()):
                end = start + len(name)
                if text.startswith(name, start) and not (end < len(text) and (text[end].isalnum() or text[end] == "_")):
                    out += [text[done:start], blank]
                    done = end
                    break
        return "".join(out) + text[done:]


def fill_words(products: Iterable[Row], people: Iterable[Row], called: Mapping[str, str]) -> FillWords:
    """The names a Slack line fills in besides carriers, warehouses and numbers: every product's name,
    SKU, brand and what staff call it (``called``, by product id) and every person's (employee's, customer's)
    name and first name."""
    names = {w for p in products for w in (p["name"], p["sku"], p["brand"], called.get(p["id"], p["name"]))}
    names |= {w for person in people for w in (person["name"], person["name"].split()[0])}
    return FillWords(names)


def said_sentences(text: str, names: FillWords) -> frozenset[str]:
    """The sentences of a Slack ``text`` that may be said only once, lower-cased, with what they fill in
    blanked ("#": ``names`` (:func:`fill_words`), ids, carriers, warehouses, dates, amounts, numbers): at
    least :data:`REPEAT_WORDS` words. A reminder with another carrier, product, ticket or order filled in is
    the same reminder, and forty "delivered-not-received on <order>: GPS shows delivery 300m away" reports
    read as one template."""
    return frozenset(_FILLS.sub("#", names.sub("#", sentence)).lower() for sentence in SENTENCE.split(text)
                     if len(sentence.split()) >= REPEAT_WORDS)


_FILLS = re.compile(rf"{QUOTED_ID.pattern}|{TRACKING.pattern}|{CARRIER_NAME.pattern}|{WAREHOUSE_NAME.pattern}|\$?\d[\d,.:-]*\d|\d")


def ticket_problems(text: str, ticket: Row, escalated: bool, held: Sequence[Row], named: Sequence[Row],
                    customers: Sequence[str], rules: Fidelity) -> list[str]:
    """Sentences on what a Slack ``text`` says of the ``ticket`` it names that the ticket does not bear out:
    its topic, an escalation, products not on its order (``held``), another customer's name."""
    about = f"{ticket['subject']}\n{ticket['body']}"
    problems = [f"says {ticket['id']} is about {name.replace('_', ' ')}; the ticket ({ticket['subject']!r}) is not"
                for name, topic in rules.ticket_topics_in(text) if not topic.fits(about, escalated)]
    if held:
        problems += [f"names {p['name']}, which is not on {ticket['id']}'s order" for p in named if p not in held]
    problems += [f"names {c}, who is not {ticket['id']}'s customer" for c in customers]
    return problems


def ticket_state_problems(text: str, when: datetime, ticket: Row, handling: Handling, author: str,
                          employees: dict[str, Row], rules: Fidelity) -> list[str]:
    """Sentences on what a Slack ``text`` by ``author`` says of the handling of the ``ticket`` it names
    (``slack_ticket_states``) that its resolution, escalations and refunds do not bear out at ``when``, the
    wrong employee it names (or one of another department), or an author who is not that employee's manager."""
    problems = []
    first_names = {e["id"]: e["name"].split()[0] for e in employees.values()}
    departments = {e["id"]: e["department"] for e in employees.values()}
    managers = {e["id"]: e["manager_id"] for e in employees.values()}
    for name, state in rules.ticket_states_in(text):
        handler = state.handler(ticket, handling)
        poster = state.author(ticket, handling, managers)
        if poster is not None and poster != author:
            problems.append(f"says {ticket['id']} is {name.replace('_', ' ')}; only the named employee's manager "
                            f"({poster}) would post it, not {author}")
        if not state.holds(when, ticket, handling, departments):
            problems.append(f"says {ticket['id']} is {name.replace('_', ' ')}; its records (status {ticket['status']}) "
                            "do not hold it then")
        elif handler is not None and not re.search(rf"\b{re.escape(first_names[handler])}\b", text):
            problems.append(f"names someone other than {ticket['id']}'s {state.employee} ({first_names[handler]})")
    return problems
