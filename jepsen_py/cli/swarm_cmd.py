"""``kmodel test --runs N`` (N > 1): the swarm, on this process (``--engine local``) or on
Spark (``--engine spark``), with coverage and, with ``--steer``, steering
(`jepsen_py.runner.swarm`, `jepsen_py.runner.swarm_spark`).

Prints one row per run (faults, pace, rate, clients, ops, lost writes, verdict, first
witnesses), the coverage table (situation -> runs that reached it), the runs that are not
valid with the command that reproduces each, and writes ``STORE/<name>/swarm.parquet``.
``--json``: one object with the verdict, every run's ``swarm.parquet`` row, and the
coverage.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import attrs
import click

from jepsen_py.checker.result import Verdict
from jepsen_py.cli.common import emit_json, fail_input, verdict_exit_code
from jepsen_py.runner.config import TestConfig, format_duration
from jepsen_py.runner.coverage import SITUATIONS, coverage_json, coverage_table
from jepsen_py.runner.outcome import verdict_name
from jepsen_py.runner.swarm import Steering, SwarmPlan, SwarmRow, rounds, run_member
from jepsen_py.store import StoreError

_STYLES = {"valid": "green", "invalid": "red", "unknown": "yellow"}


@attrs.frozen
class SwarmOptions:
    """The swarm's flags besides the base configuration."""

    first_seed: int
    runs: int
    store_root: str
    reports: bool
    consistency: str
    stop_on_failure: bool = False
    engine: str = "local"
    master: str | None = None
    spark_conf: tuple[str, ...] = ()
    steer: bool = False
    json_mode: bool = False


def check_swarm_flags(options: SwarmOptions) -> list[tuple[str, str]]:
    """Reject flag combinations that cannot run (one line naming the flag); the
    ``--spark-conf`` settings as pairs."""
    if options.runs < 2:
        for flag, given in (("--engine spark", options.engine == "spark"),
                            ("--steer", options.steer)):  # fmt: skip
            if given:
                fail_input(f"{flag} is for a swarm: add --runs N (N >= 2)")
    if options.engine == "local":
        if options.master is not None:
            fail_input("--master is for --engine spark")
        if options.spark_conf:
            fail_input("--spark-conf is for --engine spark")
        return []
    from jepsen_py.checker.spark.flags import master_problem

    if options.master is not None and (problem := master_problem(options.master)) is not None:
        fail_input(problem)
    if options.stop_on_failure:
        fail_input("--stop-on-failure is for --engine local (Spark runs the seeds together)")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        fail_input("--engine spark needs Java 17+ (scripts/check-java says how to get it)")
    settings = []
    for item in options.spark_conf:
        name, equals, value = item.partition("=")
        if not equals or not name.strip():
            fail_input(f"--spark-conf {item!r}: expected KEY=VALUE, e.g. spark.executor.memory=4g")
        settings.append((name.strip(), value))
    return settings


def run_swarm(base: TestConfig, options: SwarmOptions) -> None:
    """The whole swarm (module docstring); exits with the worst verdict's code."""
    settings = check_swarm_flags(options)
    plan = SwarmPlan(
        base,
        options.store_root,
        reports=options.reports,
        consistency=options.consistency,
        swarm=True,
    )
    seeds = rounds(options.first_seed, options.runs, options.steer)
    started = time.perf_counter()
    rows: list[SwarmRow] = []
    spark = None
    startup = 0.0

    def show(batch: Sequence[SwarmRow]) -> None:
        for row in batch:
            if not options.json_mode:
                _print_row(len(rows), row)
            rows.append(row)

    from jepsen_py.runner.swarm_spark import is_hadoop_uri, write_swarm_table

    if options.engine == "local" and is_hadoop_uri(options.store_root):
        fail_input(f"--store {options.store_root}: a Hadoop URI needs --engine spark")
    if not is_hadoop_uri(options.store_root):
        # the driver writes swarm.parquet there: a bad path fails now, before any run
        try:
            (Path(options.store_root) / base.name).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            fail_input(
                f"--store {options.store_root}: cannot create {base.name}/ in it "
                f"({exc.strerror}); pass a writable directory"
            )
    if options.engine == "local":
        steering = Steering.start(base) if options.steer else None
        for number, batch in enumerate(seeds):
            done: list[SwarmRow] = []
            for seed in batch:
                try:
                    _, row = run_member(plan, seed, steering, number if options.steer else None)
                except StoreError as exc:
                    fail_input(f"--store: {exc}")
                show([row])
                done.append(row)
                if options.stop_on_failure and row.outcome is Verdict.ILLEGAL:
                    break
            else:
                if steering is not None:
                    steering = steering.learn(done)
                continue
            break
    else:
        spark = _start_spark(options, settings)
        from jepsen_py.runner.swarm_spark import ship_packages, warm_up

        ship_packages(spark)
        warm_up(spark)  # Spark's start-up, the workers' imports: apart from the runs
        startup = time.perf_counter() - started
        started += startup
        from jepsen_py.checker.spark.session import is_local, spark_reason
        from jepsen_py.runner.swarm_spark import run_swarm_spark

        master = options.master or "local[*]"
        if not is_local(master) and not is_hadoop_uri(options.store_root):
            click.echo(
                f"note: --store {options.store_root} is a plain path: on {master} each "
                "executor writes its runs to its own disk unless the path is shared; a "
                "Hadoop URI (hdfs://, s3a://...) brings them to one place",
                err=True,
            )
        try:
            run_swarm_spark(spark, plan, seeds, steer=options.steer, on_round=show)
        except StoreError as exc:
            fail_input(f"--store: {exc}")
        except Exception as exc:  # the job's failure, through py4j: Spark's reason, one line
            fail_input(f"the Spark job failed: {spark_reason(exc)}")
    seconds = time.perf_counter() - started
    table = write_swarm_table(spark, rows, options.store_root, base.name)
    worst = Verdict.combine([row.outcome for row in rows])
    code = verdict_exit_code(worst)
    coverage = [row.coverage for row in rows]
    if options.json_mode:
        emit_json(
            {
                "verdict": verdict_name(worst),
                "exit_code": code,
                "engine": options.engine,
                "runs": [row.record() for row in rows],
                "invalid": sum(row.outcome is Verdict.ILLEGAL for row in rows),
                "unknown": sum(row.outcome is Verdict.UNKNOWN for row in rows),
                "coverage": coverage_json(coverage, base),
                "parquet": table,
                "seconds": round(seconds, 3),
                "startup_seconds": round(startup, 3),
                "runs_per_minute": round(60 * len(rows) / seconds, 2) if seconds > 0 else None,
            }
        )
    else:
        print_coverage(rows, base)
        print_summary(rows, options.runs)
        up = f" after {startup:.1f} s to start Spark" if spark is not None else ""
        click.echo(f"results: {table} ({len(rows)} rows, {seconds:.1f} s on {options.engine}{up})")
    raise SystemExit(code)


