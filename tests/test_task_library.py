"""Every task in the library proves itself: valid file, solvable by its reference solution,
failed by an agent that does nothing, and every minefield trips on its trigger."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from corecraft.agents.baselines import ReferenceAgent
from corecraft.domain import default_domain
from corecraft.env.core import CoreCraftEnv
from corecraft.tasks.check import check_task
from corecraft.tasks.loader import CANARY

DOMAIN = default_domain()
LIBRARY = DOMAIN.tasks
FILES = [p for split in ("train", "dev", "test") for p in LIBRARY.files(split)]
IDS = [f"{p.parent.name}/{p.stem}" for p in FILES]

pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_task_file_checks_clean(path: Path) -> None:
    assert [str(p) for p in check_task(path, DOMAIN, replay=False)] == []


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_reference_solution_meets_every_deterministic_criterion(path: Path) -> None:
    result = DOMAIN.replay_reference(LIBRARY.load(path))
    failed = [f"{c.id}: {c.reason}" for c in result.criteria if c.status not in ("met", "ungraded")]
    assert failed == []
    assert [m.id for m in result.minefields if m.tripped] == []
    assert result.passed and result.reward == 1.0


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_doing_nothing_fails(path: Path) -> None:
    with DOMAIN.episode(LIBRARY.load(path)) as episode, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = episode.finish("")
    assert not result.passed
    assert any(c.status == "not_met" for c in result.criteria)
    assert [m.id for m in result.minefields if m.tripped] == []


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_minefield_trips_on_its_trigger(path: Path) -> None:
    compiled = LIBRARY.load(path)
    for mine in compiled.task.minefields:
        with DOMAIN.episode(compiled) as episode:
            for call in mine.trigger:
                episode.call(call.tool, call.args)
            result = episode.finish(compiled.task.reference_solution.reply)
        tripped = {m.id for m in result.minefields if m.tripped}
        assert mine.id in tripped, f"minefield {mine.id} did not trip"
        assert result.reward == 0.0 and not result.passed


@pytest.mark.parametrize("path", [p for p in FILES if LIBRARY.load(p).task.user is not None],
                         ids=[i for p, i in zip(FILES, IDS, strict=True) if LIBRARY.load(p).task.user is not None])
def test_conversation_reference_passes_through_the_env_and_the_customer_ends_it(path: Path) -> None:
    compiled = LIBRARY.load(path)
    env = CoreCraftEnv(task=compiled.task, split=compiled.split or "train")
    env.reset(seed=0)
    agent = ReferenceAgent(compiled.task)
    done, info = False, {}
    while not done:
        _, reward, terminated, truncated, info = env.step(agent.act(env.messages, []))
        done = terminated or truncated
    assert terminated and info["ended_by_user"] and info["passed"] and reward == 1.0
    assert info["user_turns"] == len(compiled.task.reference_solution.turns or [None])


def test_test_split_carries_the_canary_and_is_not_loaded_by_default() -> None:
    for path in LIBRARY.files("test"):
        assert CANARY in path.read_text(encoding="utf-8")
    assert all(p.parent.name != "test" for p in LIBRARY.files())
