"""``corecraft tasks list|show|check|lock|schema|new|split|stats|audit|lint``: browse, check and author the tasks.

Every command reads the task folders under ``--root`` (default: the packaged ``tasks/``). Unlike
the training helpers, these commands cover all three splits unless ``--split`` narrows them: they
show metadata and problems, never feed tasks to a learner.
"""

from __future__ import annotations

import json
from collections import Counter
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import track
from rich.syntax import Syntax
from rich.table import Table

from corecraft.domain import default_domain
from corecraft.paths import content
from corecraft.tasks.compile import CompiledTask
from corecraft.tasks.library import TaskLibrary, library_stats
from corecraft.tasks.loader import CANARY, SPLITS, Problem, TaskError
from corecraft.tasks.model import Task
from corecraft.tasks.split import parse_ratios, split_by_family

app = typer.Typer(help="List, show, check and author the YAML tasks.", no_args_is_help=True)
console = Console()
err = Console(stderr=True)

RootOpt = Annotated[Path | None, typer.Option("--root", help="Tasks folder holding train/dev/test; default the packaged tasks/.")]
SplitOpt = Annotated[str | None, typer.Option("--split", "-s", help="Only this split (train, dev or test); default all.")]


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _splits(split: str | None) -> tuple[str, ...]:
    if split is None:
        return SPLITS
    if split not in SPLITS:
        raise _fail(f"unknown split {split!r}; splits: {', '.join(SPLITS)}")
    return (split,)


def _shown(path: Path) -> Path:
    """The path relative to the working directory when it lies below it (shorter messages)."""
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path


def _library(root: Path | None) -> TaskLibrary:
    return default_domain().library(root)


def _files(paths: list[Path] | None, root: Path | None, splits: tuple[str, ...] = SPLITS) -> list[Path]:
    """Task files named on the command line (folders searched for *.yaml), or every file of the splits."""
    if not paths:
        return [_shown(p) for s in splits for p in _library(root).files(s)]
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(path.rglob("*.yaml"))
        elif path.is_file():
            out.append(path)
        else:
            raise _fail(f"no such file or folder: {path}")
    return out


def _compiled(files: list[Path], root: Path | None) -> list[CompiledTask]:
    """The files compiled; any problem ends the command with every problem listed (as ``tasks check`` would)."""
    tasks: list[CompiledTask] = []
    problems: list[Problem] = []
    for path in files:
        try:
            tasks.append(_library(root).load(path))
        except TaskError as exc:
            problems += exc.problems
    if problems:
        raise _fail("some task files do not load (run `corecraft tasks check`):\n" + "\n".join(map(str, problems)), 1)
    return tasks


def _tasks(root: Path | None, split: str | None) -> list[CompiledTask]:
    return _compiled(_files(None, root, _splits(split)), root)


def _chosen(root: Path | None, split: str | None, task_ids: list[str] | None) -> list[CompiledTask]:
    """The tasks of ``split`` (all splits when None), only those of ``task_ids`` when given (each must exist)."""
    tasks = _tasks(root, split)
    if not task_ids:
        return tasks
    missing = sorted(set(task_ids) - {t.id for t in tasks})
    if missing:
        raise _fail(f"no such task(s): {', '.join(missing)}", 1)
    return [t for t in tasks if t.id in task_ids]


TaskIdsOpt = Annotated[list[str] | None, typer.Option("--task", "-t", help="Only this task (repeatable).")]


@app.command("list")
def list_tasks(root: RootOpt = None, split: SplitOpt = None,
               category: Annotated[str | None, typer.Option("--category", "-c", help="Only this category.")] = None,
               difficulty: Annotated[str | None, typer.Option("--difficulty", "-d", help="Only this difficulty.")] = None,
               ) -> None:
    """The tasks as a table: id, split, family, category, difficulty, criteria and reference calls."""
    tasks = [t.task for t in _tasks(root, split)
             if (category is None or t.task.category == category) and (difficulty is None or t.task.difficulty == difficulty)]
    table = Table(title="CoreCraft tasks")
    for name in ("id", "split", "family", "category", "difficulty", "criteria", "ref. calls"):
        table.add_column(name, overflow="fold", justify="right" if name in ("criteria", "ref. calls") else "left")
    for t in tasks:
        table.add_row(t.id, t.split or "", t.family, t.category, t.difficulty, str(len(t.rubric)),
                      str(len(t.reference_solution.calls)))
    console.print(table)
    console.print(f"{len(tasks)} task(s)")


