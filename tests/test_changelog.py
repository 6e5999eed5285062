"""The in-world change log: diffs read from it equal the full comparison of the two worlds.

The oracle is :func:`world_diff` given an equal copy of the start bytes (another object), which
the log does not vouch for, so the worlds are compared table by table in full.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
from collections.abc import Iterator

import pytest

from corecraft.episode import Episode
from corecraft.grading.diff import TableDiff, world_diff
from corecraft.tasks.loader import find_task
from corecraft.tools import ToolContext, call_tool
from corecraft.world import db, models
from corecraft.world.changelog import logged_changes, open_tracked, tracked_bytes
from corecraft.world.store import World, template_bytes


@pytest.fixture
def tracked() -> Iterator[World]:
    world = open_tracked("tiny", None, template_bytes("tiny"))
    yield world
    world.close()


def full_diff(conn: sqlite3.Connection, start: bytes) -> dict[str, TableDiff]:
    other = bytes(bytearray(start))
    assert other == start and other is not start
    assert logged_changes(conn, other) is None
    return world_diff(conn, other)


def assert_same_diff(conn: sqlite3.Connection, start: bytes) -> dict[str, TableDiff]:
    assert logged_changes(conn, start) is not None
    logged = world_diff(conn, start)
    assert logged == full_diff(conn, start)
    return logged


def _random_change(conn: sqlite3.Connection, rng: random.Random) -> None:
    """One random write: update, delete, insert, re-insert, rowid move, no-op, REPLACE or a new id (it may
    fail)."""
    model = rng.choice(models.ALL_TABLES)
    table, names = db.table(model), db.column_names(model)
    rows = conn.execute(f"SELECT rowid, id FROM {table} ORDER BY rowid").fetchall()
    if not rows:
        return
    rowid, row_id = rng.choice(rows)
    source = rng.choice(rows)[0]
    column = rng.choice([n for n in names if n != "id"])
    others = ", ".join(f'"{n}"' for n in names if n != "id")
    kind = rng.randrange(9)
    if kind == 0:
        conn.execute(f'UPDATE {table} SET "{column}" = (SELECT "{column}" FROM {table} WHERE rowid = ?) '
                     "WHERE rowid = ?", (source, rowid))
    elif kind == 1:
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
    elif kind == 2:
        conn.execute(f"INSERT INTO {table} (id, {others}) SELECT ?, {others} FROM {table} WHERE rowid = ?",
                     (f"{row_id}-copy{rng.randrange(10**6)}", rowid))
    elif kind == 3:  # the same id deleted and inserted again, under a new rowid
        saved = conn.execute(f"SELECT {others} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
        conn.execute(f"INSERT INTO {table} (id, {others}) VALUES ({', '.join('?' * len(names))})", (row_id, *saved))
    elif kind == 4:
        conn.execute(f"UPDATE {table} SET rowid = (SELECT max(rowid) + 1 FROM {table}) WHERE rowid = ?", (rowid,))
    elif kind == 5:
        conn.execute(f'UPDATE {table} SET "{column}" = "{column}" WHERE rowid = ?', (rowid,))
    elif kind == 6:
        conn.execute(f"INSERT OR REPLACE INTO {table} (id, {others}) SELECT ?, {others} FROM {table} "
                     "WHERE rowid = ?", (row_id, source))
    elif kind == 7:
        conn.execute(f"UPDATE {table} SET id = ? WHERE rowid = ?", (f"{row_id}-renamed", rowid))
    else:  # takes another row's id: REPLACE deletes that row
        conn.execute(f"UPDATE OR REPLACE {table} SET id = (SELECT id FROM {table} WHERE rowid = ?) WHERE rowid = ?",
                     (source, rowid))


@pytest.mark.parametrize("seed", range(30))
def test_random_writes_diff_the_same_from_the_log(tracked: World, seed: int) -> None:
    rng = random.Random(seed)
    conn, start = tracked.conn, template_bytes("tiny")
    for step in range(60):
        with contextlib.suppress(sqlite3.IntegrityError):  # a refused statement changes nothing, log included
            _random_change(conn, rng)
        if step % 10 == 9:
            assert_same_diff(conn, start)
    assert assert_same_diff(conn, start)


def test_a_rolled_back_savepoint_leaves_no_trace(tracked: World) -> None:
    conn, start = tracked.conn, template_bytes("tiny")
    conn.execute("SAVEPOINT attempt")
    conn.execute("UPDATE customer SET name = 'Changed' WHERE rowid = 1")
    conn.execute("DELETE FROM slackmessage WHERE rowid = 1")
    assert set(world_diff(conn, start)) == {"Customer", "SlackMessage"}
    conn.execute("ROLLBACK TO attempt")
    conn.execute("RELEASE attempt")
    assert logged_changes(conn, start) == {}
    assert world_diff(conn, start) == {} == full_diff(conn, start)


def test_changes_then_reverted_are_no_change(tracked: World) -> None:
    conn, start = tracked.conn, template_bytes("tiny")
    name = conn.execute("SELECT name FROM customer WHERE rowid = 2").fetchone()[0]
    conn.execute("UPDATE customer SET name = 'Someone Else' WHERE rowid = 2")
    conn.execute("UPDATE customer SET name = ? WHERE rowid = 2", (name,))
    assert logged_changes(conn, start) != {}
    assert assert_same_diff(conn, start) == {}


def test_tracking_changes_neither_the_content_nor_the_start_bytes() -> None:
    start = template_bytes("tiny")
    snapshot = bytes(start)
    world, plain = open_tracked("tiny", None, start), World.open("tiny")
    assert world.hash() == plain.hash()
    assert tracked_bytes(start) is tracked_bytes(start) and start == snapshot
    assert logged_changes(plain.conn, start) is None  # an untracked world: compared in full
    assert logged_changes(world.conn, template_bytes("tiny", 3)) is None  # another world's bytes
    world.close()
    plain.close()


def test_a_fork_carries_its_log(tracked: World) -> None:
    start = template_bytes("tiny")
    tracked.conn.execute("UPDATE payment SET status = 'failed' WHERE rowid = 3")
    fork = tracked.fork()
    fork.conn.execute("DELETE FROM slackmessage WHERE rowid = 2")
    assert set(assert_same_diff(fork.conn, start)) == {"Payment", "SlackMessage"}
    assert set(assert_same_diff(tracked.conn, start)) == {"Payment"}
    fork.close()


def test_an_episode_logs_its_tool_calls_and_grades_from_the_log() -> None:
    task = find_task("doa_cpu_refund_kayla")
    episode = Episode(task)
    try:
        assert logged_changes(episode.world.conn, episode.start) == {}
        for call in task.reference_solution.calls:
            assert "error" not in episode.call(call.tool, call.args)
        logged = assert_same_diff(episode.world.conn, episode.start)
        assert {"Refund", "Resolution"} <= set(logged)
        replay = World.open(task.world.recipe, task.world.seed, data=episode.start)  # untracked
        ctx = ToolContext(world=replay, actor_id=episode.actor)
        for call in task.reference_solution.calls:
            call_tool(ctx, call.tool, call.args)
        assert world_diff(replay.conn, episode.start) == logged
        assert replay.hash() == episode.world.hash()
        replay.close()
        assert episode.finish(task.reference_solution.reply).passed
    finally:
        episode.close()
