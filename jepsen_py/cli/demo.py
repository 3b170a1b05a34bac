"""``kmodel demo``: the main job on the embedded default, the whole story in seven stages.

1. **Fault injection** on the simulated cluster (`jepsen_py.demo.faults`): Kafka as
   configured today under every fault, and the partition pattern of Jepsen's 2013 analysis
   with unclean and with clean election; each run's history, verdict, timeline and plots
   go to a store directory.
2. **Verification on Spark** (`jepsen_py.demo.verify`): those histories checked by the
   Spark engine (``local[*]``, or ``--master``) and by the local engine, which must agree.
3. **Parity** of our model checker with TLC on the published 2018 TLA+ model
   (`jepsen_py.demo.modelcheck`).
4. **Kafka's known replication bugs** as shortest counterexamples of the spec, and the
   fixed protocol holding.
5. **The brain split** (`jepsen_py.demo.brain_split`): a paused controller wakes up a
   zombie beside its elected successor; its requests refused with both fences on, and
   what goes wrong with each fence off.
6. **Liveness** (`jepsen_py.demo.liveness`): what must eventually happen, under fairness;
   the broken variants' lassos.
7. **Consumer groups** (`jepsen_py.demo.groups`): one group under consumer and coordinator
   faults, with the generation check on (one owner per partition, no zombie commit
   accepted) and off (a zombie's commit accepted); and its delivery, committing after
   processing (at least once: nothing lost, each duplicate explained) and before it (at
   most once: what a kill interrupts is lost).

Then a summary with where everything was written. Exit 0 when every stage showed what it
is expected to show, 1 otherwise.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
import orjson

from jepsen_py.cli.common import EXIT_OK, EXIT_VIOLATION, emit_json
from jepsen_py.demo.brain_split import brain_split_rows
from jepsen_py.demo.faults import fault_rows
from jepsen_py.demo.groups import group_rows
from jepsen_py.demo.liveness import liveness_rows
from jepsen_py.demo.modelcheck import outcome_rows, parity_rows
from jepsen_py.demo.verify import verify_rows


def _mark(ok: bool) -> str:
    return "ok " if ok else "UNEXPECTED"


def _print_run(say: Any, row: dict[str, Any]) -> None:
    faults = ", ".join(f"{name} {n}" for name, n in row["faults"].items()) or "none"
    broken = ", ".join(row["violations"]) or "none"
    say(f"  {_mark(row['as_expected'])} {row['title']} (seed {row['seed']})")
    say(
        f"      {row['ops']} ops ({row['acknowledged_sends']} acknowledged sends) in "
        f"{row['logical_seconds']} s of logical time, {row['wall_seconds']} s of wall time"
    )
    say(f"      faults: {faults}")
    say(
        f"      verdict {row['verdict'].upper()}; acknowledged writes lost: "
        f"{row['lost_acknowledged_writes']}; offsets with two values: "
        f"{row['inconsistent_offsets']}; anomalies: {broken}"
    )
    if row["loss_mechanisms"]:
        say(f"      lost by: {', '.join(row['loss_mechanisms'])}")
    say(f"      expected: {row['expected']}")
    say(f"      store: {row['store']}")


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("out/demo"),
    show_default=True,
    help="Where the runs, the Spark verdicts, the traces and the summary are written.",
)
@click.option(
    "--time-limit",
    type=click.IntRange(min=1),
    default=60,
    show_default=True,
    help="Logical seconds of Kafka today's fault-injection run.",
)
@click.option("--seed", type=int, default=1, show_default=True, help="That run's seed.")
@click.option("--master", default=None, help="Spark master URL (default: local[*]).")
@click.option("--full", is_flag=True, help="Also run the slow (3-replica, crash) outcomes.")
@click.option("--json", "json_mode", is_flag=True, help="One JSON object as the last line.")
def demo(
    out: Path, time_limit: int, seed: int, master: str | None, full: bool, json_mode: bool
) -> None:
    """Run the main job: inject faults into a simulated Kafka cluster, verify the histories
    on Spark, model-check the replication spec, and summarise."""
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    say = (lambda *_a, **_k: None) if json_mode else click.echo

    say("== 1. Fault injection on the simulated cluster (kmodel test)")
    runs = fault_rows(out / "store", time_limit_s=time_limit, seed=seed, say=say)
    for row in runs:
        _print_run(say, row)
    say("")

    say(f"== 2. The histories verified on Spark ({master or 'local[*]'}) and locally")
    verified, spark = verify_rows(
        [row["history"] for row in runs], out / "spark", master=master, say=say
    )
    for run, row in zip(runs, verified, strict=True):
        anomalies = ", ".join(f"{k} {n}" for k, n in row["anomalies"].items()) or "none"
        say(
            f"  {_mark(row['agree'])} {run['name']:<20} spark: {row['spark']:<8} "
            f"local: {row['local']:<8} {row['ops']} ops, anomalies: {anomalies}"
        )
    say(
        f"  Spark on {spark['master']}: started in {spark['startup_seconds']} s, "
        f"{spark['seconds']} s in all; verdict table: {spark['verdicts']}"
    )
    say("")

    say("== 3. Parity with the published 2018 TLA+ model (StrongIsr, TLC's figures)")
    parity = parity_rows()
    for row in parity:
        say(
            f"  {_mark(row['match'])} {row['replicas']} replicas, {row['truncation']:<15} "
            f"ours: {row['ours']:<24} TLC: {row['tlc']}"
        )
    say("")

    say("== 4. Kafka's replication bugs as shortest counterexamples of the spec")
    outcomes = outcome_rows(out, include_slow=full)
    for row in outcomes:
        found = row["found"]
        if "trace_length" in row:
            found += f" in {row['trace_length']} states"
        say(f"  {_mark(row['as_expected'])} {row['name']:<34} {found:<36} [{row['reference']}]")
    if not full:
        say("  (3-replica min.insync.replicas=2 configurations: --full, about ten minutes)")
    say("")

    say("== 5. The brain split: a paused controller wakes up a zombie (docs/controller.md)")
    splits = brain_split_rows(say)
    for row in splits:
        say(
            f"  {_mark(row['as_expected'])} {row['title']:<36} zombie {row['zombie']}, "
            f"successor {row['successor']} (epoch {row['controller_epoch']}): requests "
            f"rejected {row['stale_controller_rejected']}, applied "
            f"{row['stale_controller_applied']}; zombie writes {row['zombie_writes']}"
        )
    say("")

    say("== 6. Liveness: what must eventually happen, under fairness")
    liveness = liveness_rows(out)
    for row in liveness:
        found = row["found"]
        if "cycle_length" in row:
            found += f" (lasso: {row['prefix_length']} states, cycle of {row['cycle_length']})"
        say(f"  {_mark(row['as_expected'])} {row['title']:<50} {found}")

    say("")
    say(
        "== 7. Consumer groups: generations fence the zombie member; when to commit decides "
        "the delivery (docs/groups.md, docs/offsets.md)"
    )
    groups = group_rows(out / "store")
    for row in groups:
        say(
            f"  {_mark(row['as_expected'])} {row['title']:<42} "
            f"{'valid' if row['ok'] else 'INVALID'}: {row['generations']} generations, "
            f"rebalance ms {row['rebalance_ms']}, zombie commits accepted "
            f"{sum(v.startswith('zombie') for v in row['violations'])}"
        )
        delivery = row["delivery"]
        counts = delivery["counts"]
        duplicated = {k.removeprefix("duplicated-"): n for k, n in counts.items() if "dup" in k}
        say(
            f"      delivery ({delivery['mode']}): {delivery['verdict']}; "
            f"{row['records_processed']} records processed, lost {counts.get('lost', 0)}, "
            f"processed twice {sum(duplicated.values())} {duplicated or ''}"
            + (
                f", commit regressions {counts['commit-regression']}"
                if "commit-regression" in counts
                else ""
            )
        )
        say(f"      reproduce: {row['command']}")

    summary: dict[str, Any] = {
        "runs_as_expected": sum(r["as_expected"] for r in runs),
        "runs_total": len(runs),
        "spark_agrees": sum(r["agree"] for r in verified),
        "spark_total": len(verified),
        "parity_matches": sum(r["match"] for r in parity),
        "parity_total": len(parity),
        "outcomes_as_expected": sum(r["as_expected"] for r in outcomes),
        "outcomes_total": len(outcomes),
        "brain_split_as_expected": sum(r["as_expected"] for r in splits),
        "brain_split_total": len(splits),
        "liveness_as_expected": sum(r["as_expected"] for r in liveness),
        "liveness_total": len(liveness),
        "groups_as_expected": sum(r["as_expected"] for r in groups),
        "groups_total": len(groups),
        "seconds": round(time.perf_counter() - started, 2),
        "out": str(out),
        "runs": runs,
        "spark": {**spark, "inputs": verified},
        "parity": parity,
        "outcomes": outcomes,
        "brain_split": splits,
        "liveness": liveness,
        "groups": groups,
    }
    (out / "summary.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    ok = all(
        summary[done] == summary[total]
        for done, total in (
            ("runs_as_expected", "runs_total"),
            ("spark_agrees", "spark_total"),
            ("parity_matches", "parity_total"),
            ("outcomes_as_expected", "outcomes_total"),
            ("brain_split_as_expected", "brain_split_total"),
            ("liveness_as_expected", "liveness_total"),
            ("groups_as_expected", "groups_total"),
        )
    )
    say("")
    say("== Summary")
    say(
        f"  fault-injection runs as expected: {summary['runs_as_expected']}/"
        f"{summary['runs_total']}; Spark agrees with the local checker: "
        f"{summary['spark_agrees']}/{summary['spark_total']}; parity with TLC: "
        f"{summary['parity_matches']}/{summary['parity_total']}; known bugs reproduced: "
        f"{summary['outcomes_as_expected']}/{summary['outcomes_total']}; brain split as "
        f"expected: {summary['brain_split_as_expected']}/{summary['brain_split_total']}; "
        f"liveness: "
        f"{summary['liveness_as_expected']}/{summary['liveness_total']}; consumer groups: "
        f"{summary['groups_as_expected']}/{summary['groups_total']}; "
        f"{summary['seconds']} s"
    )
    say("  written:")
    for row in runs:
        say(f"    {row['timeline']}  (timeline; latency.png and rate.png beside it)")
    say(f"    {spark['verdicts']}  (Spark's verdict table; verdicts.json parts beside it)")
    say(f"    {out / 'traces'}/*.txt  (counterexample traces and lassos as tables)")
    say(f"    {out / 'summary.json'}  (everything above)")
    say("  to reproduce: a run, the command in its results.json; a trace, its header's command")
    if json_mode:
        emit_json(
            {
                k: v
                for k, v in summary.items()
                if k
                not in ("runs", "spark", "parity", "outcomes", "brain_split", "liveness", "groups")
            }
        )
    raise SystemExit(EXIT_OK if ok else EXIT_VIOLATION)
