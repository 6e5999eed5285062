"""Every task in the library proves itself (``corecraft tasks check``): valid file, solvable by its
reference solution, failed by an agent that does nothing, every minefield trips on its trigger, and
its facts are locked as verified; conversation references also pass through the env."""

from __future__ import annotations

from pathlib import Path

import pytest

from corecraft.agents.baselines import ReferenceAgent
from corecraft.domain import default_domain
from corecraft.env.core import CoreCraftEnv
from corecraft.tasks.check import check_task
from corecraft.tasks.loader import CANARY
from corecraft.tasks.model import SetupInsert
from corecraft.world.lint import HOME_AREA_CODE_SHARE

DOMAIN = default_domain()
LIBRARY = DOMAIN.tasks
FILES = [p for split in ("train", "dev", "test") for p in LIBRARY.files(split)]
IDS = [f"{p.parent.name}/{p.stem}" for p in FILES]

pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_task_file_checks_clean(path: Path) -> None:
    assert [str(p) for p in check_task(path, DOMAIN, replay=False)] == []


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_task_proves_itself_in_its_world(path: Path) -> None:
    """Setup and reference replay cleanly; the reference meets every deterministic criterion and trips no
    minefield; doing nothing fails; every minefield trips on its trigger (``check_task``'s proof)."""
    assert [str(p) for p in check_task(path, DOMAIN)] == []


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


def test_setup_customers_mostly_carry_their_home_citys_area_code() -> None:
    """As the world's customers do (lint's customer_phones): at most a fifth kept the number of a state they moved
    from. Blind players read a queue of local customers with phones from across the country as made up."""
    fidelity = DOMAIN.seeds.fidelity
    phoned = [step.row for path in FILES for step in LIBRARY.load(path).task.setup
              if isinstance(step, SetupInsert) and step.insert == "Customer" and step.row.get("phone")]
    homes = [next((a for a in row["addresses"] if a["label"] == "home"), row["addresses"][0]) for row in phoned]
    away = [row["id"] for row, home in zip(phoned, homes, strict=True)
            if int(str(row["phone"])[1:4]) not in fidelity.area_codes(home["city"], home["state"])]
    assert len(away) <= (1 - HOME_AREA_CODE_SHARE) * len(phoned), (len(away), len(phoned))


def _rundown(path: Path) -> bool:
    return any(c.id == "rundown_total" for c in LIBRARY.load(path).task.rubric)


@pytest.mark.parametrize("path", [p for p in FILES if _rundown(p)], ids=[i for p, i in zip(FILES, IDS, strict=True)
                                                                          if _rundown(p)])
def test_a_queue_rundowns_total_is_the_sum_of_the_refunds_its_reference_issues(path: Path) -> None:
    """The replay proves each refund and the reply's total separately; only this ties them (a queue once asked
    for a total $70 above its refunds)."""
    task = LIBRARY.load(path).task
    issued = sum(call.args["amount"] for call in task.reference_solution.calls if call.tool == "create_refund")
    total, = (c for c in task.rubric if c.id == "rundown_total")
    assert [round(n.value, 2) for n in total.labelled] == [round(issued, 2)]
