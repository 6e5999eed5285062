"""The MCP server, exercised with the real ``mcp`` stdio client against ``corecraft serve mcp``.

The client's results are read as wire JSON (``_wire``), so the same tests run on mcp 1.x and 2.x
(whose Python attribute names differ); the slow test runs this file again in a venv with mcp 1.x.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from typer.testing import CliRunner

import corecraft
from corecraft.cli.main import app
from corecraft.domain import default_domain
from corecraft.env.core import CoreCraftEnv
from corecraft.grading.result import GradeResult
from corecraft.mcp_server import CONTROL_META_KEY, FINISH_TOOL, REQUEST_URI, SYSTEM_URI, WRITE_HINTS, output_schema
from corecraft.paths import content
from corecraft.tasks.model import Task

DOMAIN = default_domain()
REGISTRY = DOMAIN.toolkit.tools


def find_task(task_id: str) -> Task:
    return DOMAIN.tasks.get(task_id).task

TASK = "doa_cpu_refund_kayla"
WORKTREE = Path(__file__).resolve().parents[1]


def _params(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "corecraft.cli.main", "serve", "mcp", *extra],
                                 env={**os.environ})


def _wire(model: Any) -> Any:
    """A client result as the JSON on the wire (camelCase keys on both SDK majors)."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def _session_run() -> dict[str, Any]:
    async with stdio_client(_params("--task", TASK)) as (read, write), ClientSession(read, write) as session:
        init = _wire(await session.initialize())
        tools = _wire(await session.list_tools())["tools"]
        read_result = _wire(await session.call_tool("get_order_details", {"order_id": "ord-250827-003"}))
        bad = _wire(await session.call_tool("get_order_details", {"order_id": 42}))
        search = _wire(await session.call_tool("search_payments", {"order_id": "ord-250827-003"}))
        write_result = _wire(await session.call_tool("create_refund", {
            "payment_id": "pay-250827-003", "amount": 189.0, "reason": "doa", "ticket_id": "tick-250915-004",
            "lines": [{"order_line_id": "ord-250827-003-L2", "quantity": 1}]}))
        after = _wire(await session.call_tool("search_payments", {"order_id": "ord-250827-003"}))
        finish = _wire(await session.call_tool(FINISH_TOOL, {"reply": "done"}))
        prompts = _wire(await session.list_prompts())["prompts"]
        prompt = _wire(await session.get_prompt("task"))
        resources = _wire(await session.list_resources())["resources"]
        texts = {uri: _wire(await session.read_resource(uri))["contents"] for uri in (SYSTEM_URI, REQUEST_URI)}
        missing = []
        for ask in (lambda: session.read_resource("corecraft://task/nothing"), lambda: session.get_prompt("nope")):
            try:
                await ask()
                missing.append("")
            except Exception as exc:  # the SDK's protocol error: McpError on 1.x, MCPError on 2.x
                missing.append(str(exc))
        return {"init": init, "tools": tools, "read": read_result, "bad": bad, "search": search, "write": write_result,
                "after": after, "finish": finish, "prompts": prompts, "prompt": prompt, "resources": resources,
                "texts": texts, "missing": missing}


@pytest.fixture(scope="module")
def session_run() -> dict[str, Any]:
    return asyncio.run(_session_run())


def _opening() -> list[dict[str, Any]]:
    """What the Gymnasium env shows the agent at reset, for the same task."""
    env = CoreCraftEnv(task_id=TASK)
    try:
        return env.reset(seed=0)[0]
    finally:
        env.close()


def test_mcp_lists_calls_and_changes_the_world(session_run: dict[str, Any]) -> None:
    out = session_run
    names = {t["name"]: t for t in out["tools"]}
    assert list(names) == list(REGISTRY) and FINISH_TOOL not in names
    order = json.loads(out["read"]["content"][0]["text"])
    assert order["id"] == "ord-250827-003" and out["read"]["structuredContent"] == order and not out["read"]["isError"]
    assert out["bad"]["isError"] and json.loads(out["bad"]["content"][0]["text"])["error"]["field"] == "order_id"
    assert "structuredContent" not in out["bad"]
    refund = out["write"]["structuredContent"]
    assert not out["write"]["isError"] and refund["amount"] == 189.0 and refund["id"].startswith("ref-")
    assert out["search"]["structuredContent"]["results"][0]["refunded_amount"] == 0
    assert out["after"]["structuredContent"]["results"][0]["refunded_amount"] == 189.0
    assert json.loads(out["finish"]["content"][0]["text"])["error"]["type"] == "unknown_tool"


