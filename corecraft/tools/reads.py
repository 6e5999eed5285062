"""The 16 read tools: searches and look-ups over the world, plus the price, compatibility and
warranty calculators. None of them changes a row.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import Field
from sqlmodel import SQLModel

from corecraft.tools.common import (
    QUERY_WORDS,
    DateStr,
    Id,
    PageArgs,
    Query,
    Text,
    fetch_rows,
    local,
    page,
    refunded_total,
    require,
)
from corecraft.tools.registry import Args, ToolContext, ToolError, tool
from corecraft.world import db
from corecraft.world import models as m
from corecraft.world.compat import build_problems, required_psu_watts
from corecraft.world.rules import add_months, money, shipping_price
from corecraft.world.vocab import (
    Carrier,
    Category,
    Department,
    LoyaltyTier,
    OrderStatus,
    OwnerType,
    PaymentMethod,
    PaymentStatus,
    Priority,
    ShipmentStatus,
    TicketStatus,
    TicketType,
    Title,
)

LATE_SQL = "(eta IS NOT NULL AND (delivered_at > eta OR (delivered_at IS NULL AND ? > eta)))"
"""A shipment is late when delivered after its eta, or still undelivered with the eta passed."""


def _pick(row: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: row[k] for k in keys}


def _check_id(ctx: ToolContext, model: type[SQLModel], value: str | None, field: str) -> None:
    """A filter naming an id must name a real row: a typo is an error, not an empty result."""
    if value is not None:
        require(ctx, model, value, field)


_PART = ", ".join(f"json_remove(p.{c}, '$.price_history')" if c == "specs" else f"p.{c}"
                  for c in db.column_names(m.Product))
"""A product's columns as a build part: its specs without the price history (long for a product sold
for years in a large world), which no compatibility rule reads."""


def _components(ctx: ToolContext, build_id: str) -> list[dict[str, Any]]:
    """A build's parts as products (with specs, less the price history) and quantities, in build order."""
    rows = ctx.conn.execute(
        f"SELECT c.product_id, c.quantity, {_PART} FROM {db.table(m.BuildComponent)} c "
        f"LEFT JOIN {db.table(m.Product)} p ON p.id = c.product_id WHERE c.build_id = ? ORDER BY c.id",
        (build_id,),
    ).fetchall()
    parts = []
    for product_id, quantity, *product in rows:
        if product[0] is None:
            raise ToolError("not_found", f"no Product with id {product_id!r}", "product_id")
        parts.append({**db.decode(m.Product, product, ctx.world.tz), "quantity": quantity})
    return parts


# -- Products ----------------------------------------------------------------------------------------
class SearchProductsArgs(PageArgs):
    query: Text | None = Field(default=None, description="Words to find in the name, brand, SKU or "
                                                         "description (case-insensitive, partial words; all "
                                                         "must match).")
    category: Category | None = Field(default=None, description="Only products of this category.")
    brand: Text | None = Field(default=None, description="Only this brand (exact name, case-insensitive).")
    min_price: float | None = Field(default=None, ge=0, description="Lowest current price in dollars.")
    max_price: float | None = Field(default=None, ge=0, description="Highest current price in dollars.")
    in_stock_only: bool = Field(default=False, description="Leave out products that are out of stock.")


@tool(read_only=True)
def search_products(ctx: ToolContext, args: SearchProductsArgs) -> dict[str, Any]:
    """Search the product catalogue by words, category, brand, price range and stock.

    Returns a page of summaries (id = SKU, name, brand, category, current price, stock_status),
    ordered by category then name. Use get_product for specs, inventory and warranty.
    """
    query = (Query().text(("name", "brand", "sku", "description"), args.query).eq("category", args.category)
             .add_if(args.brand is not None, "brand = ? COLLATE NOCASE", args.brand)
             .add_if(args.min_price is not None, "price >= ?", args.min_price)
             .add_if(args.max_price is not None, "price <= ?", args.max_price)
             .add_if(args.in_stock_only, "stock_status != 'out_of_stock'"))
    keys = ("id", "name", "brand", "category", "price", "stock_status")
    return page(ctx, m.Product, query, args, "category, name, id", lambda r: _pick(r, keys), {"specs": "NULL"})


