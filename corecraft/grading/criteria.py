"""The deterministic checks, one short function per criterion kind (AppWorld-style).

Each returns ``(met, reason)``: a one-line reason a person can read in the results. The
LLM judge criteria live in :mod:`corecraft.grading.judge`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from typing import Any

from corecraft.grading.diff import TableDiff, world_diff
from corecraft.grading.figures import Figure, conflicts
from corecraft.grading.reply import (
    Reading,
    asserts,
    echoed_share,
    has_sentence,
    mentions_name,
    tool_payload_in,
    with_full_ids,
    with_headings,
)
from corecraft.grading.transcript import CallRecord, Transcript, written_text
from corecraft.tasks.matchers import regex_found
from corecraft.tasks.model import (
    ArgFormat,
    DbAssert,
    DbDiff,
    FinalReply,
    LabelledNumber,
    Minefield,
    ToolCalled,
    ToolNotCalled,
    Where,
    WorldValue,
)
from corecraft.world import db, models
from corecraft.world.store import World

Outcome = tuple[bool, str]


@dataclass
class Evidence:
    """Everything the checks read: the transcript and the episode's world (its end state and its changes)."""

    transcript: Transcript
    world: World
    first_call: dict[str, int | None] = field(default_factory=dict)  # tool_called id -> index of first match
    reference_reply: str = ""  # the reference's reply (a conversation's last message): max_chars_vs_reference, one_answer
    reference_written: tuple[str, ...] = ()  # the notes, details and posts the reference writes: one_answer
    prompt: str = ""  # the request the agent was given: part of the records a figure may come from

    @cached_property
    def reading(self) -> Reading:
        """The final reply read once for every criterion that reads its meaning."""
        return Reading(self.transcript.reply)

    @cached_property
    def written(self) -> list[tuple[CallRecord, str]]:
        """The notes, resolution details and Slack posts the agent's successful calls wrote, with their calls."""
        return [(call, text) for call in self.transcript.calls if call.ok and (text := written_text(call.name, call.args))]

    @cached_property
    def diff(self) -> dict[str, TableDiff]:
        return world_diff(self.world.conn)

    def in_records(self, figure: Figure, today: date) -> bool:
        """Whether the prompt or a tool result the agent read holds this figure's value (any way it is written)."""
        if figure.kind == "date":
            return date.fromordinal(int(figure.value)) in self._record_dates(today)
        return any(abs(v - figure.value) <= 0.005 for v in self.record_numbers)

    @cached_property
    def record_text(self) -> str:
        """The prompt and what the tools returned, less the echo of a text the agent wrote (its own claim, not a
        record: a wrong figure in its notes is no fact because the escalation it created repeats it)."""
        return "\n".join([self.prompt, *(json.dumps(c.result, default=str) for c in self.transcript.calls
                                          if written_text(c.name, c.args) is None)])

    @cached_property
    def record_numbers(self) -> list[float]:
        """The numbers of the records read, and what each order line read cost the customer (its price less the
        order's loyalty discount, per unit and in all), also less a fee at each rate the records state (a share of
        the price): a return refund quoted for another item is a fact the records bear, not a second answer (round
        147: "return the kit for a full refund of $113.05"; round 154: "if they approve it, the refund would be
        $674.25", $899.00 less 10% and the 15% fee)."""
        rates = sorted({float(rate) for rate in _RATE.findall(self.record_text) if 0 < float(rate) <= 50})
        paid = [amount for call in self.transcript.calls for amount in _paid_for_lines(call.result, rates)]
        return [*numbers_in(self.record_text), *paid]

    def _record_dates(self, today: date) -> frozenset[date]:
        return Reading(self.record_text).dates(today)

    def rows(self, table: str, where: Where) -> list[dict[str, Any]]:
        """Decoded rows of ``table`` matching ``where``; plain equalities are filtered in SQL."""
        model = models.TABLES_BY_NAME[table]
        sql_eq = {k: m.eq for k, m in where.items() if m.set_fields == {"eq"} and not isinstance(m.eq, list | dict)}
        clause = " AND ".join(f"{k} IS ?" for k in sql_eq)
        params = [db.encode_value(model, k, v) for k, v in sql_eq.items()]
        raw = self.world.conn.execute(f"{db.select_all(model)}{' WHERE ' + clause if clause else ''}", params)
        rows = [db.decode(model, r, self.world.tz) for r in raw]
        rest = {k: m for k, m in where.items() if k not in sql_eq}
        return [r for r in rows if all(m.matches(r.get(k)) for k, m in rest.items())]

    def matching_calls(self, tool: str | list[str], args: Where, include_errors: bool) -> list[int]:
        names = {tool} if isinstance(tool, str) else set(tool)
        return [i for i, c in enumerate(self.transcript.calls)
                if c.name in names and (include_errors or c.ok) and _args_match(c, args)]


