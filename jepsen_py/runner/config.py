"""What a run depends on besides its seed, and the one command that reruns it.

`TestConfig` is the whole configuration of a ``kmodel test`` run (the cluster's Kafka
settings, the workload's pace, the nemesis's faults or an explicit schedule), validated at
construction and written to ``test.json``; `reproduce_command` turns it and the seed back
into ``kmodel test`` flags (or ``kmodel replay`` of the store directory, when a flag cannot
say it). `swarm_config` draws a configuration from a seed (swarm testing, ``--runs``).
Durations are logical nanoseconds; `parse_duration`/`format_duration` read and write the
``60s``/``500ms`` form the flags use.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import attrs

from impl.cluster import ClusterConfig
from impl.fetcher import TRUNCATIONS
from impl.sim.rng import SimRandom
from impl.world import FENCE_BUGS
from jepsen_py.generator import MILLISECOND, SECOND
from jepsen_py.nemesis import (
    CATALOGUE,
    TARGETED,
    NemesisError,
    ScheduleStep,
    fault_of_op,
    network_for,
)
from jepsen_py.workload import partition_keys


class ConfigError(ValueError):
    """A test configuration that cannot run; the message names the field and the fix."""


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
    elr: bool = False
    """KIP-966 Eligible Leader Replicas (``impl.elr``; ``kmodel test --elr``). Off: Kafka
    before 4.0, the project's "Kafka today"."""
    auto_leader_rebalance: bool = False
    """``auto.leader.rebalance.enable`` (``kmodel test --auto-leader-rebalance``): the
    controller hands leadership back to preferred replicas of over-imbalanced brokers.
    Off by default here (Kafka's default is on) so that runs keep their histories."""
    leader_imbalance_pct: int = 10
    """``leader.imbalance.per.broker.percentage`` (Kafka's default 10)."""
    leader_imbalance_check_ns: int = 300 * SECOND
    """``leader.imbalance.check.interval.seconds`` (Kafka's default 300 s)."""
    truncation: str = "kip320"
    replica_assignment: tuple[tuple[int, ...], ...] | None = attrs.field(
        default=None,
        converter=lambda v: None if v is None else tuple(tuple(int(b) for b in p) for p in v),
    )
    """The topic's replicas, partition by partition, the preferred leader first
    (``kafka-topics.sh --create --replica-assignment 1:2:3,2:3:1``; ``kmodel test
    --replica-assignment``); each an order of every broker. None: Kafka's round-robin
    assignment (``impl.coordination.round_robin_replicas``), which spreads the preferred
    leaders."""
    nemesis: tuple[str, ...] = ("partition", "kill", "pause")
    interval_ns: int = 5 * SECOND
    """Mean time between nemesis ops (a fault's start, its stop, the next start...)."""
    max_faults: int = 1
    """At most this many faults at once (``--max-faults``): 1 alternates start and stop;
    more lets faults compound (a partition, then a kill inside it, then the heal)."""
    compound: bool = False
    """With ``max_faults`` > 1, faults nest (``--compound``): a partition opens and holds
    for ``replica.lag.time.max.ms`` (the ISR shrinks), faults start inside it (a kill of
    the isolated leader), they stop innermost first, the partition heals last
    (``jepsen_py.generator.nemesis_schedule(outer=..., hold=...)``)."""
    compound_hold_ns: int | None = None
    """How long a compound's partition holds before faults start inside it
    (``--compound-hold``). None: ``replica.lag.time.max.ms``, so the ISR has shrunk
    first; 0, a quick compound: the inner faults follow at the run's pace, inside the
    window where the cut-off follower still counts as in sync (KIP-279's double failover
    needs leadership moved to it and away again before the ISR drops anyone)."""
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
    buggify: bool = False
    """Randomized timing of the brokers' periodic work (``impl.buggify``, FoundationDB's
    BUGGIFY; ``kmodel test --buggify``): off, the run draws nothing for it."""
    bugs: tuple[str, ...] = ()
    """Controller fences turned off (``impl.world.FENCE_BUGS``; ``kmodel test --bug``)."""
    retention_ms: int | None = None
    """The topic's ``retention.ms`` (None: no time limit, ``impl.log.retention``)."""
    retention_bytes: int | None = None
    """Each partition's ``retention.bytes`` (None: no size limit)."""
    segment_bytes: int | None = None
    """``log.segment.bytes`` (None: the cluster's default): retention deletes whole
    segments, so a short run needs small ones."""

    def __attrs_post_init__(self) -> None:
        self._check_assignment()
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
        if self.max_faults < 1:
            raise ConfigError(f"max_faults={self.max_faults}: at least 1 fault at a time")
        if self.compound_hold_ns is not None and self.compound_hold_ns < 0:
            raise ConfigError(f"compound_hold_ns={self.compound_hold_ns}: must be >= 0")
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
        unknown_bugs = sorted(set(self.bugs) - set(FENCE_BUGS))
        if unknown_bugs:
            raise ConfigError(
                f"bugs: unknown {unknown_bugs}; the implementation's fences are "
                f"{', '.join(sorted(FENCE_BUGS))}"
            )
        for field in ("flush_interval_ns", "dirty_writeback_ns"):
            value = getattr(self, field)
            if value is not None and value <= 0:
                raise ConfigError(f"{field}={value}: must be > 0 (or unset)")
        if not 0 <= self.leader_imbalance_pct <= 100:
            raise ConfigError(
                f"leader_imbalance_pct={self.leader_imbalance_pct}: a percentage, 0..100"
            )
        if self.leader_imbalance_check_ns <= 0:
            raise ConfigError(
                f"leader_imbalance_check_ns={self.leader_imbalance_check_ns}: must be > 0"
            )
        if self.dirty_expire_ns < 0:
            raise ConfigError(f"dirty_expire_ns={self.dirty_expire_ns}: must be >= 0")
        if self.idempotence and self.acks != "all":
            raise ConfigError(
                f"idempotence with acks={self.acks}: the idempotent producer needs acks=all "
                "(Kafka: 'Must set acks to all in order to use the idempotent producer'); "
                "use --acks all or --no-idempotence"
            )
        for field in ("retention_ms", "retention_bytes"):
            value = getattr(self, field)
            if value is not None and (type(value) is not int or value < 0):
                raise ConfigError(f"{field}={value!r}: must be an int >= 0 (or unset)")
        if self.segment_bytes is not None and (
            type(self.segment_bytes) is not int or self.segment_bytes < 1
        ):
            raise ConfigError(f"segment_bytes={self.segment_bytes!r}: must be an int >= 1")

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
    def compound_hold(self) -> int:
        """How long a compound's partition holds before faults start inside it:
        `compound_hold_ns`, by default ``replica.lag.time.max.ms`` (the ISR has shrunk by
        then)."""
        if self.compound_hold_ns is None:
            return self.replica_lag_time_max_ns
        return self.compound_hold_ns

    def _check_assignment(self) -> None:
        assignment = self.replica_assignment
        if assignment is None:
            return
        if len(assignment) != self.partitions:
            raise ConfigError(
                f"replica_assignment names {len(assignment)} partitions; the topic has "
                f"{self.partitions}: give one replica list per partition"
            )
        brokers = sorted(range(1, self.brokers + 1))
        for p, replicas in enumerate(assignment):
            if sorted(replicas) != brokers:
                raise ConfigError(
                    f"replica_assignment of partition {p}: {list(replicas)} is not an order "
                    f"of the brokers {brokers} (every broker holds a replica of every "
                    "partition here)"
                )

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
            eligible_leader_replicas=self.elr,
            replica_assignment=self.replica_assignment,
            auto_leader_rebalance=self.auto_leader_rebalance,
            leader_imbalance_per_broker_percentage=self.leader_imbalance_pct,
            leader_imbalance_check_interval_ns=self.leader_imbalance_check_ns,
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
            buggify=self.buggify,
            **self._log_settings(),
        )

    def _log_settings(self) -> dict[str, int]:
        """The retention and segment settings that are set (unset ones keep the cluster's
        defaults, and so the runs they had before these existed)."""
        settings = {
            "retention_ms": self.retention_ms,
            "retention_bytes": self.retention_bytes,
            "segment_bytes": self.segment_bytes,
        }
        return {name: value for name, value in settings.items() if value is not None}

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
        elr=config.elr,
        replica_assignment=config.replica_assignment,
        auto_leader_rebalance=config.auto_leader_rebalance,
        leader_imbalance_pct=config.leader_imbalance_pct,
        leader_imbalance_check_ns=config.leader_imbalance_check_ns,
        truncation=config.truncation,
        nemesis=config.nemesis,
        interval_ns=config.interval_ns,
        max_faults=config.max_faults,
        compound=config.compound,
        compound_hold_ns=config.compound_hold_ns,
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
        buggify=config.buggify,
        retention_ms=config.retention_ms,
        retention_bytes=config.retention_bytes,
        segment_bytes=config.segment_bytes,
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
    if config.max_faults != default.max_faults:
        args.append(f"--max-faults {config.max_faults}")
    if config.compound:
        args.append("--compound")
    if config.compound_hold_ns is not None:
        args.append(f"--compound-hold {format_duration(config.compound_hold_ns)}")
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
    if config.elr:
        args.append("--elr")
    if config.replica_assignment is not None:
        args.append(f"--replica-assignment {format_assignment(config.replica_assignment)}")
    if config.auto_leader_rebalance:
        args.append("--auto-leader-rebalance")
    if config.leader_imbalance_pct != default.leader_imbalance_pct:
        args.append(f"--leader-imbalance-pct {config.leader_imbalance_pct}")
    if config.leader_imbalance_check_ns != default.leader_imbalance_check_ns:
        args.append(f"--leader-imbalance-check {format_duration(config.leader_imbalance_check_ns)}")
    args += [f"--bug {bug}" for bug in config.bugs]
    if config.buggify:
        args.append("--buggify")
    if config.retention_ms is not None:
        args.append(f"--retention-ms {config.retention_ms}")
    if config.retention_bytes is not None:
        args.append(f"--retention-bytes {config.retention_bytes}")
    if config.segment_bytes is not None:
        args.append(f"--segment-bytes {config.segment_bytes}")
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


