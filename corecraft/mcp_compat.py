"""The one place that knows which major version of the ``mcp`` SDK is installed (1.x or 2.x).

Both majors ship a low-level ``mcp.server.lowlevel.Server``, the wire types as ``mcp.types``
(constructors take the protocol's camelCase names in both) and ``mcp.server.stdio.stdio_server``;
they differ in how request handlers are attached and in the protocol-error exception:

========================  ==============================================  ===============================================
                          mcp 1.x                                         mcp 2.x
========================  ==============================================  ===============================================
attach a handler          decorators, or ``server.request_handlers``      ``Server(..., on_list_tools=...)`` keyword
                          keyed by request type; a handler takes the      arguments; a handler takes ``(ctx, params)``
                          request and returns ``types.ServerResult``      and returns the result
protocol error            ``McpError(ErrorData(code, message))``          ``MCPError(code, message)``
========================  ==============================================  ===============================================

The server logic (:mod:`corecraft.mcp_server`) is written once against :class:`Handlers`, whose
methods return complete result objects; :func:`build_server` attaches them for the installed major.
On 1.x the handlers go straight into ``request_handlers`` (what the decorators do too), so the
decorators' own result reshaping and input/output validation stay out of the way on both majors.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any, Protocol, cast

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.shared import exceptions

MCP_MAJOR = int(version("mcp").split(".")[0])
"""The installed SDK's major version: 1 or 2."""

RESOURCE_NOT_FOUND = -32002
"""The JSON-RPC error code the MCP specification gives an unknown resource URI."""


class Handlers(Protocol):
    """The requests a CoreCraft server answers, each returning the complete MCP result."""

    async def list_tools(self) -> types.ListToolsResult: ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult: ...

    async def list_prompts(self) -> types.ListPromptsResult: ...

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult: ...

    async def list_resources(self) -> types.ListResourcesResult: ...

    async def read_resource(self, uri: str) -> types.ReadResourceResult: ...


def protocol_error(code: int, message: str) -> Exception:
    """An exception that a handler raises to answer with a JSON-RPC error (not a tool error result)."""
    module: Any = exceptions  # the class's name and signature differ by major, so it is looked up untyped
    if MCP_MAJOR >= 2:
        return cast(Exception, module.MCPError(code, message))
    return cast(Exception, module.McpError(types.ErrorData(code=code, message=message)))


def build_server(name: str, server_version: str, instructions: str, handlers: Handlers) -> Server:
    """A low-level server named ``name`` (reported with ``server_version``) answering with ``handlers``."""
    if MCP_MAJOR >= 2:
        return _server_v2(name, server_version, instructions, handlers)
    return _server_v1(name, server_version, instructions, handlers)


def _server_v2(name: str, server_version: str, instructions: str, h: Handlers) -> Server:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return await h.list_tools()

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return await h.call_tool(params.name, params.arguments or {})

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return await h.list_prompts()

    async def get_prompt(ctx: Any, params: Any) -> types.GetPromptResult:
        return await h.get_prompt(params.name, params.arguments or {})

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return await h.list_resources()

    async def read_resource(ctx: Any, params: Any) -> types.ReadResourceResult:
        return await h.read_resource(str(params.uri))

    server_class: Any = Server  # its keywords differ by major
    return cast(Server, server_class(
        name, version=server_version, instructions=instructions, on_list_tools=list_tools, on_call_tool=call_tool,
        on_list_prompts=list_prompts, on_get_prompt=get_prompt, on_list_resources=list_resources,
        on_read_resource=read_resource))


def _server_v1(name: str, server_version: str, instructions: str, h: Handlers) -> Server:
    server: Any = Server(name, version=server_version, instructions=instructions)
    routes: dict[type, Any] = {
        types.ListToolsRequest: lambda req: h.list_tools(),
        types.CallToolRequest: lambda req: h.call_tool(req.params.name, req.params.arguments or {}),
        types.ListPromptsRequest: lambda req: h.list_prompts(),
        types.GetPromptRequest: lambda req: h.get_prompt(req.params.name, req.params.arguments or {}),
        types.ListResourcesRequest: lambda req: h.list_resources(),
        types.ReadResourceRequest: lambda req: h.read_resource(str(req.params.uri)),
    }
    for request_type, answer in routes.items():
        server.request_handlers[request_type] = _as_server_result(answer)
    return cast(Server, server)


def _as_server_result(answer: Any) -> Any:
    """A 1.x request handler: ``answer(request)``'s result wrapped in the ``ServerResult`` union 1.x sends."""

    async def handler(request: Any) -> Any:
        wire: Any = types  # ServerResult exists in 1.x only
        return wire.ServerResult(await answer(request))

    return handler
