"""The 7 write tools: refunds, escalations, resolutions, status changes and Slack posts.

Every write acts as the context's employee (``ctx.actor_id``), is stamped with the world's
``now`` and enforces the company policy in ``seeds/policy.yaml`` (the knowledge base states the
same rules in prose): refund windows, approval limits, escalation routes and status transitions.
A rejected call changes nothing and says what to do instead.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from typing import Any

from pydantic import Field
from sqlmodel import SQLModel

from corecraft.tools.common import (
    COUNTED_REFUNDS,
    Id,
    fetch_rows,
    next_id,
    refunded_total,
    require,
)
from corecraft.tools.registry import Args, ToolContext, ToolError, tool
from corecraft.world import db, models
from corecraft.world.models import (
    Customer,
    Employee,
    Escalation,
    Order,
    OrderLine,
    Payment,
    Product,
    Refund,
    Resolution,
    Shipment,
    SlackChannel,
    SlackMessage,
    SupportTicket,
)
from corecraft.world.rules import add_months, money
from corecraft.world.vocab import (
    Department,
    EscalationType,
    OrderStatus,
    PaymentStatus,
    Priority,
    RefundReason,
    TicketStatus,
    TicketType,
)
from corecraft.world.vocab import ResolutionOutcome as Outcome

REFUNDABLE_PAYMENTS = ("captured", "partially_refunded")
"""Payment statuses that hold money which can be refunded."""
LINE_REASONS = ("return", "doa", "defective")
"""Reasons that refund specific items, so the refund must name the order lines."""
NEVER_SHIPPED = ("pending", "paid", "backorder")
"""Statuses of orders that never shipped: their refunds are cancellations, not returns."""
HALF_CENT = 0.005


# -- shared checks ----------------------------------------------------------------------
def _actor(ctx: ToolContext) -> dict[str, Any]:
    return require(ctx, Employee, ctx.actor_id, "actor")


def _day(iso: str) -> date:
    """The calendar day of a decoded timestamp (decoded rows are already in the world's local time)."""
    return date.fromisoformat(iso[:10])


def _ticket_covers(ticket: dict[str, Any], order: dict[str, Any], field: str) -> None:
    """Refuse money on ``order`` recorded against ``ticket`` unless the ticket is about that order, or about no one
    order (a chat or email spanning several) of the same customer."""
    if ticket["order_id"] == order["id"]:
        return
    if ticket["order_id"] is not None:
        raise ToolError("invalid_argument", f"ticket {ticket['id']} is about order {ticket['order_id']}, but the "
                        f"money is on order {order['id']}", field)
    if ticket["customer_id"] != order["customer_id"]:
        raise ToolError("invalid_argument", f"ticket {ticket['id']} is {ticket['customer_id']}'s, but order "
                        f"{order['id']} is {order['customer_id']}'s", field)


def _open_ticket(ctx: ToolContext, ticket_id: str) -> dict[str, Any]:
    """A ticket that is not closed (closed is final: a customer writing again gets a new ticket)."""
    ticket = require(ctx, SupportTicket, ticket_id, "ticket_id")
    if ticket["status"] == "closed":
        raise ToolError("conflict", f"ticket {ticket_id} is closed, which is final", "ticket_id")
    return ticket


def _check_transition(what: str, current: str, target: str, allowed: dict[str, list[str]]) -> None:
    if current == target:
        raise ToolError("invalid_transition", f"{what} is already {target!r}", "status")
    targets = allowed[current]
    if target not in targets:
        options = f"allowed: {', '.join(targets)}" if targets else f"{current!r} is final"
        raise ToolError("invalid_transition", f"{what} cannot go from {current!r} to {target!r} ({options})",
                        "status")


def _update(ctx: ToolContext, model: type[SQLModel], row_id: str, values: dict[str, Any]) -> dict[str, Any]:
    """Set columns of one row (given as Python values) and return the row as it is now."""
    columns = ", ".join(f"{name} = ?" for name in values)
    params = [db.encode_value(model, name, value) for name, value in values.items()]
    ctx.conn.execute(f"UPDATE {db.table(model)} SET {columns} WHERE id = ?", (*params, row_id))
    return require(ctx, model, row_id, "id")


# -- create_refund ----------------------------------------------------------------------
class RefundLine(Args):
    """One order line, and how many of its units, a refund covers."""

    order_line_id: Id = Field(description="Order line id, e.g. 'ord-250904-117-L2' (see get_order_details).")
    quantity: int = Field(ge=1, le=1000, description="Units of that line being refunded (at least 1).")


class CreateRefundArgs(Args):
    payment_id: Id = Field(description="The captured payment to refund, e.g. 'pay-250904-117'.")
    amount: float = Field(gt=0, le=100_000, multiple_of=0.01,
                          description="Refund amount in US dollars with at most two decimals, e.g. 24.99.")
    reason: RefundReason = Field(description="The refund reason code (see the Refund Reason Codes article).")
    lines: list[RefundLine] = Field(
        default_factory=list, max_length=50,
        description="The order lines refunded, each listed once. Required for reasons return, doa and "
                    "defective; may be empty for shipping_delay, price_adjustment, duplicate_charge, goodwill.",
    )
    ticket_id: Id | None = Field(default=None, description="The support ticket this refund answers, if any: one "
                                                           "about this order, or about no one order of its customer.")
    item_received: bool = Field(default=False, description="True when the refunded items are already back at the "
                                                           "warehouse (returns logged them): no return label is sent.")


def _refunded_units(ctx: ToolContext, order_id: str) -> dict[str, int]:
    """Units already refunded per order line, over every payment of the order."""
    done: dict[str, int] = {}
    # "+": find the refunds through the order's payments, not through every refund with the status.
    clause = (f"WHERE +status IN (?, ?) AND payment_id IN (SELECT id FROM {db.table(Payment)} "
              "WHERE order_id = ?)")
    for refund in fetch_rows(ctx, Refund, clause, (*COUNTED_REFUNDS, order_id)):
        for line in refund["lines"]:
            done[line["order_line_id"]] = done.get(line["order_line_id"], 0) + line["quantity"]
    return done


def _refund_lines(ctx: ToolContext, args: CreateRefundArgs, order: dict[str, Any]) -> list[dict[str, Any]]:
    """The requested order lines with their products, checked against the order and earlier refunds."""
    if args.reason in LINE_REASONS and not args.lines:
        raise ToolError("invalid_argument", f"reason {args.reason!r} refunds specific items: list the "
                        "order lines (order_line_id and quantity) being refunded", "lines")
    ids = [line.order_line_id for line in args.lines]
    if len(set(ids)) != len(ids):
        raise ToolError("invalid_argument", "list each order line once, with all its units in one quantity",
                        "lines")
    done = _refunded_units(ctx, order["id"])
    out = []
    for k, wanted in enumerate(args.lines):
        field = f"lines.{k}.order_line_id"
        line = require(ctx, OrderLine, wanted.order_line_id, field)
        if line["order_id"] != order["id"]:
            raise ToolError("invalid_argument", f"order line {line['id']} belongs to {line['order_id']}, "
                            f"not to {order['id']} (the order of this payment)", field)
        left = line["quantity"] - done.get(line["id"], 0)
        if wanted.quantity > left:
            raise ToolError("policy_violation", f"order line {line['id']} has {line['quantity']} unit(s), "
                            f"{line['quantity'] - left} already refunded: at most {left} can be refunded",
                            f"lines.{k}.quantity")
        out.append({**line, "product": require(ctx, Product, line["product_id"], field)})
    return out


def _delivery_day(ctx: ToolContext, order: dict[str, Any]) -> tuple[date, str]:
    """The day the order was delivered (or its order date when no delivery is recorded), and which it is."""
    shipments = fetch_rows(ctx, Shipment, "WHERE order_id = ?", (order["id"],))
    delivered = [s["delivered_at"] for s in shipments if s["delivered_at"]]
    if delivered:
        return _day(max(delivered)), "delivery on"
    return _day(order["created_at"]), "the order date (no delivery recorded)"


def _window_waived(ctx: ToolContext, order: dict[str, Any], product: dict[str, Any]) -> bool:
    """Whether an active policy exception waives the return window for this product on this order."""
    ordered, today = _day(order["created_at"]), ctx.world.now.date()
    return any(
        "return_window" in exc.waives and (exc.brand, exc.category) == (product["brand"], product["category"])
        and exc.ordered_on_or_after <= ordered and today <= exc.valid_until
        for exc in ctx.policy.exceptions
    )


def _check_return(ctx: ToolContext, actor: dict[str, Any], order: dict[str, Any],
                  lines: list[dict[str, Any]]) -> None:
    """A return must fall inside the customer's tier window, unless the order never shipped (a cancellation),
    an active policy exception covers every line, or the actor's title can approve exceptions."""
    shipped = fetch_rows(ctx, Shipment, "WHERE order_id = ?", (order["id"],))
    if order["status"] in NEVER_SHIPPED or not shipped or actor["can_approve_exceptions"]:
        return
    tier = require(ctx, Customer, order["customer_id"], "payment_id")["loyalty_tier"]
    days = ctx.policy.return_window_days[tier]
    start, basis = _delivery_day(ctx, order)
    last = start + timedelta(days=days)
    outside = [ln["id"] for ln in lines if not _window_waived(ctx, order, ln["product"])]
    if ctx.world.now.date() > last and outside:
        raise ToolError(
            "policy_violation",
            f"return window closed for {', '.join(outside)}: {tier}-tier customers have {days} days from "
            f"{basis} {start.isoformat()} (last day {last.isoformat()}). An out-of-window return is a policy "
            "exception: escalate with type policy_exception (routed to leadership)", "reason")


def _check_reason(ctx: ToolContext, actor: dict[str, Any], args: CreateRefundArgs, order: dict[str, Any],
                  lines: list[dict[str, Any]]) -> None:
    """The permission, window and warranty rules of the refund's reason."""
    today, ordered = ctx.world.now.date(), _day(order["created_at"])
    if args.reason in ctx.policy.exception_reasons and not actor["can_approve_exceptions"]:
        raise ToolError("insufficient_permission", f"{args.reason} refunds need a title that can approve "
                        f"exceptions ({actor['title']} cannot): escalate with type policy_exception "
                        "(routed to leadership)", "reason")
    if args.reason in ctx.policy.window_limited_reasons:
        _check_return(ctx, actor, order, lines)
    elif args.reason == "doa":
        start, basis = _delivery_day(ctx, order)
        last = start + timedelta(days=ctx.policy.doa_window_days)
        if today > last:
            raise ToolError("policy_violation", f"DOA must be reported within {ctx.policy.doa_window_days} days "
                            f"of delivery; from {basis} {start.isoformat()} the last day was "
                            f"{last.isoformat()}. Treat it as a warranty claim (reason defective)", "reason")
    elif args.reason == "defective":
        for ln in lines:
            months = ln["product"]["warranty_months"]
            end = add_months(ordered, months)
            if today > end:
                raise ToolError("policy_violation", f"{ln['id']} ({ln['product']['category']}: {months}-month "
                                f"warranty from the order date {ordered.isoformat()}) was covered until "
                                f"{end.isoformat()} and is out of warranty", "reason")
    elif args.reason == "price_adjustment":
        last = ordered + timedelta(days=ctx.policy.price_adjustment_days)
        if today > last:
            raise ToolError("policy_violation", f"price adjustments are given only within "
                            f"{ctx.policy.price_adjustment_days} days of the order date {ordered.isoformat()} "
                            f"(last day {last.isoformat()})", "reason")
    elif args.reason == "shipping_delay" and args.amount > order["shipping_cost"] + HALF_CENT:
        raise ToolError("policy_violation", f"a shipping_delay refund is at most the shipping price paid on "
                        f"{order['id']}, ${order['shipping_cost']:.2f} (any extra gesture is a goodwill "
                        "refund)", "amount")


@tool(read_only=False)
def create_refund(ctx: ToolContext, args: CreateRefundArgs) -> dict[str, Any]:
    """Create a refund against a captured payment, approved by you (status approved); returns the refund and
    `remaining_refundable` on the payment. It does not change payment or order status: do that next with
    update_payment_status and update_order_status. Enforced: the amount must fit what is left of the
    payment and your title's refund limit (above it, escalate type insufficient_permission to billing);
    goodwill needs a title that can approve exceptions; return within the tier's window from delivery
    (not for never-shipped orders or items under an active policy exception; exception approvers may
    override), doa within {doa_window_days} days of delivery, defective within the warranty months from the order date,
    price_adjustment within {price_adjustment_days} days of the order date, shipping_delay at most the shipping paid.
    A return, doa or defective refund on a shipped order emails the customer a prepaid return label for
    its lines (`return_label` in the result says to whom), unless `item_received` says they are already back."""
    actor = _actor(ctx)
    payment = require(ctx, Payment, args.payment_id, "payment_id")
    if payment["status"] not in REFUNDABLE_PAYMENTS:
        raise ToolError("policy_violation", f"payment {payment['id']} is {payment['status']}: only captured "
                        "or partially_refunded payments can be refunded", "payment_id")
    order = require(ctx, Order, payment["order_id"], "payment_id")
    if args.ticket_id is not None:
        _ticket_covers(require(ctx, SupportTicket, args.ticket_id, "ticket_id"), order, "ticket_id")
    lines = _refund_lines(ctx, args, order)
    remaining = money(payment["amount"] - refunded_total(ctx, payment["id"]))
    if args.amount > remaining + HALF_CENT:
        raise ToolError("policy_violation", f"payment {payment['id']} (${payment['amount']:.2f}) has only "
                        f"${remaining:.2f} left to refund", "amount")
    _check_reason(ctx, actor, args, order, lines)
    if args.amount > actor["refund_limit"] + HALF_CENT:
        raise ToolError("insufficient_permission", f"${args.amount:.2f} is above your refund limit "
                        f"(${actor['refund_limit']:.2f} as {actor['title']}): do not create or split it; "
                        "escalate with type insufficient_permission (routed to billing)", "amount")
    refund_id = next_id(ctx, Refund, "ref")
    db.insert_many(ctx.conn, Refund, [{
        "id": refund_id, "payment_id": payment["id"], "ticket_id": args.ticket_id,
        "lines": [{"order_line_id": ln.order_line_id, "quantity": ln.quantity} for ln in args.lines],
        "amount": money(args.amount), "reason": args.reason, "status": "approved",
        "approved_by_id": actor["id"], "created_at": ctx.world.clock, "processed_at": None,
    }])
    result = {**require(ctx, Refund, refund_id, "id"), "remaining_refundable": money(remaining - args.amount)}
    if args.reason in LINE_REASONS and order["status"] not in NEVER_SHIPPED and not args.item_received:  # to come back
        customer = require(ctx, Customer, order["customer_id"], "payment_id")
        result["return_label"] = f"prepaid return label for the refunded lines emailed to {customer['email']}"
    return result


# -- create_escalation ------------------------------------------------------------------
class CreateEscalationArgs(Args):
    ticket_id: Id = Field(description="The ticket being escalated, e.g. 'tick-250911-003'.")
    type: EscalationType = Field(description="Why you cannot finish the ticket yourself (see Escalation "
                                             "Types and Routing).")
    destination: Department = Field(description="The department it goes to; each type has exactly one.")
    notes: str = Field(min_length=1, max_length=2000,
                       description="What you verified and what you are asking for. At most 60 words; must "
                                   "not contain the customer's email address or phone number.")


@tool(read_only=False)
def create_escalation(ctx: ToolContext, args: CreateEscalationArgs) -> dict[str, Any]:
    """Escalate a ticket to another department, created by you; returns the escalation. Each type goes to
    exactly one department (technical -> engineering, product_specialist -> product, policy_exception ->
    leadership, insufficient_permission -> billing); any other destination is rejected. Closed tickets
    cannot be escalated."""
    actor = _actor(ctx)
    ticket = _open_ticket(ctx, args.ticket_id)
    route = ctx.policy.escalation_routes[args.type]
    if args.destination != route:
        raise ToolError("policy_violation", f"{args.type} escalations are routed to {route}, not "
                        f"{args.destination}", "destination")
    escalation_id = next_id(ctx, Escalation, "esc")
    db.insert_many(ctx.conn, Escalation, [{
        "id": escalation_id, "ticket_id": ticket["id"], "type": args.type, "destination": args.destination,
        "notes": args.notes, "created_by_id": actor["id"], "created_at": ctx.world.clock, "resolved_at": None,
    }])
    return require(ctx, Escalation, escalation_id, "id")


# -- create_resolution ------------------------------------------------------------------
class CreateResolutionArgs(Args):
    ticket_id: Id = Field(description="The ticket being resolved, e.g. 'tick-250911-003'.")
    outcome: Outcome = Field(description="What was done for the customer.")
    details: str = Field(min_length=1, max_length=4000,
                         description="What was asked, checked and done. Must begin with the ticket id in "
                                     "square brackets, e.g. '[tick-250911-003] Refunded the GPU.'")
    refund_id: Id | None = Field(default=None, description="The refund this resolution records: required "
                                                           "for outcome refund_issued, not allowed otherwise.")


@tool(read_only=False)
def create_resolution(ctx: ToolContext, args: CreateResolutionArgs) -> dict[str, Any]:
    """Record how a ticket was resolved, by you; returns the resolution. Outcome refund_issued must link
    the refund made for this ticket's order (an approved or processed refund on one of its payments; a ticket
    about no one order takes a refund on any order of its customer);
    other outcomes link none. Closed tickets take no resolution. Record it before resolving the ticket."""
    actor = _actor(ctx)
    ticket = _open_ticket(ctx, args.ticket_id)
    if (args.outcome == "refund_issued") != (args.refund_id is not None):
        raise ToolError("invalid_argument", "outcome refund_issued needs refund_id (the refund you created), "
                        "and only that outcome links a refund", "refund_id")
    if args.refund_id is not None:
        refund = require(ctx, Refund, args.refund_id, "refund_id")
        payment = require(ctx, Payment, refund["payment_id"], "refund_id")
        _ticket_covers(ticket, require(ctx, Order, payment["order_id"], "refund_id"), "refund_id")
        if refund["status"] not in COUNTED_REFUNDS:
            raise ToolError("conflict", f"refund {refund['id']} is {refund['status']}; only an approved or "
                            "processed refund can be recorded as issued", "refund_id")
    resolution_id = next_id(ctx, Resolution, "res")
    db.insert_many(ctx.conn, Resolution, [{
        "id": resolution_id, "ticket_id": ticket["id"], "outcome": args.outcome,
        "resolved_by_id": actor["id"], "refund_id": args.refund_id, "details": args.details,
        "created_at": ctx.world.clock,
    }])
    return require(ctx, Resolution, resolution_id, "id")


# -- update_order_status ----------------------------------------------------------------
class UpdateOrderStatusArgs(Args):
    order_id: Id = Field(description="The order, e.g. 'ord-250904-117'.")
    status: OrderStatus = Field(description="The new order status.")


def _check_order_money(ctx: ToolContext, order: dict[str, Any], target: str) -> None:
    """Refund and cancellation statuses must agree with where the order's money is (a no-charge replacement
    order holds none: it cannot be refunded)."""
    order_id = order["id"]
    if order["replaces_order_id"] and target in ("refunded", "partially_refunded", "refund_requested"):
        raise ToolError("policy_violation", f"order {order_id} is a no-charge replacement for "
                        f"{order['replaces_order_id']}: nothing was paid on it, so nothing can be refunded. A refund "
                        f"for these items goes against the payment of {order['replaces_order_id']}", "status")
    payments = fetch_rows(ctx, Payment, "WHERE order_id = ? ORDER BY id", (order_id,))
    statuses = {p["status"] for p in payments}
    if target == "refunded":
        ok = "refunded" in statuses and not statuses & set(REFUNDABLE_PAYMENTS)
        need = "its payment refunded"
    elif target == "partially_refunded":
        ok = "partially_refunded" in statuses
        need = "a partially_refunded payment"
    elif target == "cancelled":
        ok = statuses <= {"pending", "failed", "refunded"}
        need = "no money held (payment pending, failed or refunded; refund a captured payment first)"
    else:
        return
    if not ok:
        now = "; ".join(f"payment {p['id']} is {p['status']}" for p in payments) or "it has no payment"
        raise ToolError("policy_violation", f"order {order_id} can be {target} only with {need}: {now}. "
                        "Update the payment status first", "status")


@tool(read_only=False)
def update_order_status(ctx: ToolContext, args: UpdateOrderStatusArgs) -> dict[str, Any]:
    """Change an order's status; returns the updated order. Only the transitions of the Order Status
    Transitions article are allowed (cancelled and refunded are final). refunded needs the payment
    refunded, partially_refunded a partially_refunded payment, and cancelled no money held (payment
    pending, failed or refunded): update the payment first. A no-charge replacement order (no payment)
    takes no refund status."""
    _actor(ctx)
    order = require(ctx, Order, args.order_id, "order_id")
    _check_transition(f"order {order['id']}", order["status"], args.status, ctx.policy.order_transitions)
    _check_order_money(ctx, order, args.status)
    return _update(ctx, Order, order["id"], {"status": args.status, "updated_at": ctx.world.clock})


# -- update_payment_status --------------------------------------------------------------
class UpdatePaymentStatusArgs(Args):
    payment_id: Id = Field(description="The payment, e.g. 'pay-250904-117'.")
    status: PaymentStatus = Field(description="The new payment status.")


@tool(read_only=False)
def update_payment_status(ctx: ToolContext, args: UpdatePaymentStatusArgs) -> dict[str, Any]:
    """Change a payment's status; returns the payment and `refunded_total` (its approved and processed
    refunds). Only the transitions of the Payment Status Transitions article are allowed (failed and
    refunded are final). refunded needs refunds totalling the whole payment, partially_refunded refunds
    above zero and below it: create the refund first."""
    _actor(ctx)
    payment = require(ctx, Payment, args.payment_id, "payment_id")
    _check_transition(f"payment {payment['id']}", payment["status"], args.status, ctx.policy.payment_transitions)
    refunded = refunded_total(ctx, payment["id"])
    whole = abs(refunded - payment["amount"]) <= 2 * HALF_CENT
    needs = {"refunded": (not whole, "total"),
             "partially_refunded": (whole or refunded <= 0, "are above $0.00 and below")}
    if args.status in needs and needs[args.status][0]:
        raise ToolError("policy_violation", f"payment {payment['id']} can be {args.status} only when its "
                        f"refunds {needs[args.status][1]} ${payment['amount']:.2f}; its approved and processed "
                        f"refunds total ${refunded:.2f}", "status")
    values: dict[str, Any] = {"status": args.status}
    if payment["status"] == "pending":
        values["processed_at"] = ctx.world.clock
    return {**_update(ctx, Payment, payment["id"], values), "refunded_total": refunded}


# -- update_ticket_status ---------------------------------------------------------------
class UpdateTicketStatusArgs(Args):
    ticket_id: Id = Field(description="The ticket, e.g. 'tick-250911-003'.")
    type: TicketType | None = Field(default=None, description="The corrected ticket type; omit to keep it.")
    status: TicketStatus | None = Field(default=None, description="The new status; omit to keep it.")
    priority: Priority | None = Field(default=None, description="The new priority; omit to keep it.")
    assignee_id: Id | None = Field(default=None, description="The employee to assign the ticket to, e.g. "
                                                             "'emp-011'; omit to keep the assignee.")


@tool(read_only=False)
def update_ticket_status(ctx: ToolContext, args: UpdateTicketStatusArgs) -> dict[str, Any]:
    """Change a ticket's status, priority, type and/or assignee (give at least one); returns the updated ticket.
    Only the transitions of the Ticket Status Transitions article are allowed; closed is final. A ticket
    can be set to resolved only after its resolution is recorded (create_resolution)."""
    _actor(ctx)
    if args.status is None and args.priority is None and args.type is None and args.assignee_id is None:
        raise ToolError("missing_argument", "give at least one of status, priority, type or assignee_id", "status")
    ticket = require(ctx, SupportTicket, args.ticket_id, "ticket_id")
    values: dict[str, Any] = {}
    if args.status is not None:
        _check_transition(f"ticket {ticket['id']}", ticket["status"], args.status, ctx.policy.ticket_transitions)
        values["status"] = args.status
    elif ticket["status"] == "closed":
        raise ToolError("invalid_transition", f"ticket {ticket['id']} is closed, which is final", "ticket_id")
    if args.status == "resolved" and not fetch_rows(ctx, Resolution, "WHERE ticket_id = ? LIMIT 1",
                                                    (ticket["id"],)):
        raise ToolError("policy_violation", f"record the resolution of {ticket['id']} with create_resolution "
                        "before setting it to resolved", "status")
    if args.priority is not None:
        values["priority"] = args.priority
    if args.type is not None:
        values["type"] = args.type
    if args.assignee_id is not None:
        values["assignee_id"] = require(ctx, Employee, args.assignee_id, "assignee_id")["id"]
    return _update(ctx, SupportTicket, ticket["id"], {**values, "updated_at": ctx.world.clock})


# -- post_slack_message -----------------------------------------------------------------
class PostSlackMessageArgs(Args):
    channel: str = Field(min_length=1, max_length=80,
                         description="Channel name, with or without '#', any case, e.g. '#escalations'.")
    text: str = Field(min_length=1, max_length=4000,
                      description="The message. Keep it under 280 characters. Posts in #escalations must "
                                  "begin with the ticket id in square brackets.")
    thread_parent_id: Id | None = Field(default=None, description="Reply in the thread of this message (in "
                                                                  "the same channel), e.g. 'msg-250902-1012'.")


@tool(read_only=False)
def post_slack_message(ctx: ToolContext, args: PostSlackMessageArgs) -> dict[str, Any]:
    """Post a message as you in a Slack channel you are a member of, optionally as a thread reply; returns
    the message with its channel name. Threads are one level deep: replying to a reply posts in the
    thread of its parent."""
    actor = _actor(ctx)
    name = "#" + args.channel.strip().lstrip("#")
    # Membership is looked up in the stored JSON list (ids are JSON strings, so the quoted id matches one
    # whole member): a channel of everyone holds thousands of ids, not worth decoding for one check.
    found = ctx.conn.execute(f"SELECT id, name, instr(members, ?) > 0 FROM {db.table(SlackChannel)} "
                             "WHERE name = ? COLLATE NOCASE", (json.dumps(actor["id"]), name)).fetchone()
    if found is None:
        names = [c["name"] for c in fetch_rows(ctx, SlackChannel, "ORDER BY name")]
        raise ToolError("not_found", f"no channel {name}; channels: {', '.join(names)}", "channel")
    channel = {"id": found[0], "name": found[1]}
    name = channel["name"]
    if not found[2]:
        raise ToolError("insufficient_permission", f"you ({actor['id']}) are not a member of {name} and "
                        "cannot post there", "channel")
    parent_id = None
    if args.thread_parent_id is not None:
        parent = require(ctx, SlackMessage, args.thread_parent_id, "thread_parent_id")
        if parent["channel_id"] != channel["id"]:
            raise ToolError("invalid_argument", f"message {parent['id']} is not in {name}", "thread_parent_id")
        parent_id = parent["thread_parent_id"] or parent["id"]
    message_id = models.message_id(ctx.world.clock, lambda taken: ctx.conn.execute(
        f"SELECT 1 FROM {db.table(SlackMessage)} WHERE id = ?", (taken,)).fetchone() is not None)
    db.insert_many(ctx.conn, SlackMessage, [{
        "id": message_id, "channel_id": channel["id"], "author_id": actor["id"], "text": args.text,
        "ts": ctx.world.clock, "reactions": {}, "thread_parent_id": parent_id,
    }])
    return {**require(ctx, SlackMessage, message_id, "id"), "channel": name}
