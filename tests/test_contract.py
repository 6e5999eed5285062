"""The public contract trainer glue relies on: the final-reply rule, episodes cut off by Gymnasium's
TimeLimit still graded, envs that pickle and fork mid-episode, the task and grading API, and task
files read once per process however many envs are made."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import gymnasium
import pytest

import corecraft
from corecraft.domain import default_domain
from corecraft.env.core import CoreCraftEnv
from corecraft.tasks import loader

TASK = "doa_cpu_refund_kayla"
pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")
SEARCH = {"type": "function", "function": {"name": "search_tickets", "arguments": "{}"}}


def _messages(actions: list[Any]) -> list[dict[str, Any]]:
    """Actions as the chat messages an agent loop would have kept (tool results left out: grading replays)."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "request"}]
    for action in actions:
        if isinstance(action, str):
            out.append({"role": "assistant", "content": action})
        else:
            out.append({"role": "assistant", "content": None, "tool_calls": [action]})
    return out


# -- the final-reply rule --------------------------------------------------------------------------
@pytest.mark.parametrize("reply", ['{"answer": 7}', '[1, 2]', '{"type": "function", "function": {"name": "search_tickets"}}'])
def test_a_string_is_always_the_final_reply(reply: str) -> None:
    env = CoreCraftEnv(task_id=TASK)
    env.reset(seed=0)
    obs, _reward, terminated, truncated, info = env.step(reply)
    assert terminated and not truncated and obs == [] and "passed" in info
    assert env.messages[-1] == {"role": "assistant", "content": reply}
    assert env.episode is not None and env.episode.transcript.calls == [] and env.episode.transcript.reply == reply


def test_structured_tool_calls_still_run() -> None:
    env = CoreCraftEnv(task_id=TASK)
    env.reset(seed=0)
    obs, _, terminated, _, _ = env.step(SEARCH)
    assert not terminated and obs[0]["role"] == "tool" and "total" in json.loads(obs[0]["content"])


# -- cut off by TimeLimit, graded anyway ----------------------------------------------------------------
def test_max_episode_steps_cut_off_is_graded_on_that_step() -> None:
    env = gymnasium.make("CoreCraft-v0", task_id=TASK, max_episode_steps=2)
    env.reset(seed=0)
    assert env.step(SEARCH)[1:4] == (0.0, False, False)
    _, reward, terminated, truncated, info = env.step(SEARCH)
    assert truncated and not terminated and info["passed"] is False and info["steps"] == 2
    assert {c["id"] for c in info["criteria"]} >= {"doa_refund_created"} and reward == info["reward"]
    env.reset(seed=0)  # the next episode runs normally
    for action in corecraft.reference_actions(TASK)[:1]:
        assert env.step(action)[2:4] == (False, False)


def test_env_grades_nothing_twice() -> None:
    env = CoreCraftEnv(task_id=TASK)
    env.reset(seed=0)
    env.step("done")
    with pytest.raises(RuntimeError, match="no episode in progress"):
        env.grade("")


# -- pickle, deep copy, fork, snapshot --------------------------------------------------------------
def _play(env: Any, actions: list[Any]) -> tuple[float, dict[str, Any]]:
    reward, info = 0.0, {}
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return reward, info


def test_env_pickles_mid_episode_and_continues_to_the_same_grade() -> None:
    actions = corecraft.reference_actions(TASK)
    env = CoreCraftEnv(task_id=TASK)
    env.reset(seed=0)
    _play(env, actions[:3])
    clone = pickle.loads(pickle.dumps(env))
    assert clone.episode is not None and env.episode is not None
    assert clone.episode.world.hash() == env.episode.world.hash() and clone.messages == env.messages
    assert _play(clone, actions[3:]) == _play(env, actions[3:])
    assert clone.last_result == env.last_result and clone.last_result is not None
    assert clone.last_result["reward"] == 1.0


def test_a_forked_episode_grades_its_branches_independently() -> None:
    actions = corecraft.reference_actions(TASK)
    env = gymnasium.make("CoreCraft-v0", task_id=TASK)
    env.reset(seed=0)
    refund_at = next(i for i, a in enumerate(actions) if isinstance(a, dict) and a["function"]["name"] == "create_refund")
    _play(env, actions[:refund_at])  # the look-ups, up to the refund
    branch = env.unwrapped.fork()
    good_reward, good = _play(env, actions[refund_at:])
    bad_reward, bad = _play(branch, ["I could not find anything to refund."])
    assert (good_reward, good["passed"]) == (1.0, True)
    assert bad["passed"] is False and bad_reward < 1.0
    refunds = "SELECT count(*) FROM refund WHERE payment_id = 'pay-250827-003'"
    assert env.unwrapped.episode.world.conn.execute(refunds).fetchone()[0] == 1
    assert branch.episode is not None and branch.episode.world.conn.execute(refunds).fetchone()[0] == 0
    deep = copy.deepcopy(branch)
    assert deep.last_result == branch.last_result and deep.episode is not branch.episode


