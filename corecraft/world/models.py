"""The 14 entity tables of the CoreCraft world (plus two helper tables), declared once with sqlmodel.

Every table has a readable string primary key (``cust-0042``, ``ord-250904-117`` …).
Datetimes are timezone-aware in Python and stored in UTC (sqlmodel's convention); tools render
them as ISO 8601 in the world's timezone (America/New_York) with its offset. Money is stored in dollars, rounded to cents.
JSON columns hold small structured values (addresses, specs, inventory, events).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from string import ascii_lowercase
from typing import Any

from sqlalchemy import JSON, Column, Index, text
from sqlmodel import AutoString, Field, SQLModel

from corecraft.world.vocab import (
    Carrier,
    Category,
    Department,
    EscalationType,
    LoyaltyTier,
    OrderStatus,
    OwnerType,
    PaymentMethod,
    PaymentStatus,
    Priority,
    RefundReason,
    RefundStatus,
    ResolutionOutcome,
    ShipmentStatus,
    StockStatus,
    TicketChannel,
    TicketStatus,
    TicketType,
    Title,
)


def _json(**kwargs: Any) -> Any:
    return Field(default=None, sa_column=Column(JSON, **kwargs))


def _id_width(table: str) -> Index:
    """An index on the ids by width, then value, of a table whose write tool numbers its rows per day
    (``ref-250915-042``): the day's highest number is then one index probe per width, see
    :func:`corecraft.tools.common.next_id`."""
    return Index(f"ix_{table}_id_width", text("length(id)"), "id")


class Customer(SQLModel, table=True):
    """A person who buys from CoreCraft. Look-alikes (same name, other email) exist on purpose."""

    __table_args__ = (Index("ix_customer_email_nocase", text("email COLLATE NOCASE")),)  # email look-ups ignore case

    id: str = Field(primary_key=True)
    name: str = Field(index=True)
    email: str = Field(index=True)
    phone: str | None = None
    date_of_birth: date | None = None
    addresses: list[dict[str, str]] = _json(nullable=False)
    loyalty_tier: LoyaltyTier = Field(index=True, sa_type=AutoString)
    created_at: datetime = Field(index=True)


class Employee(SQLModel, table=True):
    """Staff. Permissions come from the title (see ``seeds/policy.yaml``)."""

    id: str = Field(primary_key=True)
    name: str = Field(index=True)
    email: str = Field(index=True)
    department: Department = Field(index=True, sa_type=AutoString)
    title: Title = Field(sa_type=AutoString, index=True)
    manager_id: str | None = Field(default=None, foreign_key="employee.id")
    refund_limit: float
    can_approve_exceptions: bool


class Product(SQLModel, table=True):
    """A catalogue item; the primary key is its SKU."""

    id: str = Field(primary_key=True)
    sku: str = Field(index=True, unique=True)
    name: str = Field(index=True)
    brand: str = Field(index=True)
    category: Category = Field(index=True, sa_type=AutoString)
    price: float
    description: str
    specs: dict[str, Any] = _json(nullable=False)
    warranty_months: int
    inventory: dict[str, int] = _json(nullable=False)
    stock_status: StockStatus = Field(index=True, sa_type=AutoString)


class Build(SQLModel, table=True):
    """A PC build: a customer's custom configuration or an internal reference build."""

    id: str = Field(primary_key=True)
    name: str = Field(index=True)
    customer_id: str | None = Field(default=None, foreign_key="customer.id", index=True)
    owner_type: OwnerType = Field(sa_type=AutoString)
    created_at: datetime


class BuildComponent(SQLModel, table=True):
    """Helper table: one product in a build."""

    id: str = Field(primary_key=True)
    build_id: str = Field(foreign_key="build.id", index=True)
    product_id: str = Field(foreign_key="product.id", index=True)
    quantity: int