def _args_match(call: CallRecord, args: Where) -> bool:
    return all(m.matches(call.args.get(k)) for k, m in args.items())


def db_assert(c: DbAssert, ev: Evidence) -> Outcome:
    if c.only_if is not None and not ev.rows(c.only_if.table, c.only_if.where):
        return True, f"not applicable: no {c.only_if.table} row matches {_where_text(c.only_if.where)}"
    rows = ev.rows(c.table, c.where)
    if c.count is not None and not c.count.ok(len(rows)):
        return False, f"{len(rows)} {c.table} row(s) match, expected {c.count.describe()}"
    if c.expect:
        if not rows:
            return False, f"no {c.table} row matches {_where_text(c.where)}"
        for row in rows:
            for key, matcher in c.expect.items():
                why = matcher.mismatch(row.get(key))
                if why:
                    return False, f"{c.table} {row.get('id')}: {key} {why}"
    return True, f"{len(rows)} {c.table} row(s) as expected"


def db_diff(c: DbDiff, ev: Evidence) -> Outcome:
    for table, change in ev.diff.items():
        if table in c.ignore:
            continue
        allowed = c.allow.get(table)
        if allowed is None:
            return False, f"{table} changed but no change is allowed there ({_change_text(change)})"
        for label, ids, rule in (("added", change.added, allowed.added), ("updated", list(change.updated), allowed.updated),
                                 ("deleted", change.deleted, allowed.deleted)):
            if not rule.ok(len(ids)):
                return False, f"{table}: {len(ids)} row(s) {label}, allowed {rule.describe()}"
        if allowed.fields is not None:
            for row_id, columns in change.updated.items():
                extra = sorted(set(columns) - set(allowed.fields) - {"updated_at"})
                if extra:
                    return False, f"{table} {row_id}: changed {', '.join(extra)}, allowed only {', '.join(allowed.fields)}"
    for table, allowed in c.allow.items():
        change = ev.diff.get(table, TableDiff())
        for label, n, rule in (("added", len(change.added), allowed.added), ("updated", len(change.updated), allowed.updated),
                               ("deleted", len(change.deleted), allowed.deleted)):
            if not rule.ok(n):
                return False, f"{table}: {n} row(s) {label}, expected {rule.describe()}"
    changed = ", ".join(f"{t} ({_change_text(d)})" for t, d in ev.diff.items() if t not in c.ignore) or "nothing"
    return True, f"only allowed changes: {changed}"


def tool_called(c: ToolCalled, ev: Evidence) -> Outcome:
    hits = ev.matching_calls(c.tool, c.args, c.include_errors)
    ev.first_call[c.id] = hits[0] if hits else None
    if not c.count.ok(len(hits)):
        return False, f"{len(hits)} matching {c.tools_text} call(s), expected {c.count.describe()}"
    return True, f"{len(hits)} matching {c.tools_text} call(s)"


def order_holds(c: ToolCalled, ev: Evidence) -> Outcome:
    """The before/after ordering of a met tool_called criterion (run after all tool_called checks)."""
    mine = ev.first_call.get(c.id)
    for other, want_before in ((c.before, True), (c.after, False)):
        if other is None:
            continue
        theirs = ev.first_call.get(other)
        if mine is None or theirs is None:
            return False, f"cannot order against {other}: one of the calls never happened"
        if (mine < theirs) != want_before:
            return False, f"{c.tools_text} came {'after' if want_before else 'before'} {other}"
    return True, ""


