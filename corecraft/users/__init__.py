"""Simulated customers for conversation tasks (a task with a ``user`` block).

Two simulators behind one interface (:class:`~corecraft.users.base.UserSimulator`): the
deterministic :class:`~corecraft.users.scripted.ScriptedUser`, which follows the task's rules and
needs no model, and :class:`~corecraft.users.llm.LLMUser`, an OpenAI-compatible model configured as
plain data (:class:`~corecraft.users.llm.UserConfig`) with a replay cache. :func:`make_user` picks one.
"""

from __future__ import annotations

from corecraft.tasks.model import UserProfile
from corecraft.users.base import STOP, UserReply, UserSimulator
from corecraft.users.llm import LLMUser, UserConfig
from corecraft.users.scripted import ScriptedUser

__all__ = ["STOP", "LLMUser", "ScriptedUser", "UserConfig", "UserReply", "UserSimulator", "make_user"]


def make_user(profile: UserProfile, config: UserConfig | None = None, seed: int = 0) -> UserSimulator:
    """The scripted customer of ``profile``, or with ``config`` an LLM playing it (seeded with
    ``config.seed``, else ``seed``, the episode's reset seed)."""
    if config is None:
        return ScriptedUser(profile)
    return LLMUser(profile, config, seed if config.seed is None else config.seed)