class GetProductArgs(Args):
    product_id: Id = Field(description="The product id (its SKU), e.g. 'CPU-AMD-R7-7800X3D'.")


@tool(read_only=True)
def get_product(ctx: ToolContext, args: GetProductArgs) -> dict[str, Any]:
    """Get one product with everything known about it.

    Returns the full record: SKU, name, brand, category, current price, description, specs
    (socket, TDP, wattage, form factor, memory type, length …), warranty_months, inventory per
    warehouse and stock_status. A product whose price has changed has specs.price_history, oldest
    first: each entry is a price and the moment it held until; the current price holds since the
    last one.
    """
    return require(ctx, m.Product, args.product_id, "product_id")


# -- Customers ---------------------------------------------------------------------------------------
class SearchCustomersArgs(PageArgs):
    query: Text | None = Field(default=None, description=f"Words to find in the id, name, email or phone {QUERY_WORDS}")
    email: Text | None = Field(default=None, description="Only the customer with exactly this email "
                                                         "(case-insensitive).")
    loyalty_tier: LoyaltyTier | None = Field(default=None, description="Only customers of this loyalty tier.")


@tool(read_only=True)
def search_customers(ctx: ToolContext, args: SearchCustomersArgs) -> dict[str, Any]:
    """Find customers by name, email, phone or loyalty tier.

    Returns a page of customers (id, name, email, phone, loyalty_tier, created_at, order_count),
    ordered by name. Different customers can share a name: tell them apart by email and orders
    before acting on an account.
    """
    query = (Query().text(("id", "name", "email", "phone"), args.query).eq("loyalty_tier", args.loyalty_tier)
             .add_if(args.email is not None, "email = ? COLLATE NOCASE", args.email))

    keys = ("id", "name", "email", "phone", "loyalty_tier", "created_at")
    found = page(ctx, m.Customer, query, args, "name, id", lambda r: _pick(r, keys), {"addresses": "NULL"})
    ids = [row["id"] for row in found["results"]]
    orders = dict(ctx.conn.execute(f"SELECT customer_id, count(*) FROM {db.table(m.Order)} WHERE customer_id IN "
                                   f"({', '.join('?' * len(ids))}) GROUP BY customer_id", ids).fetchall())
    for row in found["results"]:
        row["order_count"] = orders.get(row["id"], 0)
    return found


# -- Orders, payments, shipments ---------------------------------------------------------------------
class SearchOrdersArgs(PageArgs):
    customer_id: Id | None = Field(default=None, description="Only this customer's orders, e.g. 'cust-0042'.")
    status: OrderStatus | None = Field(default=None, description="Only orders in this status.")
    product_id: Id | None = Field(default=None, description="Only orders with a line for this product (SKU).")
    created_after: DateStr | None = Field(default=None, description="Placed on or after this day "
                                                                    "(YYYY-MM-DD).")
    created_before: DateStr | None = Field(default=None, description="Placed on or before this day "
                                                                     "(YYYY-MM-DD).")
    min_total: float | None = Field(default=None, ge=0, description="Lowest order total in dollars.")
    max_total: float | None = Field(default=None, ge=0, description="Highest order total in dollars.")


@tool(read_only=True)
def search_orders(ctx: ToolContext, args: SearchOrdersArgs) -> dict[str, Any]:
    """Search orders by customer, status, product, date range and total.

    Returns a page of summaries (id, customer_id, status, total, shipping_method, replaces_order_id,
    created_at), newest first; replaces_order_id is set on a no-charge replacement order (the order it
    replaces). Use get_order_details for the lines, payment, shipment, refunds and tickets.
    """
    _check_id(ctx, m.Customer, args.customer_id, "customer_id")
    _check_id(ctx, m.Product, args.product_id, "product_id")
    query = (Query().eq("customer_id", args.customer_id).eq("status", args.status)
             .add_if(args.product_id is not None,
                     f"id IN (SELECT order_id FROM {db.table(m.OrderLine)} WHERE product_id = ?)",
                     args.product_id)
             .between_dates(ctx, "created_at", args.created_after, args.created_before,
                            ("created_after", "created_before"))
             .add_if(args.min_total is not None, "total >= ?", args.min_total)
             .add_if(args.max_total is not None, "total <= ?", args.max_total))
    keys = ("id", "customer_id", "status", "total", "shipping_method", "replaces_order_id", "created_at")
    return page(ctx, m.Order, query, args, "created_at DESC, id", lambda r: _pick(r, keys))


