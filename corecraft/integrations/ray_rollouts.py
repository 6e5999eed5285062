"""GRPO groups run across Ray actors: ``rollouts(tasks, policy, n, num_workers)``.

Needs the ``corecraft[ray]`` extra; import it as ``corecraft.integrations.ray_rollouts`` (a module
name that cannot shadow the ``ray`` package). Each actor is its own process with its own envs and
its own :func:`corecraft.default_domain` (template store, reusable episode connections), and runs whole
groups with :func:`corecraft.run_group`, so the records are exactly those of
``[run_group(task_id, policy, n, seed=seed, **env_kwargs) for task_id in tasks]``, in task order.

The policy is a plain callable ``policy(messages, tools) -> action``, pickled to the actors with
cloudpickle (Ray does that). Functions defined in a script or inside a function travel by value;
those of an importable module travel by reference and need that module on the workers. A policy
that calls a model server should create its client lazily inside the actor (on first call), not
hold one when it is pickled. Usage and clusters: docs/scale-with-ray.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from corecraft.env.group import GroupResult, Policy, make_group, run_group

try:
    import ray
    from ray.util import ActorPool
except ImportError as exc:  # the optional extra is missing
    raise ImportError("corecraft.integrations.ray_rollouts needs Ray: pip install 'corecraft[ray]'") from exc


class RolloutWorker:
    """The work of one actor: whole groups, in this process, with its own envs and template cache."""

    def __init__(self, policy: Policy, env_kwargs: dict[str, Any]) -> None:
        self.policy = policy
        self.env_kwargs = env_kwargs

    def warm(self, task_ids: list[str]) -> int:
        """Build the start worlds of ``task_ids`` in this process (one reset each); returns how many."""
        for task_id in task_ids:
            env = make_group(task_id, 1, **self.env_kwargs)[0]
            env.reset(seed=0)
            env.close()
        return len(task_ids)

    def run(self, task_ids: list[str], n: int, seed: int, policy: Policy | None = None) -> list[GroupResult]:
        """``run_group`` for each task, in order, with ``policy`` (default: the actor's own)."""
        acting = self.policy if policy is None else policy
        return [run_group(task_id, acting, n, seed=seed, **self.env_kwargs) for task_id in task_ids]

    def run_numbered(self, number: int, task_ids: list[str], n: int, seed: int,
                     policy: Policy | None = None) -> tuple[int, list[GroupResult]]:
        """:meth:`run`, returned beside ``number`` (chunks finish out of order; the pool puts them back)."""
        return number, self.run(task_ids, n, seed, policy)

    def cpu_seconds(self) -> float:
        """CPU time this actor's process has used (benchmarks set it beside wall time)."""
        return time.process_time()


def _checked_ids(tasks: Sequence[str], n: int, env_kwargs: dict[str, Any], chunk_size: int | None = None,
                 known: set[str] | None = None) -> list[str]:
    """The task ids, checked in this process before any work is sent: known, not held out, valid arguments.
    Ids in ``known`` (checked before with the same ``env_kwargs``) are not checked again; the others are added."""
    if isinstance(tasks, str):
        raise TypeError("tasks must be a sequence of task ids, not one id: pass [task_id]")
    if n < 1:
        raise ValueError("a group needs at least one rollout")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    ids = list(tasks)
    for task_id in dict.fromkeys(ids):
        if known is None or task_id not in known:
            make_group(task_id, 1, **env_kwargs)[0].close()  # refuses unknown and test-split tasks, bad kwargs
    if known is not None:
        known.update(ids)
    return ids


def _check_policy(policy: object) -> None:
    if not callable(policy):
        raise TypeError(f"policy must be callable as policy(messages, tools), not {type(policy).__name__}")


class RolloutPool:
    """``num_workers`` Ray actors holding one policy; reuse it across training steps to keep warm caches.

    Ray is started on first use if it is not running (``ray.init()`` first to choose a cluster).
    Each actor reserves ``num_cpus`` CPUs. ``env_kwargs`` go to every env (``max_steps``, ``judge``
    as plain data, ``world``…). Close it (or use it as a context manager) to free the actors.
    """

    def __init__(self, policy: Policy, num_workers: int = 2, *, num_cpus: float = 1, **env_kwargs: Any) -> None:
        if num_workers < 1:
            raise ValueError("num_workers must be at least 1")
        _check_policy(policy)
        self.env_kwargs = env_kwargs
        # Ray's stubs cannot type an actor handle's ``method.remote``: handles are kept as Any.
        actor: Any = ray.remote(num_cpus=num_cpus)(RolloutWorker)
        shared = ray.put(policy)  # pickled once, resolved by each actor's constructor
        self.actors: list[Any] = [actor.remote(shared, env_kwargs) for _ in range(num_workers)]
        self._checked: set[str] = set()
        """Task ids already checked with this pool's ``env_kwargs`` (a training loop runs the same ones often)."""

    def warm(self, tasks: Sequence[str]) -> None:
        """Build the start worlds of ``tasks`` in every actor (each has its own cache); waits until done."""
        ids = _checked_ids(tasks, 1, self.env_kwargs, known=self._checked)
        ray.get([a.warm.remote(ids) for a in self.actors])

    def run(self, tasks: Sequence[str], n: int, *, seed: int = 0, chunk_size: int | None = None,
            policy: Policy | None = None) -> list[GroupResult]:
        """One :class:`GroupResult` per task, in order; rollout ``i`` of every group is reset with ``seed + i``.

        Tasks go to actors in chunks of ``chunk_size`` groups (default: about eight chunks per actor), the
        next chunk to whichever actor finishes first, so no actor waits on a slower one's earlier chunk.
        ``policy`` replaces the pool's for this call only (e.g. one pointing at new weights); the
        actors and their caches stay. A policy's exception is raised here and leaves the pool usable.
        """
        ids = _checked_ids(tasks, n, self.env_kwargs, chunk_size, self._checked)
        if policy is not None:
            _check_policy(policy)
        if not self.actors:
            raise RuntimeError("this RolloutPool is closed")
        size = chunk_size or max(1, math.ceil(len(ids) / (8 * len(self.actors))))
        chunks = [ids[i:i + size] for i in range(0, len(ids), size)]
        shared = None if policy is None else ray.put(policy)
        finished = ActorPool(self.actors).map_unordered(  # the next chunk to the first free actor
            lambda actor, item: actor.run_numbered.remote(item[0], item[1], n, seed, shared), list(enumerate(chunks)))
        done = dict(finished)  # a policy's exception is raised here
        return [result for k in range(len(chunks)) for result in done[k]]

    def close(self) -> None:
        """End the actors (their processes and caches)."""
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []

    def __enter__(self) -> RolloutPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def rollouts(tasks: Sequence[str], policy: Policy, n: int, num_workers: int = 2, *, seed: int = 0,
             chunk_size: int | None = None, **env_kwargs: Any) -> list[GroupResult]:
    """``n`` rollouts of each task by ``policy`` across ``num_workers`` Ray actors: one GroupResult per task, in order.

    The same records as ``[run_group(t, policy, n, seed=seed, **env_kwargs) for t in tasks]``. Tasks
    are checked before Ray is touched (unknown ids and held-out test tasks are refused). For a
    training loop, keep a :class:`RolloutPool` instead: this makes and ends one each call.
    """
    ids = _checked_ids(tasks, n, env_kwargs, chunk_size)
    with RolloutPool(policy, num_workers, **env_kwargs) as pool:
        return pool.run(ids, n, seed=seed, chunk_size=chunk_size)
