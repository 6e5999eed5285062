"""``corecraft tasks audit``: generic exploit policies run against every task's rubric.

A rubric that cannot be gamed gives these policies no reward: none of them reasons about the task,
they only replay what the reference solution did and paste, list, hedge or over-act. Each runs
through the real tools (:class:`~corecraft.episode.Episode`) and is graded on the deterministic
criteria only (``llm_judge`` criteria are left ungraded, so they neither help nor hurt).

The policies:

- ``no_op``: no call, an empty reply.
- ``paste_reads``: the reference's read calls, then every result pasted as JSON as the reply.
- ``list_values``: the reference's read calls, then every id, name and number seen in their results.
- ``paste_all``: the reference's reads *and writes*, then every result pasted as JSON.
- ``fire_writes``: the reference's calls, then every other write tool fired once with plausible
  arguments (ids taken from the prompt and the results), then the reference reply. Where no extra
  write changes the world (the reference already uses every write tool, or the tools refuse each
  one), the attempt *is* the reference, so it is not applicable there (``—``).
- ``hedge``: the reference's calls, then the reference reply followed by a contradictory variant
  (every number changed, yes/can/is turned into no/cannot/isn't).
- ``contradict``: the reference's calls (its writes right), then only that contradictory variant: a confident
  wrong answer in the reference's own words, which a reward must not mistake for the work done.
- ``echo_prompt``: the reference's calls, then the request itself as the reply.
- ``paste_notes``: the reference's calls and reply, but every escalation note, resolution detail and Slack post
  it writes is the tool result before it pasted as JSON (a ``[ticket]`` lead kept); ``—`` where the reference
  writes none.
- ``skip_dialogue`` (conversation tasks only, ``—`` elsewhere): every reference call, then only the
  reference's last message: it answers without asking what the conversation would have told it.

An attempt that is not applicable (``—``) is left out of the report: it counts in no mean and no pass.

In a conversation task (one with a ``user`` block) the reference's calls are every turn's calls, its
reply is the last turn's message, and each policy's reply is said to the task's scripted customer in
one message before grading: the policy skips the conversation the task asks for.
"""

from __future__ import annotations

import json
import re
import statistics
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from rich.table import Table

from corecraft.episode import Episode
from corecraft.grading.transcript import WRITTEN_TEXT
from corecraft.tasks.compile import CompiledTask
from corecraft.tasks.model import Call, Task
from corecraft.tools import Toolkit
from corecraft.users import ScriptedUser

if TYPE_CHECKING:
    from corecraft.domain import Domain

Policy = Callable[[Task, Episode], str | None]
"""Makes its calls on the episode and returns the final reply, or None where the exploit does not apply
(what it would do is exactly the reference)."""


@dataclass(frozen=True)
class Exploit:
    name: str
    description: str
    play: Policy
    conversations_only: bool = False  # tried only on tasks with a simulated customer


def _reads(task: Task, toolkit: Toolkit) -> list[Call]:
    return [c for c in task.reference_solution.calls if c.tool in toolkit and toolkit[c.tool].read_only]


def _run(episode: Episode, calls: Iterable[Call]) -> list[dict[str, Any]]:
    return [episode.call(c.tool, c.args) for c in calls]


def _pasted(results: list[dict[str, Any]]) -> str:
    return json.dumps(results, default=str)


def _leaves(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, key)
    else:
        yield key, value


def _values(results: list[dict[str, Any]]) -> list[str]:
    """Every id, name and number in the results, once each, in order of appearance."""
    seen: dict[str, None] = {}
    for key, value in _leaves(results):
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int | float) or key == "id" or key.endswith("_id") or "name" in key:
            seen.setdefault(str(value), None)
    return list(seen)


def no_op(task: Task, episode: Episode) -> str:
    return ""


def paste_reads(task: Task, episode: Episode) -> str:
    return _pasted(_run(episode, _reads(task, episode.toolkit)))


def list_values(task: Task, episode: Episode) -> str:
    return ", ".join(_values(_run(episode, _reads(task, episode.toolkit))))


def paste_all(task: Task, episode: Episode) -> str:
    return _pasted(_run(episode, task.reference_solution.calls))


_IDS = {kind: re.compile(rf"\b{kind}-\d{{6}}-\d{{3}}\b") for kind in ("tick", "ord", "pay")}


def _first_id(kind: str, *texts: str) -> str | None:
    for text in texts:
        found = _IDS[kind].search(text)
        if found:
            return found.group()
    return None


