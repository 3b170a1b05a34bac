"""A self-contained HTML page per key that shows why it is (not) linearizable, in the
spirit of Porcupine's visualization (``visualization.go``): one row per process, each
operation a bar from its call to its return (open-ended when indeterminate), and the
longest partial linearization the search found drawn over it: linearized bars are green and
numbered in linearization order, the operation that could not be placed next is red, and a
table lists the linearization with the model state after each step.

For the Kafka-log checker (no linearization to show) the witnessing ops are red instead.
The page has no scripts and no external resources: it opens from a CI artifact as is.
Histories larger than `WINDOW_OPS` are cut to the operations around the failure.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import attrs

from jepsen_py.checker.model import Model, Operation
from jepsen_py.checker.records import KeyResult
from jepsen_py.checker.result import Verdict
from jepsen_py.history.op import Op

WINDOW_OPS = 400
"""At most this many bars are drawn; a bigger history is cut around the failure."""

ROW = 28
COLUMN = 12
LEFT = 90


@attrs.frozen
class Bar:
    process: Any
    start: int
    end: int | None
    label: str
    kind: str  # "linearized", "blocked", "witness", "plain"
    order: int | None = None
    line: int | None = None


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def bars_from_partition(model: Model, ops: Sequence[Operation], result: Any) -> list[Bar]:
    """Bars of a WGL result: the linearization numbered, the blocked op marked."""
    order = {i: n for n, i in enumerate(result.linearization, start=1)}
    bars = []
    for i, op in enumerate(ops):
        if i == result.blocked:
            kind = "blocked"
        elif i in order:
            kind = "linearized"
        else:
            kind = "plain"
        line = op.invoke.line if op.invoke is not None else None
        label = model.describe_operation(op.input, op.output)
        bars.append(Bar(op.process, op.call, op.ret, label, kind, order.get(i), line))
    return bars


def bars_from_ops(ops: Sequence[Op], witness: Sequence[Op]) -> list[Bar]:
    """Bars of raw ops (invocation to completion per process); witness ops marked."""
    marked = {op.index for op in witness}
    open_: dict[Any, tuple[int, Op]] = {}
    bars = []
    for position, op in enumerate(ops):
        who = (op.run, op.process)
        if op.type == "invoke":
            open_[who] = (position, op)
            continue
        start, invoke = open_.pop(who, (position, op))
        end = None if op.type == "info" else position
        hit = invoke.index in marked or op.index in marked
        label = f"{op.f} {_short(invoke.value)} -> {op.type} {_short(op.value)}"
        bars.append(
            Bar(op.process, start, end, label, "witness" if hit else "plain", None, op.line)
        )
    for start, invoke in open_.values():
        hit = invoke.index in marked
        label = f"{invoke.f} {_short(invoke.value)} -> pending"
        kind = "witness" if hit else "plain"
        bars.append(Bar(invoke.process, start, None, label, kind, None, invoke.line))
    return bars


def _short(value: Any, limit: int = 60) -> str:
    text = "nil" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _window(bars: list[Bar]) -> tuple[list[Bar], bool]:
    if len(bars) <= WINDOW_OPS:
        return bars, False
    focus = [b for b in bars if b.kind in ("blocked", "witness")]
    if not focus:
        numbered = sorted((b for b in bars if b.order is not None), key=lambda b: -(b.order or 0))
        focus = numbered[:1] or bars[-1:]
    centre = min(b.start for b in focus)
    ranked = sorted(
        bars, key=lambda b: (b.kind not in ("blocked", "witness"), abs(b.start - centre))
    )
    kept = ranked[:WINDOW_OPS]
    return sorted(kept, key=lambda b: b.start), True


def _svg(bars: list[Bar]) -> str:
    processes = sorted({b.process for b in bars}, key=lambda p: (isinstance(p, str), str(p)))
    row_of = {p: n for n, p in enumerate(processes)}
    points = sorted({b.start for b in bars} | {b.end for b in bars if b.end is not None})
    column = {p: n for n, p in enumerate(points)}
    last = len(points) + 1
    width = LEFT + (last + 1) * COLUMN + 20
    height = len(processes) * ROW + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="monospace" font-size="10">'
    ]
    for p, n in row_of.items():
        y = 10 + n * ROW
        parts.append(f'<text x="4" y="{y + 16}">process {_esc(p)}</text>')
        parts.append(
            f'<line x1="{LEFT}" y1="{y + ROW - 2}" x2="{width}" y2="{y + ROW - 2}" class="grid"/>'
        )
    for b in bars:
        y = 10 + row_of[b.process] * ROW + 3
        x0 = LEFT + column[b.start] * COLUMN
        x1 = LEFT + (column[b.end] if b.end is not None else last) * COLUMN + COLUMN - 2
        cls = b.kind + (" open" if b.end is None else "")
        tip = b.label + (f" (line {b.line})" if b.line else "")
        if b.order is not None:
            tip = f"#{b.order} " + tip
        parts.append(
            f'<g class="{cls}"><title>{_esc(tip)}</title>'
            f'<rect x="{x0}" y="{y}" width="{max(x1 - x0, 4)}" height="{ROW - 8}" rx="3"/>'
        )
        text = (f"{b.order}: " if b.order is not None else "") + b.label
        room = max((x1 - x0) // 6 - 1, 0)
        if room >= 3:
            shown = text if len(text) <= room else text[: room - 1] + "…"
            parts.append(f'<text x="{x0 + 3}" y="{y + 14}">{_esc(shown)}</text>')
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


_CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; }
.verdict-ok { color: #1a7f37; } .verdict-illegal { color: #c62828; }
.verdict-unknown { color: #9a6700; }
pre { background: #f6f8fa; padding: .8em; white-space: pre-wrap; }
.timeline { overflow-x: auto; border: 1px solid #ddd; padding: 4px; }
rect { stroke: #555; stroke-width: .5; } .plain rect { fill: #e3e6ea; }
.linearized rect { fill: #a7e3b5; }
.blocked rect, .witness rect { fill: #f4a3a3; stroke: #c62828; stroke-width: 1.5; }
.open rect { stroke-dasharray: 4 2; } .grid { stroke: #f0f0f0; }
table { border-collapse: collapse; font-size: .9em; }
td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; }
.legend span { display: inline-block; padding: 0 .6em; margin-right: .6em; border-radius: 3px; }
"""


