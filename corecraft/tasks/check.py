"""The third stage of the task pipeline: a compiled task proved runnable in its real world.

:func:`check_task` loads and compiles one file, then applies its setup, checks its actor and
replays its reference solution through the real tools (in a conversation task, against its scripted
customer too), and proves the task on its deterministic criteria: the reference meets every one,
doing nothing fails, and every minefield trips on its trigger (whose calls the tools may refuse on
policy, never as malformed). Every problem is reported as ``file:line: sentence``.

A library with a facts lock (``facts.lock.json`` beside the split folders) also proves that each task's
facts were verified against the world as it is: the lock holds a digest of each reference call and what
it returned, and a task whose calls return something else (the world or a tool changed under it) or
that was never locked is a problem, naming the calls that moved, until someone re-verifies its prompt,
reference reply and rubric and runs ``corecraft tasks lock``.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corecraft.episode import Episode
from corecraft.grading.grader import NoJudgeWarning
from corecraft.grading.transcript import DialogueTurn
from corecraft.tasks.compile import CompiledTask, compile_task
from corecraft.tasks.loader import Lines, Problem, TaskError, line_for, read_task

__all__ = ["Problem", "check_task", "facts_digest", "replay_facts", "replay_problems"]
from corecraft.tasks.model import SetupInsert, SetupStep, SetupUpdate, Task
from corecraft.tasks.setup import SetupError
from corecraft.tasks.setup_records import (
    DATED_IDS,
    account_age_problems,
    actor_voice_problems,
    chatter_problems,
    id_sequence_problems,
    message_id_problems,
    priority_problems,
    request_ticket_problems,
    setup_record_problems,
    spells_order,
)
from corecraft.users import ScriptedUser
from corecraft.world import models
from corecraft.world.fidelity import Fidelity
from corecraft.world.recipe import RecipeError

if TYPE_CHECKING:
    from corecraft.domain import Domain


def check_task(path: Path, domain: Domain, replay: bool = True,
               facts: Mapping[str, list[str]] | None = None) -> list[Problem]:
    """Every problem with one task file (empty list: the file is good); ``facts`` is the library's lock."""
    try:
        task, lines = read_task(path)
        compiled = compile_task(task, domain.toolkit, domain.rubrics, path=path, lines=lines,
                                text=path.read_text(encoding="utf-8"))
    except TaskError as exc:
        return exc.problems
    return replay_problems(compiled, domain, lines, facts) if replay else []


Replayed = list[tuple[str, dict[str, Any], dict[str, Any]]]
"""A reference replay: each call's tool, arguments and result, in order."""


def _replay(episode: Episode, task: Task) -> Replayed:
    return [(c.tool, c.args, episode.call(c.tool, c.args)) for c in task.reference_solution.calls]


def facts_digest(replayed: Replayed) -> list[str]:
    """The digest of a reference replay: one short digest per call, of the call and what it returned."""
    return [hashlib.sha256(json.dumps(call, sort_keys=True, default=str).encode()).hexdigest()[:12] for call in replayed]


def _moved(locked: list[str], replayed: Replayed) -> str | None:
    """Which reference calls return something else than when the facts were locked (None: nothing moved)."""
    digests = facts_digest(replayed)
    if len(locked) != len(digests):
        return f"its reference solution has {len(digests)} calls, {len(locked)} when its facts were locked"
    moved = [f"{i + 1} ({replayed[i][0]})" for i, (old, new) in enumerate(zip(locked, digests, strict=True)) if old != new]
    if not moved:
        return None
    return f"reference call{'s' if len(moved) > 1 else ''} {', '.join(moved)} return{'' if len(moved) > 1 else 's'} " \
           "something else than when its facts were locked (the world or a tool moved)"


def replay_facts(compiled: CompiledTask, domain: Domain) -> list[str]:
    """The facts digest of a task's reference solution in its world (what ``corecraft tasks lock`` records)."""
    with Episode(compiled, domain) as episode:
        return facts_digest(_replay(episode, compiled.task))