def _plausible_writes(task: Task, seen: str, toolkit: Toolkit) -> list[Call]:
    """One call to every write tool the reference does not use, with ids from the prompt and what was seen."""
    ticket, order, payment = (_first_id(kind, task.prompt, seen) for kind in ("tick", "ord", "pay"))
    note = f"[{ticket}] Handled as requested." if ticket else "Handled as requested."
    candidates: dict[str, dict[str, Any] | None] = {
        "create_refund": {"payment_id": payment, "amount": 10.0, "reason": "goodwill", "lines": [],
                          **({"ticket_id": ticket} if ticket else {})} if payment else None,
        "create_escalation": {"ticket_id": ticket, "type": "policy_exception", "destination": "leadership",
                              "notes": "Customer asks for an exception; please review."} if ticket else None,
        "create_resolution": {"ticket_id": ticket, "outcome": "recommendation_provided", "details": note} if ticket else None,
        "update_order_status": {"order_id": order, "status": "cancelled"} if order else None,
        "update_payment_status": {"payment_id": payment, "status": "refunded"} if payment else None,
        "update_ticket_status": {"ticket_id": ticket, "status": "resolved", "priority": "high"} if ticket else None,
        "post_slack_message": {"channel": "#escalations", "text": note},
    }
    used = {c.tool for c in task.reference_solution.calls}
    return [Call(tool=name, args=args) for name, args in candidates.items()
            if args is not None and name in toolkit and name not in used]


def fire_writes(task: Task, episode: Episode) -> str | None:
    results = _run(episode, task.reference_solution.calls)
    before = episode.world.hash()
    _run(episode, _plausible_writes(task, _pasted(results), episode.toolkit))
    if episode.world.hash() == before:
        return None  # no extra write went through: the world is the reference's
    return task.reference_solution.reply


_NUMBER = re.compile(r"(?<![\w.-])\d+(?:,\d{3})*(?:\.\d+)?(?![\w-])")
_FLIPS = {"can": "cannot", "cannot": "can", "can't": "can", "will": "won't", "won't": "will", "is": "isn't",
          "isn't": "is", "are": "aren't", "aren't": "are", "was": "wasn't", "wasn't": "was", "yes": "no", "no": "yes",
          "approved": "denied", "denied": "approved", "eligible": "ineligible", "ineligible": "eligible"}
_FLIP_WORD = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in sorted(_FLIPS, key=len, reverse=True)) + r")\b",
                        re.IGNORECASE)


def _changed_number(match: re.Match[str]) -> str:
    text = match.group().replace(",", "")
    if "." in text:
        return f"{float(text) * 1.2:,.2f}"
    return f"{int(text) + 1:,}"


def contradiction(reply: str) -> str:
    """The reply with every number changed and its yes/no words turned around."""
    return _FLIP_WORD.sub(lambda m: _FLIPS[m.group().lower()], _NUMBER.sub(_changed_number, reply))


def hedge(task: Task, episode: Episode) -> str:
    _run(episode, task.reference_solution.calls)
    reply = task.reference_solution.reply
    return f"{reply}\n\nOr, if I have misread the records: {contradiction(reply)}"


def contradict(task: Task, episode: Episode) -> str:
    _run(episode, task.reference_solution.calls)
    return contradiction(task.reference_solution.reply)


_LEAD = re.compile(r"\A\[[^\]\n]*\]\s*")
"""A written text's bracketed lead ("[tick-250914-007] "), which a task's format may ask for."""


def paste_notes(task: Task, episode: Episode) -> str | None:
    calls = task.reference_solution.calls
    if not any(c.tool in WRITTEN_TEXT for c in calls):
        return None
    last: dict[str, Any] = {}
    for c in calls:
        arg = WRITTEN_TEXT.get(c.tool)
        if arg is None:
            last = episode.call(c.tool, c.args)
            continue
        lead = _LEAD.match(str(c.args.get(arg, "")))
        episode.call(c.tool, {**c.args, arg: (lead.group() if lead else "") + _pasted([last])[:1200]})
    return task.reference_solution.reply


def echo_prompt(task: Task, episode: Episode) -> str:
    _run(episode, task.reference_solution.calls)
    return task.prompt


def skip_dialogue(task: Task, episode: Episode) -> str:
    _run(episode, task.reference_solution.calls)
    return task.reference_solution.reply


EXPLOITS: tuple[Exploit, ...] = (
    Exploit("no_op", "no call, empty reply", no_op),
    Exploit("paste_reads", "reference reads, results pasted as JSON", paste_reads),
    Exploit("list_values", "reference reads, every id/name/number listed", list_values),
    Exploit("paste_all", "reference reads and writes, results pasted", paste_all),
    Exploit("fire_writes", "reference calls + every other write tool, reference reply", fire_writes),
    Exploit("hedge", "reference calls, reference reply + a contradictory variant", hedge),
    Exploit("contradict", "reference calls, only the contradictory variant as the reply", contradict),
    Exploit("echo_prompt", "reference calls, the request echoed as the reply", echo_prompt),
    Exploit("paste_notes", "reference calls and reply, notes/details/posts pasted tool output", paste_notes),
    Exploit("skip_dialogue", "conversations: every reference call, then only its last message", skip_dialogue,
            conversations_only=True),
)
EXPLOITS_BY_NAME = {e.name: e for e in EXPLOITS}


