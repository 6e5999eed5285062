"""Shared fixtures: a private template cache per test session, the tiny world, a tool context."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("CORECRAFT_CACHE_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "corecraft-test-cache"))

from corecraft.tools import ToolContext
from corecraft.world.store import World


@pytest.fixture
def world() -> Iterator[World]:
    """A fresh copy of the tiny world."""
    w = World.open("tiny")
    yield w
    w.close()


@pytest.fixture
def ctx(world: World) -> ToolContext:
    """Tools acting as the tiny world's first tier-1 support agent."""
    return ToolContext(world=world, actor_id=world.first_employee("Support Agent I"))
