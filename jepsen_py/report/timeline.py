"""``timeline.html``: a whole run at a glance, one self-contained page.

Time runs left to right; each client process has a lane (the nemesis's on top), each op a
bar from its invocation to its completion, coloured by outcome (ok green, fail red, info
amber, never completed grey); fault periods are shaded across every lane, labelled with
the fault. Hovering a bar shows its process, f, key, values and latency (SVG ``<title>``
tooltips: no script at all, no external asset, nothing fetched; the page opens from a CI
artifact as is).

Big histories stay light: beyond ``max_bars`` ops, each lane is cut into time bins and a
bar stands for a run of bins holding ops: coloured by their most common outcome, with a
strip at its foot in the colour of the worst one (a fail among oks stays visible), its
tooltip counting them by outcome and f. With more than ``max_lanes`` processes (every
``info`` starts a new one), processes whose lifetimes do not overlap share a lane.

Given the run's verdict (`VerdictBanner`), the page opens with it: the verdict, each
violation by name with the history lines of its witnesses, what was found that is
informational, and linearizability beside; the witnessing ops' bars are outlined.
"""

from __future__ import annotations

import heapq
import html
import math
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from jepsen_py.report.spans import Collected, History, Span, collect

MAX_BARS = 4000
MAX_LANES = 64
WIDTH = 1400
"""Width of the time axis, in pixels."""
LEFT = 120
TOP = 34
BOTTOM = 30
VALUE_CHARS = 160

_TYPE_CLASS = {"ok": "ok", "fail": "fail", "info": "info", "pending": "pend"}
_SEVERITY = {"ok": 0, "fail": 1, "pending": 2, "info": 3}
FAULT_COLOURS = (
    "#7b61ff",
    "#ff6f61",
    "#2aa1b3",
    "#e6a100",
    "#c2185b",
    "#5c8a00",
    "#8d6e63",
    "#546e7a",
)


@attrs.frozen
class VerdictBanner:
    """What the page says about the run's verdict (`jepsen_py.runner.reports.verdict_banner`
    builds it from a run's check)."""

    verdict: str
    consistency: str | None = None
    violations: tuple[tuple[str, tuple[tuple[int, ...], ...]], ...] = ()
    """Each violation that decided the verdict, with the history lines of its witnesses."""
    informational: tuple[tuple[str, int], ...] = ()
    linearizable: str | None = None
    explanations: tuple[tuple[str, str], ...] = ()
    """Per key that is not OK, why (the verdict function's explanation)."""

    @property
    def witness_lines(self) -> frozenset[int]:
        return frozenset(line for _, groups in self.violations for w in groups for line in w)

    def html(self) -> str:
        style = {"valid": "good", "invalid": "bad"}.get(self.verdict, "unsure")
        parts = [
            f"<p class='verdict {style}'>Verdict: {_esc(self.verdict.upper())}"
            + (f" (decided by {_esc(self.consistency)})" if self.consistency else "")
            + "</p><ul class='verdicts'>"
        ]
        for name, groups in self.violations:
            shown = ", ".join("lines " + " ".join(map(str, w)) for w in groups) or "see below"
            parts.append(f"<li>violation <b>{_esc(name)}</b>: {_esc(shown)}</li>")
        if self.informational:
            found = ", ".join(f"{name} ({n})" for name, n in self.informational)
            parts.append(f"<li>informational: {_esc(found)}</li>")
        if self.linearizable is not None:
            parts.append(f"<li>linearizable: {_esc(self.linearizable)}</li>")
        for key, why in self.explanations:
            why = why if len(why) <= 600 else why[:599] + "…"
            parts.append(f"<li>key {_esc(key)}: {_esc(why)}</li>")
        parts.append("</ul>")
        return "".join(parts)


@attrs.frozen
class Lane:
    label: str
    title: str
    members: tuple[tuple[str | None, Any], ...]
    """(run, process) of every process drawn in this lane."""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _show(value: Any, limit: int = VALUE_CHARS) -> str:
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _seconds(ns: float) -> str:
    return f"{ns / 1e9:.6f}".rstrip("0").rstrip(".") + " s"


def _process_order(who: tuple[str | None, Any]) -> tuple[str, int, int, str]:
    run, process = who
    if isinstance(process, int):
        return (run or "", 0, process, "")
    return (run or "", 1, 0, str(process))


