"""``corecraft bench reply``: the cost of grading a long final reply with the meaning matchers.

A 2,000-word reply is made from a real task's reference reply (``sla_breach_report_outstanding_shipping_refunds``,
dates, money, ids and counts included) plus ordinary support prose. Each ``final_reply`` field of
:mod:`corecraft.grading.reply` is timed on it alone, then one criterion using all of them, beside
the plain substring ``contains`` check as the floor and the 10 ms per-episode grading target.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any

from corecraft.bench.timing import median, ms, report, samples
from corecraft.domain import default_domain
from corecraft.grading.criteria import Evidence, Outcome, final_reply
from corecraft.tasks.model import FinalReply

TASK = "sla_breach_report_outstanding_shipping_refunds"
TARGET = 10e-3
WORDS = 2000
PROSE = ("Thanks for your patience while we looked into this. The parcel left our Reno warehouse on Sep 3, "
         "and the carrier scanned it at the Louisville hub on the 5th of September before the flood delayed it. "
         "Friday, Sept. 12 was the last scan; on 9/15/2025 it was still marked in transit. ")
FIELDS: dict[str, dict[str, Any]] = {
    "contains (floor)": {"contains": ["ord-250903-002"]},
    "dates (2)": {"dates": ["2025-09-05", "2025-09-12"]},
    "not_dates (1)": {"not_dates": ["2025-09-20"]},
    "money (1)": {"money": [124.97]},
    "names (1)": {"names": ["Courtney Meza"]},
    "labelled (1)": {"labelled": [{"label": ["total", "still owed"], "value": 124.97, "unit": "money"}]},
    "if_labelled (1)": {"if_labelled": [{"label": "on time", "value": 13, "unit": "count"}]},
    "no_tool_payload": {"no_tool_payload": True},
}


def long_reply(reference: str, words: int = WORDS) -> str:
    """The reference reply followed by support prose, about ``words`` words in all, ending with the greeting."""
    text = reference
    while len(text.split()) < words - 10:
        text += " " + PROSE
    return " ".join(text.split()[: words - 10]) + " Best regards, Courtney Meza's team at CoreCraft."


def run(repeat: int = 50) -> list[tuple[str, str, str, str]]:
    domain = default_domain()
    task = domain.tasks.get(TASK).task
    episode = domain.episode(task)
    try:
        text = long_reply(task.reference_solution.reply)
        fresh = itertools.count()

        def evidence(reply: str) -> Evidence:
            episode.transcript.reply = reply
            return Evidence(transcript=episode.transcript, world=episode.world,
                            reference_reply=task.reference_solution.reply)

        def graded(criterion: FinalReply) -> Outcome:
            """One grading of a reply never seen before (a new episode's evidence: nothing read yet)."""
            return final_reply(criterion, evidence(f"{text} Ref {next(fresh)}."))

        words = len(text.split())
        every = FinalReply.model_validate({"id": "bench", "kind": "final_reply",
                                           **{k: v for fields in FIELDS.values() for k, v in fields.items()}})
        cold = samples(lambda: graded(every), 1, warmup=0)[0]  # first in the process: imports and caches empty
        rows: list[tuple[str, str, str, str]] = []
        floor = 0.0
        for label, fields in FIELDS.items():
            criterion = FinalReply.model_validate({"id": "bench", "kind": "final_reply", **fields})
            took = median(samples(partial(graded, criterion), repeat))
            floor = floor or took
            rows.append((f"final_reply {label}, {words} words", ms(took), "", f"{took / floor:.1f}x contains"))
        met, why = graded(every)
        took = median(samples(lambda: graded(every), repeat))
        rows.append((f"final_reply with every field ({'met' if met else 'not met: ' + why})", ms(took),
                     "target 10 ms per episode", f"{took / TARGET:.2f}x target"))
        rows.append(("  the same, first call in the process", ms(cold), "", f"{cold / TARGET:.2f}x target"))
        ev = evidence(text)
        again = median(samples(lambda: final_reply(every, ev), repeat))
        rows.append(("  the same reply graded again (a second criterion)", ms(again), "", f"{again / TARGET:.2f}x target"))
        return rows
    finally:
        episode.close()


def main(repeat: int = 50) -> None:
    report(f"corecraft bench reply ({TASK}, {WORDS}-word reply)", run(repeat))


if __name__ == "__main__":
    main()