class GetOrderDetailsArgs(Args):
    order_id: Id = Field(description="The order id, e.g. 'ord-250904-117'.")


@tool(read_only=True)
def get_order_details(ctx: ToolContext, args: GetOrderDetailsArgs) -> dict[str, Any]:
    """Get an order with everything attached to it.

    Returns the order (status, subtotal, discount, shipping_cost, total, shipping method and
    address, build, replaces_order_id, dates) with its lines (product name and category, quantity,
    unit_price, line_total), customer, payments (every payment taken for it, in the order they were
    processed: an order paid two ways has two) and payment (the first of them), shipment (the first
    parcel, with tracking events, or null if not shipped) and more_shipments (a split order's later
    parcels, in the order they shipped; empty for one parcel; each parcel of a split order lists the ids
    of the lines it carries, and lines is null on a parcel that carries the whole order), refunds against any of its payments,
    the support tickets about it and replacement_orders (the no-charge orders that replace units of it). A no-charge
    replacement order (replaces_order_id set) is $0 and has no payment (null), so nothing on it can be
    refunded.
    """
    order = require(ctx, m.Order, args.order_id, "order_id")
    lines = ctx.conn.execute(
        "SELECT l.id, l.product_id, p.name, p.category, l.quantity, l.unit_price "
        f"FROM {db.table(m.OrderLine)} l JOIN {db.table(m.Product)} p ON p.id = l.product_id "
        "WHERE l.order_id = ? ORDER BY l.id", (order["id"],),
    ).fetchall()
    customer = require(ctx, m.Customer, order["customer_id"], "order_id")
    payments = fetch_rows(ctx, m.Payment, "WHERE order_id = ? ORDER BY processed_at, id", (order["id"],))
    shipments = fetch_rows(ctx, m.Shipment, "WHERE order_id = ? ORDER BY shipped_at, id", (order["id"],))
    refunds = fetch_rows(ctx, m.Refund, f"WHERE payment_id IN ({', '.join('?' for _ in payments)}) "
                         "ORDER BY created_at, id", tuple(p["id"] for p in payments)) if payments else []
    tickets = fetch_rows(ctx, m.SupportTicket, "WHERE order_id = ? ORDER BY created_at, id", (order["id"],))
    replacements = fetch_rows(ctx, m.Order, "WHERE replaces_order_id = ? ORDER BY created_at, id", (order["id"],))
    return {
        **order,
        "lines": [{"id": i, "product_id": pid, "product_name": name, "category": cat, "quantity": qty,
                   "unit_price": unit, "line_total": money(unit * qty)}
                  for i, pid, name, cat, qty, unit in lines],
        "customer": _pick(customer, ("id", "name", "email", "loyalty_tier")),
        "payments": payments,
        "payment": payments[0] if payments else None,
        "shipment": shipments[0] if shipments else None,
        "more_shipments": shipments[1:],
        "refunds": refunds,
        "tickets": [_pick(t, ("id", "type", "status", "priority", "subject", "created_at")) for t in tickets],
        "replacement_orders": [_pick(o, ("id", "status", "created_at")) for o in replacements],
    }


class SearchPaymentsArgs(PageArgs):
    order_id: Id | None = Field(default=None, description="Only the payment of this order.")
    status: PaymentStatus | None = Field(default=None, description="Only payments in this status.")
    method: PaymentMethod | None = Field(default=None, description="Only payments made this way.")
    transaction_id: Text | None = Field(default=None, description="Only the payment with this processor "
                                                                  "transaction id (exact), e.g. 'txn_3f09…'.")
    processed_after: DateStr | None = Field(default=None, description="Processed on or after this day "
                                                                      "(YYYY-MM-DD).")
    processed_before: DateStr | None = Field(default=None, description="Processed on or before this day "
                                                                       "(YYYY-MM-DD).")
    min_amount: float | None = Field(default=None, ge=0, description="Lowest amount in dollars.")
    max_amount: float | None = Field(default=None, ge=0, description="Highest amount in dollars.")


