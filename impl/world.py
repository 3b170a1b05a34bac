"""The simulated world: brokers, the controller, clients, the network, disks and the clock,
all driven by one seed -- what both drivers of a cluster share.

``World(config, seed)`` builds a cluster of ``config.brokers`` brokers (``b1``..), the
coordination store (``zk``, ``impl.coordination``: ZooKeeper), ``config.producers`` producers
(``p1``..) and ``config.consumers`` consumers (``c1``..), on a ``SimDisk`` per broker and
one ``Network``. The seed is split per subsystem (``impl.sim.rng``): ``network``,
``disk``, ``workload``, ``faults``, ``node/<name>``. Every node is handed its own *local*
time for its timeouts (``Clock.monotonic_now`` and ``Clock.wall_now``: global time unless
the clock nemesis moved them, ``skew_clock``; each timer reads the clock Kafka reads for
it); histories are timed on global time. The same (code, config, seed) and the same calls
give the same run, byte for byte: ``digest()`` fingerprints it (network history, messages
in flight, every disk's bytes, the store, client histories, the clock).

The world hands a node a message or its periodic tick (one dispatch, ``_step_node``) and
carries out the node's effects (``_dispatch``): its messages go to the network, its notes to
the world's records (``impl.timeline``; the ghost state).

The controller is a role any broker can take (``impl.controller``): on each of its ticks a
registered broker whose link to the store is open and which finds no ``/controller`` tries
to create it (``_role_tick``); the winner's ``Controller`` lives on that broker's node --
paused with it, killed with it, cut off with it -- in ``controllers``. A controller's store
calls are made only while its broker's links to and from ``zk`` are open (``connected``).
A message addressed to ``CONTROLLER`` goes to the broker ``/controller`` names when it is
sent (clients and brokers learn the controller's id from metadata and from ZooKeeper; a
message sent while there is none is lost, and the sender's timeout retries it); a
controller request reaching a broker that is not (or no longer) the controller is dropped.
A controller resigns when its write is refused or when its broker finds its session
expired (the broker's epoch changed): until then, a paused or cut-off controller is a
*zombie* that keeps acting (``controllers`` may hold two). Faults (``crash``, ``restart``,
``pause``, ``resume``, ``partition``, ``heal``, ``skew_clock``) and the clients' ops
(``client_send``, ``client_poll``) are the same whoever drives. What a world lacks is a
driver, which decides what happens next:

- ``impl.cluster.Cluster`` drives it **by time** (the simulation): every message crosses
  the network, nodes tick on timers, the kernel writes dirty pages back on its own timer;
- ``impl.refinement.RefinementCluster`` drives it **by hand** (the refinement tests): each
  call is one event of the implementation, and the replication round trips are synchronous.

The world also keeps *ghost* state, which no node can see, for the abstraction function
(``impl.abstraction``): a unique id for every record a leader appended (keyed by the epoch
and offset of the append, which identify a write: one leader per epoch, appending each
offset once), the writes acknowledged to producers, every LeaderAndIsr the controller ever
published, the number of crashes, the quorum epoch at each broker restart, and for each
crashed broker what recovery will find on its disk.
"""

from __future__ import annotations

import collections
import copy
import hashlib
import itertools
import json
from collections.abc import Iterable
from typing import Any

import attrs

from impl.broker import Broker, BrokerConfig
from impl.client import Consumer, ConsumerConfig, Producer, ProducerConfig, Send, acks_value
from impl.controller import (
    CONTROLLER,
    CONTROLLER_REQUESTS,
    Controller,
    ControllerConfig,
    broker_node,
)
from impl.coordination import STORE, MetadataStore, round_robin_replicas
from impl.group.consumer import ConsumerApp
from impl.group.hosting import GROUP_BUGS, GROUP_REQUESTS, GroupHost
from impl.group.member import MemberConfig
from impl.group.placement import CONSUMER_OFFSETS
from impl.log import (
    REPLICATION_OFFSET_CHECKPOINT,
    Log,
    LogConfig,
    OffsetCheckpointFile,
    TopicPartition,
)
from impl.messages import Message
from impl.protocol import (
    NO_LEADER,
    Acked,
    Appended,
    BrokerRegistration,
    ControllerElected,
    Effects,
    LeaderAndIsr,
    Published,
    Reconciled,
    SessionExpired,
    ShutdownReady,
    StaleControllerRequest,
)
from impl.replica import ReplicaConfig
from impl.sim.clock import Clock, ms
from impl.sim.disk import SimDisk
from impl.sim.network import Network, NetworkConfig
from impl.sim.node import NodeLifecycles, NodeState
from impl.sim.rng import SimRandom
from impl.timeline import Crash, Divergence, Recovery, Timeline, epoch_mismatches

__all__ = ["FENCE_BUGS", "ClusterConfig", "Ghost", "IllegalEvent", "World"]

FENCE_BUGS: dict[str, str] = {
    "accept_stale_controller_epoch": (
        "brokers apply LeaderAndIsr from an older controller epoch (no STALE_CONTROLLER_EPOCH)"
    ),
    "unconditional_write": (
        "the controller writes partition state blindly: neither /controller_epoch's version "
        "nor the partition znode's is checked"
    ),
    "epoch_not_persisted": (
        "the controller epoch is not persisted: every new controller starts again at 1"
    ),
    "drop_before_isr_join": (
        "a reassignment completes (the removed replicas are dropped) before the new replicas "
        "joined the ISR"
    ),
    "shutdown_to_non_isr": ("a controlled shutdown hands leadership to a replica outside the ISR"),
    "stale_elr": (
        "KIP-966 on, but a broker registering after an unclean shutdown stays in the ELR "
        "(implies --elr)"
    ),
}
"""The implementation's controller fences that ``ClusterConfig.bugs`` turns off, named as
``spec.controller``'s broken variants (``kmodel test --bug NAME``)."""


ADMIN = "admin"
"""The sender of ``World.admin_request`` s (no node of the network)."""


class IllegalEvent(Exception):
    """An event the world cannot perform now (a crashed node cannot be paused, ...)."""


