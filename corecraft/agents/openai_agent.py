"""A tool-calling agent loop through the official ``openai`` client (any compatible server)."""

from __future__ import annotations

import os
from typing import Any

import openai

from corecraft.tasks.model import Task


class OpenAIAgent:
    """Sends the conversation and the tool schemas; returns the assistant message as the action."""

    name = "openai"

    def __init__(self, task: Task, seed: int = 0, *, model: str, base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", temperature: float = 0.0, timeout: float = 120.0) -> None:
        self.model, self.temperature, self.seed = model, temperature, seed
        self.client = openai.OpenAI(api_key=os.environ.get(api_key_env) or "not-set", base_url=base_url,
                                    timeout=timeout, max_retries=2)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        response = self.client.chat.completions.create(
            model=self.model, messages=messages, tools=tools, temperature=self.temperature,  # type: ignore[arg-type]
        )
        return response.choices[0].message
