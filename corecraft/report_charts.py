"""Inline SVG charts for the eval report: grouped bars, vertical or horizontal, one colour per agent.

Plain strings built here, no plotting library and nothing fetched by the browser; every label and
tooltip is HTML-escaped. Each bar carries a ``<title>`` with its exact value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

_FONT = 'font-family="system-ui,sans-serif" font-size="11"'


@dataclass(frozen=True)
class Series:
    """One agent's values, one per category on the chart's axis, drawn in ``colour``."""

    name: str
    colour: str
    values: Sequence[float]


def _legend(series: Sequence[Series], x: float, width: float) -> tuple[str, float]:
    """Colour keys laid out in rows that fit ``width``; returns the SVG and the height it takes."""
    items, offset, row = [], 0.0, 0
    for s in series:
        item_w = 24 + 7 * len(s.name)
        if offset and x + offset + item_w > width:
            offset, row = 0.0, row + 1
        y = 13 + 15 * row
        items.append(f'<rect x="{x + offset:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{escape(s.colour)}"/>'
                     f'<text x="{x + offset + 14:.1f}" y="{y:.1f}">{escape(s.name)}</text>')
        offset += item_w
    return "".join(items), 15.0 * (row + 1)


def _svg(width: int, height: int, label: str, body: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(label)}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" {_FONT}><title>{escape(label)}</title>{body}</svg>')


def vertical_bars(label: str, categories: Sequence[str], series: Sequence[Series], y_max: float,
                  y_label: str, fmt: Callable[[float], str], width: int = 460, height: int = 250) -> str:
    """Bars grouped by category along x, one bar per series in each group, y from 0 to ``y_max``."""
    left, right, bottom = 44, 10, 46
    legend, legend_h = _legend(series, left, width - right)
    top = 11 + legend_h
    plot_w, plot_h = width - left - right, height - top - bottom
    y_max = y_max or 1.0
    parts = [legend]
    for i in range(5):
        value = y_max * i / 4
        y = top + plot_h - plot_h * i / 4
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e3e3"/>'
                     f'<text x="{left - 5}" y="{y + 4:.1f}" text-anchor="end" fill="#555">{escape(fmt(value))}</text>')
    group_w = plot_w / max(1, len(categories))
    bar_w = min(22.0, group_w * 0.8 / max(1, len(series)))
    for c, category in enumerate(categories):
        x0 = left + c * group_w + (group_w - bar_w * len(series)) / 2
        for s_index, s in enumerate(series):
            value = s.values[c]
            h = plot_h * value / y_max
            parts.append(f'<rect x="{x0 + s_index * bar_w:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 1:.1f}" '
                         f'height="{h:.1f}" fill="{escape(s.colour)}"><title>{escape(f"{s.name} · {category}: {fmt(value)}")}'
                         f'</title></rect>')
        parts.append(f'<text x="{left + (c + 0.5) * group_w:.1f}" y="{top + plot_h + 14}" text-anchor="middle">'
                     f'{escape(category)}</text>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#888"/>'
                 f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle" fill="#555">{escape(y_label)}</text>')
    return _svg(width, height, label, "".join(parts))


def horizontal_bars(label: str, categories: Sequence[str], series: Sequence[Series], x_max: float,
                    x_label: str, fmt: Callable[[float], str], width: int = 460) -> str:
    """Bars grouped by category down the y axis (room for long labels), one bar per series."""
    label_w, right, bar_h = 190, 34, 9.0
    legend, legend_h = _legend(series, 10, width - right)
    top = 11 + legend_h
    group_h = bar_h * len(series) + 6
    plot_w = width - label_w - right
    height = int(top + group_h * max(1, len(categories)) + 30)
    x_max = x_max or 1.0
    parts = [legend]
    for c, category in enumerate(categories):
        y0 = top + c * group_h
        shown = category if len(category) <= 30 else category[:29] + "…"
        parts.append(f'<text x="{label_w - 6}" y="{y0 + group_h / 2 + 1:.1f}" text-anchor="end">{escape(shown)}'
                     f'<title>{escape(category)}</title></text>')
        for s_index, s in enumerate(series):
            value = s.values[c]
            w = plot_w * value / x_max
            y = y0 + s_index * bar_h
            if value:
                parts.append(f'<rect x="{label_w}" y="{y:.1f}" width="{w:.1f}" height="{bar_h - 1:.1f}" '
                             f'fill="{escape(s.colour)}"><title>{escape(f"{s.name} · {category}: {fmt(value)}")}</title>'
                             f'</rect><text x="{label_w + w + 3:.1f}" y="{y + bar_h - 1.5:.1f}" font-size="9" fill="#444">'
                             f'{escape(fmt(value))}</text>')
    bottom = top + group_h * max(1, len(categories))
    parts.append(f'<line x1="{label_w}" x2="{label_w}" y1="{top - 2}" y2="{bottom:.1f}" stroke="#888"/>'
                 f'<text x="{label_w + plot_w / 2:.1f}" y="{bottom + 18:.1f}" text-anchor="middle" fill="#555">'
                 f'{escape(x_label)}</text>')
    return _svg(width, height, label, "".join(parts))
