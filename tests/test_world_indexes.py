"""The generator's indexes (corecraft.world.generation.indexes) answer what a scan of the records answers
(the claim index: draws from exactly those orders), on the records of the real default world, at every
moment a record changes and in between."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corecraft.domain import default_domain
from corecraft.world import models as m
from corecraft.world.fidelity import TicketTopic, claim_backing
from corecraft.world.generation.indexes import Arrivals, ClaimIndex
from corecraft.world.generator import _Generator

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def generated() -> _Generator:
    """The default world's generator after its run: every row, as the Slack step sees them."""
    store = default_domain().store
    recipe = store.recipe("default")
    generator = _Generator(recipe, recipe.seed, store.seeds)
    generator.run()
    return generator


def _moments(times: list[datetime], now: datetime, spread: int = 400) -> list[datetime]:
    """Every given moment, a minute either side of each, and ``spread`` random moments up to ``now``."""
    rng = random.Random(3)
    low = min(times)
    span = int((now - low).total_seconds())
    edges = [t + timedelta(minutes=d) for t in times for d in (-1, 0, 1)]
    return [t for t in edges if t <= now] + [low + timedelta(seconds=rng.randint(0, span)) for _ in range(spread)]


def test_claims_index_draws_from_every_order_the_scan_backs(generated: _Generator) -> None:
    """With draws enough for the whole window, the drawn orders the scan backs are exactly the scan's;
    with few draws, a sample of them, each order once."""
    records = generated.slack_records()
    stories = list(records.stories.values())
    index = ClaimIndex(stories, generated.now)
    marks = [s.ship[k] for s in stories if s.ship for k in ("shipped_at", "delivered_at", "eta") if s.ship[k]]
    marks += [r["created_at"] for s in stories for r in s.refunds]
    moments = _moments(sorted(set(marks)), generated.now)[::25]
    rng = random.Random(5)
    checked = sampled = 0
    for name, claim in generated.seeds.fidelity.slack_claims.items():
        if claim.needs is None:
            continue
        for when in moments:
            scan = [s for s in stories if claim_backing(claim, when, s)]
            every = [s for s in index.drawn(name, claim, when, rng, len(stories)) if claim_backing(claim, when, s)]
            assert sorted(map(id, every)) == sorted(map(id, scan)), (name, when)
            few = index.drawn(name, claim, when, rng, 3)
            assert len(few) == len({id(s) for s in few}) <= 3
            assert {id(s) for s in few if claim_backing(claim, when, s)} <= {id(s) for s in scan}
            checked += len(scan)
            sampled += len(few) < len([s for s in index.drawn(name, claim, when, rng, len(stories))])
    assert checked > 1000 and sampled  # the moments hit many backed claims, and some windows were sampled
    with pytest.raises(ValueError, match="indexed up to"):
        index.drawn("shipped", generated.seeds.fidelity.slack_claims["shipped"], generated.now + timedelta(days=1),
                    rng, 3)


def test_tickets_by_moment_and_topic_match_the_scan(generated: _Generator) -> None:
    records = generated.slack_records()
    tickets = generated.rows[m.SupportTicket]
    moments = _moments(sorted({t["created_at"] for t in tickets} | set(records.escalated.values())), generated.now)
    written = Arrivals(tickets, lambda t: t["created_at"])
    for when in moments[::5]:
        assert written.by(when) == [t for t in tickets if t["created_at"] <= when]
    topics = list(generated.seeds.fidelity.slack_ticket_topics.values())
    assert any(t.escalated for t in topics)
    for chosen in [[t] for t in topics] + [topics[k:k + 2] for k in range(0, len(topics) - 1, 3)]:
        def fits(t: dict[str, Any], when: datetime, chosen: list[TicketTopic] = chosen) -> bool:
            escalated = t["id"] in records.escalated and records.escalated[t["id"]] <= when
            return all(topic.fits(f"{t['subject']}\n{t['body']}", escalated) for topic in chosen)

        pool = generated.topic_tickets(chosen, records)
        for when in moments[::40]:
            scan = sorted((t for t in tickets if t["created_at"] <= when and fits(t, when)), key=lambda t: t["id"])
            assert pool.by(when) == scan


@given(st.lists(st.one_of(st.none(), st.integers(0, 50)), max_size=40), st.integers(-1, 51))
def test_arrivals_in_any_order_match_the_scan(offsets: list[int | None], at: int) -> None:
    start = datetime(2025, 1, 1)
    items = list(range(len(offsets)))

    def since(k: int) -> datetime | None:
        offset = offsets[k]
        return None if offset is None else start + timedelta(hours=offset)

    when = start + timedelta(hours=at)
    scan = [k for k in items if (moment := since(k)) is not None and moment <= when]
    assert Arrivals(items, since).by(when) == scan
