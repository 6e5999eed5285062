"""CoreCraft for verifiers 0.4+ (``verifiers.v1``): a taskset and an in-process harness, both found by the id ``corecraft``.

verifiers 0.4 builds an environment from a config: ``vf.load_environment(vf.resolve_env_config(
{"taskset": {"id": "corecraft", "split": "train"}, "agent": {"runtime": {"type": "subprocess"}}}))``.
It imports the module ``corecraft`` and takes the :class:`~verifiers.v1.Taskset` and
:class:`~verifiers.v1.Harness` subclasses its ``__all__`` exports; ``corecraft`` lists the two
classes below there only when verifiers 0.4+ is installed, and serves them lazily from here.

- :class:`CoreCraftTaskset` (``taskset.split``, ``taskset.task_ids``): one task per CoreCraft task,
  its data the task's opening messages (system prompt and user request, as the Gymnasium env
  opens) and ``id`` the task id. Held-out test tasks only with ``split="test"``.
- :class:`CoreCraftHarness` (the taskset's default harness): the agent loop, run in-process as
  verifiers allows (no program, no MCP server, nothing downloaded). Each rollout gets a fresh
  :class:`~corecraft.episode.Episode` that lives only in the loop, never shown to the model. Every
  model call goes through the rollout's interception endpoint with the task's tools (its
  ``allowed_tools``) in the catalogue's JSON schemas; tool calls run on the episode and come back
  as the env's JSON. The loop ends on a reply without tool calls, or when verifiers refuses the
  next turn (``agent.max_turns``, a stop). The episode is then graded by CoreCraft's grader and the
  whole :class:`~corecraft.grading.result.GradeResult` kept in ``trace.info["corecraft_grade"]``.
- :class:`CoreCraftTask`: the reward ``corecraft`` (the grade's reward) and the metric ``passed``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from corecraft.domain import default_domain
from corecraft.env.actions import read_action
from corecraft.grading.judge import Judge, JudgeConfig
from corecraft.integrations.task_selection import select_tasks
from corecraft.prompting import opening_messages, request_message, system_message, tool_result_text

try:
    import openai
    import verifiers.v1 as vf
except ImportError as exc:
    raise ImportError("CoreCraft's verifiers 0.4 taskset needs the corecraft[verifiers-v1] extra (verifiers>=0.4): "
                      "pip install 'corecraft[verifiers-v1]'") from exc

GRADE_KEY = "corecraft_grade"
STOPPED = "rollout stopped"  # verifiers' refusal of a turn past a limit or a stop


class CoreCraftTask(vf.Task):  # type: ignore[misc]
    """One CoreCraft task; scored from the grade the harness left in the trace."""

    @property
    def key(self) -> str:
        """The task id: a durable identity across runs and versions of the rows."""
        return str(self.data.id)

    @vf.reward  # type: ignore[untyped-decorator]
    async def corecraft(self, trace: vf.Trace) -> float:
        """CoreCraft's grade: the weighted share of rubric criteria met, 0 on a minefield."""
        return float(trace.info[GRADE_KEY]["reward"])

    @vf.metric  # type: ignore[untyped-decorator]
    async def passed(self, trace: vf.Trace) -> float:
        """1.0 when every graded criterion was met and no minefield tripped."""
        return 1.0 if trace.info[GRADE_KEY]["passed"] else 0.0


class CoreCraftTasksetConfig(vf.TasksetConfig):  # type: ignore[misc]
    split: str | None = "train"
    """``"train"``, ``"dev"``, ``"test"`` (held out: only when named) or None for train + dev."""
    task_ids: list[str] | None = None
    """These tasks instead of a whole split."""


class CoreCraftTaskset(vf.Taskset[CoreCraftTask, CoreCraftTasksetConfig]):  # type: ignore[misc]
    """The tasks of a split (or the named ones), each opening as the Gymnasium env opens."""

    def load(self) -> Iterator[CoreCraftTask]:
        domain = default_domain()
        for task in select_tasks(domain, self.config.split, self.config.task_ids):
            with domain.episode(task) as episode:
                data = vf.TaskData(id=task.id, system_prompt=system_message(episode), prompt=request_message(episode))
            yield CoreCraftTask(data, self.config.task)


class CoreCraftHarnessConfig(vf.HarnessConfig):  # type: ignore[misc]
    judge: JudgeConfig | None = None
    """LLM-judge settings as plain data; without one, judged criteria stay ungraded and out of the reward."""


class CoreCraftHarness(vf.Harness[CoreCraftHarnessConfig]):  # type: ignore[misc]
    """The agent loop over one fresh CoreCraft episode, in this process."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: vf.ModelContext, trace: vf.Trace, runtime: vf.Runtime, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData, **kwargs: Any) -> vf.ProgramResult:
        domain = default_domain()
        client = openai.AsyncOpenAI(base_url=endpoint, api_key=secret)
        with domain.episode(domain.tasks.get(str(data.id))) as episode:
            tools = domain.toolkit.schemas(episode.tool_names)
            messages = opening_messages(episode)
            reply, step = "", 0
            while True:
                try:
                    response = await client.chat.completions.create(
                        model=ctx.model, messages=messages, tools=tools)  # type: ignore[arg-type]
                except openai.BadRequestError as error:
                    if STOPPED in str(error):
                        break
                    raise
                step += 1
                turn = read_action(response.choices[0].message, step)
                messages.append(turn.message())
                if not turn.calls:
                    reply = turn.text
                    break
                messages.extend({"role": "tool", "tool_call_id": call.id,
                                 "content": tool_result_text(episode.call(call.name, call.arguments))}
                                for call in turn.calls)
            judge = Judge(self.config.judge) if self.config.judge is not None else None
            trace.info[GRADE_KEY] = episode.finish(reply, messages=messages, judge=judge).model_dump(mode="json")
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


__all__ = ["CoreCraftHarness", "CoreCraftTaskset"]
