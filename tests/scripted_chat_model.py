"""A scripted OpenAI-compatible chat model over local HTTP, for the trainer adapters' tests.

In ``oracle`` mode it finds the task by the request's user message and answers with the next step
of the task's reference solution (its tool calls, one per turn, then its reply); in ``lazy`` mode
it replies at once without tools. Every request body is kept in ``ScriptedModel.requests``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

import corecraft


def send_json(handler: BaseHTTPRequestHandler, payload: dict[str, Any], status: int = 200,
              headers: dict[str, str] | None = None) -> None:
    """Answer an HTTP request with ``payload`` as JSON (the local test servers' one response shape)."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


class ScriptedModel(BaseHTTPRequestHandler):
    """Chat completions from the reference solutions (``oracle``) or a bare reply (``lazy``)."""

    mode: ClassVar[str] = "oracle"
    requests: ClassVar[list[dict[str, Any]]] = []
    by_prompt: ClassVar[dict[str, str]] = {}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        message, finish = self.answer(body["messages"])
        payload = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                   "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                   "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        send_json(self, payload)

    def answer(self, messages: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
        if type(self).mode == "lazy":
            return {"role": "assistant", "content": "Sorry, I cannot help with that."}, "stop"
        user = next(m["content"] for m in messages if m["role"] == "user")
        actions = corecraft.reference_actions(type(self).by_prompt[user.strip()])
        step = actions[sum(m["role"] == "assistant" for m in messages)]
        if isinstance(step, str):
            return {"role": "assistant", "content": step}, "stop"
        return {"role": "assistant", "content": None, "tool_calls": [step]}, "tool_calls"

    def log_message(self, *args: Any) -> None:
        return


@contextmanager
def scripted_model(mode: str = "oracle") -> Iterator[str]:
    """Serve the scripted model on a free local port; yields its ``/v1`` base URL."""
    ScriptedModel.mode, ScriptedModel.requests = mode, []
    ScriptedModel.by_prompt = {t.prompt.strip(): t.id for t in corecraft.tasks(None)}
    server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()


def run_doc_snippet(doc: Path, marker: str, max_lines: int, model_url: str, monkeypatch: pytest.MonkeyPatch,
                    capsys: pytest.CaptureFixture[str]) -> list[list[str]]:
    """Run the one ```python block of ``doc`` containing ``marker`` as written, against the scripted model;
    returns its printed lines, split into words."""
    [snippet] = [s for s in re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.S)
                 if marker in s]
    assert len(snippet.strip().splitlines()) <= max_lines
    monkeypatch.setenv("OPENAI_BASE_URL", model_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    exec(compile(snippet, str(doc), "exec"), {})
    return [line.split() for line in capsys.readouterr().out.splitlines()]

