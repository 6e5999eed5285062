"""The company's pure rules: money rounding, shipping price, business days (with carrier holidays), how late a
parcel can run and how long it may go unscanned, months and each carrier's tracking-number format.

No I/O and no state: the generator and the tools both compute with these, so a generated order
and a tool's quote can never disagree. The numbers come from the :class:`~corecraft.world.seeds.Policy`
passed in.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import date, datetime, timedelta
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the seeds read the fidelity data, which counts business days here
    from corecraft.world.seeds import Policy


def money(value: float) -> float:
    """Dollars rounded to cents (half-cents up), the one rounding rule for generated and tool amounts."""
    return round(value + 1e-9, 2)


def shipping_price(policy: Policy, method: str, merchandise_after_discount: float, tier: str) -> float:
    """What shipping costs per the handbook: free ground over the threshold or for free tiers."""
    ground = method in ("usps_ground", "ups_ground")
    if ground and (merchandise_after_discount >= policy.free_ground_shipping_threshold
                   or tier in policy.free_ground_shipping_tiers):
        return 0.0
    return policy.shipping[method].price


def is_business_day(day: date, holidays: Collection[date]) -> bool:
    """Monday to Friday and not a carrier holiday (``Policy.carrier_holidays``)."""
    return day.weekday() < 5 and day not in holidays


def add_business_days(start: datetime, days: int, holidays: Collection[date]) -> datetime:
    """``start`` moved forward by ``days`` business days (weekends and ``holidays`` skipped)."""
    current = start
    while days > 0:
        current += timedelta(days=1)
        if is_business_day(current.date(), holidays):
            days -= 1
    return current


def business_days_after(start: date, end: date, holidays: Collection[date]) -> int:
    """Business days after ``start`` up to and including ``end``: how the handbook counts an SLA."""
    return sum(is_business_day(start + timedelta(days=k), holidays) for k in range(1, (end - start).days + 1))


SILENT_BUSINESS_DAYS = 5
"""``kb-shipment-tracking-events``: a parcel in transit with no new event for this many business days gets a carrier
trace; one that scans again within them is on its way."""

ESTABLISHED_ORDERS = 4
"""A new account's first months bring a few orders: one with this many orders on record was opened before the order
history began (a returning customer's), as one with a loyalty tier was."""

FIRST_SCAN_BUSINESS_DAYS = 2
"""A carrier sorts a parcel the night after it picks it up (its sort centre in the pickup city, or the first hub on
the way): the scan after the pickup comes within this many business days, however long the trip."""


def silent_stretch(scans: Sequence[datetime], until: datetime | None,
                   holidays: Collection[date]) -> tuple[datetime, datetime, int] | None:
    """The first stretch a parcel went unscanned for longer than it may, with that limit in business days: more than
    :data:`FIRST_SCAN_BUSINESS_DAYS` after its pickup (the first of ``scans``, moments in world time, in order) or
    more than :data:`SILENT_BUSINESS_DAYS` between two later scans, or after the last one up to ``until`` (the
    world's now, for a parcel not yet delivered); None when it never did."""
    ends = [*scans, *([until] if until is not None else [])]
    return next(((a, b, limit) for k, (a, b) in enumerate(pairwise(ends))
                 if business_days_after(a.date(), b.date(), holidays)
                 > (limit := FIRST_SCAN_BUSINESS_DAYS if k == 0 else SILENT_BUSINESS_DAYS)), None)


def max_delay(sla_business_days: int) -> int:
    """The most business days a parcel runs past its ETA: one more than its service's SLA (an overnight
    parcel is a day or two late, not a week)."""
    return sla_business_days + 1


def add_months(day: date, months: int) -> date:
    """``day`` plus whole calendar months, clamped to the month's last day (Jan 31 + 1 month = Feb 28)."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    first_of_next = date(year + (month == 11), (month + 1) % 12 + 1, 1)
    return day.replace(year=year, month=month + 1, day=min(day.day, (first_of_next - timedelta(days=1)).day))


def policy_facts(policy: Policy) -> dict[str, str]:
    """The policy's numbers as the prose states them, for text written from templates (tool
    descriptions): ``{doa_window_days}`` -> ``14``, ``{free_ground_threshold}`` -> ``$150``."""
    pct = policy.loyalty_discount_pct
    return {
        "doa_window_days": str(policy.doa_window_days),
        "price_adjustment_days": str(policy.price_adjustment_days),
        "restocking_fee_pct": f"{policy.restocking_fee_pct:g}%",
        "free_ground_threshold": f"${policy.free_ground_shipping_threshold:g}",
        "loyalty_discounts": ", ".join(f"{tier} {pct[tier]:g}%" for tier in pct if pct[tier]),
        "free_ground_tiers": ", ".join(policy.free_ground_shipping_tiers),
    }


TRACKING_FORMATS = {"usps_ground": "9400111############00%", "ups_ground": "1Z######03######0%",
                    "fedex_express": "############", "fedex_overnight": "############"}
"""Each carrier's tracking number, ``#`` standing for a digit (twelve in every format) and ``%`` for its check
digit: USPS's 22-digit Intelligent Mail package barcode (94, service 001, our mailer id 11xxxxxxx, serial,
mod-10 check), UPS's 18-character 1Z (shipper account, service 03 Ground, package number, check digit),
FedEx's 12 digits."""


