"""Driving the simulation: a run's generator on the simulated cluster, op by op, on
logical time (Jepsen's ``jepsen.core/run!`` and its interpreter).

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
   watermark; then from each broker's replica the same way (KIP-392's fetch from a
   follower, `jepsen_py.generator.replica_reads`): a replica whose log diverged below the
   high watermark returns other records at offsets the leader returned.

The driver steps the cluster one event time at a time (the next message delivery or node
tick, or the generator's next wake-up, whichever is first), so every completion is handed
to the generator at the logical time it happened. Each op is serialized once, as the
``history.jsonl`` line it becomes (`HistoryHash.line`); the caller's ``emit`` gets the op
and that line, to hash and store.

Streams of the seed (``impl.sim.rng``): the cluster splits its own (network, disks,
nodes); the driver draws the workload from ``jepsen/workload``, the nemesis's targets from
``jepsen/nemesis`` and the fault schedule from ``jepsen/schedule``. No wall clock enters.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any

import attrs
import orjson

from impl.cluster import Cluster
from impl.sim.collector import FewerCollections
from impl.sim.network import NetworkStats
from impl.sim.rng import SimRandom, derive_seed
from impl.timeline import Event
from jepsen_py.generator import (
    EXHAUSTED,
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
    replica_reads,
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
    HOLDS,
    SETTLES,
    Nemesis,
    NemesisError,
    canonical,
    scripted,
)
from jepsen_py.runner.config import TestConfig
from jepsen_py.workload import KafkaClients

REPLICA_READS = "replica-reads"
"""The value of the ``phase`` info op that starts the reads from each replica: the history
before it is the run as read from the leaders."""


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
            list(faults),
            config.interval_ns,
            derive_seed(seed, "jepsen/schedule"),
            max_active=config.max_faults,
            outer=[f for f in faults if CATALOGUE[f].group == "partition"]
            if config.compound
            else (),
            # A compound's partition holds before faults start inside it (by default
            # replica.lag.time.max.ms: the ISR has shrunk by then; 0: a quick compound).
            hold=config.compound_hold if config.compound else 0,
            # Faults that act a while after their start (once the follower they cut off
            # leaves the ISR) hold the schedule: fractions of replica.lag.time.max.ms.
            holds={
                f: config.replica_lag_time_max_ns * num // den
                for f, (num, den) in HOLDS.items()
                if f in faults
            },
            # Faults that play out over steps of their own get that long before the next op.
            settles={f: least for f, least in SETTLES.items() if f in faults},
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
            info("phase", REPLICA_READS),
            *(
                clients(replica_reads(keys, b, max_strikes=config.final_strikes))
                for b in range(1, config.brokers + 1)
            ),
        ),
    )


# --- running ------------------------------------------------------------------


Observer = Callable[[Cluster, Op | None], None]
"""Called after each step of the cluster (op None) and after each history op."""


_MAX_STALLED_STEPS = 100_000
"""Steps in a row at one logical time before the driver calls itself stuck."""


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
    hasher = HistoryHash()
    with open(path, "rb") as handle:
        for raw in handle:
            hasher.add(raw)
    return hasher.hexdigest()


@attrs.frozen
class RunFigures:
    """How the simulation went (``results.json``'s ``run``)."""

    logical_end_ns: int
    steps: int
    """Times the driver advanced the cluster's clock."""
    finished: bool
    """False: the run ran out of its logical-time budget before the generator was done."""
    nemesis_ops: int
    network: NetworkStats
    controller: dict[str, int]
    """`impl.world.World.controller_figures`: elections, brain splits, zombie requests."""
    cluster_digest: str
    """`impl.cluster.Cluster.digest`: equal across processes for equal runs."""

    def to_json(self) -> dict[str, Any]:
        network = attrs.asdict(self.network, recurse=False)
        network["sent_by_type"] = dict(network["sent_by_type"])
        return {
            "logical_end_ns": self.logical_end_ns,
            "steps": self.steps,
            "finished": self.finished,
            "nemesis_ops": self.nemesis_ops,
            "network": network,
            "controller": dict(self.controller),
            "cluster_digest": self.cluster_digest,
        }


@attrs.frozen
class Simulation:
    """What `simulate_run` returns: the history, the cluster's events (elections, ISR
    changes, crashes, truncations: ``cluster.jsonl``) and the run's figures."""

    history: list[Op]
    events: tuple[Event, ...]
    figures: RunFigures


def simulate_run(
    config: TestConfig,
    seed: int,
    *,
    emit: Callable[[Op, bytes], None] | None = None,
    observer: Observer | None = None,
) -> Simulation:
    """Run the test on a fresh simulated cluster (see the module docstring)."""
    with FewerCollections():  # the run's heap grows all along: impl.sim.collector
        return _simulate_run(config, seed, emit=emit, observer=observer)


def _simulate_run(
    config: TestConfig,
    seed: int,
    *,
    emit: Callable[[Op, bytes], None] | None,
    observer: Observer | None,
) -> Simulation:
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
    ask = True
    while True:
        if ask:
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
            t for t in (wake, clients_.next_deadline(), cluster.next_event_time()) if t is not None
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
                f"cluster event {cluster.next_event_time()}); a bug in the driver"
            )
        cluster.run_until(target)
        steps += 1
        now = target
        if observer is not None:
            observer(cluster, None)
        completed = clients_.collect()
        for done in completed:
            interp.complete(done.time, done.thread, done.type, done.value)
        # A pending generator said when asking again may help (``Pending.until``; None:
        # only a completion): before then, and with no completion, it is not asked again
        # (its answer could not change; the cluster is stepped to the same targets).
        ask = bool(completed) or not (
            isinstance(result, Pending) and (result.until is None or now < result.until)
        )
    figures = RunFigures(
        logical_end_ns=now,
        steps=steps,
        finished=finished,
        nemesis_ops=nemesis_.performed,
        network=cluster.network.stats(),
        controller=cluster.controller_figures(),
        cluster_digest=cluster.digest(),
    )
    return Simulation(history, tuple(cluster.timeline.events), figures)


__all__ = [
    "HistoryHash",
    "Observer",
    "RunFigures",
    "Simulation",
    "build_generator",
    "history_file_hash",
    "simulate_run",
]
