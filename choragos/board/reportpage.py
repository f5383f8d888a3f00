"""``choragos report --html``: the session on one self-contained page.

Inline CSS and SVG only, no script and nothing fetched, so the file opens
anywhere, offline.  The geometry is fixed (a 1000-pixel-wide timeline under
a header of fixed height) so a test can compute where each lane and bar is.
Every piece of log text is HTML-escaped: the log holds text from agents.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from html import escape
from pathlib import Path

from choragos.board import events, report, reporttable, timeline
from choragos.board.reporttable import PriceFor
from choragos.board.timeline import OUTCOMES, Bar, Mark, Span, Timeline
from choragos.durations import format_duration
from choragos.inert import inert

HEADER = 56  # px: the page header's fixed height; the timeline starts below it
WIDTH = 1000
LEFT = 150  # the lane labels' column
RIGHT = 20
AXIS = 28
LANE = 34
BAR_TOP = 7
BAR_HEIGHT = 20
PLOT = WIDTH - LEFT - RIGHT
CURVE_HEIGHT = 160

COLOURS = {"done": "#2da44e", "failed": "#cf222e", "blocked": "#8250df",
           "timed out": "#e16f24", "rejected": "#6e7781", "open": "#0969da"}
GATE = "#d4a72c"
PAUSE = "#8c959f"
MARK = "#1f2328"

_CSS = f"""
body {{ margin: 0; font: 13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif;
       color: #1f2328; background: #ffffff; }}
header {{ height: {HEADER}px; box-sizing: border-box; padding: 8px 12px; overflow: hidden;
         white-space: nowrap; background: #f6f8fa; border-bottom: 1px solid #d0d7de; }}
header h1 {{ font-size: 16px; margin: 0; }}
header p {{ margin: 2px 0 0; color: #57606a; }}
svg {{ display: block; }}
section {{ padding: 8px 12px; }}
h2 {{ font-size: 14px; margin: 12px 0 6px; }}
table {{ border-collapse: collapse; }}
th, td {{ padding: 3px 10px; border-bottom: 1px solid #d0d7de; text-align: left; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
.legend span {{ display: inline-block; margin-right: 14px; }}
.legend i {{ display: inline-block; width: 12px; height: 12px; margin-right: 4px;
            vertical-align: -2px; }}
"""


def x_of(line: Timeline, t: float) -> float:
    """The x (px, in the timeline's SVG) of time ``t``."""
    span = max(line.t1 - line.t0, 1e-9)
    return LEFT + (t - line.t0) / span * PLOT


def lane_top(index: int) -> int:
    """The y (px, in the timeline's SVG) where lane ``index`` begins."""
    return AXIS + index * LANE


def session_page(workdir: Path, path: Path, price_for: PriceFor) -> None:
    """The page for the last run in ``workdir``'s event log (the deck's board
    writes it); a :class:`~choragos.board.report.ReportError` says why not."""
    runs = report.split_runs(report.read_or_say(events.default_path(workdir)).records)
    if not runs:
        raise report.ReportError("the event log holds no events")
    write(path, report.build(runs[-1:]), runs[-1:], price_for)


def write(path: Path, summary: report.Report, runs: list[list[dict]],
          price_for: PriceFor) -> None:
    """The page for ``runs`` at ``path``, whole or not at all."""
    records = [record for run in runs for record in run]
    line = timeline.build(records, [stats.name for stats in summary.roles], price_for)
    rows = [reporttable.row(stats, price_for) for stats in summary.roles]
    page = render(line, reporttable.header(summary), rows, reporttable.COLUMNS)
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(page, encoding="utf-8")
        partial.replace(path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise report.ReportError(f"cannot write {inert(path)}: "
                                 f"{inert(exc.strerror or exc)}") from None


def render(line: Timeline, title: str, rows: Sequence[dict[str, object]],
           columns: Sequence[tuple[str, str]]) -> str:
    """The whole page: header, timeline, legend, the per-role table, the cost curve."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>choragos report · {escape(title)}</title>",
             f"<style>{_CSS}</style></head><body>",
             f"<header><h1>choragos report</h1><p>{escape(title)}</p></header>",
             _timeline_svg(line), _legend(), "<section>",
             "<h2>Per role</h2>", _table(rows, columns),
             "<h2>Cost over time</h2>", _curve_svg(line), "</section></body></html>"]
    return "\n".join(parts) + "\n"


# ---- the timeline ------------------------------------------------------------------------

def _timeline_svg(line: Timeline) -> str:
    height = lane_top(len(line.roles)) + 8
    lanes = {role: i for i, role in enumerate(line.roles)}
    body = [_axis(line, height)]
    for role, i in lanes.items():
        top = lane_top(i)
        shade = "#f6f8fa" if i % 2 else "#ffffff"
        body.append(f'<rect x="0" y="{top}" width="{WIDTH}" height="{LANE}" fill="{shade}"/>')
        body.append(f'<text x="8" y="{top + LANE / 2 + 4:.1f}">{escape(role)}</text>')
    body += [_span(line, s, lanes) for s in line.spans if s.role in lanes]
    for bar in line.bars:
        if bar.role in lanes:
            body += _bar(line, bar, lanes[bar.role])
    body += [_mark(line, m, lanes[m.role]) for m in line.marks if m.role in lanes]
    return (f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
            f'height="{height}" font-size="12">{"".join(body)}</svg>')


def _axis(line: Timeline, height: int) -> str:
    ticks = []
    for n in range(5):
        t = line.t0 + (line.t1 - line.t0) * n / 4
        x = x_of(line, t)
        anchor = "start" if n == 0 else "end" if n == 4 else "middle"
        ticks.append(f'<line x1="{x:.1f}" y1="{AXIS - 6}" x2="{x:.1f}" y2="{height}" '
                     f'stroke="#d0d7de"/><text x="{x:.1f}" y="{AXIS - 10}" '
                     f'text-anchor="{anchor}" fill="#57606a">{_clock(t)}</text>')
    return "".join(ticks)


def _bar(line: Timeline, bar: Bar, lane: int) -> list[str]:
    top = lane_top(lane)
    drawn = []
    if bar.gate is not None:
        held, decided = bar.gate
        until = line.t1 if decided is None else decided
        wait = format_duration(until - held) + ("" if decided is not None else ", still waiting")
        x0, x1 = x_of(line, held), x_of(line, until)
        drawn.append(f'<rect class="gate" x="{x0:.1f}" y="{top + BAR_TOP + 5}" '
                     f'width="{max(x1 - x0, 2):.1f}" height="{BAR_HEIGHT - 10}" fill="{GATE}">'
                     f"<title>{escape(bar.task)} at the gate {wait}</title></rect>"
                     f'<text x="{x0:.1f}" y="{top + BAR_TOP - 1}" font-size="9" '
                     f'fill="#7d4e00">gate {escape(wait)}</text>')
    if bar.start is None or bar.outcome == "rejected":
        return drawn
    end = line.t1 if bar.end is None else bar.end
    x0, x1 = x_of(line, bar.start), x_of(line, end)
    tip = f"{bar.task} {bar.label} · {bar.outcome} · {format_duration(end - bar.start)}"
    drawn.append(f'<rect class="task" data-task="{escape(bar.task)}" x="{x0:.1f}" '
                 f'y="{top + BAR_TOP}" width="{max(x1 - x0, 2):.1f}" height="{BAR_HEIGHT}" '
                 f'rx="3" fill="{COLOURS[bar.outcome]}"><title>{escape(tip)}</title></rect>')
    return drawn


def _span(line: Timeline, span: Span, lanes: dict[str, int]) -> str:
    top = lane_top(lanes[span.role])
    x0 = x_of(line, span.start)
    x1 = x_of(line, line.t1 if span.end is None else span.end)
    return (f'<rect class="paused" x="{x0:.1f}" y="{top + 1}" width="{max(x1 - x0, 2):.1f}" '
            f'height="{LANE - 2}" fill="{PAUSE}" fill-opacity="0.3"><title>paused '
            f"{format_duration((line.t1 if span.end is None else span.end) - span.start)}"
            "</title></rect>")


def _mark(line: Timeline, mark: Mark, lane: int) -> str:
    x, top = x_of(line, mark.t), lane_top(lane)
    if mark.kind == "timeout":
        mid = top + LANE / 2
        shape = (f'<path d="M{x:.1f} {mid - 7:.1f} l7 7 l-7 7 l-7 -7 z" '
                 f'fill="{MARK}" stroke="#ffffff"/>')
    else:
        shape = (f'<path d="M{x - 6:.1f} {top + 1} h12 l-6 9 z" fill="{MARK}"/>')
    return f'<g class="{mark.kind}">{shape}<title>{escape(mark.text)}</title></g>'


def _legend() -> str:
    items = [(COLOURS[o], o) for o in OUTCOMES] + [(GATE, "at the gate"),
                                                   (PAUSE, "paused")]
    spans = "".join(f'<span><i style="background:{c}"></i>{escape(text)}</span>'
                    for c, text in items)
    return f'<section class="legend">{spans}<span>▼ restart</span><span>◆ timeout</span></section>'


# ---- the table and the cost curve ---------------------------------------------------------

def _table(rows: Sequence[dict[str, object]], columns: Sequence[tuple[str, str]]) -> str:
    head = "".join(f"<th>{escape(title)}</th>" for _, title in columns)
    body = []
    for row in rows:
        cells = "".join(_cell(key, row.get(key)) for key, _ in columns)
        body.append(f"<tr>{cells}</tr>")
    return f'<table id="roles"><tr>{head}</tr>{"".join(body)}</table>'


def _cell(key: str, value: object) -> str:
    kind = "" if key == "role" else ' class="num"'
    return f"<td{kind}>{escape(str(value))}</td>"


def _curve_svg(line: Timeline) -> str:
    if not line.cost:
        return "<p>No token counts in this log (the gateway was off), so no cost to draw.</p>"
    top = max(usd for _, usd in line.cost) or 1.0
    plot = CURVE_HEIGHT - 30

    def y_of(usd: float) -> float:
        return 10 + plot - usd / top * plot

    points = [(x_of(line, line.t0), y_of(0.0))]
    for t, usd in line.cost:
        points.append((x_of(line, t), points[-1][1]))  # a step: cost is known at each record
        points.append((x_of(line, t), y_of(usd)))
    points.append((x_of(line, line.t1), points[-1][1]))
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return (f'<svg id="cost" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
            f'height="{CURVE_HEIGHT}" font-size="12">'
            f'<line x1="{LEFT}" y1="{y_of(0):.1f}" x2="{LEFT + PLOT}" y2="{y_of(0):.1f}" '
            f'stroke="#d0d7de"/><text x="8" y="{y_of(top) + 4:.1f}">${top:.2f}</text>'
            f'<text x="8" y="{y_of(0) + 4:.1f}">$0</text>'
            f'<polyline points="{path}" fill="none" stroke="#0969da" stroke-width="2"/></svg>')


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))
