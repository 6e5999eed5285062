"""Ray rollouts (the ``corecraft[ray]`` extra): GRPO groups over two local Ray actors give exactly the
records of an in-process ``run_group`` loop, bad input is refused before Ray is touched, and the
snippet of docs/scale-with-ray.md runs as written."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

import corecraft  # noqa: E402  (after the skip: without Ray, nothing below is imported)
from corecraft.agents.baselines import ReferencePolicy  # noqa: E402
from corecraft.domain import default_domain  # noqa: E402
from corecraft.env.group import Policy, run_group  # noqa: E402
from corecraft.integrations.ray_rollouts import RolloutPool, rollouts  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:no LLM judge configured")]
DOC = Path(__file__).resolve().parents[1] / "docs" / "scale-with-ray.md"


def _train_ids(count: int) -> list[str]:
    """``count`` train tasks spread over the split (different families and worlds)."""
    ids = [t.id for t in corecraft.tasks("train")]
    return ids[:: len(ids) // count][:count]


def _weak_policy() -> Policy:
    """One customer search with a word of the request, then a generic reply (defined here, so it travels by value)."""
    def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if any(m["role"] == "tool" for m in messages):
            return "I have checked your account and everything is in order."
        word = re.findall(r"[A-Za-z]{5,}", messages[1]["content"])[0]
        return {"type": "function", "function": {"name": "search_customers", "arguments": json.dumps({"query": word})}}
    return policy


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A quiet local Ray instance with 2 CPUs (so 2 one-CPU actors), for this module."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
             object_store_memory=100 * 2**20)
    yield
    ray.shutdown()


def test_bad_input_is_refused_before_ray_is_touched(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_ray(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Ray was used before the input was checked")

    monkeypatch.setattr(ray, "put", no_ray)
    monkeypatch.setattr(ray, "remote", no_ray)
    train = _train_ids(1)
    test_task = default_domain().tasks.split("test")[0].task.id
    policy = _weak_policy()
    with pytest.raises(ValueError, match="held-out test split"):
        rollouts([*train, test_task], policy, 2)
    with pytest.raises(KeyError, match="no task with id 'nope'"):
        rollouts([*train, "nope"], policy, 2)
    with pytest.raises(TypeError, match="not one id"):
        rollouts(train[0], policy, 2)
    with pytest.raises(ValueError, match="at least one rollout"):
        rollouts(train, policy, 0)
    with pytest.raises(ValueError, match="max_steps"):
        rollouts(train, policy, 2, max_steps=0)
    with pytest.raises(ValueError, match="num_workers"):
        RolloutPool(policy, 0)
    with pytest.raises(TypeError, match="callable"):
        RolloutPool("not a policy", 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="chunk_size"):
        rollouts(train, policy, 2, chunk_size=0)


def test_a_pool_gives_the_run_group_records_for_each_policy(local_ray: None) -> None:
    ids = _train_ids(4)
    reference = ReferencePolicy(corecraft.tasks("train"))
    weak = _weak_policy()

    def broken(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        raise LookupError("the model server is unreachable")

    with RolloutPool(reference, 2, max_steps=30) as pool:
        pool.warm(ids)
        expected = [run_group(task_id, reference, 3, seed=5, max_steps=30) for task_id in ids]
        assert pool.run(ids, 3, seed=5, chunk_size=1) == expected
        assert all(all(r.passed) for r in expected)
        expected = [run_group(task_id, weak, 2, max_steps=30) for task_id in ids]
        assert pool.run(ids, 2, policy=weak) == expected
        assert pool.run(ids[::-1], 2, chunk_size=3, policy=weak) == expected[::-1]  # input order, any chunking
        assert not any(any(r.passed) for r in expected)
        assert {c["status"] for r in expected for i in r.infos for c in i["criteria"]} >= {"met", "not_met"}
        with pytest.raises(LookupError, match="unreachable"):  # raised here, as the policy raised it
            pool.run(ids, 1, policy=broken)
        assert pool.run(ids[:1], 1) == [run_group(ids[0], reference, 1, max_steps=30)]  # the pool still works
    with pytest.raises(RuntimeError, match="closed"):
        pool.run(ids, 1)


def test_the_docs_snippet_runs_as_written(local_ray: None, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    snippet = blocks[0]
    assert len(snippet.strip().splitlines()) <= 10
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(snippet, str(DOC), "exec"), namespace)
    results = namespace["results"]
    assert results == [run_group(task_id, namespace["policy"], 4) for task_id in namespace["ids"]]
    assert capsys.readouterr().out.strip() == str([(r.task_id, r.rewards) for r in results])