@tool(read_only=True)
def search_payments(ctx: ToolContext, args: SearchPaymentsArgs) -> dict[str, Any]:
    """Search payments by order, status, method, transaction id, date range and amount.

    Returns a page of full payment records, newest first, each with refunded_amount: the sum of
    its approved and processed refunds (what has already gone back to the customer).
    """
    _check_id(ctx, m.Order, args.order_id, "order_id")
    query = (Query().eq("order_id", args.order_id).eq("status", args.status).eq("method", args.method)
             .eq("transaction_id", args.transaction_id)
             .between_dates(ctx, "processed_at", args.processed_after, args.processed_before,
                            ("processed_after", "processed_before"))
             .add_if(args.min_amount is not None, "amount >= ?", args.min_amount)
             .add_if(args.max_amount is not None, "amount <= ?", args.max_amount))
    return page(ctx, m.Payment, query, args, "processed_at DESC, id",
                lambda r: {**r, "refunded_amount": refunded_total(ctx, r["id"])})


class SearchShipmentsArgs(PageArgs):
    order_id: Id | None = Field(default=None, description="Only shipments of this order.")
    carrier: Carrier | None = Field(default=None, description="Only shipments with this carrier service.")
    status: ShipmentStatus | None = Field(default=None, description="Only shipments in this status.")
    tracking_number: Text | None = Field(default=None, description="Only the shipment with this tracking "
                                                                   "number (exact).")
    shipped_after: DateStr | None = Field(default=None, description="Shipped on or after this day "
                                                                    "(YYYY-MM-DD).")
    shipped_before: DateStr | None = Field(default=None, description="Shipped on or before this day "
                                                                     "(YYYY-MM-DD).")
    late_only: bool = Field(default=False, description="Only late shipments: delivered after their eta, or "
                                                       "not delivered and the eta has passed.")


@tool(read_only=True)
def search_shipments(ctx: ToolContext, args: SearchShipmentsArgs) -> dict[str, Any]:
    """Search shipments by order, carrier, status, tracking number, ship date and lateness.

    Returns a page of full shipment records (with the carrier's event timeline and, for a parcel of a
    split order, the ids of the order lines it carries; null when it carries the whole order), newest first,
    each with late: true if delivered after its eta or still undelivered past it, null when the
    eta is unknown (then compare the dates with the carrier's SLA yourself).
    """
    _check_id(ctx, m.Order, args.order_id, "order_id")
    now = db.encode_datetime(ctx.world.now)
    query = (Query().eq("order_id", args.order_id).eq("carrier", args.carrier).eq("status", args.status)
             .eq("tracking_number", args.tracking_number)
             .between_dates(ctx, "shipped_at", args.shipped_after, args.shipped_before,
                            ("shipped_after", "shipped_before"))
             .add_if(args.late_only, LATE_SQL, now))

    def shape(row: dict[str, Any]) -> dict[str, Any]:
        late = None if row["eta"] is None else bool(ctx.conn.execute(
            f"SELECT {LATE_SQL} FROM {db.table(m.Shipment)} WHERE id = ?", (now, row["id"])).fetchone()[0])
        return {**row, "late": late}

    return page(ctx, m.Shipment, query, args, "shipped_at DESC, id", shape)


# -- Tickets -----------------------------------------------------------------------------------------
class SearchTicketsArgs(PageArgs):
    query: Text | None = Field(default=None, description=f"Words to find in the id, subject or body {QUERY_WORDS}")
    customer_id: Id | None = Field(default=None, description="Only this customer's tickets.")
    order_id: Id | None = Field(default=None, description="Only tickets about this order.")
    type: TicketType | None = Field(default=None, description="Only tickets of this type.")
    status: TicketStatus | None = Field(default=None, description="Only tickets in this status.")
    priority: Priority | None = Field(default=None, description="Only tickets of this priority.")
    assignee_id: Id | None = Field(default=None, description="Only tickets assigned to this employee.")
    unassigned_only: bool = Field(default=False, description="Only tickets nobody is assigned to "
                                                             "(not with assignee_id).")
    created_after: DateStr | None = Field(default=None, description="Opened on or after this day "
                                                                    "(YYYY-MM-DD).")
    created_before: DateStr | None = Field(default=None, description="Opened on or before this day "
                                                                     "(YYYY-MM-DD).")


