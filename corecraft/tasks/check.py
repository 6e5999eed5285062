"""The third stage of the task pipeline: a compiled task proved runnable in its real world.

:func:`check_task` loads and compiles one file, then applies its setup, checks its actor and
replays its reference solution through the real tools (in a conversation task, against its scripted
customer too); every problem is reported as ``file:line: sentence``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from corecraft.episode import Episode
from corecraft.grading.transcript import DialogueTurn
from corecraft.tasks.compile import CompiledTask, compile_task
from corecraft.tasks.loader import Lines, Problem, TaskError, line_for, read_task

__all__ = ["Problem", "check_task", "replay_problems"]
from corecraft.tasks.model import SetupInsert, SetupStep, Task
from corecraft.tasks.setup import SetupError
from corecraft.users import ScriptedUser
from corecraft.world.fidelity import Fidelity
from corecraft.world.recipe import RecipeError

if TYPE_CHECKING:
    from corecraft.domain import Domain


def check_task(path: Path, domain: Domain, replay: bool = True) -> list[Problem]:
    """Every problem with one task file (empty list: the file is good)."""
    try:
        task, lines = read_task(path)
        compiled = compile_task(task, domain.toolkit, domain.rubrics, path=path, lines=lines,
                                text=path.read_text(encoding="utf-8"))
    except TaskError as exc:
        return exc.problems
    return replay_problems(compiled, domain, lines) if replay else []


def replay_problems(compiled: CompiledTask, domain: Domain, lines: Lines) -> list[Problem]:
    """Setup, actor and reference replay, in the task's real world."""
    name = str(compiled.path or f"<task {compiled.id}>")

    def problem(loc: tuple[object, ...], message: str) -> list[Problem]:
        return [Problem(name, line_for(lines, loc), message)]

    task = compiled.task
    try:
        episode = Episode(compiled, domain)
    except SetupError as exc:
        return problem(("setup", exc.index), str(exc))
    except RecipeError as exc:
        return problem(("world",), str(exc))
    with episode:
        if task.actor and episode.world.employee(task.actor) is None:
            return problem(("actor",), f"actor {task.actor!r} is not an employee in world {task.world.recipe}")
        fidelity = domain.seeds.fidelity
        out = [p for i, step in enumerate(task.setup) for p in _setup_address_problems(i, step, fidelity, problem)]
        for i, call in enumerate(task.reference_solution.calls):
            result = episode.call(call.tool, call.args)
            if "error" in result:
                err = result["error"]
                out += problem(("reference_solution", "calls", i), f"reference call {i + 1} ({call.tool}) fails: "
                                                                   f"{err['type']}: {err['message']}")
        return out + _conversation_problems(task, problem)


def _setup_address_problems(index: int, step: SetupStep, fidelity: Fidelity,
                            problem: Callable[[tuple[object, ...], str], list[Problem]]) -> list[Problem]:
    """A setup row's addresses hold together as the seeded world's do (``corecraft world lint``)."""
    values = step.row if isinstance(step, SetupInsert) else step.set
    key = "row" if isinstance(step, SetupInsert) else "set"
    addresses = [*(("addresses", a) for a in values.get("addresses") or []),
                 *((("shipping_address", values["shipping_address"]),) if values.get("shipping_address") else ())]
    return [p for field, address in addresses if isinstance(address, dict)
            and (wrong := fidelity.address_problem(address)) is not None
            for p in problem(("setup", index, key, field), f"setup step {index + 1}: {field} {wrong}")]


def _conversation_problems(task: Task, problem: Callable[[tuple[object, ...], str], list[Problem]]) -> list[Problem]:
    """A conversation task's reference must be a whole conversation with its scripted customer: the customer
    answers every turn but the last without stopping, stops after the last, and within ``max_user_turns``."""
    if task.user is None:
        return []
    turns = task.reference_solution.steps()
    if len(turns) > task.user.max_user_turns:
        return problem(("user", "max_user_turns"), f"the reference takes {len(turns)} turns, more than "
                                                   f"max_user_turns {task.user.max_user_turns}")
    user, dialogue = ScriptedUser(task.user), list[DialogueTurn]()
    for i, turn in enumerate(turns):
        dialogue.append(DialogueTurn("agent", turn.say))
        answer = user.reply(task.prompt, dialogue)
        dialogue.append(DialogueTurn("user", answer.text))
        last = i == len(turns) - 1
        if answer.stop != last:
            where = ("reference_solution", "turns", i) if task.reference_solution.turns else ("reference_solution",)
            said = "ends the conversation before the reference is done" if answer.stop else "does not end the conversation"
            return problem(where, f"after reference turn {i + 1} the scripted customer {said} "
                                  f"(it answers {answer.text!r})")
    return []
