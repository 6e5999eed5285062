"""ReferencePolicy: one stateless policy replaying the reference solutions of many tasks, picklable."""

from __future__ import annotations

import pickle

import pytest

import corecraft
from corecraft.agents.baselines import ReferencePolicy

pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")


def test_one_policy_replays_every_task_it_was_given_even_after_pickling() -> None:
    train = corecraft.tasks("train")
    policy = pickle.loads(pickle.dumps(ReferencePolicy(train)))
    for task in train[::16]:
        result = corecraft.run_group(task.id, policy, 2)
        assert result.rewards == [1.0, 1.0] and all(result.passed)


def test_a_conversation_of_another_task_is_refused() -> None:
    policy = ReferencePolicy(corecraft.tasks("train")[:1])
    other = corecraft.tasks("train")[1]
    with pytest.raises(ValueError, match="not one of its tasks"):
        policy([{"role": "system", "content": "…"}, {"role": "user", "content": other.prompt}], [])
    with pytest.raises(ValueError, match="not one of its tasks"):
        policy([], [])
