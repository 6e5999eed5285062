"""The 23 tools the agent acts through: 16 read tools and 7 write tools, in one registry."""

from corecraft.tools import reads, writes  # noqa: F401  (importing registers the tools)
from corecraft.tools.registry import REGISTRY, Tool, ToolContext, ToolError, call_tool

__all__ = ["REGISTRY", "Tool", "ToolContext", "ToolError", "call_tool"]
