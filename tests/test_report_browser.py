"""The comparative report in a real headless Chromium (Playwright): matrix, filters, sorting, links, screenshot.

Runs a real ``corecraft eval`` of reference and random, opens ``report.html`` from disk and drives it
like a reader. Skips when the ``playwright`` package or Debian's ``/usr/bin/chromium`` is missing
(Playwright's own browser download is not used).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from corecraft.cli.main import app

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TASKS = ("backorder_status_5800x3d_update", "employee_permission_lookup_billing_5400",
         "kb_policy_question_gold_window_hdd", "slack_incident_summary_ups_flood_refund")
AGENTS = ("reference", "random")
TRIALS = 2

pytestmark = pytest.mark.slow
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (extra: test)")
if not CHROMIUM.exists():
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("eval")
    args = ["eval", "--split", "dev", "--trials", str(TRIALS), "--out", str(folder)]
    args += [f"--agent={a}" for a in AGENTS] + [f"--tasks={t}" for t in TASKS]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return folder


@pytest.fixture(scope="module")
def records(out: Path) -> list[dict[str, Any]]:
    return [{**json.loads(line), "agent": agent} for agent in AGENTS
            for line in (out / agent / "results.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def page(out: Path) -> Iterator[Any]:
    """The report in Chromium; fails the test on any script error or any request that leaves the file."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1300, "height": 900})
        problems: list[str] = []
        tab.on("pageerror", lambda error: problems.append(f"script error: {error}"))
        tab.on("request", lambda request: None if request.url.startswith("file://")
               else problems.append(f"request: {request.url}"))
        tab.goto((out / "report.html").as_uri())
        yield tab
        browser.close()
        assert problems == []


def visible_rows(page: Any) -> list[str]:
    return page.eval_on_selector_all("#matrix tbody tr:not([hidden])", "rows => rows.map(r => r.dataset.task)")


def visible_episodes(page: Any) -> int:
    return page.eval_on_selector_all("#episodes details.ep", "ds => ds.filter(d => d.offsetParent !== null).length")


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_matrix_filters_sorting_and_links_in_chromium(page: Any, records: list[dict[str, Any]], tmp_path: Path) -> None:
    assert visible_rows(page) == sorted(TASKS)
    trial_headers = page.locator("#matrix thead tr:nth-child(2) th").all_inner_texts()
    assert [h.split()[:2] for h in trial_headers] == [["trial", str(t)] for _ in AGENTS for t in range(TRIALS)]
    assert page.locator("#matrix thead tr:first-child th[data-agent]").all_inner_texts() == list(AGENTS)
    assert page.locator("#matrix td.cell").count() == len(records)
    page.screenshot(path=str(tmp_path / "report-top.png"), full_page=True, clip={"x": 0, "y": 0, "width": 1300, "height": 1500})

    failed = [r for r in records if not r["passed"]]
    assert failed and len(failed) < len(records)  # random fails what reference passes
    page.select_option("#f-outcome", "fail")
    assert visible_rows(page) == sorted({r["task_id"] for r in failed})
    assert visible_episodes(page) == len(failed)
    assert page.locator("#matrix td.cell:not(.dim)").count() == len(failed)
    assert page.inner_text("#f-count") == f"{len({r['task_id'] for r in failed})} of {len(TASKS)} tasks · {len(failed)} episodes"
    page.select_option("#f-agent", "reference")
    reference_failed = [r for r in failed if r["agent"] == "reference"]
    assert visible_rows(page) == sorted({r["task_id"] for r in reference_failed})
    assert visible_episodes(page) == len(reference_failed)
    page.select_option("#f-agent", "")
    page.select_option("#f-outcome", "")
    page.fill("#f-text", "KB_policy")
    assert visible_rows(page) == [t for t in sorted(TASKS) if "kb_policy" in t]
    page.fill("#f-text", "")
    category = next(r["category"] for r in records if r["task_id"] == TASKS[0])
    page.select_option("#f-category", category)
    assert visible_rows(page) == sorted({r["task_id"] for r in records if r["category"] == category})
    page.select_option("#f-category", "")

    header = page.locator("#matrix th[data-agent='random'][data-col]").first
    by_task = {r["task_id"]: r["reward"] for r in records if r["agent"] == "random" and r["trial"] == 0}
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    assert visible_rows(page) == sorted(by_task, key=lambda t: (by_task[t], t))
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    assert [by_task[t] for t in visible_rows(page)] == sorted(by_task.values(), reverse=True)
    page.locator("#matrix").screenshot(path=str(tmp_path / "report-matrix-sorted.png"))

    link = page.locator("#matrix td.cell[data-agent='random'] a").first
    target = link.get_attribute("href")[1:]
    link.click()
    episode = page.locator(f"details[id='{target}']")
    assert episode.evaluate("d => d.open") and episode.is_visible()
    assert episode.locator(".role-user pre").is_visible()  # the trajectory is open, the system prompt folded
    assert not episode.locator(".role-system pre").is_visible()
    page.screenshot(path=str(tmp_path / "report-episode.png"))

    for name in ("report-top.png", "report-matrix-sorted.png", "report-episode.png"):
        path = tmp_path / name
        width, height = png_size(path)
        assert width >= 600 and height >= 120 and path.stat().st_size > 10_000, name
        print(f"screenshot: {path} ({width}x{height}, {path.stat().st_size} bytes)")
