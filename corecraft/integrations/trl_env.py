"""CoreCraft as an ``environment_factory`` for TRL's ``GRPOTrainer`` (multi-turn tool calling).

TRL (1.x) builds one environment object per rollout from ``environment_factory``, calls its
``reset(**row)`` with the dataset row, offers every public method of its class (except ``reset``
and ``get_reward``) to the model as a tool — the tool schema comes from the method's signature,
type hints and Google-style docstring (``transformers.utils.get_json_schema``) — and adds
``get_reward()`` to the rewards with weight 1 under the class name.

- :func:`environment_class` makes that class: its tool methods are generated from the toolkit (the
  same names, descriptions, argument descriptions, enums and defaults as ``tools/catalog.json``),
  each returns the JSON text the Gymnasium env puts in its ``tool`` message, and ``reset``
  starts a fresh episode of ``row["task_id"]`` (never a held-out test task).
- :func:`record_final_replies`: TRL never shows an environment the model's last message, which is
  CoreCraft's final reply (graded by most rubrics). Passed in ``reward_funcs``, it hands each
  rollout's final reply to its environment and returns ``None`` (TRL's "no reward from me"), so
  ``get_reward()`` grades the whole episode. Without it ``get_reward()`` refuses to guess.
- :func:`training_rows`: the rows of a training dataset (``prompt`` = the env's opening system
  and user messages, ``task_id``); the test split is refused.

A task's ``allowed_tools`` is enforced as in the Gymnasium env: a call to any other tool gets the
``unknown_tool`` error. ``environment_class(tools=...)`` also keeps other tools out of the prompt.
This module imports neither TRL nor torch; ``pip install 'corecraft[trl]'`` brings them.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal, cast

from corecraft.domain import default_domain
from corecraft.env.actions import read_action
from corecraft.episode import Episode
from corecraft.grading.judge import Judge, JudgeConfig
from corecraft.grading.result import GradeResult
from corecraft.prompting import opening_messages, tool_result_text

_SCALARS: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}


class CoreCraftToolEnv:
    """One rollout's CoreCraft episode, driven by TRL. Subclasses made by :func:`environment_class` add the tools.

    Public attributes after an episode: ``task_id``, ``reply`` (the final reply handed over by
    :func:`record_final_replies`) and ``result`` (the :class:`GradeResult` with every criterion's status).
    """

    tool_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, judge: JudgeConfig | dict[str, Any] | None = None) -> None:
        config = JudgeConfig.model_validate(judge) if isinstance(judge, dict) else judge
        self._judge = Judge(config) if config is not None else None
        self._episode: Episode | None = None
        self._messages: list[dict[str, Any]] = []
        self.task_id: str | None = None
        self.reply: str | None = None
        self.result: GradeResult | None = None

    def reset(self, **row: Any) -> None:
        """Start a fresh episode of ``row["task_id"]`` (other columns, such as ``prompt``, are ignored).

        Returns None: the prompt is the row's (see :func:`training_rows`), so TRL adds nothing to it.
        """
        task_id = row.get("task_id")
        if not isinstance(task_id, str) or not task_id:
            raise ValueError("each dataset row needs a 'task_id' column naming a CoreCraft task (see training_rows)")
        domain = default_domain()
        compiled = domain.tasks.get(task_id)
        if compiled.split == "test":
            raise ValueError(f"task {task_id!r} is in the held-out test split; it is never used for training")
        if self._episode is not None:
            self._episode.close()
        self._episode = domain.episode(compiled)
        self._messages = opening_messages(self._episode)
        self.task_id, self.reply, self.result = task_id, None, None

    def get_reward(self) -> float:
        """The episode's CoreCraft grade in [0, 1], graded once with the recorded final reply."""
        if self.result is None:
            if self._episode is None:
                raise RuntimeError("no episode: TRL calls reset(**row) before the rollout")
            if self.reply is None:
                raise RuntimeError("no final reply was recorded for this episode: pass "
                                   "reward_funcs=[record_final_replies] to GRPOTrainer (CoreCraft grades the "
                                   "model's last message, which TRL shows only to reward functions)")
            self.result = self._episode.finish(self.reply, messages=self._messages, judge=self._judge)
        return float(self.result.reward)

    def _record(self, completion: str | Sequence[Mapping[str, Any]]) -> None:
        """Keep the rollout's final reply: the last assistant message if it makes no tool calls, else ''."""
        if isinstance(completion, str):
            self.reply, added = completion, [{"role": "assistant", "content": completion}]
        else:
            added = [dict(m) for m in completion]
            last = next((m for m in reversed(added) if m.get("role") == "assistant"), None)
            turn = read_action(last, len(added)) if last is not None else None
            self.reply = turn.text if turn is not None and not turn.calls else ""
        self._messages = [*self._messages, *added]

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self._episode is None or self.result is not None:
            raise RuntimeError(f"{name}: no episode in progress (TRL calls reset(**row) first)")
        return tool_result_text(self._episode.call(name, arguments))


def _hint(schema: Mapping[str, Any]) -> Any:
    """The Python type hint that ``get_json_schema`` turns back into this JSON-schema node."""
    if "enum" in schema:
        literal: Any = Literal
        return literal[tuple(schema["enum"])]
    kind = schema.get("type")
    if kind == "array":
        return types.GenericAlias(list, (_hint(schema.get("items", {})),))
    if kind == "object":
        return dict[str, Any]
    if kind in _SCALARS:
        return _SCALARS[kind]
    raise TypeError(f"no Python type for the JSON schema {dict(schema)!r}")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _describe(schema: Mapping[str, Any]) -> str:
    """An argument's description on one line; objects inside a list are described field by field."""
    text = _one_line(schema.get("description", ""))
    item = schema.get("items", {})
    if schema.get("type") == "array" and item.get("type") == "object":
        required = set(item.get("required", []))
        fields = "; ".join(f"{key} ({sub.get('type')}{', required' if key in required else ''}): "
                           f"{_one_line(sub.get('description', '')).rstrip('.')}" for key, sub in item["properties"].items())
        text = f"{text} Each item is an object with {fields}.".strip()
    return text


def _tool_method(name: str, description: str, parameters: Mapping[str, Any]) -> Callable[..., str]:
    """A method named after the tool, with the signature, hints and ``Args:`` docstring TRL reads."""
    required = set(parameters.get("required", []))
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    hints: dict[str, Any] = {}
    lines = []
    for arg, schema in parameters.get("properties", {}).items():
        hint = _hint(schema)
        if arg in required:
            default = inspect.Parameter.empty
        elif "default" in schema:
            default = schema["default"]
        else:
            hint, default = hint | None, None
        hints[arg] = hint
        params.append(inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint))
        lines.append(f"    {arg}: {_describe(schema)}")

    def method(self: CoreCraftToolEnv, **arguments: Any) -> str:
        return self._call(name, arguments)

    method.__name__ = name
    method.__qualname__ = f"CoreCraft.{name}"
    method.__doc__ = description + ("\n\nArgs:\n" + "\n".join(lines) if lines else "")
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = {**hints, "return": str}
    return method