def replay_problems(compiled: CompiledTask, domain: Domain, lines: Lines,
                    facts: Mapping[str, list[str]] | None = None) -> list[Problem]:
    """Setup, actor and reference replay, in the task's real world; with ``facts``, the locked digest too."""
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
        fidelity, mentioned = domain.seeds.fidelity, task.model_dump_json()
        out = [p for i, step in enumerate(task.setup)
               for p in [*_setup_address_problems(i, step, fidelity, problem), *_setup_id_date_problems(i, step, problem),
                         *_setup_stamp_problems(i, step, problem),
                         *setup_record_problems(i, step, episode.world, domain.seeds, problem),
                         *chatter_problems(i, step, episode.world, mentioned, problem)]]
        out += request_ticket_problems(task.prompt, episode.world, problem)
        out += account_age_problems(task.setup, episode.world, problem)
        out += priority_problems(task, episode.world, domain.seeds, problem)
        out += id_sequence_problems(task.setup, episode.world, problem) + message_id_problems(task.setup, episode.world,
                                                                                              problem)
        replayed = _replay(episode, task)
        for i, (tool, _, result) in enumerate(replayed):
            if "error" in result:
                err = result["error"]
                out += problem(("reference_solution", "calls", i), f"reference call {i + 1} ({tool}) fails: "
                                                                   f"{err['type']}: {err['message']}")
        out += _conversation_problems(task, problem)
        out += _same_minute_problems(task, problem)
        out += scan_clock_problems(task, problem)
        out += round_hour_problems(task, problem)
        out += actor_voice_problems(task.actor, episode.world, fidelity, problem)
    if not out:
        out += _proof_problems(compiled, domain, problem)
    if facts is not None:
        locked = facts.get(task.id)
        if locked is None:
            out += problem(("id",), f"its facts are not locked: verify the prompt, reference reply and rubric against "
                                    f"the world, then run `corecraft tasks lock {task.id}`")
        elif (moved := _moved(locked, replayed)) is not None:
            out += problem(("id",), f"{moved}: re-verify the prompt, reference reply and rubric, then run "
                                    f"`corecraft tasks lock {task.id}`")
    return out


def _setup_address_problems(index: int, step: SetupStep, fidelity: Fidelity,
                            problem: Callable[[tuple[object, ...], str], list[Problem]]) -> list[Problem]:
    """A setup row's addresses hold together as the seeded world's do (``corecraft world lint``): a real city and
    zip, a street line written as the world writes them (``streets``), and an order's house number spelling
    nothing of the order's own number (:func:`~corecraft.tasks.setup_records.spells_order`)."""
    values = step.row if isinstance(step, SetupInsert) else step.set
    key = "row" if isinstance(step, SetupInsert) else "set"
    addresses = [*(("addresses", a) for a in values.get("addresses") or []),
                 *((("shipping_address", values["shipping_address"]),) if values.get("shipping_address") else ())]
    order_id = str(step.row.get("id") if isinstance(step, SetupInsert) else step.id)

    def wrong(field: str, address: dict[str, Any]) -> str | None:
        line1 = str(address.get("line1"))
        house = line1.split(" ", 1)[0]
        spelled = spells_order(house, order_id) if field == "shipping_address" and house.isdigit() else None
        return fidelity.address_problem(address) or fidelity.streets.problem(line1) or (
            f"{line1!r} has a house number spelling {spelled} of its order {order_id}" if spelled else None)

    return [p for field, address in addresses if isinstance(address, dict) and (why := wrong(field, address)) is not None
            for p in problem(("setup", index, key, field), f"setup step {index + 1}: {field} {why}")]


SAME_MINUTE = {"SupportTicket": (2, "customers do not write in step"),
               "Customer": (1, "people do not open their accounts in step")}
"""The most setup rows of a table written in one minute, and why: five tickets at 09:15:00 sharp, or three
customers who all opened their accounts at 2023-11-02 12:00, read as a template."""


