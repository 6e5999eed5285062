"""World recipes: how many of each entity, the world's "now", and the distributions drawn from.

A recipe is a YAML file in ``world/`` validated by :class:`Recipe`; unknown keys are errors.
:func:`load_recipe` reads one afresh; the template store keeps the parsed recipes it uses.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated
from zoneinfo import ZoneInfo

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

Probability = Annotated[float, Field(ge=0, le=1)]
Weights = dict[str, Annotated[float, Field(ge=0)]]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Counts(_Strict):
    """How many rows of each generated entity type the world holds."""

    customers: int = Field(ge=5, description="Customers, look-alikes included.")
    employees: int = Field(ge=15, description="Staff; at least one per title in the policy.")
    products: int = Field(ge=20, description="Catalogue items taken from seeds/products.yaml.")
    builds: int = Field(ge=1)
    orders: int = Field(ge=5)
    tickets: int = Field(ge=5)
    slack_messages: int = Field(ge=4, description="Messages across all channels, replies and announcements included.")


class Noise(_Strict):
    """Deliberate mess, as in a real company."""

    lookalike_customers: int = Field(ge=0, description="Extra customers who share a name with another.")
    missing_phone_rate: Probability
    missing_eta_rate: Probability
    late_delivery_rate: Probability
    offtopic_slack_rate: Probability


class Recipe(_Strict):
    """A world recipe. Same recipe and seed give a byte-identical world."""

    name: str
    seed: int = Field(ge=0, description="Default seed when none is given.")
    now: datetime = Field(description="The world's present, local time; nothing is dated after it.")
    timezone: str = "America/New_York"
    history_days: int = Field(ge=30, le=3650, description="How far back customers and orders reach.")
    counts: Counts
    loyalty_tiers: Weights
    shipping_methods: Weights
    payment_methods: Weights
    ticket_types: Weights
    noise: Noise

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        ZoneInfo(value)
        return value

    @property
    def now_aware(self) -> datetime:
        """The world's now with its timezone attached."""
        return self.now.replace(tzinfo=ZoneInfo(self.timezone))


class RecipeError(ValueError):
    """A recipe file that is missing or invalid; the message names the file and the field."""


def recipe_path(name_or_path: str, folder: Path) -> Path:
    """Resolve a recipe name (``default``, ``tiny``) in ``folder``, or a path to a YAML file."""
    candidate = Path(name_or_path)
    if candidate.suffix in {".yaml", ".yml"} and candidate.exists():
        return candidate
    return folder / f"{name_or_path}.yaml"


def load_recipe(name_or_path: str, folder: Path) -> Recipe:
    """Load and validate a recipe (a name in ``folder`` or a path); raises :class:`RecipeError`."""
    path = recipe_path(name_or_path, folder)
    if not path.is_file():
        known = sorted(p.stem for p in folder.glob("*.yaml"))
        raise RecipeError(f"unknown world recipe {name_or_path!r}; known recipes: {', '.join(known)}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise RecipeError(f"{path}: not valid YAML: {exc}") from exc
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise RecipeError(f"{path}: {problems}") from exc
