"""``corecraft eval``: agents over a split, with pass@1, pass^k and mean reward tables."""

from __future__ import annotations

import warnings
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from corecraft.agents.baselines import RandomAgent, ReferenceAgent
from corecraft.agents.openai_agent import OpenAIAgent
from corecraft.domain import default_domain
from corecraft.env.core import DEFAULT_MAX_STEPS
from corecraft.evaluate import AgentFactory, evaluate
from corecraft.grading.judge import JudgeConfig
from corecraft.report import write_report
from corecraft.users import UserConfig

console = Console()


def eval_command(
    split: Annotated[str, typer.Option(help="train, dev or test.")] = "dev",
    agent: Annotated[list[str], typer.Option(help="reference, random or openai; repeat to compare.")] = ["reference"],  # noqa: B006
    model: Annotated[str | None, typer.Option(help="Model for --agent openai.")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint.")] = None,
    api_key_env: Annotated[str, typer.Option(help="Environment variable holding the API key.")] = "OPENAI_API_KEY",
    judge_model: Annotated[str | None, typer.Option(help="Judge model; none: judge criteria ungraded.")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="Judge endpoint.")] = None,
    judge_api_key_env: Annotated[str | None, typer.Option(help="Key variable for the judge; default: --api-key-env.")] = None,
    user_model: Annotated[str | None, typer.Option(help="Model that plays the customer in conversation tasks; "
                                                        "none: their scripted customer (no key needed).")] = None,
    user_base_url: Annotated[str | None, typer.Option(help="Customer model endpoint.")] = None,
    user_api_key_env: Annotated[str | None, typer.Option(help="Customer model key variable; default: --api-key-env.")] = None,
    user_temperature: Annotated[float, typer.Option(min=0, max=2, help="Customer model temperature; each trial is "
                                                                       "another seed, so pass^k shows its noise.")] = 0.7,
    trials: Annotated[int, typer.Option(min=1, max=32, help="Trials per task (for pass^k).")] = 1,
    tasks: Annotated[list[str] | None, typer.Option(help="Only these task ids.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, max=64)] = 4,
    max_steps: Annotated[int, typer.Option(min=1)] = DEFAULT_MAX_STEPS,
    out: Annotated[Path | None, typer.Option(help="Folder: <agent>/results.jsonl, <agent>/summary.json, report.html.")] = None,
) -> None:
    """Run agents over a split and print pass@1, pass^k and mean reward, overall and by group."""
    pool = default_domain().tasks.split(split)
    if tasks:
        pool = [t for t in pool if t.id in set(tasks)]
    if not pool:
        console.print(f"[red]error:[/red] no tasks selected from split {split!r}")
        raise typer.Exit(2)
    judge = JudgeConfig(model=judge_model, base_url=judge_base_url,
                        api_key_env=judge_api_key_env or api_key_env) if judge_model else None
    if judge is None:
        console.print("[yellow]no judge configured: llm_judge criteria are ungraded and left out of rewards[/yellow]")
    user = UserConfig(model=user_model, base_url=user_base_url, api_key_env=user_api_key_env or api_key_env,
                      temperature=user_temperature) if user_model else None
    factories: dict[str, AgentFactory] = {"reference": ReferenceAgent, "random": RandomAgent}
    if model:
        factories["openai"] = partial(OpenAIAgent, model=model, base_url=base_url, api_key_env=api_key_env)
    unknown = [name for name in agent if name not in factories]
    if unknown:
        needs_model = " (--agent openai needs --model)" if "openai" in unknown else ""
        console.print(f"[red]error:[/red] cannot run agent(s) {', '.join(unknown)}: use reference, random or "
                      f"openai{needs_model}")
        raise typer.Exit(2)
    summaries: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(agent):
        factory = factories[name]
        with Progress(console=console, transient=True) as progress, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bar = progress.add_task(f"{name} on {split}", total=len(pool) * trials)
            _, summary = evaluate(pool, factory, trials=trials, concurrency=concurrency, judge=judge,
                                  max_steps=max_steps, out=out / name if out else None,
                                  progress=partial(progress.advance, bar),
                                  agent_name=name, agent_model=model if name == "openai" else None, user=user)
        summaries[name] = summary
        if out is not None:
            console.print(f"{name}: results in {out / name}")
    if out is not None:
        report = write_report(out, list(summaries), f"corecraft eval — {', '.join(summaries)} on {split}")
        console.print(f"report comparing {', '.join(summaries)}: {report}")
    _print(summaries, split, trials)


def _print(summaries: dict[str, dict[str, Any]], split: str, trials: int) -> None:
    metrics = ["pass@1", *[f"pass^{k}" for k in range(2, trials + 1)], "mean_reward"]
    digest = next(iter(summaries.values()))["task_set"]["digest"]
    table = Table(title=f"corecraft eval — split {split} (task set {digest}), {trials} trial(s) per task")
    table.add_column("agent")
    table.add_column("group")
    table.add_column("tasks", justify="right")
    for m in metrics:
        table.add_column(m, justify="right")
    for name, summary in summaries.items():
        rows = [("all", summary["overall"])]
        rows += [(f"category: {k}", v) for k, v in summary["by_category"].items()]
        rows += [(f"difficulty: {k}", v) for k, v in summary["by_difficulty"].items()]
        for group, block in rows:
            table.add_row(name, group, str(block["tasks"]), *[f"{block.get(m, 0):.3f}" for m in metrics])
        table.add_section()
    console.print(table)
    for name, summary in summaries.items():
        user = summary["user"]
        if user["episodes"]:
            who = "scripted customer" if user["model"] is None else \
                f"customer model {user['model']} (temperature {user['temperature']:g}, seed = trial)"
            errors = f", [red]{user['user_errors']} user error(s)[/red]" if user["user_errors"] else ""
            console.print(f"{name}: {user['episodes']} conversation episode(s) with the {who}{errors}")