def _check_digit(carrier: str, body: str) -> str:
    """The check digit ``carrier`` puts after ``body``: UPS sums the characters after 1Z (a letter counts as
    ``(ord - 63) % 10``), odd places once and even places twice; USPS weighs the digits 3, 1, 3 ... from the
    right. Either way the check digit brings the sum to a multiple of ten."""
    if carrier == "ups_ground":
        values = [int(c) if c.isdigit() else (ord(c) - 63) % 10 for c in body[2:]]
        total = sum(values[0::2]) + 2 * sum(values[1::2])
    else:
        total = sum(int(c) * (3 if i % 2 == 0 else 1) for i, c in enumerate(reversed(body)))
    return str((10 - total % 10) % 10)


def tracking_number(carrier: str, digits: str) -> str:
    """The tracking number ``carrier`` issues for twelve ``digits``, in its format."""
    numbered = iter(digits)
    number = ""
    for char in TRACKING_FORMATS[carrier]:
        number += next(numbered) if char == "#" else _check_digit(carrier, number) if char == "%" else char
    return number


def is_tracking_number(carrier: str, number: str) -> bool:
    """Whether ``number`` is in ``carrier``'s format, its check digit right (False for a carrier with no format)."""
    template = TRACKING_FORMATS.get(carrier)
    pattern = "".join(r"\d" if char in "#%" else re.escape(char) for char in template or "")
    if template is None or re.fullmatch(pattern, number) is None:
        return False
    return "%" not in template or number[-1] == _check_digit(carrier, number[:-1])


def phone_line_open(moment: datetime, holidays: Collection[date]) -> bool:
    """Whether the support phone line is staffed at ``moment`` (world time): office hours (:data:`OFFICE_HOURS`)
    on a business day. A call outside them is a voicemail, which reaches the queue as an email."""
    start, end = OFFICE_HOURS
    return is_business_day(moment.date(), holidays) and start <= moment.hour < end


def closed_line_call(moment: datetime, holidays: Collection[date]) -> str | None:
    """What betrays a phone ticket that came in at ``moment`` (world time) as a call nobody could take (None:
    the line was open): lint's ``ticket_channels`` and ``corecraft tasks check``'s set-up tickets say it alike."""
    if phone_line_open(moment, holidays):
        return None
    return f"came in by phone at {moment:%H:%M} on {moment:%A %Y-%m-%d}, when the phone line is closed"


OFFICE_HOURS = (8, 19)
"""When people post in Slack, in world time: from 08:00 to before 19:00 (the generator squeezes a drawn time into
them, lint's ``slack_office_hours`` holds every message to them)."""


SAFETY_RESPONSE = timedelta(hours=1)
"""How soon a safety report is escalated: a high priority ticket's first response (kb-ticket-assignment), in office
time."""

REFUND_PAYOUT_HOURS = (1, 30)
"""The fewest and most hours the payment processor takes to pay out an approved refund (the generator draws between
them; ``tasks check`` holds a set-up refund left approved to the most)."""


def office_time_after(start: datetime, span: timedelta, holidays: Collection[date]) -> datetime:
    """The moment ``span`` of office time (:data:`OFFICE_HOURS` on business days) after ``start`` (world time): a
    ticket in at 18:30 with an hour to its first response is due at 08:30 the next business day."""
    opens, closes = OFFICE_HOURS
    moment, left = start, span
    while True:
        day_open = moment.replace(hour=opens, minute=0, second=0, microsecond=0)
        day_close = moment.replace(hour=closes, minute=0, second=0, microsecond=0)
        if not is_business_day(moment.date(), holidays) or moment >= day_close:
            moment = day_open + timedelta(days=1)
            continue
        moment = max(moment, day_open)
        if moment + left <= day_close:
            return moment + left
        left -= day_close - moment
        moment = day_open + timedelta(days=1)


def office_clock(moment: datetime) -> datetime:
    """``moment`` (world time) on the office's clock of its day: the day's hours squeezed, in order, into
    :data:`OFFICE_HOURS` (00:00-08:00 into its first 20 minutes, 08:00-19:00 into the rest but its last 20, the
    evening into those), so records staff make keep their day and their order and fall in working hours."""
    opens, closes = (hour * 60 for hour in OFFICE_HOURS)
    edge = 20
    x = moment.hour * 60 + moment.minute + moment.second / 60
    if x < opens:
        y = opens + x * edge / opens
    elif x < closes:
        y = opens + edge + (x - opens) * (closes - opens - 2 * edge) / (closes - opens)
    else:
        y = closes - edge + (x - closes) * edge / (24 * 60 - closes)
    return moment.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(minutes=int(y))
