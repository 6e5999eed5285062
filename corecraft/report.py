"""One self-contained HTML report comparing the agents of an eval run.

``corecraft eval --out DIR`` writes ``DIR/<agent>/results.jsonl`` and ``summary.json`` per agent;
:func:`write_report` reads them back and writes ``DIR/report.html``: a header (task-set digest,
corecraft version, agents, models, judge status, a warning when judge criteria went ungraded),
scores by group, inline SVG charts, a tasks × agents × trials matrix that sorts and filters, and
every episode with its criteria and trajectory (JSON tool results pretty-printed, long ones
folded). Nothing is fetched from anywhere; every value is HTML-escaped; the script is small
vanilla JS that only reads ``data-`` attributes.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from html import escape
from math import ceil
from pathlib import Path
from typing import Any

from corecraft.report_charts import Series, horizontal_bars, vertical_bars

DIFFICULTIES = ("easy", "medium", "hard", "expert")
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#7f7f7f", "#000000")
FOLD_LINES = 14  # messages longer than this are folded, their first line shown
TOP_CRITERIA = 10

_STYLE = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;padding:1.5em 2em;color:#1d1d1f;max-width:1280px}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.6em 0 .5em;border-bottom:1px solid #ddd;padding-bottom:.2em}
code{font-family:ui-monospace,monospace;font-size:.92em;background:#f3f3f3;padding:0 .3em;border-radius:3px}
.meta{color:#555;margin:.2em 0 1em}
.banner{border:1px solid #e0b252;background:#fff6dd;padding:.6em .9em;border-radius:5px;margin:.6em 0}
.banner.error{border-color:#d77;background:#fde8e8}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #d5d5d5;padding:3px 8px;text-align:left}
th{background:#f5f5f7;font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.dot{display:inline-block;width:.8em;height:.8em;border-radius:50%;margin-right:.35em;vertical-align:-.05em}
.charts{display:flex;flex-wrap:wrap;gap:1.2em}figure{margin:0;border:1px solid #e3e3e3;border-radius:6px;padding:.5em}
figcaption{font-weight:600;margin-bottom:.3em}.none{color:#777;font-style:italic}
.filters{position:sticky;top:0;z-index:2;background:#fff;display:flex;flex-wrap:wrap;gap:.4em .9em;align-items:center;
padding:.5em 0;border-bottom:1px solid #e3e3e3}.filters label{color:#444}.filters select,.filters input{font:inherit}
#f-count{color:#555;margin-left:auto}
#matrix th[data-col]{cursor:pointer;user-select:none;white-space:nowrap}
#matrix th[data-col]::after{content:" ↕";color:#aaa}#matrix th[aria-sort=ascending]::after{content:" ▲";color:#333}
#matrix th[aria-sort=descending]::after{content:" ▼";color:#333}
#matrix td.cell{text-align:center;font-variant-numeric:tabular-nums;padding:0;min-width:4.6em}
#matrix td.cell a{display:block;padding:3px 6px;color:#111;text-decoration:none}#matrix td.cell a:hover{outline:2px solid #333}
#matrix td.dim{opacity:.25}#matrix td.task{font-family:ui-monospace,monospace;font-size:12.5px}
.legend span{display:inline-block;padding:0 .5em;margin-right:.4em;border-radius:3px}
.met{color:#176b2c}.not_met{color:#b01515}.ungraded,.judge_error{color:#946200}
details.ep{scroll-margin-top:6em;margin:.35em 0;border:1px solid #ddd;border-radius:5px;padding:.3em .7em}
details.ep>summary{cursor:pointer}details.ep[open]>summary{margin-bottom:.4em}
.badge{display:inline-block;min-width:3.2em;text-align:center;border-radius:3px;font-size:12px;font-weight:700;padding:0 .3em}
.badge.pass{background:#c9ecd2;color:#145c25}.badge.fail{background:#f8d0d0;color:#8a1111}
.msg{font-size:12.5px;border-left:3px solid #ccc;padding:2px 8px;margin:5px 0;background:#fafafa}
.msg pre{white-space:pre-wrap;word-break:break-word;margin:.2em 0;font-family:ui-monospace,monospace;font-size:12px}
.msg summary{cursor:pointer}.preview{color:#666;font-family:ui-monospace,monospace}
.role-tool{border-color:#5a9a7a}.role-assistant{border-color:#4a7fc0}.role-user{border-color:#c9844a}.role-system{border-color:#999}
.call{color:#234e85}
"""

