"""Typed access to the curated seed content in ``seeds/``: catalogue, policy, handbook, phrases.

A :class:`Seeds` reads and validates each file once, on first use, from the content folder it is
given; the policy model is what the write tools enforce, so its numbers and the handbook's prose
must agree.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from corecraft.world.fidelity import Fidelity
from corecraft.world.vocab import Category


class _Seed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProductSeed(_Seed):
    sku: str = Field(pattern=r"^[A-Z0-9-]+$")
    name: str
    called: str | None = Field(default=None, description="What staff write on Slack, when not its full name.")
    brand: str
    category: Category
    price: float = Field(gt=0)
    released: date = Field(description="The first day it could be bought (a prebuilt's: its newest part's).")
    description: str
    inventory: dict[str, int]
    specs: dict[str, Any]


class ArticleSeed(_Seed):
    key: str
    title: str
    version: int = Field(ge=1)
    is_deprecated: bool
    updated_at: date
    tags: list[str]
    products: list[str] = []
    body: str


class TicketPhrase(_Seed):
    subject: str
    body: str
    first_contact: str | None = None
    """The body for a customer with no earlier ticket to quote (phrases whose body quotes {ticket_id})."""
    variants: tuple[str, ...] = ()
    """Other wordings of ``body``, as other customers write it: the same placeholders, the same facts and the same
    words the fidelity checks read (``tests/test_world_lint.py`` holds them to that)."""
    titles: tuple[str, ...] = ()
    """Other subject lines for it, as other customers title the same ticket, held to the same rule as ``variants``."""

    @property
    def wordings(self) -> list[str]:
        """Every body a ticket may be written in: ``body``, its variants, then ``first_contact``."""
        return [self.body, *self.variants] + ([self.first_contact] if self.first_contact else [])

    @property
    def subjects(self) -> list[str]:
        """Every subject line a ticket may carry: ``subject``, then its ``titles``."""
        return [self.subject, *self.titles]

    @cached_property
    def marks(self) -> tuple[str, ...]:
        """The longest stretch of words between placeholders in each of its wordings: what every ticket written
        in that wording shares word for word."""
        return tuple(max(re.split(r"\{\w+\}", body), key=len).strip() for body in self.wordings)

    def wording_of(self, body: str) -> str | None:
        """The wording a ticket ``body`` was written in, if it was written from this phrase."""
        return next((wording for wording, mark in zip(self.wordings, self.marks, strict=True) if mark in body), None)

    def wrote(self, body: str) -> bool:
        """Whether a ticket ``body`` was written from this phrase."""
        return self.wording_of(body) is not None


class Phrases(_Seed):
    tickets: dict[str, list[TicketPhrase]]
    slack: dict[str, list[str]]
    slack_reserve: dict[str, list[str]] = {}
    """More lines per channel, drawn only when a message's own line would repeat an earlier text."""
    ticket_reserve: dict[str, list[TicketPhrase]] = {}
    """More phrases per ticket type, tried only when none of the type's own phrases fits a ticket's records."""
    channels: dict[str, str]


class Carrier(_Seed):
    price: float
    sla_business_days: int


class Title(_Seed):
    department: str
    refund_limit: float
    can_approve_exceptions: bool


class PolicyException(_Seed):
    id: str
    summary: str
    brand: str
    category: str
    ordered_on_or_after: date
    valid_until: date
    waives: list[str]
    announced_at: datetime
    announcement: str
    reply: str


class Policy(_Seed):
    """The company's policy as numbers; ``seeds/policy.yaml``."""

    return_window_days: dict[str, int]
    doa_window_days: int
    price_adjustment_days: int
    stale_ticket_days: int
    restocking_fee_pct: float
    restocking_fee_categories: list[str]
    loyalty_discount_pct: dict[str, float]
    shipping: dict[str, Carrier]
    carrier_holidays: dict[date, str]
    free_ground_shipping_threshold: float
    free_ground_shipping_tiers: list[str]
    refund_reasons: list[str]
    window_limited_reasons: list[str]
    exception_reasons: list[str]
    warranty_months: dict[str, int]
    warranty_exclusions: list[str]
    escalation_routes: dict[str, str]
    titles: dict[str, Title]
    order_transitions: dict[str, list[str]]
    payment_transitions: dict[str, list[str]]
    ticket_transitions: dict[str, list[str]]
    exceptions: list[PolicyException]

    @property
    def departments(self) -> list[str]:
        """Departments in the order titles first name them."""
        return list(dict.fromkeys(t.department for t in self.titles.values()))


class Seeds:
    """The seed files of one content folder, each parsed and validated on first use."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _load(self, name: str) -> Any:
        return yaml.safe_load((self.folder / name).read_text(encoding="utf-8"))

    @cached_property
    def policy(self) -> Policy:
        return Policy.model_validate(self._load("policy.yaml"))

    @cached_property
    def catalogue(self) -> tuple[ProductSeed, ...]:
        return tuple(ProductSeed.model_validate(p) for p in self._load("products.yaml")["products"])

    @cached_property
    def called(self) -> dict[str, str]:
        """What staff call each product on Slack, by product id (its SKU): its ``called`` name, else its name."""
        return {p.sku: p.called or p.name for p in self.catalogue}

    @cached_property
    def handbook(self) -> tuple[ArticleSeed, ...]:
        return tuple(ArticleSeed.model_validate(a) for a in self._load("handbook.yaml")["articles"])

    @cached_property
    def fidelity(self) -> Fidelity:
        """What makes the records hang together (``fidelity.yaml``): the generator and ``world lint`` share it."""
        return Fidelity.model_validate(self._load("fidelity.yaml"))

    @cached_property
    def phrases(self) -> Phrases:
        return Phrases.model_validate(self._load("phrases.yaml"))
