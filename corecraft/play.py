"""Play a task by hand, as the agent sees it: one action per command, the episode kept on disk.

A :class:`PlaySession` is a pickled :class:`~corecraft.env.core.CoreCraftEnv` in a file: each
command loads it, takes one action through ``env.step`` (so the player sees exactly the env's
messages and tools, nothing else) and saves it again. When the episode ends, the grade is written
beside the session (``<session>.grade.json``) and not shown, so a blind player can play a task
without learning its rubric; the author reads the grade afterwards.
"""

from __future__ import annotations

import json
import os
import pickle
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corecraft.env.core import DEFAULT_MAX_STEPS, CoreCraftEnv


class PlayError(ValueError):
    """A play command that cannot run (no session, a finished episode, unreadable arguments)."""


@dataclass
class PlaySession:
    """One episode being played, saved at ``path``."""

    path: Path
    env: CoreCraftEnv

    @classmethod
    def start(cls, path: Path, task_id: str, split: str = "train",
              max_steps: int = DEFAULT_MAX_STEPS) -> tuple[PlaySession, list[dict[str, Any]]]:
        """A new session on ``task_id`` (overwrites ``path``); returns it with the opening messages."""
        env = CoreCraftEnv(task_id=task_id, split=split, max_steps=max_steps)
        opening, _ = env.reset(seed=0)
        session = cls(path, env)
        session.grade_path.unlink(missing_ok=True)
        session.save()
        return session, opening

    @classmethod
    def load(cls, path: Path) -> PlaySession:
        if not path.is_file():
            raise PlayError(f"no play session at {path}: start one with `corecraft play start TASK --session {path}`")
        with path.open("rb") as handle:
            env = pickle.load(handle)
        if not isinstance(env, CoreCraftEnv):
            raise PlayError(f"{path} is not a play session")
        return cls(path, env)

    @property
    def grade_path(self) -> Path:
        return self.path.with_name(self.path.name + ".grade.json")

    @property
    def over(self) -> bool:
        return self.env.done

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        part = self.path.with_name(self.path.name + ".part")
        part.write_bytes(pickle.dumps(self.env))
        os.replace(part, self.path)

    def tools(self) -> list[dict[str, Any]]:
        """The OpenAI function schemas the agent is given."""
        if self.env.episode is None:
            raise PlayError("the session has no episode")
        return self.env.episode.toolkit.schemas(self.env.episode.tool_names)

    def act(self, action: dict[str, Any] | str) -> list[dict[str, Any]]:
        """Take one action (a tool call, or the final reply text); returns the messages the env added."""
        if self.over:
            raise PlayError("this episode is over; start a new session")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no judge here: judge criteria are reported ungraded in the grade file
            added, _reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self.grade_path.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        self.save()
        return added

    def call(self, tool: str, arguments: str) -> list[dict[str, Any]]:
        """One tool call with JSON arguments."""
        try:
            args = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            raise PlayError(f"--args is not valid JSON: {exc}") from None
        step = self.env.steps + 1
        return self.act({"id": f"play_{step}", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}})

    def grade(self) -> dict[str, Any]:
        if not self.grade_path.is_file():
            raise PlayError("the episode has not ended yet: send the final reply with `corecraft play reply`")
        return dict(json.loads(self.grade_path.read_text(encoding="utf-8")))
