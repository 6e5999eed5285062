"""CoreCraft-v0 as RL users drive it: registration, check_env, vector envs, GRPO groups,
isolation, malformed actions, truncation, and the OpenAI agent loop over real HTTP."""

from __future__ import annotations

import json
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from scripted_chat_model import send_json

import corecraft
from corecraft.agents.openai_agent import OpenAIAgent
from corecraft.domain import default_domain
from corecraft.env.core import CoreCraftEnv
from corecraft.evaluate import run_episode

TASK = "doa_cpu_refund_kayla"
pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")


TASKS = default_domain().tasks
N_TOOLS = len(default_domain().toolkit)


def _reference_actions(task_id: str) -> list[Any]:
    return TASKS.get(task_id).task.reference_solution.actions()


def test_make_with_and_without_import() -> None:
    env = gymnasium.make("CoreCraft-v0", task_id=TASK)
    obs, info = env.reset(seed=0)
    assert info["task_id"] == TASK and obs[0]["role"] == "system" and obs[1]["role"] == "user"
    assert len(info["tools"]) == N_TOOLS and "2025-09-15" in obs[0]["content"]
    env2 = gymnasium.make("corecraft:CoreCraft-v0", task_id=TASK)
    assert env2.reset(seed=0)[1]["task_id"] == TASK


def test_check_env_passes_without_warnings() -> None:
    env = gymnasium.make("CoreCraft-v0", render_mode="ansi").unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    assert [str(w.message) for w in caught] == []


def test_reference_episode_reaches_full_reward_and_only_last_step_pays() -> None:
    env = CoreCraftEnv(task_id=TASK)
    env.reset(seed=0)
    rewards = []
    for action in _reference_actions(TASK):
        _obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
    assert terminated and not truncated
    assert rewards[:-1] == [0.0] * (len(rewards) - 1) and rewards[-1] == 1.0 and info["passed"]
    assert {c["id"] for c in info["criteria"]} >= {"doa_refund_created", "only_the_refund_changes"}


def test_parallel_tool_calls_and_tool_messages_match_ids() -> None:
    env = CoreCraftEnv(task_id=TASK)
    env.reset(seed=0)
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a1", "type": "function", "function": {"name": "search_customers", "arguments": '{"query": "Kayla"}'}},
        {"id": "a2", "type": "function", "function": {"name": "search_knowledge_base", "arguments": '{"query": "DOA"}'}},
    ]}
    obs, _reward, terminated, _truncated, _ = env.step(message)
    assert [m["tool_call_id"] for m in obs] == ["a1", "a2"] and not terminated
    assert json.loads(obs[0]["content"])["total"] >= 1
    responses = {"type": "function_call", "call_id": "r1", "name": "search_tickets", "arguments": "{}"}
    obs, *_ = env.step(responses)
    assert obs[0]["tool_call_id"] == "r1"


def test_malformed_action_gets_an_error_and_episode_goes_on() -> None:
    env = CoreCraftEnv(task_id=TASK, max_steps=3)
    env.reset(seed=0)
    obs, reward, terminated, truncated, _ = env.step({"role": "assistant", "tool_calls": "nope"})
    assert obs[0]["role"] == "user" and "could not be read" in obs[0]["content"] and not (terminated or truncated)
    obs, *_ = env.step({"type": "function", "function": {"name": "no_such_tool", "arguments": "{}"}})
    assert json.loads(obs[0]["content"])["error"]["type"] == "unknown_tool"
    obs, reward, terminated, truncated, info = env.step({"type": "function", "function": {"name": "search_tickets"}})
    assert truncated and not terminated and reward == 0.0 and info["passed"] is False


def test_envs_are_isolated_when_interleaved() -> None:
    a, b = CoreCraftEnv(task_id=TASK), CoreCraftEnv(task_id=TASK)
    a.reset(seed=0)
    b.reset(seed=0)
    a.step(_reference_actions(TASK)[5])  # create_refund in env a
    assert a.episode and b.episode
    assert a.episode.world.hash() != b.episode.world.hash()
    count = "SELECT count(*) FROM refund WHERE payment_id = 'pay-250827-003'"
    assert b.episode.world.conn.execute(count).fetchone()[0] == 0
    assert a.episode.world.conn.execute(count).fetchone()[0] == 1


