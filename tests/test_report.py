"""The comparative HTML report, read as markup: matrix shape, links, header, banners, escaping, JSON folding."""

from __future__ import annotations

import json
import re
from collections import Counter
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from corecraft.agents.baselines import RandomAgent, ReferenceAgent
from corecraft.domain import default_domain
from corecraft.evaluate import evaluate
from corecraft.grading.judge import JudgeConfig
from corecraft.report import FOLD_LINES, AgentRun, render_report, write_report
from corecraft.version import VERSION

pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")

TASKS = ("doa_cpu_refund_kayla", "kb_policy_question_gold_window_hdd")


class Elements(HTMLParser):
    """Every start tag with its attributes, in document order."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())]


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Reference and random, two trials each, on two real tasks, written as ``corecraft eval --out`` does."""
    folder = tmp_path_factory.mktemp("eval")
    tasks = [default_domain().tasks.get(t) for t in TASKS]
    evaluate(tasks, ReferenceAgent, trials=2, out=folder / "reference", agent_name="reference")
    evaluate(tasks, RandomAgent, trials=2, out=folder / "random", agent_name="random")
    return folder


def test_matrix_has_a_row_per_task_and_a_linked_cell_per_agent_and_trial(out: Path) -> None:
    html = write_report(out, ["reference", "random"], "run").read_text(encoding="utf-8")
    doc = Elements(html)
    rows = [a["data-task"] for t, a in doc.tags if t == "tr" and "data-task" in a]
    assert rows == sorted(TASKS)
    cells = doc.find("td", **{"class": "cell"})
    assert len(cells) == len(TASKS) * 2 * 2
    assert Counter(c["data-agent"] for c in cells) == {"reference": 4, "random": 4}
    runs = {name: AgentRun.load(out / name) for name in ("reference", "random")}
    assert sorted(c["data-passed"] for c in cells) == sorted(str(int(r["passed"])) for run in runs.values()
                                                             for r in run.records)
    ids = {a["id"] for _, a in doc.tags if "id" in a}
    links = [a["href"] for a in doc.find("a") if (a.get("href") or "").startswith("#ep-")]
    assert len(links) == len(cells) and all(link[1:] in ids for link in links)
    assert len(doc.find("details", **{"class": "ep"})) == len(cells)
    sortable = [a for t, a in doc.tags if t == "th" and "data-col" in a]
    assert [a["data-col"] for a in sortable] == [str(i) for i in range(3 + 4)]


def test_header_names_the_task_set_version_agents_and_missing_judge(out: Path) -> None:
    runs = [AgentRun.load(out / name) for name in ("reference", "random")]
    html = render_report(runs, "run")
    digest = runs[0].summary["task_set"]["digest"]
    assert f"<code>{digest}</code>" in html and f"corecraft {VERSION}" in html
    ungraded = runs[1].summary["judge"]["ungraded"]
    assert ungraded > 0 and f"no judge: {ungraded} criteria ungraded" in html
    assert f"{ungraded * 2} judge criteria were not graded" in html and "role=alert" in html
    assert "pass^2" in html and "pass^1" not in html
    assert html.count("<svg") == 3


def test_a_configured_judge_is_named_and_its_errors_raise_a_banner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CORECRAFT_TEST_ABSENT_KEY", raising=False)
    judge = JudgeConfig(model="judge-x", base_url="http://127.0.0.1:9/v1", api_key_env="CORECRAFT_TEST_ABSENT_KEY")
    records, summary = evaluate([default_domain().tasks.get(TASKS[0])], ReferenceAgent, judge=judge, out=tmp_path / "reference",
                                agent_name="reference", agent_model="replayed-model")
    errors = sum(c["status"] == "judge_error" for r in records for c in r["criteria"])
    assert errors > 0 and summary["judge"] == {"model": "judge-x", "ungraded": 0, "judge_errors": errors}
    html = write_report(tmp_path, ["reference"], "run").read_text(encoding="utf-8")
    assert "<td>replayed-model</td>" in html and f"judge: judge-x, {errors} judge errors" in html
    assert f"{errors} criteria hit a judge error" in html
    assert "were not graded" not in html


def test_runs_on_different_task_sets_are_flagged(out: Path, tmp_path: Path) -> None:
    evaluate([default_domain().tasks.get(TASKS[0])], RandomAgent, out=tmp_path / "random", agent_name="random")
    html = render_report([AgentRun.load(out / "reference"), AgentRun.load(tmp_path / "random")], "run")
    assert "Not comparable" in html


def test_every_value_is_escaped_and_nothing_is_fetched(out: Path) -> None:
    run = AgentRun.load(out / "random")
    hostile = '<script>alert("x")</script>'
    record = run.records[0]
    record["transcript"].append({"role": "tool", "name": hostile, "content": json.dumps({"note": hostile})})
    record["criteria"][0]["reason"] = hostile
    html = render_report([AgentRun('<img src=x onerror="alert(1)">', run.summary, run.records)], hostile)
    assert html.count("<script>") == 1 and "<img" not in html
    assert escape(hostile) in html
    fetched = [(t, a) for t, a in Elements(html).tags
               if t in ("link", "img", "iframe") or "src" in a or not (a.get("href") or "#").startswith("#")]
    assert fetched == []
    assert re.findall(r"https?://", html) == ["http://"] * html.count("<svg")  # only the SVG namespace


def test_json_tool_results_are_pretty_printed_and_long_ones_folded(out: Path) -> None:
    run = AgentRun.load(out / "reference")
    html = render_report([run], "run")
    results = [m for r in run.records for m in r["transcript"] if m["role"] == "tool"]
    pretty = [json.dumps(json.loads(m["content"]), indent=2, ensure_ascii=False) for m in results]
    long = [p for p in pretty if p.count("\n") >= FOLD_LINES]
    short = [p for p in pretty if p.count("\n") < FOLD_LINES]
    assert long and short
    assert all(f"<pre>{escape(p)}</pre></details>" in html for p in long)  # folded behind a summary
    assert all(f"<pre>{escape(p)}</pre></div>" in html for p in short)
    minified = [m["content"] for m in results if "\n" not in m["content"] and len(m["content"]) > 120]
    assert minified and not any(escape(c) in html for c in minified)


def test_missing_results_are_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nobody: no summary.json or results.jsonl"):
        write_report(tmp_path, ["nobody"], "run")
    assert not (tmp_path / "report.html").exists()
