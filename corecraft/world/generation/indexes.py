"""Indexes the generator looks records up in, so a world's build grows linearly with its size.

Text generation asks questions such as "the tickets written by this moment" or "the orders whose
records bear out this Slack claim at this moment" once per message. Scanning every record for each
answer makes the build quadratic in the world's size; these indexes are built once from the records.
:class:`Arrivals` answers with exactly what the scan would find, in the same order; :class:`ClaimIndex`
draws a bounded random sample of the orders that may bear a claim out, since a Slack line needs one
such order, not all of them.
"""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from corecraft.world.fidelity import OrderStory, SlackClaim

T = TypeVar("T")


class Arrivals(Generic[T]):
    """Items in a fixed order, each present from a moment on (None: never): the items present at a
    moment, in their order, by bisection instead of a scan."""

    def __init__(self, items: Sequence[T], since: Callable[[T], datetime | None]) -> None:
        present = [(moment, k) for k, item in enumerate(items) if (moment := since(item)) is not None]
        present.sort()
        self._items = list(items)
        self._moments = [moment for moment, _ in present]
        self._positions = [k for _, k in present]
        self._arrived = [self._items[k] for k in self._positions]
        self._in_order = all(a < b for a, b in zip(self._positions, self._positions[1:], strict=False))
        """True when arrival order is the items' order: the answer is then a prefix of the arrivals."""

    def by(self, when: datetime) -> list[T]:
        """The items present at ``when`` (arrived at or before it), in the items' order."""
        count = bisect_right(self._moments, when)
        if self._in_order:
            return self._arrived[:count]
        return [self._items[k] for k in sorted(self._positions[:count])]

    def between(self, start: datetime, end: datetime) -> list[T]:
        """The items that arrived after ``start`` and at or before ``end``, in the items' order."""
        low, high = bisect_right(self._moments, start), bisect_right(self._moments, end)
        return [self._items[k] for k in sorted(self._positions[low:high])]


def _claim_spans(claim: SlackClaim, story: OrderStory, horizon: datetime) -> list[tuple[datetime, datetime]]:
    """Moments (closed spans) outside which ``claim`` cannot be borne out by ``story``'s order: a superset of
    where :func:`~corecraft.world.fidelity.claim_backing` finds a record, which still decides."""
    window, ship = timedelta(days=claim.days), story.ship
    if claim.needs in ("refunded", "refund_due"):
        made = [r["created_at"] for r in story.refunds if r["reason"] in claim.reasons]
        return [(at, at + window) if claim.needs == "refunded" else (at - window, at) for at in made]
    if ship is None or claim.needs is None:
        return []
    if claim.needs == "shipped":
        return [(ship["shipped_at"], ship["shipped_at"] + window)]
    if claim.needs in ("delivered", "late"):
        delivered = ship["delivered_at"]
        return [] if delivered is None else [(delivered, delivered + window)]
    if ship["eta"] is None:  # overdue: from a day past the ETA until delivered
        return []
    return [(ship["eta"] + timedelta(days=1), ship["delivered_at"] or horizon)]


class ClaimIndex:
    """For each Slack claim, the orders whose records could bear it out, by moment.

    ``drawn`` returns stories whose claim spans cover a moment (no later than ``horizon``), a superset
    of those :func:`~corecraft.world.fidelity.claim_backing` backs there; the caller still checks each."""

    def __init__(self, stories: Sequence[OrderStory], horizon: datetime) -> None:
        self._stories = list(stories)
        self._horizon = horizon
        self._spans: dict[str, tuple[list[datetime], list[tuple[datetime, int]], timedelta]] = {}

    def _index(self, name: str, claim: SlackClaim) -> tuple[list[datetime], list[tuple[datetime, int]], timedelta]:
        if name not in self._spans:
            spans = sorted((start, end, k) for k, story in enumerate(self._stories)
                           for start, end in _claim_spans(claim, story, self._horizon))
            longest = max((end - start for start, end, _ in spans), default=timedelta(0))
            self._spans[name] = ([s for s, _, _ in spans], [(e, k) for _, e, k in spans], longest)
        return self._spans[name]

    def drawn(self, name: str, claim: SlackClaim, when: datetime, rng: random.Random, tries: int) -> list[OrderStory]:
        """Stories that may back ``claim`` (named ``name``) at ``when``, in random order: each of ``tries``
        spans drawn from those that start early enough to cover ``when``, kept if it does. When no more
        spans start in that window than ``tries``, that is every such story; in a larger world a sample,
        so the cost of a claim does not grow with the orders of a day."""
        if when > self._horizon:
            raise ValueError(f"claims are indexed up to {self._horizon.isoformat()}, not {when.isoformat()}")
        starts, ends, longest = self._index(name, claim)
        low, high = bisect_left(starts, when - longest), bisect_right(starts, when)
        picked = rng.sample(range(low, high), min(tries, high - low))
        out: list[OrderStory] = []
        for k in dict.fromkeys(ends[p][1] for p in picked if ends[p][0] >= when):
            out.append(self._stories[k])
        return out
