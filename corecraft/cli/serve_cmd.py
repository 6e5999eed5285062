"""``corecraft serve mcp``: one task's episode over the Model Context Protocol (see docs/mcp.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from corecraft.domain import default_domain

app = typer.Typer(help="Serve CoreCraft to other programs.", no_args_is_help=True)


@app.command()
def mcp(task: Annotated[str, typer.Option(help="Task id whose world and allowed tools to serve.")],
        root: Annotated[Path | None, typer.Option(help="Tasks folder (with train/dev/test); default: built-in.")] = None,
        control_tools: Annotated[bool, typer.Option(
            "--control-tools", help="Also list corecraft_finish(reply), a harness control that grades the episode "
                                    "and returns the grade (marked _meta corecraft/control, not an agent tool).")] = False,
        grade_on_exit: Annotated[Path | None, typer.Option(
            help="When the client disconnects, grade the episode (with the corecraft_finish reply, or an empty "
                 "reply) and write the grade and the tool calls to this JSON file.")] = None,
        ) -> None:
    """Serve one task's episode over MCP on stdio: its tools, the task as prompt and resources."""
    from corecraft.mcp_server import serve_stdio

    try:
        chosen = default_domain().library(root).get(task)
    except KeyError as exc:
        typer.echo(f"error: {exc.args[0]}", err=True)
        raise typer.Exit(2) from None
    if grade_on_exit is not None and not grade_on_exit.parent.is_dir():
        typer.echo(f"error: --grade-on-exit: folder {grade_on_exit.parent} does not exist", err=True)
        raise typer.Exit(2)
    asyncio.run(serve_stdio(chosen, control_tools=control_tools, grade_on_exit=grade_on_exit))
