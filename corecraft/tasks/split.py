"""Deterministic train/dev/test assignment by task family, for users holding out their own splits.

A family (a task template) never spans two splits, so no template leaks from training into
evaluation. Families are visited in an order fixed by the seed (a SHA-256 of ``seed:family``,
so it does not depend on file order, platform or Python's hash seed), and each goes to the
split furthest below its target share of *tasks* (ties go to the earlier split). The result is
as close to the ratios as whole families allow; a different seed gives a different, equally
balanced assignment.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from corecraft.tasks.loader import SPLITS
from corecraft.tasks.model import Task


@dataclass(frozen=True)
class Assignment:
    seed: int
    ratios: tuple[float, ...]
    families: dict[str, str]  # family -> split, families sorted
    tasks: dict[str, list[str]]  # split -> sorted task ids

    def family_sizes(self) -> dict[str, int]:
        return {split: sum(1 for s in self.families.values() if s == split) for split in SPLITS}

    def to_json(self) -> dict[str, object]:
        return {"by": "family", "seed": self.seed, "ratios": dict(zip(SPLITS, self.ratios, strict=True)),
                "families": self.families, "tasks": self.tasks}


def parse_ratios(text: str) -> tuple[float, ...]:
    """``"0.7,0.15,0.15"`` -> shares of train, dev, test (normalised to sum to 1)."""
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"ratios must be three numbers like 0.7,0.15,0.15, not {text!r}") from None
    if len(values) != len(SPLITS) or any(v < 0 for v in values) or sum(values) <= 0:
        raise ValueError(f"ratios must be {len(SPLITS)} non-negative numbers (train,dev,test) with a positive sum, "
                         f"not {text!r}")
    total = sum(values)
    return tuple(v / total for v in values)


def _rank(seed: int, family: str) -> str:
    return hashlib.sha256(f"{seed}:{family}".encode()).hexdigest()


def split_by_family(tasks: Sequence[Task], ratios: Sequence[float], seed: int) -> Assignment:
    """Assign every family (and so every task) to one split, deterministically."""
    shares = tuple(r / sum(ratios) for r in ratios)
    sizes = Counter(t.family for t in tasks)
    targets = [share * len(tasks) for share in shares]
    filled = [0] * len(SPLITS)
    families: dict[str, str] = {}
    for family in sorted(sizes, key=lambda f: _rank(seed, f)):
        i = max(range(len(SPLITS)), key=lambda k: (targets[k] - filled[k], -k))
        families[family] = SPLITS[i]
        filled[i] += sizes[family]
    by_split = {split: sorted(t.id for t in tasks if families[t.family] == split) for split in SPLITS}
    return Assignment(seed=seed, ratios=shares, families=dict(sorted(families.items())), tasks=by_split)
