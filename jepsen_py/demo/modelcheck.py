"""The demo's model-checking stage: parity with the TLA+ model Kafka's engineers published
in 2018 (our checker against TLC's figures), and Kafka's known replication bugs (KIP-101,
KIP-279, KIP-320, unclean election, acks=1, KIP-966) found as shortest counterexamples in
``spec.replication``, with the fixed protocol holding."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson

from spec.explore import check
from spec.outcomes import OUTCOMES
from spec.replication import Params, Replication
from spec.trace import render_table, trace_json

TLC_REFERENCE: tuple[tuple[int, str, str], ...] = (
    (2, "high_watermark", "violated at depth 10"),
    (2, "kip101", "violated at depth 12"),
    (2, "kip279", "holds, 9027 states"),
    (2, "kip320", "holds, 5973 states"),
    (3, "kip279", "violated at depth 11"),
)
"""TLC's results for the published model (github.com/hachikuji/kafka-specification),
StrongIsr."""


def parity_rows() -> list[dict[str, Any]]:
    """Each TLC reference configuration checked by ``spec.explore``: ours against TLC's."""
    rows = []
    for replicas, truncation, tlc in TLC_REFERENCE:
        spec = Replication(Params(replicas=replicas, truncation=truncation))
        result = check(spec, invariants=["StrongIsr"], clock=time.perf_counter)
        if result.violation is not None:
            ours = f"violated at depth {result.violation.depth}"
        else:
            ours = f"holds, {result.stats.distinct_states} states"
        rows.append(
            {
                "replicas": replicas,
                "truncation": truncation,
                "ours": ours,
                "tlc": tlc,
                "match": ours == tlc,
                "seconds": round(result.stats.seconds, 3),
            }
        )
    return rows


def outcome_rows(out: Path, include_slow: bool) -> list[dict[str, Any]]:
    """Every outcome of ``spec.outcomes`` (the slow ones with ``include_slow``) checked;
    each counterexample written to ``out/traces/<name>.txt`` (a table) and ``.json``."""
    traces = out / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    rows = []
    for outcome in OUTCOMES:
        if outcome.slow and not include_slow:
            continue
        spec = Replication(outcome.params)
        result = check(spec, invariants=list(outcome.invariants), clock=time.perf_counter)
        violation = result.violation
        found = None if violation is None else violation.name
        row: dict[str, Any] = {
            "name": outcome.name,
            "title": outcome.title,
            "reference": outcome.reference,
            "expected": outcome.expect_violation or "holds",
            "found": found or "holds",
            "as_expected": found == outcome.expect_violation,
            "states": result.stats.distinct_states,
            "seconds": round(result.stats.seconds, 3),
            "command": outcome.command(),
        }
        if violation is not None:
            text = render_table(spec, violation.trace)
            (traces / f"{outcome.name}.txt").write_text(
                f"# {outcome.title}\n# {outcome.command()}\n\n{text}"
            )
            (traces / f"{outcome.name}.json").write_bytes(
                orjson.dumps(trace_json(spec, violation.trace), option=orjson.OPT_INDENT_2)
            )
            row["trace_length"] = violation.depth
            row["trace"] = str(traces / f"{outcome.name}.txt")
        rows.append(row)
    return rows
