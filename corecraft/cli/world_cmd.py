"""``corecraft world build|stats|inspect|lint``: build the template, count it, look at one row, lint it."""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from corecraft.domain import default_domain
from corecraft.world import db, models
from corecraft.world import lint as world_lint
from corecraft.world.recipe import RecipeError
from corecraft.world.store import World

app = typer.Typer(help="Build and look at the seeded CoreCraft world.", no_args_is_help=True)
console = Console()

WorldOpt = Annotated[str, typer.Option("--world", "-w", help="Recipe name (default, tiny) or path to a recipe YAML.")]
SeedOpt = Annotated[int | None, typer.Option("--seed", "-s", help="Seed; defaults to the recipe's own.")]


def open_world(world: str, seed: int | None) -> World:
    """Open a world for a command, turning recipe problems into a clean exit."""
    try:
        return default_domain().store.open(world, seed)
    except RecipeError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None


@app.command()
def build(world: WorldOpt = "default", seed: SeedOpt = None,
          force: Annotated[bool, typer.Option(help="Rebuild even if cached.")] = False) -> None:
    """Build (or rebuild) the world template and cache it."""
    store = default_domain().store
    try:
        recipe = store.recipe(world)
    except RecipeError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    started = time.perf_counter()
    data = store.template(world, seed, rebuild=force).data
    took = time.perf_counter() - started
    path = store.template_path(recipe, recipe.seed if seed is None else seed)
    console.print(f"world [bold]{recipe.name}[/bold]: {len(data) / 1e6:.2f} MB in {took:.2f}s -> {path}")


@app.command()
def stats(world: WorldOpt = "default", seed: SeedOpt = None) -> None:
    """Rows per entity type, the total, the world's now, seed and hash."""
    w = open_world(world, seed)
    table = Table(title=f"CoreCraft world '{w.recipe}'")
    table.add_column("entity type")
    table.add_column("rows", justify="right")
    counts = w.counts()
    for name, count in counts.items():
        table.add_row(name, str(count))
    table.add_section()
    table.add_row("[bold]total[/bold]", f"[bold]{sum(counts.values())}[/bold]")
    console.print(table)
    console.print(f"now: {w.now.isoformat()}   seed: {w.seed}   hash: {w.hash()}")


@app.command()
def inspect(entity: Annotated[str, typer.Argument(help="Entity type, e.g. Order or order.")],
            row_id: Annotated[str, typer.Argument(metavar="ID", help="Primary key, e.g. ord-250904-001.")],
            world: WorldOpt = "default", seed: SeedOpt = None) -> None:
    """Print one row as JSON."""
    by_lower = {name.lower(): model for name, model in models.TABLES_BY_NAME.items()}
    model = by_lower.get(entity.lower())
    if model is None:
        console.print(f"[red]error:[/red] unknown entity type {entity!r}; one of: {', '.join(models.TABLES_BY_NAME)}")
        raise typer.Exit(2)
    w = open_world(world, seed)
    row = db.fetch(w.conn, model, row_id, w.tz)
    if row is None:
        console.print(f"[red]error:[/red] no {model.__name__} with id {row_id!r}")
        raise typer.Exit(1)
    console.print_json(json.dumps(row))


@app.command()
def lint(world: Annotated[str, typer.Option("--world", "--recipe", "-w", help="Recipe name or path.")] = "default",
         seed: SeedOpt = None,
         show: Annotated[int, typer.Option(help="Findings to print per class.")] = 5) -> None:
    """Semantic checks (causal references, symptoms per product, routes, prices ...); exit 1 on findings."""
    findings = world_lint.lint(open_world(world, seed), default_domain().seeds)
    for check, count in world_lint.counts(findings).items():
        console.print(f"{check}: {count}", style="red" if count else "green")
        for finding in [f for f in findings if f.check == check][:show]:
            console.print(f"  {finding.entity_id} {finding.message}", highlight=False, markup=False, soft_wrap=True)
    console.print(f"{len(findings)} findings")
    if findings:
        raise typer.Exit(1)
