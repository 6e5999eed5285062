"""The LLM judge through the real ``openai`` client over HTTP, against a scripted local server.

The server (``http.server`` on 127.0.0.1, a free port, in a thread) implements
``POST /v1/chat/completions`` with OpenAI-shaped JSON, counts requests, records their bodies and
the most requests in flight at once, and answers from a per-test script: verdicts, malformed or
empty text, 400/429/500 errors, or a sleep longer than the client's timeout.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from scripted_chat_model import send_json

from corecraft.domain import default_domain
from corecraft.grading.judge import Judge, JudgeConfig, Verdict
from corecraft.grading.transcript import CallRecord, Transcript
from corecraft.tasks.model import LlmJudge, Task

KEY_ENV = "CORECRAFT_TEST_KEY"


@dataclass
class Reply:
    """One scripted answer: a chat completion with ``content``, or an error ``status`` with ``error``."""

    content: str | None = None
    status: int = 200
    error: str = ""
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def verdict(answer: str, reason: str = "The evidence shows it plainly.") -> Reply:
    return Reply(json.dumps({"reason": reason, "verdict": answer}))


class FakeJudgeServer:
    """Scripted replies first (in order), then ``respond(request_body)`` for every later request."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.respond: Callable[[dict[str, Any]], Reply] = lambda body: verdict("yes")
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str] = []
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.bodies.append(body)
                    fake.auth.append(self.headers.get("Authorization", ""))
                    reply = fake.script.pop(0) if fake.script else fake.respond(body)
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    time.sleep(reply.delay)
                    self._send(reply, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to send to
                finally:
                    with fake.lock:
                        fake.in_flight -= 1

            def _send(self, reply: Reply, body: dict[str, Any]) -> None:
                if self.path != "/v1/chat/completions":
                    reply = Reply(status=404, error=f"no route {self.path}")
                if reply.status == 200:
                    payload: dict[str, Any] = {
                        "id": f"chatcmpl-{len(fake.bodies)}", "object": "chat.completion", "created": 1757950000,
                        "model": body.get("model", ""),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": reply.content}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    }
                else:
                    payload = {"error": {"message": reply.error, "type": "invalid_request_error", "code": None}}
                send_json(self, payload, reply.status, reply.headers)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def requests(self) -> int:
        return len(self.bodies)


@pytest.fixture
def server() -> Iterator[FakeJudgeServer]:
    fake = FakeJudgeServer()
    fake.thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


@pytest.fixture
def config(server: FakeJudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> JudgeConfig:
    monkeypatch.setenv(KEY_ENV, "sk-test-123")
    return JudgeConfig(model="test-judge", base_url=f"http://127.0.0.1:{server.port}/v1", api_key_env=KEY_ENV,
                       timeout=0.4, max_retries=1, cache_path=str(tmp_path / "verdicts.sqlite"))


def criterion(n: int = 0, evidence: str = "final_reply") -> LlmJudge:
    return LlmJudge.model_validate({
        "id": f"judged_{n}", "kind": "llm_judge", "question": f"Question {n}: is the reply polite?",
        "pass_condition": "The reply greets the customer and thanks them.",
        "failure_examples": ["Refund done.", "Read the policy next time."], "evidence": evidence,
    })


TRANSCRIPT = Transcript(
    calls=[CallRecord("search_customers", {"email": "jesse.hall@yahoo.com"}, {"items": [], "total": 0}),
           CallRecord("create_refund", {"payment_id": "pay-1"}, {"error": {"type": "not_found", "message": "no"}})],
    reply="Hi Jesse, thanks for your patience: your refund is on its way.",
)


def ask(config: JudgeConfig, *criteria: LlmJudge) -> list[Verdict]:
    return Judge(config).grade(list(criteria or [criterion()]), TRANSCRIPT)


# -- verdicts -----------------------------------------------------------------------------------
def test_yes_is_met_and_the_request_is_well_formed(server: FakeJudgeServer, config: JudgeConfig) -> None:
    server.script = [verdict("yes", "It greets Jesse and thanks him.")]
    assert ask(config) == [Verdict("met", "It greets Jesse and thanks him.")]
    assert server.requests == 1 and server.auth == ["Bearer sk-test-123"]
    body = server.bodies[0]
    assert (body["model"], body["temperature"]) == ("test-judge", 0.0)
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["reason", "verdict"]
    prompt = body["messages"][0]["content"]
    for part in ("Question 0: is the reply polite?", "greets the customer and thanks them", "- Read the policy next time.",
                 "FINAL REPLY TO THE REQUESTER:\nHi Jesse, thanks"):
        assert part in prompt
    assert "create_refund" not in prompt  # final_reply evidence shows the reply only


def test_no_is_not_met(server: FakeJudgeServer, config: JudgeConfig) -> None:
    server.script = [verdict("no", "It never thanks the customer.")]
    assert ask(config) == [Verdict("not_met", "It never thanks the customer.")]


def test_tool_call_evidence_shows_calls_and_their_errors(server: FakeJudgeServer, config: JudgeConfig) -> None:
    ask(config, criterion(evidence="tool_calls"))
    prompt = server.bodies[0]["messages"][0]["content"]
    assert 'search_customers({"email": "jesse.hall@yahoo.com"}) -> ok' in prompt
    assert 'create_refund({"payment_id": "pay-1"}) -> ERROR' in prompt
    assert "Hi Jesse" not in prompt


def test_malformed_answer_is_retried_and_recovers(server: FakeJudgeServer, config: JudgeConfig) -> None:
    server.script = [Reply("I think the answer is yes."), Reply('{"verdict": "yes"}'), verdict("yes")]
    config = config.model_copy(update={"max_retries": 2})
    assert ask(config)[0].status == "met"
    assert server.requests == 3


def test_malformed_answers_exhaust_the_retries_into_a_judge_error(server: FakeJudgeServer, config: JudgeConfig) -> None:
    server.respond = lambda body: Reply('{"reason": "looks fine", "verdict": "maybe"}')
    [got] = ask(config)
    assert got.status == "judge_error" and "malformed judge answer (attempt 2)" in got.reason
    assert server.requests == 2


def test_server_without_json_schema_support_falls_back_to_tolerant_parsing(server: FakeJudgeServer,
                                                                            config: JudgeConfig) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        if "response_format" in body:
            return Reply(status=400, error="response_format of type json_schema is not supported by this server")
        return Reply('Sure! Here is my verdict:\n```json\n{"reason": "It never says thanks.", "verdict": "No"}\n```')

    server.respond = respond
    judge = Judge(config)
    assert judge.grade([criterion()], TRANSCRIPT) == [Verdict("not_met", "It never says thanks.")]
    assert ["response_format" in b for b in server.bodies] == [True, False]
    judge.grade([criterion(1)], TRANSCRIPT)  # the judge remembers: no second 400
    assert ["response_format" in b for b in server.bodies] == [True, False, False]


def test_format_fallback_does_not_use_up_the_only_attempt(server: FakeJudgeServer, config: JudgeConfig) -> None:
    """Regression: with max_retries=0 the 400 of a server without structured outputs used to end in
    judge_error "no answer"; the fallback request is not a retry."""
    def respond(body: dict[str, Any]) -> Reply:
        if "response_format" in body:
            return Reply(status=400, error="response_format is not supported")
        return Reply('{"reason": "It thanks the customer.", "verdict": "yes"}')

    server.respond = respond
    judge = Judge(config.model_copy(update={"max_retries": 0}))
    assert judge.grade([criterion()], TRANSCRIPT) == [Verdict("met", "It thanks the customer.")]
    assert server.requests == 2


def test_other_bad_requests_are_judge_errors(server: FakeJudgeServer, config: JudgeConfig) -> None:
    server.respond = lambda body: Reply(status=400, error="model test-judge does not exist")
    [got] = ask(config)
    assert got.status == "judge_error" and "judge rejected the request" in got.reason
    assert server.requests == 1


# -- transport failures -------------------------------------------------------------------------
def test_timeout_is_a_judge_error(server: FakeJudgeServer, config: JudgeConfig) -> None:
    server.respond = lambda body: Reply(delay=1.5, content="too late")
    started = time.perf_counter()
    [got] = ask(config)
    assert got.status == "judge_error" and "Timeout" in got.reason
    assert server.requests == 2  # the client's one retry
    assert time.perf_counter() - started < 1.5 + 1.0


def test_http_500_is_a_judge_error(server: FakeJudgeServer, config: JudgeConfig) -> None:
    server.respond = lambda body: Reply(status=500, error="upstream exploded", headers={"retry-after-ms": "10"})
    [got] = ask(config)
    assert got.status == "judge_error" and "InternalServerError" in got.reason
    assert server.requests == 2


def test_rate_limit_then_success_is_retried_by_the_client(server: FakeJudgeServer, config: JudgeConfig) -> None:
    server.script = [Reply(status=429, error="slow down", headers={"retry-after-ms": "20"}), verdict("yes")]
    assert ask(config)[0].status == "met"
    assert server.requests == 2


def test_empty_answer_is_a_judge_error_never_a_pass(server: FakeJudgeServer, config: JudgeConfig) -> None:
    server.respond = lambda body: Reply("")
    [got] = ask(config)
    assert got.status == "judge_error" and "malformed judge answer (attempt 2): ''" in got.reason
    assert server.requests == 2


def test_missing_key_is_a_judge_error_without_a_request(server: FakeJudgeServer, config: JudgeConfig,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    [got] = ask(config)
    assert got.status == "judge_error" and KEY_ENV in got.reason
    assert server.requests == 0


# -- the verdict cache --------------------------------------------------------------------------
def test_cache_hit_makes_no_request_on_regrading(server: FakeJudgeServer, config: JudgeConfig) -> None:
    first = ask(config)
    assert server.requests == 1
    assert ask(config) == first  # a new Judge on the same cache file
    assert server.requests == 1
    changed = Transcript(calls=TRANSCRIPT.calls, reply="Refund done.")
    Judge(config).grade([criterion()], changed)  # other evidence, other key
    assert server.requests == 2
    ask(config.model_copy(update={"model": "other-judge"}))  # other model, other key
    assert server.requests == 3


def test_judge_errors_are_not_cached(server: FakeJudgeServer, config: JudgeConfig) -> None:
    server.script = [Reply(""), Reply("")]
    assert ask(config)[0].status == "judge_error"
    assert ask(config)[0].status == "met"
    assert server.requests == 3


def test_cache_is_shared_safely_by_two_judges(server: FakeJudgeServer, config: JudgeConfig) -> None:
    server.respond = lambda body: Reply(delay=0.05, content=json.dumps({"reason": "as asked", "verdict": "yes"}))
    left, right = Judge(config), Judge(config)
    criteria = [criterion(n) for n in range(8)]
    out: dict[str, list[Verdict]] = {}
    threads = [threading.Thread(target=lambda j=j, name=name, part=part: out.__setitem__(name, j.grade(part, TRANSCRIPT)))
               for j, name, part in ((left, "left", criteria[:5]), (right, "right", criteria[3:]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [v.status for v in out["left"] + out["right"]] == ["met"] * 10
    asked = server.requests
    assert 8 <= asked <= 10  # the overlap may be asked twice while both run; never lost or corrupted
    assert [v.status for v in Judge(config).grade(criteria, TRANSCRIPT)] == ["met"] * 8
    assert server.requests == asked


# -- concurrency --------------------------------------------------------------------------------
def test_criteria_of_one_batch_are_graded_concurrently_in_order(server: FakeJudgeServer, config: JudgeConfig) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        n = int(body["messages"][0]["content"].split("Question ")[1].split(":")[0])
        return Reply(delay=0.3, content=json.dumps({"reason": f"criterion {n}", "verdict": "yes" if n % 2 else "no"}))

    server.respond = respond
    started = time.perf_counter()
    got = ask(config.model_copy(update={"timeout": 5.0}), *(criterion(n) for n in range(6)))
    took = time.perf_counter() - started
    assert got == [Verdict("met" if n % 2 else "not_met", f"criterion {n}") for n in range(6)]
    assert server.requests == 6 and server.max_in_flight >= 3
    assert took < 6 * 0.3


def test_concurrency_limit_is_respected(server: FakeJudgeServer, config: JudgeConfig) -> None:
    server.respond = lambda body: Reply(delay=0.1, content=json.dumps({"reason": "fine", "verdict": "yes"}))
    ask(config.model_copy(update={"concurrency": 2, "timeout": 5.0}), *(criterion(n) for n in range(5)))
    assert server.requests == 5 and server.max_in_flight == 2


# -- through the grader -------------------------------------------------------------------------
def test_episode_grading_counts_judge_verdicts_in_the_reward(server: FakeJudgeServer, config: JudgeConfig) -> None:
    task = Task.model_validate({
        "id": "judge_probe", "family": "judge_probe", "category": "communication", "difficulty": "easy",
        "world": {"recipe": "tiny"}, "prompt": "Reply politely.", "reference_solution": {"reply": "Hi, thanks!"},
        "rubric": [{"id": "says_hi", "kind": "final_reply", "contains": ["hi"]},
                   {"kind": "include", "name": "professional_tone", "weight": 3}],
        "reply_hygiene": False,
    })
    server.script = [verdict("no", "It is curt.")]
    episode = default_domain().episode(task)
    try:
        result = episode.finish("Hi. Done.", judge=Judge(config))
    finally:
        episode.close()
    assert [(c.id, c.status) for c in result.criteria] == [("says_hi", "met"), ("professional_tone", "not_met")]
    assert result.reward == 0.25 and not result.passed and result.judge_errors == 0
    assert "Is the final reply professional" in server.bodies[0]["messages"][0]["content"]
