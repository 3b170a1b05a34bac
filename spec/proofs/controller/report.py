"""Reports of controller proof runs: the invariant x action table, CTIs as trace tables, JSON.

A cell aggregates every instance of an action (each broker, partition and request kind). A
counterexample to induction is rendered with ``spec.trace.render_table`` and the
controller spec's columns: row 1 the pre-state, row 2 the action and the post-state.
"""

from __future__ import annotations

import textwrap
from typing import Any

from spec.controller import Controller
from spec.explore import TraceStep
from spec.proofs.controller.invariants import REGISTRY
from spec.proofs.controller.obligations import COUNTEREXAMPLE, PROVED, UNKNOWN, Cti, Result, Run
from spec.trace import render_table

SYMBOL = {PROVED: "ok", COUNTEREXAMPLE: "CTI", UNKNOWN: "unknown"}

_ABBREV = {
    "session_expires": "expire",
    "reconnect": "reconnect",
    "elect_controller": "elect_ctl",
    "resign": "resign",
    "elect_leader": "elect_ldr",
    "shrink_isr": "shrink",
    "write_refused": "refused",
    "partition_version_conflict": "conflict",
    "apply_leader_and_isr": "apply_LAI",
    "apply_stop_replica": "apply_SR",
    "apply_update_metadata": "apply_UM",
    "reject_stale_request": "reject",
}


def render_cti(run: Run, invariant: str, cti: Cti) -> str:
    spec = Controller(run.config.params())
    if cti.step.action == "Init":
        table = render_table(spec, [TraceStep(None, cti.post)])
        return f"{invariant} fails in the initial state:\n{table}"
    lines = [
        f"{invariant} is not preserved by {cti.step.describe()} (counterexample to "
        "induction: the pre-state satisfies every assumed invariant):"
    ]
    table = render_table(spec, [TraceStep(None, cti.pre), TraceStep(cti.step, cti.post)])
    lines.append(table.rstrip().replace(" Init ", " pre  ", 1))
    lines += [f"  note: {n}" for n in cti.notes]
    return "\n".join(lines) + "\n"


def render_run(run: Run, *, with_ctis: bool = True) -> str:
    table = run.table()
    actions: list[str] = []
    for r in run.results:
        if r.action not in actions:
            actions.append(r.action)
    short = [_ABBREV.get(a, a) for a in actions]
    width = max(len(name) for name in [*table, "invariant"])
    col = max(9, *(len(s) for s in short))
    lines = [
        f"kmodel prove: {run.config.describe()}",
        *textwrap.wrap(
            f"assumed: {', '.join(run.assumed)}",
            width=100,
            initial_indent="  ",
            subsequent_indent="    ",
        ),
        "",
        "invariant".ljust(width) + "  " + "  ".join(s.ljust(col) for s in short),
    ]
    for name, cells in table.items():
        row = []
        for action in actions:
            cell = cells.get(action)
            row.append("" if cell is None else f"{SYMBOL[cell.status]} {cell.seconds:.2f}")
        lines.append(name.ljust(width) + "  " + "  ".join(c.ljust(col) for c in row).rstrip())
    lines.append("")
    kinds = {name: inv.kind for name, inv in REGISTRY.items()}
    legend = ", ".join(f"{_ABBREV[a]} = {a}" for a in actions if a in _ABBREV)
    lines.append(f"cells: status and z3 seconds over every instance; columns: {legend}")
    spec_names = [n for n in table if kinds.get(n) == "spec" or n not in kinds]
    lines.append(f"the spec's properties: {', '.join(spec_names)}; the rest is the strengthening")
    counts = {s: sum(1 for r in run.results if r.status == s) for s in SYMBOL}
    lines.append(
        f"{len(run.results)} obligations: {counts[PROVED]} proved, "
        f"{counts[COUNTEREXAMPLE]} counterexamples, {counts[UNKNOWN]} unknown; "
        f"z3 time {sum(r.seconds for r in run.results):.2f} s, wall {run.seconds:.2f} s"
    )
    if with_ctis:
        for r in run.results:
            if r.cti is not None:
                lines += ["", render_cti(run, r.invariant, r.cti).rstrip()]
            elif r.status == UNKNOWN:
                lines += ["", f"{r.invariant} / {r.action}: UNKNOWN ({r.reason or 'timeout'})"]
    return "\n".join(lines) + "\n"


def result_json(r: Result, spec: Controller) -> dict[str, Any]:
    out: dict[str, Any] = {
        "invariant": r.invariant,
        "action": r.action,
        "status": r.status,
        "seconds": round(r.seconds, 4),
        "queries": r.queries,
    }
    if r.reason:
        out["reason"] = r.reason
    if r.cti is not None:
        out["cti"] = {
            "step": r.cti.step.describe(),
            "pre": spec.to_json(r.cti.pre),
            "post": spec.to_json(r.cti.post),
        }
    return out


def run_json(run: Run) -> dict[str, Any]:
    spec = Controller(run.config.params())
    counts = {s: sum(1 for r in run.results if r.status == s) for s in SYMBOL}
    return {
        "spec": "controller",
        "config": run.config.describe(),
        "assumed": list(run.assumed),
        "status": run.status,
        "obligations": len(run.results),
        "proved": counts[PROVED],
        "counterexamples": counts[COUNTEREXAMPLE],
        "unknown": counts[UNKNOWN],
        "z3_seconds": round(sum(r.seconds for r in run.results), 3),
        "seconds": round(run.seconds, 3),
        "enabled": {label: answer for label, answer in run.enabled},
        "results": [result_json(r, spec) for r in run.results],
    }
