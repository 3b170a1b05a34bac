"""The demo's liveness stage: what must eventually happen, checked under fairness on the
state graph (``spec.liveness``). The protocol as Kafka runs it makes progress; each broken
variant gives a lasso (a behavior that repeats forever without the good thing happening),
written to ``out/traces/<name>.txt``; and the published 2018 model's KIP-101 variant
deadlocks (a follower whose truncation step the model disables can never follow)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import attrs

from spec.controller import Controller
from spec.controller import Params as ControllerParams
from spec.framework import Spec
from spec.liveness import check_liveness
from spec.replication import Params, Replication
from spec.trace import render_lasso


@attrs.frozen
class LivenessCase:
    name: str
    title: str
    spec: Spec
    expect: str | None
    """The property expected to fail, or None when every property must hold."""
    command: str


def cases() -> tuple[LivenessCase, ...]:
    return (
        LivenessCase(
            "replication-progress",
            "replication makes progress (kip320)",
            Replication(Params()),
            None,
            "kmodel check replication",
        ),
        LivenessCase(
            "follower-stops-fetching",
            "a follower that stops fetching stalls the HW",
            Replication(Params(bugs=frozenset({"follower_stops_fetching"}))),
            "LeaderCommitsItsLog",
            "kmodel check replication --bug follower_stops_fetching",
        ),
        LivenessCase(
            "published-kip101-deadlock",
            "the published model deadlocks under KIP-101",
            Replication(Params(truncation="kip101")),
            "LeaderCommitsItsLog",
            "kmodel check replication --truncation kip101 --invariant LeaderCommitsItsLog",
        ),
        LivenessCase(
            "zombie-steps-down",
            "a zombie controller steps down",
            Controller(ControllerParams()),
            None,
            "kmodel check controller",
        ),
        LivenessCase(
            "zombie-never-resigns",
            "a controller that never resigns stays a zombie",
            Controller(ControllerParams(bugs=frozenset({"zombie_never_resigns"}))),
            "ZombieStepsDown",
            "kmodel check controller --bug zombie_never_resigns",
        ),
    )


def liveness_rows(out: Path) -> list[dict[str, Any]]:
    """Each case checked; each lasso written as a table under ``out/traces``."""
    traces = out / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in cases():
        started = time.perf_counter()
        result = check_liveness(case.spec)
        found = None if result.violation is None else result.violation.name
        row: dict[str, Any] = {
            "name": case.name,
            "title": case.title,
            "expected": case.expect or "holds",
            "found": found or "holds",
            "as_expected": found == case.expect and result.complete,
            "states": result.states,
            "seconds": round(time.perf_counter() - started, 3),
            "command": case.command,
        }
        if result.violation is not None:
            lasso = result.violation.lasso
            path = traces / f"{case.name}.txt"
            path.write_text(f"# {case.title}\n# {case.command}\n\n{render_lasso(case.spec, lasso)}")
            row["prefix_length"] = len(lasso.prefix)
            row["cycle_length"] = len(lasso.cycle)
            row["trace"] = str(path)
        rows.append(row)
    return rows