@tool(read_only=True)
def search_tickets(ctx: ToolContext, args: SearchTicketsArgs) -> dict[str, Any]:
    """Search support tickets by words, customer, order, type, status, priority, assignee and date.

    Returns a page of ticket summaries without the body (id, customer_id, order_id, type,
    channel, priority, status, subject, assignee_id, created_at, updated_at), newest first.
    Use get_customer_ticket_history for full text, resolutions and escalations.
    """
    if args.unassigned_only and args.assignee_id is not None:
        raise ToolError("invalid_argument", "give assignee_id or unassigned_only, not both",
                        "unassigned_only")
    _check_id(ctx, m.Customer, args.customer_id, "customer_id")
    _check_id(ctx, m.Order, args.order_id, "order_id")
    _check_id(ctx, m.Employee, args.assignee_id, "assignee_id")
    query = (Query().text(("id", "subject", "body"), args.query).eq("customer_id", args.customer_id)
             .eq("order_id", args.order_id).eq("type", args.type).eq("status", args.status)
             .eq("priority", args.priority).eq("assignee_id", args.assignee_id)
             .add_if(args.unassigned_only, "assignee_id IS NULL")
             .between_dates(ctx, "created_at", args.created_after, args.created_before,
                            ("created_after", "created_before")))
    keys = ("id", "customer_id", "order_id", "type", "channel", "priority", "status", "subject",
            "assignee_id", "created_at", "updated_at")
    return page(ctx, m.SupportTicket, query, args, "created_at DESC, id", lambda r: _pick(r, keys))


class CustomerTicketHistoryArgs(PageArgs):
    customer_id: Id = Field(description="The customer id, e.g. 'cust-0042'.")


@tool(read_only=True)
def get_customer_ticket_history(ctx: ToolContext, args: CustomerTicketHistoryArgs) -> dict[str, Any]:
    """Get a customer's support history: every ticket in full, newest first, paged.

    Returns the customer (id, name, email, loyalty_tier) and a page of their tickets with body,
    each with its resolutions (outcome, details, linked refund) and escalations (type,
    destination, notes, resolved_at).
    """
    customer = require(ctx, m.Customer, args.customer_id, "customer_id")

    def shape(ticket: dict[str, Any]) -> dict[str, Any]:
        where = ("WHERE ticket_id = ? ORDER BY created_at, id", (ticket["id"],))
        return {**ticket, "resolutions": fetch_rows(ctx, m.Resolution, *where),
                "escalations": fetch_rows(ctx, m.Escalation, *where)}

    history = page(ctx, m.SupportTicket, Query().eq("customer_id", customer["id"]), args,
                   "created_at DESC, id", shape)
    return {"customer": _pick(customer, ("id", "name", "email", "loyalty_tier")), **history}


# -- Staff, builds, knowledge, Slack -----------------------------------------------------------------
class SearchEmployeesArgs(PageArgs):
    query: Text | None = Field(default=None, description=f"Words to find in the id, name, email or title {QUERY_WORDS}")
    department: Department | None = Field(default=None, description="Only employees of this department.")
    title: Title | None = Field(default=None, description="Only employees with this job title.")


@tool(read_only=True)
def search_employees(ctx: ToolContext, args: SearchEmployeesArgs) -> dict[str, Any]:
    """Find employees by name, email, title or department.

    Returns a page of staff (id, name, email, department, title, manager_id, refund_limit in
    dollars, can_approve_exceptions), ordered by id (heads and leads first). Permissions come
    from the title: refunds above your refund_limit need someone whose limit covers them.
    """
    query = (Query().text(("id", "name", "email", "title"), args.query).eq("department", args.department)
             .eq("title", args.title))
    return page(ctx, m.Employee, query, args, "id")


class SearchBuildsArgs(PageArgs):
    query: Text | None = Field(default=None, description=f"Words to find in the build id or name {QUERY_WORDS}")
    customer_id: Id | None = Field(default=None, description="Only this customer's builds.")
    product_id: Id | None = Field(default=None, description="Only builds that contain this product (SKU).")
    owner_type: OwnerType | None = Field(default=None, description="Only customer builds or internal "
                                                                   "reference builds.")


