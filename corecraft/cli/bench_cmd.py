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


@app.command()
def tools(recipe: WorldOpt = "default",
          repeat: Annotated[int, typer.Option("--repeat", "-n", help="Calls per tool.")] = 1000) -> None:
    """Median and p99 latency of every tool with realistic arguments, beside a raw sqlite3 floor."""
    from corecraft.bench.tools import main

    main(recipe, repeat)


@app.command()
def grade(task: Annotated[str, typer.Option("--task", "-t", help="Task whose reference solution is graded.")]
          = "doa_cpu_refund_kayla",
          repeat: Annotated[int, typer.Option("--repeat", "-n", help="Timed gradings.")] = 200) -> None:
    """Median time to grade one episode's deterministic criteria (db_diff included), beside the 10 ms target."""
    from corecraft.bench.grade import main

    main(task, repeat)


@app.command()
def memory() -> None:
    """Resident memory of one process that touches every task, with the template store bounded or not."""
    from corecraft.bench.memory import main

    main()


@app.command()
def reply(repeat: Annotated[int, typer.Option("--repeat", "-n", help="Timed gradings per field.")] = 50) -> None:
    """Time to grade a 2,000-word final reply with each meaning matcher (dates, money, labels…), beside `contains`."""
    from corecraft.bench.reply import main

    main(repeat)


@app.command()
def scale(quick: Annotated[bool, typer.Option("--quick", "-q", help="Only x1 and x10 (skip the x100 world).")]
          = False,
          repeat: Annotated[int, typer.Option("--repeat", "-n", help="Timed calls per tool and resets per scale.")]
          = 200) -> None:
    """Episode costs on the default world scaled x1, x10, x100: build, reset, memory, diff, tool latency."""
    from corecraft.bench.scale import main

    main(quick, repeat)


@app.command()
def ray(split: Annotated[str, typer.Option(help="Split whose tasks to replay.")] = "train",
        n: Annotated[int, typer.Option("--n", "-n", help="Rollouts per group.")] = 4,
        workers: Annotated[int, typer.Option(help="Ray actors (one CPU each).")] = 2,
        rounds: Annotated[int, typer.Option(help="Timed rounds per side (medians reported).")] = 5) -> None:
    """Graded episodes/s of reference-replay GRPO groups over Ray actors vs one process (needs corecraft[ray]).

    With RAY_ADDRESS set the actors run on that existing Ray cluster.
    """
    from corecraft.bench.ray_rollouts import main

    main(split, n, workers, rounds)
