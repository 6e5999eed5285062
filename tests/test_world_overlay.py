"""Episode worlds as transactions over a shared template file: reused connections never leak one episode
into the next, the template file is never written, transactions belong to the world, and a failed setup
leaves the pool usable. (The change-log diff against a full diff: tests/test_grading.py.)"""

from __future__ import annotations

import functools
import hashlib
import pickle
import sqlite3
from typing import Any

import gymnasium
import pytest

import corecraft
from corecraft.domain import default_domain
from corecraft.grading.diff import world_diff
from corecraft.tasks.model import Task
from corecraft.tasks.setup import SetupError
from corecraft.world import db
from corecraft.world.store import World

pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")

PRIORITY = "SELECT priority FROM supportticket WHERE id = ?"


@functools.cache
def ticket() -> str:
    """The tiny world's latest resolved ticket of normal priority (read from the world, so a generator change that
    renumbers tickets does not break the probe)."""
    world = default_domain().store.open("tiny")
    try:
        return str(world.conn.execute("SELECT id FROM supportticket WHERE status = 'resolved' AND priority = 'normal' "
                                      "ORDER BY created_at DESC LIMIT 1").fetchone()[0])
    finally:
        world.close()


def bump() -> tuple[str, dict[str, str]]:
    return "update_ticket_status", {"ticket_id": ticket(), "priority": "high"}


def set_low() -> list[dict[str, Any]]:
    return [{"update": "SupportTicket", "id": ticket(), "set": {"priority": "low"}}]


def _task(setup: list[dict[str, Any]]) -> Task:
    return Task.model_validate({
        "id": "overlay_probe", "family": "overlay_probe", "category": "reasoning", "difficulty": "easy",
        "world": {"recipe": "tiny"}, "prompt": "A probe.", "setup": setup,
        "reference_solution": {"calls": [], "reply": "done"},
        "rubric": [{"id": "x", "kind": "db_diff", "allow": {}}], "reply_hygiene": False,
    })


def test_consecutive_episodes_on_one_reused_connection_see_none_of_each_others_writes() -> None:
    domain = default_domain()
    clean = domain.store.open("tiny")
    start_hash = clean.hash()
    clean.close()
    seen = []
    for setup, expected in [([], "normal"), ([], "normal"), (set_low(), "low"), (set_low(), "low"), ([], "normal")]:
        with domain.episode(_task(setup)) as episode:
            conn = episode.world.conn
            seen.append(conn)
            assert conn.execute(PRIORITY, (ticket(),)).fetchone() == (expected,)
            assert world_diff(conn) == {}
            assert "error" not in episode.call(*bump())
            assert conn.execute(PRIORITY, (ticket(),)).fetchone() == ("high",)
            assert set(world_diff(conn)) == {"SupportTicket"}
    assert all(conn is seen[0] for conn in seen)  # one connection served every episode
    again = domain.store.open("tiny")
    try:
        assert again.conn is seen[0] and again.hash() == start_hash
    finally:
        again.close()


def test_two_envs_reset_in_turn_keep_their_own_worlds() -> None:
    task = corecraft.tasks("train")[0]
    envs = [gymnasium.make("CoreCraft-v0", task_id=task.id) for _ in range(2)]
    for env in envs:
        env.reset(seed=0)
    first, second = (e.unwrapped.episode.world for e in envs)
    assert first.conn is not second.conn
    first.conn.execute("UPDATE customer SET name = 'Only In The First' WHERE id = (SELECT min(id) FROM customer)")
    assert second.conn.execute("SELECT count(*) FROM customer WHERE name = 'Only In The First'").fetchone() == (0,)
    envs[0].reset(seed=1)
    assert envs[0].unwrapped.episode.world.conn.execute(
        "SELECT count(*) FROM customer WHERE name = 'Only In The First'").fetchone() == (0,)
    for env in envs:
        env.close()


def test_the_template_file_is_never_written_and_transactions_are_the_worlds_own() -> None:
    store = default_domain().store
    path = store.template_file("tiny")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    world = store.open("tiny")
    try:
        # far more changed pages than the page cache holds: they must stay in memory, never spill to the file
        world.conn.execute("UPDATE slackmessage SET text = text || printf('%.3000c', 'x')")
        world.conn.execute("UPDATE customer SET name = upper(name)")
        for statement in ("COMMIT", "ROLLBACK", "END", "RELEASE episode", "ROLLBACK TO episode"):
            with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
                world.conn.execute(statement)
        with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            world.conn.executescript("SELECT 1")  # Python commits before a script
        with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            world.conn.commit()
        twin = pickle.loads(pickle.dumps(world))
        assert twin.hash() == world.hash()
        twin.close()
    finally:
        world.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    fresh = store.open("tiny")
    try:
        assert fresh.conn.execute("SELECT count(*) FROM customer WHERE name = upper(name)").fetchone()[0] < 5
    finally:
        fresh.close()


def test_an_orm_commit_stays_inside_the_episode() -> None:
    from corecraft.world.models import Customer

    store = default_domain().store
    world = store.open("tiny")
    customer_id = world.conn.execute("SELECT min(id) FROM customer").fetchone()[0]
    session = world.session()
    customer = session.get(Customer, customer_id)
    assert customer is not None
    customer.name = "Renamed Through The ORM"
    session.add(customer)
    session.commit()
    assert db.fetch(world.conn, Customer, customer_id, world.tz)["name"] == "Renamed Through The ORM"  # type: ignore[index]
    assert set(world_diff(world.conn)) == {"Customer"}
    world.close()
    later = store.open("tiny")
    try:
        assert db.fetch(later.conn, Customer, customer_id, later.tz)["name"] != "Renamed Through The ORM"  # type: ignore[index]
    finally:
        later.close()


def test_a_failing_setup_is_a_clear_error_and_leaves_the_pool_usable() -> None:
    domain = default_domain()
    with pytest.raises(SetupError, match="no SupportTicket with id 'tick-nope'"):
        domain.episode(_task([{"update": "SupportTicket", "id": "tick-nope", "set": {"priority": "low"}}]))
    with domain.episode(_task(set_low())) as episode:
        assert episode.world.conn.execute(PRIORITY, (ticket(),)).fetchone() == ("low",)
        assert world_diff(episode.world.conn) == {}


def test_a_closed_world_refuses_use() -> None:
    world = default_domain().store.open("tiny")
    world.close()
    with pytest.raises(RuntimeError, match="closed"):
        world.conn.execute("SELECT 1")


def test_a_world_from_bytes_runs_its_episode_in_memory() -> None:
    data = default_domain().store.template("tiny").data
    world = World.from_bytes(data)
    try:
        world.conn.execute("UPDATE customer SET name = 'Probe' WHERE id = (SELECT min(id) FROM customer)")
        twin = pickle.loads(pickle.dumps(world))
        assert world_diff(twin.conn) == world_diff(world.conn) and set(world_diff(world.conn)) == {"Customer"}
        twin.close()
    finally:
        world.close()
