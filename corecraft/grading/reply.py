"""Reading meaning out of an agent's final reply: dates, money, names, numbers tied to a label,
and pasted tool payloads. :func:`corecraft.grading.criteria.final_reply` dispatches to these.

Every function first applies Unicode NFKC normalisation (full-width digits, non-breaking spaces and
ligatures become their plain forms), uses linear-time regular expressions only, and never raises
on odd input, so a hostile reply costs time proportional to its length and nothing more.

**Dates.** A cheap regular expression finds the *candidate* spans that can be dates at all (ISO
``2025-09-05``, US numeric ``9/5`` and ``09/05/2025``, and month-name forms with an optional weekday,
ordinal and year: ``Sep 5``, ``Friday, Sept. 5``, ``5 September 2025``, ``the 5th of September``);
``python-dateutil``'s parser then turns each span into a date. Both libraries named in the brief
were measured on this machine:

- ``dateparser.search.search_dates`` took about 300 ms on a 2,000-word reply (200 ms for its first
  call alone), missed ``Friday, Sept. 5`` entirely, glued neighbouring words onto its matches
  (``"2025-09-05 and"``) and brings four dependencies (``regex``, ``pytz``, ``tzlocal``, dateutil),
  mostly for its 200 languages, which replies in English do not need;
- ``dateutil.parser.parse`` reads every form above once it is handed the span, in tens of
  microseconds, and is the long-standing, dependency-light standard (dateparser itself is built on
  it). It cannot *find* several dates in a paragraph (its fuzzy mode merges parts of different
  dates), which is exactly what the candidate expression does.

So the finding is ours (the structure of a date, not a list of spellings) and the reading is
dateutil's. Numeric dates read month first, as the company is American. A date written without a
year takes the year that puts it nearest the world's "now" (Sep 5 seen on 2025-09-15 is 2025-09-05;
Dec 28 seen on 2026-01-05 is 2025-12-28).

**Numbers tied to a label.** The reply is cut into clauses (sentence ends, commas and semicolons outside
numbers, line breaks, brackets, spaced dashes, a colon between dollar figures, and "and"/"but" before a
number); ids, emails, times and dates are masked first so their digits are not read as amounts. Within a
clause, the number *tied* to an occurrence of the label is the nearest number of the wanted unit (money,
count, percent or any) within ``window`` tokens, ties going to the number before the label ("13 delivered on
time, 2 late"). The denominator of "13 of 15" / "13 out of the 15" is never tied to a label, and a label right
after "not" or "never" ("2 were not on time") is not an occurrence. A label that is a clause of its own, opening it
("Overall, you were charged $312.89"; "In total, …"), is tied to the first number of the wanted unit in the next
clause on its line. A count of some beside others ("two other tickets", "3 more refunds") is tied to no label that
must give the whole.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from dataclasses import dataclass
from datetime import date, datetime
from functools import cached_property
from typing import Literal

from dateutil import parser as date_parser

Unit = Literal["any", "money", "count", "percent"]

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
          r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_WEEKDAY = r"(?:(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)\.?|(?:mon|tues|wednes|thurs|fri|satur|sun)day)"
_DAY = r"[0-3]?[0-9](?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+[12][0-9]{3})"
_DATE = re.compile(
    rf"(?<![\w/.-])(?:"
    rf"[12][0-9]{{3}}-[01]?[0-9]-[0-3]?[0-9]"  # ISO 2025-09-05 (also the date of 2025-09-05T16:10)
    rf"|[01]?[0-9]/[0-3]?[0-9](?:/(?:[12][0-9]{{3}}|[0-9]{{2}}))?(?![\w/])"  # US 9/5, 09/05/2025, 9/5/25
    rf"|(?:{_WEEKDAY},?\s+)?(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}\.?{_YEAR}?(?![\w])"  # 5 September 2025, 5th of Sept
    rf"|(?:{_WEEKDAY},?\s+)?{_MONTH}\.?\s+{_DAY}{_YEAR}?(?![\w])"  # Sep 5, Friday, Sept. 5, September 5th, 2025
    rf")",
    re.IGNORECASE,
)
_DAY_LIST = re.compile(
    rf"(?<![\w/.-])(?P<month>{_MONTH})\.?\s+{_DAY}(?P<rest>(?:\s*,\s*{_DAY}(?!\w))*\s*,?\s+(?:and|&)\s+{_DAY})"
    rf"(?P<year>{_YEAR})?(?![\w%$]|[.,:/-]?[0-9])",
    re.IGNORECASE,
)
"""Days listed after one month ("August 22, 25 and 26", "September 2 and 3"): each is a date of that month."""
_LEAP_YEARS = (datetime(2000, 1, 1), datetime(2004, 1, 1))  # two defaults: a year-less span parses differently


_ID_LIST = re.compile(r"\b([a-z]{2,5})-(\d{6}-\d{3})((?:(?:\s*,\s*(?:and\s+)?|\s+and\s+|\s*/\s*)\d{6}-\d{3}\b)+)")
_BARE_ID = re.compile(r"\d{6}-\d{3}")


def with_full_ids(text: str) -> str:
    """``text`` with the ids of an abbreviated list written out: in "tick-250830-902, 250830-901 and
    250831-901" the bare ids after the first take its prefix, as a reader takes them."""
    return _ID_LIST.sub(lambda m: f"{m[1]}-{m[2]}" + _BARE_ID.sub(lambda b: f"{m[1]}-{b[0]}", m[3]), text)