def test_snapshot_and_restore_rewind_the_episode() -> None:
    actions = corecraft.reference_actions(TASK)
    env = CoreCraftEnv(task_id=TASK)
    env.reset(seed=0)
    _play(env, actions[:2])
    saved = env.snapshot()
    assert env.episode is not None
    before = (env.episode.world.hash(), list(env.messages), env.steps)
    _, wrong = _play(env, ["nothing to do"])
    assert wrong["passed"] is False
    env.restore(saved)
    assert env.episode is not None and (env.episode.world.hash(), env.messages, env.steps) == before
    reward, info = _play(env, actions[2:])
    assert reward == 1.0 and info["passed"]


# -- the task and grading API ----------------------------------------------------------------------
def test_tasks_lists_splits_and_the_test_split_only_by_name() -> None:
    train, both, test = corecraft.tasks("train"), corecraft.tasks(None), corecraft.tasks("test")
    assert {t.split for t in train} == {"train"} and {t.split for t in both} == {"train", "dev"}
    assert {t.split for t in test} == {"test"} and len(both) == len(train) + len(corecraft.tasks("dev"))
    assert corecraft.tasks() == train and all(t.prompt and t.reference_solution.reply for t in train)
    with pytest.raises(ValueError, match="unknown split"):
        corecraft.tasks("holdout")


def test_grade_a_transcript_deterministically() -> None:
    messages = _messages(corecraft.reference_actions(TASK))
    first, second = corecraft.grade(TASK, messages), corecraft.grade(TASK, messages)
    assert first == second and first.passed and first.reward == 1.0
    env = CoreCraftEnv(task_id=TASK)
    env.reset(seed=0)
    _, info = _play(env, corecraft.reference_actions(TASK))
    assert [c.model_dump() for c in first.criteria] == info["criteria"]
    undone = corecraft.grade(TASK, [*messages[:-2], {"role": "assistant", "content": "Refunded."}])
    assert not undone.passed and undone.reward < 1.0
    cut = corecraft.grade(TASK, messages[:-1])  # never answered: graded with an empty reply
    assert not cut.passed


def test_grade_reads_client_objects_and_rejects_unreadable_messages() -> None:
    from openai.types.chat import ChatCompletionMessage

    messages: list[Any] = [ChatCompletionMessage.model_validate(m) for m in _messages(corecraft.reference_actions(TASK))[1:]]
    assert corecraft.grade(TASK, messages).passed
    with pytest.raises(ValueError, match="message 1: tool_calls must be a list"):
        corecraft.grade(TASK, [{"role": "assistant", "tool_calls": "nope"}])


def test_test_tasks_are_refused_unless_asked_for_by_name() -> None:
    test_id = corecraft.tasks("test")[0].id
    for call in (lambda **kw: corecraft.task(test_id, **kw), lambda **kw: corecraft.reference_actions(test_id, **kw),
                 lambda **kw: corecraft.grade(test_id, [], **kw)):
        with pytest.raises(ValueError, match="held-out test split; pass split='test'"):
            call()
        assert call(split="test") is not None


def test_reference_actions_are_tool_calls_then_the_reply() -> None:
    actions = corecraft.reference_actions(TASK)
    task = corecraft.task(TASK)
    assert isinstance(actions[-1], str) and actions[-1] == task.reference_solution.reply
    assert [a["function"]["name"] for a in actions[:-1] if isinstance(a, dict)] == [c.tool for c in task.reference_solution.calls]


# -- task files read once per process ---------------------------------------------------------------
def test_a_group_of_envs_reads_its_task_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = loader.read_task

    def counting(path: Any) -> Any:
        reads.append(str(path))
        return real(path)

    monkeypatch.setattr("corecraft.tasks.library.read_task", counting)
    default_domain().tasks._compiled.clear()
    envs = corecraft.make_group(TASK, 6)
    for env in envs:
        env.reset(seed=0)
    assert len(reads) == 1