def format_assignment(assignment: Sequence[Sequence[int]]) -> str:
    """A replica assignment as ``kafka-topics.sh --replica-assignment`` writes it:
    ``1:2:3,2:3:1`` (partitions by commas, each one's replicas by colons)."""
    return ",".join(":".join(str(b) for b in replicas) for replicas in assignment)


def parse_assignment(text: str) -> tuple[tuple[int, ...], ...]:
    """``1:2:3,2:3:1`` as replica lists, partition by partition (`format_assignment`)."""
    try:
        return tuple(tuple(int(b) for b in part.split(":")) for part in text.split(","))
    except ValueError:
        raise ConfigError(
            f"{text!r} is not a replica assignment: broker ids, colons between a "
            "partition's replicas, commas between partitions (e.g. 1:2:3,2:3:1)"
        ) from None


def parse_duration(text: str) -> int:
    """``60s``, ``500ms``, ``2m``, ``1.5s``, ``7205322585ns`` (what ``format_duration``
    writes for a time no coarser unit states exactly) or a bare number of seconds, as
    nanoseconds."""
    raw = text.strip().lower()
    units = (("ns", 1), ("ms", MILLISECOND), ("m", 60 * SECOND), ("s", SECOND))
    suffix, unit = next(((s, u) for s, u in units if raw.endswith(s)), ("", SECOND))
    number = raw[: len(raw) - len(suffix)]
    try:
        value = float(number)
    except ValueError:
        raise ConfigError(
            f"{text!r} is not a duration: use e.g. 60s, 500ms, 2m, 1500000ns"
        ) from None
    if value < 0:
        raise ConfigError(f"{text!r}: a duration is >= 0")
    return round(value * unit)