def tool_not_called(c: ToolNotCalled, ev: Evidence) -> Outcome:
    hits = ev.matching_calls(c.tool, c.args, include_errors=True)
    if hits:
        return False, f"{c.tool} was called {len(hits)} time(s) with matching arguments"
    return True, f"no matching {c.tool} call"


def _normalise(text: str, case_sensitive: bool) -> str:
    text = " ".join(with_full_ids(text).split())
    return text if case_sensitive else text.lower()


_NUMBER = re.compile(r"-?\$?\s?\d[\d,]*(?:\.\d+)?")


_RATE = re.compile(r"(?<![\d.])(\d{1,2}(?:\.\d+)?)\s?%")
"""A percentage written in the records ("15%", "10 %")."""


def _paid_for_lines(result: Any, rates: list[float]) -> list[float]:
    """For an order in a tool result (its ``lines``, ``subtotal`` and ``discount``): each line's price less the
    order's discount share, per unit and for the line, and that less each of ``rates`` percent of the price."""
    if not isinstance(result, dict):
        return []
    lines, subtotal, discount = result.get("lines"), result.get("subtotal"), result.get("discount")
    if not isinstance(lines, list) or not isinstance(subtotal, int | float) or not isinstance(discount, int | float) \
            or subtotal <= 0:
        return []
    kept = 1 - discount / subtotal
    prices = [line[key] for line in lines if isinstance(line, dict)
              for key in ("unit_price", "line_total") if isinstance(line.get(key), int | float)]
    return [round(price * kept - price * rate / 100, 2) for price in prices for rate in (0.0, *rates)]


def numbers_in(text: str) -> list[float]:
    """Every number in a text ($1,234.56 -> 1234.56)."""
    out = []
    for token in _NUMBER.findall(text):
        cleaned = token.replace("$", "").replace(",", "").replace(" ", "")
        try:
            out.append(float(cleaned))
        except ValueError:
            continue
    return out


def world_value(ref: WorldValue, ev: Evidence) -> Any:
    rows = ev.rows(ref.table, ref.where)
    return rows[0].get(ref.field) if rows else None


def final_reply(c: FinalReply, ev: Evidence) -> Outcome:
    """The reply checks on the message(s) ``c.scope`` names: the final reply, some one agent message, or
    everything the agent said joined in order."""
    if c.scope == "last_reply":
        return _reply_holds(c, ev, ev.transcript.reply, ev.reading)
    said = ev.transcript.agent_messages
    if c.scope == "dialogue":
        joined = "\n\n".join(said)
        met, why = _reply_holds(c, ev, joined, Reading(joined))
        return met, f"over the whole dialogue: {why}"
    why = "no agent message"
    for i, text in enumerate(said, 1):
        met, why = _reply_holds(c, ev, text, Reading(text))
        if met:
            return True, f"agent message {i} of {len(said)}: {why}"
    return False, f"no agent message qualifies (last: {why})"


def _reply_holds(c: FinalReply, ev: Evidence, text: str, reading: Reading) -> Outcome:
    reply = _normalise(text, c.case_sensitive)
    if not reply:
        return False, "no final reply"
    for needle in c.contains:
        if _normalise(needle, c.case_sensitive) not in reply:
            return False, f"reply lacks {needle!r}"
    if c.any_of and not any(_normalise(n, c.case_sensitive) in reply for n in c.any_of):
        return False, f"reply contains none of {c.any_of!r}"
    for needle in c.not_contains:
        if asserts(reply, _normalise(needle, c.case_sensitive)):
            return False, f"reply contains forbidden {needle!r}"
    flags = 0 if c.case_sensitive else re.IGNORECASE
    if c.regex and not (regex_found(c.regex, text, flags) or regex_found(c.regex, with_headings(text), flags)):
        return False, f"reply does not match /{c.regex}/"
    if c.number is not None and not any(abs(n - c.number.value) <= c.number.tol + 1e-9 for n in numbers_in(reply)):
        return False, f"reply has no number within {c.number.tol} of {c.number.value}"
    if c.world_value is not None:
        value = world_value(c.world_value, ev)
        if value is None:
            return False, f"no {c.world_value.table} row matches, so nothing to look for in the reply"
        if _normalise(str(value), c.case_sensitive) not in reply:
            return False, f"reply does not mention {value}"
    return _meaning(c, ev, text, reading)


