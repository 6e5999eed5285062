"""One task's episode served over the Model Context Protocol (stdio): tools, the task as prompt and
resources, and two ways to get the grade (see docs/mcp.md).

``corecraft serve mcp --task ID`` serves the task's tools (respecting ``allowed_tools``) with
annotations and output schemas, the task's system message as the server instructions, the
``task`` prompt (system message, then the request) and the ``corecraft://task/system`` and
``corecraft://task/request`` resources. Arguments are validated by the tool registry itself (not
by the MCP layer), so a bad call gets the same structured error an agent sees in the Gymnasium env.

The grade never comes through one of the agent's tools: ``--control-tools`` adds the harness's
``corecraft_finish`` tool (marked in ``_meta`` so a harness can keep it from the model), and
``--grade-on-exit FILE`` writes the grade and the transcript when the client disconnects.
Works on mcp 1.x and 2.x through :mod:`corecraft.mcp_compat`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp.server.stdio import stdio_server
from pydantic import Field, ValidationError

from corecraft.domain import default_domain
from corecraft.episode import Episode
from corecraft.grading.result import GradeResult
from corecraft.mcp_compat import RESOURCE_NOT_FOUND, build_server, protocol_error
from corecraft.prompting import request_message, system_message
from corecraft.tasks.compile import CompiledTask
from corecraft.tools import Toolkit
from corecraft.tools.common import PageArgs
from corecraft.tools.registry import Args, ToolError
from corecraft.version import VERSION

FINISH_TOOL = "corecraft_finish"
CONTROL_META_KEY = "corecraft/control"
"""``_meta`` key set to true on control tools: a harness lists tools and keeps these from the model."""
TASK_PROMPT = "task"
SYSTEM_URI = "corecraft://task/system"
REQUEST_URI = "corecraft://task/request"

WRITE_HINTS: dict[str, tuple[bool, bool]] = {
    # tool: (destructiveHint, idempotentHint). Destructive: some call makes a change no tool can undo.
    # Idempotent: the same call again changes nothing more. The reasons are tabled in docs/mcp.md.
    "create_refund": (True, False),
    "create_escalation": (True, False),
    "create_resolution": (True, False),
    "update_order_status": (True, True),
    "update_payment_status": (True, True),
    "update_ticket_status": (True, True),
    "post_slack_message": (True, False),
}
"""The annotation decision for every write tool."""

PAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "One page of matches: the total match count (exact up to 1,000; a larger count is "
                   "reported as a lower bound), where the page starts, and the matching rows.",
    "properties": {"total": {"type": "integer", "minimum": 0}, "offset": {"type": "integer", "minimum": 0},
                   "limit": {"type": "integer", "minimum": 1}, "has_more": {"type": "boolean"},
                   "total_is_lower_bound": {"type": "boolean"},
                   "results": {"type": "array", "items": {"type": "object"}}},
    "required": ["total", "offset", "limit", "has_more", "results"],
}
"""What every paged search returns (its argument model extends ``PageArgs``)."""
ROW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The row created or changed, as it is now, with its id.",
    "properties": {"id": {"type": "string"}},
    "required": ["id"],
}
"""What every write tool returns."""
OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "description": "The tool's result; its fields are in the description."}
"""What the other read tools return."""


def output_schema(toolkit: Toolkit, name: str) -> dict[str, Any]:
    """The JSON schema of a successful result of tool ``name`` (errors are ``isError`` results instead)."""
    entry = toolkit[name]
    if not entry.read_only:
        return ROW_SCHEMA
    return PAGE_SCHEMA if issubclass(entry.args, PageArgs) else OBJECT_SCHEMA


def _hints(read_only: bool, destructive: bool, idempotent: bool, title: str | None = None) -> types.ToolAnnotations:
    """Annotations built from the protocol's own (camelCase) names, which both SDK majors accept when
    validating (2.x names its Python attributes in snake_case)."""
    data = {"readOnlyHint": read_only, "destructiveHint": destructive, "idempotentHint": idempotent,
            "openWorldHint": False}
    return types.ToolAnnotations.model_validate({**data, "title": title} if title else data)


def tool_annotations(toolkit: Toolkit, name: str) -> types.ToolAnnotations:
    """The tool's hints: every tool acts only on the episode's closed world."""
    if toolkit[name].read_only:
        return _hints(read_only=True, destructive=False, idempotent=True)
    if name not in WRITE_HINTS:
        raise KeyError(f"write tool {name!r} has no annotation decision in WRITE_HINTS")
    destructive, idempotent = WRITE_HINTS[name]
    return _hints(read_only=False, destructive=destructive, idempotent=idempotent)


class FinishArgs(Args):
    reply: str = Field(max_length=20_000, description="The agent's final reply to the requester (may be empty).")


def _finish_tool() -> types.Tool:
    return types.Tool.model_validate({
        "name": FINISH_TOOL,
        "description": "Harness control, not a support tool: end the episode with the agent's final reply to the "
                       "requester and return its grade (reward, passed, criteria, minefields). After it, every tool "
                       "call is refused.",
        "inputSchema": FinishArgs.model_json_schema(),
        "outputSchema": GradeResult.model_json_schema(),
        "annotations": _hints(read_only=False, destructive=True, idempotent=False,
                              title="Finish and grade the episode (harness control)"),
        "_meta": {CONTROL_META_KEY: True},
    })


def _result(payload: dict[str, Any]) -> types.CallToolResult:
    """A tool result: errors are flagged ``isError`` with the error JSON as text and no structured content
    (so no client validates an error against the tool's output schema)."""
    text = types.TextContent(type="text", text=json.dumps(payload))
    if "error" in payload:
        return types.CallToolResult.model_validate({"content": [text], "isError": True})
    return types.CallToolResult.model_validate({"content": [text], "structuredContent": payload, "isError": False})


class EpisodeServer:
    """The MCP requests answered over one episode (implements :class:`corecraft.mcp_compat.Handlers`)."""

    def __init__(self, episode: Episode, control_tools: bool = False) -> None:
        self.episode = episode
        self.control_tools = control_tools
        self.grade: GradeResult | None = None
        self.ended_by: str | None = None

    def finish(self, reply: str, ended_by: str) -> GradeResult:
        """Grade the episode with ``reply`` (once: the episode is over afterwards)."""
        if self.grade is None:
            self.grade, self.ended_by = self.episode.finish(reply), ended_by
        return self.grade

    def outcome(self) -> dict[str, Any]:
        """The grade, how the episode ended, the final reply and every tool call (what ``--grade-on-exit`` writes)."""
        grade = self.finish("", "disconnect")
        transcript = self.episode.transcript
        return {**grade.model_dump(), "ended_by": self.ended_by, "reply": transcript.reply,
                "calls": [dataclasses.asdict(call) for call in transcript.calls]}

    async def list_tools(self) -> types.ListToolsResult:
        toolkit = self.episode.toolkit
        specs = [schema["function"] for schema in toolkit.schemas(self.episode.tool_names)]
        tools = [types.Tool.model_validate({
            "name": spec["name"], "description": spec["description"], "inputSchema": spec["parameters"],
            "outputSchema": output_schema(toolkit, spec["name"]), "annotations": tool_annotations(toolkit, spec["name"]),
        }) for spec in specs]
        return types.ListToolsResult(tools=[*tools, _finish_tool()] if self.control_tools else tools)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        if self.grade is not None:
            return _result(ToolError("episode_over", f"the episode ended ({self.ended_by}) and was graded: "
                                     "no more tool calls").payload())
        if self.control_tools and name == FINISH_TOOL:
            try:
                reply = FinishArgs.model_validate(arguments).reply
            except ValidationError as exc:
                first = exc.errors()[0]
                field = ".".join(str(p) for p in first["loc"]) or None
                return _result(ToolError("invalid_argument", f"{field}: {first['msg']}", field).payload())
            return _result(self.finish(reply, FINISH_TOOL).model_dump())
        return _result(self.episode.call(name, arguments))

    async def list_prompts(self) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(
            name=TASK_PROMPT, title=f"CoreCraft task {self.episode.task.id}",
            description="The task as the agent sees it: the system message (role, acting employee, now, rules), "
                        "then the requester's message. MCP prompt messages have no system role, so both are "
                        "user messages; the first is the system message.")])

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        if name != TASK_PROMPT:
            raise protocol_error(types.INVALID_PARAMS, f"no prompt named {name!r}; prompts: {TASK_PROMPT}")
        texts = (system_message(self.episode), request_message(self.episode))
        return types.GetPromptResult(
            description=f"CoreCraft task {self.episode.task.id}: system message, then the request",
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=t)) for t in texts])

    def _resources(self) -> dict[str, tuple[types.Resource, str]]:
        return {
            SYSTEM_URI: (types.Resource.model_validate({
                "uri": SYSTEM_URI, "name": "task-system", "title": "System message", "mimeType": "text/plain",
                "description": "Role, acting employee, now and rules (the env's system message)."}),
                system_message(self.episode)),
            REQUEST_URI: (types.Resource.model_validate({
                "uri": REQUEST_URI, "name": "task-request", "title": "Request", "mimeType": "text/plain",
                "description": "The requester's message: what the agent is asked to do."}),
                request_message(self.episode)),
        }

    async def list_resources(self) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[resource for resource, _ in self._resources().values()])

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        found = self._resources().get(uri)
        if found is None:
            raise protocol_error(RESOURCE_NOT_FOUND, f"no resource {uri!r}; resources: {SYSTEM_URI}, {REQUEST_URI}")
        contents = types.TextResourceContents.model_validate({"uri": uri, "mimeType": "text/plain", "text": found[1]})
        return types.ReadResourceResult(contents=[contents])


def write_outcome(path: Path, outcome: dict[str, Any]) -> None:
    """Write ``outcome`` as JSON to ``path`` atomically (a reader never sees half a file)."""
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(outcome, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(part, path)


async def serve_stdio(task: CompiledTask, control_tools: bool = False, grade_on_exit: Path | None = None) -> None:
    """Serve ``task``'s episode on stdin/stdout until the client disconnects, then write the outcome
    to ``grade_on_exit`` if given (graded with the ``corecraft_finish`` reply, or an empty reply)."""
    episode = Episode(task, default_domain())
    handlers = EpisodeServer(episode, control_tools)
    server = build_server("corecraft", VERSION, system_message(episode), handlers)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        if grade_on_exit is not None:
            # A stdio client closes stdin, waits a grace period, then sends SIGTERM and later SIGKILL:
            # ignoring SIGTERM lets grading finish within the second grace period.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            write_outcome(grade_on_exit, handlers.outcome())
    finally:
        episode.close()
