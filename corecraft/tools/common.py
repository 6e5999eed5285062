"""Shared pieces of the tool handlers: paging, text search, date filters, id lookups, new ids.

Every query uses bound parameters; only column and table names known from the models are
ever written into SQL text.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from typing import Annotated, Any

from pydantic import Field
from sqlmodel import SQLModel

from corecraft.tools.registry import Args, ToolContext, ToolError
from corecraft.world import db, text_index
from corecraft.world.models import Refund
from corecraft.world.rules import money

ISO_DATE = r"^\d{4}-\d{2}-\d{2}$"
DateStr = Annotated[str, Field(pattern=ISO_DATE, description="A date as YYYY-MM-DD (world's local time).")]
Id = Annotated[str, Field(min_length=1, max_length=64)]
Text = Annotated[str, Field(max_length=200)]


class PageArgs(Args):
    """Paging for every search: results come ``limit`` at a time from ``offset``."""

    limit: int = Field(default=10, ge=1, le=50, description="How many results to return (1-50, default 10).")
    offset: int = Field(default=0, ge=0, le=100_000,
                        description="How many matching results to skip (default 0).")


QUERY_WORDS = "(case-insensitive, partial words, an id from its start; all must match)."
"""How a search tool's ``query`` matches (:meth:`Query.text`), as its schema tells the model."""


def _escaped(word: str) -> str:
    """``word`` with LIKE's wildcards and escape character escaped (``ESCAPE '\\'``)."""
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class Query:
    """A WHERE clause built from optional filters, always with bound parameters."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []
        self.searched: tuple[tuple[str, ...], list[str]] = ((), [])
        """The columns and words of :meth:`text`, which :func:`page` may narrow through a text index."""

    def add(self, clause: str, *params: Any) -> Query:
        self.clauses.append(clause)
        self.params.extend(params)
        return self

    def add_if(self, condition: bool, clause: str, *params: Any) -> Query:
        """``clause`` only when ``condition`` holds (e.g. the filter argument was given)."""
        return self.add(clause, *params) if condition else self

    def eq(self, column: str, value: Any) -> Query:
        return self if value is None else self.add(f"{column} = ?", value)

    def text(self, columns: tuple[str, ...], query: str | None) -> Query:
        """Every word of ``query`` must appear (case-insensitive, partial) in one of ``columns``; in the record id
        (column ``id``) only as its start ("emp-036", "msg-2509"), and a number ("5070") only where no digit
        precedes it ("RTX 5070", "RTX5070"), so it does not match every id quoted in a text that happens to hold
        its digits ("ord-250705-001")."""
        self.searched = (columns, (query or "").split())
        for word in self.searched[1]:
            if word.isdigit():
                any_column = " OR ".join(f"{c} GLOB ?" if c == "id" else f"({c} GLOB ? OR {c} GLOB ?)" for c in columns)
                self.add(f"({any_column})", *[arg for c in columns for arg in (
                    [f"{word}*"] if c == "id" else [f"{word}*", f"*[^0-9]{word}*"])])
                continue
            escaped = _escaped(word)
            any_column = " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in columns)
            self.add(f"({any_column})", *[f"{escaped}%" if c == "id" else f"%{escaped}%" for c in columns])
        return self

    def ranked_by(self, column: str) -> tuple[str, list[str]]:
        """ORDER BY terms (each followed by a comma) and their parameters: how many of :meth:`text`'s words
        ``column`` holds, most first (a search for "refund limit" puts "Refund Approval Limits by Job Title"
        before an article that only mentions both); none without words."""
        words = self.searched[1]
        if not words:
            return "", []
        hits = " + ".join(f"({column} LIKE ? ESCAPE '\\')" for _ in words)
        return f"({hits}) DESC, ", [f"%{_escaped(word)}%" for word in words]

    def between_dates(self, ctx: ToolContext, column: str, after: str | None, before: str | None,
                      names: tuple[str, str] = ("after", "before")) -> Query:
        """``column`` on or after the day ``after`` and on or before the day ``before`` (inclusive).

        ``names`` are the argument names a bad date is reported under.
        """
        if after is not None:
            self.add(f"{column} >= ?", day_start(ctx, after, names[0]))
        if before is not None:
            self.add(f"{column} < ?", day_start(ctx, before, names[1], plus_days=1))
        return self

    def where(self) -> str:
        return (" WHERE " + " AND ".join(self.clauses)) if self.clauses else ""


def parse_day(value: str, field: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        message = f"{field}: {value!r} is not a real date (YYYY-MM-DD)"
        raise ToolError("invalid_argument", message, field) from None


def day_start(ctx: ToolContext, value: str, field: str, plus_days: int = 0) -> str:
    """The stored form of local midnight starting the day ``value`` (+ ``plus_days``)."""
    day = parse_day(value, field) + timedelta(days=plus_days)
    return db.encode_datetime(datetime.combine(day, time.min, tzinfo=ctx.world.tz))


def _scans(ctx: ToolContext, count_sql: str, params: list[Any]) -> bool:
    """Whether no index narrows the filter of ``count_sql`` (a text search, a case-insensitive match):
    SQLite's plan, which depends on the SQL text and the schema only, looked up once per text per world."""
    plans = ctx.world.query_plans
    if count_sql not in plans:
        plan = ctx.conn.execute(f"EXPLAIN QUERY PLAN {count_sql}", params).fetchall()
        plans[count_sql] = any(step[-1].startswith("SCAN") for step in plan)
    return plans[count_sql]