def _meaning(c: FinalReply, ev: Evidence, text: str, reading: Reading) -> Outcome:
    """The checks that read meaning rather than one spelling (:mod:`corecraft.grading.reply`)."""
    if c.dates or c.not_dates:
        seen = reading.dates(ev.world.now.date())
        for day in c.dates:
            if day not in seen:
                return False, f"reply never gives the date {day.isoformat()}"
        for day in c.not_dates:
            if day in seen:
                return False, f"reply gives the forbidden date {day.isoformat()}"
    for amount in c.money:
        if not reading.mentions_money(amount):
            return False, f"reply never states the amount {amount:,.2f}"
    for name in c.names:
        if not mentions_name(name, text):
            return False, f"reply never names {name!r}"
    for name in c.not_names:
        if mentions_name(name, text):
            return False, f"reply names {name!r}"
    for want in c.labelled:
        tied = reading.tied_numbers(want.labels, want.unit, want.window)
        if not any(n is not None and abs(n - want.value) <= want.tol + 1e-9 for n in tied):
            stated = ", ".join(f"{n:g}" for n in tied if n is not None) or "none"
            return False, f"reply does not tie {want.value:g} to {want.labels[0]!r} (numbers tied to it: {stated})"
    wrong = _mislabelled(reading, c.if_labelled)
    if wrong:
        return False, f"reply {wrong}"
    if c.one_answer:
        other = _other_answer(ev, text)
        if other:
            return False, f"reply gives another answer: {other}"
        for call, written in ev.written:
            if other := _other_answer(ev, written):
                return False, f"{call.name} writes another answer: {other}"
    if c.sentences and not has_sentence(text):
        return False, "reply is a bare list of values, with no sentence"
    if c.max_echo_of_prompt is not None and ev.prompt:
        echoed = echoed_share(text, ev.prompt)
        if echoed > c.max_echo_of_prompt:
            return False, f"reply repeats the request ({echoed:.0%} of its four-word runs)"
    if c.no_tool_payload:
        pasted = tool_payload_in(text)
        if pasted:
            return False, f"reply pastes tool output ({pasted})"
        for call, written in ev.written:
            if pasted := tool_payload_in(written):
                return False, f"{call.name} pastes tool output ({pasted})"
    if c.max_chars_vs_reference is not None and ev.reference_reply:
        limit = max(c.max_chars_vs_reference * len(ev.reference_reply), c.max_chars_at_least)
        if len(text) > limit:
            return False, (f"reply is {len(text):,} characters, over {c.max_chars_vs_reference:g}x "
                           f"the reference's {len(ev.reference_reply):,}")
    return True, "reply as expected"


def _other_answer(ev: Evidence, text: str) -> str:
    """The figures of ``text`` that give a fact the reference states (in its reply, notes, details or posts) another
    value the records do not bear, or ''."""
    today = ev.world.now.date()
    reference = "\n".join((ev.reference_reply, *ev.reference_written))
    return "; ".join(conflicts(text, reference, today, lambda f: ev.in_records(f, today))[:3])


def _mislabelled(reading: Reading, wanted: list[LabelledNumber]) -> str:
    """How ``reading`` ties a wrong number to one of ``wanted``'s labels (a count of the whole only), or ''."""
    for want in wanted:
        for n in reading.tied_numbers(want.labels, want.unit, want.window, parts=False):
            if n is not None and abs(n - want.value) > want.tol + 1e-9:
                return f"states {n:g} for {want.labels[0]!r}, which is {want.value:g}"
    return ""