@attrs.frozen
class ClusterConfig:
    brokers: int = 3
    topic: str = "t"
    partitions: int = 1
    truncation: str = "kip320"
    acks: str = "all"
    min_insync_replicas: int = 2
    unclean: bool = False
    replica_assignment: tuple[tuple[int, ...], ...] | None = None
    """The topic's replicas per partition, preferred leader first (``kafka-topics.sh
    --replica-assignment``). None: Kafka's round-robin (``round_robin_replicas``)."""
    eligible_leader_replicas: bool = False
    """KIP-966 (``eligible.leader.replicas.version=1``; ``impl.elr``): strict min ISR, the
    ELR, election from it. Off by default, as Kafka before 4.0 (the project's "Kafka
    today"); ``--bug stale_elr`` turns it on with its unclean-restart rule broken."""
    auto_leader_rebalance: bool = False
    """``auto.leader.rebalance.enable`` (``impl.controller``; Kafka's default is on, off
    here so that runs keep their histories)."""
    leader_imbalance_per_broker_percentage: int = 10
    """``leader.imbalance.per.broker.percentage`` (Kafka's default 10)."""
    leader_imbalance_check_interval_ns: int = 300_000_000_000
    """``leader.imbalance.check.interval.seconds`` (Kafka's default 300 s)."""
    refinement: bool = False
    """Refinement mode (``impl.refinement``): atomic brokers (``BrokerConfig.atomic``), the
    spec's HW checkpoint on every change and no purgatory expiry; a crash closes the
    broker's session and the world keeps ghost state, unless said otherwise below."""
    producers: int = 1
    consumers: int = 0
    replica_lag_time_max_ns: int = ms(10_000)
    session_timeout_ns: int = ms(6_000)
    heartbeat_interval_ns: int = ms(1_000)
    tick_interval_ns: int = ms(100)
    """How often brokers and the controller run their periodic work (``impl.cluster``)."""
    client_tick_interval_ns: int = ms(1_000)
    """How often clients check their timeouts (their requests go out as ops arrive)."""
    request_timeout_ns: int = ms(5_000)
    produce_timeout_ns: int = ms(5_000)
    delivery_timeout_ns: int = ms(30_000)
    replica_fetch_wait_max_ns: int = ms(500)
    replica_fetch_backoff_ns: int = ms(100)
    hw_checkpoint_interval_ns: int = ms(5_000)
    log_flush_interval_messages: int | None = None
    """``log.flush.interval.messages``: a broker fsyncs a log once this many records are
    unflushed. None: Kafka's default (never; durability is left to replication and the
    kernel's write-back)."""
    log_flush_interval_ns: int | None = None
    """``log.flush.interval.ms``: a broker fsyncs a log whose last fsync is older than this
    (by its wall clock, as ``LogManager.flushDirtyLogs`` compares). None: Kafka's default
    (never)."""
    dirty_writeback_ns: int | None = ms(5_000)
    """``vm.dirty_writeback_centisecs`` (Linux default 5 s): how often each machine's flusher
    thread wakes to write back expired dirty pages. None: no write-back (as writing 0 to the
    sysctl turns it off): a power loss then loses everything not fsynced."""
    dirty_expire_ns: int = ms(30_000)
    """``vm.dirty_expire_centisecs`` (Linux default 30 s): dirty data older than this is
    written back at the flusher's next wake-up."""
    segment_bytes: int = 256 * 1024
    index_interval_bytes: int = 256
    """Denser than Kafka's 4096: simulated reads scan batch headers from the last entry."""
    retention_ms: int = -1
    """``retention.ms`` of the workload's topic (-1: no time limit; ``impl.log.retention``)."""
    retention_bytes: int = -1
    """``retention.bytes`` of each of its partitions (-1: no size limit)."""
    log_retention_check_interval_ns: int = ms(1_000)
    """``log.retention.check.interval.ms``; Kafka's is 5 minutes, longer than most runs."""
    log_cleaner_backoff_ns: int = ms(1_000)
    """``log.cleaner.backoff.ms``; Kafka's is 15 seconds."""
    offsets_cleanup_policy: str = "compact"
    """``cleanup.policy`` of ``__consumer_offsets`` (Kafka: compact, ``impl.log.cleaner``)."""
    network: NetworkConfig = attrs.field(factory=NetworkConfig)
    crash_closes_session: bool | None = None
    """A crash ends the broker's registration at once; default: in refinement mode."""
    track_ghosts: bool | None = None
    """Keep the ghost state (record ids, recovery previews); default: in refinement mode."""
    buggify: bool = False
    """Randomized timing of the brokers' periodic work, from the seed (``impl.buggify``,
    FoundationDB's BUGGIFY; ``kmodel test --buggify``). Only the simulation by time
    (``impl.cluster``) has the sites; off, nothing is drawn."""
    bugs: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    """Testing knobs, off by default: the controller fences turned off (``FENCE_BUGS``)."""
    offsets_partitions: int = 0
    """``offsets.topic.num.partitions``: with N > 0 the cluster is created with the internal
    topic ``__consumer_offsets`` of N partitions (Kafka's default is 50), and the consumers
    form the consumer group ``group``, coordinated by the leader of the group's partition
    (``impl.group.hosting``). 0, the default: no such topic, consumers statically mapped."""
    group: str = "group"
    """The consumers' ``group.id`` when ``offsets_partitions`` is set."""
    group_member: MemberConfig | None = None
    """In a group: the members' timeouts and ``partition.assignment.strategy`` (None:
    ``MemberConfig``'s defaults)."""
    consumer_app: ConsumerApp = attrs.field(factory=ConsumerApp)
    """In a group: when the consumers commit (``--commit``), ``auto.offset.reset`` and the
    consumers' timeouts (``impl.group.consumer``)."""
    enable_idempotence: bool | None = None
    """The producers' ``enable.idempotence`` (KIP-98). None: Kafka's default since 3.0 --
    on with acks=all, off with acks 0 or 1 (Kafka turns the default off rather than refuse
    those acks; asking for idempotence with them explicitly is an error)."""

    def __attrs_post_init__(self) -> None:
        unknown = sorted(set(self.bugs) - set(FENCE_BUGS) - GROUP_BUGS)
        if unknown:
            raise ValueError(
                f"unknown --bug {', '.join(unknown)}; the implementation's fences are "
                f"{', '.join(sorted(FENCE_BUGS))}"
            )

    @property
    def idempotence(self) -> bool:
        if self.enable_idempotence is None:
            return self.acks == "all"
        return self.enable_idempotence

    @property
    def elr(self) -> bool:
        """Whether KIP-966 is on (asked for, or implied by ``--bug stale_elr``)."""
        return self.eligible_leader_replicas or "stale_elr" in self.bugs

    @property
    def closes_sessions(self) -> bool:
        return self.refinement if self.crash_closes_session is None else self.crash_closes_session

    @property
    def ghosts(self) -> bool:
        return self.refinement if self.track_ghosts is None else self.track_ghosts

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.brokers + 1))

    def broker_config(self) -> BrokerConfig:
        atomic = self.refinement
        return BrokerConfig(
            replica=ReplicaConfig(
                truncation=self.truncation,
                min_insync_replicas=self.min_insync_replicas,
                replica_lag_time_max_ns=self.replica_lag_time_max_ns,
                produce_timeout_ns=None if atomic else self.produce_timeout_ns,
                maximal_isr=not atomic,
                strict_min_isr=self.elr,
            ),
            log=LogConfig(
                segment_bytes=self.segment_bytes,
                index_interval_bytes=self.index_interval_bytes,
                flush_interval_messages=self.log_flush_interval_messages,
                retention_ms=self.retention_ms,
                retention_bytes=self.retention_bytes,
            ),
            topic_logs=(
                (
                    CONSUMER_OFFSETS,
                    LogConfig(
                        segment_bytes=self.segment_bytes,
                        index_interval_bytes=self.index_interval_bytes,
                        flush_interval_messages=self.log_flush_interval_messages,
                        cleanup_policy=self.offsets_cleanup_policy,
                    ),
                ),
            ),
            log_retention_check_interval_ns=self.log_retention_check_interval_ns,
            log_cleaner_backoff_ns=self.log_cleaner_backoff_ns,
            log_flush_interval_ns=self.log_flush_interval_ns,
            heartbeat_interval_ns=self.heartbeat_interval_ns,
            replica_fetch_wait_max_ns=self.replica_fetch_wait_max_ns,
            replica_fetch_backoff_ns=self.replica_fetch_backoff_ns,
            request_timeout_ns=self.request_timeout_ns,
            hw_checkpoint_interval_ns=None if atomic else self.hw_checkpoint_interval_ns,
            atomic=atomic,
            fence_stale_controller_epoch="accept_stale_controller_epoch" not in self.bugs,
        )

    def controller_config(self) -> ControllerConfig:
        return ControllerConfig(
            unclean_leader_election=self.unclean,
            auto_leader_rebalance=self.auto_leader_rebalance,
            leader_imbalance_per_broker_percentage=self.leader_imbalance_per_broker_percentage,
            leader_imbalance_check_interval_ns=self.leader_imbalance_check_interval_ns,
            shutdown_to_isr_only="shutdown_to_non_isr" not in self.bugs,
            reassignment_waits_for_isr="drop_before_isr_join" not in self.bugs,
            eligible_leader_replicas=self.elr,
            min_insync_replicas=self.min_insync_replicas,
            conditional_writes="unconditional_write" not in self.bugs,
            persist_epoch="epoch_not_persisted" not in self.bugs,
            queued_sends=not self.refinement,
        )


