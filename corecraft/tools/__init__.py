"""The 23 tools the agent acts through: 16 read tools and 7 write tools.

:func:`corecraft_tools` lists them (reads, then writes, each in definition order); a
:class:`~corecraft.tools.registry.Toolkit` binds them to a policy.
"""

from __future__ import annotations

from corecraft.tools import reads, writes
from corecraft.tools.registry import Tool, ToolContext, ToolError, Toolkit, tools_in


def corecraft_tools() -> tuple[Tool, ...]:
    """Every CoreCraft tool, reads first."""
    return tools_in(reads) + tools_in(writes)


__all__ = ["Tool", "ToolContext", "ToolError", "Toolkit", "corecraft_tools"]
