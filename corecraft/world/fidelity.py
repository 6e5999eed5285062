"""What makes the world's records hang together, as data (``seeds/fidelity.yaml``) and small helpers.

Shared by ``corecraft world lint`` (:mod:`corecraft.world.lint`), which checks a world against it,
and by the generator, which draws from it: symptom families per product category, the outcomes
that fit a ticket's issue, and the shipping geography (warehouses, hubs, state centres).
"""

from __future__ import annotations

import math
import re
from functools import cache

import yaml
from pydantic import BaseModel, ConfigDict

from corecraft.paths import content


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Symptom(_Data):
    pattern: str
    categories: list[str]
    case_sensitive: bool = False
    about_order: bool = False

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern, 0 if self.case_sensitive else re.IGNORECASE)


class Fit(_Data):
    outcomes: list[str]
    refund_reasons: list[str]
    escalations: list[str]


class Issue(_Data):
    pattern: str
    outcomes: list[str] | None = None
    refund_reasons: list[str] | None = None
    escalations: list[str] | None = None


class Fidelity(_Data):
    symptoms: dict[str, Symptom]
    ticket_fits: dict[str, Fit]
    issues: dict[str, Issue]
    warehouses: dict[str, str]
    places: dict[str, tuple[float, float]]
    hubs: dict[str, tuple[float, float]]
    states: dict[str, tuple[float, float]]

    def symptoms_in(self, text: str) -> list[tuple[str, Symptom]]:
        """The symptom families ``text`` describes."""
        return [(name, s) for name, s in self.symptoms.items() if s.regex.search(text)]

    def allowed_categories(self, text: str) -> set[str] | None:
        """Product categories ``text`` may name (None: any)."""
        allowed: set[str] | None = None
        for _, symptom in self.symptoms_in(text):
            allowed = set(symptom.categories) if allowed is None else allowed & set(symptom.categories)
        return allowed

    def fit(self, ticket_type: str, text: str) -> Fit:
        """What may become of a ticket of ``ticket_type`` whose subject and body are ``text``."""
        base = self.ticket_fits[ticket_type]
        outcomes, reasons, escalations = base.outcomes, base.refund_reasons, base.escalations
        for issue in self.issues.values():
            if re.search(issue.pattern, text, re.IGNORECASE):
                outcomes = issue.outcomes if issue.outcomes is not None else outcomes
                reasons = issue.refund_reasons if issue.refund_reasons is not None else reasons
                escalations = issue.escalations if issue.escalations is not None else escalations
        return Fit(outcomes=outcomes, refund_reasons=reasons, escalations=escalations)

    def coordinates(self, place: str) -> tuple[float, float] | None:
        """Latitude and longitude of a warehouse city, a hub, or a ``City, ST`` destination's state."""
        if place in self.places:
            return self.places[place]
        if place in self.hubs:
            return self.hubs[place]
        state = place.rsplit(", ", 1)[-1]
        return self.states.get(state)


@cache
def fidelity() -> Fidelity:
    """The fidelity data, validated once per process."""
    return Fidelity.model_validate(yaml.safe_load(content("seeds", "fidelity.yaml").read_text(encoding="utf-8")))


def distance_km(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Great-circle distance between two (latitude, longitude) points."""
    lat1, lon1, lat2, lon2 = map(math.radians, (*a, *b))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 6371.0 * 2 * math.asin(math.sqrt(h))
