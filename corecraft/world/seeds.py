"""Typed access to the curated seed content in ``seeds/``: catalogue, policy, handbook, phrases.

Each file is validated once per process by a pydantic model; the policy model is what the
write tools enforce, so its numbers and the handbook's prose must agree.
"""

from __future__ import annotations

from datetime import date, datetime
from functools import cache
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from corecraft.paths import content

CATEGORIES = (
    "cpu", "gpu", "motherboard", "memory", "storage", "psu", "case", "cooling", "peripheral", "prebuilt",
)
LOYALTY_TIERS = ("none", "silver", "gold", "platinum")
CARRIERS = ("usps_ground", "ups_ground", "fedex_express", "fedex_overnight")
WAREHOUSES = ("east", "central", "west")


class _Seed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProductSeed(_Seed):
    sku: str = Field(pattern=r"^[A-Z0-9-]+$")
    name: str
    brand: str
    category: str
    price: float = Field(gt=0)
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


class Phrases(_Seed):
    tickets: dict[str, list[TicketPhrase]]
    slack: dict[str, list[str]]
    slack_reserve: dict[str, list[str]] = {}
    """More lines per channel, drawn only when a message's own line would repeat an earlier text."""
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
    restocking_fee_pct: float
    restocking_fee_categories: list[str]
    loyalty_discount_pct: dict[str, float]
    shipping: dict[str, Carrier]
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


def _load(name: str) -> Any:
    return yaml.safe_load(content("seeds", name).read_text(encoding="utf-8"))


@cache
def policy() -> Policy:
    return Policy.model_validate(_load("policy.yaml"))


@cache
def catalogue() -> tuple[ProductSeed, ...]:
    return tuple(ProductSeed.model_validate(p) for p in _load("products.yaml")["products"])


@cache
def handbook() -> tuple[ArticleSeed, ...]:
    return tuple(ArticleSeed.model_validate(a) for a in _load("handbook.yaml")["articles"])


@cache
def phrases() -> Phrases:
    return Phrases.model_validate(_load("phrases.yaml"))
