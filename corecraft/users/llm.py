"""The LLM customer: an OpenAI-compatible model plays the task's ``user`` profile.

Configuration is plain data (:class:`UserConfig`, like the judge's): model, base URL, the *name* of
the key's environment variable, temperature, seed, timeout and retries, so vLLM, SGLang or any
OpenAI-compatible server works and envs stay picklable. The model sees a system prompt built from
the profile (persona, held-back facts, goal, limits, stop rule) and the conversation with roles
turned around (the agent speaks as ``user``); never the rubric, the reference or tool output.
Answers are cached in a SQLite file keyed by model, temperature, seed and the whole prompt, so a
run replays without requests. A failure (unreachable, refused, empty answers after the retries) is
a :class:`~corecraft.users.base.UserReply` with ``error`` set, never a made-up message.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field

from corecraft.grading.transcript import DialogueTurn
from corecraft.paths import cache_dir
from corecraft.tasks.model import UserProfile
from corecraft.text_cache import TextCache
from corecraft.users.base import STOP, UserReply


class UserConfig(BaseModel):
    """Where and how to reach the model that plays the customer. Plain data."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(description="Model name as the server knows it.")
    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint; None: the client's default.")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="Name of the environment variable with the key.")
    temperature: float = Field(default=0.7, ge=0, le=2)
    seed: int | None = Field(default=None, description="Sampling seed; None: the episode's reset seed, so trials "
                                                       "of one task differ the way pass^k needs.")
    timeout: float = Field(default=60.0, gt=0, description="Seconds per request.")
    retries: int = Field(default=2, ge=0, le=10, description="Retries after a failed or empty answer.")
    cache_path: str | None = Field(default=None, description="Reply cache file; default under the cache dir.")


PROMPT = """You are playing a customer in a chat with a support agent of CoreCraft Computers, a PC-components \
retailer. Stay in character and write only your next chat message, in the first person, briefly, as a real \
customer would.

Who you are: {persona}

What you want: {goal}

Facts you know. Do not volunteer them; give one only when the agent asks for it:
{facts}

Your limits:
{limits}

When to end: {stop_rule} To end the conversation, write your last message and finish it with {stop}. Never \
invent facts you were not given (say you don't know), never act as the agent, and never write {stop} before \
you are done."""


def system_prompt(profile: UserProfile) -> str:
    """The LLM customer's instructions: only what the profile says (no rubric, reference or tool output)."""
    facts = "\n".join(f"- {k.replace('_', ' ')}: {v}" for k, v in profile.facts.items()) or "- (none)"
    limits = "\n".join(f"- {limit}" for limit in profile.limits) or "- (none stated)"
    return PROMPT.format(persona=profile.persona, goal=profile.goal, facts=facts, limits=limits,
                         stop_rule=profile.stop_rule, stop=STOP)


def chat_messages(profile: UserProfile, opening: str, dialogue: Sequence[DialogueTurn]) -> list[dict[str, str]]:
    """The request to the model: its instructions, its opening message, then the dialogue with roles turned
    around (the agent is the model's ``user``)."""
    out = [{"role": "system", "content": system_prompt(profile)}, {"role": "assistant", "content": opening}]
    out += [{"role": "user" if t.role == "agent" else "assistant", "content": t.text} for t in dialogue]
    return out


def parse(raw: str) -> UserReply:
    """The customer's message from the model's raw answer; the stop marker is taken out of the text."""
    stop = STOP in raw
    return UserReply(raw.replace(STOP, "").strip(), stop=stop)


class LLMUser:
    """A customer played by a model through the official ``openai`` client."""

    def __init__(self, profile: UserProfile, config: UserConfig, seed: int) -> None:
        self.profile, self.config, self.seed = profile, config, seed
        self.cache = TextCache(Path(config.cache_path) if config.cache_path else cache_dir() / "users.sqlite", "reply")

    def describe(self) -> dict[str, Any]:
        return {"simulator": "llm", "model": self.config.model, "temperature": self.config.temperature,
                "seed": self.seed}

    def cache_key(self, messages: list[dict[str, str]]) -> str:
        payload = json.dumps([self.config.model, self.config.temperature, self.seed, messages], sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()

    def reply(self, opening: str, dialogue: Sequence[DialogueTurn]) -> UserReply:
        messages = chat_messages(self.profile, opening, dialogue)
        key = self.cache_key(messages)
        cached = self.cache.get(key)
        if cached is not None:
            return parse(cached)
        key_value = os.environ.get(self.config.api_key_env)
        if not key_value:
            return UserReply(error=f"user simulator: environment variable {self.config.api_key_env} is not set")
        client = openai.OpenAI(api_key=key_value, base_url=self.config.base_url, timeout=self.config.timeout,
                               max_retries=self.config.retries)
        last = "no answer"
        with client:
            for attempt in range(self.config.retries + 1):
                try:
                    response = client.chat.completions.create(
                        model=self.config.model, messages=messages,  # type: ignore[arg-type]
                        temperature=self.config.temperature, seed=self.seed)
                except openai.OpenAIError as exc:  # timeouts, 4xx/5xx after the client's own retries
                    return UserReply(error=f"user simulator unreachable: {type(exc).__name__}: {exc}")
                choice = response.choices[0] if response.choices else None
                raw = (choice.message.content or "") if choice else ""
                answer = parse(raw)
                if answer.text or answer.stop:
                    self.cache.put(key, raw)
                    return answer
                last = f"empty answer from the user simulator (attempt {attempt + 1})"
        return UserReply(error=last)