@tool(read_only=True)
def search_builds(ctx: ToolContext, args: SearchBuildsArgs) -> dict[str, Any]:
    """Search PC builds (customer configurations and internal reference builds).

    Returns a page of builds (id, name, customer_id, owner_type, created_at) with their
    components (product_id, name, category, quantity), newest first. Check a build with
    validate_build_compatibility.
    """
    _check_id(ctx, m.Customer, args.customer_id, "customer_id")
    _check_id(ctx, m.Product, args.product_id, "product_id")
    query = (Query().text(("id", "name"), args.query).eq("customer_id", args.customer_id)
             .eq("owner_type", args.owner_type)
             .add_if(args.product_id is not None,
                     f"id IN (SELECT build_id FROM {db.table(m.BuildComponent)} WHERE product_id = ?)",
                     args.product_id))

    def shape(build: dict[str, Any]) -> dict[str, Any]:
        parts = [{"product_id": p["id"], **_pick(p, ("name", "category", "quantity"))}
                 for p in _components(ctx, build["id"])]
        return {**build, "components": parts}

    return page(ctx, m.Build, query, args, "created_at DESC, id", shape)


class SearchKnowledgeBaseArgs(PageArgs):
    query: Text | None = Field(default=None, description=f"Words to find in the id, title, body or tags {QUERY_WORDS}")
    tag: Text | None = Field(default=None, description="Only articles with this tag (exact, "
                                                       "case-insensitive), e.g. 'refunds'.")
    include_deprecated: bool = Field(default=True, description="Include deprecated (superseded) versions; "
                                                               "set false to see current articles only.")


@tool(read_only=True)
def search_knowledge_base(ctx: ToolContext, args: SearchKnowledgeBaseArgs) -> dict[str, Any]:
    """Search the knowledge base of policies and how-tos.

    Returns a page of articles (id, title, version, is_deprecated, updated_at, tags, body),
    current articles first, then those whose title holds more of the query's words, then by
    title. Deprecated articles are old policy kept for reference: never apply one when a
    current version exists.
    """
    query = (Query().text(("id", "title", "body", "tags"), args.query)
             .add_if(args.tag is not None,
                     "EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ? COLLATE NOCASE)", args.tag)
             .add_if(not args.include_deprecated, "is_deprecated = 0"))
    keys = ("id", "title", "version", "is_deprecated", "updated_at", "tags", "body")
    ranked, words = query.ranked_by("title")
    return page(ctx, m.KnowledgeBaseArticle, query, args, f"is_deprecated, {ranked}title, id",
                lambda r: _pick(r, keys), order_params=words)


class SearchSlackMessagesArgs(PageArgs):
    query: Text | None = Field(default=None, description=f"Words to find in the message id or text {QUERY_WORDS}")
    channel: Text | None = Field(default=None, description="Only this channel, by name with or without '#', "
                                                           "e.g. 'policy-discussion'.")
    author_id: Id | None = Field(default=None, description="Only messages by this employee.")
    thread_parent_id: Id | None = Field(default=None, description="Only the replies to this message.")
    posted_after: DateStr | None = Field(default=None, description="Posted on or after this day "
                                                                   "(YYYY-MM-DD).")
    posted_before: DateStr | None = Field(default=None, description="Posted on or before this day "
                                                                    "(YYYY-MM-DD).")


