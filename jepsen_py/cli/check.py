"""``kmodel check SPEC``: model-check an executable spec and print the shortest counterexample.

Exit codes: 0 every checked property holds and every "sometimes" property was witnessed;
1 a violation (or a vacuous model: a "sometimes" property never witnessed in a complete
exhaustive run); 2 unknown (a budget was exhausted) or bad input.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import orjson
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from jepsen_py.checker.spark import session
from jepsen_py.cli.common import EXIT_OK, EXIT_UNKNOWN, EXIT_VIOLATION, emit_json, fail_input
from jepsen_py.cli.specs import CHECK_SPECS, all_bugs, bug_help, check_bugs, refuse_foreign_flags
from spec.controller import MODES
from spec.explore import CheckResult, Stats, simulate
from spec.explore import check as explore
from spec.framework import Spec, SpecError
from spec.group import NETWORKS as GROUP_NETWORKS
from spec.group import PROTOCOLS as GROUP_PROTOCOLS
from spec.liveness import Lasso, LivenessResult, check_liveness
from spec.offsets import COMMITS as OFFSETS_COMMITS
from spec.offsets import RESETS as OFFSETS_RESETS
from spec.rebalance import CHOICES as REBALANCE_CHOICES
from spec.replication import ACKS, MODELS, TRUNCATIONS
from spec.trace import render_lasso, render_table, result_json, to_dot, trace_json

SPECS = tuple(CHECK_SPECS)


PROGRESS_SECONDS = 5.0
"""How often a long run reports progress when stderr is not a terminal (or with --json)."""


def _memory_mib() -> float:
    """The process's peak resident memory (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def describe_progress(stats: Stats) -> str:
    rate = stats.states_per_second or 0.0
    return (
        f"{stats.distinct_states:,} distinct states, depth {stats.depth}, "
        f"{rate:,.0f} states/s, {_memory_mib():,.0f} MiB"
    )


@contextmanager
def progress_display(enabled: bool) -> Iterator[Callable[[Stats], None] | None]:
    """Progress on stderr while a search runs: a live line (rich) on a terminal, gone when
    the run ends; otherwise (a script, CI, ``--json``) a plain line every few seconds, so a
    long run shows where it is. Nothing when disabled."""
    console = Console(stderr=True)
    if not enabled:
        yield None
        return
    if not console.is_terminal:
        started = time.monotonic()
        next_line = started + PROGRESS_SECONDS

        def report(stats: Stats) -> None:
            nonlocal next_line
            now = time.monotonic()
            if now >= next_line:
                next_line = now + PROGRESS_SECONDS
                click.echo(f"progress: {describe_progress(stats)}", err=True)

        yield report
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("exploring", total=None)

        def update(stats: Stats) -> None:
            progress.update(task, description=describe_progress(stats))

        yield update


def print_result(spec: Spec, result: CheckResult) -> None:
    stats = result.stats
    mode = "random simulation" if result.mode == "simulation" else "breadth-first search"
    click.echo(f"{spec.name}: {mode}, checking {', '.join(result.checked)}")
    line = (
        f"  {stats.distinct_states:,} distinct states, {stats.states_generated:,} generated, "
        f"depth {stats.depth}, {stats.seconds:.2f} s"
    )
    if stats.states_per_second:
        line += f" ({stats.states_per_second:,.0f} distinct states/s)"
    click.echo(line)
    if stats.symmetry_factor is not None:
        click.echo(
            f"  symmetry reduction: {stats.unreduced_states:,} states without it, "
            f"factor {stats.symmetry_factor:.2f}"
        )
    if stats.seen_bytes is not None and stats.collision_probability is not None:
        per_state = stats.seen_bytes / max(stats.distinct_states, 1)
        click.echo(
            f"  fingerprints: {stats.seen_bytes:,} bytes in the seen set ({per_state:.0f} a "
            f"state); collision probability {stats.collision_probability:.1e} (TLC's estimate)"
        )
    click.echo("  coverage (transitions fired / new states found):")
    width = max(len(name) for name in stats.fired)
    for name, fired in stats.fired.items():
        flag = "   <- never fired" if fired == 0 else ""
        click.echo(f"    {name.ljust(width)}  {fired:>10,} {stats.new_states[name]:>10,}{flag}")
    for name, trace in result.sometimes.items():
        status = f"witnessed at depth {len(trace)}" if trace is not None else "NOT witnessed"
        click.echo(f"  sometimes {name}: {status}")
    for warning in result.warnings:
        click.echo(f"  warning: {warning}")
    violation = result.violation
    if violation is not None:
        click.echo("")
        what = "Invariant" if violation.kind == "invariant" else "Transition property"
        click.echo(f"{what} {violation.name} is violated ({violation.depth} states):")
        click.echo(f"  {violation.doc}")
        click.echo("")
        click.echo(render_table(spec, violation.trace))
    elif result.mode == "exhaustive" and result.complete:
        click.echo("No violation: every reachable state within the bounds was checked.")
    elif result.mode == "exhaustive":
        click.echo("UNKNOWN: the search stopped at a budget before covering every state.")
    else:
        click.echo("No violation found by simulation (not a proof: the search was not exhaustive).")