def _start_spark(options: SwarmOptions, settings: list[tuple[str, str]]) -> object:
    from jepsen_py.checker.spark import session

    spark_options = session.SessionOptions(
        master=options.master,
        app_name="kmodel-swarm",
        extra_conf=tuple(settings),
        progress=False if options.json_mode else None,
    )
    try:
        return session.start(spark_options)
    except (session.SparkStartError, ValueError) as err:
        fail_input(f"Spark did not start: {err}")


def _print_row(i: int, row: SwarmRow) -> None:
    c = row.config
    if i == 0:
        click.echo(
            f"{'run':>4} {'seed':>10} {'faults':<34} {'int':>4} {'rate':>5} {'cli':>3} "
            f"{'ops':>6} {'lost':>5} {'verdict':<8} violations"
        )
    faults = ",".join(c.nemesis) or "none"
    if len(faults) > 34:
        faults = faults[:33] + "…"
    verdict = click.style(f"{row.verdict:<8}", fg=_STYLES[row.verdict])
    named = [
        name + "@" + ",".join(map(str, row.first_witness.get(name, ()))) for name in row.violations
    ]
    informational = ",".join(f"{n}({k})" for n, k in row.informational.items())
    note = f" [informational: {informational}]" if informational and not named else ""
    click.echo(
        f"{i:>4} {row.seed:>10} {faults:<34} {format_duration(c.interval_ns):>4} "
        f"{c.rate:>5g} {c.concurrency:>3} {row.history_ops:>6} "
        f"{row.lost_writes:>5} {verdict} {' '.join(named) or '-'}{note}"
    )


def print_coverage(rows: Sequence[SwarmRow], base: TestConfig | None = None) -> None:
    """Situation (and spec action) -> runs that reached it; unreached ones marked (those
    ``base`` can reach: `jepsen_py.runner.coverage.possible`)."""
    table = coverage_table((row.coverage for row in rows), base)
    reached = sum(1 for _, n in table if n)
    click.echo(f"coverage: {reached} of {len(table)} situations and spec actions reached")
    width = max(len(name) for name, _ in table)
    for name, n in table:
        mark = "" if n else "   (not reached)"
        what = SITUATIONS.get(name, "")
        click.echo(f"  {name.ljust(width)} {n:>4}{mark}" + (f"  {what}" if not n and what else ""))


def print_summary(rows: Sequence[SwarmRow], planned: int) -> None:
    """How many runs were valid, invalid, unknown; each run that is not valid with its
    reproduce command, its violations and how its writes were lost."""
    counts = {v: sum(row.verdict == v for row in rows) for v in ("valid", "invalid", "unknown")}
    click.echo(
        f"{len(rows)} of {planned} runs: {counts['valid']} valid, "
        f"{counts['invalid']} invalid, {counts['unknown']} unknown"
    )
    for row in rows:
        if row.verdict != "valid":
            click.echo(f"  seed {row.seed} ({row.verdict}): {row.command}   [{row.store}]")
            for line in row.violation_text:
                click.echo(f"      {line}")
            for line in row.loss_text:
                click.echo(f"  {line}")
    sys.stdout.flush()


__all__ = ["SwarmOptions", "check_swarm_flags", "print_coverage", "print_summary", "run_swarm"]