_SCRIPT = """
(() => {
  const $ = (s) => document.querySelector(s), $$ = (s, el = document) => [...el.querySelectorAll(s)];
  const f = {agent: $('#f-agent'), category: $('#f-category'), difficulty: $('#f-difficulty'),
             outcome: $('#f-outcome'), text: $('#f-text')};
  const rows = $$('#matrix tbody tr');
  function apply() {
    const agent = f.agent.value, category = f.category.value, difficulty = f.difficulty.value;
    const outcome = f.outcome.value, text = f.text.value.trim().toLowerCase();
    const taskOk = (el) => (!category || el.dataset.category === category) &&
      (!difficulty || el.dataset.difficulty === difficulty) && (!text || el.dataset.task.toLowerCase().includes(text));
    const episodeOk = (el) => (!agent || el.dataset.agent === agent) &&
      (!outcome || (el.dataset.passed === '1') === (outcome === 'pass'));
    $$('#matrix [data-agent]').forEach((el) => { el.hidden = !!agent && el.dataset.agent !== agent; });
    let shownRows = 0, shownEpisodes = 0;
    rows.forEach((tr) => {
      const cells = $$('td[data-passed]', tr).filter((td) => !td.hidden);
      cells.forEach((td) => td.classList.toggle('dim', !episodeOk(td)));
      const matching = cells.filter(episodeOk).length;
      tr.hidden = !(taskOk(tr) && matching > 0);
      if (!tr.hidden) { shownRows += 1; shownEpisodes += matching; }
    });
    $$('#episodes details.ep').forEach((d) => { d.hidden = !(taskOk(d) && episodeOk(d)); });
    $('#f-count').textContent = `${shownRows} of ${rows.length} tasks · ${shownEpisodes} episodes`;
  }
  Object.values(f).forEach((el) => el.addEventListener('input', apply));
  function sortBy(th) {
    const col = Number(th.dataset.col), dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
    $$('#matrix th[data-col]').forEach((h) => h.removeAttribute('aria-sort'));
    th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
    const key = (tr) => tr.children[col].dataset.sort;
    const numeric = th.dataset.type === 'num';
    const order = [...rows].sort((a, b) => {
      const x = key(a), y = key(b), c = numeric ? Number(x) - Number(y) : x.localeCompare(y);
      return c * dir || a.dataset.task.localeCompare(b.dataset.task);
    });
    $('#matrix tbody').append(...order);
  }
  $$('#matrix th[data-col]').forEach((th) => {
    th.addEventListener('click', () => sortBy(th));
    th.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sortBy(th); } });
  });
  function reveal() {
    const el = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (el && el.tagName === 'DETAILS') { el.hidden = false; el.open = true; el.scrollIntoView(); }
  }
  window.addEventListener('hashchange', reveal);
  apply();
  reveal();
})();
"""


