"""``corecraft eval``: run agents over a split through the Gymnasium env and score them.

Metrics: pass@1 (mean success probability per task, averaged), pass^k for 2 <= k <= the number
of trials (tau-bench's unbiased estimator: the chance that k trials drawn from n all pass; pass^1
would equal pass@1), mean reward, each overall and by category and difficulty. Trial ``t`` resets
the env with seed ``t``, which also seeds an LLM customer (``user``) in conversation tasks, so
pass^k over trials measures how robust the agent is to the customer's noise, as tau2 reports it. Writes
``results.jsonl`` (one line per episode: task, trial, reward, passed, criteria, transcript) and
``summary.json``, which also records what the run was: task set, agent, model and judge.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from math import comb
from pathlib import Path
from typing import Any, Protocol

from corecraft.domain import default_domain
from corecraft.env.core import DEFAULT_MAX_STEPS, CoreCraftEnv
from corecraft.grading.judge import JudgeConfig
from corecraft.tasks.compile import CompiledTask
from corecraft.tasks.model import Task
from corecraft.users import UserConfig


class Agent(Protocol):
    """What ``evaluate`` runs: given the conversation so far and the tool schemas, the next action
    (anything :meth:`CoreCraftEnv.step` accepts)."""

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any: ...


AgentFactory = Callable[[Task, int], Agent]
"""Makes the agent for one (task, trial) episode."""


def run_episode(compiled: CompiledTask, agent: Agent, judge: JudgeConfig | None, max_steps: int,
                trial: int, user: UserConfig | None = None) -> dict[str, Any]:
    """One episode of ``agent`` on exactly ``compiled`` (never re-read from disk); the results.jsonl record.
    Conversation tasks add the customer simulator (``user``), its turns and any ``user_error``."""
    task = compiled.task
    env = CoreCraftEnv(task=task, max_steps=max_steps, judge=judge, split=task.split or "train", user=user)
    try:
        _, info = env.reset(seed=trial)
        tools, simulator = info["tools"], info.get("user")
        done = False
        while not done:
            _, reward, terminated, truncated, info = env.step(agent.act(list(env.messages), tools))
            done = terminated or truncated
        record = {"task_id": task.id, "category": task.category, "difficulty": task.difficulty, "trial": trial,
                  "reward": reward, "passed": info["passed"], "truncated": truncated, "steps": info["steps"],
                  "criteria": info["criteria"], "minefields": info["minefields"], "transcript": env.messages}
        if simulator is not None:
            record.update(user=simulator, user_turns=info["user_turns"], user_error=info["user_error"])
        return record
    finally:
        env.close()


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """Probability that k of the n trials, drawn without replacement, all passed."""
    return comb(successes, k) / comb(trials, k) if trials >= k else 0.0


def summarise(records: Iterable[dict[str, Any]], trials: int) -> dict[str, Any]:
    """Metrics overall and per category and difficulty."""
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_task[r["task_id"]].append(r)

    def block(task_ids: list[str]) -> dict[str, Any]:
        runs = [by_task[t] for t in task_ids]
        out: dict[str, Any] = {"tasks": len(runs)}
        if not runs:
            return out
        out["pass@1"] = sum(sum(r["passed"] for r in rs) / len(rs) for rs in runs) / len(runs)
        for k in range(2, trials + 1):
            out[f"pass^{k}"] = sum(pass_hat_k(sum(r["passed"] for r in rs), len(rs), k) for rs in runs) / len(runs)
        out["mean_reward"] = sum(r["reward"] for rs in runs for r in rs) / sum(len(rs) for rs in runs)
        return out

    ids = sorted(by_task)
    summary: dict[str, Any] = {"overall": block(ids), "by_category": {}, "by_difficulty": {}}
    for key, field in (("by_category", "category"), ("by_difficulty", "difficulty")):
        groups: dict[str, list[str]] = defaultdict(list)
        for t in ids:
            groups[by_task[t][0][field]].append(t)
        summary[key] = {g: block(ts) for g, ts in sorted(groups.items())}
    return summary


def run_metadata(records: list[dict[str, Any]], trials: int, judge: JudgeConfig | None,
                 agent_name: str | None, agent_model: str | None, user: UserConfig | None = None) -> dict[str, Any]:
    """Who was measured and how: agent and model names, trials, the judge model (``None``: no judge)
    and how many criteria went ungraded or hit a judge error across all episodes; the customer of
    conversation tasks (scripted, or the LLM's model and temperature; its seed is the trial), how many
    conversation episodes ran and how many hit a user error."""
    statuses = [c["status"] for r in records for c in r["criteria"]]
    talks = [r for r in records if "user" in r]
    return {"agent": {"name": agent_name, "model": agent_model}, "trials": trials,
            "judge": {"model": judge.model if judge else None, "ungraded": statuses.count("ungraded"),
                      "judge_errors": statuses.count("judge_error")},
            "user": {"simulator": "llm" if user else "scripted", "model": user.model if user else None,
                     "temperature": user.temperature if user else None,
                     "seed": (user.seed if user.seed is not None else "trial") if user else None,
                     "episodes": len(talks), "user_errors": sum(r["user_error"] is not None for r in talks)}}


def evaluate(tasks: Sequence[CompiledTask], make_agent: AgentFactory, trials: int = 1, concurrency: int = 1,
             judge: JudgeConfig | None = None, max_steps: int = DEFAULT_MAX_STEPS, out: Path | None = None,
             progress: Callable[[], None] | None = None, agent_name: str | None = None,
             agent_model: str | None = None, user: UserConfig | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run every (task, trial) episode, optionally in parallel threads; write results if ``out``.
    ``agent_name`` and ``agent_model`` are recorded in the summary as given; ``user`` plays the customer
    of conversation tasks (default: their scripted customer)."""
    jobs = [(task, trial) for task in tasks for trial in range(trials)]

    def one(job: tuple[CompiledTask, int]) -> dict[str, Any]:
        task, trial = job
        record = run_episode(task, make_agent(task.task, trial), judge, max_steps, trial, user)
        if progress:
            progress()
        return record

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        records = list(pool.map(one, jobs))
    summary = summarise(records, trials)
    summary["task_set"] = default_domain().tasks.digest(tasks)
    summary.update(run_metadata(records, trials, judge, agent_name, agent_model, user))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        with (out / "results.jsonl").open("w", encoding="utf-8") as handle:
            for r in records:
                handle.write(json.dumps(r, sort_keys=True) + "\n")
        (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return records, summary