_LIST_ITEM = re.compile(r"\s*(?:[-*\u2022]|\d{1,3}[.)])\s")


_HEADING_LINE = re.compile(r"#{1,6}\s+\S.*|\*\*[^*]+\*\*|__[^_]+__")
"""A line that is a heading by its markup: a Markdown heading, or a line all in bold."""


def with_headings(text: str) -> str:
    """``text`` with each list item led by the heading it sits under, in brackets: after "Declined under policy:"
    the item "- tick-250913-964: delivered in 7 business days" reads "- [Declined under policy] tick-250913-964: …",
    as a reader takes it. A heading is a line ending in a colon (bold or not), a Markdown heading or a line all in
    bold ("**Low (2)**"); any other line ends its section."""
    lines, heading = [], ""
    for line in text.splitlines():
        if item := _LIST_ITEM.match(line):
            lines.append(f"{item[0]}[{heading}] {line[item.end():]}" if heading else line)
            continue
        stripped = line.strip().strip("*_#").strip()
        if stripped:
            heading = stripped[:-1] if stripped.endswith(":") else \
                stripped if _HEADING_LINE.fullmatch(line.strip()) else ""
        lines.append(line)
    return "\n".join(lines)


def clean(text: str) -> str:
    """NFKC-normalised text (full-width digits, non-breaking spaces, ligatures made plain)."""
    return unicodedata.normalize("NFKC", text)


def _parse_span(span: str) -> tuple[date, bool] | None:
    """The date a candidate span names and whether it states its year (None: not a date)."""
    try:
        first, second = (date_parser.parse(span, default=d, fuzzy=True).date() for d in _LEAP_YEARS)
    except (ValueError, OverflowError, TypeError):
        return None
    return first, first.year == second.year


def _nearest_year(parsed: tuple[date, bool] | None, today: date) -> date | None:
    """The date a parsed span names, or None; a missing year is the one nearest ``today``."""
    if parsed is None:
        return None
    first, has_year = parsed
    if has_year:
        return first
    nearest: date | None = None
    for year in (today.year - 1, today.year, today.year + 1):
        try:
            guess = first.replace(year=year)
        except ValueError:  # 29 February in a common year
            continue
        if nearest is None or abs((guess - today).days) < abs((nearest - today).days):
            nearest = guess
    return nearest


def dates_in(text: str, today: date) -> frozenset[date]:
    """Every calendar date written in ``text``, in any common English form."""
    return Reading(text).dates(today)


