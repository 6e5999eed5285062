"""The LLM judge, reached through the official ``openai`` client (any OpenAI-compatible server).

Configuration is plain data (:class:`JudgeConfig`): model, base URL and the *name* of the
environment variable holding the key, never a client object. Verdicts are structured JSON with
the reason before the verdict (JSON-schema response format where the server supports it,
tolerant parsing where not), temperature 0, bounded retries and timeouts, one call per
criterion run concurrently, and a persistent SQLite verdict cache keyed by model, prompt
version, criterion and evidence (safe for several processes). A failure is reported as
``judge_error``, never as a silent pass or fail.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import openai
from pydantic import BaseModel, ConfigDict, Field

from corecraft.grading.transcript import Transcript
from corecraft.paths import cache_dir, content
from corecraft.tasks.model import LlmJudge
from corecraft.text_cache import TextCache

VERDICT_SCHEMA = {
    "name": "verdict",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {"reason": {"type": "string"}, "verdict": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["reason", "verdict"],
        "additionalProperties": False,
    },
}


class JudgeConfig(BaseModel):
    """Where and how to reach the judge. Plain data, so envs stay picklable and copyable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(description="Model name as the server knows it.")
    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint; None: the client's default.")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="Name of the environment variable with the key.")
    temperature: float = 0.0
    timeout: float = Field(default=60.0, gt=0, description="Seconds per request.")
    max_retries: int = Field(default=2, ge=0, le=10, description="Retries after a failed or malformed answer.")
    concurrency: int = Field(default=8, ge=1, le=64)
    cache_path: str | None = Field(default=None, description="Verdict cache file; default under the cache dir.")


@dataclass(frozen=True)
class Verdict:
    status: Literal["met", "not_met", "judge_error"]
    reason: str


def prompt_template() -> str:
    """The judge prompt template shipped in ``rubrics/judge_prompt.md``."""
    return content("rubrics", "judge_prompt.md").read_text(encoding="utf-8")


def prompt_version(template: str) -> str:
    """Changes whenever the prompt template changes, so stale cached verdicts are not reused."""
    return hashlib.sha256(template.encode()).hexdigest()[:12]


def reply_text(criterion: LlmJudge, transcript: Transcript) -> str:
    """The agent's side that the judge reads, as ``criterion.scope`` names it."""
    if criterion.scope == "any_agent_message":
        said = "\n".join(f"[{i}] {text}" for i, text in enumerate(transcript.agent_messages, 1)) or "(none)"
        return f"MESSAGES THE AGENT SENT THE REQUESTER (answer 'yes' if any one of them qualifies):\n{said}"
    if criterion.scope == "dialogue" and transcript.dialogue:
        lines = "\n".join(f"{'AGENT' if t.role == 'agent' else 'CUSTOMER'}: {t.text}" for t in transcript.dialogue)
        return f"THE CONVERSATION AFTER THE CUSTOMER'S REQUEST, IN ORDER:\n{lines}"
    return f"FINAL REPLY TO THE REQUESTER:\n{transcript.reply or '(no reply)'}"


def evidence_text(criterion: LlmJudge, transcript: Transcript) -> str:
    """The part of the transcript the judge sees. Never the reference solution."""
    calls = "\n".join(f"- {c.name}({json.dumps(c.args, sort_keys=True)}) -> "
                      f"{'ERROR ' + json.dumps(c.result['error']) if not c.ok else 'ok'}" for c in transcript.calls)
    if criterion.evidence == "final_reply":
        return reply_text(criterion, transcript)
    if criterion.evidence == "tool_calls":
        return f"TOOL CALLS MADE, IN ORDER:\n{calls or '(none)'}"
    return f"TOOL CALLS MADE, IN ORDER:\n{calls or '(none)'}\n\n{reply_text(criterion, transcript)}"


def render_prompt(template: str, criterion: LlmJudge, evidence: str) -> str:
    examples = "\n".join(f"- {e}" for e in criterion.failure_examples) or "- (none given)"
    return template.format(question=criterion.question, pass_condition=criterion.pass_condition,
                                    failure_examples=examples, evidence=evidence)


def parse_verdict(text: str | None) -> Verdict | None:
    """A verdict from the judge's raw text, or None if it is malformed (then the call is retried)."""
    if not text:
        return None
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if not match:
        return None
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    verdict, reason = data.get("verdict"), data.get("reason")
    if not isinstance(reason, str) or len(reason.strip()) < 3:
        return None
    normal = str(verdict).strip().lower()
    if normal in ("yes", "met", "pass", "true"):
        return Verdict("met", reason.strip())
    if normal in ("no", "not_met", "fail", "false"):
        return Verdict("not_met", reason.strip())
    return None


