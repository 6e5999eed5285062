"""A self-contained HTML report of an eval run: summary, per-criterion breakdown, trajectories.

One static file (no scripts fetched from anywhere); every value is HTML-escaped.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
.met{color:#176b2c}.not_met{color:#a11}.ungraded,.judge_error{color:#996a00}
details{margin:.4em 0;border:1px solid #ddd;border-radius:4px;padding:.3em .6em}
summary{cursor:pointer}.msg{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12px;
border-left:3px solid #ccc;padding:2px 8px;margin:4px 0}.role-tool{border-color:#7a9}.role-assistant{border-color:#79c}
.role-user{border-color:#c97}.role-system{border-color:#999}
"""


def _summary_table(summary: dict[str, Any]) -> str:
    metrics = [k for k in summary["overall"] if k != "tasks"]
    head = "".join(f"<th>{escape(m)}</th>" for m in ["group", "tasks", *metrics])
    rows = [("all", summary["overall"])]
    rows += [(f"category: {k}", v) for k, v in summary["by_category"].items()]
    rows += [(f"difficulty: {k}", v) for k, v in summary["by_difficulty"].items()]
    body = "".join(
        "<tr>" + f"<td>{escape(g)}</td><td>{b['tasks']}</td>" + "".join(f"<td>{b.get(m, 0):.3f}</td>" for m in metrics)
        + "</tr>" for g, b in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _message(m: dict[str, Any]) -> str:
    text = m.get("content") or ""
    for call in m.get("tool_calls") or []:
        text += f"\n→ {call['function']['name']}({call['function']['arguments']})"
    label = m["role"] + (f" · {m.get('name')}" if m.get("name") else "")
    return f'<div class="msg role-{escape(m["role"])}"><b>{escape(label)}</b>\n{escape(text)}</div>'


def _episode(r: dict[str, Any]) -> str:
    verdict = "PASS" if r["passed"] else "fail"
    crit = "".join(f'<tr><td>{escape(c["id"])}</td><td>{escape(c["kind"])}</td><td>{c["weight"]:g}</td>'
                   f'<td class="{escape(c["status"])}">{escape(c["status"])}</td><td>{escape(c["reason"])}</td></tr>'
                   for c in r["criteria"])
    mines = "".join(f'<li class="{"not_met" if m["tripped"] else "met"}">{escape(m["id"])}: {escape(m["reason"])}</li>'
                    for m in r["minefields"])
    return (f"<details><summary>{escape(r['task_id'])} · trial {r['trial']} · reward {r['reward']:.3f} · {verdict}"
            f" · {escape(r['category'])}/{escape(r['difficulty'])}</summary>"
            f"<table><tr><th>criterion</th><th>kind</th><th>weight</th><th>status</th><th>reason</th></tr>{crit}</table>"
            f"{'<ul>' + mines + '</ul>' if mines else ''}"
            f"<details><summary>trajectory ({len(r['transcript'])} messages)</summary>"
            f"{''.join(_message(m) for m in r['transcript'])}</details></details>")


def write_report(folder: Path, title: str) -> Path:
    """Write ``report.html`` beside ``results.jsonl`` and ``summary.json`` in ``folder``."""
    records = [json.loads(line) for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    html = (f"<!doctype html><meta charset=utf-8><title>{escape(title)}</title><style>{_STYLE}</style>"
            f"<h1>{escape(title)}</h1>{_summary_table(summary)}<h2>Episodes</h2>"
            + "".join(_episode(r) for r in records))
    path = folder / "report.html"
    path.write_text(html, encoding="utf-8")
    return path
