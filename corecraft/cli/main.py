"""Entry point of the ``corecraft`` console script."""

from __future__ import annotations

import typer

from corecraft.cli import bench_cmd, eval_cmd, play_cmd, serve_cmd, tasks_cmd, tools_cmd, world_cmd

app = typer.Typer(help="CoreCraft: a customer-support world for tool-using LLM agents.", no_args_is_help=True)
app.add_typer(world_cmd.app, name="world")
app.add_typer(tools_cmd.app, name="tools")
app.add_typer(tasks_cmd.app, name="tasks")
app.add_typer(bench_cmd.app, name="bench")
app.add_typer(serve_cmd.app, name="serve")
app.add_typer(play_cmd.app, name="play")
app.command(name="eval")(eval_cmd.eval_command)

if __name__ == "__main__":
    app()
