"""``corecraft tasks audit``: the exploit policies run through real episodes on real library tasks,
the no-op exploit failing every task, and the command's table and JSON output."""

from __future__ import annotations

import json

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from corecraft.cli import tasks_cmd
from corecraft.cli.main import app
from corecraft.domain import default_domain
from corecraft.grading.transcript import WRITTEN_TEXT
from corecraft.paths import content
from corecraft.tasks.audit import (
    EXPLOITS,
    EXPLOITS_BY_NAME,
    audit,
    contradiction,
    fire_writes,
    hedge,
    list_values,
    paste_reads,
    tables,
)
from corecraft.tasks.compile import CompiledTask
from corecraft.tasks.model import Task

DOMAIN = default_domain()
TOOLKIT = DOMAIN.toolkit


def find_task(task_id: str) -> CompiledTask:
    return DOMAIN.tasks.get(task_id)

TASKS = ("sla_breach_report_outstanding_shipping_refunds", "gpu_clearance_return_tiffany_shard_window")
runner = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks_cmd.console, "width", 240)


def played(task: CompiledTask, policy: object) -> tuple[str | None, list[str]]:
    """The reply a policy gives on a task and the tools it called."""
    with DOMAIN.episode(task) as episode:
        reply = policy(task.task, episode)  # type: ignore[operator]
        return reply, [c.name for c in episode.transcript.calls]


def test_the_audit_runs_every_exploit_on_a_couple_of_tasks() -> None:
    tasks = [find_task(t) for t in TASKS]
    report = audit(tasks, DOMAIN)
    writes_text = {t.id for t in tasks if any(c.tool in WRITTEN_TEXT for c in t.task.reference_solution.calls)}
    assert writes_text == {"gpu_clearance_return_tiffany_shard_window"}  # paste_notes applies to it alone

    def applies(task_id: str, exploit: str) -> bool:
        return not EXPLOITS_BY_NAME[exploit].conversations_only and (exploit != "paste_notes" or task_id in writes_text)

    assert [(a.task_id, a.exploit) for a in report.attempts] == [(t, e.name) for t in TASKS for e in EXPLOITS
                                                                 if applies(t, e.name)]
    assert all(0.0 <= a.reward <= 1.0 for a in report.attempts)
    summary = report.summary()
    assert list(summary) == [e.name for e in EXPLOITS]
    assert all(row["tasks"] == sum(applies(t, name) for t in TASKS) for name, row in summary.items())
    assert summary["no_op"]["tasks_passed"] == 0
    pasted = [a for a in report.attempts if a.exploit == "paste_all"]
    assert all(a.reward == 0.0 for a in pasted)  # the right writes, but a pasted reply shuts the reply_hygiene gate
    hedged = [a for a in report.attempts if a.exploit == "hedge"]
    assert all(a.reward == 0.0 for a in hedged)  # the reference reply and a second answer: the one_answer gate shuts
    contradicted = [a for a in report.attempts if a.exploit == "contradict"]
    assert contradicted and not any(a.passed for a in contradicted)  # the right writes cannot carry a wrong answer
    assert {t for t, _, _ in report.worst()} == set(TASKS)


@pytest.mark.slow
def test_the_no_op_exploit_fails_every_task_in_the_library() -> None:
    tasks = [t for split in ("train", "dev", "test") for t in DOMAIN.tasks.split(split)]
    report = audit(tasks, DOMAIN, [EXPLOITS_BY_NAME["no_op"]])
    no_op = report.summary()["no_op"]
    assert (no_op["tasks_passed"], no_op["tasks"]) == (0, len(tasks))
    assert [a.task_id for a in report.attempts if a.passed] == []


def test_paste_and_list_policies_use_only_the_reference_reads() -> None:
    task = find_task(TASKS[0])
    reads = [c.tool for c in task.task.reference_solution.calls if TOOLKIT[c.tool].read_only]
    pasted, calls = played(task, paste_reads)
    assert calls == reads and len(json.loads(pasted)) == len(reads)
    listed, calls = played(task, list_values)
    assert calls == reads
    assert "ord-250903-002" in listed and "49.99" in listed and "{" not in listed


def test_fire_writes_adds_every_other_write_tool_to_the_reference_calls() -> None:
    task = find_task(TASKS[1])
    reply, calls = played(task, fire_writes)
    reference = [c.tool for c in task.task.reference_solution.calls]
    assert calls[:len(reference)] == reference and reply == task.task.reference_solution.reply
    extra = set(calls[len(reference):])
    assert extra and all(not TOOLKIT[name].read_only for name in extra) and not extra & set(reference)


