"""``CoreCraft-v0``: the Gymnasium environment."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import gymnasium as gym

from corecraft.domain import Domain, default_domain
from corecraft.env.actions import ActionError, read_action
from corecraft.env.spaces import AgentAction, ChatMessages
from corecraft.episode import Episode
from corecraft.grading.judge import Judge, JudgeConfig
from corecraft.prompting import opening_messages, tool_result_text
from corecraft.tasks.compile import CompiledTask
from corecraft.tasks.library import TaskLibrary
from corecraft.tasks.model import Task
from corecraft.users import UserConfig, UserSimulator, make_user

DEFAULT_MAX_STEPS = 120
"""The step budget of an episode unless one is given (env, ``corecraft eval`` and ``corecraft play``): the longest
reference solutions run 80 tool calls, and an agent calling one tool per step needs room to read."""


class CoreCraftEnv(gym.Env[list[dict[str, Any]], Any]):
    """A customer-support episode at CoreCraft Computers for a tool-using LLM agent.

    ## Description
    The agent is an employee of CoreCraft Computers (a PC-components retailer) working one task: a
    customer's ticket or an internal request. It acts only through 23 typed tools (16 read, 7
    policy-enforcing write) over a seeded SQLite world of ~3,850 entities, then answers the requester.
    The episode is graded by the task's rubric (deterministic checks, optional LLM judge) and minefields.

    ## Action Space
    :class:`~corecraft.env.spaces.AgentAction`: an OpenAI assistant message (dict or client object)
    with zero or more tool calls (parallel calls run in order); a single tool call in Chat
    Completions or Responses shape, or a list of them; a JSON string of any of these; or plain text.
    Text, or an assistant message without tool calls, is the final reply, or in a conversation task
    (one with a ``user`` block) a message to the customer.

    ## Observation Space
    :class:`~corecraft.env.spaces.ChatMessages`: a list of chat messages. ``step`` returns the
    messages the env adds: one ``tool`` message per tool call (``tool_call_id`` matching), or a
    ``user`` message explaining an unreadable action. In a conversation task, a message to the customer
    returns the customer's answer as one ``user`` message. The whole conversation is ``env.unwrapped.messages``.

    ## Starting State
    ``reset`` picks a task (``options={"task_id": ...}``, else the constructor's ``task``/``task_id``,
    else a draw from ``split`` with the env's seeded generator), gives the episode a fresh copy of the
    task's world (template + the task's setup) and returns the opening messages: system (the acting
    employee, the world's now, the core operating rules) and user (the request). Detailed policy lives
    in the knowledge base and must be looked up. The episode's clock starts at the world's now: each write
    the agent makes is stamped a minute after the one before (:attr:`~corecraft.world.store.World.clock`).

    ## Rewards
    0 on every step but the last, which carries the rubric reward in [0, 1]: the weighted fraction of
    graded criteria met, 0 if a minefield tripped or a ``gate`` criterion was not met.

    ## Conversation tasks
    A task with a ``user`` block has a simulated customer: its opening message is the task's prompt, and
    each assistant message without tool calls goes to the customer, whose answer comes back as a ``user``
    observation. The customer is the task's deterministic scripted user (no model, no key), or with the
    ``user`` argument an LLM playing the same profile. It sees only the request and what the agent said
    to it, never the rubric, the reference or tool output. Grading sees the whole conversation: reply
    criteria read the last message, any agent message or the whole dialogue (their ``scope``).

    ## Episode End
    A final reply ends the episode (``terminated``). In a conversation task the customer ends it: it
    emits its stop marker (``terminated``), or the episode is ``truncated`` once it has answered
    ``max_user_turns`` times or at ``max_steps``; both are graded with the agent's last message to the
    customer as the reply. A failing LLM user ends the episode (``truncated``) with ``user_error`` set,
    reward 0 and ``passed`` false, never as a success. A string action is always the final reply,
    even when it looks like JSON; tool calls are sent as dicts or message objects. After
    ``max_steps`` steps without a reply the episode is ``truncated`` and graded with an empty
    reply. Both are graded inside the env, so no ``TimeLimit`` is needed; when ``gymnasium.make(...,
    max_episode_steps=N)`` adds one anyway, the registered :class:`GradeCutOffEpisodes` wrapper (outside
    it) grades the episode it cuts off, on that same step. A malformed action costs a step but does
    not end the episode.

    ## Information
    ``reset``: ``task_id``, ``split``, ``category``, ``difficulty`` and ``tools`` (OpenAI function
    schemas). The last ``step``: ``passed``, ``reward``, ``criteria`` (id, kind, weight, status,
    reason), ``minefields``, ``ungraded``, ``judge_errors`` and ``steps``. Conversation tasks add ``user``
    to the ``reset`` info (the simulator: ``scripted``, or the model with its temperature and seed) and
    ``user_turns``, ``ended_by_user`` and ``user_error`` to the last step's. ``info`` holds only
    deterministic values (no timings, no random ids).

    ## Arguments
    - ``split``: ``train`` (default), ``dev`` or ``test`` (held out: its tasks run only in a test env).
    - ``task_id``: pin one task (kept across autoreset). ``task``: a task object or its dict, for
      tasks that exist only in memory (plain data, so the env stays copyable).
    - ``world``: run the task in another world recipe. ``max_steps``: step budget (default
      :data:`DEFAULT_MAX_STEPS`, 120).
    - ``judge``: a :class:`JudgeConfig` or its dict; with none, ``llm_judge`` criteria are ``ungraded``.
    - ``user``: a :class:`~corecraft.users.UserConfig` or its dict: an LLM plays the customer of
      conversation tasks (seeded with its ``seed``, else the reset seed); with none, the scripted user.
    - ``render_mode``: ``"ansi"`` prints the transcript. ``tasks_root``: another task folder.

    ## Forking
    ``fork()`` returns an independent env that continues from the current step (its world, transcript
    and step count copied); ``snapshot()``/``restore(state)`` rewind this env to a saved point. An
    env pickles and deep-copies mid-episode (the world travels as its template, setup and changed
    rows), for tree search, branching rollouts and ``AsyncVectorEnv``.

    ## Version History
    - v0: the 23 tools of ``tools/catalog.json``; the default world pinned by its content hash
      (tests/test_world.py ``DEFAULT_WORLD_HASH``); the task set identified by the digest that
      ``corecraft eval`` records in ``summary.json`` (task contents + world hashes + version).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012 (Gymnasium's own attribute)

    def __init__(self, split: str = "train", task_id: str | None = None, world: str | None = None,
                 max_steps: int = DEFAULT_MAX_STEPS, judge: JudgeConfig | dict[str, Any] | None = None,
                 render_mode: str | None = None, tasks_root: str | None = None,
                 task: Task | dict[str, Any] | None = None,
                 user: UserConfig | dict[str, Any] | None = None) -> None:
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.split, self.task_id, self.world_override = split, task_id, world
        self.max_steps, self.render_mode = max_steps, render_mode
        self.root = Path(tasks_root) if tasks_root else None
        self.task = Task.model_validate(task) if isinstance(task, dict) else task
        config = JudgeConfig.model_validate(judge) if isinstance(judge, dict) else judge
        self.judge = Judge(config) if config is not None else None
        self.user_config = UserConfig.model_validate(user) if isinstance(user, dict) else user
        self.user: UserSimulator | None = None
        self._tasks: list[CompiledTask] | None = None
        self._found: dict[str, CompiledTask] = {}
        self._given: CompiledTask | None = None  # ``task`` compiled on first use
        self.observation_space = ChatMessages()
        self.action_space = AgentAction()
        self.episode: Episode | None = None
        self.messages: list[dict[str, Any]] = []
        self.steps = 0
        self.done = False
        self.last_result: dict[str, Any] | None = None

    @property
    def domain(self) -> Domain:
        return default_domain()

    @property
    def library(self) -> TaskLibrary:
        return self.domain.library(self.root)

    def _task_pool(self) -> list[CompiledTask]:
        if self._tasks is None:
            self._tasks = self.library.split(self.split)
            if not self._tasks:
                raise ValueError(f"split {self.split!r} has no tasks")
        return self._tasks

    def _pick(self, options: dict[str, Any] | None) -> CompiledTask:
        wanted = (options or {}).get("task_id") or (None if self.task else self.task_id)
        if wanted:
            if wanted not in self._found:
                self._found[wanted] = self.library.get(wanted)
            compiled = self._found[wanted]
        elif self.task is not None:
            if self._given is None:
                self._given = self.domain.compile(self.task)
            compiled = self._given
        else:
            pool_list = self._task_pool()
            compiled = pool_list[int(self.np_random.integers(len(pool_list)))]
        if compiled.split == "test" and self.split != "test":
            raise ValueError(f"task {compiled.id!r} is in the held-out test split; make the env with "
                             "split='test' to evaluate on it")
        if self.world_override:
            task = compiled.task
            moved = task.model_copy(update={"world": task.world.model_copy(update={"recipe": self.world_override})})
            compiled = CompiledTask(task=moved, criteria=compiled.criteria, path=compiled.path)
        return compiled

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        super().reset(seed=seed)
        if self.episode is not None:
            self.episode.close()
        compiled = self._pick(options)
        task = compiled.task
        self.episode = Episode(compiled, self.domain)
        self.messages = opening_messages(self.episode)
        self.steps, self.done, self.last_result = 0, False, None
        info: dict[str, Any] = {"task_id": task.id, "split": task.split, "category": task.category,
                                "difficulty": task.difficulty, "tools": self.episode.toolkit.schemas(self.episode.tool_names)}
        self.user = None
        if task.user is not None:
            user_seed = seed if seed is not None else int(self.np_random.integers(2**31))
            self.user = make_user(task.user, self.user_config, user_seed)
            info["user"] = self.user.describe()
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
            return self._after([], final=turn.text) if self.user is None else self._talk(turn.text, self.user)
        added = []
        for call in turn.calls:
            result = self.episode.call(call.name, call.arguments)
            added.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                          "content": tool_result_text(result)})
        self.messages += added
        return self._after(added, final=None)

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the caches of compiled tasks (they come back from the library on demand)."""
        state = dict(self.__dict__)
        state["_tasks"], state["_found"] = None, {}
        return state

    def fork(self) -> CoreCraftEnv:
        """An independent env that continues this episode from the current step."""
        return copy.deepcopy(self)

    def snapshot(self) -> bytes:
        """The episode as it is now (world, transcript, messages, step count, random state), as bytes."""
        return pickle.dumps(self.__getstate__())

    def restore(self, state: bytes) -> None:
        """Rewind to a :meth:`snapshot` of this env (or of any env of the same task set)."""
        if self.episode is not None:
            self.episode.close()
        self.__dict__.update(pickle.loads(state))

    def _after(self, added: list[dict[str, Any]], final: str | None
               ) -> tuple[list[dict[str, Any]], float, bool, bool, dict[str, Any]]:
        terminated = final is not None
        truncated = not terminated and self.steps >= self.max_steps
        if not (terminated or truncated):
            return added, 0.0, False, False, {}
        reward, info = self.grade(final)
        return added, reward, terminated, truncated, info

    def _talk(self, text: str, user: UserSimulator) -> tuple[list[dict[str, Any]], float, bool, bool, dict[str, Any]]:
        """A message to the customer of a conversation task; its answer is the observation."""
        assert self.episode is not None and self.episode.task.task.user is not None
        answer = self.episode.say(text, user)
        if answer.error is not None:
            reward, info = self.grade(text, user_error=answer.error)
            return [], reward, False, True, info
        added = [{"role": "user", "content": answer.text}]
        self.messages += added
        if answer.stop:
            reward, info = self.grade(text, ended_by_user=True)
            return added, reward, True, False, info
        if self.episode.user_turns >= self.episode.task.task.user.max_user_turns or self.steps >= self.max_steps:
            reward, info = self.grade(text)
            return added, reward, False, True, info
        return added, 0.0, False, False, {}

    def grade(self, reply: str | None = None, *, user_error: str | None = None,
              ended_by_user: bool = False) -> tuple[float, dict[str, Any]]:
        """End the episode now and grade it with ``reply`` (None: cut off, so the agent's last message to the
        customer in a conversation task, else no reply).

        ``step`` calls this when the episode ends; a wrapper that cuts an episode short from outside
        (Gymnasium's ``TimeLimit``) calls it too, so every ended episode is graded.
        """
        if self.episode is None or self.done:
            raise RuntimeError("no episode in progress to grade")
        self.done = True
        said = self.episode.transcript.agent_messages if self.user is not None else []
        final = reply if reply is not None else (said[-1] if said else "")
        result = self.episode.finish(final, messages=self.messages, judge=self.judge, user_error=user_error)
        self.last_result = result.model_dump()
        info = {"task_id": result.task_id, "passed": result.passed, "reward": result.reward,
                "criteria": self.last_result["criteria"], "minefields": self.last_result["minefields"],
                "ungraded": result.ungraded, "judge_errors": result.judge_errors, "steps": self.steps}
        if self.user is not None:
            info.update(user_turns=self.episode.user_turns, ended_by_user=ended_by_user, user_error=user_error)
        return float(result.reward), info

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


class GradeCutOffEpisodes(gym.Wrapper[list[dict[str, Any]], Any, list[dict[str, Any]], Any],
                          gym.utils.RecordConstructorArgs):
    """Grades an episode that a wrapper below it truncated (``TimeLimit`` from ``max_episode_steps``),
    so the last step carries the reward and the breakdown like any other ended episode.
    ``gymnasium.make("CoreCraft-v0")`` applies it as the outermost wrapper."""

    def __init__(self, env: gym.Env[list[dict[str, Any]], Any]) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)

    def step(self, action: Any) -> tuple[list[dict[str, Any]], float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        inner = self.env.unwrapped
        if truncated and not terminated and isinstance(inner, CoreCraftEnv) and not inner.done:
            reward, info = inner.grade()
        return obs, float(reward), terminated, truncated, info
