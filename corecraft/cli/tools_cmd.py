"""``corecraft tools list|export|call``: the 23 tools at a glance, as OpenAI schemas, and one call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from corecraft.cli.world_cmd import SeedOpt, WorldOpt, open_world
from corecraft.domain import default_domain
from corecraft.paths import content
from corecraft.tools.schemas import first_sentence

app = typer.Typer(help="List, export and call the tools.", no_args_is_help=True)
console = Console()


@app.command("list")
def list_tools() -> None:
    """Every tool: name, read or write, and what it does (first sentence of its description)."""
    table = Table(title="CoreCraft tools")
    for name in ("tool", "kind", "what it does"):
        table.add_column(name, overflow="fold")
    toolkit = default_domain().toolkit
    for entry in toolkit:
        table.add_row(entry.name, "read" if entry.read_only else "[yellow]write[/yellow]",
                      first_sentence(toolkit.descriptions[entry.name]))
    console.print(table)
    reads = sum(entry.read_only for entry in toolkit)
    console.print(f"{len(toolkit)} tools ({reads} read, {len(toolkit) - reads} write)")


@app.command()
def export(out: Annotated[Path | None, typer.Option("--out", "-o", help="Where to write; default "
                                                    "tools/catalog.json.")] = None) -> None:
    """Write the tools as OpenAI function schemas (the checked-in tools/catalog.json)."""
    path = out or content("tools", "catalog.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    toolkit = default_domain().toolkit
    path.write_text(toolkit.catalog_json(), encoding="utf-8")
    console.print(f"wrote {len(toolkit)} tools to {path}")


@app.command()
def call(name: Annotated[str, typer.Argument(help="Tool name, e.g. get_order_details.")],
         args: Annotated[str, typer.Option("--args", "-a", help="Arguments as a JSON object.")] = "{}",
         world: WorldOpt = "default", seed: SeedOpt = None,
         actor: Annotated[str | None, typer.Option(help="Employee id to act as; default the world's first "
                                                        "Support Agent I.")] = None) -> None:
    """Call one tool on a fresh copy of the world and print its JSON result (exit 1 on an error result)."""
    w = open_world(world, seed)
    try:
        toolkit = default_domain().toolkit
        result = toolkit.call(toolkit.context(w, actor or w.first_employee()), name, args)
    finally:
        w.close()
    typer.echo(json.dumps(result, indent=2, ensure_ascii=False))
    if "error" in result:
        raise typer.Exit(1)