def _who_label(who: tuple[str | None, Any]) -> str:
    run, process = who
    return f"{run}/{process}" if run else str(process)


def lanes_for(spans: Sequence[Span], max_lanes: int = MAX_LANES) -> tuple[list[Lane], dict]:
    """The client lanes and each (run, process)'s lane index: one lane per process, or,
    beyond ``max_lanes`` processes, processes packed into lanes by lifetime (greedy
    interval partitioning: a lane is reused once its last process has finished)."""
    first: dict[tuple[str | None, Any], int] = {}
    last: dict[tuple[str | None, Any], float] = {}
    for s in spans:
        who = (s.run, s.process)
        first[who] = min(first.get(who, s.start), s.start)
        end = math.inf if s.end is None else s.end
        last[who] = max(last.get(who, end), end)
    processes = sorted(first, key=_process_order)
    if len(processes) <= max_lanes:
        lanes = [Lane(f"p{_who_label(w)}", f"process {_who_label(w)}", (w,)) for w in processes]
        return lanes, {w: i for i, w in enumerate(processes)}
    by_start = sorted(processes, key=lambda w: (first[w], _process_order(w)))
    free: list[tuple[float, int]] = []
    groups: list[list[tuple[str | None, Any]]] = []
    index: dict[tuple[str | None, Any], int] = {}
    for who in by_start:
        if free and free[0][0] < first[who]:
            _, lane = heapq.heappop(free)
        else:
            lane = len(groups)
            groups.append([])
        groups[lane].append(who)
        index[who] = lane
        heapq.heappush(free, (last[who], lane))
    lanes = []
    for members in groups:
        names = [_who_label(w) for w in members]
        shown = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
        lanes.append(Lane(f"p{shown}", "processes " + ", ".join(names), tuple(members)))
    return lanes, index


def _nice_step(span_ns: float, ticks: int = 8) -> float:
    raw = max(span_ns / ticks, 1.0)
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


class _Canvas:
    def __init__(self, t0: int, t1: int) -> None:
        self.t0 = t0
        self.span = max(t1 - t0, 1)
        self.parts: list[str] = []

    def x(self, t: float) -> float:
        return LEFT + (t - self.t0) * WIDTH / self.span

    def add(self, text: str) -> None:
        self.parts.append(text)


def _span_title(s: Span, t0: int) -> str:
    head = f"process {_who_label((s.run, s.process))}: {s.f}"
    if s.key is not None:
        head += f" {s.key}"
    lines = [head, f"invoked at {_seconds(s.start - t0)} with {_show(s.invoke_value)}"]
    if s.end is None:
        lines.append("never completed")
    else:
        latency_ms = (s.end - s.start) / 1e6
        done = _seconds(s.end - t0)
        lines.append(f"{s.type} at {done} ({latency_ms:.3f} ms): {_show(s.value)}")
    if s.line is not None:
        lines.append(f"history line {s.line}")
    return "\n".join(lines)