def _compact(value: Any) -> Any:
    """Dumped matchers and counts as one writes them in YAML: ``{"eq": x}`` -> x, ``{"min": n, "max": n}`` -> n."""
    if isinstance(value, dict):
        if set(value) == {"eq"}:
            return _compact(value["eq"])
        if set(value) == {"min", "max"} and value["min"] == value["max"]:
            return value["min"]
        return {k: _compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def _criterion_summary(c: Any) -> str:
    """What a criterion checks, in one line: its description, or its main fields."""
    if c.description:
        return str(c.description)
    fields = c.model_dump(exclude={"id", "kind", "weight", "description"}, exclude_defaults=True, by_alias=True)
    return json.dumps(_compact(fields), default=str)[:300]


@app.command()
def show(task_id: Annotated[str, typer.Argument(metavar="ID", help="Task id (the file name without .yaml).")],
         root: RootOpt = None,
         raw: Annotated[bool, typer.Option("--yaml", help="Print the task file itself.")] = False) -> None:
    """One task: what is asked, the rubric (includes resolved) and the minefields."""
    try:
        path = _library(root).path(task_id)
    except KeyError:
        raise _fail(f"no task file {task_id}.yaml in {', '.join(SPLITS)}", 1) from None
    compiled = _compiled([path], root)[0]
    task = compiled.task
    if raw:
        console.print(Syntax(path.read_text(encoding="utf-8"), "yaml"))
        return
    console.print(f"[bold]{task.id}[/bold]  ({task.split}/{path.name})", highlight=False)
    console.print(f"family {task.family} · {task.category} · {task.difficulty} · world {task.world.recipe}"
                  f"{'' if task.world.seed is None else f' seed {task.world.seed}'} · actor {task.actor or 'default'}"
                  f" · {len(task.setup)} setup step(s) · {len(task.reference_solution.calls)} reference call(s)",
                  highlight=False)
    if task.allowed_tools is not None:
        console.print(f"allowed tools: {', '.join(task.allowed_tools)}", highlight=False)
    console.print("\n[bold]prompt[/bold]")
    console.print(task.prompt.rstrip(), highlight=False, markup=False)
    rubric = Table(title="rubric")
    for name in ("id", "kind", "weight", "checks"):
        rubric.add_column(name, overflow="fold")
    for c in compiled.criteria:
        rubric.add_row(c.id, c.kind, f"{c.weight:g}", _criterion_summary(c))
    console.print(rubric)
    for mine in task.minefields:
        what = f"tool {mine.tool}" if mine.tool else f"world {mine.world.table if mine.world else ''}"
        console.print(f"minefield [bold]{mine.id}[/bold] ({what}): {mine.description}", highlight=False)


@app.command()
def check(paths: Annotated[list[Path] | None, typer.Argument(help="Task files or folders; default every split.")] = None,
          root: RootOpt = None,
          replay: Annotated[bool, typer.Option(help="Also apply the setup and run the reference solution "
                                                    "in the task's world.")] = True) -> None:
    """Validate task files: schema, tools, tables and fields, includes, setup, reference calls.

    Prints every problem as file:line: message and exits 1 if there is any.
    """
    files = _files(paths, root)
    if not files:
        raise _fail("no task files to check", 1)
    problems = _library(root).problems(
        files, replay=replay, each=lambda paths: track(paths, description="checking tasks", transient=True, console=err))
    for problem in problems:
        console.print(str(problem), highlight=False, markup=False, soft_wrap=True)
    if problems:
        bad = len({p.file for p in problems})
        console.print(f"[red]{len(problems)} problem(s) in {bad} of {len(files)} file(s)[/red]")
        raise typer.Exit(1)
    console.print(f"[green]{len(files)} file{'' if len(files) == 1 else 's'} OK[/green]")


@app.command()
def lock(targets: Annotated[list[str] | None, typer.Argument(
             metavar="[ID|PATH]...", help="Task ids, files or folders; default every task.")] = None,
         root: RootOpt = None) -> None:
    """Record that these tasks' facts were verified against the world as it is now.

    Writes the digest of what each reference's tool calls return to the library's facts.lock.json;
    `tasks check` then reports any task whose digest moves (the world or a tool changed under it).
    Run it only after re-reading each task's prompt, reference reply and rubric against the world.
    """
    library = _library(root)
    try:
        named = [Path(t) if Path(t).exists() else library.path(t) for t in targets] if targets else None
    except KeyError as exc:
        raise _fail(str(exc.args[0])) from None
    paths = _files(named, root)
    try:
        fresh = library.lock(paths)
    except TaskError as exc:
        raise _fail("\n".join(str(p) for p in exc.problems), 1) from None
    console.print(f"locked the facts of {len(fresh)} task{'' if len(fresh) == 1 else 's'} in {_shown(library.facts_path)}")


def schema_json() -> str:
    """The JSON Schema of a task file, as written to tasks/schema.json."""
    return json.dumps(Task.model_json_schema(), indent=2, ensure_ascii=False) + "\n"


@app.command()
def schema(out: Annotated[Path | None, typer.Option("--out", "-o", help="Where to write; default tasks/schema.json.")]
           = None) -> None:
    """Write the JSON Schema of task files (editors autocomplete YAML with `# yaml-language-server: $schema=...`)."""
    path = out or content("tasks", "schema.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(schema_json(), encoding="utf-8")
    console.print(f"wrote the task schema to {path}", highlight=False)


TEMPLATE = """\
# yaml-language-server: $schema=../schema.json
# A new task. Replace every TODO, then run:  corecraft tasks check {path}
# A worked example: tasks/train/doa_cpu_refund_kayla.yaml. Look ids up with `corecraft world inspect`
# and try calls with `corecraft tools call`.
id: {id}
family: {family}  # the template this task belongs to; a family lives in one split only
category: {category}  # information_retrieval | communication | reasoning | multi_step_workflow
difficulty: {difficulty}  # easy | medium | hard | expert
world: {{recipe: default}}  # optional `seed: N`; default the recipe's own seed
{canary}# Rows added or changed on top of the seeded world, for this task only:
setup: []
#  - insert: SupportTicket  # ids number on from the world's last of their day: tick-250915-003 -> tick-250915-004
#    row: {{id: tick-250915-004, customer_id: cust-0066, order_id: ord-250904-001, type: return, channel: email,
#          priority: normal, status: open, subject: "...", body: "...", created_at: "2025-09-15T09:00:00",
#          updated_at: "2025-09-15T09:00:00"}}
#  - update: Order
#    id: ord-250904-001
#    set: {{status: return_requested}}
# actor: emp-010  # the employee the agent works as; default the first Support Agent I
prompt: |
  TODO: who is asking and what, e.g. a customer's message or an internal request.
# allowed_tools: [search_customers, get_order_details]  # default: all 23
reference_solution:
  calls: []  # what an expert does, e.g. - {{tool: search_customers, args: {{email: someone@example.com}}}}
  reply: TODO the final reply an expert would send.
rubric:  # binary, weighted criteria; reward = weighted share met (0 if a gate: true criterion fails), pass = all met
  # kinds: db_assert, db_diff, tool_called, tool_not_called, final_reply, arg_format, llm_judge, include
  - id: TODO
    kind: final_reply
    description: TODO what this checks, for people reading results
    contains: [TODO]
  - {{kind: include, name: professional_tone}}
minefields: []  # forbidden outcomes; tripping one zeroes the reward
#  - id: refunds_too_much
#    tool: create_refund
#    args: {{amount: {{gt: 200}}}}
#    trigger: [{{tool: create_refund, args: {{payment_id: pay-250904-001, amount: 262.65, reason: doa, lines: []}}}}]
"""


def _field_errors(values: dict[str, str]) -> list[str]:
    """Messages for the given top-level Task fields, validated by the Task model itself."""
    try:
        Task.model_validate(values)
    except ValidationError as exc:
        return [f"{err['loc'][0]}: {err['msg']}" for err in exc.errors() if err["loc"] and err["loc"][0] in values]
    return []


@app.command()
def new(task_id: Annotated[str, typer.Argument(metavar="ID", help="The new task's id (also its file name).")],
        family: Annotated[str, typer.Option("--family", "-f", help="The family (template) it belongs to.")],
        split: Annotated[str, typer.Option("--split", "-s", help="train, dev or test.")],
        category: Annotated[str | None, typer.Option("--category", "-c")] = None,
        difficulty: Annotated[str | None, typer.Option("--difficulty", "-d")] = None,
        root: RootOpt = None) -> None:
    """Write a commented template task file to fill in (never overwrites)."""
    _splits(split)
    given = {"id": task_id, "family": family, **{k: v for k, v in (("category", category), ("difficulty", difficulty)) if v}}
    errors = _field_errors(given)
    if errors:
        raise _fail("; ".join(errors))
    base = root or content("tasks")
    existing = [p for s in SPLITS for p in _library(root).files(s) if p.stem == task_id]
    if existing:
        raise _fail(f"{existing[0]} already exists; not overwriting", 1)
    path = base / split / f"{task_id}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    canary = f'canary: "{CANARY}"  # test-split files carry the canary string\n' if split == "test" else ""
    path.write_text(TEMPLATE.format(id=task_id, family=family, category=category or "TODO",
                                    difficulty=difficulty or "TODO", canary=canary, path=_shown(path)), encoding="utf-8")
    console.print(f"wrote {_shown(path)}: fill in the TODOs, then run `corecraft tasks check {_shown(path)}`",
                     highlight=False)


class GroupBy(StrEnum):
    family = "family"


@app.command("split")
def split_cmd(paths: Annotated[list[Path] | None, typer.Argument(help="Task files or folders; default every split.")]
              = None,
              by: Annotated[GroupBy, typer.Option("--by", help="What never spans two splits.")] = GroupBy.family,
              ratios: Annotated[str, typer.Option("--ratios", help="Shares of train,dev,test.")] = "0.7,0.15,0.15",
              seed: Annotated[int, typer.Option("--seed", help="Different seeds give different assignments.")] = 0,
              out: Annotated[Path | None, typer.Option("--out", "-o", help="Also write the assignment as JSON.")] = None,
              root: RootOpt = None) -> None:
    """Assign families to train/dev/test deterministically, for holding out your own splits."""
    try:
        shares = parse_ratios(ratios)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    tasks = [t.task for t in _compiled(_files(paths, root), root)]
    if not tasks:
        raise _fail("no tasks to split", 1)
    result = split_by_family(tasks, shares, seed)
    sizes = Counter(t.family for t in tasks)
    table = Table(title=f"split by {by.value} (seed {seed}, ratios {ratios})")
    for name in ("family", "tasks", "split"):
        table.add_column(name, overflow="fold", justify="right" if name == "tasks" else "left")
    for family, split in result.families.items():
        table.add_row(family, str(sizes[family]), split)
    table.add_section()
    families = result.family_sizes()
    for split, share in zip(SPLITS, result.ratios, strict=True):
        n = len(result.tasks[split])
        table.add_row(f"[bold]{split}[/bold]: {families[split]} families", str(n),
                      f"{n / len(tasks):.0%} of tasks (target {share:.0%})")
    console.print(table)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {out}", highlight=False)


@app.command()
def stats(root: RootOpt = None, split: SplitOpt = None,
          as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False) -> None:
    """Counts by split, category, difficulty and family, and the shape of the rubrics."""
    figures = library_stats(_tasks(root, split))
    if as_json:
        console.print_json(json.dumps(figures))
        return
    for key in ("by_split", "by_category", "by_difficulty", "by_family"):
        table = Table(title=f"tasks {key.replace('_', ' ')}")
        table.add_column(key.removeprefix("by_"), overflow="fold")
        table.add_column("tasks", justify="right")
        for name, n in figures[key].items():
            table.add_row(name, str(n))
        console.print(table)
    shape = Table(title="rubrics")
    shape.add_column("figure")
    shape.add_column("value", justify="right")
    per = figures["criteria_per_task"]
    shape.add_row("tasks", str(figures["tasks"]))
    shape.add_row("families", str(figures["families"]))
    shape.add_row("criteria per task (mean / min)", f"{per['mean']:g} / {per['min']}")
    for difficulty, size in figures["criteria_hard_expert"].items():
        shape.add_row(f"criteria per {difficulty} task (mean / min)", f"{size['mean']:g} / {size['min']}")
    shape.add_row("reference-solution calls (mean)", f"{figures['reference_calls_mean']:g}")
    shape.add_row("weight share of llm_judge criteria", f"{figures['llm_judge_weight_share']:.1%}")
    for kind, n in figures["tasks_with"].items():
        shape.add_row(f"tasks with {kind}", str(n))
    console.print(shape)


@app.command()
def audit(root: RootOpt = None, split: SplitOpt = None,
          task_ids: TaskIdsOpt = None,
          exploits: Annotated[list[str] | None, typer.Option("--exploit", "-e", help="Only this exploit (repeatable).")]
          = None,
          as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False) -> None:
    """Run generic exploit policies (no-op, paste, list, over-act, hedge) on every task; deterministic criteria only."""
    from corecraft.tasks.audit import EXPLOITS, EXPLOITS_BY_NAME, tables
    from corecraft.tasks.audit import audit as run_audit

    unknown = [e for e in exploits or [] if e not in EXPLOITS_BY_NAME]
    if unknown:
        raise _fail(f"unknown exploit(s) {', '.join(unknown)}; exploits: {', '.join(EXPLOITS_BY_NAME)}")
    tasks = _chosen(root, split, task_ids)
    chosen = [EXPLOITS_BY_NAME[e] for e in exploits] if exploits else list(EXPLOITS)
    report = run_audit(tasks, default_domain(), chosen,
                       lambda ts: track(ts, description="auditing tasks", transient=True, console=err))
    if as_json:
        console.print_json(json.dumps(report.to_json()))
        return
    for table in tables(report):
        console.print(table)


@app.command("lint")
def lint_setups(root: RootOpt = None, split: SplitOpt = None, task_ids: TaskIdsOpt = None,
                show: Annotated[int, typer.Option(help="Findings to print per task.")] = 20) -> None:
    """Lint the world each task's setup leaves: what `corecraft world lint` finds there and not in the bare world.

    An author's check of a setup against the rules the world is held to. A finding may be the task's planted premise
    (the stale tickets an audit counts), so read each; exits 1 if any task has one.
    """
    from corecraft.tasks.setup_lint import SetupLint

    linter = SetupLint(default_domain())
    flagged = 0
    for task in track(_chosen(root, split, task_ids), description="linting setups", transient=True, console=err):
        found = linter.findings(task)
        if not found:
            continue
        flagged += 1
        by_check = Counter(f.check for f in found)
        console.print(f"[red]{task.id}[/red]: {len(found)} ({', '.join(f'{c} {n}' for c, n in by_check.most_common())})")
        for finding in found[:show]:
            console.print(f"  {finding.check} {finding.entity_id} {finding.message}", highlight=False, markup=False,
                          soft_wrap=True)
    if flagged:
        raise typer.Exit(1)
    console.print("[green]no setup finding[/green]")