def _same_minute_problems(task: Task, problem: Callable[[tuple[object, ...], str], list[Problem]]) -> list[Problem]:
    """Setup tickets or customers created in one minute, more than :data:`SAME_MINUTE` allows."""
    written: dict[tuple[str, str], list[int]] = {}
    for i, step in enumerate(task.setup):
        if isinstance(step, SetupInsert) and step.insert in SAME_MINUTE and step.row.get("created_at"):
            written.setdefault((step.insert, str(step.row["created_at"])[:16]), []).append(i)
    return [p for (table, minute), steps in written.items() if len(steps) > SAME_MINUTE[table][0]
            for p in problem(("setup", steps[0]), f"setup steps {', '.join(str(i + 1) for i in steps)} insert "
                                                  f"{'tickets' if table == 'SupportTicket' else 'customers'} all "
                                                  f"created at {minute}: {SAME_MINUTE[table][1]}, so stagger them")]


ROUND_HOURS = 0.05
"""The share of a task's setup moments that may fall on the hour (09:00:00). The world's records are stamped
when the work happened, one in sixty on the hour; a setup whose tickets, orders and scans are all at 10:00,
12:00 and 13:00 reads as typed in. A few (at least two) are fine: some moments are meant round."""
_MOMENT_FIELDS = ("created_at", "updated_at", "processed_at", "shipped_at", "delivered_at", "ts")


def round_hour_problems(task: Task, problem: Callable[[tuple[object, ...], str], list[Problem]]) -> list[Problem]:
    """A setup whose moments fall on the hour more often than :data:`ROUND_HOURS` allows (reported once, at the
    first such step)."""
    moments: list[tuple[int, str]] = []
    for i, step in enumerate(task.setup):
        row = step.row if isinstance(step, SetupInsert) else step.set
        events = row.get("events")
        written = [row.get(f) for f in _MOMENT_FIELDS] + \
            [e.get("ts") for e in (events if isinstance(events, list) else []) if isinstance(e, dict)]
        moments += [(i, str(w)) for w in written if w is not None]
    round_ones = [(i, w) for i, w in moments if re.search(r"T\d{2}:00:00", w.replace(" ", "T"))]
    if len(round_ones) <= max(2, ROUND_HOURS * len(moments)):
        return []
    first = round_ones[0][0]
    return problem(("setup", first), f"{len(round_ones)} of the setup's {len(moments)} moments fall on the hour (setup "
                                     f"step {first + 1}: {round_ones[0][1]}, …): records are stamped when the work "
                                     "happened, so give them their own minutes")


def scan_clock_problems(task: Task, problem: Callable[[tuple[object, ...], str], list[Problem]]) -> list[Problem]:
    """Setup parcels whose scans all fall at the same times of day (label 11:00, pickup 16:00, hub 06:00, delivered
    13:00 on two orders weeks apart) read as one template: the world's parcels are scanned when the day's work
    reaches them. Three scans or more make a clock; the first parcel keeps it, each later one is reported. So does
    a parcel with three scans at one minute past the hour (09:20, 13:20, 03:20): fixed offsets, not a day's work;
    and a parcel delivered the day it was picked up, which none of the world's carriers does (round 53)."""
    seen: dict[tuple[tuple[str, str], ...], int] = {}
    out: list[Problem] = []
    for i, step in enumerate(task.setup):
        if not (isinstance(step, SetupInsert) and step.insert == "Shipment"):
            continue
        days = {str(e.get("status")): str(e.get("ts"))[:10] for e in step.row.get("events") or []}
        if days.get("picked_up") is not None and days.get("picked_up") == days.get("delivered"):
            out += problem(("setup", i), f"setup step {i + 1}: Shipment {step.row.get('id')} is delivered the day it "
                                         f"was picked up ({days['delivered']}): every carrier we ship with delivers "
                                         "the next business day at the soonest")
        clock = tuple((str(e.get("status")), str(e.get("ts"))[11:16]) for e in step.row.get("events") or [])
        if len(clock) < 3:
            continue
        minute, count = Counter(t[3:] for _, t in clock).most_common(1)[0]
        if count >= 3:
            out += problem(("setup", i), f"setup step {i + 1}: Shipment {step.row.get('id')} has {count} scans at "
                                         f":{minute} past the hour ({', '.join(t for _, t in clock)}): scans come when "
                                         "the work reaches the parcel, not at fixed offsets, so vary their minutes")
        if clock in seen:
            out += problem(("setup", i), f"setup step {i + 1}: Shipment {step.row.get('id')} is scanned at the same "
                                         f"times of day as setup step {seen[clock] + 1}'s "
                                         f"({', '.join(t for _, t in clock)}): parcels are not scanned in step, so "
                                         "vary the times")
        else:
            seen[clock] = i
    return out