def render_timeline(
    history: History,
    *,
    title: str | None = None,
    max_bars: int = MAX_BARS,
    max_lanes: int = MAX_LANES,
    verdict: VerdictBanner | None = None,
) -> str:
    """The timeline page of ``history`` (a path, ops, or `Collected`) as HTML text, headed
    by ``verdict`` when given."""
    data = collect(history)
    lanes, lane_of = lanes_for(data.spans, max_lanes)
    has_nemesis = bool(data.events or data.faults)
    rows = len(lanes) + (1 if has_nemesis else 0)
    lane_h = 18 if rows <= 40 else max(4, 720 // max(rows, 1))
    bar_h = max(2, lane_h - 4)
    height = TOP + rows * lane_h + BOTTOM
    t1 = max(data.t_max, data.t_min + 1)
    canvas = _Canvas(data.t_min, t1)
    canvas.add(
        f'<svg class="timeline" width="{LEFT + WIDTH + 20}" height="{height}" '
        f'viewBox="0 0 {LEFT + WIDTH + 20} {height}" role="img">'
    )
    y_of_row = [TOP + i * lane_h for i in range(rows)]
    bottom = TOP + rows * lane_h

    # lanes: background stripes and labels
    labels = (["nemesis"] if has_nemesis else []) + [lane.label for lane in lanes]
    titles = (["the nemesis: fault ops"] if has_nemesis else []) + [lane.title for lane in lanes]
    for row, (label, tip) in enumerate(zip(labels, titles, strict=True)):
        top = y_of_row[row]
        canvas.add(
            f'<rect class="lane lane{row % 2}" x="{LEFT}" y="{top}" width="{WIDTH}" '
            f'height="{lane_h}"><title>{_esc(tip)}</title></rect>'
        )
        if lane_h >= 9:
            short = label if len(label) <= 18 else label[:17] + "…"
            canvas.add(
                f'<text class="label" x="{LEFT - 6}" y="{top + lane_h - 5}">{_esc(short)}</text>'
            )

    # time grid and axis
    step = _nice_step(canvas.span)
    tick = math.ceil(data.t_min / step) * step
    while tick <= t1:
        x = canvas.x(tick)
        canvas.add(f'<line class="grid" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{bottom}"/>')
        canvas.add(
            f'<text class="tick" x="{x:.1f}" y="{bottom + 16}">'
            f"{_esc(_seconds(tick - data.t_min))}</text>"
        )
        tick += step

    # nemesis events
    if has_nemesis:
        y = y_of_row[0] + (lane_h - bar_h) / 2
        for event in data.events[:max_bars]:
            x = canvas.x(event.time)
            when = _seconds(event.time - data.t_min)
            tip = f"{event.process} {event.type} {event.f} at {when}"
            if event.value is not None:
                tip += f"\n{_show(event.value)}"
            canvas.add(
                f'<rect class="nem" x="{x - 1:.1f}" y="{y:.1f}" width="2" height="{bar_h}">'
                f"<title>{_esc(tip)}</title></rect>"
            )

    first_row = 1 if has_nemesis else 0
    downsampled = len(data.spans) > max_bars
    witnesses = verdict.witness_lines if verdict is not None else frozenset()
    if not downsampled:
        for s in data.spans:
            y = y_of_row[first_row + lane_of[(s.run, s.process)]] + (lane_h - bar_h) / 2
            x0 = canvas.x(s.start)
            x1 = canvas.x(s.end if s.end is not None else t1)
            mark = " witness" if s.line in witnesses or s.end_line in witnesses else ""
            canvas.add(
                f'<rect class="op {_TYPE_CLASS.get(s.type, "pend")}{mark}" x="{x0:.1f}" '
                f'y="{y:.1f}" width="{max(x1 - x0, 1.0):.1f}" height="{bar_h}">'
                f"<title>{_esc(_span_title(s, data.t_min))}</title></rect>"
            )
    else:
        _binned(canvas, data, lanes, lane_of, y_of_row, first_row, lane_h, bar_h, max_bars)

    # fault periods: shaded over every lane (drawn last, on top, letting the pointer
    # through to the bars), each with a tab in the top margin carrying its tooltip
    colour_of = {name: i % len(FAULT_COLOURS) for i, name in enumerate(data.fault_names)}
    for period in data.faults:
        x0 = canvas.x(period.start)
        x1 = canvas.x(period.end if period.end is not None else t1)
        width = max(x1 - x0, 1.0)
        if period.end is not None:
            until = _seconds(period.end - data.t_min)
        else:
            until = "the end (never stopped)"
        tip = f"{period.fault}: from {_seconds(period.start - data.t_min)} to {until}"
        if period.value is not None:
            tip += f"\n{_show(period.value)}"
        colour = colour_of[period.fault]
        canvas.add(
            f'<rect class="fault f{colour}" x="{x0:.1f}" y="{TOP}" '
            f'width="{width:.1f}" height="{bottom - TOP}"/>'
        )
        canvas.add(
            f'<rect class="faulttab f{colour}" x="{x0:.1f}" y="{TOP - 16}" width="{width:.1f}" '
            f'height="14"><title>{_esc(tip)}</title></rect>'
        )
        canvas.add(
            f'<text class="faultlabel" x="{x0 + 2:.1f}" y="{TOP - 5}">{_esc(period.fault)}</text>'
        )

    canvas.add("</svg>")
    return _page(data, canvas, title, len(lanes), downsampled, max_bars, verdict)


def _look(cell: list[Span]) -> tuple[str, str]:
    """(the most common outcome, the worst outcome) of the ops in a bin."""
    counts = Counter(s.type for s in cell)
    common = max(counts, key=lambda t: (counts[t], _SEVERITY.get(t, 0)))
    worst = max(counts, key=lambda t: _SEVERITY.get(t, 0))
    return common, worst


def _binned(
    canvas: _Canvas,
    data: Collected,
    lanes: list[Lane],
    lane_of: dict,
    y_of_row: list[int],
    first_row: int,
    lane_h: int,
    bar_h: int,
    max_bars: int,
) -> None:
    """Per lane, one bar per run of consecutive non-empty time bins that look alike: the
    bar in the colour of their most common outcome, with a strip at its foot in the colour
    of the worst one when they differ (a failure stays visible among many oks)."""
    bins = max(20, min(WIDTH, max_bars // max(len(lanes), 1)))
    width_ns = canvas.span / bins
    cells: dict[tuple[int, int], list[Span]] = {}
    for s in data.spans:
        b = min(int((s.start - canvas.t0) / width_ns), bins - 1)
        cells.setdefault((lane_of[(s.run, s.process)], b), []).append(s)
    for lane in range(len(lanes)):
        y = y_of_row[first_row + lane] + (lane_h - bar_h) / 2
        run: list[Span] = []
        run_look = ("", "")
        run_from = 0
        for b in range(bins + 1):
            cell = cells.get((lane, b)) if b < bins else None
            look = _look(cell) if cell else ("", "")
            if run and (look != run_look or not cell):
                _bin_bar(canvas, run, run_look, run_from, b, width_ns, y, bar_h)
                run = []
            if cell:
                if not run:
                    run_from, run_look = b, look
                run.extend(cell)


def _bin_bar(
    canvas: _Canvas,
    spans: list[Span],
    look: tuple[str, str],
    first_bin: int,
    end_bin: int,
    width_ns: float,
    y: float,
    bar_h: int,
) -> None:
    start = canvas.t0 + first_bin * width_ns
    end = canvas.t0 + end_bin * width_ns
    by_type = Counter(s.type for s in spans)
    by_f = Counter(s.f for s in spans)
    latencies = [s.latency for s in spans if s.latency is not None]
    tip = [
        f"{len(spans)} ops invoked from {_seconds(start - canvas.t0)} to "
        f"{_seconds(end - canvas.t0)}",
        ", ".join(f"{t} {n}" for t, n in sorted(by_type.items())),
        ", ".join(f"{f} {n}" for f, n in sorted(by_f.items())),
    ]
    if latencies:
        tip.append(f"latency up to {max(latencies) / 1e6:.3f} ms")
    x0, x1 = canvas.x(start), canvas.x(end)
    width = max(x1 - x0, 1.0)
    common, worst = look
    canvas.add(
        f'<rect class="op bin {_TYPE_CLASS.get(common, "pend")}" x="{x0:.1f}" y="{y:.1f}" '
        f'width="{width:.1f}" height="{bar_h}"><title>{_esc(chr(10).join(tip))}</title></rect>'
    )
    if worst != common:
        strip = max(2, bar_h // 3)
        canvas.add(
            f'<rect class="strip {_TYPE_CLASS.get(worst, "pend")}" x="{x0:.1f}" '
            f'y="{y + bar_h - strip:.1f}" width="{width:.1f}" height="{strip}"/>'
        )


_CSS = """
body { font-family: sans-serif; margin: 1.2em; color: #222; }
h1 { font-size: 1.25em; margin-bottom: .2em; }
.meta { color: #555; margin: .2em 0 .8em; }
.scroll { overflow: auto; border: 1px solid #ddd; max-height: 85vh; }
svg.timeline { font-family: monospace; font-size: 10px; display: block; }
.lane0 { fill: #fafafa; } .lane1 { fill: #f0f2f4; }
.label { text-anchor: end; fill: #333; }
.grid { stroke: #d0d4d8; stroke-width: .5; }
.tick { text-anchor: middle; fill: #555; }
.op { stroke: none; } .op:hover, .nem:hover { stroke: #000; stroke-width: 1; }
.ok { fill: #3fa34d; } .fail { fill: #d64545; } .info { fill: #f0a202; }
.pend { fill: #9e9e9e; } .bin { opacity: .85; }
.nem { fill: #333; }
.fault { opacity: .2; pointer-events: none; } .faulttab { opacity: .45; }
.faultlabel { fill: #222; font-size: 10px; pointer-events: none; }
.strip { pointer-events: none; }
.witness { stroke: #b00020; stroke-width: 2; }
.verdict { font-weight: bold; margin: .3em 0; } .good { color: #2e7d32; }
.bad { color: #b00020; } .unsure { color: #b26a00; } .verdicts { margin: .2em 0 .6em; }
""" + "".join(f".f{i} {{ fill: {c}; }} " for i, c in enumerate(FAULT_COLOURS))

_LEGEND = (
    '<span class="key"><svg width="12" height="10"><rect class="ok" width="12" height="10"/>'
    "</svg> ok</span> "
    '<span class="key"><svg width="12" height="10"><rect class="fail" width="12" height="10"/>'
    "</svg> fail</span> "
    '<span class="key"><svg width="12" height="10"><rect class="info" width="12" height="10"/>'
    "</svg> info (unknown)</span> "
    '<span class="key"><svg width="12" height="10"><rect class="pend" width="12" height="10"/>'
    "</svg> never completed</span>"
)


def _page(
    data: Collected,
    canvas: _Canvas,
    title: str | None,
    n_lanes: int,
    downsampled: bool,
    max_bars: int,
    verdict: VerdictBanner | None = None,
) -> str:
    heading = title or f"Timeline: {data.source}"
    by_type = Counter(s.type for s in data.spans)
    by_f = Counter((s.f, s.type) for s in data.spans)
    meta = (
        f"{data.ops} history lines, {len(data.spans)} client ops in {n_lanes} lanes, "
        f"{len(data.events)} nemesis events, {len(data.faults)} fault periods; "
        f"{_seconds(data.t_max - data.t_min)} of history"
    )
    note = ""
    if downsampled:
        note = (
            f"<p class='meta'>More than {max_bars} ops: each bar stands for the ops invoked "
            "in a stretch of time in its lane, coloured by their most common outcome, with a "
            "strip at its foot for the worst one; hover for the counts.</p>"
        )
    rows = "".join(
        f"<tr><td>{_esc(f)}</td><td>{_esc(t)}</td><td>{n}</td></tr>"
        for (f, t), n in sorted(by_f.items())
    )
    faults = "".join(
        f"<tr><td>{_esc(p.fault)}</td><td>{_esc(_seconds(p.start - data.t_min))}</td>"
        f"<td>{_esc(_seconds(p.end - data.t_min) if p.end is not None else 'never')}</td>"
        f"<td>{_esc(_show(p.value))}</td></tr>"
        for p in data.faults
    )
    rejected = "".join(f"<li>{_esc(r)}</li>" for r in data.rejected[:20])
    if len(data.rejected) > 20:
        rejected += f"<li>… and {len(data.rejected) - 20} more</li>"
    outcome = ", ".join(f"{t} {n}" for t, n in sorted(by_type.items()))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_esc(heading)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_esc(heading)}</h1>{verdict.html() if verdict is not None else ''}"
        f"<p class='meta'>{_esc(meta)}</p>"
        f"<p class='meta'>{_LEGEND} — outcomes: {_esc(outcome or 'none')}; times relative "
        f"to the first event; shaded: fault periods</p>{note}"
        f"<div class='scroll'>{''.join(canvas.parts)}</div>"
        "<h2>Ops by f and outcome</h2><table><tr><th>f</th><th>type</th><th>ops</th></tr>"
        f"{rows}</table>"
        "<h2>Fault periods</h2><table><tr><th>fault</th><th>from</th><th>to</th>"
        f"<th>value</th></tr>{faults}</table>"
        + (f"<h2>Rejected history lines</h2><ul>{rejected}</ul>" if data.rejected else "")
        + "</body></html>\n"
    )


def write_timeline(
    history: History,
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    max_bars: int = MAX_BARS,
    max_lanes: int = MAX_LANES,
    verdict: VerdictBanner | None = None,
) -> Path:
    """Render ``history`` and write the page to ``path`` (e.g. a run's
    ``timeline.html``)."""
    out = Path(path)
    page = render_timeline(
        history, title=title, max_bars=max_bars, max_lanes=max_lanes, verdict=verdict
    )
    out.write_text(page, encoding="utf-8")
    return out


__all__ = [
    "MAX_BARS",
    "MAX_LANES",
    "Lane",
    "VerdictBanner",
    "lanes_for",
    "render_timeline",
    "write_timeline",
]
