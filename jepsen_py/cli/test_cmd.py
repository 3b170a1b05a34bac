"""``kmodel test``: a Jepsen-style fault-injection run on the simulated Kafka cluster.

One run by default: the workload and the nemesis for ``--time-limit`` of logical time, then
heal, recovery and final reads; the history is checked (linearizability and the Kafka
anomaly taxonomy) and everything goes to a store directory (``--store``). With ``--runs N``
(swarm mode) each run's configuration -- which faults, how often, how fast, how many
clients -- is drawn from its seed (``--seed``, ``--seed``+1, ...), and a table of outcomes
is printed; ``--stop-on-failure`` ends the swarm at the first invalid run.

The verdict is decided per key by the verdict function ``kmodel verify`` uses
(`jepsen_py.checker.verdict`), under ``--consistency``: Kafka's guarantees (``kafka``, the
default; linearizability is reported beside) or linearizability (``linearizable``). An
invalid run names its violations and the history lines that witness them, in the summary,
the swarm table, ``results.json`` and ``timeline.html``.

Exit code: 0 valid, 1 invalid (any run), 2 unknown (a run whose final reads never finished,
or bad flags). Every run prints the one command that reproduces it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

import click

from impl.fetcher import TRUNCATIONS
from impl.world import FENCE_BUGS
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.verdict import CONSISTENCIES, KAFKA
from jepsen_py.cli.common import EXIT_OK, emit_json, fail_input, verdict_exit_code
from jepsen_py.cli.swarm_cmd import SwarmOptions, check_swarm_flags, run_swarm
from jepsen_py.explain import explanation_lines
from jepsen_py.group_cluster import GroupClusterConfig
from jepsen_py.group_workload import GROUP_BUGS, GroupTestError, parse_group_faults, run_group_test
from jepsen_py.nemesis import ALIASES, CATALOGUE, UNSUPPORTED, NemesisError, parse_faults
from jepsen_py.runner.config import (
    ConfigError,
    TestConfig,
    format_duration,
    parse_assignment,
    parse_duration,
)
from jepsen_py.runner.outcome import HistoryCheck, RunOutcome, verdict_name
from jepsen_py.runner.run import run_test
from jepsen_py.runner.swarm import violation_lines as _violation_lines
from jepsen_py.store import StoreError


def describe_config(config: TestConfig) -> str:
    election = "unclean election" if config.unclean else "clean election"
    if config.cluster_config().elr:
        election += " + KIP-966 ELR"
    idempotent = config.cluster_config().idempotence
    return (
        f"{config.brokers} brokers, {config.partitions} partition(s), acks={config.acks}, "
        f"min.insync.replicas={config.min_isr}, {election}, {config.truncation} truncation, "
        f"{'idempotent' if idempotent else 'non-idempotent'} producers"
    )


def describe_workload(config: TestConfig) -> str:
    if config.schedule is not None:
        faults = f"an explicit schedule of {len(config.schedule)} nemesis ops"
    elif config.nemesis:
        faults = f"{', '.join(config.nemesis)} every ~{format_duration(config.interval_ns)}"
    else:
        faults = "no faults"
    limit = f", at most {config.max_ops} ops" if config.max_ops is not None else ""
    return (
        f"{format_duration(config.time_limit_ns)} at {config.rate:g} ops/s by "
        f"{config.concurrency} clients{limit}; nemesis: {faults}"
    )


def _counts(mapping: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in mapping.items()) or "none"


_STYLES = {Verdict.OK: "green", Verdict.ILLEGAL: "red", Verdict.UNKNOWN: "yellow"}


def print_outcome(outcome: RunOutcome) -> None:
    check = outcome.check
    config = outcome.config
    click.echo(f"{config.name} seed {outcome.seed}: {describe_config(config)}")
    click.echo(f"  workload: {describe_workload(config)}")
    click.echo(f"  history: {len(outcome.history)} ops ({_counts(check.completions)})")
    click.echo(f"  faults: {sum(outcome.faults.values())} ({_counts(outcome.faults)})")
    lin = check.linearizable
    if lin.verdict is Verdict.OK:
        click.echo("  linearizable: yes")
    else:
        click.echo(f"  linearizable: {lin.verdict.value}: {lin.explanation}")
    found = {name: n for name, n in check.anomaly_counts.items() if n}
    click.echo(f"  anomalies: {_counts(found)}")
    if check.informational:
        click.echo(
            f"  informational (allowed by Kafka's guarantees): {_counts(check.informational)}"
        )
    examples = check.lost_examples
    click.echo(
        f"  acknowledged writes lost: {check.lost_acknowledged_writes} of "
        f"{check.acknowledged_sends}" + (f" (e.g. {examples[0]})" if examples else "")
    )
    for line in explanation_lines(check.loss_explanations):
        click.echo(line)
    if check.divergence_explanations:
        click.echo("  offsets that held two values:")
        for line in explanation_lines(check.divergence_explanations):
            click.echo(line)
    controller = outcome.figures.controller
    if config.bugs or controller["brain_splits"]:
        # docs/controller.md: a zombie controller beside its successor, and what its
        # requests met (rejected: STALE_CONTROLLER_EPOCH; applied: that fence was off).
        click.echo(
            f"  controller: {controller['controller_elections']} elections, "
            f"{controller['brain_splits']} brain splits, zombie requests rejected "
            f"{controller['stale_controller_rejected']} / applied "
            f"{controller['stale_controller_applied']}, zombie writes "
            f"{controller['zombie_writes']}"
            + (f" (fences off: {', '.join(config.bugs)})" if config.bugs else "")
        )
    reads = check.final_reads
    status = "complete" if reads.complete else "INCOMPLETE"
    click.echo(f"  final reads: {status} ({_counts({k: int(v) for k, v in reads.keys.items()})})")
    why = f" ({', '.join(check.violations)})" if check.violations else ""
    decided = f" under --consistency {check.consistency}"
    click.echo(
        "  verdict: "
        + click.style(outcome.verdict_name.upper(), fg=_STYLES[outcome.verdict], bold=True)
        + why
        + decided
    )
    for line in violation_lines(check):
        click.echo(f"    {line}")
    if outcome.verdict is Verdict.UNKNOWN:
        for key, text in sorted(check.explanations.items()):
            click.echo(f"    key {key}: {text}")
    if outcome.run_dir is not None:
        click.echo(f"  store: {outcome.run_dir}")
    click.echo(f"  reproduce: {outcome.command}")
    seconds = outcome.seconds
    parts = [f"simulation {seconds.simulation:.1f} s", f"checker {check.checker_seconds:.2f} s"]
    logical = outcome.figures.logical_end_ns / 1e9
    click.echo(
        f"  verdict in {seconds.wall:.1f} s of wall time ({', '.join(parts)}) for "
        f"{logical:.1f} s of logical time"
    )


def violation_lines(check: HistoryCheck) -> list[str]:
    """One line per violation that made a run invalid (`jepsen_py.runner.swarm`)."""
    return _violation_lines(check)


def outcome_json(outcome: RunOutcome) -> dict[str, Any]:
    check = outcome.check
    return {
        "verdict": outcome.verdict_name,
        "exit_code": verdict_exit_code(outcome.verdict),
        "seed": outcome.seed,
        "store": str(outcome.run_dir) if outcome.run_dir is not None else None,
        "config": outcome.config.to_json(),
        "history_ops": len(outcome.history),
        "history_hash": outcome.history_hash,
        "faults": dict(outcome.faults),
        "completions": dict(check.completions),
        "linearizable": check.linearizable.verdict.value,
        "anomalies": {k: v for k, v in check.anomaly_counts.items() if v},
        "violations": list(check.violations),
        "violation_lines": dict(check.violation_lines),
        "informational": check.informational,
        "consistency": check.consistency,
        "lost_acknowledged_writes": check.lost_acknowledged_writes,
        "loss_mechanisms": check.loss_mechanisms,
        "final_reads_complete": check.final_reads.complete,
        "command": outcome.command,
        "seconds": outcome.seconds.to_json(),
        "checker_seconds": check.checker_seconds,
    }


def _list_faults() -> None:
    width = max(len(name) for name in CATALOGUE)
    for name, fault in CATALOGUE.items():
        click.echo(f"  {name.ljust(width)}  {fault.group:<9} {fault.summary}")
    for alias, names in ALIASES.items():
        click.echo(f"  {alias.ljust(width)}  alias     {', '.join(names) or '(no faults)'}")
    for name, why in UNSUPPORTED.items():
        click.echo(f"  {name.ljust(width)}  -         {why}")


def _duration(flag: str, text: str) -> int:
    try:
        return parse_duration(text)
    except ConfigError as exc:
        fail_input(f"{flag}: {exc}")


@click.command(name="test")
@click.option("--brokers", type=int, default=3, show_default=True)
@click.option("--partitions", type=int, default=2, show_default=True)
@click.option("--acks", type=click.Choice(["0", "1", "all"]), default="all", show_default=True)
@click.option("--min-isr", type=int, default=2, show_default=True, help="min.insync.replicas")
@click.option(
    "--unclean/--clean",
    default=False,
    show_default=True,
    help="unclean.leader.election.enable",
)
@click.option(
    "--elr/--no-elr",
    default=False,
    show_default=True,
    help="KIP-966 Eligible Leader Replicas (Kafka 4.0+): strict min ISR, election from the "
    "ELR. Off: Kafka before 4.0.",
)
@click.option(
    "--replica-assignment",
    default=None,
    metavar="1:2:3,2:3:1",
    help="The topic's replicas per partition, preferred leader first (kafka-topics.sh "
    "--replica-assignment). Default: Kafka's round-robin, which spreads the preferred leaders.",
)
@click.option(
    "--auto-leader-rebalance/--no-auto-leader-rebalance",
    default=False,
    show_default=True,
    help="auto.leader.rebalance.enable: the controller moves leadership back to the preferred "
    "replica of brokers over the imbalance ratio (Kafka's default is on; off here).",
)
@click.option(
    "--leader-imbalance-pct",
    type=click.IntRange(0, 100),
    default=10,
    show_default=True,
    help="leader.imbalance.per.broker.percentage (with --auto-leader-rebalance).",
)
@click.option(
    "--leader-imbalance-check",
    default="300s",
    show_default=True,
    help="leader.imbalance.check.interval.seconds as a duration (with --auto-leader-rebalance).",
)
@click.option("--truncation", type=click.Choice(TRUNCATIONS), default="kip320", show_default=True)
@click.option(
    "--idempotence/--no-idempotence",
    default=None,
    help="enable.idempotence (KIP-98); default: Kafka's, on with --acks all, off otherwise. "
    "Without it a retried send may be appended twice (duplicate anomalies).",
)
@click.option(
    "--flush-messages",
    type=int,
    default=None,
    help="log.flush.interval.messages: fsync every N records (default: never, Kafka's).",
)
@click.option(
    "--flush-interval",
    default=None,
    help="log.flush.interval.ms as a duration, e.g. 1s (default: never, Kafka's).",
)
@click.option(
    "--dirty-expire",
    default="30s",
    show_default=True,
    help="vm.dirty_expire_centisecs: the kernel writes back dirty pages this old.",
)
@click.option(
    "--dirty-writeback",
    default="5s",
    show_default=True,
    help="vm.dirty_writeback_centisecs: how often the kernel's flusher wakes; 0: never "
    "(a power loss then loses everything not fsynced).",
)
@click.option(
    "--retention-ms",
    type=click.IntRange(min=0),
    default=None,
    help="retention.ms of the topic: delete segments whose newest record is older "
    "(default: no limit). Polls then report the log start; records below it are "
    "deleted-by-retention, not lost (docs/log-cleaning.md).",
)
@click.option(
    "--retention-bytes",
    type=click.IntRange(min=0),
    default=None,
    help="retention.bytes of each partition: delete the oldest segments beyond it "
    "(default: no limit).",
)
@click.option(
    "--segment-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="log.segment.bytes (default: 256 KiB): retention deletes whole segments.",
)
@click.option(
    "--nemesis",
    default="partition,kill,pause",
    show_default=True,
    help="Comma-separated faults or aliases (all, none, network, disk); --list-faults.",
)
@click.option("--time-limit", default="60s", show_default=True, help="Logical time, e.g. 60s.")
@click.option("--interval", default="5s", show_default=True, help="Mean gap between faults.")
@click.option(
    "--max-faults",
    type=int,
    default=1,
    show_default=True,
    help="At most this many faults at once; more lets them compound (a partition, then a "
    "kill inside it, then the heal).",
)
@click.option("--recovery", default="20s", show_default=True, help="Quiet before final reads.")
@click.option("--rate", type=float, default=100.0, show_default=True, help="Client ops/s.")
@click.option("--concurrency", type=int, default=5, show_default=True, help="Client threads.")
@click.option("--seed", type=int, default=None, help="The run's seed (default: a random one).")
@click.option(
    "--runs",
    type=int,
    default=1,
    show_default=True,
    help=">1: swarm mode: each run draws from its seed a subset of the faults (targeted ones "
    "too, e.g. transfer-leadership, pause-deciding-controller), a pace, how many overlap, "
    "and whether they nest (--compound, half of them quick); docs/fault-injection.md.",
)
@click.option("--stop-on-failure", is_flag=True, help="Swarm: stop at the first invalid run.")
@click.option(
    "--engine",
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="Swarm (--runs N): run the seeds here, one after another, or as Spark tasks, one "
    "per seed (local[*] by default; --master for a cluster). docs/spark-swarm.md.",
)
@click.option("--master", default=None, help="Spark master URL for --engine spark.")
@click.option(
    "--spark-conf",
    "spark_conf",
    multiple=True,
    metavar="KEY=VALUE",
    help="A Spark setting for --engine spark (repeatable), e.g. spark.executor.memory=4g.",
)
@click.option(
    "--steer",
    is_flag=True,
    help="Swarm: draw each round's faults and pace toward those whose runs reached "
    "situations few runs had reached (coverage feedback; docs/spark-swarm.md).",
)
@click.option("--store", "store_root", default="store", show_default=True)
@click.option("--name", default="kafka", show_default=True, help="The test's name in the store.")
@click.option("--no-reports", is_flag=True, help="Skip timeline.html and the PNG plots.")
@click.option(
    "--consistency",
    type=click.Choice(CONSISTENCIES),
    default=KAFKA,
    show_default=True,
    help="What decides: Kafka's guarantees (linearizability reported beside), or "
    "linearizability. docs/checking.md.",
)
@click.option(
    "--bug",
    "bugs",
    type=click.Choice(sorted(FENCE_BUGS) + sorted(GROUP_BUGS)),
    multiple=True,
    help="Turn a controller fence off (repeatable), as `kmodel check controller --bug` does "
    "in the spec: "
    + "; ".join(f"{name}: {text}" for name, text in sorted(FENCE_BUGS.items()))
    + "; with --workload group, no_generation_check: the group coordinator checks no "
    "generation id (`kmodel check group --bug no_generation_check`); fetch_before_load: a new "
    "coordinator answers OffsetFetch before it has loaded __consumer_offsets (`kmodel check "
    "offsets --bug fetch_before_load`; the offsets monitor's reads that fall in a load see "
    "the early answer: commit-regression). Default: every fence on.",
)
@click.option(
    "--compound",
    is_flag=True,
    help="With --max-faults > 1, faults nest: a partition opens, faults start inside it (a "
    "kill of the isolated leader), they stop innermost first and the partition heals last.",
)
@click.option(
    "--compound-hold",
    default=None,
    help="With --compound, how long the partition holds before faults start inside it "
    "(default: replica.lag.time.max.ms, so the ISR shrinks first); 0s: a quick compound, "
    "the inner faults follow inside the window where the cut-off follower is still in sync.",
)
@click.option(
    "--buggify",
    is_flag=True,
    help="Randomized timing inside the brokers (FoundationDB's BUGGIFY, impl.buggify): a "
    "broker's periodic work (fetchers, ISR changes, heartbeats, controller duties) now and "
    "then starts late, by delays drawn from the seed. Default: off.",
)
@click.option(
    "--workload",
    type=click.Choice(["kafka", "group"]),
    default="kafka",
    show_default=True,
    help="kafka: producers and consumers on the cluster's partitions; group: a consumer "
    "group on the cluster reads, processes and commits what a producer writes "
    "(docs/groups.md, docs/offsets.md); its faults (--nemesis all) are pause-consumer, "
    "kill-consumer, leave-consumer, kill-coordinator, pause-coordinator, partition, kill, "
    "late-commit, pause-partition, fail-processing.",
)
@click.option(
    "--commit",
    type=click.Choice(["after-process", "after-process-async", "before-process", "auto"]),
    default="after-process",
    show_default=True,
    help="With --workload group: commitSync after processing (at least once), commitAsync "
    "after processing (at least once, no retry), commitSync before processing (at most "
    "once), or enable.auto.commit.",
)
@click.option(
    "--offset-reset",
    type=click.Choice(["earliest", "latest", "none"]),
    default="earliest",
    show_default=True,
    help="With --workload group: auto.offset.reset for partitions the group never committed.",
)
@click.option(
    "--assignor",
    type=click.Choice(["range", "roundrobin", "sticky", "cooperative-sticky"]),
    default="range",
    show_default=True,
    help="With --workload group: partition.assignment.strategy (cooperative-sticky: KIP-429).",
)
@click.option(
    "--monitor-interval",
    default="1s",
    show_default=True,
    help="With --workload group: mean gap between an admin's reads of the group's committed "
    "offsets (kafka-consumer-groups --describe, a lag monitor), each checked against the "
    "commits acknowledged before it; 0 turns the monitor off.",
)
@click.option("--list-faults", is_flag=True, help="Print the fault catalogue and exit.")
@click.option("--json", "json_mode", is_flag=True, help="One JSON object as the last line.")
def test_cmd(
    brokers: int,
    partitions: int,
    acks: str,
    min_isr: int,
    unclean: bool,
    elr: bool,
    replica_assignment: str | None,
    auto_leader_rebalance: bool,
    leader_imbalance_pct: int,
    leader_imbalance_check: str,
    truncation: str,
    idempotence: bool | None,
    flush_messages: int | None,
    flush_interval: str | None,
    dirty_expire: str,
    dirty_writeback: str,
    retention_ms: int | None,
    retention_bytes: int | None,
    segment_bytes: int | None,
    nemesis: str,
    time_limit: str,
    interval: str,
    max_faults: int,
    recovery: str,
    rate: float,
    concurrency: int,
    seed: int | None,
    runs: int,
    stop_on_failure: bool,
    engine: str,
    master: str | None,
    spark_conf: tuple[str, ...],
    steer: bool,
    store_root: str,
    name: str,
    no_reports: bool,
    consistency: str,
    bugs: tuple[str, ...],
    buggify: bool,
    compound: bool,
    compound_hold: str | None,
    workload: str,
    commit: str,
    offset_reset: str,
    assignor: str,
    monitor_interval: str,
    list_faults: bool,
    json_mode: bool,
) -> None:
    """Run the Kafka workload against the simulated cluster under faults, check the
    history, and store it; print the verdict and the command that reproduces it."""
    if list_faults:
        _list_faults()
        raise SystemExit(EXIT_OK)
    log_flags = {"--retention-ms": retention_ms, "--retention-bytes": retention_bytes,
                 "--segment-bytes": segment_bytes}  # fmt: skip
    if workload == "group" and any(v is not None for v in log_flags.values()):
        given = ", ".join(f for f, v in log_flags.items() if v is not None)
        fail_input(f"{given}: the workload topic's log settings apply to --workload kafka")
    if workload == "group" and (engine != "local" or steer or runs > 1):
        fail_input("--runs, --engine and --steer are for --workload kafka")
    monitor_given = (
        click.get_current_context().get_parameter_source("monitor_interval")
        is not click.core.ParameterSource.DEFAULT
    )
    if workload != "group" and monitor_given:
        fail_input("--monitor-interval: the offsets monitor reads a group's commits; it needs "
                   "--workload group")  # fmt: skip
    if workload == "group":
        _group_test(
            nemesis,
            time_limit,
            interval,
            partitions,
            brokers,
            concurrency,
            seed,
            bugs,
            store_root,
            name,
            json_mode,
            assignor,
            commit,
            offset_reset,
            unclean,
            min_isr,
            recovery,
            monitor_interval,
        )
    if set(bugs) & GROUP_BUGS:
        fail_input(f"--bug {', '.join(sorted(set(bugs) & GROUP_BUGS))} needs --workload group")
    try:
        faults = parse_faults(nemesis)
    except NemesisError as exc:
        fail_input(f"--nemesis: {exc}")
    if runs < 1:
        fail_input(f"--runs {runs}: run at least once")
    if seed is not None and seed < 0:
        fail_input(f"--seed {seed}: seeds are >= 0")
    try:
        base = TestConfig(
            name=name,
            brokers=brokers,
            partitions=partitions,
            acks=acks,
            min_isr=min_isr,
            unclean=unclean,
            elr=elr,
            replica_assignment=(
                None if replica_assignment is None else parse_assignment(replica_assignment)
            ),
            auto_leader_rebalance=auto_leader_rebalance,
            leader_imbalance_pct=leader_imbalance_pct,
            leader_imbalance_check_ns=_duration("--leader-imbalance-check", leader_imbalance_check),
            truncation=truncation,
            idempotence=idempotence,
            flush_messages=flush_messages,
            flush_interval_ns=(
                None if flush_interval is None else _duration("--flush-interval", flush_interval)
            ),
            dirty_expire_ns=_duration("--dirty-expire", dirty_expire),
            dirty_writeback_ns=_duration("--dirty-writeback", dirty_writeback) or None,
            nemesis=faults,
            interval_ns=_duration("--interval", interval),
            max_faults=max_faults,
            time_limit_ns=_duration("--time-limit", time_limit),
            recovery_ns=_duration("--recovery", recovery),
            rate=rate,
            concurrency=concurrency,
            bugs=tuple(sorted(set(bugs))),
            buggify=buggify,
            compound=compound,
            compound_hold_ns=(
                None if compound_hold is None else _duration("--compound-hold", compound_hold)
            ),
            retention_ms=retention_ms,
            retention_bytes=retention_bytes,
            segment_bytes=segment_bytes,
        )
    except ConfigError as exc:
        fail_input(str(exc))
    first_seed = seed if seed is not None else secrets.randbelow(2**31)
    swarm = SwarmOptions(
        first_seed=first_seed,
        runs=runs,
        store_root=store_root,
        reports=not no_reports,
        consistency=consistency,
        stop_on_failure=stop_on_failure,
        engine=engine,
        master=master,
        spark_conf=spark_conf,
        steer=steer,
        json_mode=json_mode,
    )
    check_swarm_flags(swarm)
    if runs > 1:
        run_swarm(base, swarm)
    try:
        outcome = run_test(
            base,
            first_seed,
            store_root=store_root,
            reports=not no_reports,
            on_checked=None if json_mode else print_outcome,
            consistency=consistency,
        )
    except StoreError as exc:
        fail_input(f"--store: {exc}")
    took = outcome.seconds.reports
    if not json_mode and took is not None:
        click.echo(f"  reports: timeline.html, latency.png, rate.png ({took:.1f} s)")
    if json_mode:
        emit_json(outcome_json(outcome))
    raise SystemExit(verdict_exit_code(outcome.verdict))


def _group_test(
    nemesis: str,
    time_limit: str,
    interval: str,
    partitions: int,
    brokers: int,
    consumers: int,
    seed: int | None,
    bugs: tuple[str, ...],
    store_root: str,
    name: str,
    json_mode: bool,
    assignor: str,
    commit: str = "after-process",
    offset_reset: str = "earliest",
    unclean: bool = False,
    min_isr: int = 2,
    recovery: str = "20s",
    monitor_interval: str = "1s",
) -> None:
    """``--workload group``: one run of ``jepsen_py.group_workload`` on the cluster; flags
    left at their defaults take the group workload's (all group faults, 6 partitions, 3
    consumers, 60 s, a fault every 5 s)."""
    ctx = click.get_current_context()

    def given(param: str) -> bool:
        return ctx.get_parameter_source(param) is not click.core.ParameterSource.DEFAULT

    defaults = GroupClusterConfig()
    run_seed = seed if seed is not None else secrets.randbelow(2**31)
    try:
        result = run_group_test(
            seed=run_seed,
            faults=parse_group_faults(nemesis if given("nemesis") else "all"),
            time_limit_ns=_duration("--time-limit", time_limit)
            if given("time_limit")
            else defaults.duration_ns,
            interval_ns=_duration("--interval", interval)
            if given("interval")
            else defaults.fault_interval_ns,
            partitions=partitions if given("partitions") else defaults.partitions,
            brokers=brokers,
            consumers=consumers if given("concurrency") else defaults.consumers,
            bugs=tuple(sorted(set(bugs))),
            store_root=store_root,
            name=name if given("name") else "group",
            assignor=assignor,
            commit=commit,
            auto_offset_reset=offset_reset,
            unclean=unclean,
            min_isr=min_isr,
            recovery_ns=_duration("--recovery", recovery) if given("recovery") else None,
            monitor_interval_ns=_duration("--monitor-interval", monitor_interval),
        )
    except GroupTestError as exc:
        fail_input(str(exc))
    except StoreError as exc:
        fail_input(f"--store: {exc}")
    verdict = {"valid": Verdict.OK, "invalid": Verdict.ILLEGAL}.get(
        result["verdict"], Verdict.UNKNOWN
    )
    if json_mode:
        emit_json({**result, "verdict": verdict_name(verdict)})
    else:
        shown = {"valid": "valid", "invalid": "INVALID"}.get(result["verdict"], "UNKNOWN")
        click.echo(f"group workload, seed {run_seed}: {shown}")
        delivery = result["delivery"]
        counts = ", ".join(f"{n} {c}" for n, c in delivery["counts"].items()) or "none"
        click.echo(
            f"  delivery ({delivery['mode']}, kmodel verify --delivery): "
            f"{delivery['verdict']}; anomalies: {counts}"
            + (
                f"; violations: {', '.join(delivery['violations'])}"
                if delivery["violations"]
                else ""
            )
            + (f"; {delivery['error']}" if delivery["error"] else "")
        )
        click.echo(
            f"  generations: {result['generations']}, rebalance durations (ms, logical): "
            f"{result['rebalance_ms']}"
        )
        click.echo(
            f"  records processed: {result['records_processed']} (of "
            f"{result.get('sends_ok', 0)} acknowledged sends); commits ok "
            f"{result.get('commits_ok', 0)}, fail {result.get('commits_fail', 0)}, unknown "
            f"{result.get('commits_info', 0)}; accepted by the coordinator "
            f"{result['accepted_commits']}"
        )
        click.echo(
            f"  final committed offsets: {result['final_offsets']}; keys below an "
            f"acknowledged commit: {result['keys_behind_acknowledged_commit']}"
        )
        click.echo(
            f"  coordinator: {result['coordinator']}; partitions withheld (cooperative): "
            f"{result['withheld']}"
        )
        click.echo(f"  members removed: {result['removed']}; faults: {result['nemesis']}")
        for line in result["violations"]:
            click.echo(f"  violation: {line}")
        click.echo(f"  store: {result.get('store')}")
        flags = [f"--bug {b}" for b in result["bugs"]]
        if assignor != "range":
            flags.append(f"--assignor {assignor}")
        if commit != "after-process":
            flags.append(f"--commit {commit}")
        if offset_reset != "earliest":
            flags.append(f"--offset-reset {offset_reset}")
        if unclean:
            flags.append("--unclean")
        if given("nemesis"):
            flags.append(f"--nemesis {nemesis}")
        if given("monitor_interval"):
            flags.append(f"--monitor-interval {monitor_interval}")
        command = " ".join(["kmodel test --workload group --seed", str(run_seed), *flags])
        click.echo(f"  reproduce: {command}")
    raise SystemExit(verdict_exit_code(verdict))
