"""One answer per fact: a reply may not give, for a fact the reference reply states, a figure or date the
reference does not.

A reply that hedges ("$171.75 — or, if I misread the records, $206.10") has not answered, however
often it states the right value. Which words a figure is *about* is read the way a person reads it:
a figure's **label** is the nearest content word before it in its clause, at most three words back,
skipping small words ("the refund of $171.75" -> ``refund``; "the return window is 30 days" ->
``window``; "delivered on July 28" -> ``delivered``). Figures are amounts of money, percentages, plain
numbers and calendar dates (each its own kind, so a money label never clashes with a day count);
ids, emails, links, times and phone numbers are masked first, as everywhere in
:mod:`corecraft.grading.reply`.

:func:`conflicts` reads the reference reply's labelled figures and then the agent's. A figure is
known by its kind, its label and the content word right after it ("322 mm" -> ``mm``; "168 mm tall"
and "2.5 slots" are different things even next to one label). A reply figure is a conflict when the
reference has a figure with the same kind, label and word after, and its value is neither any figure
of that kind in the reference nor one the records the agent read hold (the prompt and its tool
results: a true value from the records is a fact about something else, not a second answer), nor the
sum of the reference's several figures under that label and word (two refunds, then "the total refund
across both orders is $1,491.00": round 57), nor a total of two or three amounts the reply states as the
reference does ("$163.99 for the PSU ... $389.00 for the card ... $552.99 in total": round 84), nor, in a
sentence saying what an action would do, the reference's value moved by an amount that sentence states ("that
return would bring his net spend down to $642.49": round 90). A reply
that restates the reference's facts in its own words, or adds figures under other words, is never a
conflict; only an unsupported value given as the same fact is. A figure right after "=" is the result of a
sum, labelled by nothing before it ("$799.00 less 15% fee = $639.20" gives no fee of $639.20: round 149).

The grader reads the notes, details and posts the agent writes the same way, against the reference's reply and
its own written texts (:data:`corecraft.grading.transcript.WRITTEN_TEXT`).

Measured on our blind-play replies (``tests/fixtures/blind_replies.json``) it flags none of the 13
correct ones (nor, in round 149, any of the 111 sessions' 175 written texts); the audit's ``hedge`` exploit
drops from 127 passes of 160 to 11 (the rest flip yes/no words without changing a figure, which this module
does not read).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from itertools import combinations
from typing import Literal

from corecraft.grading.reply import (
    _CLAUSE_END,
    _DATE,
    _MASK,
    FUNCTION_WORDS,
    NUMBER_WORDS,
    _amount,
    _blank_id,
    _nearest_year,
    _parse_span,
    clean,
)

Kind = Literal["money", "percent", "number", "date"]
Key = tuple[Kind, str | None, str | None]
"""What a figure is about: its kind, its label and the word after it."""

_DATE_MARK = "\x00"
_PIECE = re.compile(
    r"\x00(?P<date>[0-9]+)\x00"
    r"|(?<![\w$./,:-])(?P<cur>(?:US)?\$\s?|USD\s?)?(?P<num>[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?)"
    r"(?P<pct>\s?%|\s+percent\b)?(?P<suf>\s+(?:dollars?|USD)\b)?(?![\w/-]|[.,][0-9])"
    r"|(?P<word>[^\W\d_]+(?:['’][^\W\d_]+)?)",
    re.IGNORECASE,
)
_SMALL_WORDS = FUNCTION_WORDS | {"approximately", "roughly", "exactly", "nearly", "almost", "least", "most", "more", "less",
                                "plus", "minus", "total", "totals", "usd", "dollar", "dollars", "cents"}
"""Words that never name what a figure is about ("total" included: replies total many things)."""
_LOOK_BACK = 3


@dataclass(frozen=True)
class Figure:
    """One figure in a text: what kind it is, its value (a date as its ordinal) and the word it is about."""

    kind: Kind
    value: float
    label: str | None
    shown: str
    after: str | None = None  # the content word right after it in its clause ("mm" in "322 mm"), if one follows

    @property
    def key(self) -> Key:
        """What the figure is about: its kind, its label and the word after it."""
        return self.kind, self.label, self.after


def _stem(word: str) -> str:
    return word.removesuffix("'s").removesuffix("’s").removesuffix("s")


def _content(word: str, shortest: int = 3) -> bool:
    """A word that can say what a figure is about (a unit after a figure may be short: "mm", "gb")."""
    return len(word) >= shortest and word not in _SMALL_WORDS and word not in NUMBER_WORDS and not word.endswith(("n't", "n’t"))


def figures(text: str, today: date) -> list[Figure]:
    """Every figure in ``text`` with its label (None when no content word stands just before it)."""
    days: list[tuple[date, str]] = []

    def mark(match: re.Match[str]) -> str:
        day = _nearest_year(_parse_span(match.group().casefold()), today)
        if day is None:
            return match.group()
        days.append((day, match.group()))
        return f" {_DATE_MARK}{len(days) - 1}{_DATE_MARK} "

    marked = _DATE.sub(mark, _MASK.sub(_blank_id, clean(text)))
    out: list[Figure] = []
    for part in _CLAUSE_END.split(marked):
        back: list[str | None] = []  # the clause so far: content words, None for a figure or a small word
        waiting: Figure | None = None  # the last figure, until the next piece says what word follows it
        end = 0
        for m in _PIECE.finditer(part):
            if "=" in part[end:m.start()]:  # "$799.00 less 15% fee = $639.20": a result, not the fee
                back.extend([None] * _LOOK_BACK)
            end = m.end()
            word = m.group("word")
            if waiting is not None:
                after = word.casefold() if word is not None else ""
                out.append(replace(waiting, after=_stem(after)) if _content(after, shortest=1) else waiting)
                waiting = None
            if word is not None:
                lowered = word.casefold()
                back.append(_stem(lowered) if _content(lowered) else None)
                continue
            waiting = _figure(m, back, days)
            back.append(None)
        if waiting is not None:
            out.append(waiting)
    return out


def _figure(m: re.Match[str], back: list[str | None], days: list[tuple[date, str]]) -> Figure | None:
    label = next((w for w in reversed(back[-_LOOK_BACK:]) if w is not None), None)
    if m.group("date") is not None:
        day, written = days[int(m.group("date"))]
        return Figure("date", float(day.toordinal()), label, written)
    amount = _amount(m)
    if amount is None:
        return None
    kind: Kind = "money" if amount.money else "percent" if amount.percent else "number"
    return Figure(kind, amount.value, label, m.group().strip())


def _same_value(kind: Kind, a: float, b: float) -> bool:
    return abs(a - b) <= (0.005 if kind == "money" else 1e-9)


_MOST_ADDED = 3
"""The most amounts a reply's own total adds up."""