def _cached_verdict(text: str | None) -> Verdict | None:
    """A verdict kept in the cache as ``[status, reason]`` JSON."""
    if text is None:
        return None
    status, reason = json.loads(text)
    return Verdict(status, reason)


class Judge:
    """Grades ``llm_judge`` criteria. Use :meth:`grade` (sync, threads) or :meth:`agrade` (async)."""

    def __init__(self, config: JudgeConfig, template: str | None = None) -> None:
        self.config = config
        self.template = prompt_template() if template is None else template
        self.prompt_version = prompt_version(self.template)
        self.cache = TextCache(Path(config.cache_path) if config.cache_path else cache_dir() / "judge.sqlite", "verdict")
        self._json_schema_ok = True

    def cache_key(self, criterion: LlmJudge, evidence: str) -> str:
        payload = json.dumps([self.config.model, self.prompt_version, criterion.model_dump(mode="json"), evidence],
                             sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()

    def _client(self) -> openai.AsyncOpenAI:
        key = os.environ.get(self.config.api_key_env)
        if not key:
            raise openai.OpenAIError(f"environment variable {self.config.api_key_env} is not set")
        return openai.AsyncOpenAI(api_key=key, base_url=self.config.base_url, timeout=self.config.timeout,
                                  max_retries=self.config.max_retries)

    async def _ask(self, client: openai.AsyncOpenAI, prompt: str) -> Verdict:
        last = "no answer"
        attempt = 0
        while attempt <= self.config.max_retries:
            kwargs: dict[str, Any] = {
                "model": self.config.model, "temperature": self.config.temperature,
                "messages": [{"role": "user", "content": prompt}],
            }
            if self._json_schema_ok:
                kwargs["response_format"] = {"type": "json_schema", "json_schema": VERDICT_SCHEMA}
            try:
                response = await client.chat.completions.create(**kwargs)
            except openai.BadRequestError as exc:
                if self._json_schema_ok and "response_format" in str(exc).lower():
                    self._json_schema_ok = False  # server lacks structured outputs: parse tolerantly;
                    continue  # the format fallback does not use up an attempt
                return Verdict("judge_error", f"judge rejected the request: {exc}")
            except openai.OpenAIError as exc:  # timeouts, 5xx and 429 after the client's own retries
                return Verdict("judge_error", f"judge unreachable: {type(exc).__name__}: {exc}")
            choice = response.choices[0] if response.choices else None
            verdict = parse_verdict(choice.message.content if choice else None)
            if verdict is not None:
                return verdict
            attempt += 1
            last = f"malformed judge answer (attempt {attempt}): {(choice.message.content if choice else '')!r:.120}"
        return Verdict("judge_error", last)

    async def agrade(self, criteria: Sequence[LlmJudge], transcript: Transcript) -> list[Verdict]:
        """Verdicts for ``criteria`` (cached ones make no request), concurrently."""
        evidence = [evidence_text(c, transcript) for c in criteria]
        keys = [self.cache_key(c, e) for c, e in zip(criteria, evidence, strict=True)]
        results: list[Verdict | None] = [_cached_verdict(self.cache.get(k)) for k in keys]
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            try:
                client = self._client()
            except openai.OpenAIError as exc:
                return [r or Verdict("judge_error", str(exc)) for r in results]
            limit = asyncio.Semaphore(self.config.concurrency)

            async def one(i: int) -> None:
                async with limit:
                    verdict = await self._ask(client, render_prompt(self.template, criteria[i], evidence[i]))
                results[i] = verdict
                if verdict.status != "judge_error":
                    self.cache.put(keys[i], json.dumps([verdict.status, verdict.reason]))

            async with client:
                await asyncio.gather(*(one(i) for i in todo))
        return [r for r in results if r is not None]

    def grade(self, criteria: Sequence[LlmJudge], transcript: Transcript) -> list[Verdict]:
        """The same as :meth:`agrade`, for synchronous callers (runs its own event loop)."""
        if not criteria:
            return []
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.agrade(criteria, transcript))
        from concurrent.futures import ThreadPoolExecutor  # called from inside a running loop

        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, self.agrade(criteria, transcript)).result()

