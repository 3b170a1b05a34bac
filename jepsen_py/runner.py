"""The runner: a Kafka workload and the nemesis on the simulated cluster, a store
directory, and a verdict (Jepsen's ``jepsen.core/run!``).

A run is a function of (code, `TestConfig`, seed): the same three give the same history,
byte for byte (`RunOutcome.history_hash`). Streams of the seed (``impl.sim.rng``): the
cluster splits its own (network, disks, nodes); the runner draws the workload from
``jepsen/workload``, the nemesis's targets from ``jepsen/nemesis`` and the fault schedule
from ``jepsen/schedule``. No wall clock enters the run; only the store directory's name
and the timing figures of ``results.json`` read it.

The run, on logical time:

1. **main phase**, ``time_limit``: client threads invoke sends and polls at ``rate`` ops
   per second over all threads (`jepsen_py.generator.stagger`; a thread runs one op at a
   time, so blocked threads slow it down), while the nemesis starts and stops faults from
   ``nemesis`` every ``interval`` or so (`jepsen_py.generator.nemesis_schedule`), or
   follows an explicit ``schedule``;
2. **heal**: at the time limit, the nemesis stops every fault it may have running
   (`jepsen_py.generator.heal`: restart, resume, heal the network, restore its settings);
   client ops still in flight complete;
3. **recovery**: ``recovery`` of quiet, for elections, ISR expansion and catch-up;
4. **final reads**: every key read back from offset 0 by polls marked ``final``
   (`jepsen_py.generator.final_reads`), until a poll comes back empty at its high
   watermark.

The driver steps the cluster one event time at a time (the next message delivery or node
tick, or the generator's next wake-up, whichever is first), so every completion is handed
to the generator at the logical time it happened. The history is written to
``history.jsonl`` as it goes.

Checking (`check_history`): every key's verdict from `jepsen_py.checker.verdict` -- the
one verdict function ``kmodel verify`` uses too -- over the exact Kafka-log checker
(linearizability) and the anomaly taxonomy (Kafka's guarantees), decided under
``consistency`` (``kafka`` by default; docs/checking.md). The final-read rule is that
function's: an acknowledged write the complete final read did not return is a lost
write; a key whose final read gave up (the cluster never recovered) is *unknown* at best.
A run that never reached its final reads is *unknown* at best.
Verdicts: ``valid`` (exit 0), ``invalid`` (1), ``unknown`` (2).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from impl.cluster import Cluster, ClusterConfig
from impl.fetcher import TRUNCATIONS
from impl.sim.rng import SimRandom, derive_seed
from impl.timeline import Event, event_to_json
from impl.world import FENCE_BUGS
from jepsen_py.checker.anomalies import ANOMALIES, VIOLATIONS, observe, summarize
from jepsen_py.checker.kafka_log import freeze
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.verdict import KAFKA, KeyCheck, check_keys
from jepsen_py.explain import LossExplanation, explain_losses
from jepsen_py.generator import (
    EXHAUSTED,
    MILLISECOND,
    NEMESIS,
    SECOND,
    Gen,
    Interpreter,
    Invocation,
    Pending,
    any_of,
    clients,
    concat,
    final_reads,
    heal,
    info,
    limit,
    mix,
    nemesis_schedule,
    phases,
    polls,
    sends,
    sleep,
    stagger,
    time_limit,
)
from jepsen_py.generator import nemesis as on_nemesis
from jepsen_py.history.jsonl import op_to_record
from jepsen_py.history.op import Op
from jepsen_py.nemesis import (
    CATALOGUE,
    Nemesis,
    NemesisError,
    ScheduleStep,
    canonical,
    fault_of_op,
    network_for,
    parse_faults,
    scripted,
)
from jepsen_py.workload import KafkaClients, partition_keys

VALID, INVALID, UNKNOWN = "valid", "invalid", "unknown"
EXIT_CODES = {VALID: 0, INVALID: 1, UNKNOWN: 2}

_EXAMPLES = 5


class ConfigError(ValueError):
    """A test configuration that cannot run; the message names the field and the fix."""


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


@attrs.frozen
class TestConfig:
    """Everything a run depends on besides its seed; written to ``test.json``."""

    __test__ = False  # not a pytest test class

    name: str = "kafka"
    brokers: int = 3
    partitions: int = 2
    acks: str = "all"
    min_isr: int = 2
    unclean: bool = False
    truncation: str = "kip320"
    nemesis: tuple[str, ...] = ("partition", "kill", "pause")
    interval_ns: int = 5 * SECOND
    """Mean time between nemesis ops (a fault's start, its stop, the next start...)."""
    time_limit_ns: int = 60 * SECOND
    rate: float = 100.0
    """Client ops per second of logical time, over all threads."""
    concurrency: int = 5
    """Client threads (each owns a producer and a consumer per partition)."""
    recovery_ns: int = 20 * SECOND
    schedule: tuple[ScheduleStep, ...] | None = None
    """An explicit fault schedule instead of the random one (replays, shrunk runs)."""
    max_ops: int | None = None
    """At most this many client ops in the main phase (shrinking)."""
    final_strikes: int = 20
    poll_timeout_ns: int = 5 * SECOND
    request_timeout_ns: int = 3 * SECOND
    delivery_timeout_ns: int = 10 * SECOND
    session_timeout_ns: int = 6 * SECOND
    replica_lag_time_max_ns: int = 10 * SECOND
    idempotence: bool | None = None
    """The producers' ``enable.idempotence`` (KIP-98). None: Kafka's default (on with
    acks=all, off with 0 or 1); False: retries append again (``duplicate`` anomalies)."""
    flush_messages: int | None = None
    """``log.flush.interval.messages`` (None: Kafka's default, never)."""
    flush_interval_ns: int | None = None
    """``log.flush.interval.ms`` (None: Kafka's default, never)."""
    dirty_expire_ns: int = 30 * SECOND
    """``vm.dirty_expire_centisecs`` of every broker machine (Linux's default, 30 s)."""
    dirty_writeback_ns: int | None = 5 * SECOND
    """``vm.dirty_writeback_centisecs`` (Linux's default, 5 s); None: no write-back."""
    bugs: tuple[str, ...] = ()
    """Controller fences turned off (``impl.world.FENCE_BUGS``; ``kmodel test --bug``)."""

    def __attrs_post_init__(self) -> None:
        if self.brokers < 1:
            raise ConfigError(f"brokers={self.brokers}: a cluster needs at least 1 broker")
        if self.partitions < 1:
            raise ConfigError(f"partitions={self.partitions}: the topic needs at least one")
        if self.acks not in ("0", "1", "all"):
            raise ConfigError(f"acks={self.acks!r}: use 0, 1 or all")
        if not 1 <= self.min_isr <= self.brokers:
            raise ConfigError(
                f"min_isr={self.min_isr}: min.insync.replicas must be in 1..{self.brokers} "
                "(the number of brokers; every partition has a replica on each)"
            )
        if self.truncation not in TRUNCATIONS:
            raise ConfigError(
                f"truncation={self.truncation!r}: use one of {', '.join(TRUNCATIONS)}"
            )
        unknown = [f for f in self.nemesis if f not in CATALOGUE]
        if unknown:
            raise ConfigError(f"nemesis: unknown faults {unknown}; see jepsen_py.nemesis")
        if self.interval_ns <= 0 or self.time_limit_ns < 0 or self.recovery_ns < 0:
            raise ConfigError("interval must be > 0, time limit and recovery >= 0")
        if not self.rate > 0:
            raise ConfigError(f"rate={self.rate}: ops per second must be > 0")
        if self.concurrency < 1:
            raise ConfigError(f"concurrency={self.concurrency}: at least one client thread")
        if self.max_ops is not None and self.max_ops < 0:
            raise ConfigError(f"max_ops={self.max_ops} must be >= 0")
        if self.flush_messages is not None and self.flush_messages < 1:
            raise ConfigError(f"flush_messages={self.flush_messages}: at least 1 record")
        for field in ("flush_interval_ns", "dirty_writeback_ns"):
            value = getattr(self, field)
            if value is not None and value <= 0:
                raise ConfigError(f"{field}={value}: must be > 0 (or unset)")
        if self.dirty_expire_ns < 0:
            raise ConfigError(f"dirty_expire_ns={self.dirty_expire_ns}: must be >= 0")
        unknown_bugs = sorted(set(self.bugs) - set(FENCE_BUGS))
        if unknown_bugs:
            raise ConfigError(
                f"bugs: unknown {unknown_bugs}; the implementation's fences are "
                f"{', '.join(sorted(FENCE_BUGS))}"
            )
        if self.idempotence and self.acks != "all":
            raise ConfigError(
                f"idempotence with acks={self.acks}: the idempotent producer needs acks=all "
                "(Kafka: 'Must set acks to all in order to use the idempotent producer'); "
                "use --acks all or --no-idempotence"
            )

    @property
    def faults(self) -> tuple[str, ...]:
        """Every fault this run may start (and heals at the end): the nemesis list and
        the faults of the explicit schedule, in catalogue order."""
        named = set(self.nemesis)
        for step in self.schedule or ():
            kind = fault_of_op(step.f)
            assert kind is not None, step
            named.add(kind[0])
        return tuple(name for name in CATALOGUE if name in named)

    @property
    def keys(self) -> list[str]:
        return partition_keys(self.partitions)

    def cluster_config(self) -> ClusterConfig:
        return ClusterConfig(
            brokers=self.brokers,
            partitions=self.partitions,
            truncation=self.truncation,
            acks=self.acks,
            min_insync_replicas=self.min_isr,
            unclean=self.unclean,
            producers=self.concurrency,
            consumers=self.concurrency * self.partitions,
            request_timeout_ns=self.request_timeout_ns,
            produce_timeout_ns=self.request_timeout_ns,
            delivery_timeout_ns=self.delivery_timeout_ns,
            session_timeout_ns=self.session_timeout_ns,
            replica_lag_time_max_ns=self.replica_lag_time_max_ns,
            network=network_for(self.faults),
            enable_idempotence=self.idempotence,
            log_flush_interval_messages=self.flush_messages,
            log_flush_interval_ns=self.flush_interval_ns,
            dirty_expire_ns=self.dirty_expire_ns,
            dirty_writeback_ns=self.dirty_writeback_ns,
            bugs=frozenset(self.bugs),
        )

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=False)
        data["nemesis"] = list(self.nemesis)
        data["bugs"] = list(self.bugs)
        data["schedule"] = None if self.schedule is None else [s.to_json() for s in self.schedule]
        return data

    @classmethod
    def from_json(cls, data: Any) -> TestConfig:
        if not isinstance(data, dict):
            raise ConfigError(f"a test config is a JSON object, got {type(data).__name__}")
        fields = {f.name for f in attrs.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ConfigError(f"test config: unknown fields {unknown}; known: {sorted(fields)}")
        values = dict(data)
        if "nemesis" in values:
            values["nemesis"] = tuple(values["nemesis"])
        if "bugs" in values:
            values["bugs"] = tuple(values["bugs"])
        if values.get("schedule") is not None:
            try:
                values["schedule"] = tuple(ScheduleStep.from_json(s) for s in values["schedule"])
            except NemesisError as exc:
                raise ConfigError(str(exc)) from exc
        try:
            return cls(**values)
        except TypeError as exc:
            raise ConfigError(f"test config: {exc}") from exc


def reproduce_command(config: TestConfig, seed: int, store_dir: str | None = None) -> str:
    """The one command that reruns this run: ``kmodel test`` with its flags, or, for an
    explicit schedule (which has no flags), ``kmodel replay`` of its store directory."""
    default = TestConfig()
    expressible = attrs.evolve(
        default,
        name=config.name,
        brokers=config.brokers,
        partitions=config.partitions,
        acks=config.acks,
        min_isr=config.min_isr,
        unclean=config.unclean,
        truncation=config.truncation,
        nemesis=config.nemesis,
        interval_ns=config.interval_ns,
        time_limit_ns=config.time_limit_ns,
        recovery_ns=config.recovery_ns,
        rate=config.rate,
        concurrency=config.concurrency,
        idempotence=config.idempotence,
        flush_messages=config.flush_messages,
        flush_interval_ns=config.flush_interval_ns,
        dirty_expire_ns=config.dirty_expire_ns,
        dirty_writeback_ns=config.dirty_writeback_ns,
        bugs=config.bugs,
    )
    if config != expressible:
        # An explicit schedule, an op cap or a timeout no flag sets: only the store has it.
        target = store_dir if store_dir is not None else "<store dir>"
        return f"kmodel replay {shlex.quote(target)}"
    args = [
        "kmodel test",
        f"--brokers {config.brokers}",
        f"--partitions {config.partitions}",
        f"--acks {config.acks}",
        f"--min-isr {config.min_isr}",
        "--unclean" if config.unclean else "--clean",
        f"--truncation {config.truncation}",
        f"--nemesis {','.join(config.nemesis) or 'none'}",
        f"--time-limit {format_duration(config.time_limit_ns)}",
        f"--interval {format_duration(config.interval_ns)}",
        f"--rate {config.rate:g}",
        f"--concurrency {config.concurrency}",
    ]
    if config.recovery_ns != default.recovery_ns:
        args.append(f"--recovery {format_duration(config.recovery_ns)}")
    if config.idempotence is not None:
        args.append("--idempotence" if config.idempotence else "--no-idempotence")
    if config.flush_messages is not None:
        args.append(f"--flush-messages {config.flush_messages}")
    if config.flush_interval_ns is not None:
        args.append(f"--flush-interval {format_duration(config.flush_interval_ns)}")
    if config.dirty_expire_ns != default.dirty_expire_ns:
        args.append(f"--dirty-expire {format_duration(config.dirty_expire_ns)}")
    if config.dirty_writeback_ns != default.dirty_writeback_ns:
        writeback = config.dirty_writeback_ns
        args.append(f"--dirty-writeback {format_duration(writeback) if writeback else 0}")
    args += [f"--bug {bug}" for bug in config.bugs]
    if config.name != default.name:
        args.append(f"--name {shlex.quote(config.name)}")
    args.append(f"--seed {seed}")
    return " ".join(args)


def format_duration(ns: int) -> str:
    if ns % SECOND == 0:
        return f"{ns // SECOND}s"
    if ns % MILLISECOND == 0:
        return f"{ns // MILLISECOND}ms"
    return f"{ns}ns"


def parse_duration(text: str) -> int:
    """``60s``, ``500ms``, ``2m``, ``1.5s`` or a bare number of seconds, as nanoseconds."""
    raw = text.strip().lower()
    units = (("ms", MILLISECOND), ("m", 60 * SECOND), ("s", SECOND))
    suffix, unit = next(((s, u) for s, u in units if raw.endswith(s)), ("", SECOND))
    number = raw[: len(raw) - len(suffix)]
    try:
        value = float(number)
    except ValueError:
        raise ConfigError(f"{text!r} is not a duration: use e.g. 60s, 500ms, 2m") from None
    if value < 0:
        raise ConfigError(f"{text!r}: a duration is >= 0")
    return round(value * unit)


# --- the generator of a run -----------------------------------------------------------


def build_generator(config: TestConfig, seed: int) -> Gen:
    """Main phase (clients and nemesis), heal at the time limit, recovery, final reads."""
    keys = config.keys
    workload: Gen = stagger(
        max(1, round(SECOND / config.rate)), mix(sends(keys), polls(keys, p_rewind=0.05))
    )
    if config.max_ops is not None:
        workload = limit(config.max_ops, workload)
    faults = config.faults
    if config.schedule is not None:
        schedule: Gen = scripted(config.schedule)
    elif faults:
        schedule = nemesis_schedule(
            list(faults), config.interval_ns, derive_seed(seed, "jepsen/schedule")
        )
    else:
        schedule = on_nemesis(concat())
    main = any_of(
        clients(time_limit(config.time_limit_ns, workload)),
        on_nemesis(concat(time_limit(config.time_limit_ns, schedule), heal(list(faults)))),
    )
    return phases(
        main,
        sleep(config.recovery_ns),
        concat(
            info("phase", "final-reads"),
            clients(final_reads(keys, max_strikes=config.final_strikes)),
        ),
    )


# --- running --------------------------------------------------------------------------


@attrs.define
class RunOutcome:
    """What a run produced: the history, its hash, the check, and where it was stored."""

    config: TestConfig
    seed: int
    history: list[Op]
    history_hash: str
    results: dict[str, Any]
    run_dir: Path | None
    wall_seconds: float

    @property
    def verdict(self) -> str:
        return str(self.results["verdict"])

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def violations(self) -> list[str]:
        return list(self.results["violations"])


Observer = Callable[[Cluster, Op | None], None]
"""Called after each step of the cluster (op None) and after each history op."""


_MAX_STALLED_STEPS = 100_000
"""Steps in a row at one logical time before the driver calls itself stuck."""


def _next_event(cluster: Cluster) -> int | None:
    """When the cluster next has something to do: a message delivery or a node's tick."""
    return cluster.next_event_time()


class HistoryHash:
    """The blake2b of the history as ``history.jsonl`` holds it, built as it is written."""

    def __init__(self) -> None:
        self.digest = hashlib.blake2b(digest_size=16, person=b"kmodel-history")

    @staticmethod
    def line(op: Op) -> bytes:
        return orjson.dumps(op_to_record(op)) + b"\n"

    def add(self, line: bytes) -> None:
        self.digest.update(line)

    def hexdigest(self) -> str:
        return self.digest.hexdigest()


def history_file_hash(path: str | os.PathLike[str]) -> str:
    """The hash `RunOutcome.history_hash` of a stored ``history.jsonl``."""
    digest = hashlib.blake2b(digest_size=16, person=b"kmodel-history")
    with open(path, "rb") as handle:
        for raw in handle:
            digest.update(raw)
    return digest.hexdigest()


def simulate_run(
    config: TestConfig,
    seed: int,
    *,
    emit: Callable[[Op, bytes], None] | None = None,
    observer: Observer | None = None,
) -> tuple[list[Op], dict[str, Any]]:
    """Run the test on a fresh simulated cluster; returns the history and figures of the
    run (logical end, events, faults performed, whether it finished)."""
    cluster = Cluster(config.cluster_config(), seed)
    clients_ = KafkaClients(cluster, config.concurrency, poll_timeout_ns=config.poll_timeout_ns)
    nemesis_ = Nemesis(cluster, SimRandom(seed).split("jepsen/nemesis"))
    history: list[Op] = []

    def record(op: Op) -> None:
        history.append(op)
        if emit is not None:
            emit(op, HistoryHash.line(op))
        if observer is not None:
            observer(cluster, op)

    threads: list[int | str] = [*range(config.concurrency), NEMESIS]
    interp = Interpreter(
        build_generator(config, seed),
        threads,
        SimRandom(seed).split("jepsen/workload"),
        emit=record,
    )
    # A bound on logical time, however the cluster behaves: the main phase, the slowest
    # client op, recovery, and every final read striking out.
    budget = (
        config.time_limit_ns
        + config.delivery_timeout_ns
        + config.recovery_ns
        + (config.final_strikes + 10) * len(config.keys) * config.poll_timeout_ns
        + 60 * SECOND
    )
    finished = True
    steps = stalled = 0
    now = 0
    while True:
        result = interp.step(now)
        if isinstance(result, Invocation):
            if result.kind != "invoke":
                continue
            if result.thread == NEMESIS:
                try:
                    value = nemesis_.perform(result.f, result.value)
                except NemesisError as exc:
                    value = {"error": str(exc)}
                interp.complete(now, NEMESIS, "info", canonical(value))
            else:
                clients_.invoke(result)
                for done in clients_.collect():
                    interp.complete(done.time, done.thread, done.type, done.value)
            continue
        if result is EXHAUSTED and not interp.busy:
            break
        wake = result.until if isinstance(result, Pending) else None
        candidates = [
            t for t in (wake, clients_.next_deadline(), _next_event(cluster)) if t is not None
        ]
        target = max(now, min(candidates)) if candidates else None
        if target is None or target > budget:
            finished = False
            break
        stalled = stalled + 1 if target == now else 0
        if stalled > _MAX_STALLED_STEPS:
            raise RuntimeError(
                f"the run stopped advancing at t={now} ns: {stalled} steps without time "
                f"moving (generator wake {wake}, client deadline {clients_.next_deadline()}, "
                f"cluster event {_next_event(cluster)}); a bug in the driver"
            )
        cluster.run_until(target)
        steps += 1
        now = target
        if observer is not None:
            observer(cluster, None)
        for done in clients_.collect():
            interp.complete(done.time, done.thread, done.type, done.value)
    network = attrs.asdict(cluster.network.stats(), recurse=False)
    network["sent_by_type"] = dict(network["sent_by_type"])
    figures = {
        "logical_end_ns": now,
        "steps": steps,
        "finished": finished,
        "nemesis_ops": nemesis_.performed,
        "network": network,
        "controller": cluster.controller_figures(),
        "cluster_digest": cluster.digest(),
        "timeline": cluster.timeline.events,
    }
    return history, figures


# --- checking -------------------------------------------------------------------------


def final_read_status(history: Sequence[Op]) -> dict[str, bool]:
    """Per key with a final read: is it complete (the shared rule of
    `jepsen_py.checker.anomalies`: the final polls returned the whole log)?"""
    return {str(k.key): k.final.complete for k in observe(list(history)) if k.final.present}


def missing_from_final_read(history: Sequence[Op], reads: dict[str, bool]) -> list[Op]:
    """The ``ok`` sends whose value the final read of their key did not return, for keys
    whose final read completed: acknowledged writes that are gone, however they went
    (never read: ``lost-write``/``unseen``; read once, then replaced:
    ``inconsistent-offsets``)."""
    final_values: dict[str, set[Any]] = {}
    final_process: dict[Any, str] = {}
    for op in history:
        if not op.is_client or op.f != "poll":
            continue
        if op.type == "invoke":
            if isinstance(op.value, dict) and op.value.get("final") is True:
                final_process[op.process] = str(op.key)
            else:
                final_process.pop(op.process, None)
            continue
        key = final_process.pop(op.process, None)
        if key is not None and op.type == "ok" and isinstance(op.value, dict):
            seen = final_values.setdefault(key, set())
            seen.update(freeze(r[1]) for r in op.value.get("records") or () if len(r) == 2)
    return [
        op
        for op in history
        if op.is_client
        and op.f == "send"
        and op.type == "ok"
        and reads.get(str(op.key))
        and isinstance(op.value, dict)
        and freeze(op.value.get("value")) not in final_values.get(str(op.key), set())
    ]


def check_history(history: Sequence[Op], consistency: str = KAFKA) -> dict[str, Any]:
    """The verdict on a run's history, JSON-ready (see the module docstring): each key's
    from `check_keys`, the run's the worst of them. Witnesses are ``history.jsonl`` lines
    (one op per line, in history order)."""
    started = time.perf_counter()
    ops = list(history)
    checks = check_keys(ops, consistency, line_of=lambda p: p + 1)
    decided = Verdict.combine([c.verdict.verdict for c in checks])
    verdict = {Verdict.OK: VALID, Verdict.ILLEGAL: INVALID, Verdict.UNKNOWN: UNKNOWN}[decided]
    found: dict[str, list[list[Op]]] = {name: [] for name in ANOMALIES}
    witnesses: dict[str, list[list[int]]] = {}
    for c in checks:
        for name, groups in c.anomalies.witnesses.items():
            found[name].extend([ops[p] for p in w] for w in groups)
        for name in c.verdict.violations:
            groups_ = c.anomalies.witnesses.get(name) or (c.verdict.witness,)
            lines = witnesses.setdefault(name, [])
            lines.extend([p + 1 for p in w] for w in groups_[: _EXAMPLES - len(lines)])
    broken = sorted({name for c in checks for name in c.verdict.violations})
    reads = {
        str(c.key): c.verdict.final_read.complete for c in checks if c.verdict.final_read.present
    }
    counts = completion_counts(ops)
    missing = missing_from_final_read(ops, reads)
    return {
        "verdict": verdict,
        "valid": {VALID: True, INVALID: False, UNKNOWN: None}[verdict],
        "consistency": consistency,
        "kafka": Verdict.combine([c.verdict.kafka for c in checks]).value,
        "linearizable": _linearizable(checks),
        "anomalies": summarize(found),
        "anomaly_types": [name for name in ANOMALIES if found[name]],
        "violations": broken,
        "violation_lines": witnesses,
        "informational": {
            name: len(found[name]) for name in ANOMALIES if found[name] and name not in VIOLATIONS
        },
        "keys": {str(c.key): c.verdict.verdict.value for c in checks},
        "explanations": {
            str(c.key): c.verdict.explanation for c in checks if c.verdict.verdict is not Verdict.OK
        },
        "lost_acknowledged_writes": len(missing),
        "lost_examples": [
            {"index": op.index, "key": op.key, **op.value} for op in missing[:_EXAMPLES]
        ],
        "inconsistent_offsets": len(found["inconsistent-offsets"]),
        "final_reads": {"keys": reads, "complete": bool(reads) and all(reads.values())},
        "completions": dict(sorted(counts.items())),
        "checker_seconds": round(time.perf_counter() - started, 6),
    }


def explain_run_losses(
    config: TestConfig, history: Sequence[Op], events: Sequence[Event]
) -> list[LossExplanation]:
    """Why the run's lost acknowledged writes were lost (``jepsen_py.explain``)."""
    lost = missing_from_final_read(history, final_read_status(history))
    if not lost:
        return []
    return explain_losses(
        lost,
        history,
        events,
        acks=config.acks,
        truncation=config.truncation,
        topic=config.cluster_config().topic,
    )


def settle_run(results: dict[str, Any], *, finished: bool) -> dict[str, Any]:
    """A run that stopped short (out of logical time) or never reached its final reads is
    *unknown* at best: what went unread proves nothing."""
    if not finished or not results["final_reads"]["keys"]:
        results["verdict"] = INVALID if results["verdict"] == INVALID else UNKNOWN
        results["valid"] = False if results["verdict"] == INVALID else None
    return results


def _linearizable(checks: list[KeyCheck]) -> dict[str, Any]:
    """The log checker's result over all keys, as `LogResult.to_json` gives it for one:
    the first key that is not linearizable (else not decided), with the figures summed."""
    worst = next((c for c in checks if c.log.verdict is Verdict.ILLEGAL), None) or next(
        (c for c in checks if c.log.verdict is Verdict.UNKNOWN), None
    )
    out = worst.log.to_json() if worst is not None else {"verdict": Verdict.OK.value}
    out.update(
        keys=len(checks),
        ops=sum(c.log.ops for c in checks),
        log_length=sum(c.log.log_length for c in checks),
        unknown_sends_applied=sum(c.log.unknown_sends_applied for c in checks),
    )
    out.setdefault("explanation", None)
    out.setdefault("witness", [])
    out.setdefault("key", None)
    return out


def completion_counts(history: Iterable[Op]) -> dict[str, int]:
    """Client completions by f and type (``send ok``, ``poll fail``, ``final poll ok``...)."""
    counts: Counter[str] = Counter()
    final: dict[Any, bool] = {}
    for op in history:
        if not op.is_client:
            continue
        if op.type == "invoke":
            final[op.process] = isinstance(op.value, dict) and op.value.get("final") is True
            continue
        mark = "final " if final.pop(op.process, False) else ""
        counts[f"{mark}{op.f} {op.type}"] += 1
    return dict(sorted(counts.items()))


def fault_counts(history: Iterable[Op]) -> dict[str, int]:
    """How many times each fault was started (completions that did something)."""
    counts: Counter[str] = Counter()
    pending: Op | None = None
    for op in history:
        if op.is_client or fault_of_op(op.f) is None:
            continue
        if pending is None:
            pending = op
            continue
        kind = fault_of_op(op.f)
        assert kind is not None
        if kind[1] == "start" and not (isinstance(op.value, dict) and "skipped" in op.value):
            counts[kind[0]] += 1
        pending = None
    return dict(sorted(counts.items()))


# --- the whole thing ------------------------------------------------------------------


def run_test(
    config: TestConfig,
    seed: int,
    *,
    store_root: str | os.PathLike[str] | None = None,
    reports: bool = True,
    observer: Observer | None = None,
    extra_results: dict[str, Any] | None = None,
    on_checked: Callable[[RunOutcome], None] | None = None,
    consistency: str = KAFKA,
) -> RunOutcome:
    """Run, check, and (with ``store_root``) write the store directory: ``test.json``
    first, ``history.jsonl`` as the run goes, then ``results.json`` and the reports.
    ``on_checked`` sees the outcome as soon as the verdict is known, before the reports
    (which take a second or two) are rendered; ``seconds.wall`` is the time to the
    verdict, ``seconds.reports`` the rendering's."""
    from jepsen_py.store import create_run

    started = time.perf_counter()
    hasher = HistoryHash()
    run = None
    writer = None
    if store_root is not None:
        run = create_run(config.name, seed=seed, config=config.to_json(), root=store_root)
        writer = run.history_writer()

    def emit(op: Op, line: bytes) -> None:
        hasher.add(line)
        if writer is not None:
            writer.write(op)

    try:
        history, figures = simulate_run(config, seed, emit=emit, observer=observer)
    finally:
        if writer is not None:
            writer.close()
    simulated = time.perf_counter() - started
    events = figures.pop("timeline")
    if run is not None:
        run.write_cluster_events(event_to_json(e) for e in events)
    results = settle_run(check_history(history, consistency), finished=figures["finished"])
    results["loss_explanations"] = [
        e.to_json() for e in explain_run_losses(config, history, events)
    ]
    store_dir = str(run.path) if run is not None else None
    results.update(
        {
            "seed": seed,
            "history": {"ops": len(history), "blake2b": hasher.hexdigest()},
            "faults": fault_counts(history),
            "run": figures,
            "command": reproduce_command(config, seed, store_dir)
            + ("" if consistency == KAFKA else f" --consistency {consistency}"),
            "seconds": {"simulation": round(simulated, 3)},
        }
    )
    if extra_results:
        results.update(extra_results)
    results["seconds"]["wall"] = round(time.perf_counter() - started, 3)
    outcome = RunOutcome(
        config,
        seed,
        history,
        hasher.hexdigest(),
        results,
        run.path if run is not None else None,
        time.perf_counter() - started,
    )
    if run is not None:
        run.write_results(results)
    if on_checked is not None:
        on_checked(outcome)
    if run is not None and reports:
        rendered = time.perf_counter()
        write_reports(history, run.path, title=f"{config.name} seed {seed}", results=results)
        results["seconds"]["reports"] = round(time.perf_counter() - rendered, 3)
        run.write_results(results)
    return outcome


def write_reports(
    history: Sequence[Op], directory: Path, *, title: str, results: dict[str, Any] | None = None
) -> None:
    """``timeline.html`` (headed by the verdict, when ``results`` are given), ``latency.png``
    and ``rate.png`` into a run's directory."""
    from jepsen_py.report.plots import render_plots
    from jepsen_py.report.spans import collect
    from jepsen_py.report.timeline import VerdictBanner, write_timeline
    from jepsen_py.store import TIMELINE_FILE

    data = collect(list(history), source=title)
    banner = VerdictBanner.from_results(results) if results is not None else None
    write_timeline(data, directory / TIMELINE_FILE, title=title, verdict=banner)
    render_plots(data, directory, title=title)


# --- swarm ----------------------------------------------------------------------------


def swarm_config(base: TestConfig, seed: int) -> TestConfig:
    """A configuration drawn from ``seed`` (swarm testing: each run gets a random subset of
    the faults and its own pace): the protocol settings (brokers, partitions, acks,
    min.insync.replicas, election, truncation) and the time limit stay as given."""
    rng = SimRandom(seed).split("config")
    faults = [f for f in base.nemesis if rng.random() < 0.5]
    if base.nemesis and not faults:
        faults = [base.nemesis[rng.randrange(len(base.nemesis))]]
    return attrs.evolve(
        base,
        nemesis=tuple(faults),
        interval_ns=rng.choice((2, 3, 5, 8)) * SECOND,
        rate=float(rng.choice((25, 50, 100, 200))),
        concurrency=rng.randint(2, 8),
    )


__all__ = [
    "EXIT_CODES",
    "INVALID",
    "UNKNOWN",
    "VALID",
    "ConfigError",
    "HistoryHash",
    "RunOutcome",
    "TestConfig",
    "check_history",
    "final_read_status",
    "history_file_hash",
    "parse_duration",
    "parse_faults",
    "reproduce_command",
    "run_test",
    "settle_run",
    "simulate_run",
    "swarm_config",
]
