"""Loading and checking task files, with every problem reported as ``file:line: sentence``.

``load_task`` validates one YAML file against :class:`~corecraft.tasks.model.Task`; ``check_task``
goes further: tools exist, tables and columns exist (with "did you mean"), includes resolve,
the actor exists, the setup applies, and the reference solution runs without a tool error.
The test split is only ever loaded when asked for by name.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from corecraft.paths import content
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
from corecraft.world import models

SPLITS = ("train", "dev", "test")
CANARY = "CORECRAFT-CANARY 4f1d9c2e-7b3a-4e8f-9d61-2a5c0b7e13f8"
"""Every test-split file carries this string, so leaked test data can be detected in corpora."""


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


class TaskError(ValueError):
    """One or more problems in task files."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def _lines(node: yaml.Node, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], int]:
    """Path (keys and list indexes) -> 1-based line, for every node of a YAML document."""
    out = {path: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            out[(*path, key.value)] = key.start_mark.line + 1
            out.update({k: v for k, v in _lines(value, (*path, key.value)).items() if k != (*path, key.value)})
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out.update(_lines(item, (*path, i)))
    return out


def _line_for(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...]) -> int:
    """The line of the deepest known node on ``loc`` (skips union tags pydantic adds to paths)."""
    best, path = 1, ()
    for part in loc:
        if (*path, part) in lines:
            path = (*path, part)
            best = lines[path]
    return best


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse_yaml(text: str) -> tuple[yaml.Node | None, Any]:
    """The node tree (for line numbers) and the plain data of one YAML document, in one parse."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def _split_of(path: Path) -> str | None:
    return path.parent.name if path.parent.name in SPLITS else None


def _yaml_problem(name: str, exc: yaml.YAMLError) -> Problem:
    """One line a person can act on, at the line where the parser gave up."""
    mark = getattr(exc, "problem_mark", None)
    problem, context = getattr(exc, "problem", None), getattr(exc, "context", None)
    if mark is None or problem is None:
        return Problem(name, 1, f"not valid YAML: {exc}")
    started = getattr(exc, "context_mark", None)
    where = f" (in {context.removeprefix('while parsing ')} opened on line {started.line + 1})" if context and started else ""
    return Problem(name, mark.line + 1, f"not valid YAML: {problem}, at column {mark.column + 1}{where}")


def load_task(path: Path) -> Task:
    """Parse and validate one task file; raises :class:`TaskError` with file:line problems."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
        node, data = _parse_yaml(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError([Problem(name, 1, f"cannot read the file: {exc}")]) from None
    except yaml.YAMLError as exc:
        raise TaskError([_yaml_problem(name, exc)]) from None
    if not isinstance(data, dict) or node is None:
        raise TaskError([Problem(name, 1, "a task file must be a YAML mapping of fields (id, family, prompt, …)")])
    lines = _lines(node)
    if "split" in data:
        raise TaskError([Problem(name, lines.get(("split",), 1), "do not write `split`: it comes from the folder")])
    try:
        return Task.model_validate({**data, "split": _split_of(path)})
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            where = ".".join(str(p) for p in loc)
            problems.append(Problem(name, _line_for(lines, loc), f"{where}: {err['msg']}"))
        raise TaskError(problems) from None


@cache
def rubric_library() -> dict[str, dict[str, Any]]:
    """Named reusable criteria from ``rubrics/*.yaml``."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(content("rubrics").glob("*.yaml")):
        out.update(yaml.safe_load(path.read_text(encoding="utf-8")).get("criteria", {}))
    return out


_CRITERION = TypeAdapter(Criterion)


def resolved_rubric(task: Task) -> list[Criterion]:
    """The task's criteria with every ``include`` replaced by the named library criterion."""
    out: list[Criterion] = []
    for item in task.rubric:
        if isinstance(item, Include):
            base = rubric_library().get(item.name)
            if base is None:
                known = ", ".join(sorted(rubric_library()))
                raise KeyError(f"include {item.name!r} is not in rubrics/; known: {known}")
            overrides = {k: v for k, v in (("id", item.id), ("weight", item.weight)) if v is not None}
            out.append(_CRITERION.validate_python({**base, **overrides}))
        else:
            out.append(item)
    return out


def _suggest(name: str, options: list[str]) -> str:
    close = difflib.get_close_matches(name, options, n=1)
    return f" — did you mean {close[0]!r}?" if close else ""


def check_task(path: Path, replay: bool = True) -> list[Problem]:
    """Every problem with one task file (empty list: the file is good)."""
    from corecraft.tools import REGISTRY

    try:
        task = load_task(path)
    except TaskError as exc:
        return exc.problems
    lines = _lines(_parse_yaml(path.read_text(encoding="utf-8"))[0])
    name, problems = str(path), []

    def add(loc: tuple[Any, ...], message: str) -> None:
        problems.append(Problem(name, _line_for(lines, loc), message))

    tools, tables = list(REGISTRY), list(models.TABLES_BY_NAME)

    def check_tool(loc: tuple[Any, ...], tool: str, label: str) -> None:
        if tool not in REGISTRY:
            add(loc, f"{label}: tool {tool!r} does not exist{_suggest(tool, tools)}")

    def check_table(loc: tuple[Any, ...], table: str, columns: dict[str, tuple[Any, ...]], label: str) -> None:
        """``columns``: column name -> where it is written (for the line number)."""
        model = models.TABLES_BY_NAME.get(table)
        if model is None:
            add(loc, f"{label}: table {table!r} does not exist{_suggest(table, tables)}")
            return
        fields = list(model.model_fields)  # type: ignore[attr-defined]
        for column, column_loc in columns.items():
            if column not in fields:
                add(column_loc, f"{label}: {table} has no field {column!r}{_suggest(column, fields)}")

    def check_args(tool: str, args: dict[str, tuple[Any, ...]], label: str) -> None:
        if tool in REGISTRY:
            arg_names = list(REGISTRY[tool].args.model_fields)
            for arg, arg_loc in args.items():
                if arg not in arg_names:
                    add(arg_loc, f"{label}: {tool} has no argument {arg!r}{_suggest(arg, arg_names)}")

    def keys(loc: tuple[Any, ...], names: Any) -> dict[str, tuple[Any, ...]]:
        return {name: (*loc, name) for name in names}

    if _split_of(path) == "test" and CANARY not in path.read_text(encoding="utf-8"):
        add((), "test-split files must carry the canary string (field `canary`)")
    for i, tool in enumerate(task.allowed_tools or []):
        check_tool(("allowed_tools", i), tool, "allowed_tools")
    for i, call in enumerate(task.reference_solution.calls):
        check_tool(("reference_solution", "calls", i, "tool"), call.tool, f"reference call {i + 1}")
    ids: list[str] = []
    for i, item in enumerate(task.rubric):
        loc: tuple[Any, ...] = ("rubric", i)
        if isinstance(item, Include):
            if item.name not in rubric_library():
                add(loc, f"include {item.name!r} is not in rubrics/{_suggest(item.name, list(rubric_library()))}")
            cid = item.id or item.name
        else:
            cid = item.id
            label = f"criterion {item.id!r}"
            if isinstance(item, DbAssert):
                check_table((*loc, "table"), item.table,
                            {**keys((*loc, "where"), item.where), **keys((*loc, "expect"), item.expect)}, label)
            elif isinstance(item, DbDiff):
                for table, change in item.allow.items():
                    check_table((*loc, "allow", table), table,
                                {f: (*loc, "allow", table, "fields") for f in change.fields or []}, label)
            elif isinstance(item, ToolCalled | ToolNotCalled | ArgFormat):
                check_tool((*loc, "tool"), item.tool, label)
                check_args(item.tool, {item.arg: (*loc, "arg")} if isinstance(item, ArgFormat) else keys((*loc, "args"), item.args),
                           label)
            elif isinstance(item, FinalReply) and item.world_value is not None:
                wv = item.world_value
                check_table((*loc, "world_value"), wv.table,
                            {**keys((*loc, "world_value", "where"), wv.where), wv.field: (*loc, "world_value", "field")}, label)
        if cid in ids:
            add((*loc, "id"), f"criterion id {cid!r} is used twice")
        ids.append(cid)
    called = [item.id for item in task.rubric if isinstance(item, ToolCalled)]
    for i, item in enumerate(task.rubric):
        if isinstance(item, ToolCalled):
            for key, other in (("before", item.before), ("after", item.after)):
                if other is not None and other not in ids:
                    add(("rubric", i, key), f"criterion {item.id!r}: ordering names unknown criterion {other!r}")
                elif other is not None and other not in called:
                    add(("rubric", i, key), f"criterion {item.id!r}: ordering needs a tool_called criterion, "
                                            f"and {other!r} is not one")
    for i, mine in enumerate(task.minefields):
        if mine.tool is not None:
            check_tool(("minefields", i, "tool"), mine.tool, f"minefield {mine.id!r}")
            check_args(mine.tool, keys(("minefields", i, "args"), mine.args), f"minefield {mine.id!r}")
        if mine.world is not None:
            check_table(("minefields", i, "world"), mine.world.table, keys(("minefields", i, "world", "where"), mine.world.where),
                        f"minefield {mine.id!r}")
    if problems or not replay:
        return problems
    problems += _check_in_world(task, add)
    return problems


def _check_in_world(task: Task, add: Any) -> list[Problem]:
    """Actor, setup and reference replay, in the task's real world."""
    from corecraft.episode import Episode
    from corecraft.tasks.setup import SetupError
    from corecraft.world.recipe import RecipeError

    try:
        episode = Episode(task)
    except SetupError as exc:
        add(("setup", exc.index), str(exc))
        return []
    except RecipeError as exc:
        add(("world",), str(exc))
        return []
    try:
        if task.actor and not episode.world.conn.execute("SELECT 1 FROM employee WHERE id = ?", (task.actor,)).fetchone():
            add(("actor",), f"actor {task.actor!r} is not an employee in world {task.world.recipe}")
            return []
        for i, call in enumerate(task.reference_solution.calls):
            result = episode.call(call.tool, call.args)
            if "error" in result:
                err = result["error"]
                add(("reference_solution", "calls", i), f"reference call {i + 1} ({call.tool}) fails: "
                                                        f"{err['type']}: {err['message']}")
    finally:
        episode.close()
    return []


def task_files(split: str | None = None, root: Path | None = None) -> list[Path]:
    """Task files of one split (or train+dev when None; test only by name), sorted."""
    base = root or content("tasks")
    splits = [split] if split else ["train", "dev"]
    for s in splits:
        if s not in SPLITS:
            raise ValueError(f"unknown split {s!r}; splits: {', '.join(SPLITS)}")
    return sorted(p for s in splits for p in (base / s).glob("*.yaml"))


def load_split(split: str | None = None, root: Path | None = None) -> list[Task]:
    """Every task of a split (train+dev when None). Raises TaskError listing all bad files."""
    tasks, problems = [], []
    for path in task_files(split, root):
        try:
            tasks.append(load_task(path))
        except TaskError as exc:
            problems += exc.problems
    if problems:
        raise TaskError(problems)
    return tasks


def find_task(task_id: str, root: Path | None = None) -> Task:
    """A task by id, from any split (the test split included, since it was asked for by id)."""
    for split in SPLITS:
        for path in task_files(split, root):
            if path.stem == task_id:
                return load_task(path)
    for split in SPLITS:
        for task in load_split(split, root):
            if task.id == task_id:
                return task
    raise KeyError(f"no task with id {task_id!r}")