def print_liveness(spec: Spec, result: LivenessResult) -> None:
    click.echo(
        f"{spec.name}: liveness on the state graph ({result.states:,} states, "
        f"{result.edges:,} transitions), checking {', '.join(result.checked)}"
    )
    click.echo(f"  fairness: {', '.join(result.fairness) or 'none'}")
    violation = result.violation
    if violation is not None:
        click.echo("")
        click.echo(
            f"Liveness property {violation.name} is violated: a fair behavior along which it "
            f"never holds ({len(violation.lasso.prefix)} states, then a cycle of "
            f"{len(violation.lasso.cycle)} steps):"
        )
        click.echo(f"  {violation.doc}")
        click.echo("")
        click.echo(render_lasso(spec, violation.lasso))
    elif result.complete:
        click.echo("No liveness violation: every fair behavior within the bounds satisfies them.")
    else:
        click.echo("UNKNOWN: the state graph was cut by --max-states; liveness not checked.")


def liveness_json(result: LivenessResult) -> dict[str, Any]:
    violation = result.violation
    return {
        "checked": list(result.checked),
        "fairness": list(result.fairness),
        "states": result.states,
        "transitions": result.edges,
        "complete": result.complete,
        "violated": None if violation is None else violation.name,
        "prefix_length": None if violation is None else len(violation.lasso.prefix),
        "cycle_length": None if violation is None else len(violation.lasso.cycle),
    }


def exit_code(result: CheckResult, liveness: LivenessResult | None = None) -> int:
    if result.violation is not None:
        return EXIT_VIOLATION
    if liveness is not None and liveness.violation is not None:
        return EXIT_VIOLATION
    if liveness is not None and not liveness.complete:
        return EXIT_UNKNOWN
    if result.mode == "exhaustive" and not result.complete:
        return EXIT_UNKNOWN
    if result.mode == "exhaustive" and result.missing_sometimes:
        return EXIT_VIOLATION
    return EXIT_OK


