"""The second stage of the task pipeline: a loaded task made ready to run and grade.

:func:`compile_task` resolves every ``include`` against the rubric library and checks everything
the schema cannot: tools and their arguments exist, tables and columns exist (with "did you
mean"), criterion ids are unique, orderings name ``tool_called`` criteria, test-split files carry
the canary. The result is a :class:`CompiledTask`, which is what episodes, the grader and
``evaluate`` take, so a task that compiled can never fail grading on an unknown table or column.
Problems come back as ``file:line: sentence`` (:class:`~corecraft.tasks.loader.TaskError`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from corecraft.tasks.loader import CANARY, Lines, Problem, TaskError, line_for
from corecraft.tasks.model import (
    ArgFormat,
    Criterion,
    DbAssert,
    DbDiff,
    FinalReply,
    Include,
    Task,
    ToolCalled,
    ToolNotCalled,
)
from corecraft.tools.registry import Toolkit
from corecraft.world import models

_CRITERION: TypeAdapter[Criterion] = TypeAdapter(Criterion)

RubricLibrary = Mapping[str, Mapping[str, Any]]
"""Named reusable criteria (``rubrics/*.yaml``): name -> criterion fields."""

DEFAULT_CRITERIA = ("reply_hygiene", "one_answer")
"""Library criteria every task is graded on unless it opts out (``reply_hygiene: false``, which also drops the
derived ``no_collateral_writes`` gate) or includes them itself: a reward that pasting tool output or
hedging between two answers can earn would teach a learner to paste or hedge."""


HARMLESS_WRITES = ("SlackMessage",)
"""Tables an extra write to does not shut the collateral gate: a needless Slack post costs the task's own
``db_diff`` criterion, but touches no customer's money, order or ticket."""


def collateral_gate(criteria: list[Criterion]) -> DbDiff | None:
    """The ``no_collateral_writes`` gate derived from a task's one ``db_diff``: nothing beyond what it allows
    changes (Slack posts aside), or the reward is 0. Only the upper bounds carry over: a write left undone
    is the task's own criteria's business, not collateral damage."""
    diffs = [c for c in criteria if isinstance(c, DbDiff)]
    if len(diffs) != 1 or diffs[0].gate:
        return None
    ceiling = {table: change.model_copy(update={name: getattr(change, name).model_copy(update={"min": 0})
                                                 for name in ("added", "updated", "deleted")})
               for table, change in diffs[0].allow.items() if table not in HARMLESS_WRITES}
    return DbDiff(kind="db_diff", id="no_collateral_writes", gate=True, allow=ceiling, ignore=list(HARMLESS_WRITES),
                  description="Nothing the task does not call for was written to customers' money, orders, tickets "
                              "or escalations (an extra Slack post aside).")


@dataclass(frozen=True)
class CompiledTask:
    """A task whose includes are resolved and whose every name was checked against the domain."""

    task: Task
    criteria: tuple[Criterion, ...]
    path: Path | None = None

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def split(self) -> str | None:
        return self.task.split


def _suggest(name: str, options: list[str]) -> str:
    close = difflib.get_close_matches(name, options, n=1)
    return f" — did you mean {close[0]!r}?" if close else ""


def _resolve(item: Include, rubrics: RubricLibrary) -> Criterion:
    base = rubrics[item.name]
    overrides = {k: v for k, v in (("id", item.id), ("weight", item.weight), ("gate", item.gate)) if v is not None}
    return _CRITERION.validate_python({**base, **item.fields, **overrides})


class _Checker:
    """Collects problems with one task, each placed at the line of the node it is about."""

    def __init__(self, name: str, lines: Lines, toolkit: Toolkit) -> None:
        self.name, self.lines, self.toolkit = name, lines, toolkit
        self.problems: list[Problem] = []
        self.tables = list(models.TABLES_BY_NAME)

    def add(self, loc: tuple[Any, ...], message: str) -> None:
        self.problems.append(Problem(self.name, line_for(self.lines, loc), message))

    def tool(self, loc: tuple[Any, ...], tool: str, label: str) -> None:
        if tool not in self.toolkit:
            self.add(loc, f"{label}: tool {tool!r} does not exist{_suggest(tool, self.toolkit.names)}")

    def table(self, loc: tuple[Any, ...], table: str, columns: dict[str, tuple[Any, ...]], label: str) -> None:
        """``columns``: column name -> where it is written (for the line number)."""
        model = models.TABLES_BY_NAME.get(table)
        if model is None:
            self.add(loc, f"{label}: table {table!r} does not exist{_suggest(table, self.tables)}")
            return
        fields = list(model.model_fields)
        for column, column_loc in columns.items():
            if column not in fields:
                self.add(column_loc, f"{label}: {table} has no field {column!r}{_suggest(column, fields)}")

    def args(self, tool: str, args: dict[str, tuple[Any, ...]], label: str) -> None:
        if tool in self.toolkit:
            arg_names = list(self.toolkit[tool].args.model_fields)
            for arg, arg_loc in args.items():
                if arg not in arg_names:
                    self.add(arg_loc, f"{label}: {tool} has no argument {arg!r}{_suggest(arg, arg_names)}")


def _keys(loc: tuple[Any, ...], names: Any) -> dict[str, tuple[Any, ...]]:
    return {name: (*loc, name) for name in names}


def _check_criterion(check: _Checker, loc: tuple[Any, ...], item: Criterion) -> None:
    label = f"criterion {item.id!r}"
    if isinstance(item, DbAssert):
        check.table((*loc, "table"), item.table, {**_keys((*loc, "where"), item.where),
                                                  **_keys((*loc, "expect"), item.expect)}, label)
        if item.only_if is not None:
            check.table((*loc, "only_if", "table"), item.only_if.table,
                        _keys((*loc, "only_if", "where"), item.only_if.where), label)
    elif isinstance(item, DbDiff):
        for table, change in item.allow.items():
            check.table((*loc, "allow", table), table, {f: (*loc, "allow", table, "fields") for f in change.fields or []},
                        label)
        for k, table in enumerate(item.ignore):
            check.table((*loc, "ignore", k), table, {}, label)
    elif isinstance(item, ToolCalled):
        for tool in item.tools:
            check.tool((*loc, "tool"), tool, label)
            check.args(tool, _keys((*loc, "args"), item.args), label)
    elif isinstance(item, ToolNotCalled):
        check.tool((*loc, "tool"), item.tool, label)
        check.args(item.tool, _keys((*loc, "args"), item.args), label)
    elif isinstance(item, ArgFormat):
        check.tool((*loc, "tool"), item.tool, label)
        check.args(item.tool, {item.arg: (*loc, "arg")}, label)
    elif isinstance(item, FinalReply) and item.world_value is not None:
        wv = item.world_value
        check.table((*loc, "world_value"), wv.table, {**_keys((*loc, "world_value", "where"), wv.where),
                                                      wv.field: (*loc, "world_value", "field")}, label)


def compile_task(task: Task, toolkit: Toolkit, rubrics: RubricLibrary, *, path: Path | None = None,
                 lines: Lines | None = None, text: str | None = None) -> CompiledTask:
    """Resolve and check ``task``; raises :class:`TaskError` listing every problem.

    ``path``, ``lines`` and ``text`` (the file's text) place problems in the file; a task built in
    memory is reported at line 1 of ``<task id>``.
    """
    check = _Checker(str(path) if path else f"<task {task.id}>", lines or {}, toolkit)
    if task.split == "test" and CANARY not in (text if text is not None else (task.canary or "")):
        check.add((), "test-split files must carry the canary string (field `canary`)")
    for i, tool in enumerate(task.allowed_tools or []):
        check.tool(("allowed_tools", i), tool, "allowed_tools")
    for i, call in enumerate(task.reference_solution.calls):
        check.tool(("reference_solution", "calls", i, "tool"), call.tool, f"reference call {i + 1}")
    criteria: list[Criterion] = []
    ids: list[str] = []
    for i, item in enumerate(task.rubric):
        loc: tuple[Any, ...] = ("rubric", i)
        if isinstance(item, Include):
            cid = item.id or item.name
            if item.name not in rubrics:
                check.add(loc, f"include {item.name!r} is not in rubrics/{_suggest(item.name, list(rubrics))}")
            else:
                try:
                    resolved = _resolve(item, rubrics)
                except ValidationError as exc:
                    error = exc.errors()[0]
                    field = "".join(f"{part}: " for part in error["loc"][1:])
                    check.add(loc, f"include {item.name!r} is not a valid criterion: {field}{error['msg']}")
                else:
                    _check_criterion(check, loc, resolved)
                    criteria.append(resolved)
        else:
            cid = item.id
            _check_criterion(check, loc, item)
            criteria.append(item)
        if cid in ids:
            check.add((*loc, "id"), f"criterion id {cid!r} is used twice")
        ids.append(cid)
    if task.reply_hygiene:
        for name in DEFAULT_CRITERIA:
            if name in rubrics and name not in ids:
                criteria.append(_resolve(Include(kind="include", name=name), rubrics))
                ids.append(name)
        gate = collateral_gate(criteria)
        if gate is not None and gate.id not in ids:
            criteria.append(gate)
            ids.append(gate.id)
    called = [c.id for c in criteria if isinstance(c, ToolCalled)]
    for i, item in enumerate(task.rubric):
        if isinstance(item, ToolCalled):
            for key, other in (("before", item.before), ("after", item.after)):
                if other is not None and other not in ids:
                    check.add(("rubric", i, key), f"criterion {item.id!r}: ordering names unknown criterion {other!r}")
                elif other is not None and other not in called:
                    check.add(("rubric", i, key), f"criterion {item.id!r}: ordering needs a tool_called criterion, "
                                                  f"and {other!r} is not one")
    for i, mine in enumerate(task.minefields):
        label = f"minefield {mine.id!r}"
        if mine.tool is not None:
            check.tool(("minefields", i, "tool"), mine.tool, label)
            check.args(mine.tool, _keys(("minefields", i, "args"), mine.args), label)
        if mine.world is not None:
            check.table(("minefields", i, "world"), mine.world.table, _keys(("minefields", i, "world", "where"),
                                                                            mine.world.where), label)
    if check.problems:
        raise TaskError(check.problems)
    return CompiledTask(task=task, criteria=tuple(criteria), path=path)