def environment_class(tools: Iterable[str] | None = None) -> type[CoreCraftToolEnv]:
    """The environment class to pass as ``environment_factory`` (all 23 tools, or the ``tools`` named).

    ``functools.partial(environment_class(), judge=...)`` grades ``llm_judge`` criteria too.
    """
    toolkit = default_domain().toolkit
    wanted = set(toolkit.names if tools is None else tools)
    unknown = wanted - set(toolkit.names)
    if unknown:
        raise ValueError(f"unknown tool(s): {', '.join(sorted(unknown))}")
    names = tuple(name for name in toolkit.names if name in wanted)
    taken = [name for name in names if hasattr(CoreCraftToolEnv, name) or name.startswith("_")]
    if taken:
        raise ValueError(f"tool name(s) clash with the environment's own attributes: {', '.join(taken)}")
    body: dict[str, Any] = {name: _tool_method(name, toolkit.descriptions[name], toolkit.parameters[name])
                            for name in names}
    body.update(tool_names=names, __module__=__name__,
                __doc__=f"A CoreCraft episode for TRL with {len(names)} tool(s) as methods.")
    return cast(type[CoreCraftToolEnv], type("CoreCraft", (CoreCraftToolEnv,), body))


def record_final_replies(completions: Sequence[str | Sequence[Mapping[str, Any]]],
                         environments: Sequence[object] | None = None, **_: Any) -> list[float | None]:
    """A TRL reward function that only hands each rollout's final reply to its CoreCraft environment.

    Returns ``None`` for every rollout (TRL leaves it out of the reward); the reward is the
    environment's ``get_reward()``, which TRL calls after the reward functions.
    """
    if environments is None or len(environments) != len(completions):
        raise ValueError("record_final_replies needs GRPOTrainer(environment_factory=environment_class())")
    for completion, environment in zip(completions, environments, strict=True):
        if isinstance(environment, CoreCraftToolEnv):
            environment._record(completion)
    return [None] * len(completions)


def training_rows(split: str | None = "train") -> list[dict[str, Any]]:
    """Dataset rows for GRPO: ``prompt`` (the opening system and user messages) and ``task_id``.

    ``split``: ``"train"`` (default), ``"dev"``, or None for both. The test split is refused:
    it is held out for evaluation.
    """
    if split == "test":
        raise ValueError("the test split is held out for evaluation and is never a training set")
    domain = default_domain()
    rows = []
    for compiled in domain.tasks.split(split):
        with domain.episode(compiled) as episode:
            rows.append({"prompt": opening_messages(episode), "task_id": compiled.id})
    return rows