class Order(SQLModel, table=True):
    """A customer order. total = subtotal - discount + shipping_cost.

    An order with ``replaces_order_id`` is a no-charge replacement: it sends the customer again, at no
    charge, units of products of the order it replaces (a faulty, wrong or damaged item, once returns has
    logged the unit sent back). Its lines are priced $0, its amounts are all $0 and it has no payment
    (nothing is charged, so there is nothing to capture or refund): it is ``paid`` from the moment it is
    placed and ``fulfilled`` once it ships. Every other order has a payment."""

    __tablename__ = "order"

    id: str = Field(primary_key=True)
    customer_id: str = Field(foreign_key="customer.id", index=True)
    status: OrderStatus = Field(index=True, sa_type=AutoString)
    subtotal: float
    discount: float
    shipping_cost: float
    total: float
    shipping_method: Carrier = Field(sa_type=AutoString)
    shipping_address: dict[str, str] = _json(nullable=False)
    build_id: str | None = Field(default=None, foreign_key="build.id", index=True)
    replaces_order_id: str | None = Field(default=None, foreign_key="order.id", index=True)
    """The order this one replaces at no charge (None: an ordinary, paid order)."""
    created_at: datetime = Field(index=True)
    updated_at: datetime


class OrderLine(SQLModel, table=True):
    """Helper table: one line item of an order."""

    id: str = Field(primary_key=True)
    order_id: str = Field(foreign_key="order.id", index=True)
    product_id: str = Field(foreign_key="product.id", index=True)
    quantity: int
    unit_price: float


class Payment(SQLModel, table=True):
    """The payment for an order (one per order; a no-charge replacement order has none)."""

    id: str = Field(primary_key=True)
    order_id: str = Field(foreign_key="order.id", index=True)
    amount: float
    method: PaymentMethod = Field(sa_type=AutoString)
    status: PaymentStatus = Field(index=True, sa_type=AutoString)
    transaction_id: str = Field(index=True)
    processed_at: datetime = Field(index=True)


class Shipment(SQLModel, table=True):
    """A shipment of an order; ``events`` is the carrier's timeline, oldest first. ``shipped_at`` is its pickup scan
    (the ship date), null while the parcel has only its label and the carrier has not collected it. ``lines`` holds
    the ids of the order lines a split order's parcel carries, and is null when the parcel carries the whole order."""

    id: str = Field(primary_key=True)
    order_id: str = Field(foreign_key="order.id", index=True)
    carrier: Carrier = Field(index=True, sa_type=AutoString)
    tracking_number: str = Field(index=True)
    status: ShipmentStatus = Field(index=True, sa_type=AutoString)
    shipped_at: datetime | None = None
    eta: datetime | None = None
    delivered_at: datetime | None = None
    events: list[dict[str, str]] = _json(nullable=False)
    lines: list[str] | None = _json()


class SupportTicket(SQLModel, table=True):
    """A customer's support request."""

    __tablename__ = "supportticket"

    id: str = Field(primary_key=True)
    customer_id: str = Field(foreign_key="customer.id", index=True)
    order_id: str | None = Field(default=None, foreign_key="order.id", index=True)
    build_id: str | None = Field(default=None, foreign_key="build.id")
    type: TicketType = Field(index=True, sa_type=AutoString)
    channel: TicketChannel = Field(sa_type=AutoString)
    priority: Priority = Field(index=True, sa_type=AutoString)
    status: TicketStatus = Field(index=True, sa_type=AutoString)
    subject: str
    body: str
    assignee_id: str | None = Field(default=None, foreign_key="employee.id", index=True)
    created_at: datetime = Field(index=True)
    updated_at: datetime


class Refund(SQLModel, table=True):
    """Money returned against a payment; ``lines`` lists {order_line_id, quantity}."""

    __table_args__ = (_id_width("refund"),)

    id: str = Field(primary_key=True)
    payment_id: str = Field(foreign_key="payment.id", index=True)
    ticket_id: str | None = Field(default=None, foreign_key="supportticket.id", index=True)
    lines: list[dict[str, Any]] = _json(nullable=False)
    amount: float
    reason: RefundReason = Field(index=True, sa_type=AutoString)
    status: RefundStatus = Field(index=True, sa_type=AutoString)
    approved_by_id: str | None = Field(default=None, foreign_key="employee.id", index=True)
    created_at: datetime = Field(index=True)
    processed_at: datetime | None = None


