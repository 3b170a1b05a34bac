"""Counterexample traces as a reader sees them: a table, JSON, and the state graph as DOT.

The table has one row per step and one column group per replica, as the spec's
``columns(state)`` lays them out. It is plain fixed-width text so that it reads the same in
a terminal, in a scenario file under review, and in the docs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec.explore import CheckResult, TraceStep
from spec.framework import Spec
from spec.liveness import Lasso


def render_table(spec: Spec, trace: Sequence[TraceStep]) -> str:
    """The trace as a fixed-width table: step number, action, then the spec's columns."""
    if not trace:
        return "(empty trace)\n"
    rows = [spec.columns(step.state) for step in trace]
    layout = [(group, column) for group, column, _ in rows[0]]
    header_group = ["", ""] + [group for group, _ in layout]
    header_col = ["#", "action"] + [column for _, column in layout]
    body = []
    for number, (step, cells) in enumerate(zip(trace, rows, strict=True), start=1):
        label = "Init" if step.step is None else step.step.describe()
        body.append([str(number), label, *[value for _, _, value in cells]])
    widths = [
        max(len(header_col[i]), *(len(row[i]) for row in body)) for i in range(len(header_col))
    ]
    # Column groups: print each group's name once, over its first column.
    group_line = []
    previous = None
    for group in header_group:
        group_line.append(group if group != previous else "")
        previous = group

    def fmt(cells: list[str]) -> str:
        return " | ".join(cell.ljust(widths[i]) for i, cell in enumerate(cells)).rstrip()

    # A group label may be wider than its first column: let it spill over, left-aligned.
    group_text = ""
    position = 0
    for i, group in enumerate(group_line):
        if group:
            group_text = group_text.ljust(position) + group
        position += widths[i] + 3
    lines = [group_text.rstrip(), fmt(header_col), "-+-".join("-" * w for w in widths)]
    lines += [fmt(row) for row in body]
    return "\n".join(lines) + "\n"


def render_lasso(spec: Spec, lasso: Lasso) -> str:
    """A liveness counterexample: the table of the prefix and the cycle, then where the
    behavior repeats forever."""
    table = render_table(spec, lasso.prefix + lasso.cycle)
    last = len(lasso.prefix)
    if not lasso.cycle:
        tail = (
            f"then state {last} repeats forever (the system stutters there: no fair action "
            "is enabled)"
        )
    else:
        tail = (
            f"state {last + len(lasso.cycle)} is state {last}: steps {last + 1}-"
            f"{last + len(lasso.cycle)} repeat forever"
        )
    return table + tail + "\n"


def trace_json(spec: Spec, trace: Sequence[TraceStep]) -> list[dict[str, Any]]:
    """The trace as JSON-ready data: one object per step with the action and the state."""
    out = []
    for number, step in enumerate(trace, start=1):
        out.append(
            {
                "step": number,
                "action": None if step.step is None else step.step.action,
                "args": {}
                if step.step is None
                else {name: _jsonable(value) for name, value in step.step.args},
                "state": spec.to_json(step.state),
            }
        )
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, frozenset):
        return sorted(value)
    if hasattr(value, "describe"):
        return value.describe()
    return value


def result_json(result: CheckResult) -> dict[str, Any]:
    """The figures a script needs from a check (``kmodel check --json``)."""
    stats = result.stats
    violation = result.violation
    return {
        "spec": result.spec,
        "mode": result.mode,
        "distinct_states": stats.distinct_states,
        "states_generated": stats.states_generated,
        "depth": stats.depth,
        "seconds": round(stats.seconds, 4),
        "states_per_second": None
        if stats.states_per_second is None
        else round(stats.states_per_second, 1),
        "complete": result.complete,
        "violated": None if violation is None else violation.name,
        "violation_kind": None if violation is None else violation.kind,
        "trace_length": None if violation is None else violation.depth,
        "checked": list(result.checked),
        "symmetry_factor": None
        if stats.symmetry_factor is None
        else round(stats.symmetry_factor, 3),
        "unreduced_states": stats.unreduced_states,
        "seen_bytes": stats.seen_bytes,
        "collision_probability": stats.collision_probability,
        "coverage": {
            name: {"fired": stats.fired[name], "new_states": stats.new_states[name]}
            for name in stats.fired
        },
        "sometimes": {name: trace is not None for name, trace in result.sometimes.items()},
        "warnings": list(result.warnings),
    }


def to_dot(spec: Spec, result: CheckResult) -> str:
    """The explored state graph in Graphviz DOT (run ``check(..., graph=True)`` first)."""
    if result.graph is None or result.graph_states is None:
        raise ValueError("the check was run without graph=True; no graph to draw")
    lines = [f'digraph "{spec.name}" {{', "  node [shape=box, fontname=monospace];"]
    for number, state in enumerate(result.graph_states):
        label = spec.short(state).replace('"', '\\"')
        lines.append(f'  s{number} [label="{label}"];')
    for src, dst, action in result.graph:
        lines.append(f'  s{src} -> s{dst} [label="{action}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"