COUNT_CAP = 1000
"""A search counts its matches up to here (or to just past the page asked for, if later), so its cost
does not grow with the world: a larger total comes back as the cap with ``total_is_lower_bound: true``."""

WALK_COST = 10
"""A row read in an index's order and tested costs about this many rows found by the filter's index and
sorted (measured on the employees of the default world x100: 2.6 against 0.25 microseconds)."""


def _in_order(ctx: ToolContext, model: type[SQLModel], where: str, params: list[Any], order_by: str, total: int,
              wanted: int, capped: bool = False, order_params: Sequence[Any] = ()) -> str:
    """``where`` as the page query should test it. When the matches are dense, reading rows in ``order_by``
    order and testing each meets the ``wanted`` first matches after about ``wanted * rows / total`` rows,
    against the ``total`` that reading the matches by their filter's index and sorting them reads (a row
    walked costs about :data:`WALK_COST` rows found and sorted). When walking costs less, the filter is
    marked ``likely`` so SQLite walks the order's index instead, if one gives that order (its plan,
    looked up once per text per world, sorts nothing). A ``capped`` total (at least :data:`COUNT_CAP`
    matches) counts as dense: sorting them reads every one, while the walk stops at the page."""
    if not where or not total:
        return where
    rows = ctx.conn.execute(f"SELECT max(rowid) FROM {db.table(model)}").fetchone()[0] or 0
    if not capped and WALK_COST * wanted * rows >= total * total:
        return where
    walked = f" WHERE likely({where.removeprefix(' WHERE ')})"
    key = f"SELECT 1 FROM {db.table(model)}{walked} ORDER BY {order_by}"
    plans = ctx.world.query_plans
    if key not in plans:
        plan = ctx.conn.execute(f"EXPLAIN QUERY PLAN {key}", [*params, *order_params]).fetchall()
        plans[key] = not any("TEMP B-TREE" in step[-1] for step in plan)
    return walked if plans[key] else where


