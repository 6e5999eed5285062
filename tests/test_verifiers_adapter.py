"""The ``verifiers`` adapter driven by the real ``verifiers`` library against a local scripted model.

The scripted model (tests/scripted_chat_model.py) is an OpenAI-compatible HTTP endpoint answering
with the reference solution's steps, or at once without tools.
Skipped when ``verifiers`` (the ``corecraft[verifiers]`` extra) is not installed.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

vf = pytest.importorskip("verifiers")
pytest.importorskip("verifiers.legacy", reason="the classic verifiers API (verifiers < 0.4)")

from scripted_chat_model import ScriptedModel, run_doc_snippet, scripted_model  # noqa: E402

import corecraft  # noqa: E402
from corecraft.domain import default_domain  # noqa: E402
from corecraft.integrations.verifiers_env import EPISODE_KEY, GRADE_KEY, CoreCraftVerifiersEnv  # noqa: E402

pytestmark = [pytest.mark.slow,  # a real verifiers import and real episodes
              pytest.mark.filterwarnings("ignore::corecraft.grading.grader.NoJudgeWarning")]
TASK = "doa_cpu_refund_kayla"
DOC = Path(__file__).resolve().parents[1] / "docs" / "train-with-verifiers.md"


@pytest.fixture
def model_url() -> Iterator[str]:
    with scripted_model() as url:
        yield url


def _client(url: str) -> Any:
    from openai import AsyncOpenAI

    return vf.OpenAIChatCompletionsClient(AsyncOpenAI(base_url=url, api_key="sk-test"))


def _rollout(env: CoreCraftVerifiersEnv, url: str) -> Any:
    """One rollout of the env's first row, scored by the env's rubric; returns the final state."""
    async def run() -> Any:
        state = await env.rollout(env.get_dataset()[0], _client(url), "scripted")
        await env.rubric.score_rollout(state)
        return state
    return asyncio.run(run())


def _decoded(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """verifiers' saved messages with their tool calls (saved as JSON strings) decoded again."""
    return [{**m, "tool_calls": [json.loads(c) for c in m["tool_calls"]]} if m.get("tool_calls") else m
            for m in messages]


def test_import_corecraft_does_not_import_verifiers() -> None:
    code = "import sys, corecraft; corecraft.tasks; print('verifiers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_reference_rollout_scores_one_with_the_criteria_in_the_state(model_url: str) -> None:
    env = vf.load_environment("corecraft", task_ids=[TASK])
    assert isinstance(env, CoreCraftVerifiersEnv)
    results = env.evaluate_sync(client=_client(model_url), model="scripted", state_columns=[GRADE_KEY])
    [out] = results["outputs"]
    grade = out[GRADE_KEY]
    assert out["reward"] == 1.0 and out["metrics"]["passed"] == 1.0
    assert grade["task_id"] == TASK and grade["passed"] and grade["criteria"]
    statuses = {c["status"] for c in grade["criteria"] if c["kind"] != "llm_judge"}
    assert statuses == {"met"}  # judged criteria stay ungraded: no judge here
    assert out["stop_condition"] == "no_tools_called"
    assert grade == corecraft.grade(TASK, _decoded([*out["prompt"], *out["completion"]])).model_dump()
    reference = corecraft.reference_actions(TASK)
    requests = ScriptedModel.requests
    assert len(requests) == len(reference)
    assert sorted(t["function"]["name"] for t in requests[0]["tools"]) == sorted(default_domain().toolkit.names)
    assert requests[0]["tools"] == default_domain().toolkit.schemas()
    first_result = requests[1]["messages"][-1]
    assert first_result["role"] == "tool" and first_result["tool_call_id"] == "ref_1"
    with default_domain().episode(default_domain().tasks.get(TASK)) as episode:
        call = reference[0]
        assert isinstance(call, dict)
        expected = episode.call(call["function"]["name"], call["function"]["arguments"])
    assert json.loads(first_result["content"]) == expected
    assert "episode" not in json.dumps(requests[0]["tools"])  # the session never reaches the model


def test_reply_without_tool_calls_scores_low_and_closes_the_episode(model_url: str) -> None:
    ScriptedModel.mode = "lazy"
    env = vf.load_environment("corecraft", task_ids=[TASK])
    state = _rollout(env, model_url)
    grade = state[GRADE_KEY]
    assert state["reward"] < 1.0 and not grade["passed"]
    assert any(c["status"] == "not_met" for c in grade["criteria"])
    assert state["reward"] == corecraft.grade(TASK, [*state["prompt"], *state["completion"]]).reward
    assert EPISODE_KEY not in state and state["stop_condition"] == "no_tools_called"


def test_max_turns_cut_off_is_graded_like_the_conversation(model_url: str) -> None:
    env = vf.load_environment("corecraft", task_ids=[TASK], max_turns=1)
    state = _rollout(env, model_url)
    assert state["stop_condition"] == "max_turns_reached"
    assert state["completion"][-1].tool_calls  # cut off after a tool call: no final reply
    assert state[GRADE_KEY] == corecraft.grade(TASK, [*state["prompt"], *state["completion"]]).model_dump()
    assert not state[GRADE_KEY]["passed"]


def test_only_the_tasks_allowed_tools_are_offered(model_url: str) -> None:
    domain = default_domain()
    base = domain.tasks.get(TASK).task
    allowed = sorted({c.tool for c in base.reference_solution.calls} | {"search_products"})
    compiled = domain.compile(base.model_copy(update={"allowed_tools": allowed}))
    env = CoreCraftVerifiersEnv([compiled], domain=domain)
    state = _rollout(env, model_url)
    assert sorted(t["function"]["name"] for t in ScriptedModel.requests[0]["tools"]) == allowed
    assert state["reward"] == 1.0


def test_test_split_needs_to_be_asked_for() -> None:
    test_task = default_domain().tasks.ids("test")[0]
    with pytest.raises(RuntimeError, match="held-out test split") as caught:
        vf.load_environment("corecraft", task_ids=[test_task])
    assert isinstance(caught.value.__cause__, ValueError)
    train = vf.load_environment("corecraft")
    ids = {row["info"]["task_id"] for row in train.get_dataset()}
    assert ids == set(default_domain().tasks.ids("train"))
    held_out = vf.load_environment("corecraft", split="test")
    assert {row["info"]["task_id"] for row in held_out.get_dataset()} == set(default_domain().tasks.ids("test"))


def test_rows_open_like_the_gym_env() -> None:
    env = vf.load_environment("corecraft", task_ids=[TASK])
    [row] = env.get_dataset()
    gym = corecraft.CoreCraftEnv(task_id=TASK)
    gym.reset(seed=0)
    assert row["prompt"] == gym.messages[:2]
    assert row["info"] == {"task_id": TASK}


def test_docs_snippet_runs_as_written(model_url: str, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    lines = run_doc_snippet(DOC, "import verifiers as vf", 10, model_url, monkeypatch, capsys)
    assert [task_id for task_id, _, _ in lines] == default_domain().tasks.ids("train")[:3]
    assert all(float(reward) == 1.0 and passed == "True" for _, reward, passed in lines)