SWARM_PACE = ((1, 6), (1, 3), (1, 2), (1, 1), (4, 3))
"""A swarm run's mean gap between nemesis ops, as fractions of the protocol's shortest
failure timer (the smaller of ``zookeeper.session.timeout.ms`` and
``replica.lag.time.max.ms``; 6 s by default: 1 s to 8 s). Faster than the timers, faults
pile up before the cluster reacts (a leader killed again before it re-replicates: KIP-101's
window); near them, ISRs shrink, sessions expire and controllers fail over between faults.
Not faster than 1/6: at 1/12 (0.5 s) power losses of one broker after another, each within
the others' write-back window, are the whole-cluster loss ``kill-all`` stands for, which
replication does not protect against (4 of the safe configuration's first 50 swarm runs
lost writes with ``correlated-power-loss`` among the mechanisms: docs/fault-injection.md)."""


SWARM_DENSITY = (0.1, 0.25, 0.5)
"""The chance each fault offered is in a swarm run's subset, drawn per run. Groce et al.
include each feature with probability 1/2; with 30-odd faults that is 15 per run, and a
sequence of two given faults (a follower cut off, then a controlled shutdown of its
leader) is then rare. Sparser subsets (3 or 8 faults on average) make such pairs frequent,
while the dense ones keep the mixes."""


TARGETED_DENSITY = 0.75
"""The least chance a targeted fault (``jepsen_py.nemesis.TARGETED``) offered is in a swarm
run's subset, whatever the run's density: they are few (10 of 38 offered) and each
aims at a situation the generic faults reach only by luck (a follower cut off from its
leader, the last ISR member, leadership moved to a follower that missed writes), so the
sequences that matter (a follower cut off, then its leader shut down or killed) are not a
few percent of the runs. At 0.75 rather than 0.5, each of eight known-unsafe
configurations measured (``benchmarks/hunt_share.py``, seeds 1..200) showed up in as many
runs or more, 182 against 157 in all (docs/fault-injection.md)."""