@click.command(name="check")
@click.argument("spec_name", metavar="SPEC", type=click.Choice(SPECS))
@click.option(
    "--model",
    type=click.Choice(MODELS),
    default="published-2018",
    show_default=True,
    help="replication.",
)
@click.option("--replicas", type=int, default=2, show_default=True, help="replication: 2 to 4.")
@click.option("--log-size", type=int, default=2, show_default=True, help="replication.")
@click.option(
    "--max-records", type=int, default=2, show_default=True, help="replication, rebalance."
)
@click.option("--max-epoch", type=int, default=2, show_default=True, help="replication, rebalance.")
@click.option(
    "--max-crashes",
    type=int,
    default=None,
    help="replication: crash budget (extended model; default 1); rebalance; offsets: "
    "consumer crashes (default 1).",
)
@click.option(
    "--truncation",
    type=click.Choice(TRUNCATIONS),
    default="kip320",
    show_default=True,
    help="replication.",
)
@click.option(
    "--acks", type=click.Choice(ACKS), default=None, help="replication, extended model: 0, 1, all"
)
@click.option(
    "--min-isr",
    type=int,
    default=None,
    help="replication (extended model), rebalance: min.insync.replicas",
)
@click.option(
    "--unclean",
    is_flag=True,
    help="replication: unclean.leader.election.enable (extended model)",
)
@click.option("--brokers", type=int, default=None, help="controller, rebalance: 2 to 4 brokers.")
@click.option("--partitions", type=int, default=None, help="controller: 1 or 2 (default 1).")
@click.option(
    "--max-controller-epoch",
    type=int,
    default=None,
    help="controller: elections stop at this controller epoch (default 2: one failover).",
)
@click.option(
    "--max-leader-epoch",
    type=int,
    default=None,
    help="controller: partition-state writes stop at this leader epoch (default 1).",
)
@click.option(
    "--max-expiries",
    type=int,
    default=None,
    help="controller: how many sessions may expire (default 2).",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default=None,
    help="controller: zookeeper (default) or kraft (KIP-500).",
)
@click.option(
    "--protocol",
    type=click.Choice(GROUP_PROTOCOLS),
    default=None,
    help="group: classic (eager, default), cooperative (KIP-429) or consumer (KIP-848).",
)
@click.option(
    "--members", type=int, default=None, help="group, offsets: consumers, 1 to 3 (default 2)."
)
@click.option(
    "--topic-partitions", type=int, default=None, help="group: partitions, 1 to 3 (default 2)."
)
@click.option(
    "--max-generation",
    type=int,
    default=None,
    help="group, offsets: rebalances stop at this generation id or group epoch (default 2; 4 "
    "for --protocol consumer).",
)
@click.option(
    "--max-member-expiries",
    type=int,
    default=None,
    help="group, offsets: how many members may expire (default 1).",
)
@click.option(
    "--max-timeouts",
    type=int,
    default=None,
    help="group: requests a consumer may give up on (default 1).",
)
@click.option(
    "--max-failovers",
    type=int,
    default=None,
    help="group, offsets: coordinator moves (default 1).",
)
@click.option(
    "--network",
    type=click.Choice(GROUP_NETWORKS),
    default=None,
    help="group: ordered (default; per-connection order) or reordering.",
)
@click.option(
    "--mechanism",
    type=click.Choice(REBALANCE_CHOICES),
    default=None,
    help="rebalance: preferred, shutdown, reassignment, elr, or all of them composed "
    "(default: the --bug's mechanism, else all); each has its own default bounds.",
)
@click.option("--replication-factor", type=int, default=None, help="rebalance: initial replicas.")
@click.option("--max-reassignments", type=int, default=None, help="rebalance (default 1).")
@click.option("--max-shutdowns", type=int, default=None, help="rebalance (default 1).")
@click.option(
    "--imbalance-pct",
    type=int,
    default=None,
    help="rebalance: leader.imbalance.per.broker.percentage (default 10).",
)
@click.option(
    "--no-auto-rebalance",
    is_flag=True,
    help="rebalance: auto.leader.rebalance.enable=false.",
)
@click.option(
    "--commit",
    type=click.Choice(OFFSETS_COMMITS),
    default=None,
    help="offsets: the consumer commits after processing (default; at least once) or before "
    "(at most once).",
)
@click.option(
    "--offset-reset",
    type=click.Choice(OFFSETS_RESETS),
    default=None,
    help="offsets: auto.offset.reset when the group has no committed offset (default earliest).",
)
@click.option(
    "--records", type=int, default=None, help="offsets: records in the partition (default 2)."
)
@click.option("--bug", "bugs", multiple=True, type=click.Choice(all_bugs()), help=bug_help())
@click.option(
    "--invariant",
    "invariants",
    multiple=True,
    help="Check only these invariants or liveness properties (repeatable).",
)
@click.option(
    "--liveness/--no-liveness",
    default=True,
    show_default=True,
    help="After an exhaustive search that found no violation, check the spec's liveness "
    "properties under its fairness on the whole state graph (not with --symmetry).",
)
@click.option("--symmetry", is_flag=True, help="Reduce by permutations of replicas/brokers.")
@click.option(
    "--fingerprints",
    is_flag=True,
    help="Remember states by 64-bit fingerprint (16 bytes a state, as TLC does) for models "
    "too big to hold in memory; reports the collision probability.",
)
@click.option(
    "--spill",
    type=click.Path(file_okay=False),
    default=None,
    help="With --fingerprints: keep the breadth-first levels and the seen set in this "
    "directory instead of memory (TLC's queue on disk); one process.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes for the exhaustive search (default: every core; 1 is the sequential "
    "search). Same counts and counterexamples whatever the number.",
)
@click.option(
    "--engine",
    type=click.Choice(("local", "spark")),
    default="local",
    show_default=True,
    help="spark: the breadth-first levels as Spark jobs, the frontier and the seen table "
    "partitioned across the executors (local[*] by default; --master for a cluster).",
)
@click.option("--master", default=None, help="Spark master URL for --engine spark.")
@click.option("--simulate", is_flag=True, help="Seeded random walks instead of exhaustive BFS.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--depth", type=int, default=30, show_default=True, help="Simulation walk length.")
@click.option("--runs", type=int, default=2_000, show_default=True, help="Simulation walks.")
@click.option("--max-states", type=int, default=None, help="Budget: stop (UNKNOWN) after this.")
@click.option("--trace-json", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--dot", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--json", "json_mode", is_flag=True, help="One JSON object as the last line.")
def check_cmd(
    spec_name: str,
    bugs: tuple[str, ...],
    invariants: tuple[str, ...],
    liveness: bool,
    symmetry: bool,
    fingerprints: bool,
    spill: str | None,
    workers: int | None,
    engine: str,
    master: str | None,
    simulate: bool,
    seed: int,
    depth: int,
    runs: int,
    max_states: int | None,
    trace_json: Path | None,
    dot: Path | None,
    json_mode: bool,
    **spec_flags: Any,
) -> None:
    """Model-check SPEC: explore every reachable state within the bounds (or random walks
    with --simulate), and print the shortest counterexample of the first violated property.
    Each spec has its own flags (their help starts with the spec's name).
    """
    entry = CHECK_SPECS[spec_name]
    try:
        refuse_foreign_flags(spec_name, spec_flags, "check")
        check_bugs(spec_name, bugs)
        spec = entry.build(spec_flags, bugs)
        live_names = {decl.name for decl in spec.applicable_liveness()}
        chosen = [name for name in invariants if name not in live_names] or None
        chosen_live = [name for name in invariants if name in live_names] or None
        if invariants and chosen is None:
            chosen = []  # only liveness properties were asked for
        elif invariants and chosen_live is None:
            liveness = False  # only invariants were asked for
        spec.select_invariants(chosen)
        live_decls = spec.select_liveness(chosen_live)
    except SpecError as err:
        fail_input(str(err))
    if symmetry and simulate:
        fail_input("--symmetry applies to exhaustive search, not --simulate")
    if fingerprints and (simulate or dot is not None):
        fail_input("--fingerprints is for exhaustive search without --dot (it keeps no graph)")
    if spill is not None and not fingerprints:
        fail_input("--spill puts a fingerprint search on disk: add --fingerprints")
    if spill is not None and (engine == "spark" or (workers is not None and workers > 1)):
        fail_input("--spill runs the fingerprint search on one process: drop --workers/--engine")
    if engine == "spark" and (simulate or dot is not None or max_states is not None):
        fail_input(
            "--engine spark runs the exhaustive search, without --simulate, --dot or --max-states"
        )
    if master is not None and engine != "spark":
        fail_input("--master is for --engine spark")
    if engine == "spark":
        result = run_spark_check(spec, chosen, symmetry=symmetry, master=master)
    else:
        result = None
    if dot is not None and simulate:
        fail_input("--dot draws the exhaustive state graph; it cannot be combined with --simulate")
    result = result or run_check(
        spec,
        chosen,
        symmetry=symmetry,
        simulate_mode=simulate,
        seed=seed,
        depth=depth,
        runs=runs,
        max_states=max_states,
        graph=dot is not None,
        fingerprints=fingerprints,
        workers=1 if spill is not None else (os.cpu_count() or 1) if workers is None else workers,
        spill=spill,
    )
    if not json_mode:
        print_result(spec, result)
    live_result = None
    wants_liveness = liveness and bool(live_decls) and not simulate
    if wants_liveness and symmetry and not json_mode:
        click.echo("  liveness not checked: it needs the unreduced graph (run without --symmetry)")
    elif wants_liveness and result.violation is None and result.complete:
        live_result = run_liveness(spec, chosen_live, max_states)
        if not json_mode:
            click.echo("")
            print_liveness(spec, live_result)
    params_json = entry.params_json(spec.p)  # type: ignore[attr-defined]
    if trace_json is not None and result.violation is not None:
        payload = {
            "violated": result.violation.name,
            "params": params_json,
            "trace": trace_json_of(spec, result),
        }
        trace_json.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
        if not json_mode:
            click.echo(f"trace written to {trace_json}")
    if trace_json is not None and live_result is not None and live_result.violation is not None:
        lasso = live_result.violation.lasso
        payload = {
            "violated": live_result.violation.name,
            "params": params_json,
            "trace": lasso_json_of(spec, lasso),
            "cycle_starts_after": len(lasso.prefix),
        }
        trace_json.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
        if not json_mode:
            click.echo(f"trace written to {trace_json}")
    if dot is not None:
        dot.write_text(to_dot(spec, result))
        if not json_mode:
            click.echo(f"state graph written to {dot}")
    if json_mode:
        payload = result_json(result)
        payload["params"] = params_json
        payload["liveness"] = None if live_result is None else liveness_json(live_result)
        if live_result is not None and live_result.violation is not None:
            payload["violated"] = live_result.violation.name
            payload["violation_kind"] = "liveness"
            payload["trace_length"] = live_result.violation.lasso.states
        emit_json(payload)
    raise SystemExit(exit_code(result, live_result))