def _sums(amounts: list[float]) -> set[float]:
    """Every total of two to :data:`_MOST_ADDED` different ``amounts``: the reference's amounts the reply states, not
    any the records hold (a hedge that adds $1 to $169 would find a $1 somewhere in them)."""
    return {round(sum(picked), 2) for size in range(2, _MOST_ADDED + 1) for picked in combinations(amounts, size)}


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WHAT_IF = re.compile(r"\bwould\b|\w['’]d\b", re.IGNORECASE)


def _what_ifs(reply: str, known: list[Figure], today: date) -> set[tuple[Key, float]]:
    """The money figures a reply gives as what an action would make of a fact: in a sentence that says "would", the
    reference's value for the fact moved by an amount the same sentence states ("That return would refund $433.80 and
    bring his net spend down to $642.49", against a net spend of $1,076.29: round 90). A hedge's second value moves
    by no amount it states."""
    out = set()
    for sentence in _SENTENCE.split(reply):
        if not _WHAT_IF.search(sentence):
            continue
        stated = [f for f in figures(sentence, today) if f.kind == "money"]
        for f in stated:
            moved = {round(k.value + sign * other.value, 2) for k in known if k.key == f.key
                     for other in stated if other is not f for sign in (1, -1)}
            if any(_same_value("money", m, f.value) for m in moved):
                out.add((f.key, f.value))
    return out


def conflicts(reply: str, reference: str, today: date, seen: Callable[[Figure], bool]) -> list[str]:
    """Each figure of ``reply`` that gives a fact of ``reference`` another value, described for a person.

    The facts are the reference's labelled figures, each known by its kind, label and following word.
    A reply figure with the same kind, label and following word is a conflict when its value is no
    figure of that kind anywhere in the reference and ``seen`` says the records the agent read do not
    hold it either (a value from the records is a fact about something else, not a second answer)."""
    known = figures(reference, today)
    facts = {f.key for f in known if f.label is not None}
    totals = {key: sum(values) for key in facts
              if len(values := {k.value for k in known if k.key == key}) > 1 and key[0] != "date"}
    given = figures(reply, today)

    def referenced(f: Figure) -> bool:
        return any(k.kind == f.kind and _same_value(f.kind, k.value, f.value) for k in known)

    added = _sums(sorted({f.value for f in given if f.kind == "money" and f.value > 0 and referenced(f)}))
    what_ifs = _what_ifs(reply, known, today)
    out = []
    for f in given:
        if f.key not in facts or (f.key in totals and _same_value(f.kind, totals[f.key], f.value)):
            continue  # the total of the reference's figures for this fact (two orders' refunds added up)
        if f.kind == "money" and any(_same_value("money", total, f.value) for total in added):
            continue  # the reply adds up amounts the reference gives ("$163.99 and $389.00: $552.99 in total")
        if (f.key, f.value) in what_ifs:
            continue  # what an action would make of the fact ("would bring his net spend down to $642.49")
        if not referenced(f) and not seen(f):
            stated = sorted({k.shown for k in known if k.key == f.key})
            out.append(f"{f.shown} for {f.label!r} (the reference gives {', '.join(stated)})")
    return out
