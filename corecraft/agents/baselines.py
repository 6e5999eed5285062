"""The agents that need no model: the reference replay (as an agent and as a stateless policy) and a
seeded random baseline."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from typing import Any

from corecraft.tasks.model import Task

_ID = re.compile(r"\b(?:ord|cust|tick)-[0-9a-z-]+\b")


class ReferenceAgent:
    """Replays the task's reference solution, one call per step, then its reply (in a conversation task,
    each turn's calls and message in order; the scripted customer answers in between)."""

    name = "reference"

    def __init__(self, task: Task, seed: int = 0) -> None:
        self.actions = task.reference_solution.actions()
        self.i = 0

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        action = self.actions[min(self.i, len(self.actions) - 1)]
        self.i += 1
        return action


class ReferencePolicy:
    """A stateless ``policy(messages, tools)`` replaying the reference solutions of ``tasks``.

    It finds the task by its request (the first user message) and the step by counting assistant
    turns, so one instance serves every env of every group and pickles to other processes (Ray
    actors, subprocess vector envs).
    """

    def __init__(self, tasks: Iterable[Task]) -> None:
        self.actions = {t.prompt.strip(): t.reference_solution.actions() for t in tasks}

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        request = next((m.get("content") for m in messages if m.get("role") == "user"), None)
        actions = self.actions.get(request) if isinstance(request, str) else None
        if actions is None:
            raise ValueError("ReferencePolicy: the conversation's request is not one of its tasks")
        taken = sum(1 for m in messages if m.get("role") == "assistant")
        return actions[min(taken, len(actions) - 1)]


class RandomAgent:
    """A seeded baseline: a few read-only calls with plausible arguments, then a generic answer.

    Arguments come from the request's words and from ids seen in earlier tool results.
    """

    name = "random"
    READS = ("search_customers", "search_orders", "search_tickets", "search_knowledge_base",
             "search_products", "get_order_details", "search_slack_messages")

    def __init__(self, task: Task, seed: int = 0) -> None:
        self.rng = random.Random(f"{task.id}:{seed}")
        self.budget = self.rng.randint(1, 5)

    def _args(self, tool: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        words = [w for w in re.findall(r"[A-Za-z]{4,}", messages[1]["content"])] or ["order"]
        seen = _ID.findall(" ".join(str(m.get("content") or "") for m in messages[2:]))
        orders = [s for s in seen if s.startswith("ord-")]
        if tool == "get_order_details":
            return {"order_id": self.rng.choice(orders) if orders else "ord-000000-000"}
        if tool == "search_orders":
            customers = [s for s in seen if s.startswith("cust-")]
            return {"customer_id": self.rng.choice(customers)} if customers else {}
        return {"query": self.rng.choice(words)}

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        available = [t["function"]["name"] for t in tools]
        options = [t for t in self.READS if t in available]
        if self.budget > 0 and options:
            self.budget -= 1
            tool = self.rng.choice(options)
            return {"type": "function", "function": {"name": tool,
                                                     "arguments": json.dumps(self._args(tool, messages))}}
        return "Thanks for reaching out. I've looked into this and everything appears to be in order."