check = check_cmd


def trace_json_of(spec: Spec, result: CheckResult) -> list[dict[str, Any]]:
    assert result.violation is not None
    return trace_json(spec, result.violation.trace)


def run_spark_check(
    spec: Spec, invariants: list[str] | None, *, symmetry: bool, master: str | None
) -> CheckResult:
    """The search on Spark (``jepsen_py.spark_search``), with progress per level."""
    # The fingerprint engines (numpy) are imported by the commands that use them, so that a
    # plain `kmodel check` does not pay for them.
    from jepsen_py.spark_search import check_spark

    # Fingerprints hash strings: every Python worker must use the same hash seed.
    os.environ.setdefault("PYTHONHASHSEED", "0")
    options = session.SessionOptions(
        master=master,
        app_name="kmodel-check",
        extra_conf=(("spark.executorEnv.PYTHONHASHSEED", "0"),),
    )
    try:
        spark = session.start(options)
    except (session.SparkStartError, ValueError) as err:
        fail_input(f"Spark did not start: {err}")
    with progress_display(True) as progress:
        return check_spark(
            spec,
            spark,
            invariants=invariants,
            symmetry=symmetry,
            clock=time.perf_counter,
            progress=progress,
        )


def lasso_json_of(spec: Spec, lasso: Lasso) -> list[dict[str, Any]]:
    return trace_json(spec, lasso.prefix + lasso.cycle)