def test_mcp_server_identifies_itself_and_declares_output_schemas(session_run: dict[str, Any]) -> None:
    out = session_run
    assert out["init"]["serverInfo"] == {"name": "corecraft", "version": corecraft.__version__}
    assert out["init"]["instructions"] == _opening()[0]["content"]
    for tool in out["tools"]:
        assert tool["outputSchema"] == output_schema(DOMAIN.toolkit, tool["name"])
    for result in (out["read"], out["search"], out["write"], out["after"]):  # the client validated these too
        assert result["structuredContent"]


def test_mcp_annotations(session_run: dict[str, Any]) -> None:
    hints = {t["name"]: t["annotations"] for t in session_run["tools"]}
    assert all(h["openWorldHint"] is False for h in hints.values())
    reads = [n for n, h in hints.items() if h["readOnlyHint"]]
    assert len(reads) == 16 and set(reads) == {n for n, t in REGISTRY.items() if t.read_only}
    writes = {n: h for n, h in hints.items() if not h["readOnlyHint"]}
    assert set(writes) == set(WRITE_HINTS)
    for name, h in writes.items():
        assert (h["destructiveHint"], h["idempotentHint"]) == WRITE_HINTS[name]
    assert not hints["create_refund"]["idempotentHint"] and hints["update_ticket_status"]["idempotentHint"]
    assert all(h["destructiveHint"] is False for n, h in hints.items() if n in reads)


def test_mcp_shows_the_task_as_prompt_and_resources(session_run: dict[str, Any]) -> None:
    out = session_run
    system, request = (m["content"] for m in _opening())
    assert [p["name"] for p in out["prompts"]] == ["task"]
    assert [(m["role"], m["content"]["text"]) for m in out["prompt"]["messages"]] == [("user", system),
                                                                                     ("user", request)]
    episode = DOMAIN.episode(find_task(TASK))
    assert f"employee id {episode.actor})" in system and "It is now " in system
    assert request == find_task(TASK).prompt.strip()
    episode.close()
    assert {r["uri"]: r["mimeType"] for r in out["resources"]} == {SYSTEM_URI: "text/plain", REQUEST_URI: "text/plain"}
    assert out["texts"][SYSTEM_URI][0]["text"] == system
    assert out["texts"][REQUEST_URI][0]["text"] == request
    assert "no resource 'corecraft://task/nothing'" in out["missing"][0]
    assert "no prompt named 'nope'" in out["missing"][1]


async def _graded_run(result_file: Path, finish: bool) -> dict[str, Any]:
    task = find_task(TASK)
    params = _params("--task", TASK, "--control-tools", "--grade-on-exit", str(result_file))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = _wire(await session.list_tools())["tools"]
        for call in task.reference_solution.calls:
            assert not _wire(await session.call_tool(call.tool, call.args))["isError"]
        out: dict[str, Any] = {"tools": tools}
        if finish:
            out["bad_finish"] = _wire(await session.call_tool(FINISH_TOOL, {"reply": 7}))
            out["grade"] = _wire(await session.call_tool(FINISH_TOOL, {"reply": task.reference_solution.reply}))
            out["refused"] = _wire(await session.call_tool("search_customers", {"email": "baker.k@yahoo.com"}))
        return out


def test_mcp_control_tool_grades_and_the_grade_is_written_on_exit(tmp_path: Path) -> None:
    result_file = tmp_path / "results.json"
    out = asyncio.run(_graded_run(result_file, finish=True))
    control = [t for t in out["tools"] if t["name"] == FINISH_TOOL]
    assert len(out["tools"]) == len(REGISTRY) + 1 and len(control) == 1
    assert control[0]["_meta"] == {CONTROL_META_KEY: True} and control[0]["annotations"]["openWorldHint"] is False
    assert out["bad_finish"]["isError"] and "reply" in out["bad_finish"]["content"][0]["text"]
    expected = DOMAIN.replay_reference(find_task(TASK))
    grade = GradeResult.model_validate(out["grade"]["structuredContent"])
    assert not out["grade"]["isError"] and grade == expected and grade.passed and grade.reward == 1.0
    assert json.loads(out["refused"]["content"][0]["text"])["error"]["type"] == "episode_over"
    written = json.loads(result_file.read_text())
    assert GradeResult.model_validate({k: written[k] for k in GradeResult.model_fields}) == expected
    assert written["ended_by"] == FINISH_TOOL and written["reply"] == find_task(TASK).reference_solution.reply
    assert [(c["name"], c["args"]) for c in written["calls"]] == \
        [(c.tool, c.args) for c in find_task(TASK).reference_solution.calls]