# -- numbers ------------------------------------------------------------------------------------
_NUMBER = re.compile(
    r"(?<![\w$./,:-])(?P<cur>(?:US)?\$\s?|USD\s?)?(?P<num>[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?)"
    r"(?P<pct>\s?%|\s+percent\b)?(?P<suf>\s+(?:dollars?|USD)\b)?(?![\w/-]|[.,][0-9])",
    re.IGNORECASE,
)
_WORDS = ("zero", "", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
NUMBER_WORDS = {w: i for i, w in enumerate(_WORDS) if w} | _TENS
"""Counts written as words ("seven orders"). "one" is left out: it is far more often a pronoun."""
_ONES = {"one": 1} | {w: i for w, i in NUMBER_WORDS.items() if 0 < i < 10}
_MASK = re.compile(
    r"(?<!\S)[^\s@]++@\S+"  # emails
    r"|\bhttps?://\S+"  # links
    r"|(?<![^\W_])[^\W_]++(?:-[^\W_]++)+"  # hyphenated words; those with a digit are ids: ord-250905-002
    r"|\b[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?\b"  # times
    r"|\(?\b[0-9]{3}\)?[ .-][0-9]{3}[ .-][0-9]{4}\b",  # phone numbers
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Amount:
    """One number written in a reply, with what its writing says about its unit."""

    value: float
    money: bool
    percent: bool
    whole: bool

    def is_a(self, unit: Unit) -> bool:
        if unit == "money":
            return self.money
        if unit == "percent":
            return self.percent
        if unit == "count":
            return self.whole and not self.money and not self.percent
        return True


def _amount(match: re.Match[str]) -> Amount | None:
    digits = match.group("num").replace(",", "")
    try:
        value = float(digits)
    except ValueError:
        return None
    cents = "." in digits and len(digits.rsplit(".", 1)[1]) == 2
    money = bool(match.group("cur") or match.group("suf")) or cents
    return Amount(value=value, money=money, percent=bool(match.group("pct")), whole="." not in digits)


def _blank_id(match: re.Match[str]) -> str:
    span = match.group()
    return " " if "@" in span or "://" in span or any(ch.isdigit() for ch in span) else span


def amounts_in(text: str) -> list[Amount]:
    """Every number written in digits in ``text`` once ids, dates and the like are masked."""
    return Reading(text).amounts


def mentions_money(text: str, value: float, tol: float = 0.005) -> bool:
    """The amount appears, with or without ``$``/``USD``, thousands commas or cents."""
    return Reading(text).mentions_money(value, tol)


# -- names --------------------------------------------------------------------------------------
_ALNUM_RUN = re.compile(r"[^\W_]+")


def _compact(text: str) -> tuple[str, set[int], set[int]]:
    """Lower-case letters and digits only (accents dropped), with the offsets where words start and end."""
    plain = unicodedata.normalize("NFKD", clean(text)).casefold()
    if not plain.isascii():
        plain = "".join(ch for ch in plain if not unicodedata.combining(ch))
    runs = _ALNUM_RUN.findall(plain)
    starts, ends, at = set(), set(), 0
    for run in runs:
        starts.add(at)
        at += len(run)
        ends.add(at)
    return "".join(runs), starts, ends


def mentions_name(name: str, text: str) -> bool:
    """The name appears whole, ignoring case, accents, spacing and punctuation ("kayla oneil" for "Kayla O'Neil")."""
    wanted = _compact(name)[0]
    if not wanted:
        return False
    haystack, starts, ends = _compact(text)
    at = haystack.find(wanted)
    while at >= 0:
        if at in starts and at + len(wanted) in ends:
            return True
        at = haystack.find(wanted, at + 1)
    return False


# -- numbers tied to a label --------------------------------------------------------------------
_CLAUSE_END = re.compile(
    r"[;!?\n()\[\]]|[.,](?=\s|$)|(?<![0-9])\s[-–—]+\s|\s[-–—]+\s(?!\$?\s?[0-9])"  # "$1,451.38 - $375.09": a minus
    rf"|\b(?:and|but|while|whereas)\s+(?=[$0-9]|(?:{'|'.join(NUMBER_WORDS)})\b)",  # "13 on time and 2 late": two clauses
    re.IGNORECASE,
)
_DOLLARS = re.compile(r"\$\s?\d")


def _colon_parts(clause: str) -> list[str]:
    """``clause`` cut at each colon between two dollar figures: "$511.25 back in total: $360.05 for the card and
    $151.20 for the board" states the total, then its breakdown; "Total: $511.25" (no figure before the colon) and
    "Owed across 3 orders: $124.97" (a count before it) give the label the figure after it."""
    parts: list[str] = []
    for piece in clause.split(": "):
        if parts and not (_DOLLARS.search(parts[-1]) and _DOLLARS.match(piece.lstrip())):
            parts[-1] += ": " + piece
        else:
            parts.append(piece)
    return parts


_EMPTY_ASIDE = re.compile(r"\([^\w()]*\)")
"""Brackets left with nothing in them once ids are masked ("Priya Natarajan (emp-092) has 6"): not a clause
of their own, so the name stays in the clause of its figure."""
_COUNT_ASIDE = re.compile(r"(?<=[^\W\d_])\s*\((\d+)\)")
"""A whole number alone in brackets right after a word: that word's count ("Orders (6):", "Still not arrived
(2): ..."), read as if the brackets were not there (a bracket otherwise ends a clause)."""
_MONEY_ASIDE = re.compile(r"\s*\$\s?\d")
"""What opens a bracket of dollar amounts right after a label ("The refunds ($636.75 and $44.49) have been approved"):
the label's amounts, when its clause holds none."""


def _clause_split(text: str) -> list[tuple[str, bool]]:
    """``text`` cut into clauses (``_CLAUSE_END``), each with whether a bracket of dollar amounts follows it."""
    out, start = [], 0
    for m in _CLAUSE_END.finditer(text):
        out.append((text[start:m.start()], m.group() == "(" and _MONEY_ASIDE.match(text, m.end()) is not None))
        start = m.end()
    return [*out, (text[start:], False)]


_TOKEN = re.compile(rf"{_NUMBER.pattern}|(?P<word>[^\W\d_]+(?:['’][^\W\d_]+)?)", re.IGNORECASE)
_NEGATORS = frozenset({"not", "never"})
_OF_FILLERS = frozenset({"the", "our", "all", "those", "these", "her", "his", "their", "its"})
_NONE = frozenset({"none", "neither"})
"""Words that, like the 13 of "13 of 15", take a whole after "of": "none of Priya's 6" counts her tickets, not a label's."""
_DETERMINERS = frozenset({"the", "those", "these"})
"""Words that make the number after them a reference to things already in view, not a count ("the two orders
are 39 days apart")."""
_SEPARATES = frozenset({"separate", "distinct"})
"""Words that make the number before them say how things in view divide, not how many there are in all ("it's two
separate orders, each charged once")."""

_PARTITIVES = frozenset({"other", "more", "additional", "further", "remaining"})
"""Words that make the number before them count some of the things beside others already counted, not all of them
("two other unresolved tickets from platinum customers", "3 more refunds")."""


@dataclass(frozen=True)
class _Token:
    word: str | None
    amount: Amount | None


def _count(value: int) -> _Token:
    return _Token(None, Amount(float(value), money=False, percent=False, whole=True))


def _tokens(clause: str) -> list[_Token]:
    """Words (lower case) and numbers (digits, or number words: "seven", "twenty-one") of one clause."""
    out: list[_Token] = []
    for m in _TOKEN.finditer(clause):
        word = m.group("word")
        if word is None:
            amount = _amount(m)
            if amount is not None:
                out.append(_Token(None, amount))
            continue
        lowered = word.casefold()
        tens = out[-1].amount if out and out[-1].word is None and out[-1].amount is not None else None
        if lowered in _ONES and tens is not None and tens.value in _TENS.values() and clause[m.start() - 1] in "- ":
            out[-1] = _count(int(tens.value) + _ONES[lowered])
        elif lowered in NUMBER_WORDS:
            out.append(_count(NUMBER_WORDS[lowered]))
        else:
            out.append(_Token(lowered, None))
    return out


def _denominators(tokens: list[_Token]) -> set[int]:
    """Indexes of the 15 in "13 of 15", "13 out of the 15", "none of Priya's 6": the whole, not the count of anything
    labelled."""
    out = set()
    for i, tok in enumerate(tokens):
        if tok.amount is None and tok.word not in _NONE:
            continue
        j = i + 1
        if j < len(tokens) and tokens[j].word == "out":
            j += 1
        if j < len(tokens) and tokens[j].word == "of":
            j += 1
            while j < len(tokens) and (tokens[j].word in _OF_FILLERS or _possessive(tokens[j].word)):
                j += 1
            if j < len(tokens) and tokens[j].amount is not None:
                out.add(j)
    return out


def _possessive(word: str | None) -> bool:
    return word is not None and word.endswith(("'s", "’s"))


def label_words(label: str) -> list[str]:
    """A label as the words it is matched by ("on-time" and "On time" are both ["on", "time"])."""
    return [m.group("word").casefold() for m in _TOKEN.finditer(clean(label)) if m.group("word")]


def _label_word(token: _Token, want: str, last: bool) -> bool:
    got = token.word
    return got is not None and (got == want or (last and got in (want + "s", want + "es", want.removesuffix("y") + "ies")))


def _label_at(tokens: list[_Token], i: int, words: list[str]) -> int | None:
    """The index where the label ``words`` starting at token ``i`` ends. Its words may be parted by fillers and one
    number after them ("from our 4 platinum customers" for "from platinum customers"): that number counts the
    label's last word, not what the label stands for, and a number inside a label is tied to none."""
    j = i
    for k, want in enumerate(words):
        last = k == len(words) - 1
        if k and j < len(tokens) and not _label_word(tokens[j], want, last):
            while j < len(tokens) and tokens[j].word in _OF_FILLERS:
                j += 1
            if j < len(tokens) and tokens[j].amount is not None and tokens[j - 1].word in _OF_FILLERS:
                j += 1
        if j >= len(tokens) or not _label_word(tokens[j], want, last):
            return None
        j += 1
    before = [t.word for t in tokens[max(0, i - 2):i]]
    if any(w is not None and (w in _NEGATORS or w.endswith(("n't", "n’t"))) for w in before):
        return None
    return j - 1


@dataclass(frozen=True)
class _Clause:
    tokens: list[_Token]
    numbers: list[int]  # indexes of the tokens that are numbers, denominators left out
    references: frozenset[int]  # before a label, what makes it things in view: "the two", "two separate"
    partial: frozenset[int]  # the numbers that count some beside others: "two other", "3 more"


def _clause(part: str) -> _Clause:
    tokens = _tokens(part)
    skip = _denominators(tokens)
    numbers = [i for i, t in enumerate(tokens) if t.amount is not None and i not in skip]
    pointed = {i for i in numbers if i and tokens[i - 1].word in _DETERMINERS}
    divided = {i + 1 for i in numbers if i + 1 < len(tokens) and tokens[i + 1].word in _SEPARATES}
    partial = {i for i in numbers if i + 1 < len(tokens) and tokens[i + 1].word in _PARTITIVES}
    return _Clause(tokens, numbers, frozenset(pointed | divided), frozenset(partial))


def tied_numbers(text: str, labels: list[str], unit: Unit = "any", window: int = 8,
                 parts: bool = True) -> list[float | None]:
    """For every occurrence of any of ``labels``: the number tied to it (None when no number of the unit is near).
    ``parts=False`` leaves out what is not a count of the whole: a label that a number points at rather than counts
    ("the two orders"), and a label on a breakdown line about a part ("- Brian Harris: 2 refunds, $432.55")."""
    return Reading(text).tied_numbers(labels, unit, window, parts)


def _tied_in(reading: Reading, labels: list[str], unit: Unit, window: int, parts: bool) -> list[float | None]:
    wanted = [w for w in (label_words(label) for label in labels) if w]
    stems = tuple({w[0].removesuffix("y") for w in wanted})  # the first word, before a plural ending
    out: list[float | None] = []
    for index, (_part, folded) in enumerate(reading.clauses):
        if not any(stem in folded for stem in stems):  # cheap first: most clauses lack the label
            continue
        if not parts and reading.on_a_part_line(index, stems):
            continue
        clause = reading.clause(index)
        tokens = clause.tokens
        at = [i for i in clause.numbers if tokens[i].amount.is_a(unit)  # type: ignore[union-attr]
              and (parts or i not in clause.partial)]
        for i in range(len(tokens)):
            word = tokens[i].word
            if word is None or not word.startswith(stems):
                continue
            end = next((found for w in wanted if (found := _label_at(tokens, i, w)) is not None), None)
            if end is None:
                continue
            if not parts and i - 1 in clause.references:  # "the two orders": things pointed at, not counted
                out.append(None)
                continue
            best: tuple[int, int, float] | None = None
            for j in at[bisect_left(at, i - window):bisect_left(at, end + window + 1)]:
                if i <= j <= end:
                    continue
                key = (i - j if j < i else j - end, 0 if j < i else 1, tokens[j].amount.value)  # type: ignore[union-attr]
                if best is None or key < best:
                    best = key
            linked = best is not None and best[1] == 1 and all(t.word in _LINKS for t in tokens[end + 1:best[0] + end])
            if i == 0 and not linked and reading.heads_a_labelled_line(index) and \
                    (concluded := _line_result(reading, index, unit)) is not None:
                out.append(concluded)  # a heading over a computation in words: what it comes to
                continue
            if best is None and i == 0 and reading.heads_a_labelled_line(index):
                out.append(_rest_of_line(reading, index, unit))
                continue
            if best is None and i == 0 and end == len(tokens) - 1 and index + 1 < len(reading.clauses) \
                    and reading.line_of(index + 1) == reading.line_of(index):
                out.append(_first_amount(reading.clause(index + 1), unit))  # "Overall, you were charged $312.89"
                continue
            if best is not None and linked \
                    and (best[0] > 1 or (i == 0 and reading.heads_a_labelled_line(index))) \
                    and (result := _result(reading, index, unit)) is not None:
                out.append(result)  # "Net spend: $1,451.38 minus $375.09 = $1,076.29": what the computation comes to
                continue
            if best is None and reading.money_aside_after(index) and all(t.word is None for t in tokens[end + 1:]):
                out.append(_first_amount(reading.clause(index + 1), unit))  # "The refunds ($636.75 and $44.49)"
                continue
            out.append(best[2] if best is not None else None)
    return out


_WHOLE = re.compile(r"\b(?:total|overall|all|altogether|combined|sum|summary|grand)\b", re.IGNORECASE)
"""Words that make a list item's head the whole, not a part ("- Total: 8 refunds")."""

_LINE_HEAD = re.compile(r"\s*(?P<item>[-*•]|\d+[.)])?\s*(?:\*\*|__)?(?P<head>[^\W\d_][^:\n$]*):")
"""A line that opens with a label and a colon ("- UPS Ground: 13 orders, $12.99 in shipping"; "- Dead on arrival (DOA):
$114.00"; "**Net spend:** ..."), no figure before the colon; ``item`` is its list marker, if any, ``head`` its label."""


def _rest_of_line(reading: Reading, index: int, unit: Unit) -> float | None:
    """The first number of ``unit`` after clause ``index`` on its line: what a labelled line ("- UPS Ground: 13
    orders, $12.99 in shipping") says of its label, when the label's own clause has no number of that unit; or,
    when that number opens a computation, what it comes to ("Net spend: $1,451.38 minus $375.09 = $1,076.29")."""
    line = reading.line_of(index)
    for later in range(index + 1, len(reading.clauses)):
        if reading.line_of(later) != line:
            return None
        if (value := _first_amount(reading.clause(later), unit)) is not None:
            result = _result(reading, later, unit)
            return value if result is None else result
    return None


def _line_result(reading: Reading, index: int, unit: Unit) -> float | None:
    """What the computation on clause ``index``'s line comes to, from that clause on: the last result
    (:func:`_result`, "=" or words) of its clauses, or None when none computes ("Net spend: We've captured $1,451.38 ... Minus
    $375.09 in refunds, that's $1,076.29": round 150)."""
    line = reading.line_of(index)
    results = [result for i in range(index, len(reading.clauses)) if reading.line_of(i) == line
               if (result := _result(reading, i, unit, in_words=True)) is not None]
    return results[-1] if results else None


_LINKS = frozenset({"is", "was", "are", "were", "comes", "came", "to", "of", "works", "out", "at", "equals", "totals"})
"""Words that join a label to the computation giving it ("the net is $1,451.38 minus $375.09 = $1,076.29")."""

_COMES_TO = re.compile(r"=|\b(?:that['’]s|that is|that leaves|which leaves|leaving|(?:which )?comes? to|for a net of)"
                       r"(?=\W*(?:\$|USD|[0-9]))", re.IGNORECASE)
"""What joins a computation to its result in words, right before the figure ("... minus $375.09, that's $1,076.29";
"leaving $1,076.29"), or "="."""


def _result(reading: Reading, index: int, unit: Unit, in_words: bool = False) -> float | None:
    """What a computation in clause ``index`` comes to: the first number of ``unit`` after its last "=" ("$1,451.38
    captured minus $375.09 refunded = $1,076.29" comes to 1,076.29), or with ``in_words`` after its last
    :data:`_COMES_TO` join; None when the clause has none before one."""
    part = reading.clauses[index][0]
    joins = list(_COMES_TO.finditer(part) if in_words else re.finditer("=", part))
    return _first_amount(_clause(part[joins[-1].end():]), unit) if joins else None


def _first_amount(clause: _Clause, unit: Unit) -> float | None:
    """The first number of ``unit`` in ``clause`` (None when it holds none)."""
    return next((clause.tokens[j].amount.value for j in clause.numbers  # type: ignore[union-attr]
                 if clause.tokens[j].amount.is_a(unit)), None)  # type: ignore[union-attr]


FUNCTION_WORDS = frozenset({
    "a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "from", "with", "as", "into", "onto", "over", "under",
    "up", "down", "about", "around", "than", "then", "that", "this", "these", "those", "it", "its", "it's", "is", "are",
    "was", "were", "be", "been", "being", "am", "has", "have", "had", "do", "does", "did", "will", "would", "shall",
    "should", "can", "could", "may", "might", "must", "so", "just", "only", "still", "also", "even", "now", "already",
    "yet", "again", "all", "any", "each", "every", "both", "either", "some", "such", "per", "via", "and", "or", "but",
    "nor", "if", "when", "while", "which", "who", "whom", "whose", "what", "where", "there", "here", "our", "your", "my",
    "his", "her", "their", "we", "you", "they", "he", "she", "i", "me", "us", "them",
})
"""The small words that hold an English sentence together (and never name what a figure is about)."""


def has_sentence(text: str) -> bool:
    """Whether the text holds at least one sentence, not only values: some clause of four or more words, two
    of them small words ("the", "is", "your" …). A comma-joined list of ids, names and numbers has none."""
    for part in _CLAUSE_END.split(Reading(text).masked):
        words = [m.group("word").casefold() for m in _TOKEN.finditer(part) if m.group("word")]
        if len(words) >= 4 and sum(w in FUNCTION_WORDS for w in words) >= 2:
            return True
    return False


def echoed_share(text: str, source: str, run: int = 4) -> float:
    """The share of the text's runs of ``run`` words that also occur in ``source`` (1.0: the text only
    repeats it). Words are compared lower-case, punctuation aside."""
    def runs(words: list[str]) -> list[tuple[str, ...]]:
        return [tuple(words[i:i + run]) for i in range(len(words) - run + 1)]

    mine = runs([m.group("word").casefold() for m in _TOKEN.finditer(clean(text)) if m.group("word")])
    if not mine:
        return 0.0
    theirs = set(runs([m.group("word").casefold() for m in _TOKEN.finditer(clean(source)) if m.group("word")]))
    return sum(r in theirs for r in mine) / len(mine)


# -- pasted tool output -------------------------------------------------------------------------
_JSON_OPEN = re.compile(r"[\[{]\s*([\"'])[^\"'\n]{0,80}\1\s*:")  # {"id": or {'id': (a JSON object or Python dict)
_JSON_KEY = re.compile(r"([\"'])[\w .-]{1,80}\1\s*:")
_ERROR_KEY = re.compile(r"[\"']error[\"']\s*:")


def tool_payload_in(text: str, max_keys: int = 3) -> str:
    """Why the text looks like pasted tool output (JSON objects, error payloads, ``max_keys`` quoted keys), or ""."""
    text = clean(text)
    if _ERROR_KEY.search(text):
        return "an error payload"
    if _JSON_OPEN.search(text):
        return "a JSON object"
    keys = sum(1 for _ in _JSON_KEY.finditer(text))
    if keys >= max_keys:
        return f"{keys} quoted keys"
    return ""


class Reading:
    """One reply, read once: its dates, masked form, amounts and clauses are worked out on first use
    and kept on the object, so the several criteria that read one reply share the work (the grader
    keeps one per episode; nothing is cached process-wide)."""

    def __init__(self, text: str) -> None:
        self.text = clean(text)
        self._spans: dict[str, tuple[date, bool] | None] = {}
        self._dates: dict[date, frozenset[date]] = {}
        self._clauses: dict[int, _Clause] = {}

    def _span(self, span: str) -> tuple[date, bool] | None:
        key = span.casefold()
        if key not in self._spans:
            self._spans[key] = _parse_span(key)
        return self._spans[key]

    def dates(self, today: date) -> frozenset[date]:
        """Every calendar date written in the reply; a year left out is the one nearest ``today``."""
        if today not in self._dates:
            spans = [m.group() for m in _DATE.finditer(self.text)] + [
                f"{m['month']} {day}{m['year'] or ''}" for m in _DAY_LIST.finditer(self.text)
                for day in re.findall(r"[0-9]+", self.text[m.end("month"):m.end("rest")])]
            found = (_nearest_year(self._span(span), today) for span in spans)
            self._dates[today] = frozenset(day for day in found if day is not None)
        return self._dates[today]

    @cached_property
    def masked(self) -> str:
        """The text with ids, emails, links, times, phone numbers and dates blanked out (their digits are not amounts)."""
        return _DATE.sub(lambda m: " " if self._span(m.group()) is not None else m.group(),
                         _MASK.sub(_blank_id, self.text))

    @cached_property
    def amounts(self) -> list[Amount]:
        return [a for m in _NUMBER.finditer(self.masked) if (a := _amount(m)) is not None]

    def mentions_money(self, value: float, tol: float = 0.005) -> bool:
        return any(abs(a.value - value) <= tol + 1e-9 for a in self.amounts)

    @cached_property
    def _lines(self) -> list[str]:
        return _COUNT_ASIDE.sub(r" \1", _EMPTY_ASIDE.sub(" ", self.masked)).split("\n")

    @cached_property
    def _lined_clauses(self) -> tuple[tuple[str, str, int, bool], ...]:
        """Each clause, case-folded, with its line and whether a bracket of dollar amounts follows it."""
        out = []
        for line, text in enumerate(self._lines):
            for clause, aside in _clause_split(text):
                parts = [part for part in _colon_parts(clause) if part.strip()]
                out += [(part, part.casefold(), line, aside and k == len(parts) - 1) for k, part in enumerate(parts)]
        return tuple(out)

    @cached_property
    def clauses(self) -> tuple[tuple[str, str], ...]:
        """The reply's clauses (ids and dates masked, brackets they emptied dropped), each with its case-folded
        text for a cheap label look-up."""
        return tuple((part, folded) for part, folded, _, _ in self._lined_clauses)

    def money_aside_after(self, index: int) -> bool:
        """Whether clause ``index`` is followed by a bracket opening with a dollar amount (clause ``index + 1``)."""
        return self._lined_clauses[index][3]

    def line_of(self, index: int) -> int:
        """The line of the reply that clause ``index`` is on."""
        return self._lined_clauses[index][2]

    def heads_a_labelled_line(self, index: int) -> bool:
        """Whether clause ``index`` opens a line that reads "label: ..." ("- Dead on arrival (DOA): $114.00")."""
        line = self.line_of(index)
        return (index == 0 or self.line_of(index - 1) != line) and _LINE_HEAD.match(self._lines[line]) is not None

    def clause(self, index: int) -> _Clause:
        """Clause ``index`` read into tokens (on first use)."""
        if index not in self._clauses:
            self._clauses[index] = _clause(self.clauses[index][0])
        return self._clauses[index]

    def on_a_part_line(self, index: int, stems: tuple[str, ...]) -> bool:
        """Whether clause ``index`` is on a list item about a part: one whose head (before its colon) names neither
        the label (one of ``stems``) nor a whole ("- Me: 2 refunds, $292.60", not "- Refunds: 8", "- Total: 8")."""
        line = _LINE_HEAD.match(self._lines[self.line_of(index)])
        return line is not None and line["item"] is not None \
            and not any(stem in line["head"].casefold() for stem in stems) and _WHOLE.search(line["head"]) is None

    def tied_numbers(self, labels: list[str], unit: Unit = "any", window: int = 8,
                     parts: bool = True) -> list[float | None]:
        return _tied_in(self, labels, unit, window, parts)


_NEGATION = re.compile(r"\b(?:not|no|never|nothing|none|neither|cannot|without|nor|ignore|disregard|\w+n['’]t"
                       r"|(?:outside|beyond|above|over|exceeds?)(?:\s+of)?\s+what|more\s+than)"
                       r"(?:\s+[\w'’]+){0,2}\s+$",
                       re.IGNORECASE)
_RETRACTION = re.compile(r"^[^.!?;\n]{0,100}?\b(?:disregard|ignore\b|(?:is|was) (?:not|no longer) (?:valid|right|correct)\b"
                         r"|(?:isn['’]t|wasn['’]t) (?:valid|right|correct)\b|(?:is|was) (?:wrong|incorrect|retracted|withdrawn)\b"
                         r"|no longer appl(?:y|ies)\b|(?:do|does)(?: not|n['’]t) apply\b"
                         r"|(?:is|are|was|were) (?:deprecated|outdated|superseded|obsolete|retired)\b)",
                         re.IGNORECASE)
"""Words after a phrase, in its sentence (a semicolon starts another), that take it back ("9/20 … please disregard it",
"that date was wrong", "its 7-day window … no longer applies")."""


def asserts(text: str, phrase: str) -> bool:
    """Whether ``text`` states ``phrase`` rather than denying it: an occurrence counts unless a negation
    ("don't", "not", "never", "nothing", "without", "ignore" …, or a limit: "beyond what", "more than") stands within the
    three words before it, in the same phrase (punctuation ends a negation's reach; "outside what I can approve" grants
    nothing), or its own sentence goes on to take it back ("a date of 9/20 you may
    have heard, please disregard it"). ("Don't refund the RAM line" does not assert "refund the RAM line";
    "please refund the RAM line" does.)"""
    if not phrase:
        return False
    at = text.find(phrase)
    while at >= 0:
        retracted = _RETRACTION.search(text[at + len(phrase):]) is not None
        if not _NEGATION.search(text[max(0, at - 40):at]) and not retracted:
            return True
        at = text.find(phrase, at + 1)
    return False
