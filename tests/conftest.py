"""Shared fixtures: a private template cache per test session, the domain, the tiny world, a tool context.

Unless the caller names a cache folder (``$CORECRAFT_CACHE_DIR``, as ``.ci/run`` does), the
session gets a fresh temporary one, shared by its xdist workers (they inherit the environment)
and removed when the session ends.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

if "CORECRAFT_CACHE_DIR" not in os.environ:
    _private = tempfile.mkdtemp(prefix="corecraft-test-cache-")
    os.environ["CORECRAFT_CACHE_DIR"] = _private
    atexit.register(shutil.rmtree, _private, ignore_errors=True)

from corecraft.domain import Domain, default_domain
from corecraft.tools import ToolContext, Toolkit
from corecraft.world.store import World


@pytest.fixture(scope="session")
def domain() -> Domain:
    """The default domain (shipped content, the session's cache folder)."""
    return default_domain()


@pytest.fixture(scope="session")
def toolkit(domain: Domain) -> Toolkit:
    return domain.toolkit


@pytest.fixture
def world(domain: Domain) -> Iterator[World]:
    """A fresh copy of the tiny world."""
    w = domain.store.open("tiny")
    yield w
    w.close()


@pytest.fixture
def ctx(world: World, toolkit: Toolkit) -> ToolContext:
    """Tools acting as the tiny world's first tier-1 support agent."""
    return toolkit.context(world, world.first_employee("Support Agent I"))
