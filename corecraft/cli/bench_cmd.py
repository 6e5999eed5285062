"""``corecraft bench``: performance figures beside their floors and targets."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(help="Print performance figures (medians, ratios to floors and targets).", no_args_is_help=True)

WorldOpt = Annotated[str, typer.Option("--world", "-w", help="Recipe to measure on.")]


@app.command()
def world(recipe: WorldOpt = "default") -> None:
    """Cold build, template load, per-episode copy and memory per live copy."""
    from corecraft.bench.world import main

    main(recipe)


@app.command()
def env(split: Annotated[str, typer.Option(help="Split whose tasks to replay.")] = "train") -> None:
    """Reset and step medians through gymnasium.make, and full-episode throughput."""
    from corecraft.bench.env import main

    main(split)
