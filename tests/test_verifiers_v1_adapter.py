"""CoreCraft under verifiers 0.4+ (``verifiers.v1``): the taskset and harness found by the id ``corecraft``,
driven by the real library (its interception server included) against a local scripted model.

The scripted model (tests/scripted_chat_model.py) answers with the reference solution's steps, or
at once without tools. Skipped unless verifiers 0.4+ is installed (CI's verifiers stage).
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

pytest.importorskip("verifiers", minversion="0.4")  # 0.3.1's verifiers.v1 is an incompatible preview
vf = pytest.importorskip("verifiers.v1")

from scripted_chat_model import ScriptedModel, run_doc_snippet, scripted_model  # noqa: E402

import corecraft  # noqa: E402
from corecraft.domain import default_domain  # noqa: E402
from corecraft.integrations.verifiers_v1 import GRADE_KEY, CoreCraftHarness, CoreCraftTaskset  # noqa: E402

pytestmark = [pytest.mark.slow,  # a real verifiers import and real episodes
              pytest.mark.filterwarnings("ignore::corecraft.grading.grader.NoJudgeWarning")]
TASK = "doa_cpu_refund_kayla"
DOC = Path(__file__).resolve().parents[1] / "docs" / "train-with-verifiers.md"


@pytest.fixture
def model_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("SCRIPTED_MODEL_KEY", "sk-test")
    with scripted_model() as url:
        yield url


def _env(**taskset: Any) -> Any:
    agent = {"runtime": {"type": "subprocess"}, **taskset.pop("agent", {})}
    return vf.load_environment(vf.resolve_env_config({"taskset": {"id": "corecraft", **taskset}, "agent": agent}))


def _trace(url: str, **taskset: Any) -> Any:
    """One rollout of the first task of ``_env(**taskset)``; returns its trace."""
    env = _env(**taskset)
    ctx = vf.ModelContext(model="scripted", client=vf.EvalClientConfig(base_url=url, api_key_var="SCRIPTED_MODEL_KEY"))

    async def run() -> Any:
        async with env.serving():
            return await env.run_episode(next(iter(env.taskset)), ctx)
    [trace] = asyncio.run(run()).traces
    assert trace.errors == []
    return trace


def test_import_corecraft_does_not_import_verifiers_and_exports_the_plugins() -> None:
    code = "import sys, corecraft; corecraft.tasks; print('verifiers' in sys.modules, sorted(corecraft.__all__))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("False ") and "'CoreCraftHarness'" in out and "'CoreCraftTaskset'" in out
    env = _env(task_ids=[TASK])
    assert isinstance(env.taskset, CoreCraftTaskset)
    harness = vf.default_agent_harness("corecraft")  # what an agent with no harness pinned runs
    assert env.config.agent.harness is None and type(vf.load_harness(harness)) is CoreCraftHarness


def test_reference_rollout_scores_one_with_the_criteria_in_the_trace(model_url: str) -> None:
    trace = _trace(model_url, task_ids=[TASK])
    grade = trace.info[GRADE_KEY]
    assert trace.reward == 1.0 and trace.metrics == {"passed": 1.0} and trace.stop_condition == "agent_completed"
    assert grade["task_id"] == TASK and grade["passed"]
    assert {c["status"] for c in grade["criteria"] if c["kind"] != "llm_judge"} == {"met"}
    reference = corecraft.reference_actions(TASK)
    requests = ScriptedModel.requests
    assert len(requests) == len(reference)
    conversation = [*requests[-1]["messages"], {"role": "assistant", "content": reference[-1]}]
    assert grade == corecraft.grade(TASK, conversation).model_dump(mode="json")
    assert requests[0]["tools"] == default_domain().toolkit.schemas()
    assert requests[0]["messages"] == corecraft.CoreCraftEnv(task_id=TASK).reset(seed=0)[0]  # opens as the gym env
    first_result = requests[1]["messages"][-1]
    assert first_result["role"] == "tool" and first_result["tool_call_id"] == "ref_1"
    with default_domain().episode(default_domain().tasks.get(TASK)) as episode:
        call = reference[0]
        assert isinstance(call, dict)
        assert json.loads(first_result["content"]) == episode.call(call["function"]["name"], call["function"]["arguments"])
    assert "episode" not in json.dumps(requests[0]["tools"])  # the session never reaches the model


def test_reply_without_tool_calls_scores_low(model_url: str) -> None:
    ScriptedModel.mode = "lazy"
    trace = _trace(model_url, task_ids=[TASK])
    grade = trace.info[GRADE_KEY]
    assert trace.reward < 1.0 and not grade["passed"] and trace.metrics == {"passed": 0.0}
    assert any(c["status"] == "not_met" for c in grade["criteria"])
    conversation = [*ScriptedModel.requests[0]["messages"], {"role": "assistant", "content": "Sorry, I cannot help with that."}]
    assert trace.reward == corecraft.grade(TASK, conversation).reward


def test_max_turns_cut_off_is_graded_like_the_conversation(model_url: str) -> None:
    trace = _trace(model_url, task_ids=[TASK], agent={"max_turns": 1})
    assert trace.stop_condition == "max_turns" and len(ScriptedModel.requests) == 1
    first_call = corecraft.reference_actions(TASK)[0]
    conversation = [*ScriptedModel.requests[0]["messages"], {"role": "assistant", "content": None, "tool_calls": [first_call]}]
    assert trace.info[GRADE_KEY] == corecraft.grade(TASK, conversation).model_dump(mode="json")
    assert not trace.info[GRADE_KEY]["passed"]


def test_test_split_needs_to_be_asked_for() -> None:
    test_task = default_domain().tasks.ids("test")[0]
    with pytest.raises(ValueError, match="held-out test split"):
        list(_env(task_ids=[test_task]).taskset)
    assert [t.data.id for t in _env().taskset] == default_domain().tasks.ids("train")
    assert [t.data.id for t in _env(split="test").taskset] == default_domain().tasks.ids("test")


def test_docs_snippet_runs_as_written(model_url: str, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    lines = run_doc_snippet(DOC, "import verifiers.v1 as vf", 16, model_url, monkeypatch, capsys)
    assert [task_id for task_id, _, _ in lines] == default_domain().tasks.ids("train")[:3]
    assert all(float(reward) == 1.0 and passed == "True" for _, reward, passed in lines)
