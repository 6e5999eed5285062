"""Reading task files: YAML parsed and validated against :class:`~corecraft.tasks.model.Task`, with
every problem reported as ``file:line: sentence``.

This is the first stage of the task pipeline (load -> compile -> check): :func:`read_task` gives
the task and the line of every node, which :mod:`corecraft.tasks.compile` uses to place the
semantic problems it finds. The test split is only ever listed when asked for by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from corecraft.tasks.model import Task

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


Lines = dict[tuple[Any, ...], int]
"""Path (keys and list indexes) -> 1-based line in the file."""


def _lines(node: yaml.Node, path: tuple[Any, ...] = ()) -> Lines:
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


def _repeated_keys(node: yaml.Node, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str, int, int]]:
    """Every key written twice in one mapping: (path, key, first line, second line). YAML keeps only the later
    value, so an edit that adds a key a criterion already has would silently drop the first."""
    out = []
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key, value in node.value:
            if key.value in seen:
                out.append((path, str(key.value), seen[key.value], key.start_mark.line + 1))
            seen.setdefault(key.value, key.start_mark.line + 1)
            out += _repeated_keys(value, (*path, key.value))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out += _repeated_keys(item, (*path, i))
    return out


def line_for(lines: Lines, loc: tuple[Any, ...]) -> int:
    """The line of the deepest known node on ``loc`` (skips union tags pydantic adds to paths)."""
    best = 1
    path: tuple[Any, ...] = ()
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


def split_of(path: Path) -> str | None:
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
    return read_task(path)[0]


def read_task(path: Path) -> tuple[Task, Lines]:
    """One task file parsed and validated, with the line of every node (for later problems)."""
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
    if repeated := _repeated_keys(node):
        raise TaskError([Problem(name, second, f"{'.'.join(str(p) for p in (*path, key))}: written twice (lines {first} and "
                                              f"{second}); YAML keeps only the last, so merge them")
                         for path, key, first, second in repeated])
    if "split" in data:
        raise TaskError([Problem(name, lines.get(("split",), 1), "do not write `split`: it comes from the folder")])
    try:
        return Task.model_validate({**data, "split": split_of(path)}), lines
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            where = ".".join(str(p) for p in loc)
            problems.append(Problem(name, line_for(lines, loc), f"{where}: {err['msg']}"))
        raise TaskError(problems) from None


def task_files(root: Path, split: str | None = None) -> list[Path]:
    """Task files of one split (or train+dev when None; test only by name) under ``root``, sorted."""
    base = root
    splits = [split] if split else ["train", "dev"]
    for s in splits:
        if s not in SPLITS:
            raise ValueError(f"unknown split {s!r}; splits: {', '.join(SPLITS)}")
    return sorted(p for s in splits for p in (base / s).glob("*.yaml"))