class Escalation(SQLModel, table=True):
    """A ticket handed to another department."""

    __table_args__ = (_id_width("escalation"),)

    id: str = Field(primary_key=True)
    ticket_id: str = Field(foreign_key="supportticket.id", index=True)
    type: EscalationType = Field(index=True, sa_type=AutoString)
    destination: Department = Field(index=True, sa_type=AutoString)
    notes: str
    created_by_id: str | None = Field(default=None, foreign_key="employee.id")
    created_at: datetime = Field(index=True)
    resolved_at: datetime | None = None


class Resolution(SQLModel, table=True):
    """How a ticket was resolved, with the refund it records, if any."""

    __table_args__ = (_id_width("resolution"),)

    id: str = Field(primary_key=True)
    ticket_id: str = Field(foreign_key="supportticket.id", index=True)
    outcome: ResolutionOutcome = Field(index=True, sa_type=AutoString)
    resolved_by_id: str = Field(foreign_key="employee.id", index=True)
    refund_id: str | None = Field(default=None, foreign_key="refund.id")
    details: str
    created_at: datetime = Field(index=True)
    updated_at: datetime | None = None
    """When a dated update was last added to ``details`` (a replacement approval, once the replacement is placed
    or found not needed); None when the note stands as first written."""


class KnowledgeBaseArticle(SQLModel, table=True):
    """A policy or how-to article. Deprecated versions stay searchable beside current ones."""

    __tablename__ = "knowledgebasearticle"

    id: str = Field(primary_key=True)
    title: str = Field(index=True)
    body: str
    tags: list[str] = _json(nullable=False)
    products: list[str] = _json(nullable=False)
    version: int
    is_deprecated: bool = Field(index=True)
    updated_at: datetime


class SlackChannel(SQLModel, table=True):
    """An internal Slack channel; ``members`` are employee ids."""

    __tablename__ = "slackchannel"

    id: str = Field(primary_key=True)
    name: str = Field(index=True, unique=True)
    purpose: str
    members: list[str] = _json(nullable=False)


class SlackMessage(SQLModel, table=True):
    """A message in a channel, possibly a reply in a thread. Its id is its minute (:func:`message_id`)."""

    __tablename__ = "slackmessage"
    __table_args__ = (Index("ix_slackmessage_channel_ts", "channel_id", "ts", "id"),)  # a channel, newest first

    id: str = Field(primary_key=True)
    channel_id: str = Field(foreign_key="slackchannel.id")  # indexed first in ix_slackmessage_channel_ts
    author_id: str = Field(foreign_key="employee.id", index=True)
    text: str
    ts: datetime = Field(index=True)
    reactions: dict[str, int] = _json(nullable=False)
    thread_parent_id: str | None = Field(default=None, foreign_key="slackmessage.id", index=True)


def message_id(moment: datetime, taken: Callable[[str], bool]) -> str:
    """A Slack message's id: ``msg-YYMMDD-HHMM`` of ``moment`` (aware, in world time), as Slack dates a message by its
    timestamp (``msg-250912-0930`` was posted at 09:30), so ids read in time order, the world's, a task's and the
    agent's alike. A minute whose id is ``taken`` gives the next message a letter, as a second payment on one order
    takes one (``msg-250912-0930b``)."""
    stem = f"msg-{moment:%y%m%d-%H%M}"
    for ident in (stem, *(stem + letter for letter in ascii_lowercase[1:])):
        if not taken(ident):
            return ident
    raise ValueError(f"more than {len(ascii_lowercase)} messages posted at {moment:%Y-%m-%d %H:%M}")


ENTITY_TYPES: tuple[type[SQLModel], ...] = (
    Customer,
    Employee,
    Product,
    Build,
    Order,
    Payment,
    Shipment,
    SupportTicket,
    Refund,
    Escalation,
    Resolution,
    KnowledgeBaseArticle,
    SlackChannel,
    SlackMessage,
)
"""The 14 entity types, in dependency order."""

HELPER_TABLES: tuple[type[SQLModel], ...] = (BuildComponent, OrderLine)
"""Tables that belong to an entity (order lines, build parts) and are not entity types."""

ALL_TABLES: tuple[type[SQLModel], ...] = ENTITY_TYPES + HELPER_TABLES

TABLES_BY_NAME: dict[str, type[SQLModel]] = {t.__name__: t for t in ALL_TABLES}
"""Model class by class name (``"Refund"``), as task files name tables."""