def run_liveness(
    spec: Spec, properties: list[str] | None, max_states: int | None
) -> LivenessResult:
    """Build the state graph (with progress) and check the liveness properties on it."""
    with progress_display(True) as progress:
        started = time.perf_counter()

        def report(states: int, edges: int) -> None:
            if progress is not None:
                seconds = time.perf_counter() - started
                progress(Stats(distinct_states=states, states_generated=edges, seconds=seconds))

        return check_liveness(spec, properties=properties, max_states=max_states, progress=report)


def run_check(
    spec: Spec,
    invariants: list[str] | None,
    *,
    symmetry: bool = False,
    simulate_mode: bool = False,
    seed: int = 0,
    depth: int = 30,
    runs: int = 2_000,
    max_states: int | None = None,
    graph: bool = False,
    fingerprints: bool = False,
    workers: int = 1,
    spill: str | None = None,
) -> CheckResult:
    """The search the flags ask for: random walks; the search on ``workers`` processes (by
    fingerprints); the sequential search by fingerprints; or the sequential search keeping
    states (the one that can draw the graph). A bad input is refused (exit 2)."""
    with progress_display(True) as progress:
        try:
            if simulate_mode:
                return simulate(
                    spec,
                    seed=seed,
                    depth=depth,
                    runs=runs,
                    invariants=invariants,
                    clock=time.perf_counter,
                    progress=progress,
                )
            if workers > 1 and not graph:
                from spec.parallel import check_parallel

                return check_parallel(
                    spec,
                    workers=workers,
                    invariants=invariants,
                    symmetry=symmetry,
                    max_states=max_states,
                    clock=time.perf_counter,
                    progress=progress,
                )
            if spill is not None:
                from spec.spill import check_spilled

                return check_spilled(
                    spec,
                    spill,
                    invariants=invariants,
                    symmetry=symmetry,
                    max_states=max_states,
                    clock=time.perf_counter,
                    progress=progress,
                )
            if fingerprints:
                from spec.fingerprints import check_fingerprints

                return check_fingerprints(
                    spec,
                    invariants=invariants,
                    symmetry=symmetry,
                    max_states=max_states,
                    clock=time.perf_counter,
                    progress=progress,
                )
            return explore(
                spec,
                invariants=invariants,
                symmetry=symmetry,
                max_states=max_states,
                clock=time.perf_counter,
                progress=progress,
                graph=graph,
            )
        except ValueError as err:
            fail_input(str(err))