def swarm_offered(base: TestConfig) -> tuple[str, ...]:
    """The fault kinds a swarm run of ``base`` may draw: those asked for, and the targeted
    faults (``jepsen_py.nemesis.TARGETED``) that aim one of them."""
    offered = (*base.nemesis, *(t for t, g in TARGETED.items() if g in base.nemesis))
    return tuple(dict.fromkeys(offered))


def _config_stream(seed: int) -> tuple[SimRandom, float]:
    """The seed's ``config`` stream and its first draw, the run's fault density."""
    rng = SimRandom(seed).split("config")
    return rng, rng.choice(SWARM_DENSITY)


def swarm_density(seed: int) -> float:
    """The share of the offered faults the swarm run of ``seed`` keeps, on average."""
    return _config_stream(seed)[1]


SWARM_CLIENTS = (2, 8)
"""The range of a swarm run's client threads (``--concurrency``), drawn per run."""


SWARM_MORE_CLIENTS = (2, 4)
"""The client threads a swarm run adds to its `SWARM_CLIENTS` draw, drawn from a stream of
their own (so the run's other draws stay as they were): 4 to 12 in all. Each thread waits on
one send at a time, and when a follower is cut off from its leader, the high watermark
stalls and every thread blocks on a send within a tenth of a second. The records a
leadership change finds on the replicas, and the producers racing to write the same
offsets again after it (where KIP-279's divergent logs come from), grow with the threads;
Kafka's producers keep up to ``max.in.flight.requests.per.connection`` (5) requests in
flight each. With the extra draw, the runs showing ``kip279_3_replicas`` over seeds 1..200
went from 11 to 26 (``benchmarks/hunt_share.py``, docs/fault-injection.md)."""


def swarm_config(base: TestConfig, seed: int) -> TestConfig:
    """A configuration drawn from ``seed`` (swarm testing, Groce et al. 2012: each run gets
    a random subset of the faults, of a density drawn from `SWARM_DENSITY`, its own pace,
    and how many faults may overlap, from 1 to ``base.max_faults``): the protocol settings
    (brokers, partitions, acks, min.insync.replicas, election, truncation) and the time
    limit stay as given. The pace
    is scaled to the protocol's timers (`SWARM_PACE`). Overlap is opt-in: two faults at
    once (the ISR shrunk by a partition, then its last member's disk damaged) defeat
    replication factor 3 with min.insync.replicas=2, which is built to survive one. Half
    of the runs that may overlap nest their faults (``TestConfig.compound``), and half of
    those are quick (``compound_hold_ns`` 0: the inner faults follow inside
    ``replica.lag.time.max.ms``). Targeted faults are drawn at least at `TARGETED_DENSITY`."""
    rng, density = _config_stream(seed)
    offered = swarm_offered(base)
    aimed = max(density, TARGETED_DENSITY)
    faults = [f for f in offered if rng.random() < (aimed if f in TARGETED else density)]
    if offered and not faults:
        faults = [offered[rng.randrange(len(offered))]]
    timer = min(base.session_timeout_ns, base.replica_lag_time_max_ns)
    numerator, denominator = rng.choice(SWARM_PACE)
    rate = float(rng.choice((25, 50, 100, 200)))
    concurrency = rng.randint(*SWARM_CLIENTS)
    concurrency += SimRandom(seed).split("config/clients").randint(*SWARM_MORE_CLIENTS)
    max_faults = rng.randint(1, base.max_faults)
    # Half of the overlapping runs nest their faults (a partition, faults inside it).
    compound = base.compound or (max_faults > 1 and rng.random() < 0.5)
    hold = base.compound_hold_ns
    if compound and hold is None and SimRandom(seed).split("config/hold").random() < 0.5:
        hold = 0  # a quick compound: faults inside the partition before the ISR shrinks
    return attrs.evolve(
        base,
        nemesis=tuple(faults),
        interval_ns=max(MILLISECOND, timer * numerator // denominator),
        rate=rate,
        concurrency=concurrency,
        max_faults=max_faults,
        compound=compound,
        compound_hold_ns=hold,
    )


__all__ = [
    "SWARM_CLIENTS",
    "SWARM_DENSITY",
    "SWARM_MORE_CLIENTS",
    "SWARM_PACE",
    "TARGETED_DENSITY",
    "ConfigError",
    "TestConfig",
    "format_assignment",
    "format_duration",
    "parse_assignment",
    "parse_duration",
    "reproduce_command",
    "swarm_config",
    "swarm_density",
    "swarm_offered",
]
