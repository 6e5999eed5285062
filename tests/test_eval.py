"""``corecraft eval``: reference vs random on real tasks, metrics, files and where the report goes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from corecraft.agents.baselines import RandomAgent, ReferenceAgent
from corecraft.cli.main import app
from corecraft.domain import default_domain
from corecraft.evaluate import evaluate, pass_hat_k, summarise

pytestmark = pytest.mark.filterwarnings("ignore:no LLM judge configured")


def test_pass_hat_k_is_the_unbiased_estimator() -> None:
    assert pass_hat_k(3, 3, 3) == 1.0
    assert pass_hat_k(2, 4, 2) == pytest.approx(1 / 6)
    assert pass_hat_k(0, 4, 1) == 0.0


def test_summary_groups_by_category_and_difficulty() -> None:
    records = [
        {"task_id": "a", "category": "reasoning", "difficulty": "easy", "passed": True, "reward": 1.0},
        {"task_id": "a", "category": "reasoning", "difficulty": "easy", "passed": False, "reward": 0.5},
        {"task_id": "b", "category": "communication", "difficulty": "hard", "passed": True, "reward": 1.0},
        {"task_id": "b", "category": "communication", "difficulty": "hard", "passed": True, "reward": 1.0},
    ]
    summary = summarise(records, trials=2)
    assert summary["overall"]["pass@1"] == pytest.approx(0.75)
    assert summary["overall"]["pass^2"] == pytest.approx(0.5)
    assert summary["by_category"]["reasoning"]["mean_reward"] == pytest.approx(0.75)


def test_reference_beats_random_and_files_are_written(tmp_path: Path) -> None:
    tasks = [default_domain().tasks.get("doa_cpu_refund_kayla")]
    ref_records, ref = evaluate(tasks, ReferenceAgent, trials=2, out=tmp_path / "ref")
    _, rnd = evaluate(tasks, RandomAgent, trials=2, concurrency=2, out=tmp_path / "rnd")
    assert ref["overall"]["pass@1"] == 1.0 and ref["overall"]["pass^2"] == 1.0
    assert rnd["overall"]["pass@1"] == 0.0 and rnd["overall"]["mean_reward"] < 1.0
    lines = (tmp_path / "ref" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert {"task_id", "trial", "reward", "passed", "criteria", "transcript"} <= set(first)
    assert first["transcript"][0]["role"] == "system"
    saved = json.loads((tmp_path / "ref" / "summary.json").read_text())
    assert saved["overall"]["tasks"] == 1
    assert saved["task_set"]["digest"] == rnd["task_set"]["digest"] and len(saved["task_set"]["digest"]) == 16
    assert ref_records[0]["transcript"] == ref_records[1]["transcript"]  # same actions, same episode


def test_summary_has_no_pass_hat_1_and_records_the_run(tmp_path: Path) -> None:
    tasks = [default_domain().tasks.get("doa_cpu_refund_kayla")]
    records, summary = evaluate(tasks, RandomAgent, out=tmp_path, agent_name="random")
    assert "pass^1" not in summary["overall"] and "pass@1" in summary["overall"]
    ungraded = sum(c["status"] == "ungraded" for r in records for c in r["criteria"])
    assert ungraded > 0  # the task has judge criteria and no judge is configured
    assert summary["agent"] == {"name": "random", "model": None} and summary["trials"] == 1
    assert summary["judge"] == {"model": None, "ungraded": ungraded, "judge_errors": 0}
    assert json.loads((tmp_path / "summary.json").read_text())["judge"] == summary["judge"]


def test_cli_eval_prints_the_table(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "--split", "train", "--agent", "reference", "--agent", "random",
                                      "--tasks", "doa_cpu_refund_kayla", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "reference" in result.output and "random" in result.output and "pass@1" in result.output
    assert (tmp_path / "report.html").exists() and not (tmp_path / "random" / "report.html").exists()
    html = (tmp_path / "report.html").read_text()
    assert "reference" in html and "random" in html and "doa_cpu_refund_kayla" in html
    bad = CliRunner().invoke(app, ["eval", "--agent", "nobody", "--tasks", "doa_cpu_refund_kayla", "--split", "train"])
    assert bad.exit_code == 2