_DATED_ID = re.compile(rf"^({'|'.join(DATED_IDS)})-(\d{{6}})-")


def _setup_id_date_problems(index: int, step: SetupStep,
                            problem: Callable[[tuple[object, ...], str], list[Problem]]) -> list[Problem]:
    """A setup row's dated id names the day of its own moment, as the seeded world's ids do."""
    if not isinstance(step, SetupInsert):
        return []
    dated = _DATED_ID.match(str(step.row.get("id", "")))
    moment = step.row.get(DATED_IDS[dated.group(1)]) if dated else None
    if dated is None or moment is None:
        return []
    day = (moment if isinstance(moment, datetime) else datetime.fromisoformat(str(moment))).strftime("%y%m%d")
    if day == dated.group(2):
        return []
    return problem(("setup", index, "row", "id"), f"setup step {index + 1}: id {step.row['id']} is dated {dated.group(2)} "
                                                  f"but the row's {DATED_IDS[dated.group(1)]} is on {day}")


def _setup_stamp_problems(index: int, step: SetupStep,
                          problem: Callable[[tuple[object, ...], str], list[Problem]]) -> list[Problem]:
    """A setup update that moves a row's status moves its ``updated_at`` too, as the tools' writes do (blind round
    145: orders refunded in August still said they were last updated in July)."""
    if not isinstance(step, SetupUpdate) or "status" not in step.set or "updated_at" in step.set:
        return []
    model = models.TABLES_BY_NAME.get(step.update)
    if model is None or "updated_at" not in model.model_fields:
        return []
    return problem(("setup", index, "set"), f"setup step {index + 1}: sets {step.update} {step.id}'s status but not "
                                            "its updated_at")


MALFORMED = ("invalid_argument", "not_found")
"""Tool error types that mean a call was malformed (an argument the tool cannot act on as given, a record that does
not exist), as against refused on policy (policy_violation, insufficient_permission, invalid_transition)."""


def _proof_problems(compiled: CompiledTask, domain: Domain,
                    problem: Callable[[tuple[object, ...], str], list[Problem]]) -> list[Problem]:
    """The task proves itself on its deterministic criteria: the reference meets every one and trips no
    minefield, doing nothing fails, and each minefield trips on its trigger, whose calls are well-formed (a
    minefield trips even on a call the tool rejects, so a malformed trigger would prove nothing of the mistake)."""
    out: list[Problem] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoJudgeWarning)  # llm_judge criteria are left ungraded here on purpose
        graded = domain.replay_reference(compiled)
        rubric = {getattr(item, "id", None): ("rubric", i) for i, item in enumerate(compiled.task.rubric)}
        mines = {m.id: ("minefields", i) for i, m in enumerate(compiled.task.minefields)}
        out += [p for c in graded.criteria if c.status == "not_met"
                for p in problem(rubric.get(c.id, ("rubric",)),
                                 f"the reference solution does not meet criterion {c.id!r}: {c.reason}")]
        out += [p for m in graded.minefields if m.tripped
                for p in problem(mines[m.id], f"the reference solution trips minefield {m.id!r}: {m.reason}")]
        with Episode(compiled, domain) as episode:
            if episode.finish("").passed:
                out += problem(("rubric",), "an agent that does nothing passes: add a criterion it fails")
        for i, mine in enumerate(compiled.task.minefields):
            with Episode(compiled, domain) as episode:
                for k, call in enumerate(mine.trigger):
                    error = episode.call(call.tool, call.args).get("error")
                    if error is not None and error["type"] in MALFORMED:
                        out += problem(("minefields", i, "trigger", k),
                                       f"minefield {mine.id!r}: trigger call {k + 1} ({call.tool}) is malformed "
                                       f"({error['type']}: {error['message']}): a trigger makes the mistake for "
                                       "real, so the tool may refuse it only on policy")
                if not any(m.id == mine.id and m.tripped
                           for m in episode.finish(compiled.task.reference_solution.reply).minefields):
                    out += problem(("minefields", i), f"minefield {mine.id!r} does not trip on its trigger")
    return out


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