def render_key_report(path: str, result: KeyResult, model: Model | None, ops: Sequence[Op]) -> str:
    """The HTML page of one key's result (see the module docstring)."""
    key = "(none)" if result.key is None else result.key
    title = f"{path} — key {key}" + (f", run {result.run}" if result.run else "")
    sections: list[str] = []
    checked = result.checked[0] if result.checked else None
    if model is not None and checked is not None:
        failing = next((r for r in result.checked if r.verdict is Verdict.ILLEGAL), checked)
        bars = bars_from_partition(model, failing.operations, failing)
        sections.append(_linearization_table(model, failing))
    else:
        bars = bars_from_ops(ops, result.witness)
    shown, cut = _window(bars)
    note = (
        f"<p>Showing {len(shown)} of {len(bars)} operations, those nearest the failure.</p>"
        if cut
        else ""
    )
    legend = (
        '<p class="legend"><span style="background:#a7e3b5">linearized (#order)</span>'
        '<span style="background:#f4a3a3">could not be placed / witness</span>'
        '<span style="background:#e3e6ea">not linearized</span>'
        "dashed: indeterminate (info or pending)</p>"
    )
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_esc(title)}: <span class='verdict-{result.verdict.value}'>"
        f"{_esc(result.verdict.value.upper())}</span></h1>"
        f"<p>{result.ops} operations, checked in {result.seconds:.3f} s"
        + (f" with the {_esc(model.name)} model" if model is not None else "")
        + "</p>"
        + (f"<pre>{_esc(result.explanation)}</pre>" if result.explanation else "")
        + legend
        + note
        + f"<div class='timeline'>{_svg(shown)}</div>"
        + "".join(sections)
        + "</body></html>\n"
    )


def _linearization_table(model: Model, result: Any) -> str:
    rows = []
    state = model.init()
    for n, i in enumerate(result.linearization, start=1):
        op = result.operations[i]
        _, state = model.step(state, op.input, op.output)
        line = op.invoke.line if op.invoke is not None else ""
        rows.append(
            f"<tr><td>{n}</td><td>{_esc(op.process)}</td>"
            f"<td>{_esc(model.describe_operation(op.input, op.output))}</td>"
            f"<td>{_esc(line)}</td><td>{_esc(model.describe_state(state))}</td></tr>"
        )
    blocked = ""
    if result.blocked is not None:
        op = result.operations[result.blocked]
        line = op.invoke.line if op.invoke is not None else ""
        blocked = (
            f"<p>Could not be placed next: process {_esc(op.process)}, "
            f"<b>{_esc(model.describe_operation(op.input, op.output))}</b>"
            f"{f' (line {_esc(line)})' if line else ''}, in state "
            f"<b>{_esc(model.describe_state(state))}</b>.</p>"
        )
    heading = "Linearization" if result.verdict is Verdict.OK else "Longest partial linearization"
    return (
        f"<h2>{heading} ({len(result.linearization)} of {len(result.operations)})</h2>"
        + blocked
        + "<table><tr><th>#</th><th>process</th><th>operation</th><th>line</th>"
        "<th>state after</th></tr>" + "".join(rows) + "</table>"
    )
