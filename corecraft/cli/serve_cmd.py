"""``corecraft serve mcp``: the tools over the Model Context Protocol."""

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
        ) -> None:
    """Serve one task's tools over MCP on stdio (one episode's world behind them)."""
    from corecraft.mcp_server import serve_stdio

    try:
        chosen = default_domain().library(root).get(task)
    except KeyError as exc:
        typer.echo(f"error: {exc.args[0]}", err=True)
        raise typer.Exit(2) from None
    asyncio.run(serve_stdio(chosen))
