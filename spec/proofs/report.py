"""Reports of proof runs: the invariant x action table, counterexamples as trace tables, JSON.

A counterexample to induction is rendered with ``spec.trace.render_table``, the table the
model checker prints for a trace: row 1 is the pre-state (labelled ``CTI pre``), row 2 the
action with its arguments and the post-state. The requests and counters, which the trace
table does not show, follow it.
"""

from __future__ import annotations

import textwrap
from typing import Any

from spec.explore import TraceStep
from spec.proofs.encoding import Config
from spec.proofs.obligations import COUNTEREXAMPLE, PROVED, UNKNOWN, Cti, Result, Run
from spec.replication import Params, Replication, State
from spec.replication.fencing import FENCED_FORM
from spec.trace import render_table

SYMBOL = {PROVED: "ok", COUNTEREXAMPLE: "CTI", UNKNOWN: "unknown"}


def spec_for(config: Config) -> Replication:
    """A spec instance whose ``columns`` render the configuration's states."""
    return Replication(
        Params(
            replicas=config.replicas,
            log_size=config.log_bound,
            truncation=config.truncation,
            model=config.model,
            acks=config.acks,
            min_isr=config.min_isr,
            leader_view=False if config.extended else None,
        )
    )


def _extras(state: State) -> str:
    reqs = " ".join(q.describe() for q in sorted(state.requests, key=lambda q: q.key())) or "-"
    parts = [
        f"requests {reqs}",
        f"next_epoch {state.next_epoch}",
        f"next_id {state.next_record_id}",
    ]
    if state.pending:
        pend = " ".join(f"{w.offset}:{w.id}@{w.leader}" for w in sorted(state.pending, key=_pkey))
        parts.append(f"pending {pend}")
    return "; ".join(parts)


def _pkey(w: Any) -> tuple[int, int, int]:
    return (w.offset, w.id, w.leader)


def render_cti(config: Config, invariant: str, cti: Cti) -> str:
    spec = spec_for(config)
    lines = []
    if cti.pre is None:
        lines.append(f"{invariant} fails in an initial state:")
        lines.append(render_table(spec, [TraceStep(None, cti.post)]).rstrip())
        lines.append(f"  {_extras(cti.post)}")
        return "\n".join(lines) + "\n"
    assert cti.step is not None
    lines.append(
        f"{invariant} is not preserved by {cti.step.describe()} "
        "(counterexample to induction: the pre-state satisfies every assumed invariant):"
    )
    table = render_table(spec, [TraceStep(None, cti.pre), TraceStep(cti.step, cti.post)])
    lines.append(table.rstrip().replace(" Init ", " pre  ", 1))
    lines.append(f"  pre:  {_extras(cti.pre)}")
    lines.append(f"  post: {_extras(cti.post)}")
    lines += [f"  note: {n}" for n in cti.notes]
    return "\n".join(lines) + "\n"


def render_run(run: Run, *, with_ctis: bool = True) -> str:
    """The invariant x action table (status and z3 seconds per cell), then every CTI."""
    table = run.table()
    actions: list[str] = []
    for r in run.results:
        if r.action not in actions:
            actions.append(r.action)
    short = [_abbrev(a) for a in actions]
    width = max(len(name) for name in [*table, "invariant"])
    col = max(9, *(len(s) for s in short))
    lines = [
        f"kmodel prove: {run.config.describe()}",
        *textwrap.wrap(
            f"mode {run.mode}; assumed: {', '.join(run.assumed)}",
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
    legend = ", ".join(f"{_abbrev(a)} = {a}" for a in actions if _abbrev(a) != a)
    lines.append(f"cells: status and z3 seconds; columns: {legend}")
    counts = {s: sum(1 for r in run.results if r.status == s) for s in SYMBOL}
    lines.append(
        f"{len(run.results)} obligations: {counts[PROVED]} proved, "
        f"{counts[COUNTEREXAMPLE]} counterexamples, {counts[UNKNOWN]} unknown; "
        f"z3 time {sum(r.seconds for r in run.results):.2f} s, wall {run.seconds:.2f} s"
    )
    if with_ctis:
        for r in run.results:
            if r.cti is not None:
                lines.append("")
                lines.append(render_cti(run.config, r.invariant, r.cti).rstrip())
            elif r.status == UNKNOWN:
                lines.append("")
                lines.append(f"{r.invariant} / {r.action}: UNKNOWN ({r.reason or 'timeout'})")
    return "\n".join(lines) + "\n"


_ABBREV = {
    "controller_elect": "elect",
    "controller_shrink_isr": "ctl_shrink",
    "controller_failover": "failover",
    "become_leader": "become_ldr",
    "leader_write": "write",
    "leader_shrink_isr": "shrink",
    "leader_expand_isr": "expand",
    "leader_advance_hw": "advance_hw",
    "follower_fetch": "fetch",
    "become_follower": "become_fol",
}


_UNFENCED_FORM = {fenced: step for step, fenced in FENCED_FORM.items()}


def _abbrev(action: str) -> str:
    """A column heading: KIP-320's form of a step is the step's, primed."""
    base = _UNFENCED_FORM.get(action, action)
    short = _ABBREV.get(base, base)
    return short + ("'" if action in _UNFENCED_FORM else "")


def result_json(r: Result) -> dict[str, Any]:
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
            "step": None if r.cti.step is None else r.cti.step.describe(),
            "pre": None if r.cti.pre is None else _state_json(r.cti.pre),
            "post": _state_json(r.cti.post),
        }
    return out


def _state_json(state: State) -> dict[str, Any]:
    return {
        "replicas": {
            str(i + 1): {
                "log": [list(rec) for rec in rep.log],
                "hw": rep.hw,
                "epoch": rep.epoch,
                "leader": rep.leader,
                "isr": sorted(rep.isr),
            }
            for i, rep in enumerate(state.replicas)
        },
        "quorum": {
            "epoch": state.quorum.epoch,
            "leader": state.quorum.leader,
            "isr": sorted(state.quorum.isr),
        },
        "requests": [
            {"epoch": q.epoch, "leader": q.leader, "isr": sorted(q.isr)}
            for q in sorted(state.requests, key=lambda q: q.key())
        ],
        "next_epoch": state.next_epoch,
        "next_record_id": state.next_record_id,
        "pending": [[w.leader, w.offset, w.id] for w in sorted(state.pending, key=_pkey)],
        "acked": [[w.offset, w.id] for w in sorted(state.acked, key=lambda w: (w.offset, w.id))],
    }


def run_json(run: Run) -> dict[str, Any]:
    counts = {s: sum(1 for r in run.results if r.status == s) for s in SYMBOL}
    return {
        "config": run.config.describe(),
        "mode": run.mode,
        "assumed": list(run.assumed),
        "status": run.status,
        "obligations": len(run.results),
        "proved": counts[PROVED],
        "counterexamples": counts[COUNTEREXAMPLE],
        "unknown": counts[UNKNOWN],
        "z3_seconds": round(sum(r.seconds for r in run.results), 3),
        "seconds": round(run.seconds, 3),
        "results": [result_json(r) for r in run.results],
    }
