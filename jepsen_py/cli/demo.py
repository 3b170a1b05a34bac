"""``kmodel demo``: the main job on the embedded default.

Today it tells the model-checking part of the story:

1. parity with the TLA+ model Kafka's engineers published in 2018 (our checker against
   TLC's published figures);
2. Kafka's known replication bugs (KIP-101, KIP-279, KIP-320, unclean election, acks=1,
   KIP-966) found as shortest counterexamples, and the fixed protocol holding;
3. a summary, with where the counterexample traces were written.

Later stages (a fault-injection run on the simulated cluster, its history verified on Spark)
join here as they land.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
import orjson

from jepsen_py.cli.common import EXIT_OK, EXIT_VIOLATION, emit_json
from spec.explore import check
from spec.outcomes import OUTCOMES
from spec.replication import Params, Replication
from spec.trace import render_table, trace_json

# TLC's results for the published model (shared/reference-models/kafka-replication-2018.md).
TLC_REFERENCE: tuple[tuple[int, str, str], ...] = (
    (2, "high_watermark", "violated at depth 10"),
    (2, "kip101", "violated at depth 12"),
    (2, "kip279", "holds, 9027 states"),
    (2, "kip320", "holds, 5973 states"),
    (3, "kip279", "violated at depth 11"),
)


def _parity_rows() -> list[dict[str, Any]]:
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


def _outcome_rows(out: Path, include_slow: bool) -> list[dict[str, Any]]:
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


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("out/demo"),
    show_default=True,
    help="Where traces and the summary are written.",
)
@click.option("--full", is_flag=True, help="Also run the slow (3-replica, crash) outcomes.")
@click.option("--json", "json_mode", is_flag=True, help="One JSON object as the last line.")
def demo(out: Path, full: bool, json_mode: bool) -> None:
    """Run the main job: model-check Kafka replication and show its known bugs."""
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    say = (lambda *_a, **_k: None) if json_mode else click.echo
    say("== 1. Parity with the published 2018 TLA+ model (StrongIsr, TLC's figures)")
    parity = _parity_rows()
    for row in parity:
        mark = "ok " if row["match"] else "MISMATCH"
        say(
            f"  {mark} {row['replicas']} replicas, {row['truncation']:<15} ours: "
            f"{row['ours']:<24} TLC: {row['tlc']}"
        )
    say("")
    say("== 2. Kafka's replication bugs as shortest counterexamples")
    outcomes = _outcome_rows(out, include_slow=full)
    for row in outcomes:
        mark = "ok " if row["as_expected"] else "UNEXPECTED"
        found = row["found"]
        if "trace_length" in row:
            found += f" in {row['trace_length']} states"
        say(f"  {mark} {row['name']:<34} {found:<36} [{row['reference']}]")
    if not full:
        say("  (3-replica min.insync.replicas=2 configurations: --full, about ten minutes)")
    summary = {
        "parity_matches": sum(r["match"] for r in parity),
        "parity_total": len(parity),
        "outcomes_as_expected": sum(r["as_expected"] for r in outcomes),
        "outcomes_total": len(outcomes),
        "seconds": round(time.perf_counter() - started, 2),
        "out": str(out),
        "parity": parity,
        "outcomes": outcomes,
    }
    (out / "summary.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    say("")
    say("== Summary")
    say(
        f"  parity with TLC: {summary['parity_matches']}/{summary['parity_total']}; "
        f"known outcomes reproduced: {summary['outcomes_as_expected']}/"
        f"{summary['outcomes_total']}; {summary['seconds']} s"
    )
    say(f"  counterexample traces: {out / 'traces'}/*.txt (tables) and *.json")
    say(f"  summary: {out / 'summary.json'}")
    say("  reproduce any of them with the command in its trace file's header")
    if json_mode:
        emit_json({k: v for k, v in summary.items() if k not in ("parity", "outcomes")})
    ok = summary["parity_matches"] == summary["parity_total"] and (
        summary["outcomes_as_expected"] == summary["outcomes_total"]
    )
    raise SystemExit(EXIT_OK if ok else EXIT_VIOLATION)