@attrs.define
class Ghost:
    """What the world knows that no node does (see the module docstring)."""

    ids: dict[tuple[str, int, int, int], int] = attrs.Factory(dict)
    """(topic, partition, leader epoch, offset) of an append -> the record's id."""
    next_record_id: int = 0
    acked: set[tuple[str, int, int, int, str]] = attrs.Factory(set)
    """(topic, partition, offset, id, acks) of every acknowledged write."""
    requests: set[tuple[str, int, int, int, frozenset[int]]] = attrs.Factory(set)
    """(topic, partition, leader epoch, leader, ISR) of every published LeaderAndIsr."""
    crashes: int = 0
    fences: dict[int, int] = attrs.Factory(dict)
    """Broker -> the quorum leader epoch when it last restarted (absent: never restarted)."""
    down: dict[int, dict[tuple[str, int], tuple[list[tuple[int, int]], int]]] = attrs.Factory(dict)
    controller_writes: set[tuple[int, int]] = attrs.Factory(set)
    """(``/controller_epoch`` when the write landed, writer) of every partition-state write
    a controller published (``spec.controller``'s ``writes``)."""
    controller_epochs: set[int] = attrs.Factory(set)
    """Every controller epoch a broker was elected with."""
    expiries: int = 0
    """Sessions the store expired (``spec.controller``'s ``expiries``)."""
    """Crashed broker -> per partition, what recovery will find: [(offset, epoch)] and HW."""

    def observe(self, note: Message) -> None:
        """What a node's note tells the world: a leader's append gives each record its id
        (one leader per epoch appends each offset once), an acknowledgement records the
        acknowledged writes, a controller's write the LeaderAndIsr it published."""
        if isinstance(note, Appended):
            for i in range(note.count):
                key = (note.topic, note.partition, note.leader_epoch, note.base_offset + i)
                assert key not in self.ids, f"two appends at epoch/offset {key}"
                self.ids[key] = self.next_record_id
                self.next_record_id += 1
        elif isinstance(note, Acked):
            acks = "all" if note.acks == -1 else str(note.acks)
            for i in range(note.count):
                offset = note.base_offset + i
                rid = self.ids[(note.topic, note.partition, note.leader_epoch, offset)]
                self.acked.add((note.topic, note.partition, offset, rid, acks))
        elif isinstance(note, Published):
            self.requests.add(
                (note.topic, note.partition, note.leader_epoch, note.leader, note.isr)
            )


def _batch_at(log: Log, offset: int) -> tuple[int, bytes | None, bytes | None] | None:
    """The leader epoch of the batch holding ``offset`` in ``log``, with the key and value
    of the record there (None when the log does not hold it)."""
    if not log.log_start_offset <= offset < log.log_end_offset:
        return None
    for batch in log.read_batches(offset, 0):
        for at, record in batch.offsets_and_records():
            if at == offset:
                return batch.partition_leader_epoch, record.key, record.value
    return None