def test_mcp_grade_on_exit_without_finish_grades_an_empty_reply(tmp_path: Path) -> None:
    result_file = tmp_path / "results.json"
    asyncio.run(_graded_run(result_file, finish=False))
    written = json.loads(result_file.read_text())
    episode = DOMAIN.episode(find_task(TASK))
    try:
        for call in find_task(TASK).reference_solution.calls:
            episode.call(call.tool, call.args)
        expected = episode.finish("")
    finally:
        episode.close()
    assert written["ended_by"] == "disconnect" and written["reply"] == ""
    assert written["reward"] == expected.reward and written["criteria"] == [c.model_dump() for c in expected.criteria]
    assert not written["passed"]  # the reply criteria fail without a reply
    assert len(written["calls"]) == len(find_task(TASK).reference_solution.calls)


def test_output_schemas_hold_for_every_reference_call() -> None:
    checked: set[str] = set()
    for compiled in DOMAIN.tasks.split(None):
        episode = DOMAIN.episode(compiled)
        try:
            for call in compiled.task.reference_solution.calls:
                result = episode.call(call.tool, call.args)
                if "error" not in result:
                    jsonschema.validate(result, output_schema(DOMAIN.toolkit, call.tool))
                    checked.add(call.tool)
        finally:
            episode.close()
    assert {n for n, t in REGISTRY.items() if not t.read_only} <= checked and len(checked) >= 18


async def _list_allowed(root: Path) -> tuple[list[str], str]:
    async with stdio_client(_params("--task", "subset_task", "--root", str(root))) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        names = [t["name"] for t in _wire(await session.list_tools())["tools"]]
        refused = _wire(await session.call_tool("create_refund", {"payment_id": "pay-250827-003", "amount": 1.0,
                                                                  "reason": "goodwill"}))
        return names, refused["content"][0]["text"]


def test_mcp_serves_only_the_allowed_tools(tmp_path: Path) -> None:
    task = yaml.safe_load(content("tasks", "train", f"{TASK}.yaml").read_text())
    task.update(id="subset_task", allowed_tools=["search_customers", "get_order_details"])
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "subset_task.yaml").write_text(yaml.safe_dump(task))
    names, refused = asyncio.run(_list_allowed(tmp_path))
    assert names == ["search_customers", "get_order_details"]
    assert json.loads(refused)["error"]["type"] == "unknown_tool"


def test_serve_mcp_rejects_bad_options_before_serving(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["serve", "mcp", "--task", TASK, "--grade-on-exit", str(tmp_path / "no" / "r.json")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    unknown = runner.invoke(app, ["serve", "mcp", "--task", "no_such_task"])
    assert unknown.exit_code == 2 and "no_such_task" in unknown.output


@pytest.mark.slow
@pytest.mark.parametrize(("requirement", "major"), [("mcp<2", "1"), ("mcp==2.0.0", "2")])
def test_mcp_tests_pass_on_both_sdk_majors(tmp_path: Path, requirement: str, major: str) -> None:
    """This file's stdio round trips, run again in a fresh venv with the latest mcp 1.x, and with mcp 2.0.0
    (the release verifiers 0.4.0 pins; the main venv resolves the newest 2.x)."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    # CoreCraft (this checkout) and everything but mcp come from this interpreter's site-packages, placed
    # after the venv's own, so the venv installs only the mcp release under test (and what it needs differently).
    child_site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                check=True, capture_output=True, text=True).stdout.strip()
    parent_site = [p for p in sys.path if p.endswith("site-packages")]
    (Path(child_site) / "zz_parent.pth").write_text("\n".join([str(WORKTREE), *parent_site]) + "\n", encoding="utf-8")
    subprocess.run([python, "-m", "pip", "install", "-q", requirement], check=True)
    found = subprocess.run([python, "-c", "from corecraft.mcp_compat import MCP_MAJOR; print(MCP_MAJOR)"],
                           check=True, capture_output=True, text=True).stdout.strip()
    assert found == major
    run = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
                          str(WORKTREE / "tests" / "test_mcp.py")], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout and "failed" not in run.stdout