def test_grpo_group_of_eight_starts_identical_and_is_graded() -> None:
    envs = corecraft.make_group(TASK, 8)
    hashes = set()
    for i, env in enumerate(envs):
        env.reset(seed=i)
        assert env.episode is not None
        hashes.add(env.episode.world.hash())
    assert len(hashes) == 1
    actions = _reference_actions(TASK)

    def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        taken = sum(1 for m in messages if m["role"] == "assistant")
        return actions[taken] if taken < len(actions) else actions[-1]

    result = corecraft.run_group(TASK, policy, 8)
    assert result.rewards == [1.0] * 8 and all(result.passed) and len(result.infos) == 8


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_envs(mode: str) -> None:
    kwargs = {"vector_kwargs": {"shared_memory": False}} if mode == "async" else {}
    vec = gymnasium.make_vec("CoreCraft-v0", num_envs=2, vectorization_mode=mode, task_id=TASK, **kwargs)
    obs, info = vec.reset(seed=0)
    assert len(obs) == 2 and list(info["task_id"]) == [TASK, TASK]
    call = {"type": "function", "function": {"name": "search_customers", "arguments": '{"query": "Kayla"}'}}
    obs, rewards, terminated, _, info = vec.step((call, call))
    assert list(terminated) == [False, False]
    obs, rewards, terminated, _truncated, info = vec.step(("done", "done"))
    assert list(terminated) == [True, True] and rewards[0] == rewards[1] < 0.2 and not any(info["passed"])
    vec.close()


def test_render_ansi_shows_the_transcript() -> None:
    env = CoreCraftEnv(task_id=TASK, render_mode="ansi")
    env.reset(seed=0)
    env.step(_reference_actions(TASK)[0])
    text = env.render()
    assert text is not None and "--- USER" in text and "search_customers" in text


class _ScriptedModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that answers with the reference tool calls, two at a time."""

    script: ClassVar[list[dict[str, Any]]] = []
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        message = type(self).script[min(len(type(self).requests) - 1, len(type(self).script) - 1)]
        payload = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                   "choices": [{"index": 0, "finish_reason": "stop", "message": message}]}
        send_json(self, payload)

    def log_message(self, *args: Any) -> None:
        return


def test_openai_agent_loop_over_http(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = TASKS.get(TASK)
    task = compiled.task
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": c.tool, "arguments": json.dumps(c.args)}}
             for i, c in enumerate(task.reference_solution.calls)]
    script = [{"role": "assistant", "content": None, "tool_calls": calls[:2]}]  # parallel calls
    script += [{"role": "assistant", "content": None, "tool_calls": [c]} for c in calls[2:]]
    script.append({"role": "assistant", "content": task.reference_solution.reply})
    _ScriptedModel.script, _ScriptedModel.requests = script, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ScriptedModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("CORECRAFT_TEST_KEY", "sk-test")
        agent = OpenAIAgent(task, model="scripted", base_url=f"http://127.0.0.1:{server.server_port}/v1",
                            api_key_env="CORECRAFT_TEST_KEY")
        record = run_episode(compiled, agent, judge=None, max_steps=30, trial=0)
    finally:
        server.shutdown()
    assert record["passed"] and record["reward"] == 1.0
    assert len(_ScriptedModel.requests) == len(script)
    sent = _ScriptedModel.requests[1]
    assert [m["role"] for m in sent["messages"]][-3:] == ["assistant", "tool", "tool"]
    assert len(sent["tools"]) == N_TOOLS


def test_training_helpers_refuse_the_test_split() -> None:
    test_task = TASKS.ids("test")[0]
    with pytest.raises(ValueError, match="held-out test split"):
        corecraft.make_group(test_task, 2)
    with pytest.raises(ValueError, match="held-out test split"):
        CoreCraftEnv(task_id=test_task).reset(seed=0)
    _, info = CoreCraftEnv(task_id=test_task, split="test").reset(seed=0)
    assert info["split"] == "test"


def test_same_actions_give_the_same_final_state_and_reward() -> None:
    outcomes = []
    for _ in range(2):
        env = CoreCraftEnv(task_id=TASK)
        env.reset(seed=3)
        for action in _reference_actions(TASK)[:-1]:
            env.step(action)
        assert env.episode is not None
        final_hash = env.episode.world.hash()
        *_, reward, _, _, info = env.step("Refund done.")
        outcomes.append((final_hash, reward, [c["status"] for c in info["criteria"]], env.messages[2:]))
    assert outcomes[0] == outcomes[1]