def page(ctx: ToolContext, model: type[SQLModel], query: Query, args: PageArgs, order_by: str,
         shape: Any = None, columns: dict[str, str] | None = None, order_params: Sequence[Any] = ()) -> dict[str, Any]:
    """Run a paged search over ``model``: total match count plus one page of decoded rows.
    ``order_params`` are bound to the ``?`` of ``order_by`` (a ranking by the query's words).

    ``columns`` replaces what some columns are read as (name -> SQL expression, e.g. ``"NULL"`` for a
    large JSON column the caller's ``shape`` drops), so a page does not decode what it does not show.

    The total is exact up to :data:`COUNT_CAP`. When an index narrows the filters (or there are none):
    two queries, a count of the matches from the index, stopped at the cap, then the page alone,
    which SQLite can read in ``order_by`` order and stop after ``offset + limit`` rows (when the
    matches are dense it is told to, see :func:`_in_order`); a page past the end is not read. When
    the filters need a full scan anyway: one scan, the total from a window count on the page query
    (a separate count would scan twice). ``order_by`` must be a total order, so the page does not
    depend on the plan SQLite picks. A text search over a table with a trigram index
    (:mod:`corecraft.world.text_index`)
    reads only the rows the index leaves, then checks the exact words.
    """
    cap = max(COUNT_CAP, args.offset + args.limit + 1)
    narrowed = text_index.narrowing(db.table_name(model), *query.searched)
    if narrowed is not None:
        query.add(*narrowed)
    where = query.where()
    count_sql = f"SELECT count(*) FROM {db.table(model)}{where}"
    page_sql = f"ORDER BY {order_by} LIMIT ? OFFSET ?"
    read = ", ".join((columns or {}).get(name, name) for name in db.column_names(model))
    if where and _scans(ctx, count_sql, query.params):
        rows = ctx.conn.execute(f"SELECT {read}, count(*) OVER () FROM {db.table(model)}{where} {page_sql}",
                                [*query.params, *order_params, args.limit, args.offset]).fetchall()
        total = min(rows[0][-1] if rows else ctx.conn.execute(count_sql, query.params).fetchone()[0], cap)
        rows = [r[:-1] for r in rows]
    else:
        total = ctx.conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {db.table(model)}{where} LIMIT ?)",
                                 [*query.params, cap]).fetchone()[0]
        rows = []
        if args.offset < total:
            walk = _in_order(ctx, model, where, query.params, order_by, total, args.offset + args.limit,
                             capped=total == cap, order_params=order_params)
            rows = ctx.conn.execute(f"SELECT {read} FROM {db.table(model)}{walk} {page_sql}",
                                    [*query.params, *order_params, args.limit, args.offset]).fetchall()
    results = [db.decode(model, r, ctx.world.tz) for r in rows]
    if shape is not None:
        results = [shape(r) for r in results]
    found = {"total": total, "offset": args.offset, "limit": args.limit,
             "has_more": args.offset + len(results) < total, "results": results}
    if total == cap:
        found["total_is_lower_bound"] = True
    return found


def require(ctx: ToolContext, model: type[SQLModel], row_id: str, field: str) -> dict[str, Any]:
    """The row with primary key ``row_id`` or a ``not_found`` error naming the argument."""
    row = db.fetch(ctx.conn, model, row_id, ctx.world.tz)
    if row is None:
        raise ToolError("not_found", f"no {model.__name__} with id {row_id!r}", field)
    return row


def next_id(ctx: ToolContext, model: type[SQLModel], prefix: str) -> str:
    """The next readable id for a row created now, e.g. ``ref-250915-004`` (a Slack message's id is its minute
    instead: :func:`corecraft.world.models.message_id`).

    A number past three digits makes a longer id that sorts among the shorter ones, so the day's
    highest is looked for width by width, widest first, each through the table's index on
    ``(length(id), id)`` (see :func:`corecraft.world.models._id_width`): a probe per width, not a scan of
    the day.
    """
    day = ctx.world.now.strftime("%y%m%d")
    stem = f"{prefix}-{day}-"
    table = db.table(model)
    widest = ctx.conn.execute(f"SELECT max(length(id)) FROM {table}").fetchone()[0] or 0
    for length in range(widest, len(stem), -1):
        last = ctx.conn.execute(f"SELECT max(id) FROM {table} WHERE length(id) = ? AND id >= ? AND id < ?",
                                (length, stem, stem[:-1] + ".")).fetchone()[0]
        if last is not None:
            return f"{stem}{int(last.rsplit('-', 1)[1]) + 1:03d}"
    return f"{stem}001"


def local(ctx: ToolContext, iso: str | None) -> datetime | None:
    """An ISO timestamp from a decoded row as an aware datetime."""
    return None if iso is None else datetime.fromisoformat(iso).astimezone(ctx.world.tz)


def fetch_rows(ctx: ToolContext, model: type[SQLModel], clause: str = "",
               params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Every row of ``model`` matching ``clause`` (e.g. ``"WHERE order_id = ? ORDER BY id"``), decoded."""
    rows = ctx.conn.execute(f"{db.select_all(model)} {clause}", params).fetchall()
    return [db.decode(model, r, ctx.world.tz) for r in rows]


COUNTED_REFUNDS = ("approved", "processed")
"""Refund statuses whose money has left (or is leaving) the payment."""


def refunded_total(ctx: ToolContext, payment_id: str) -> float:
    """Dollars refunded on a payment: its approved and processed refunds."""
    total = ctx.conn.execute(
        f"SELECT coalesce(sum(amount), 0) FROM {db.table(Refund)} WHERE payment_id = ? AND status IN (?, ?)",
        (payment_id, *COUNTED_REFUNDS),
    ).fetchone()[0]
    return money(total)
