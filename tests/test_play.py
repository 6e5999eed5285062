"""``corecraft play``: a task played one command at a time through the CLI reaches the same grade as the
env, the grade is written aside rather than shown, and misuse gets clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import corecraft
from corecraft.cli.main import app

TASK = "doa_cpu_refund_kayla"
runner = CliRunner()


def play(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["play", *args])
    return result.exit_code, result.output


def _json_out(session: str) -> list[dict[str, object]]:
    """The session's messages as ``corecraft play --json show`` prints them: JSON objects one after another."""
    out = runner.invoke(app, ["play", "--json", "show", "--session", session]).output.rstrip()
    decoder, messages, at = json.JSONDecoder(), [], 0
    while at < len(out):
        message, at = decoder.raw_decode(out, at)
        messages.append(message)
        at += 1
    return messages


def test_a_reference_played_by_hand_passes_and_the_grade_stays_aside(tmp_path: Path) -> None:
    session = str(tmp_path / "s.pkl")
    code, out = play("start", TASK, "--session", session)
    assert code == 0 and out.startswith("── system ──\n") and "── user ──" in out and "doa_refund_created" not in out
    code, names = play("tools", "--session", session, "--names")
    assert code == 0 and names.split() == [t["function"]["name"] for t in corecraft.default_domain().toolkit.schemas()]
    code, out = play("tools", "--session", session, "search_tickets", "create_refund")
    assert code == 0 and [t["function"]["name"] for t in json.loads(out)] == ["search_tickets", "create_refund"]
    code, out = play("tools", "--session", session, "search_tickts")
    assert code == 2 and "no tool search_tickts; the tools are search_products" in out
    *calls, reply = corecraft.reference_actions(TASK)
    for call in calls:
        assert isinstance(call, dict)
        code, out = play("call", "--session", session, call["function"]["name"], "--args", call["function"]["arguments"])
        header, content = out.split("\n", 1)
        assert code == 0 and header.startswith(f"── tool {call['function']['name']} (")
        assert "error" not in json.loads(content)
    assert isinstance(reply, str)
    code, out = play("reply", "--session", session, reply)
    assert code == 0 and "grade written to" in out and "passed" not in out
    code, out = play("grade", "--session", session)
    grade = json.loads(out)
    assert code == 0 and grade["passed"] and grade["reward"] == 1.0
    code, out = play("show", "--session", session)
    assert code == 0 and out.count("── tool ") == len(calls) and out.count("── assistant → ") == len(calls)
    messages = _json_out(session)
    assert [m["role"] for m in messages][-2:] == ["tool", "assistant"] and messages[-1]["content"] == reply
    code, out = play("call", "--session", session, "search_tickets")
    assert code == 2 and "episode is over" in out


@pytest.mark.parametrize(("args", "message"), [
    (["show", "--session", "{dir}/missing.pkl"], "no play session at"),
    (["start", "no_such_task", "--session", "{dir}/s.pkl"], "no_such_task"),
    (["grade", "--session", "{dir}/s.pkl"], "has not ended yet"),
    (["call", "--session", "{dir}/s.pkl", "search_tickets", "--args", "{{nope"], "--args is not valid JSON"),
])
def test_misuse_gets_a_clear_error(tmp_path: Path, args: list[str], message: str) -> None:
    play("start", TASK, "--session", str(tmp_path / "s.pkl"))
    code, out = play(*[a.format(dir=tmp_path) for a in args])
    assert code == 2 and message in out


def test_test_tasks_need_the_test_split(tmp_path: Path) -> None:
    test_id = corecraft.tasks("test")[0].id
    code, out = play("start", test_id, "--session", str(tmp_path / "s.pkl"))
    assert code == 2 and "held-out test split" in out
    code, out = play("start", test_id, "--session", str(tmp_path / "s.pkl"), "--split", "test")
    assert code == 0


def test_a_conversation_task_is_played_turn_by_turn(tmp_path: Path) -> None:
    task = next(t for t in corecraft.tasks("train") if t.user is not None)
    session = str(tmp_path / "s.pkl")
    assert play("start", task.id, "--session", session)[0] == 0
    code, out = play("reply", "--session", session, "Hello, how can I help you today?")
    assert code == 0 and "── user ──" in out and "episode over" not in out


def test_a_reply_from_a_file_keeps_dollar_signs(tmp_path: Path) -> None:
    session = str(tmp_path / "s.pkl")
    play("start", TASK, "--session", session)
    message = tmp_path / "reply.txt"
    message.write_text("Refunded $189.00 to your card.", encoding="utf-8")
    assert play("reply", "--session", session, "--file", str(message))[0] == 0
    assert "$189.00" in play("show", "--session", session)[1]
    assert play("reply", "--session", session)[0] == 2