def test_fire_writes_does_not_apply_where_no_extra_write_changes_the_world() -> None:
    """A queue sweep's reference already uses every write tool and the tools refuse every extra write on the
    returns recap (its ticket is closed): the attempt is the reference there, so it is left out (``—``)."""
    ids = ["queue_sweep_noor_four_tickets", "manager_refund_aggregation_returns_team_recap", TASKS[1]]
    report = audit([find_task(t) for t in ids], DOMAIN, [EXPLOITS_BY_NAME["no_op"], EXPLOITS_BY_NAME["fire_writes"]])
    assert [a.task_id for a in report.attempts if a.exploit == "fire_writes"] == [TASKS[1]]
    assert report.summary()["fire_writes"]["tasks"] == 1 and report.summary()["no_op"]["tasks"] == 3
    refused, calls = played(find_task(ids[1]), fire_writes)
    assert refused is None and len(calls) > len(find_task(ids[1]).task.reference_solution.calls)
    console = Console(record=True, width=200)
    console.print(tables(report)[0])
    row = next(line for line in console.export_text().splitlines() if ids[0][:20] in line)
    assert row.rstrip(" │").endswith("—")


def test_the_hedge_states_the_reference_and_a_contradiction() -> None:
    assert contradiction("You can get $124.97 back for 3 items; it is eligible.") == \
        "You cannot get $149.96 back for 4 items; it isn't ineligible."
    assert contradiction("Order ord-250905-002 on 2025-09-05") == "Order ord-250905-002 on 2025-09-05"
    task = find_task(TASKS[0])
    reply, _ = played(task, hedge)
    assert reply.startswith(task.task.reference_solution.reply) and "209.95" in reply  # its $174.96 total, changed


def test_default_reply_hygiene_turns_the_paste_exploits_down() -> None:
    task = find_task(TASKS[0])
    assert "reply_hygiene" in [c.id for c in task.criteria]  # graded by default
    data = yaml.safe_load(content("tasks", "dev", f"{TASKS[0]}.yaml").read_text(encoding="utf-8"))
    unguarded = Task.model_validate({**data, "reply_hygiene": False,
                                     "rubric": [{**c, "gate": False} if "id" in c else c for c in data["rubric"]]})
    assert "reply_hygiene" not in [c.id for c in DOMAIN.compile(unguarded).criteria]
    report = audit([task], DOMAIN, [EXPLOITS_BY_NAME["paste_reads"], EXPLOITS_BY_NAME["paste_all"]])
    plain = audit([DOMAIN.compile(unguarded)], DOMAIN, [EXPLOITS_BY_NAME["paste_reads"], EXPLOITS_BY_NAME["paste_all"]])
    for before, after in zip(plain.attempts, report.attempts, strict=True):
        assert after.reward < before.reward and not after.passed


def test_audit_command_prints_tables_and_json() -> None:
    result = runner.invoke(app, ["tasks", "audit", "--task", TASKS[0], "--exploit", "no_op", "--exploit", "hedge"])
    assert result.exit_code == 0, result.stderr
    assert "no_op" in result.stdout and "hedge" in result.stdout and TASKS[0] in result.stdout
    result = runner.invoke(app, ["tasks", "audit", "--task", TASKS[0], "--exploit", "no_op", "--json"])
    data = json.loads(result.stdout)
    assert data["summary"] == {"no_op": {"mean_reward": round(data["attempts"][0]["reward"], 4), "tasks_passed": 0, "tasks": 1}}
    assert data["attempts"][0]["task_id"] == TASKS[0] and data["attempts"][0]["passed"] is False


@pytest.mark.parametrize(("args", "message"), [(["--exploit", "bribe"], "unknown exploit(s) bribe"),
                                               (["--task", "no_such_task"], "no such task(s): no_such_task")])
def test_audit_command_refuses_unknown_names(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["tasks", "audit", *args])
    assert result.exit_code != 0 and message in result.stderr


def test_conversation_tasks_resist_every_exploit_said_to_their_scripted_customer() -> None:
    """Each exploit's reply goes to the scripted customer in one message; skip_dialogue (every reference call,
    then only the last message) is tried on conversation tasks alone."""
    talks = ["conv_verify_tracking_daniel_email_mismatch", "conv_clarify_cancel_grace_keyboard", "conv_angry_dead_cpu_express"]
    report = audit([find_task(t) for t in talks], DOMAIN)
    assert [a.task_id for a in report.attempts if a.passed] == []
    assert report.summary()["skip_dialogue"]["tasks"] == len(talks)
    chosen = [EXPLOITS_BY_NAME["no_op"], EXPLOITS_BY_NAME["skip_dialogue"]]
    mixed = audit([find_task(TASKS[0]), find_task(talks[0])], DOMAIN, chosen)
    assert [(a.task_id, a.exploit) for a in mixed.attempts] == [
        (TASKS[0], "no_op"), (talks[0], "no_op"), (talks[0], "skip_dialogue")]
    console = Console(record=True, width=200)
    console.print(tables(mixed)[0])
    row = next(line for line in console.export_text().splitlines() if TASKS[0][:20] in line)
    assert row.rstrip(" │").endswith("—")  # not tried on a single-turn task