@dataclass(frozen=True)
class AgentRun:
    """One agent's results as ``corecraft eval`` wrote them: its summary and one record per episode."""

    name: str
    summary: dict[str, Any]
    records: list[dict[str, Any]]

    @classmethod
    def load(cls, folder: Path) -> AgentRun:
        """Read ``summary.json`` and ``results.jsonl`` from ``folder`` (named after the agent)."""
        missing = [f for f in ("summary.json", "results.jsonl") if not (folder / f).is_file()]
        if missing:
            raise FileNotFoundError(f"{folder}: no {' or '.join(missing)} (written by `corecraft eval --out`)")
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        lines = (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
        return cls(folder.name, summary, [json.loads(line) for line in lines if line.strip()])

    @property
    def trials(self) -> int:
        return max((r["trial"] for r in self.records), default=-1) + 1


def write_report(out: Path, agents: list[str], title: str) -> Path:
    """Write ``out/report.html`` comparing the runs in ``out/<agent>/`` for each of ``agents``."""
    path = out / "report.html"
    path.write_text(render_report([AgentRun.load(out / a) for a in agents], title), encoding="utf-8")
    return path


def render_report(runs: list[AgentRun], title: str) -> str:
    """The whole report as one HTML document."""
    if not runs:
        raise ValueError("a report needs at least one agent's results")
    colours = {run.name: PALETTE[i % len(PALETTE)] for i, run in enumerate(runs)}
    tasks: dict[str, tuple[str, str]] = {}
    for run in runs:
        for r in run.records:
            tasks.setdefault(r["task_id"], (r["category"], r["difficulty"]))
    tasks = dict(sorted(tasks.items()))
    return (f"<!doctype html><html lang=en><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'><title>{escape(title)}</title>"
            f"<style>{_STYLE}</style><body>{_header(runs, title, colours)}"
            f"<h2>Scores</h2>{_scores(runs, colours)}<h2>Charts</h2>{_charts(runs, colours)}"
            f"<h2>Tasks × agents × trials</h2>{_filters(runs, tasks)}{_matrix(runs, tasks, colours)}"
            f"<h2>Episodes</h2><div id=episodes>{_episodes(runs, tasks, colours)}</div>"
            f"<script>{_SCRIPT}</script></body></html>")


def _dot(colour: str) -> str:
    return f'<span class=dot style="background:{escape(colour)}"></span>'


def _judge_status(judge: dict[str, Any]) -> str:
    text = f"judge: {judge['model']}" if judge["model"] else f"no judge: {judge['ungraded']} criteria ungraded"
    if judge["judge_errors"]:
        text += f", {judge['judge_errors']} judge errors"
    return escape(text)


def _pass_hat_keys(runs: list[AgentRun]) -> list[str]:
    trials = max(run.summary["trials"] for run in runs)
    return [f"pass^{k}" for k in range(2, trials + 1)]


def _header(runs: list[AgentRun], title: str, colours: dict[str, str]) -> str:
    sets = {run.summary["task_set"]["digest"]: run.summary["task_set"] for run in runs}
    first = runs[0].summary["task_set"]
    trials = sorted({run.summary["trials"] for run in runs})
    meta = (f"task set <code>{escape(first['digest'])}</code> ({first['tasks']} tasks) · corecraft "
            f"{escape(first['corecraft'])} · {'/'.join(map(str, trials))} trial(s) per task · {len(runs)} agent(s)")
    banners = []
    if len(sets) > 1:
        listed = ", ".join(f"{run.name}: {run.summary['task_set']['digest']}" for run in runs)
        banners.append(f"<div class='banner error' role=alert><b>Not comparable:</b> these runs were measured on "
                       f"different task sets ({escape(listed)}).</div>")
    ungraded = {run.name: run.summary["judge"]["ungraded"] for run in runs if run.summary["judge"]["ungraded"]}
    if ungraded:
        who = ", ".join(f"{name} {count}" for name, count in ungraded.items())
        banners.append(f"<div class=banner role=alert><b>⚠ {sum(ungraded.values())} judge criteria were not graded</b> "
                       f"({escape(who)}): no LLM judge was configured, so rewards and passes leave them out. "
                       f"Run with <code>--judge-model</code> to grade them.</div>")
    errors = sum(run.summary["judge"]["judge_errors"] for run in runs)
    if errors:
        banners.append(f"<div class='banner error' role=alert><b>{errors} criteria hit a judge error:</b> they are "
                       f"left out of rewards and their episodes do not pass.</div>")
    pass_hats = _pass_hat_keys(runs)
    head = "".join(f"<th class=num>{escape(m)}</th>" for m in ["episodes", "pass@1", *pass_hats, "mean reward"])
    body = ""
    for run in runs:
        overall = run.summary["overall"]
        cells = "".join(f"<td class=num>{overall[m]:.3f}</td>" if m in overall else "<td class=num>—</td>"
                        for m in ["pass@1", *pass_hats, "mean_reward"])
        body += (f"<tr><td>{_dot(colours[run.name])}<b>{escape(run.name)}</b></td>"
                 f"<td>{escape(run.summary['agent']['model'] or '—')}</td><td class=num>{len(run.records)}</td>{cells}"
                 f"<td>{_judge_status(run.summary['judge'])}</td></tr>")
    return (f"<h1>{escape(title)}</h1><p class=meta>{meta}</p>{''.join(banners)}"
            f"<table id=agents><tr><th>agent</th><th>model</th>{head}<th>judge</th></tr>{body}</table>")


def _bar_cell(value: float) -> str:
    return (f"<td class=num style='background:linear-gradient(90deg,#dde9f6 {value * 100:.1f}%,transparent 0)'>"
            f"{value:.3f}</td>")


def _scores(runs: list[AgentRun], colours: dict[str, str]) -> str:
    metrics = ["pass@1", *_pass_hat_keys(runs), "mean_reward"]
    groups = [("all", "overall", None)]
    for key, field in (("category", "by_category"), ("difficulty", "by_difficulty")):
        names = sorted({g for run in runs for g in run.summary[field]}, key=_difficulty_rank if key == "difficulty" else str)
        groups += [(f"{key}: {g}", field, g) for g in names]
    top = "".join(f"<th colspan={len(metrics)}>{_dot(colours[run.name])}{escape(run.name)}</th>" for run in runs)
    sub = "".join(f"<th class=num>{escape(m.replace('_', ' '))}</th>" for _ in runs for m in metrics)
    body = ""
    for label, field, group in groups:
        tasks = max((_block(run, field, group) or {}).get("tasks", 0) for run in runs)
        cells = ""
        for run in runs:
            block = _block(run, field, group) or {}
            cells += "".join(_bar_cell(block[m]) if m in block else "<td class=num>—</td>" for m in metrics)
        body += f"<tr><td>{escape(label)}</td><td class=num>{tasks}</td>{cells}</tr>"
    return (f"<table id=scores><tr><th rowspan=2>group</th><th rowspan=2 class=num>tasks</th>{top}</tr>"
            f"<tr>{sub}</tr>{body}</table>")


def _block(run: AgentRun, field: str, group: str | None) -> dict[str, Any] | None:
    found: dict[str, Any] | None = run.summary["overall"] if group is None else run.summary[field].get(group)
    return found


def _difficulty_rank(difficulty: str) -> int:
    return DIFFICULTIES.index(difficulty) if difficulty in DIFFICULTIES else len(DIFFICULTIES)


def _charts(runs: list[AgentRun], colours: dict[str, str]) -> str:
    bins = [f".{i}" if i else "0" for i in range(10)] + ["1"]
    histograms = []
    for run in runs:
        counts = Counter(10 if r["reward"] >= 1 else min(9, int(r["reward"] * 10)) for r in run.records)
        histograms.append(Series(run.name, colours[run.name], [counts[i] for i in range(len(bins))]))
    peak = max((v for s in histograms for v in s.values), default=0)
    reward = vertical_bars("Reward histogram per agent", bins, histograms, y_max=4 * max(1, ceil(peak / 4)),
                           y_label="reward (bin lower edge; 1 = full) → episodes", fmt=lambda v: f"{v:g}",
                           width=380)
    difficulties = sorted({g for run in runs for g in run.summary["by_difficulty"]}, key=_difficulty_rank)
    rates = [Series(run.name, colours[run.name],
                    [run.summary["by_difficulty"].get(d, {}).get("pass@1", 0.0) for d in difficulties]) for run in runs]
    by_difficulty = vertical_bars("Pass rate by difficulty per agent", difficulties, rates, y_max=1.0,
                                  y_label="difficulty → pass@1", fmt=lambda v: f"{v:.0%}", width=280)
    failed: dict[str, Counter[str]] = defaultdict(Counter)
    for run in runs:
        for r in run.records:
            for c in r["criteria"]:
                if c["status"] == "not_met":
                    failed[c["id"]][run.name] += 1
    worst = sorted(failed, key=lambda cid: (-sum(failed[cid].values()), cid))[:TOP_CRITERIA]
    if worst:
        series = [Series(run.name, colours[run.name], [failed[cid][run.name] for cid in worst]) for run in runs]
        most_failed = horizontal_bars("Most-failed criteria", worst, series,
                                      x_max=max(v for s in series for v in s.values),
                                      x_label="episodes where the criterion was not met", fmt=lambda v: f"{v:g}", width=440)
    else:
        most_failed = "<p class=none>No criterion failed in any episode.</p>"
    return (f"<div class=charts><figure><figcaption>Reward histogram</figcaption>{reward}</figure>"
            f"<figure><figcaption>Pass rate by difficulty</figcaption>{by_difficulty}</figure>"
            f"<figure><figcaption>Most-failed criteria (top {TOP_CRITERIA}, by criterion id across tasks)</figcaption>"
            f"{most_failed}</figure></div>")


def _options(values: list[str], everything: str) -> str:
    return f"<option value=''>{escape(everything)}</option>" + "".join(
        f"<option value='{escape(v)}'>{escape(v)}</option>" for v in values)


def _filters(runs: list[AgentRun], tasks: dict[str, tuple[str, str]]) -> str:
    categories = sorted({c for c, _ in tasks.values()})
    difficulties = sorted({d for _, d in tasks.values()}, key=_difficulty_rank)
    return (f"<div class=filters id=filters>"
            f"<label>agent <select id=f-agent>{_options([run.name for run in runs], 'all agents')}</select></label>"
            f"<label>category <select id=f-category>{_options(categories, 'all')}</select></label>"
            f"<label>difficulty <select id=f-difficulty>{_options(difficulties, 'all')}</select></label>"
            f"<label>outcome <select id=f-outcome><option value=''>all episodes</option>"
            f"<option value=fail>failed episodes</option><option value=pass>passed episodes</option></select></label>"
            f"<label>task id <input id=f-text type=search placeholder='search task id'></label>"
            f"<span id=f-count></span></div>"
            f"<p class=legend>Cells: reward of each trial, linking to its episode. "
            f"<span style='background:{_cell_colour(True, 1.0)}'>✓ passed</span>"
            f"<span style='background:{_cell_colour(False, 0.0)}'>✗ failed, reward 0</span>"
            f"<span style='background:{_cell_colour(False, 0.9)}'>✗ failed, reward 0.9</span>"
            f"Click a column heading to sort.</p>")


def _cell_colour(passed: bool, reward: float) -> str:
    return "hsl(135,48%,80%)" if passed else f"hsl({8 + 40 * reward:.0f},85%,{84 + 4 * reward:.0f}%)"


def _episode_id(agent: str, task_id: str, trial: int) -> str:
    return f"ep-{agent}-{task_id}-{trial}"


def _matrix(runs: list[AgentRun], tasks: dict[str, tuple[str, str]], colours: dict[str, str]) -> str:
    by_key = {(run.name, r["task_id"], r["trial"]): r for run in runs for r in run.records}
    top = "".join(f"<th colspan={run.trials} data-agent='{escape(run.name)}'>{_dot(colours[run.name])}{escape(run.name)}</th>"
                  for run in runs)
    sub, col = "", 3
    for run in runs:
        for trial in range(run.trials):
            sub += (f"<th class=num data-col={col} data-type=num tabindex=0 data-agent='{escape(run.name)}' "
                    f"title='{escape(run.name)}, trial {trial}: sort by reward'>trial {trial}</th>")
            col += 1
    body = ""
    for task_id, (category, difficulty) in tasks.items():
        cells = ""
        for run in runs:
            for trial in range(run.trials):
                r = by_key.get((run.name, task_id, trial))
                agent = escape(run.name)
                if r is None:
                    cells += f"<td class=cell data-agent='{agent}' data-sort=-1>—</td>"
                    continue
                verdict = "passed" if r["passed"] else "failed"
                cells += (f"<td class=cell data-agent='{agent}' data-passed={int(r['passed'])} data-sort={r['reward']:.6f} "
                          f"style='background:{_cell_colour(r['passed'], r['reward'])}'>"
                          f"<a href='#{escape(_episode_id(run.name, task_id, trial))}' title='{agent}, trial {trial}: "
                          f"reward {r['reward']:.3f}, {verdict}'>{'✓' if r['passed'] else '✗'} {r['reward']:.2f}</a></td>")
        body += (f"<tr data-task='{escape(task_id)}' data-category='{escape(category)}' data-difficulty='{escape(difficulty)}'>"
                 f"<td class=task data-sort='{escape(task_id)}'>{escape(task_id)}</td>"
                 f"<td data-sort='{escape(category)}'>{escape(category)}</td>"
                 f"<td data-sort={_difficulty_rank(difficulty)}>{escape(difficulty)}</td>{cells}</tr>")
    return (f"<table id=matrix><thead><tr><th rowspan=2 data-col=0 tabindex=0>task</th>"
            f"<th rowspan=2 data-col=1 tabindex=0>category</th><th rowspan=2 data-col=2 data-type=num tabindex=0>difficulty</th>"
            f"{top}</tr><tr>{sub}</tr></thead><tbody>{body}</tbody></table>")


def _pretty_json(text: str) -> str | None:
    """``text`` re-indented if it is a JSON object or array, else ``None``."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return json.dumps(value, indent=2, ensure_ascii=False) if isinstance(value, dict | list) else None


def _block_of_text(role: str, label: str, text: str, preview: str) -> str:
    """A message body; a system prompt or one longer than :data:`FOLD_LINES` is folded behind a one-line
    ``preview``."""
    lines = text.split("\n")
    if role != "system" and len(lines) <= FOLD_LINES:
        return f"<div class='msg role-{escape(role)}'><b>{escape(label)}</b><pre>{escape(text)}</pre></div>"
    preview = preview.split("\n")[0]
    preview = preview if len(preview) <= 90 else preview[:89] + "…"
    return (f"<details class='msg role-{escape(role)}'><summary><b>{escape(label)}</b> · {len(lines)} lines "
            f"<span class=preview>{escape(preview)}</span></summary><pre>{escape(text)}</pre></details>")


def _tool_call(call: dict[str, Any]) -> str:
    arguments = call["function"]["arguments"]
    try:
        parsed = json.loads(arguments)
    except ValueError:
        shown = arguments
    else:
        shown = json.dumps(parsed, ensure_ascii=False)
        if len(shown) > 100:
            shown = json.dumps(parsed, indent=2, ensure_ascii=False)
    return f"<pre class=call>→ {escape(call['function']['name'])}({escape(shown)})</pre>"


def _message(m: dict[str, Any]) -> str:
    role = str(m["role"])
    label = role + (f" · {m['name']}" if m.get("name") else "")
    raw = m.get("content") or ""
    text = (_pretty_json(raw) or raw) if role == "tool" else raw
    calls = m.get("tool_calls") or []
    if not calls:
        return _block_of_text(role, label, text, preview=raw)
    said = f"<pre>{escape(text)}</pre>" if text else ""
    return f"<div class='msg role-{escape(role)}'><b>{escape(label)}</b>{said}{''.join(_tool_call(c) for c in calls)}</div>"


def _episode(run: AgentRun, r: dict[str, Any], colour: str) -> str:
    ungraded = sum(c["status"] == "ungraded" for c in r["criteria"])
    notes = (" · truncated" if r.get("truncated") else "") + (f" · {ungraded} ungraded" if ungraded else "")
    crit = "".join(f"<tr><td>{escape(c['id'])}</td><td>{escape(c['kind'])}</td><td class=num>{c['weight']:g}</td>"
                   f"<td class='{escape(c['status'])}'>{escape(c['status'])}</td><td>{escape(c['reason'])}</td></tr>"
                   for c in r["criteria"])
    mines = "".join(f"<li class='{'not_met' if m['tripped'] else 'met'}'>minefield {escape(m['id'])}: "
                    f"{escape(m['reason'])}</li>" for m in r["minefields"])
    return (f"<details class=ep id='{escape(_episode_id(run.name, r['task_id'], r['trial']))}' "
            f"data-agent='{escape(run.name)}' data-task='{escape(r['task_id'])}' data-category='{escape(r['category'])}' "
            f"data-difficulty='{escape(r['difficulty'])}' data-passed={int(r['passed'])}><summary>"
            f"<span class='badge {'pass' if r['passed'] else 'fail'}'>{'PASS' if r['passed'] else 'FAIL'}</span> "
            f"<code>{escape(r['task_id'])}</code> · {_dot(colour)}{escape(run.name)} · trial {r['trial']} · "
            f"reward {r['reward']:.3f} · {r.get('steps', '?')} steps · {escape(r['category'])}/{escape(r['difficulty'])}"
            f"{escape(notes)}</summary>"
            f"<table><tr><th>criterion</th><th>kind</th><th>weight</th><th>status</th><th>reason</th></tr>{crit}</table>"
            f"{'<ul>' + mines + '</ul>' if mines else ''}"
            f"<details open><summary>trajectory ({len(r['transcript'])} messages)</summary>"
            f"{''.join(_message(m) for m in r['transcript'])}</details></details>")


def _episodes(runs: list[AgentRun], tasks: dict[str, tuple[str, str]], colours: dict[str, str]) -> str:
    order = {task_id: i for i, task_id in enumerate(tasks)}
    episodes = sorted(((order[r["task_id"]], i, r["trial"], run, r) for i, run in enumerate(runs) for r in run.records),
                      key=lambda e: e[:3])
    return "".join(_episode(run, r, colours[run.name]) for *_, run, r in episodes)