class World:
    """The machines of one simulated cluster and what they share; a driver (``Cluster``,
    ``RefinementCluster``) subclasses it and decides which event comes next."""

    broker_class: type[Broker] = Broker
    """The broker implementation (a test may plug in a deliberately broken one)."""

    def __init__(self, config: ClusterConfig, seed: int) -> None:
        self.config = config
        self.seed = seed
        self.rng = SimRandom(seed)
        self.disk_rng = self.rng.split("disk")
        self.fault_rng = self.rng.split("faults")
        self.workload_rng = self.rng.split("workload")
        self.clock = Clock()
        self.broker_names = {b: broker_node(b) for b in config.broker_ids}
        self._broker_of_node = {name: b for b, name in self.broker_names.items()}
        self.producer_names = [f"p{i}" for i in range(1, config.producers + 1)]
        self.consumer_names = [f"c{i}" for i in range(1, config.consumers + 1)]
        self.node_names: tuple[str, ...] = (
            STORE,
            *self.broker_names.values(),
            *self.producer_names,
            *self.consumer_names,
        )
        """Every node: the coordination store, the brokers, the producers, the consumers."""
        self.nodes = NodeLifecycles(self.node_names)
        self.network = Network(self.nodes, self.clock, self.rng.split("network"), config.network)
        self.ghost = Ghost()
        self.disks = {b: SimDisk(name, self.clock) for b, name in self.broker_names.items()}
        self.store = MetadataStore(
            config.session_timeout_ns,
            eligible_leader_replicas=config.elr,
            keep_elr_on_unclean_restart="stale_elr" in config.bugs,
        )
        self.timeline = Timeline()
        """What happened to each partition, for explaining a run (``impl.timeline``)."""
        for p in range(config.partitions):
            # Kafka's round-robin assignment spreads the preferred leaders over the brokers.
            replicas = (
                round_robin_replicas(config.broker_ids, p)
                if config.replica_assignment is None
                else config.replica_assignment[p]
            )
            self.store.create_partition(config.topic, p, replicas)
            self.timeline.start(config.topic, p, replicas)
        for p in range(config.offsets_partitions):
            self.store.create_partition(CONSUMER_OFFSETS, p, config.broker_ids)
        self.broker_config = config.broker_config()
        self.controller_config = config.controller_config()
        self.controllers: dict[int, Controller] = {}
        """Broker -> the controller role it holds (believes it holds: a zombie too)."""
        self.brokers: dict[int, Broker | None] = {}
        self.stats: collections.Counter[str] = collections.Counter()
        self._role_serial: dict[int, int] = {}
        """Broker -> the number of the election that made its controller role."""
        self.pause_at_decision = False
        """Armed (``pause_controller_at_decision``): the controller's broker is paused on
        its next tick that leaves requests queued for its send threads."""
        self.paused_at_decision: str | None = None
        """The broker that armed pause stopped (until it is resumed or disarmed)."""
        self.paused_at_decision_since: int | None = None
        """When (global time, ns) the armed pause stopped ``paused_at_decision``."""
        self.pause_at_decision_hold: int | None = None
        """How long the armed pause holds once it fires, when it ends by itself (None: until
        `resume`)."""
        self._epoch_writers: dict[int, set[int]] = {}
        """Controller epoch -> the elections whose controllers wrote to the store in it
        (``spec.controller``'s ``OneControllerWritesPerEpoch``: one at most)."""
        acks = acks_value(config.acks)
        self.producers = {
            name: Producer(
                name,
                config.topic,
                config.partitions,
                ProducerConfig(
                    acks=acks,
                    request_timeout_ns=config.request_timeout_ns,
                    delivery_timeout_ns=config.delivery_timeout_ns,
                    enable_idempotence=config.idempotence,
                ),
                self.rng.split(f"node/{name}"),
            )
            for name in self.producer_names
        }
        self.consumers = {
            name: Consumer(
                name,
                config.topic,
                i % config.partitions,
                ConsumerConfig(
                    request_timeout_ns=config.request_timeout_ns,
                    log_start_aware=config.retention_ms >= 0 or config.retention_bytes >= 0,
                ),
                process=100 + i,
            )
            for i, name in enumerate(self.consumer_names)
        }
        self._history: list[dict[str, Any]] = []
        self._seen: dict[str, int] = {}
        self.groups: GroupHost | None = None
        """The consumer group's coordinators and members (``offsets_partitions`` > 0)."""
        if config.offsets_partitions:
            self.groups = GroupHost(
                config.group,
                config.offsets_partitions,
                self.broker_names,
                self.consumer_names,
                {config.topic: config.partitions},
                self._offsets_leader,
                check_generation="no_generation_check" not in config.bugs,
                fetch_before_load="fetch_before_load" in config.bugs,
                app=config.consumer_app,
                member_config=None
                if config.group_member is None
                else attrs.evolve(config.group_member, group=config.group),
            )
            # In a group each consumer node is a GroupConsumer (impl.group.consumer): its
            # member, its fetchers of the assigned partitions, its application.
            self.consumers = self.groups.consumers  # type: ignore[assignment]
            for name in self.consumer_names:
                self.groups.subscribe(name, self.clock.now)
                self._collect(name)
        for b in config.broker_ids:
            self._start_broker(b, incarnation=0, bootstrap=True)
        if not config.refinement:
            # The brokers are started in id order and race for /controller as they start:
            # the first wins (later elections are won by whoever ticks first). Refinement
            # runs start with no controller, as the spec does.
            for b in config.broker_ids:
                if self._role_tick(b):
                    break

    # ------------------------------------------------------------------ nodes

    def state(self, name: str) -> NodeState:
        return self.nodes.state(name)

    def running(self, name: str) -> bool:
        return self.nodes.state(name) is NodeState.RUNNING

    def broker(self, broker_id: int) -> Broker | None:
        return self.brokers.get(broker_id)

    def broker_id(self, name: str) -> int:
        """The id of broker node ``name`` (``broker_node`` names them)."""
        b = self._broker_of_node.get(name)
        if b is None:
            raise IllegalEvent(
                f"{name!r} is no broker of this cluster; its brokers are "
                f"{', '.join(self.broker_names.values())}"
            )
        return b

    def log_end_offset(
        self, broker_id: int, partition: int, topic: str | None = None
    ) -> int | None:
        """What broker ``broker_id``'s ``kafka.log:type=Log,name=LogEndOffset`` gauge reads
        for its replica of ``partition`` (of the run's topic by default): the replica's log
        end offset, or None when the broker is not running or holds no such replica. A
        nemesis reads it as an operator reads a broker's metrics."""
        broker = self.brokers.get(broker_id)
        if broker is None or not self.running(self.broker_names[broker_id]):
            return None
        replica = broker.replica(topic or self.config.topic, partition)
        return None if replica is None else replica.leo

    def _offsets_leader(self, partition: int) -> int | None:
        leader = self.store.partitions[(CONSUMER_OFFSETS, partition)].leader
        return None if leader == NO_LEADER else leader

    def _start_broker(self, b: int, incarnation: int, bootstrap: bool = False) -> None:
        name = self.broker_names[b]
        if self.groups is not None:
            self.groups.broker_started(b)
        now = self.clock.monotonic_now(name)
        broker = self.broker_class(b, self.disks[b], self.broker_config, now, incarnation)
        self.brokers[b] = broker
        started = broker.start(now)
        if not bootstrap:
            self._dispatch(name, started)
            return
        # The cluster is created with every broker registered, as a real cluster is
        # started before its first topic: the registration is handled on the spot.
        for dst, msg in started.sends:
            assert dst == STORE and isinstance(msg, BrokerRegistration), (dst, msg)
            answer = self.store.step(name, msg, self.clock.monotonic_now(STORE))
            for reply_dst, reply in answer.sends:
                assert reply_dst == name, (reply_dst, reply)
                self._dispatch(name, broker.step(STORE, reply, now))

    # ------------------------------------------------------------------ the controller role

    @property
    def controller(self) -> Controller | None:
        """The controller ``/controller`` names, if it still acts (not a zombie)."""
        role = self.controllers.get(self.store.controller)
        return role if role is not None and role.epoch_version == self.store.epoch_version else None

    def connected(self, name: str) -> bool:
        """Whether node ``name`` reaches the coordination store and hears it back."""
        network = self.network
        return not network.is_blocked(name, STORE) and not network.is_blocked(STORE, name)

    def _role_tick(self, b: int) -> bool:
        """Broker ``b``'s controller duties, on its tick: its controller's tick, or else an
        attempt to create ``/controller`` when none exists. Whether anything was done."""
        name = self.broker_names[b]
        broker = self.brokers.get(b)
        if broker is None or not self.running(name):
            return False
        now, connected = self.clock.monotonic_now(name), self.connected(name)
        role = self.controllers.get(b)
        if role is not None:
            effects = role.tick(now, connected)
            self._forget_resigned(b)
            self._dispatch(name, effects)
            if self.pause_at_decision and role.outbox and not role.resigned:
                # A decision written to the store, its requests not yet sent: SIGSTOP now.
                self._paused_at_decision(name)
            return bool(effects)
        if broker.broker_epoch is None or not connected or self.store.controller != NO_LEADER:
            return False
        role = Controller.elect(self.store, self.controller_config, b, broker.broker_epoch)
        if role is None:
            return False
        self.controllers[b] = role
        self.stats["controller_elections"] += 1
        self._role_serial[b] = self.stats["controller_elections"]
        if len(self.controllers) > 1:
            # The old controller has not learnt yet that it no longer is one: 脑裂.
            self.stats["brain_splits"] += 1
        out = Effects()
        out.note(ControllerElected(b, role.epoch))
        # onControllerFailover: tell every broker the published state with the new epoch,
        # then handle what is pending (offline partitions elect a leader at once).
        out.extend(role.resend_all()).extend(role.tick(now, connected))
        self._forget_resigned(b)
        self._dispatch(name, out)
        return True

    def controller_figures(self) -> dict[str, int]:
        """What the controllers did in this run: elections, brain splits (an election while
        a zombie still acted), resignations, writes the store took from a zombie (only with
        its fence off), controller epochs two controllers wrote in (only with the epoch not
        persisted: ``OneControllerWritesPerEpoch`` broken), and zombie LeaderAndIsr requests
        the brokers rejected (STALE_CONTROLLER_EPOCH) or, with that fence off, applied."""
        keys = (
            "controller_elections",
            "brain_splits",
            "controller_resignations",
            "zombie_writes",
            "shared_epoch_writes",
            "stale_controller_rejected",
            "stale_controller_applied",
        )
        return {key: self.stats[key] for key in keys}

    def _forget_resigned(self, b: int) -> None:
        role = self.controllers.get(b)
        if role is not None and role.resigned:
            del self.controllers[b]
            self.stats["controller_resignations"] += 1

    def _check_session(self, b: int, broker: Broker, effects: Effects) -> None:
        """The controller on ``b`` resigns once its broker found its session expired (its
        broker epoch is no longer the one the controller was elected with); what it does
        then is added to ``effects``."""
        role = self.controllers.get(b)
        if role is None or broker.broker_epoch == role.session_epoch:
            return
        effects.extend(role.resign("session"))
        self._forget_resigned(b)

    def _route(self, dst: str) -> str | None:
        """Where a message to ``dst`` goes: ``CONTROLLER`` is the broker ``/controller``
        names now (None: there is none, the message is lost)."""
        if dst != CONTROLLER:
            return dst
        holder = self.store.controller
        if holder == NO_LEADER:
            self.stats["controller_unknown"] += 1
            return None
        return self.broker_names[holder]

    def _step_node(self, name: str, src: str | None = None, msg: Message | None = None) -> Effects:
        """One step of node ``name`` (which must be running): handle ``msg`` from ``src``,
        or with ``msg`` None run its periodic work (its tick). Each node reads the clock
        Kafka reads (``impl.sim.clock``): the controller its monotonic clock, clients their
        wall clock, brokers both. A client's new history events are collected at once."""
        clock = self.clock
        b = self._broker_of_node.get(name)
        if b is not None:
            broker = self.brokers[b]
            assert broker is not None, name
            now, wall = clock.readings(name)
            if msg is None:
                if self.groups is not None:
                    ticked = self.groups.broker_effects(b, broker.tick(now, wall), now)
                    return ticked.extend(self.groups.broker_tick(b, broker, now))
                return broker.tick(now, wall)
            assert src is not None
            if self.groups is not None and isinstance(msg, GROUP_REQUESTS):
                return self.groups.broker_step(b, broker, src, msg, now)
            if isinstance(msg, CONTROLLER_REQUESTS):
                role = self.controllers.get(b)
                if role is None:
                    self.stats["controller_requests_dropped"] += 1
                    return Effects()
                effects = role.step(src, msg, now, self.connected(name))
                self._forget_resigned(b)
                return effects
            if isinstance(msg, LeaderAndIsr):
                self.stats["leader_and_isr_delivered"] += 1
            effects = broker.step(src, msg, now, wall)
            if b in self.controllers:  # (else _check_session has nothing to add)
                self._check_session(b, broker, effects)
            if self.groups is not None:
                # The group coordinator's own appends are answered in-process.
                return self.groups.broker_effects(b, effects, now)
            return effects
        if name == STORE:
            now = clock.monotonic_now(name)
            if msg is None:
                return self.store.tick(now)
            assert src is not None
            return self.store.step(src, msg, now)
        client: Producer | Consumer = self.producers.get(name) or self.consumers[name]
        now = clock.wall_now(name)
        if msg is None:
            effects = client.tick(now)
        else:
            assert src is not None
            effects = client.step(src, msg, now)
        self._collect(name)
        return effects

    def _deliver(self, dst: str, src: str, msg: Message) -> None:
        """Hand ``msg`` to node ``dst`` (which must be running); carry out its effects."""
        self._dispatch(dst, self._step_node(dst, src, msg))

    def _tick(self, name: str) -> None:
        """Run node ``name``'s periodic work (it must be running); carry out its effects. A
        broker's includes its controller duties (``_role_tick``)."""
        self._dispatch(name, self._step_node(name))
        b = self._broker_of_node.get(name)
        if b is not None:
            self._role_tick(b)

    def _dispatch(self, src: str, effects: Effects) -> None:
        """Carry out node ``src``'s effects: record its notes, and send its messages through
        the network (a driver that carries some messages otherwise overrides this)."""
        notes = effects.notes
        if notes:  # (most steps note nothing)
            self._record_notes(src, effects)
        send = self.network.send
        for dst, msg in effects.sends:
            if dst == CONTROLLER:  # (the test here, not in _route: every send comes by)
                to = self._route(dst)
                if to is None:
                    continue
                dst = to
            send(src, dst, msg)
        for note in notes:
            if isinstance(note, ShutdownReady):
                self._stop_cleanly(note)

    def _record_notes(self, src: str, effects: Effects) -> None:
        """Record node ``src``'s notes (``_observe``), and what the controllers' notes tell
        the world: a write by a zombie, and (ghost) who wrote in which controller epoch,
        the epochs elected, the sessions expired."""
        for note in effects.notes:
            self._observe(note)
            if isinstance(note, Published) and src in self._broker_of_node:
                b = self._broker_of_node[src]
                writer = self.controllers.get(b)
                if writer is not None and writer.epoch_version != self.store.epoch_version:
                    self.stats["zombie_writes"] += 1
                if writer is not None:
                    writers = self._epoch_writers.setdefault(writer.epoch, set())
                    writers.add(self._role_serial.get(b, 0))
                    if len(writers) == 2:
                        # A second controller writes in an epoch another wrote in.
                        self.stats["shared_epoch_writes"] += 1
                if self.config.ghosts:
                    self.ghost.controller_writes.add((self.store.controller_epoch, b))
            elif isinstance(note, ControllerElected) and self.config.ghosts:
                self.ghost.controller_epochs.add(note.epoch)
            elif isinstance(note, SessionExpired) and self.config.ghosts:
                self.ghost.expiries += 1

    # ------------------------------------------------------------------ driver hooks

    def _node_started(self, name: str) -> None:
        """Node ``name`` was restarted (a driver by time schedules its ticks)."""

    def _node_stopped(self, name: str) -> None:
        """Node ``name`` crashed (a driver by time cancels its ticks)."""

    def _node_resumed(self, name: str) -> None:
        """Node ``name`` was resumed from a pause (a driver by time releases its ticks)."""

    # ------------------------------------------------------------------ the world's records

    def _observe(self, note: Message) -> None:
        """Record a node's note: in the timeline, and (if kept) in the ghost state."""
        self.timeline.observe(self.clock.now, note)
        if isinstance(note, Reconciled):
            self._check_reconciled(note)
        if isinstance(note, StaleControllerRequest):
            self.stats["stale_controller_" + ("applied" if note.applied else "rejected")] += 1
        if self.config.ghosts:
            self.ghost.observe(note)

    def _check_reconciled(self, note: Reconciled) -> None:
        """A follower reconciled its log with its leader's: record a `Divergence` if it
        kept a record the leader does not have (the world sees both logs; no node does)."""
        follower, leader = self.brokers.get(note.broker), self.brokers.get(note.leader)
        if follower is None or leader is None:
            return  # the leader is down: nothing to compare with
        mine = follower.replica(note.topic, note.partition)
        theirs = leader.replica(note.topic, note.partition)
        if mine is None or theirs is None:
            return
        for offset, _, _ in itertools.islice(
            epoch_mismatches(mine.log.epoch_cache, mine.leo, theirs.log.epoch_cache, theirs.leo),
            8,
        ):
            here, there = _batch_at(mine.log, offset), _batch_at(theirs.log, offset)
            if here is None or there is None or here == there:
                continue  # the same record (an epoch cache is no proof)
            self.timeline.add(
                Divergence(
                    self.clock.now,
                    note.broker,
                    note.topic,
                    note.partition,
                    note.leader,
                    note.leader_epoch,
                    offset,
                    here[0],
                    there[0],
                    note.log_end_offset,
                )
            )
            return

    # ------------------------------------------------------------------ faults

    def crash(
        self,
        name: str,
        torn: dict[str, int] | None = None,
        rng: SimRandom | None = None,
        *,
        power_loss: bool = True,
    ) -> dict[str, int]:
        """Kill node ``name``. With ``power_loss`` (kill -9 of the machine, the default) a
        broker's disk loses what was neither fsynced nor written back, except the first
        ``torn[path]`` bytes of each listed file (or drawn from ``rng``): a torn write.
        Without it (SIGKILL of the process; the machine stays up) the page cache survives,
        dirty pages included, and the kernel goes on writing them back."""
        if name == STORE:
            raise IllegalEvent(
                f"{STORE} is the coordination store, a replicated ZooKeeper ensemble that "
                "outlives every broker: it is not crashed here; partition it from brokers "
                "instead (partition-controller)"
            )
        if not self.nodes.state(name).alive:
            raise IllegalEvent(f"{name} is {self.nodes.state(name).value}; it cannot crash")
        if name in self.producers or name in self.consumers:
            raise IllegalEvent(
                f"{name} is a client; clients are not crashed here (Jepsen crashes servers; "
                "a client's lost ops would be info): pause it or partition it instead"
            )
        self.nodes.crash(name)
        self._node_stopped(name)
        self.stats["crashes"] += 1
        kept: dict[str, int] = {}
        b = self.broker_id(name)
        self.controllers.pop(b, None)  # the controller role dies with its process
        self.timeline.add(
            Crash(
                self.clock.now,
                b,
                power_loss,
                sum(n for _, n in self.unflushed_files(b)) if power_loss else 0,
                self._logs(b),
            )
        )
        self.brokers[b] = None
        disk = self.disks[b]
        if not power_loss:
            assert torn is None and rng is None, "a torn write needs a power loss"
        elif rng is not None:
            kept = disk.crash_torn(rng)
        else:
            disk.crash(torn or {})
            kept = dict(torn or {})
        if self.config.closes_sessions:
            self.store.close_session(b)
        if self.config.ghosts:
            self.ghost.crashes += 1
            self.ghost.down[b] = self._preview_recovery(b)
        return kept

    def _logs(self, b: int) -> list[tuple[str, int, int, int]]:
        """(topic, partition, log end offset, HW) of each replica broker ``b`` hosts now."""
        broker = self.brokers.get(b)
        if broker is None:
            return []
        return [(t, p, r.leo, r.hw) for (t, p), r in sorted(broker.replicas.items())]

    def _preview_recovery(self, b: int) -> dict[tuple[str, int], tuple[list[tuple[int, int]], int]]:
        """What storage recovery will find on the broker's disk when it restarts: each
        partition's (offset, epoch) list and its checkpointed HW clamped to it. Computed on a
        copy of the disk, with the storage layer alone (whatever the broker then does)."""
        clone = copy.deepcopy(self.disks[b])
        hws = OffsetCheckpointFile(clone, "", REPLICATION_OFFSET_CHECKPOINT).read()
        result = {}
        directories = sorted({path.split("/", 1)[0] for path in clone.paths() if "/" in path})
        for directory in directories:
            topic, _, number = directory.rpartition("-")
            log = Log.open(clone, directory, config=self.broker_config.log)
            entries = [(offset, epoch) for offset, epoch, _, _ in log.entries()]
            hw = min(hws.get(TopicPartition(topic, int(number)), 0), log.log_end_offset)
            result[(topic, int(number))] = (entries, hw)
        return result

    def unflushed_files(self, broker_id: int) -> list[tuple[str, int]]:
        """(path, unflushed bytes) of the broker's files a crash would cut."""
        disk = self.disks[broker_id]
        return [
            (path, disk.unflushed_bytes(path))
            for path in disk.paths()
            if disk.durable_image(path) is not None and disk.unflushed_bytes(path) > 0
        ]

    # ------------------------------------------------------------------ leadership admin

    def preferred_election(self, partition: int | None = None) -> int | None:
        """An admin's preferred-leader election for every partition of the topic, or for
        ``partition`` only (``ElectLeaders``, ``kafka-leader-election.sh --election-type
        preferred [--partition P]``): the controller queues them and elects one per tick.
        How many were queued; None: no controller acts."""
        controller = self.controller
        if controller is None or not self.running(broker_node(controller.broker_id)):
            return None
        keys = None if partition is None else frozenset({(self.config.topic, partition)})
        return controller.request_preferred_election(keys=keys)

    def add_partitions(self, total: int, topic: str | None = None) -> list[int] | None:
        """An admin grows ``topic`` (default: the test's) to ``total`` partitions (or creates
        it): ``Controller.create_partitions``. The new partitions' numbers; None: no
        controller acts."""
        controller = self._admin_controller()
        if controller is None:
            return None
        topic = self.config.topic if topic is None else topic
        created = controller.create_partitions(topic, total)
        for p in created:
            self.timeline.start(topic, p, self.store.partitions[(topic, p)].replicas)
        return created

    def delete_topic(self, topic: str) -> str:
        """An admin's ``DeleteTopics`` (``kafka-topics.sh --delete``):
        ``Controller.delete_topic``. The error name, or ``NONE``; ``NO_CONTROLLER`` when no
        controller acts."""
        controller = self._admin_controller()
        if controller is None:
            return "NO_CONTROLLER"
        error = controller.delete_topic(topic).name
        self._dispatch_admin(controller)
        return error

    def reassign(self, partition: int, target: tuple[int, ...] | None) -> str:
        """An admin's ``AlterPartitionReassignments`` (KIP-455; ``kafka-reassign-partitions
        .sh``) for partition ``partition`` of the topic: move it to ``target`` (replicas in
        preference order), or with None cancel the one in progress. The error name, or
        ``NONE``; ``NO_CONTROLLER`` when no controller acts."""
        controller = self._admin_controller()
        if controller is None:
            return "NO_CONTROLLER"
        error = controller.alter_reassignment((self.config.topic, partition), target).name
        self._dispatch_admin(controller)
        return error

    def _admin_controller(self) -> Controller | None:
        """The controller an admin request reaches: elected, its broker running and
        connected to the store (None otherwise: ``NO_CONTROLLER``)."""
        controller = self.controller
        if controller is None:
            return None
        name = broker_node(controller.broker_id)
        if not self.running(name) or not self.connected(name):
            return None
        return controller

    def _dispatch_admin(self, controller: Controller) -> None:
        """What the controller decided on an admin's request goes out now, as the answer
        of the request's handling (its LeaderAndIsr requests, with queued sends, still
        wait for the send threads on its next tick)."""
        effects, controller.pending_effects = controller.pending_effects, Effects()
        self._dispatch(broker_node(controller.broker_id), effects)

    # ------------------------------------------------------------------ controlled shutdown

    def controlled_shutdown(self, name: str) -> bool:
        """Broker ``name`` begins a controlled shutdown (``controlled.shutdown.enable``;
        ``impl.controlled_shutdown``): it stops by itself once the controller moved its
        leaderships off. Whether it began (the broker must be running)."""
        b = self.broker_id(name)
        broker = self.brokers.get(b)
        if broker is None or not self.running(name) or broker.shutdown is not None:
            return False
        broker.begin_controlled_shutdown(self.clock.monotonic_now(name))
        return True

    def finish_controlled_shutdown(self, name: str) -> bool:
        """A controlled shutdown still waiting for the controller stops now anyway (as
        Kafka's does once ``controlled.shutdown.max.retries`` are spent): logs flushed,
        process stopped. Whether it stopped."""
        b = self.broker_id(name)
        broker = self.brokers.get(b)
        if broker is None or broker.shutdown is None or not self.running(name):
            return False
        self._stop_cleanly(ShutdownReady(b, False))
        return True

    def _stop_cleanly(self, note: ShutdownReady) -> None:
        """The end of a controlled shutdown: the logs are flushed and the process stops
        (the machine stays up). The restart is the caller's (``restart``)."""
        name = self.broker_names[note.broker_id]
        broker = self.brokers.get(note.broker_id)
        if broker is None or not self.nodes.state(name).alive:
            return
        broker.flush_all()
        broker.checkpoint_hws()
        broker.checkpoint_recovery_points()
        self.stats["controlled_shutdowns"] += 1
        self.crash(name, power_loss=False)

    def restart(self, name: str) -> None:
        """Start a crashed node again: a new incarnation recovering from its disk."""
        if self.nodes.state(name) not in (NodeState.CRASHED, NodeState.STOPPED):
            raise IllegalEvent(f"{name} is {self.nodes.state(name).value}; it cannot restart")
        self.nodes.restart(name)
        self._node_started(name)
        if self.groups is not None and name in self.groups.consumers:
            self.groups.client_restarted(name, self.clock.wall_now(name))
            self._seen[name] = 0
            self._collect(name)
        if name in self.producers or name in self.consumers:
            return
        b = self.broker_id(name)
        if self.config.ghosts:
            # What recovery finds is now the broker's own state (the refinement check
            # compares it with the spec's restart); the fence is the quorum epoch now.
            self.ghost.down.pop(b, None)
            self.ghost.fences[b] = self.store.partitions[(self.config.topic, 0)].leader_epoch
        self._start_broker(b, self.nodes.incarnation(name))
        self.timeline.add(Recovery(self.clock.now, b, self._logs(b)))

    def kill_client(self, name: str) -> int:
        """``kill-consumer``: consumer ``name``'s process dies (SIGKILL); what it was waiting
        for ends (a commit unknown, a read failed), its requests' answers are lost, and
        ``restart`` brings it back as a new member and a new history process. Returns the
        history process id of the consumer that died."""
        if self.groups is None or name not in self.groups.consumers:
            raise IllegalEvent(
                f"{name} is not a group consumer; kill-consumer needs a consumer group "
                "(ClusterConfig.offsets_partitions > 0)"
            )
        if not self.nodes.state(name).alive:
            raise IllegalEvent(f"{name} is {self.nodes.state(name).value}; it cannot be killed")
        consumer = self.groups.consumers[name]
        consumer.killed(self.clock.wall_now(name))
        self._collect(name)
        self.nodes.crash(name)
        self._node_stopped(name)
        self.stats["consumer_kills"] += 1
        return consumer.process

    def close_client(self, name: str) -> int:
        """``leave-consumer``: consumer ``name`` closes (``GroupConsumer.close``: its
        rebalance listener commits what it processed, then LeaveGroup) and stays out of the
        group until ``rejoin_client``. Returns its history process id."""
        if self.groups is None or name not in self.groups.consumers:
            raise IllegalEvent(
                f"{name} is not a group consumer; leave-consumer needs a consumer group "
                "(ClusterConfig.offsets_partitions > 0)"
            )
        consumer = self.groups.consumers[name]
        self._dispatch(name, consumer.close(self.clock.wall_now(name)))
        self._collect(name)
        return consumer.process

    def rejoin_client(self, name: str) -> None:
        """``join-consumer``: consumer ``name`` subscribes again (the same process); its
        next poll joins the group."""
        if self.groups is None or name not in self.groups.consumers:
            raise IllegalEvent(f"{name} is not a group consumer")
        self.groups.subscribe(name, self.clock.wall_now(name))
        self._collect(name)

    def pause_controller_at_decision(self, armed: bool = True, hold_ns: int | None = None) -> None:
        """Arm (or disarm) a SIGSTOP of the controller's broker at the moment it has
        decided -- a leader elected, an ISR changed, written to the store -- and its
        requests wait for the send threads (``ControllerChannelManager``): a long GC pause
        that lands there. Woken after its session expired, it is a zombie whose queued
        requests of the old controller epoch reach the brokers after its successor's
        (what ``STALE_CONTROLLER_EPOCH`` fencing is for). Which broker it stopped is
        ``paused_at_decision``; `resume` wakes it, or, armed with ``hold_ns``, the pause
        ends by itself that long after it fired (`_paused_at_decision`)."""
        self.pause_at_decision = armed
        self.pause_at_decision_hold = hold_ns if armed else None
        if armed:
            self.paused_at_decision = None

    def _paused_at_decision(self, name: str) -> None:
        """The armed pause fires: broker ``name`` stops (a driver by time also wakes it
        ``pause_at_decision_hold`` later, when set)."""
        self.pause_at_decision = False
        self.paused_at_decision = name
        self.paused_at_decision_since = self.clock.now
        self.nodes.pause(name)

    def pause(self, name: str) -> None:
        if name == STORE:
            raise IllegalEvent(
                f"{STORE} is the coordination store (a ZooKeeper ensemble): it is not paused "
                "here; pause a broker (pause-controller) or partition it from the store"
            )
        self.nodes.pause(name)

    def resume(self, name: str) -> None:
        self.nodes.resume(name)
        self._node_resumed(name)

    def partition(self, links: Iterable[tuple[str, str]]) -> None:
        self.network.block(links)

    def skew_clock(self, name: str, skew_ns: int, rate: tuple[int, int] = (1, 1)) -> None:
        """The clock nemesis: node ``name``'s wall clock reads global time + ``skew_ns`` from
        now on (a bump; its monotonic clock does not step), and both its clocks run at
        ``rate`` (numerator, denominator) of global time. Scheduling stays on global time;
        only the node's own timeout decisions see the difference."""
        if name not in self.nodes:
            raise IllegalEvent(f"no node {name!r}; the nodes are {list(self.nodes.names)}")
        self.clock.set_skew(name, skew_ns)
        self.clock.set_rate(name, *rate)

    def reset_clocks(self) -> None:
        """Heal the clock nemesis: every wall clock reads global time again (a node that was
        ahead sees it step back) and every clock runs at the global rate; monotonic clocks
        never step."""
        self.clock.clear_skews()

    def heal(self) -> None:
        self.network.heal()

    # ------------------------------------------------------------------ clients

    def client_send(self, name: str, key: bytes | None, value: bytes) -> Send:
        """Producer ``name`` sends a record now; returns the op's record (its attempts)."""
        producer = self.producers[name]
        now = self.clock.wall_now(name)
        send = producer.send(key, value, now)
        if self.running(name):
            effects = producer.pump(now)
            self._collect(name)
            self._dispatch(name, effects)
        self._collect(name)
        return send

    def client_poll(self, name: str) -> None:
        consumer = self.consumers[name]
        effects = consumer.poll(self.clock.wall_now(name)) if self.running(name) else None
        self._collect(name)
        if effects is not None:
            self._dispatch(name, effects)

    def _collect(self, name: str) -> None:
        """Move a client's new history events into the run's history, in the order they
        happened (several may share a logical time). Each is stamped with the global time
        it happened at, in the client's own history too: a client times its events by its
        local clock, which the clock nemesis may skew, while a history is timed by the
        observer (Jepsen's control node), one clock for every op of a history."""
        client = self.producers.get(name) or self.consumers.get(name)
        if client is None:
            return
        seen, events = self._seen.get(name, 0), client.history
        if len(events) == seen:
            return  # nothing new (the common case: called after every step of a client)
        now, history = self.clock.now, self._history
        for op in events[seen:]:
            op["time"] = now
            history.append({"index": len(history), **op})
        self._seen[name] = len(events)

    def admin_request(self, name: str, msg: Message) -> list[Message]:
        """An admin client's request (``kafka-consumer-groups --describe``: an OffsetFetch)
        handed straight to running broker ``name``, as over a healed network: its answers
        are returned, every other effect of the step is carried out."""
        if not self.running(name):
            raise IllegalEvent(f"{name} is {self.nodes.state(name).value}; it cannot answer")
        effects = self._step_node(name, ADMIN, msg)
        answers = [m for dst, m in effects.sends if dst == ADMIN]
        effects.sends[:] = [(dst, m) for dst, m in effects.sends if dst != ADMIN]
        self._dispatch(name, effects)
        return answers

    def record(self, op: dict[str, Any]) -> None:
        """An op of the run's observer (a nemesis op, a final read) joins the history, at
        the current global time, after every op so far."""
        self._history.append({"index": len(self._history), **op, "time": self.clock.now})

    def history(self) -> list[dict[str, Any]]:
        """Every client op so far, in the order it happened (the history format of
        ``docs/history-format.md``; ``jepsen_py.checker`` reads it)."""
        return list(self._history)

    # ------------------------------------------------------------------ fingerprints

    def digest(self) -> str:
        """A fingerprint of the whole run so far; equal across processes for equal runs."""
        h = hashlib.blake2b(digest_size=16, person=b"kafka-model-run")

        def put(text: str) -> None:
            h.update(text.encode())
            h.update(b"\n")

        put(f"now {self.clock.now}")
        put(self.network.history_digest())
        put(self.network.pending_digest())
        put(self.store.describe())
        for b in sorted(self.disks):
            disk = self.disks[b]
            for path in disk.paths():
                put(f"{b} {path} {hashlib.blake2b(disk.read(path), digest_size=16).hexdigest()}")
        put(json.dumps(self.history(), sort_keys=True, default=str))
        for name, state, incarnation in self.nodes.snapshot():
            put(f"{name} {state.value} {incarnation}")
        return h.hexdigest()

    def describe(self) -> str:
        lines = [f"t={self.clock.now} " + self.store.describe()]
        for b in sorted(self.brokers):
            broker, name = self.brokers[b], self.broker_names[b]
            state = self.nodes.state(name).value
            lines.append(f"{name} [{state}] " + (broker.describe() if broker else "-"))
        return "\n".join(lines)
