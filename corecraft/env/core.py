"""``CoreCraft-v0``: the Gymnasium environment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym

from corecraft.env.actions import ActionError, read_action
from corecraft.env.spaces import AgentAction, ChatMessages
from corecraft.episode import Episode
from corecraft.grading.judge import Judge, JudgeConfig
from corecraft.prompting import opening_messages
from corecraft.tasks.loader import find_task, load_split
from corecraft.tasks.model import Task
from corecraft.tools.schemas import tool_schemas


class CoreCraftEnv(gym.Env[list[dict[str, Any]], Any]):
    """A customer-support episode at CoreCraft Computers for a tool-using LLM agent.

    **Task selection.** ``reset(options={"task_id": ...})`` picks a task; otherwise the
    constructor's ``task_id``; otherwise a draw from ``split`` with the env's seeded generator.
    Each episode runs in a fresh copy of the task's world (template + the task's setup).

    **Observation space** (:class:`~corecraft.env.spaces.ChatMessages`): a list of chat
    messages. ``reset`` returns the opening messages (system: role, acting employee, now, core
    rules; user: the request). ``step`` returns the messages the env adds: one ``tool`` message
    per tool call (``tool_call_id`` matching), or a ``user`` message explaining an unreadable
    action. The whole conversation is ``env.unwrapped.messages``.

    **Action space** (:class:`~corecraft.env.spaces.AgentAction`): an OpenAI assistant message
    (dict or client object) with zero or more tool calls (parallel calls run in order); a single
    tool call in Chat Completions or Responses shape, or a list of them; a JSON string of any of
    these; or plain text. Text, or an assistant message without tool calls, is the final reply.

    **Episode end.** A final reply ends the episode (``terminated``). After ``max_steps`` steps
    without one, the episode is ``truncated`` (graded with an empty reply). Both are graded
    inside the env; no ``TimeLimit`` wrapper is needed. A malformed action costs a step but does
    not end the episode.

    **Reward.** 0 on every step but the last, which carries the rubric reward in [0, 1]:
    the weighted fraction of graded criteria met, 0 if a minefield tripped. The last ``info``
    holds ``passed``, ``criteria`` (id, kind, weight, status, reason), ``minefields``,
    ``ungraded`` and ``judge_errors``. ``info`` holds only deterministic values (no timings).

    **Judge.** ``judge`` is plain data (a :class:`JudgeConfig` or its dict), so the env can be
    copied and pickled; with none, ``llm_judge`` criteria are reported ``ungraded``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, split: str = "train", task_id: str | None = None, world: str | None = None,
                 max_steps: int = 50, judge: JudgeConfig | dict[str, Any] | None = None,
                 render_mode: str | None = None, tasks_root: str | None = None) -> None:
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.split, self.task_id, self.world_override = split, task_id, world
        self.max_steps, self.render_mode = max_steps, render_mode
        self.root = Path(tasks_root) if tasks_root else None
        config = JudgeConfig.model_validate(judge) if isinstance(judge, dict) else judge
        self.judge = Judge(config) if config is not None else None
        self._tasks: list[Task] | None = None
        self._found: dict[str, Task] = {}
        self.observation_space = ChatMessages()
        self.action_space = AgentAction()
        self.episode: Episode | None = None
        self.messages: list[dict[str, Any]] = []
        self.steps = 0
        self.done = False
        self.last_result: dict[str, Any] | None = None

    def _task_pool(self) -> list[Task]:
        if self._tasks is None:
            self._tasks = load_split(self.split, self.root)
            if not self._tasks:
                raise ValueError(f"split {self.split!r} has no tasks")
        return self._tasks

    def _pick(self, options: dict[str, Any] | None) -> Task:
        wanted = (options or {}).get("task_id") or self.task_id
        if wanted:
            if wanted not in self._found:
                found = find_task(wanted, self.root)
                if found.split == "test" and self.split != "test":
                    raise ValueError(f"task {wanted!r} is in the held-out test split; make the env with "
                                     "split='test' to evaluate on it")
                self._found[wanted] = found
            task = self._found[wanted]
        else:
            pool_list = self._task_pool()
            task = pool_list[int(self.np_random.integers(len(pool_list)))]
        if self.world_override:
            task = task.model_copy(update={"world": task.world.model_copy(update={"recipe": self.world_override})})
        return task

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        super().reset(seed=seed)
        if self.episode is not None:
            self.episode.close()
        task = self._pick(options)
        self.episode = Episode(task)
        self.messages = opening_messages(self.episode)
        self.steps, self.done, self.last_result = 0, False, None
        info = {"task_id": task.id, "split": task.split, "category": task.category, "difficulty": task.difficulty,
                "tools": tool_schemas(self.episode.tool_names)}
        return [dict(m) for m in self.messages], info

    def step(self, action: Any) -> tuple[list[dict[str, Any]], float, bool, bool, dict[str, Any]]:
        if self.episode is None or self.done:
            raise RuntimeError("call reset() before step(), and again after an episode ends")
        self.steps += 1
        try:
            turn = read_action(action, self.steps)
        except ActionError as exc:
            added = [{"role": "user", "content": f"[environment] Your last action could not be read: {exc}"}]
            self.messages += added
            return self._after(added, final=None)
        self.messages.append(turn.message())
        if not turn.calls:
            return self._after([], final=turn.text)
        added = []
        for call in turn.calls:
            result = self.episode.call(call.name, call.arguments)
            added.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                          "content": json.dumps(result, separators=(",", ":"))})
        self.messages += added
        return self._after(added, final=None)

    def _after(self, added: list[dict[str, Any]], final: str | None
               ) -> tuple[list[dict[str, Any]], float, bool, bool, dict[str, Any]]:
        terminated = final is not None
        truncated = not terminated and self.steps >= self.max_steps
        if not (terminated or truncated):
            return added, 0.0, False, False, {}
        assert self.episode is not None
        self.done = True
        result = self.episode.finish(final or "", messages=self.messages, judge=self.judge)
        self.last_result = result.model_dump()
        info = {"task_id": result.task_id, "passed": result.passed, "reward": result.reward,
                "criteria": self.last_result["criteria"], "minefields": self.last_result["minefields"],
                "ungraded": result.ungraded, "judge_errors": result.judge_errors, "steps": self.steps}
        return added, float(result.reward), terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        lines = []
        for m in self.messages:
            head = m["role"].upper() + (f" [{m.get('name')}]" if m["role"] == "tool" else "")
            body = m.get("content") or ""
            if m.get("tool_calls"):
                body += "".join(f"\n  -> {c['function']['name']}({c['function']['arguments']})" for c in m["tool_calls"])
            lines.append(f"--- {head}\n{body}")
        if self.last_result is not None:
            lines.append(f"=== reward {self.last_result['reward']:.3f}  passed {self.last_result['passed']}")
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()
            self.episode = None