def _format_problem(c: ArgFormat, call: CallRecord) -> str:
    value = call.args.get(c.arg)
    if not isinstance(value, str):
        return f"{c.arg} is missing or not text"
    words = len(value.split())
    checks: list[tuple[bool, Callable[[], str]]] = [
        (c.regex is not None and not regex_found(c.regex or "", value), lambda: f"does not match /{c.regex}/"),
        (c.starts_with is not None and not value.startswith(_fill(c.starts_with, call)),
         lambda: f"does not start with {_fill(c.starts_with or '', call)!r}"),
        (c.ends_with is not None and not value.rstrip().endswith(c.ends_with or ""), lambda: f"does not end with {c.ends_with!r}"),
        (c.max_words is not None and words > (c.max_words or 0), lambda: f"{words} words > {c.max_words}"),
        (c.min_words is not None and words < (c.min_words or 0), lambda: f"{words} words < {c.min_words}"),
        (c.max_chars is not None and len(value) > (c.max_chars or 0), lambda: f"{len(value)} characters > {c.max_chars}"),
        (c.date_format and not _is_date(value), lambda: f"{value!r} is not YYYY-MM-DD"),
        (c.no_digits_run is not None and _digit_run(value, c.no_digits_run or 99),
         lambda: f"contains a run of {c.no_digits_run}+ digits"),
        (c.all_caps and value != value.upper(), lambda: "is not all capitals"),
        (c.lowercase and value != value.lower(), lambda: "is not lowercase"),
    ]
    for failed, why in checks:
        if failed:
            return why()
    for needle in c.not_contains:
        if needle.lower() in value.lower():
            return f"contains {needle!r}"
    return _mislabelled(Reading(value), c.if_labelled)


_RECORD_ID = re.compile(r"\b[A-Za-z]+-[A-Za-z0-9-]+|\b\d{4}-\d{2}-\d{2}\b")  # record ids and ISO dates


def _digit_run(value: str, n: int) -> bool:
    """A run of ``n``+ digits once phone separators are dropped ("(555) 010-4477"). Record ids such as
    ``tick-250911-003`` and ISO dates are not phone numbers, so they are blanked out first."""
    return re.search(rf"\d{{{n},}}", re.sub(r"[\s().-]", "", _RECORD_ID.sub("#", value))) is not None


def _fill(template: str, call: CallRecord) -> str:
    try:
        return template.format(**{k: v for k, v in call.args.items() if isinstance(v, str | int | float)})
    except (KeyError, IndexError, ValueError):
        return template


def _is_date(value: str) -> bool:
    try:
        return re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) is not None and bool(date.fromisoformat(value))
    except ValueError:
        return False


def arg_format(c: ArgFormat, ev: Evidence) -> Outcome:
    calls = [ev.transcript.calls[i] for i in ev.matching_calls(c.tool, c.args, include_errors=False)]
    if not calls:
        return (True, f"no {c.tool} call, which is allowed") if c.optional else \
            (False, f"no successful {c.tool} call{' with those arguments' if c.args else ''} to check")
    for call in calls:
        why = _format_problem(c, call)
        if why:
            return False, f"{c.tool}.{c.arg} {why}"
    return True, f"{len(calls)} {c.tool} call(s) well formatted"


def minefield(mine: Minefield, ev: Evidence) -> Outcome:
    """``(tripped, reason)``."""
    if mine.tool is not None:
        hits = ev.matching_calls(mine.tool, mine.args, include_errors=True)  # an attempt counts
        return (True, f"forbidden {mine.tool} call attempted") if hits else (False, "not triggered")
    assert mine.world is not None
    rows = ev.rows(mine.world.table, mine.world.where)
    if mine.world.count.ok(len(rows)):
        return True, f"forbidden world state: {len(rows)} {mine.world.table} row(s) match"
    return False, "not triggered"


def _where_text(where: Where) -> str:
    return ", ".join(f"{k}" for k in where) or "(any)"


def _change_text(change: TableDiff) -> str:
    return f"+{len(change.added)} ~{len(change.updated)} -{len(change.deleted)}"


CHECKS: dict[str, Callable[[Any, Evidence], Outcome]] = {
    "db_assert": db_assert,
    "db_diff": db_diff,
    "tool_called": tool_called,
    "tool_not_called": tool_not_called,
    "final_reply": final_reply,
    "arg_format": arg_format,
}