@tool(read_only=True)
def search_slack_messages(ctx: ToolContext, args: SearchSlackMessagesArgs) -> dict[str, Any]:
    """Search internal Slack messages by words, channel, author, thread and date.

    Returns a page of messages (id, channel name, author_id, author_name, text, ts,
    thread_parent_id, reply_count, reactions), newest first. Some policy exceptions are
    announced only here; Slack also holds outdated and off-topic chatter.
    """
    channel_id = None
    if args.channel is not None:
        name = "#" + args.channel.strip().lstrip("#")
        found = ctx.conn.execute(f"SELECT id FROM {db.table(m.SlackChannel)} WHERE name = ? COLLATE NOCASE",
                                 (name,)).fetchone()
        if found is None:
            names = [r[0] for r in ctx.conn.execute(
                f"SELECT name FROM {db.table(m.SlackChannel)} ORDER BY name")]
            raise ToolError("not_found", f"no channel {name!r}; channels: {', '.join(names)}", "channel")
        channel_id = found[0]
    _check_id(ctx, m.Employee, args.author_id, "author_id")
    _check_id(ctx, m.SlackMessage, args.thread_parent_id, "thread_parent_id")
    query = (Query().text(("id", "text"), args.query).eq("channel_id", channel_id).eq("author_id", args.author_id)
             .eq("thread_parent_id", args.thread_parent_id)
             .between_dates(ctx, "ts", args.posted_after, args.posted_before,
                            ("posted_after", "posted_before")))

    found = page(ctx, m.SlackMessage, query, args, "ts DESC, id DESC")
    ids = [msg["id"] for msg in found["results"]]
    marks = ",".join("?" * len(ids))
    channels = dict(ctx.conn.execute(f"SELECT id, name FROM {db.table(m.SlackChannel)}"))
    authors = dict(ctx.conn.execute(f"SELECT id, name FROM {db.table(m.Employee)} WHERE id IN "
                                    f"(SELECT author_id FROM {db.table(m.SlackMessage)} WHERE id IN ({marks}))", ids))
    replies = dict(ctx.conn.execute(f"SELECT thread_parent_id, count(*) FROM {db.table(m.SlackMessage)} "
                                    f"WHERE thread_parent_id IN ({marks}) GROUP BY thread_parent_id", ids))
    found["results"] = [
        {"id": msg["id"], "channel": channels[msg["channel_id"]], "author_id": msg["author_id"],
         "author_name": authors.get(msg["author_id"]), "text": msg["text"], "ts": msg["ts"],
         "thread_parent_id": msg["thread_parent_id"], "reply_count": replies.get(msg["id"], 0),
         "reactions": msg["reactions"]}
        for msg in found["results"]
    ]
    return found


# -- Calculators -------------------------------------------------------------------------------------
class ValidateBuildArgs(Args):
    product_ids: list[Id] | None = Field(default=None, min_length=1, max_length=20,
                                         description="The parts to check, 1-20 product ids (SKUs); repeat "
                                                     "an id for two of it. Give this or build_id, not both.")
    build_id: Id | None = Field(default=None, description="A saved build to check, e.g. 'build-0003'. "
                                                          "Give this or product_ids, not both.")


@tool(read_only=True)
def validate_build_compatibility(ctx: ToolContext, args: ValidateBuildArgs) -> dict[str, Any]:
    """Check whether a set of parts (or a saved build) works together.

    Checks CPU/motherboard socket, memory type and slot count, cooler socket and clearance,
    case form factor, GPU length, radiator size, SFX PSU and PSU wattage (CPU TDP + GPU board
    power + 100 W, x 1.3). Returns compatible, every problem found (rule, part ids, message),
    required_psu_w (null without both a CPU and a GPU) and the parts checked.
    """
    if (args.product_ids is None) == (args.build_id is None):
        raise ToolError("invalid_argument", "give exactly one of product_ids or build_id", "product_ids")
    if args.build_id is not None:
        parts = _components(ctx, require(ctx, m.Build, args.build_id, "build_id")["id"])
    else:
        counts = Counter(args.product_ids)
        parts = [{**require(ctx, m.Product, pid, "product_ids"), "quantity": n} for pid, n in counts.items()]
    cpu = next((p for p in parts if p["category"] == "cpu"), None)
    gpu = next((p for p in parts if p["category"] == "gpu"), None)
    problems = build_problems(parts)
    return {
        "compatible": not problems,
        "problems": problems,
        "required_psu_w": required_psu_watts(cpu["specs"]["tdp_w"], gpu["specs"]["board_power_w"])
        if cpu and gpu else None,
        "parts": [_pick(p, ("id", "name", "category", "quantity")) for p in parts],
    }


class PriceItem(Args):
    product_id: Id = Field(description="The product id (SKU).")
    quantity: int = Field(default=1, ge=1, le=20, description="How many (1-20, default 1).")


class CalculatePriceArgs(Args):
    items: list[PriceItem] = Field(min_length=1, max_length=30,
                                   description="The products to price, 1-30 items of {product_id, quantity}.")
    customer_id: Id | None = Field(default=None, description="Price for this customer's loyalty tier. Give "
                                                             "this or loyalty_tier, not both.")
    loyalty_tier: LoyaltyTier | None = Field(default=None, description="Price for this loyalty tier (default "
                                                                       "'none' when no customer is given).")
    shipping_method: Carrier = Field(description="The carrier service to price shipping for.")