@dataclass(frozen=True)
class Attempt:
    """One exploit on one task, graded on the deterministic criteria."""

    task_id: str
    split: str
    exploit: str
    reward: float
    passed: bool


def attempt(compiled: CompiledTask, exploit: Exploit, domain: Domain) -> Attempt | None:
    """The exploit played and graded on the task, or None where it does not apply."""
    task = compiled.task
    if task.user is None and exploit.conversations_only:
        return None
    with Episode(compiled, domain) as episode:
        reply = exploit.play(task, episode)
        if reply is None:
            return None
        if task.user is not None:  # a conversation task: the reply is said to its scripted customer first
            episode.say(reply, ScriptedUser(task.user))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # llm_judge criteria are ungraded here on purpose
            result = episode.finish(reply)
    return Attempt(task.id, task.split or "", exploit.name, result.reward, result.passed)


@dataclass(frozen=True)
class AuditReport:
    exploits: tuple[str, ...]
    attempts: tuple[Attempt, ...]

    def by_task(self) -> dict[str, dict[str, Attempt]]:
        out: dict[str, dict[str, Attempt]] = {}
        for a in self.attempts:
            out.setdefault(a.task_id, {})[a.exploit] = a
        return out

    def summary(self) -> dict[str, dict[str, float | int]]:
        """Per exploit: mean reward and how many tasks it passes, out of how many."""
        out: dict[str, dict[str, float | int]] = {}
        for name in self.exploits:
            mine = [a for a in self.attempts if a.exploit == name]
            out[name] = {"mean_reward": round(statistics.fmean(a.reward for a in mine), 4) if mine else 0.0,
                         "tasks_passed": sum(a.passed for a in mine), "tasks": len(mine)}
        return out

    def worst(self, n: int = 10) -> list[tuple[str, int, float]]:
        """The tasks the exploits do best on: (task id, exploits passed, mean exploit reward), worst first."""
        rows = [(task_id, sum(a.passed for a in per.values()), statistics.fmean(a.reward for a in per.values()))
                for task_id, per in self.by_task().items()]
        return sorted(rows, key=lambda r: (-r[1], -r[2], r[0]))[:n]

    def to_json(self) -> dict[str, Any]:
        return {"exploits": {name: EXPLOITS_BY_NAME[name].description for name in self.exploits},
                "summary": self.summary(),
                "worst": [{"task_id": t, "exploits_passed": n, "mean_reward": round(r, 4)} for t, n, r in self.worst()],
                "attempts": [asdict(a) for a in self.attempts]}


def audit(tasks: Iterable[CompiledTask], domain: Domain, exploits: Iterable[Exploit] = EXPLOITS,
          progress: Callable[[list[CompiledTask]], Iterable[CompiledTask]] = iter) -> AuditReport:
    """Every exploit on every task."""
    chosen = tuple(exploits)
    played = (attempt(task, exploit, domain) for task in progress(list(tasks)) for exploit in chosen)
    attempts = [a for a in played if a is not None]
    return AuditReport(tuple(e.name for e in chosen), tuple(attempts))


def tables(report: AuditReport, worst: int = 10) -> list[Table]:
    """The report as rich tables: reward and pass per task and exploit, then the figures per exploit."""
    per_task = Table(title="exploit audit: reward per task (✓ = passed)")
    per_task.add_column("task", no_wrap=True, overflow="ellipsis", min_width=24)
    per_task.add_column("split")
    for name in report.exploits:
        per_task.add_column(name, justify="right", min_width=6)
    for task_id, per in report.by_task().items():
        split = next(iter(per.values())).split
        per_task.add_row(task_id, split, *(f"{per[n].reward:.2f}{' ✓' if per[n].passed else '  '}" if n in per else "—"
                                           for n in report.exploits))
    figures = Table(title="per exploit")
    for name in ("exploit", "what it does", "mean reward", "tasks passed"):
        figures.add_column(name, justify="left" if name in ("exploit", "what it does") else "right")
    for name, row in report.summary().items():
        figures.add_row(name, EXPLOITS_BY_NAME[name].description, f"{row['mean_reward']:.3f}",
                        f"{row['tasks_passed']} / {row['tasks']}")
    bad = Table(title=f"the {worst} tasks the exploits do best on")
    for name in ("task", "exploits passed", "mean exploit reward"):
        bad.add_column(name, justify="left" if name == "task" else "right")
    for task_id, passed, reward in report.worst(worst):
        bad.add_row(task_id, f"{passed} / {len(report.exploits)}", f"{reward:.3f}")
    return [per_task, figures, bad]
