"""The domain's closed vocabularies, declared once as static ``Literal`` types.

Tables, tool arguments and the generator all use these; ``seeds/policy.yaml`` must agree with
them (its titles, departments, status transitions, refund reasons and escalation routes), which a
test checks. Each ``Literal`` has a tuple beside it for code that iterates over the values.
"""

from __future__ import annotations

from typing import Literal, get_args

Category = Literal["cpu", "gpu", "motherboard", "memory", "storage", "psu", "case", "cooling", "peripheral",
                   "prebuilt"]
LoyaltyTier = Literal["none", "silver", "gold", "platinum"]
Carrier = Literal["usps_ground", "ups_ground", "fedex_express", "fedex_overnight"]
Warehouse = Literal["east", "central", "west"]
Department = Literal["support", "returns", "fulfillment", "billing", "engineering", "product", "leadership"]
Title = Literal["Support Agent I", "Support Agent II", "Support Team Lead", "Returns Specialist", "Returns Lead",
                "Fulfillment Associate", "Fulfillment Manager", "Billing Specialist", "Billing Manager",
                "Systems Engineer", "Engineering Manager", "Product Specialist", "Product Manager",
                "Director of Customer Experience", "VP Operations"]
OrderStatus = Literal["pending", "paid", "backorder", "fulfilled", "refund_requested", "partially_refunded",
                      "cancelled", "refunded"]
PaymentStatus = Literal["pending", "captured", "partially_refunded", "failed", "refunded"]
PaymentMethod = Literal["card", "paypal", "apple_pay", "google_pay", "bank_transfer"]
ShipmentStatus = Literal["label_created", "in_transit", "delayed", "out_for_delivery", "delivered", "exception"]
TicketType = Literal["return", "troubleshooting", "recommendation", "order_issue", "shipping", "billing", "other"]
TicketChannel = Literal["email", "chat", "web", "phone"]
TicketStatus = Literal["new", "open", "pending_customer", "resolved", "closed"]
Priority = Literal["low", "normal", "high"]
OwnerType = Literal["customer", "internal"]
StockStatus = Literal["in_stock", "low_stock", "out_of_stock"]
RefundReason = Literal["return", "defective", "doa", "shipping_delay", "price_adjustment", "duplicate_charge",
                       "goodwill"]
RefundStatus = Literal["pending", "approved", "denied", "processed", "failed"]
EscalationType = Literal["technical", "product_specialist", "policy_exception", "insufficient_permission"]
ResolutionOutcome = Literal["refund_issued", "replacement_sent", "recommendation_provided", "troubleshooting_steps",
                            "order_updated", "no_action"]

CATEGORIES: tuple[Category, ...] = get_args(Category)
LOYALTY_TIERS: tuple[LoyaltyTier, ...] = get_args(LoyaltyTier)
CARRIERS: tuple[Carrier, ...] = get_args(Carrier)
WAREHOUSES: tuple[Warehouse, ...] = get_args(Warehouse)
DEPARTMENTS: tuple[Department, ...] = get_args(Department)
TITLES: tuple[Title, ...] = get_args(Title)
ORDER_STATUSES: tuple[OrderStatus, ...] = get_args(OrderStatus)
PAYMENT_STATUSES: tuple[PaymentStatus, ...] = get_args(PaymentStatus)
TICKET_STATUSES: tuple[TicketStatus, ...] = get_args(TicketStatus)
REFUND_REASONS: tuple[RefundReason, ...] = get_args(RefundReason)
ESCALATION_TYPES: tuple[EscalationType, ...] = get_args(EscalationType)
