"""The tools over the Model Context Protocol (stdio), with one task's episode world behind them.

``corecraft serve mcp --task ID`` serves the task's tools (respecting ``allowed_tools``), read
tools marked read-only. Arguments are validated by the tool registry itself (not by the MCP
layer), so a bad call gets the same structured error an agent sees in the Gymnasium env.
"""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from corecraft.domain import default_domain
from corecraft.episode import Episode
from corecraft.tasks.compile import CompiledTask


def build_server(episode: Episode) -> Server:
    """An MCP server whose tools act on ``episode``'s world."""
    server: Server = Server("corecraft", instructions=f"CoreCraft support tools for task {episode.task.id}.")
    toolkit = episode.toolkit
    schemas = {s["function"]["name"]: s["function"] for s in toolkit.schemas(episode.tool_names)}

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [
            types.Tool(name=name, description=spec["description"], inputSchema=spec["parameters"],
                       annotations=types.ToolAnnotations(readOnlyHint=toolkit[name].read_only,
                                                         destructiveHint=not toolkit[name].read_only))
            for name, spec in schemas.items()
        ]

    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        result = episode.call(name, arguments)
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(result))],
                                    structuredContent=result, isError="error" in result)

    return server


async def serve_stdio(task: CompiledTask) -> None:
    """Serve ``task``'s tools on stdin/stdout until the client disconnects."""
    episode = Episode(task, default_domain())
    server = build_server(episode)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        episode.close()