@tool(read_only=True)
def calculate_price(ctx: ToolContext, args: CalculatePriceArgs) -> dict[str, Any]:
    """Quote what an order would cost today at current catalogue prices.

    Applies the loyalty discount ({loyalty_discounts}) to merchandise only, then
    shipping: ground (usps_ground, ups_ground) is free at {free_ground_threshold}+ of merchandise after discount and
    always for {free_ground_tiers}; express services are never free. Returns subtotal, loyalty_tier,
    discount_pct, discount, shipping_cost, total and the priced lines, in dollars.
    """
    if args.customer_id is not None and args.loyalty_tier is not None:
        raise ToolError("invalid_argument", "give customer_id or loyalty_tier, not both", "loyalty_tier")
    tier = args.loyalty_tier or "none"
    if args.customer_id is not None:
        tier = require(ctx, m.Customer, args.customer_id, "customer_id")["loyalty_tier"]
    lines = []
    for n, item in enumerate(args.items):
        product = require(ctx, m.Product, item.product_id, f"items.{n}.product_id")
        lines.append({"product_id": product["id"], "name": product["name"], "quantity": item.quantity,
                      "unit_price": product["price"], "line_total": money(product["price"] * item.quantity)})
    subtotal = money(sum(line["line_total"] for line in lines))
    pct = ctx.policy.loyalty_discount_pct[tier]
    discount = money(subtotal * pct / 100)
    shipping = shipping_price(ctx.policy, args.shipping_method, subtotal - discount, tier)
    return {"subtotal": subtotal, "loyalty_tier": tier, "discount_pct": pct, "discount": discount,
            "shipping_method": args.shipping_method, "shipping_cost": shipping,
            "total": money(subtotal - discount + shipping), "lines": lines}


class CheckWarrantyArgs(Args):
    order_id: Id = Field(description="The order the product was bought on.")
    product_id: Id = Field(description="The product (SKU) on that order to check.")


@tool(read_only=True)
def check_warranty_status(ctx: ToolContext, args: CheckWarrantyArgs) -> dict[str, Any]:
    """Check whether a product bought on an order is still under warranty today.

    Warranties run a number of months by category, counted from the order date (not delivery);
    the item is covered up to and including expires_on. A unit sent on a no-charge replacement
    order keeps the warranty of the purchase it replaces: its dates count from that order
    (purchase_order_id). Returns the dates, in_warranty, days_remaining and the exclusions that
    void coverage (physical or liquid damage, unauthorised modification, missing serial).
    """
    order = require(ctx, m.Order, args.order_id, "order_id")
    product = require(ctx, m.Product, args.product_id, "product_id")
    on_order = ctx.conn.execute(  # "+": look the order's few lines up, not every line of the product
        f"SELECT 1 FROM {db.table(m.OrderLine)} WHERE order_id = ? AND +product_id = ?",
        (order["id"], product["id"]),
    ).fetchone()
    if on_order is None:
        raise ToolError("not_found", f"product {product['id']!r} is not on order {order['id']!r}",
                        "product_id")
    purchase = order
    while purchase["replaces_order_id"]:  # a replacement keeps the warranty of the purchase it replaces
        purchase = require(ctx, m.Order, purchase["replaces_order_id"], "order_id")
    ordered = local(ctx, purchase["created_at"])
    if ordered is None:
        raise ToolError("invalid_request", f"order {purchase['id']} has no order date")
    bought = ordered.date()
    expires = add_months(bought, product["warranty_months"])
    today = ctx.world.now.date()
    covered = today <= expires
    return {"order_id": order["id"], "product_id": product["id"], "product_name": product["name"],
            "category": product["category"], "purchase_order_id": purchase["id"], "purchase_date": bought.isoformat(),
            "warranty_months": product["warranty_months"], "expires_on": expires.isoformat(),
            "in_warranty": covered, "days_remaining": (expires - today).days if covered else 0,
            "exclusions": list(ctx.policy.warranty_exclusions)}
