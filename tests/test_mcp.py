"""The MCP server, exercised with the real ``mcp`` stdio client against ``corecraft serve mcp``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import yaml
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from corecraft.paths import content

TASK = "doa_cpu_refund_kayla"


def _params(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "corecraft.cli.main", "serve", "mcp", *extra],
                                 env={**os.environ})


async def _session_run() -> dict:
    params = _params("--task", TASK)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        read_result = await session.call_tool("get_order_details", {"order_id": "ord-250827-003"})
        bad = await session.call_tool("get_order_details", {"order_id": 42})
        write_result = await session.call_tool("create_refund", {
            "payment_id": "pay-250827-003", "amount": 189.0, "reason": "doa", "ticket_id": "tick-250915-901",
            "lines": [{"order_line_id": "ord-250827-003-L2", "quantity": 1}]})
        after = await session.call_tool("search_payments", {"order_id": "ord-250827-003"})
        return {"tools": tools, "read": read_result, "bad": bad, "write": write_result, "after": after}


def test_mcp_lists_calls_and_changes_the_world() -> None:
    out = asyncio.run(_session_run())
    names = {t.name: t for t in out["tools"]}
    assert len(names) == 23
    assert names["get_order_details"].annotations.readOnlyHint is True
    assert names["create_refund"].annotations.readOnlyHint is False
    order = json.loads(out["read"].content[0].text)
    assert order["id"] == "ord-250827-003" and not out["read"].isError
    assert out["bad"].isError and json.loads(out["bad"].content[0].text)["error"]["field"] == "order_id"
    refund = json.loads(out["write"].content[0].text)
    assert not out["write"].isError and refund["amount"] == 189.0
    payment = json.loads(out["after"].content[0].text)["results"][0]
    assert payment["refunded_amount"] == 189.0


async def _list_allowed(root: Path) -> tuple[list[str], str]:
    async with stdio_client(_params("--task", "subset_task", "--root", str(root))) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        names = [t.name for t in (await session.list_tools()).tools]
        refused = await session.call_tool("create_refund", {"payment_id": "pay-250827-003", "amount": 1.0,
                                                            "reason": "goodwill"})
        return names, refused.content[0].text


def test_mcp_serves_only_the_allowed_tools(tmp_path: Path) -> None:
    task = yaml.safe_load(content("tasks", "train", f"{TASK}.yaml").read_text())
    task.update(id="subset_task", allowed_tools=["search_customers", "get_order_details"])
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "subset_task.yaml").write_text(yaml.safe_dump(task))
    names, refused = asyncio.run(_list_allowed(tmp_path))
    assert names == ["search_customers", "get_order_details"]
    assert json.loads(refused)["error"]["type"] == "unknown_tool"
