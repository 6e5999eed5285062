"""CoreCraft as a ``verifiers`` environment: ``vf.load_environment("corecraft", split="train")``.

``verifiers`` imports the module ``corecraft`` and calls its ``load_environment(**kwargs)``; the
package serves that name lazily from here, so ``import corecraft`` never imports ``verifiers``.

One dataset row per task: the task's opening messages (system + user, exactly as the Gymnasium env
opens) and ``info.task_id``. Each rollout gets a fresh CoreCraft :class:`~corecraft.episode.Episode`
in its state, never shown to the model; the model sees the task's tools (its ``allowed_tools``)
with the catalogue's JSON schemas and gets each tool's result as the env's JSON. The rollout ends
on an assistant message without tool calls (the final reply) or at ``max_turns``; the episode is
then graded by CoreCraft's grader, the full :class:`~corecraft.grading.result.GradeResult` is kept
in ``state["corecraft_grade"]`` and the episode is closed. The reward is the grade's reward.

Held-out test tasks are refused unless ``split="test"`` is passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from corecraft.domain import Domain, default_domain
from corecraft.env.actions import read_action
from corecraft.episode import Episode
from corecraft.grading.judge import Judge, JudgeConfig
from corecraft.integrations.task_selection import select_tasks
from corecraft.prompting import opening_messages, tool_result_text
from corecraft.tasks.compile import CompiledTask

try:
    import verifiers as vf
    from datasets import Dataset
    from verifiers import ToolEnv  # the classic API: verifiers 0.3.x has it, 0.4 removed it
except ImportError as exc:
    raise ImportError("corecraft.load_environment needs the corecraft[verifiers] extra (verifiers>=0.3.1,<0.4, the "
                      "classic verifiers API): pip install 'corecraft[verifiers]'") from exc

EPISODE_KEY = "corecraft_episode"
GRADE_KEY = "corecraft_grade"


def grade_reward(state: vf.State) -> float:
    """The rollout's reward: CoreCraft's grade (weighted share of criteria met, 0 on a minefield)."""
    return float(state[GRADE_KEY]["reward"])


def passed(state: vf.State) -> float:
    """1.0 when every graded criterion was met and no minefield tripped (a metric, weight 0)."""
    return 1.0 if state[GRADE_KEY]["passed"] else 0.0


class CoreCraftVerifiersEnv(ToolEnv):  # type: ignore[misc]
    """A multi-turn tool environment over CoreCraft tasks, one fresh episode per rollout.

    Built on ``vf.ToolEnv`` (the stop on a reply without tool calls, tool-call metrics) rather
    than ``StatefulToolEnv``, whose hidden-argument mechanism derives schemas from Python
    signatures: CoreCraft's tools come with their own JSON schemas, differ per task
    (``allowed_tools``) and run against the episode held in the rollout state.
    """

    def __init__(self, tasks: Sequence[CompiledTask], *, domain: Domain, max_turns: int = 50,
                 judge: JudgeConfig | None = None, **kwargs: Any) -> None:
        if not tasks:
            raise ValueError("no CoreCraft tasks selected")
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.domain = domain
        self.judge = judge
        self.corecraft_tasks = {t.id: t for t in tasks}
        rows = cache(lambda: Dataset.from_list([self.row(t) for t in tasks]))
        rubric = vf.Rubric(funcs=[grade_reward, passed], weights=[1.0, 0.0])
        super().__init__(tools=None, max_turns=max_turns, dataset=rows, eval_dataset=rows, rubric=rubric, **kwargs)

    def row(self, task: CompiledTask) -> dict[str, Any]:
        """The dataset row of one task: its opening messages and its id."""
        with self.domain.episode(task) as episode:
            return {"prompt": opening_messages(episode), "info": {"task_id": task.id}}

    def tool_defs_for(self, episode: Episode) -> list[vf.Tool]:
        """The episode's tools (the task's ``allowed_tools``) in the catalogue's schemas."""
        return [vf.Tool(**schema["function"]) for schema in self.domain.toolkit.schemas(episode.tool_names)]

    async def setup_state(self, state: vf.State) -> vf.State:
        task_id = state["info"]["task_id"]
        task = self.corecraft_tasks.get(task_id)
        if task is None:
            raise ValueError(f"task {task_id!r} is not one of this environment's tasks")
        episode = self.domain.episode(task)
        state[EPISODE_KEY] = episode
        state["tool_defs"] = self.tool_defs_for(episode)
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        """Run the last assistant message's tool calls on the rollout's episode."""
        episode: Episode = state[EPISODE_KEY]
        calls = messages[-1].tool_calls or []
        return [vf.ToolMessage(tool_call_id=c.id, content=tool_result_text(episode.call(c.name, c.arguments)))
                for c in calls]

    @vf.cleanup  # type: ignore[untyped-decorator]
    async def grade_episode(self, state: vf.State) -> None:
        """Grade the finished rollout, keep the grade in the state, close the episode.

        Tool calls of a last assistant message cut off by ``max_turns`` still run before grading,
        as :func:`corecraft.grade` replays every call of a conversation: the state's grade equals
        ``corecraft.grade(task_id, prompt + completion)``.
        """
        episode: Episode | None = state.pop(EPISODE_KEY, None)
        if episode is None:  # setup failed before an episode existed
            return
        try:
            messages = [*state["prompt"], *(state.get("completion") or [])]
            chat: list[dict[str, Any]] = []
            reply = ""
            for step, message in enumerate(messages, 1):
                if message.role != "assistant":
                    chat.append(message.model_dump(exclude_none=True))
                    continue
                turn = read_action(message, step)
                chat.append(turn.message())
                reply = "" if turn.calls else turn.text
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant":
                for call in read_action(last, len(messages)).calls:
                    episode.call(call.name, call.arguments)
            judge = Judge(self.judge) if self.judge is not None else None
            state[GRADE_KEY] = episode.finish(reply, messages=chat, judge=judge).model_dump()
        finally:
            episode.close()


def load_environment(split: str | None = "train", task_ids: Sequence[str] | None = None, max_turns: int = 50,
                     judge: JudgeConfig | dict[str, Any] | None = None, **kwargs: Any) -> CoreCraftVerifiersEnv:
    """The CoreCraft ``verifiers`` environment.

    ``split``: ``"train"`` (default), ``"dev"``, ``"test"`` (held out: only when named), or None for
    train + dev. ``task_ids``: these tasks instead of a whole split. ``max_turns``: model turns per
    rollout. ``judge``: optional LLM-judge configuration (plain data, see
    :class:`~corecraft.grading.judge.JudgeConfig`); without one, judged criteria stay ungraded and
    out of the reward. Other keyword arguments go to ``vf.ToolEnv``.
    """
    domain = default_domain()
    config = JudgeConfig.model_validate(judge) if isinstance(judge, dict) else judge
    return CoreCraftVerifiersEnv(select_tasks(domain, split, task_ids), domain=domain, max_turns=max_turns, judge=config,
                        **kwargs)


__all__ = ["CoreCraftVerifiersEnv", "load_environment"]
