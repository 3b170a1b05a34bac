"""Kafka's controller as an executable state machine: election through the coordination
store, controller epochs, and the fencing of a zombie controller.

In plain words. One broker of the cluster is the *controller*: it decides partition
leadership and ISR changes, records them in the coordination store and tells the brokers. In
ZooKeeper-era Kafka (``KafkaController``), the first broker to create the ephemeral
``/controller`` znode wins, and in the same atomic multi-op it increments the persistent
``/controller_epoch`` ("first start 1, +1 on every re-election"). Ephemeral znodes live as
long as their owner's session: when a broker is paused (a long GC) or cut off from
ZooKeeper, its session expires, ``/controller`` and ``/brokers/ids/N`` disappear, and
another broker is elected. The old controller is not told. When it resumes it still believes
it is the controller -- a *zombie*, and with the new controller a brain split (脑裂) -- and
may keep acting on its stale view until it learns otherwise. Two fences make that harmless:

- brokers keep the highest controller epoch they have applied and reject LeaderAndIsr,
  StopReplica and UpdateMetadata requests from an older one (STALE_CONTROLLER_EPOCH);
- the controller's writes of partition state are ZooKeeper multi-ops conditional on the
  version of ``/controller_epoch`` it set when it was elected (Kafka 2.2, KAFKA-6082), so a
  zombie's write fails in the store too (BADVERSION: ``ControllerMovedException``) and it
  resigns.

What is modelled (``State``):

``store``
    The coordination store, linearizable and atomic (every store action is one step): the
    live sessions (= the ephemeral registrations ``/brokers/ids/N``), ``/controller``,
    ``/controller_epoch`` with its version, and each partition's state znode
    ``/brokers/topics/T/partitions/P/state`` (leader, leader epoch, ISR).
``brokers``
    Per broker: ``ReplicaManager.controllerEpoch`` (the controller epoch of the last request
    it applied), the leader epoch and leader it last applied for each partition, and, while
    it believes it is the controller, ``KafkaController``'s epoch, the ``/controller_epoch``
    version it expects and its controller context (the partition states it read or wrote).
``requests``
    Every request a controller ever sent. A broker may act on any of them at any time, so
    requests are delayed, duplicated, reordered or lost, as ``spec.replication`` treats
    LeaderAndIsr.
``writes``
    Ghost: (controller epoch in the store when a partition-state write landed, its writer),
    for every successful write, so that "one controller per epoch" is stated directly.

KRaft (``Params.mode = "kraft"``, KIP-500/KIP-595/KIP-631) is the same transition system
read another way: the store is the replicated metadata log, the active controller is the
leader of the metadata quorum, the controller epoch is its Raft epoch (persisted by every
voter in its quorum-state file), a controller's records commit only in its own epoch, and
brokers fence metadata by that epoch (FENCED_LEADER_EPOCH). The two ZooKeeper-only
mistakes (unconditional writes, a non-persisted epoch) cannot be made there and are refused.

Deliberately broken variants (``Params.bugs``) show each invariant able to fail; each is
named after the mistake it makes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from spec.framework import (
    Fair,
    Kind,
    SignatureSymmetry,
    SpecError,
    Step,
    action,
    all_permutations,
    eventually,
    invariant,
    sometimes,
    sometimes_transition,
    transition_property,
)

NONE = -1
"""No broker: no leader, no controller (Kafka writes -1 for both)."""
NIL = -1
"""No leader epoch yet: a partition whose leader was never elected."""
NO_EPOCH = 0
"""No controller epoch: ``/controller_epoch`` before the first election (Kafka creates it
holding 0, ``KafkaController.InitialControllerEpoch``), and a broker that has applied no
controller's request."""

LEADER_AND_ISR = "LeaderAndIsr"
STOP_REPLICA = "StopReplica"
UPDATE_METADATA = "UpdateMetadata"
KINDS = (LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA)

MODES = ("zookeeper", "kraft")
BUGS = {
    "accept_stale_controller_epoch": (
        "brokers apply requests from an older controller epoch (no STALE_CONTROLLER_EPOCH)"
    ),
    "unconditional_write": (
        "the controller writes partition state blindly: neither /controller_epoch's version "
        "nor the partition znode's version is checked"
    ),
    "partition_version_only": (
        "the controller's writes are conditional on the partition znode's version only, not "
        "on /controller_epoch's (Kafka before 2.2, KAFKA-6082)"
    ),
    "epoch_not_persisted": (
        "the controller epoch is not persisted: every new controller starts the count again at 1"
    ),
    "zombie_never_resigns": (
        "a controller may never process the loss of /controller (a stuck controller event "
        "thread): no fairness for resigning, so a zombie may act for ever"
    ),
}
ZOOKEEPER_ONLY_BUGS = frozenset(
    {"unconditional_write", "partition_version_only", "epoch_not_persisted"}
)
"""Mistakes KRaft cannot make: the Raft epoch is persisted by every voter, and a leader's
records commit only in its own epoch."""

OK = "ok"
MOVED = "moved"
"""BADVERSION on ``/controller_epoch``: another controller was elected since."""
CONFLICT = "conflict"
"""BADVERSION on the partition znode: someone else wrote the partition since."""


@attrs.frozen
class Params:
    """Bounds and protocol variants."""

    brokers: int = 2
    partitions: int = 1
    max_controller_epoch: int = 2
    """Elections stop once ``/controller_epoch`` reaches this: 2 allows one failover."""
    max_leader_epoch: int = 1
    """Partition-state writes stop once a partition's leader epoch reaches this: 1 allows
    a first election and one change."""
    max_expiries: int | None = 2
    """Fault budget: how many sessions may expire in a run (None: unbounded)."""
    mode: str = "zookeeper"
    bugs: frozenset[str] = frozenset()

    def __attrs_post_init__(self) -> None:
        problems = []
        if not 2 <= self.brokers <= 4:
            problems.append(f"brokers must be 2..4, got {self.brokers}")
        if not 1 <= self.partitions <= 2:
            problems.append(f"partitions must be 1 or 2, got {self.partitions}")
        if self.max_controller_epoch < 1:
            problems.append(f"max_controller_epoch must be >= 1, got {self.max_controller_epoch}")
        if self.max_leader_epoch < 0:
            problems.append(f"max_leader_epoch must be >= 0, got {self.max_leader_epoch}")
        if self.max_expiries is not None and self.max_expiries < 0:
            problems.append(f"max_expiries must be >= 0, got {self.max_expiries}")
        if self.mode not in MODES:
            problems.append(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        unknown = sorted(set(self.bugs) - set(BUGS))
        if unknown:
            problems.append(f"unknown bug flag(s) {unknown}; known: {', '.join(sorted(BUGS))}")
        if self.mode == "kraft":
            zk_only = sorted(set(self.bugs) & ZOOKEEPER_ONLY_BUGS)
            if zk_only:
                problems.append(
                    f"{', '.join(zk_only)}: only in --mode zookeeper (KRaft's Raft epoch is "
                    "persisted by every voter, and a leader's records commit only in its epoch)"
                )
        blind = {"unconditional_write", "partition_version_only"} <= set(self.bugs)
        if blind:
            problems.append("unconditional_write and partition_version_only exclude each other")
        if problems:
            raise SpecError("; ".join(problems))

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.brokers + 1))


@attrs.frozen(slots=True, cache_hash=True)
class PartitionState:
    """A partition's leadership as the store holds it (the state znode's leader, leader_epoch
    and isr) and as a controller context caches it."""

    leader: int
    """The partition's leader, NONE when it has none."""
    leader_epoch: int
    """The partition's leader epoch, bumped by every leader change (NIL: never elected)."""
    isr: frozenset[int]
    """The partition's in-sync replicas."""

    def describe(self) -> str:
        leader = "-" if self.leader == NONE else str(self.leader)
        epoch = "-" if self.leader_epoch == NIL else str(self.leader_epoch)
        return f"(e{epoch},L{leader},{_set(self.isr)})"

    def key(self) -> tuple[Any, ...]:
        return (self.leader_epoch, self.leader, tuple(sorted(self.isr)))


@attrs.frozen(slots=True, cache_hash=True)
class Store:
    """The coordination store: ZooKeeper, or under KRaft the committed metadata log."""

    sessions: frozenset[int]
    """Brokers whose session is live; each holds its ephemeral ``/brokers/ids/N``."""
    controller: int
    """``/controller``: the broker id it names, or NONE when the node does not exist."""
    controller_epoch: int
    """``/controller_epoch``'s data (KRaft: the Raft epoch)."""
    epoch_version: int
    """``/controller_epoch``'s zkVersion. Kafka creates the node holding 0 at version 0 and
    every election sets it once, so the version moves with the epoch; the writes check the
    version, as Kafka's do."""
    partitions: tuple[PartitionState, ...]
    """Each partition's state znode ``/brokers/topics/T/partitions/P/state``, by index."""

    def key(self) -> tuple[Any, ...]:
        return (
            tuple(sorted(self.sessions)),
            self.controller,
            self.controller_epoch,
            self.epoch_version,
            tuple(p.key() for p in self.partitions),
        )


@attrs.frozen(slots=True, cache_hash=True)
class LocalReplica:
    """What a broker last applied for one partition: the leader epoch and the leader
    (itself: it acts as leader; NONE: it was stopped, or the partition has no leader)."""

    leader_epoch: int
    """The leader epoch of the last LeaderAndIsr (or StopReplica) it applied."""
    leader: int
    """The leader that request named: itself, another broker, or NONE."""


@attrs.frozen(slots=True, cache_hash=True)
class Broker:
    """One broker: its replica manager's view, and its controller's while it believes it is
    the controller."""

    controller_epoch: int
    """``ReplicaManager.controllerEpoch``: the controller epoch of the last request applied."""
    replicas: tuple[LocalReplica, ...]
    """``replicas[p]``: what it last applied for partition ``p``."""
    active_epoch: int = NO_EPOCH
    """``KafkaController.epoch`` while this broker believes it is the controller; NO_EPOCH
    when it does not."""
    epoch_version: int = 0
    """``controllerContext.epochZkVersion``: the ``/controller_epoch`` version its writes
    expect (0 when not controller)."""
    context: tuple[PartitionState, ...] = ()
    """The controller context's partition states (empty when not controller)."""

    @property
    def active(self) -> bool:
        return self.active_epoch != NO_EPOCH

    def key(self) -> tuple[Any, ...]:
        return (
            self.controller_epoch,
            tuple((r.leader_epoch, r.leader) for r in self.replicas),
            self.active_epoch,
            self.epoch_version,
            tuple(p.key() for p in self.context),
        )


@attrs.frozen(slots=True, cache_hash=True)
class Request:
    """A request from a controller to brokers, carrying the controller's epoch.

    LeaderAndIsr (partition, leader, leader epoch) and UpdateMetadata go to every broker (a
    partition's replicas are all the brokers here); StopReplica (partition, leader epoch,
    KIP-570) goes to ``broker``.
    """

    kind: str
    """LeaderAndIsr, UpdateMetadata or StopReplica."""
    controller_epoch: int
    """The sending controller's epoch: what brokers fence a zombie controller by."""
    partition: int = NONE
    """The partition (LeaderAndIsr, StopReplica)."""
    leader: int = NONE
    """The leader it names (LeaderAndIsr)."""
    leader_epoch: int = NIL
    """The partition's leader epoch it carries (LeaderAndIsr, StopReplica)."""
    broker: int = NONE
    """The broker a StopReplica is addressed to."""

    def describe(self) -> str:
        if self.kind == UPDATE_METADATA:
            return f"UM c{self.controller_epoch}"
        leader = "-" if self.leader == NONE else str(self.leader)
        if self.kind == LEADER_AND_ISR:
            return f"LAI c{self.controller_epoch} p{self.partition} L{leader} e{self.leader_epoch}"
        return f"SR c{self.controller_epoch} p{self.partition} b{self.broker} e{self.leader_epoch}"

    def key(self) -> tuple[Any, ...]:
        return (
            KINDS.index(self.kind),
            self.controller_epoch,
            self.partition,
            self.leader,
            self.leader_epoch,
            self.broker,
        )

    def addressed_to(self, b: int) -> bool:
        return self.kind != STOP_REPLICA or self.broker == b


@attrs.frozen(slots=True, cache_hash=True)
class State:
    """The cluster: the coordination store, every broker, and every request a controller
    sent."""

    store: Store
    """The coordination store (ZooKeeper, or KRaft's committed metadata log)."""
    brokers: tuple[Broker, ...]
    """``brokers[i]`` is broker ``i + 1``."""
    requests: frozenset[Request]
    """Every request a controller ever sent; any may be delivered at any time, again or
    never."""
    writes: frozenset[tuple[int, int]]
    """Ghost: (``/controller_epoch`` when the write landed, writer) per successful write."""
    expiries: int = 0
    """Sessions expired so far (the fault budget ``Params.max_expiries``)."""

    def broker(self, b: int) -> Broker:
        return self.brokers[b - 1]


def _set(ids: frozenset[int]) -> str:
    return "{" + ",".join(str(i) for i in sorted(ids)) + "}"


def _but(s: State, **changes: Any) -> State:
    """``s`` with some fields replaced (a fast ``attrs.evolve`` for the hot path)."""
    return State(
        changes.get("store", s.store),
        changes.get("brokers", s.brokers),
        changes.get("requests", s.requests),
        changes.get("writes", s.writes),
        changes.get("expiries", s.expiries),
    )


def _with_broker(brokers: tuple[Broker, ...], b: int, new: Broker) -> tuple[Broker, ...]:
    out = list(brokers)
    out[b - 1] = new
    return tuple(out)


def _with_partition(
    parts: tuple[PartitionState, ...], p: int, new: PartitionState
) -> tuple[PartitionState, ...]:
    out = list(parts)
    out[p] = new
    return tuple(out)


def _resigned(broker: Broker) -> Broker:
    """``onControllerResignation``: the broker forgets its controller epoch and context."""
    return Broker(broker.controller_epoch, broker.replicas)


@attrs.frozen
class Decision:
    """A change of one partition's state a controller decides from its context."""

    kind: str  # "elect" or "shrink"
    broker: int
    """The elected leader, or the replica removed from the ISR."""
    new: PartitionState


class Controller(SignatureSymmetry):
    """The controller's election and fencing. See the module docstring."""

    name = "controller"

    def __init__(self, params: Params | None = None) -> None:
        self.p = params or Params()
        self.ids = self.p.ids
        self.parts = tuple(range(self.p.partitions))
        self.bugs = self.p.bugs
        self.kraft = self.p.mode == "kraft"
        self._broker_args = tuple((b,) for b in self.ids)
        self._kinds_cache: dict[frozenset[Request], dict[str, tuple[Request, ...]]] = {}

    # --- initial state -------------------------------------------------------------------

    def init(self) -> Iterator[State]:
        """A cluster starting up: every broker registered (its session live), no controller
        yet, ``/controller_epoch`` at 0, and each partition created with every broker in
        its ISR but no leader elected (``NewPartition``); brokers have applied nothing."""
        everyone = frozenset(self.ids)
        fresh = PartitionState(NONE, NIL, everyone)
        replica = LocalReplica(NIL, NONE)
        broker = Broker(NO_EPOCH, tuple(replica for _ in self.parts))
        yield State(
            store=Store(everyone, NONE, NO_EPOCH, 0, tuple(fresh for _ in self.parts)),
            brokers=tuple(broker for _ in self.ids),
            requests=frozenset(),
            writes=frozenset(),
        )

    def enabled_actions(self) -> tuple[Any, ...]:
        """``partition_version_conflict`` only where two controllers can pass the
        ``/controller_epoch`` check: with the correct check, the controller whose version
        matches is the last one elected, and nobody else has written since it read. No
        ``reject_stale_request`` where brokers accept stale epochs, no ``write_refused``
        where the store does not check ``/controller_epoch``."""
        skip = set()
        if not self.bugs & {"partition_version_only", "epoch_not_persisted"}:
            skip.add("partition_version_conflict")
        if "accept_stale_controller_epoch" in self.bugs:
            skip.add("reject_stale_request")
        if self.bugs & {"unconditional_write", "partition_version_only"}:
            skip.add("write_refused")
        return tuple(d for d in self._actions if d.name not in skip)

    # --- helpers -------------------------------------------------------------------------

    def decisions(self, s: State, b: int, p: int) -> list[Decision]:
        """What controller ``b`` decides for partition ``p`` from its context, reading the
        live registrations (``/brokers/ids``) from the store, as ``KafkaController``'s
        ``onBrokerFailure`` does (the reads of a zombie go through a new session, as its
        writes do in KAFKA-6082):

        - *elect*: the leader's registration is gone (or there is no leader) and an ISR
          member is registered: that member leads, in the next leader epoch, with the
          registered ISR members as ISR (``OfflinePartitionLeaderElectionStrategy``);
        - *shrink*: an ISR member's registration is gone and no election is pending: it
          leaves the ISR in the next leader epoch (``removeReplicasFromIsr``). If it led,
          no member was left to elect: the partition has no leader, and the last member
          stays in the ISR. In ZooKeeper-era Kafka every controller write bumps the leader
          epoch (``LeaderAndIsr.newLeaderAndIsr``).
        """
        ctx = s.broker(b).context[p]
        if ctx.leader_epoch + 1 > self.p.max_leader_epoch:
            return []
        live = s.store.sessions
        epoch = ctx.leader_epoch + 1
        live_isr = ctx.isr & live
        leader_gone = ctx.leader == NONE or ctx.leader not in live
        out = []
        if leader_gone and live_isr:
            for n in sorted(live_isr):
                out.append(Decision("elect", n, PartitionState(n, epoch, live_isr)))
            return out
        for r in sorted(ctx.isr - live):
            if r == ctx.leader:
                isr = ctx.isr if len(ctx.isr) == 1 else ctx.isr - {r}
                out.append(Decision("shrink", r, PartitionState(NONE, epoch, isr)))
            elif len(ctx.isr) > 1:
                out.append(Decision("shrink", r, PartitionState(ctx.leader, epoch, ctx.isr - {r})))
        return out

    def write_outcome(self, s: State, b: int, p: int) -> str:
        """How the store answers controller ``b``'s conditional write of partition ``p``:
        one ZooKeeper multi-op checking ``/controller_epoch``'s version (``CheckOp``, since
        Kafka 2.2) and setting the partition znode at the version the controller last saw
        (``SetDataOp``). The partition znode's version moves with the leader epoch here,
        since every controller write bumps both."""
        if "unconditional_write" in self.bugs:
            return OK
        broker = s.broker(b)
        checks_epoch = "partition_version_only" not in self.bugs
        if checks_epoch and s.store.epoch_version != broker.epoch_version:
            return MOVED
        if s.store.partitions[p].leader_epoch != broker.context[p].leader_epoch:
            return CONFLICT
        return OK

    def accepts(self, broker: Broker, req: Request) -> bool:
        """The broker-side fence (``ReplicaManager.becomeLeaderOrFollower``,
        ``stopReplicas``, ``maybeUpdateMetadataCache``): a request from an older controller
        epoch than the last one applied is rejected with STALE_CONTROLLER_EPOCH."""
        if "accept_stale_controller_epoch" in self.bugs:
            return True
        return req.controller_epoch >= broker.controller_epoch

    def _write(self, s: State, b: int, p: int, new: PartitionState, stopped: int) -> State:
        """A successful write: the store, the writer's context, the requests it sends (a
        LeaderAndIsr to the partition's replicas, and a StopReplica to a replica taken out
        of the ISR), and the ghost record of who wrote in which controller epoch."""
        broker = s.broker(b)
        store = s.store
        ce = broker.active_epoch
        sent = {Request(LEADER_AND_ISR, ce, p, new.leader, new.leader_epoch)}
        if stopped != NONE:
            sent.add(Request(STOP_REPLICA, ce, p, NONE, new.leader_epoch, stopped))
        new_broker = Broker(
            broker.controller_epoch,
            broker.replicas,
            broker.active_epoch,
            broker.epoch_version,
            _with_partition(broker.context, p, new),
        )
        new_store = Store(
            store.sessions,
            store.controller,
            store.controller_epoch,
            store.epoch_version,
            _with_partition(store.partitions, p, new),
        )
        return State(
            new_store,
            _with_broker(s.brokers, b, new_broker),
            s.requests | sent,
            s.writes | {(store.controller_epoch, b)},
            s.expiries,
        )

    # --- argument domains ----------------------------------------------------------------

    def _each_broker(self, s: State) -> tuple[tuple[int], ...]:
        return self._broker_args

    def _controllers(self, s: State) -> list[tuple[int]]:
        return [(b,) for b in self.ids if s.brokers[b - 1].active_epoch != NO_EPOCH]

    def _controller_partitions(self, s: State) -> list[tuple[int, int]]:
        return [
            (b, p)
            for b in self.ids
            if s.brokers[b - 1].active_epoch != NO_EPOCH
            for p in self.parts
        ]

    def _elections(self, s: State) -> list[tuple[int, int, int]]:
        return [
            (b, p, d.broker)
            for b, p in self._controller_partitions(s)
            for d in self.decisions(s, b, p)
            if d.kind == "elect"
        ]

    def _shrinks(self, s: State) -> list[tuple[int, int, int]]:
        return [
            (b, p, d.broker)
            for b, p in self._controller_partitions(s)
            for d in self.decisions(s, b, p)
            if d.kind == "shrink"
        ]

    def _by_kind(self, s: State) -> dict[str, tuple[Request, ...]]:
        """The requests sent so far, by kind, in a fixed order (cached per request set: the
        same sets recur in many states)."""
        found = self._kinds_cache.get(s.requests)
        if found is None:
            if len(self._kinds_cache) > 100_000:
                self._kinds_cache.clear()
            ordered = sorted(s.requests, key=Request.key)
            found = {kind: tuple(r for r in ordered if r.kind == kind) for kind in KINDS}
            self._kinds_cache[s.requests] = found
        return found

    def _deliveries_of(self, s: State, kind: str) -> list[tuple[int, Request]]:
        """(broker, request) pairs where the broker would apply the request: domains skip
        pairs whose action is plainly disabled only to save work; the actions check their
        whole guard themselves."""
        out = []
        for m in self._by_kind(s)[kind]:
            for b in self.ids:
                broker = s.brokers[b - 1]
                if not m.addressed_to(b) or not self.accepts(broker, m):
                    continue
                if m.controller_epoch == broker.controller_epoch:
                    rep = broker.replicas[m.partition] if kind != UPDATE_METADATA else None
                    if rep is None or m.leader_epoch <= rep.leader_epoch:
                        continue
                out.append((b, m))
        return out

    def _leader_and_isr_deliveries(self, s: State) -> list[tuple[int, Request]]:
        return self._deliveries_of(s, LEADER_AND_ISR)

    def _stop_replica_deliveries(self, s: State) -> list[tuple[int, Request]]:
        return self._deliveries_of(s, STOP_REPLICA)

    def _update_metadata_deliveries(self, s: State) -> list[tuple[int, Request]]:
        return self._deliveries_of(s, UPDATE_METADATA)

    def _stale_deliveries(self, s: State) -> list[tuple[int, Request]]:
        if "accept_stale_controller_epoch" in self.bugs:
            return []
        out = []
        for kind in KINDS:
            for m in self._by_kind(s)[kind]:
                for b in self.ids:
                    broker = s.brokers[b - 1]
                    if m.addressed_to(b) and m.controller_epoch < broker.controller_epoch:
                        out.append((b, m))
        return out

    # --- the coordination store: sessions --------------------------------------------------

    @action(domain="_each_broker", kind=Kind.FAULT)
    def session_expires(self, s: State, b: int) -> State | None:
        """ZooKeeper expires broker ``b``'s session after ``zookeeper.session.timeout.ms``
        without heartbeats: ``b`` was paused (a long GC), cut off from ZooKeeper, or only
        slow (false suspicion: any session may expire). Its ephemeral znodes go with it:
        ``/brokers/ids/b`` and, if ``b`` is the controller, ``/controller``, which fires the
        other brokers' watches. ``b`` itself is not told and keeps acting on what it
        believes. (KRaft: the broker misses ``broker.session.timeout.ms`` of heartbeats and
        is fenced (KIP-631), or the active controller loses the quorum.)"""
        store = s.store
        if b not in store.sessions:
            return None
        if self.p.max_expiries is not None and s.expiries >= self.p.max_expiries:
            return None
        controller = NONE if store.controller == b else store.controller
        new_store = Store(
            store.sessions - {b},
            controller,
            store.controller_epoch,
            store.epoch_version,
            store.partitions,
        )
        return _but(s, store=new_store, expiries=s.expiries + 1)

    @action(domain="_each_broker", kind=Kind.HEAL)
    def reconnect(self, s: State, b: int) -> State | None:
        """Broker ``b``'s ZooKeeper client reconnects, finds its session expired, opens a new
        one and registers ``/brokers/ids/b`` again (a new znode whose creation zxid is the
        new broker epoch, KIP-380). Whether the controller in ``b`` has processed the
        expiry yet is a separate step (``resign``): in between, a zombie's requests go
        through the new session -- the window KAFKA-6082 closed. Healing is never
        bounded."""
        store = s.store
        if b in store.sessions:
            return None
        new_store = Store(
            store.sessions | {b},
            store.controller,
            store.controller_epoch,
            store.epoch_version,
            store.partitions,
        )
        return _but(s, store=new_store)

    # --- the controller: election and resignation ---------------------------------------

    @action(domain="_each_broker")
    def elect_controller(self, s: State, b: int) -> State | None:
        """Broker ``b`` wins the controller election (``KafkaController.elect``,
        ``registerControllerAndIncrementControllerEpoch``): with ``/controller`` absent and
        a live session, one ZooKeeper multi-op creates the ephemeral ``/controller`` naming
        ``b`` and sets ``/controller_epoch`` to its value + 1, conditional on the version it
        read ("first start 1, +1 on every re-election"). Any broker with a session may win.
        It then reads every partition state into its controller context and, as
        ``onControllerFailover`` does, sends UpdateMetadata to every broker and a
        LeaderAndIsr for every partition that has a leader epoch, all with its new epoch.
        (KRaft: a voter wins a majority and leads the metadata quorum in Raft epoch + 1,
        KIP-595; its first act is to replay the committed log.)"""
        store = s.store
        broker = s.broker(b)
        if b not in store.sessions or store.controller != NONE or broker.active:
            return None
        if "epoch_not_persisted" in self.bugs:
            epoch, version = 1, 1
        else:
            if store.controller_epoch >= self.p.max_controller_epoch:
                return None
            epoch, version = store.controller_epoch + 1, store.epoch_version + 1
        sent = {Request(UPDATE_METADATA, epoch)}
        for p, part in enumerate(store.partitions):
            if part.leader_epoch != NIL:
                sent.add(Request(LEADER_AND_ISR, epoch, p, part.leader, part.leader_epoch))
        new_broker = Broker(
            broker.controller_epoch, broker.replicas, epoch, version, store.partitions
        )
        new_store = Store(store.sessions, b, epoch, version, store.partitions)
        brokers = _with_broker(s.brokers, b, new_broker)
        return _but(s, store=new_store, brokers=brokers, requests=s.requests | sent)

    @action(domain="_controllers")
    def resign(self, s: State, b: int) -> State | None:
        """A controller learns it no longer is one and resigns
        (``onControllerResignation``): the watch on ``/controller`` fires with another
        broker's id (``ControllerChange``), or it processes the expiry of its session
        (``Expire``) and finds ``/controller`` gone. Until then, a paused or cut-off
        controller keeps believing it is in charge. (KRaft: the old leader hears of a
        higher Raft epoch and becomes a follower.)"""
        broker = s.broker(b)
        if not broker.active or s.store.controller == b:
            return None
        return _but(s, brokers=_with_broker(s.brokers, b, _resigned(broker)))

    # --- the controller: partition state ---------------------------------------------------

    def _decision(self, s: State, b: int, p: int, kind: str, arg: int) -> Decision | None:
        if not s.broker(b).active:
            return None
        for d in self.decisions(s, b, p):
            if d.kind == kind and d.broker == arg:
                return d
        return None

    @action(domain="_elections")
    def elect_leader(self, s: State, b: int, p: int, n: int) -> State | None:
        """Controller ``b`` elects ``n`` leader of partition ``p`` because the leader's
        registration is gone (``onBrokerFailure`` -> ``OfflinePartition`` -> online
        election from the live ISR): a conditional write of the partition state with the
        next leader epoch, then LeaderAndIsr with ``b``'s controller epoch. A zombie may try
        this on its stale context; the write succeeds only if the store's check passes
        (``write_outcome``)."""
        d = self._decision(s, b, p, "elect", n)
        if d is None or self.write_outcome(s, b, p) != OK:
            return None
        return self._write(s, b, p, d.new, NONE)

    @action(domain="_shrinks")
    def shrink_isr(self, s: State, b: int, p: int, r: int) -> State | None:
        """Controller ``b`` takes ``r``, whose registration is gone, out of partition ``p``'s
        ISR (``OfflineReplica``: ``removeReplicasFromIsr``) in the next leader epoch, and
        sends LeaderAndIsr to the replicas and StopReplica to ``r``. Kafka has no channel
        to an unregistered broker, so only a falsely suspected ``r`` could get it here, as
        it does in a controlled shutdown: more behaviours than Kafka, not fewer."""
        d = self._decision(s, b, p, "shrink", r)
        if d is None or self.write_outcome(s, b, p) != OK:
            return None
        return self._write(s, b, p, d.new, r)

    @action(domain="_controller_partitions")
    def write_refused(self, s: State, b: int, p: int) -> State | None:
        """A zombie's write is refused by the store: controller ``b`` has a decision to
        write for partition ``p``, but ``/controller_epoch``'s version is no longer the one
        it set when elected (BADVERSION on the multi-op's ``CheckOp``, KAFKA-6082, Kafka
        2.2). ``ControllerMovedException``: ``b`` resigns. (KRaft: its records cannot
        commit once a higher Raft epoch exists; it learns of the epoch and steps down.)"""
        if not s.broker(b).active or not self.decisions(s, b, p):
            return None
        if self.write_outcome(s, b, p) != MOVED:
            return None
        broker = s.broker(b)
        return _but(s, brokers=_with_broker(s.brokers, b, _resigned(broker)))

    @action(domain="_controller_partitions")
    def partition_version_conflict(self, s: State, b: int, p: int) -> State | None:
        """Controller ``b``'s write passes the ``/controller_epoch`` check but the
        partition znode's version has moved (someone else wrote it): BADVERSION on the
        ``SetDataOp``; the controller reads the partition state again and retries
        (``updateLeaderAndIsr``'s partitions to retry). Reachable only when two controllers
        pass the epoch check (the broken variants)."""
        if not s.broker(b).active or not self.decisions(s, b, p):
            return None
        if self.write_outcome(s, b, p) != CONFLICT:
            return None
        broker = s.broker(b)
        new_broker = Broker(
            broker.controller_epoch,
            broker.replicas,
            broker.active_epoch,
            broker.epoch_version,
            _with_partition(broker.context, p, s.store.partitions[p]),
        )
        return _but(s, brokers=_with_broker(s.brokers, b, new_broker))

    # --- brokers: applying and rejecting requests ------------------------------------------

    def _applied(self, s: State, b: int, m: Request) -> State | None:
        """Broker ``b`` after applying ``m`` (None if ``m`` is rejected or changes nothing):
        the request's controller epoch becomes the broker's, whatever its partitions say."""
        broker = s.broker(b)
        if not m.addressed_to(b) or not self.accepts(broker, m):
            return None
        replicas = broker.replicas
        if m.kind != UPDATE_METADATA:
            rep = replicas[m.partition]
            if m.leader_epoch > rep.leader_epoch:
                if m.kind == LEADER_AND_ISR:
                    new_rep = LocalReplica(m.leader_epoch, m.leader)
                else:
                    new_rep = LocalReplica(rep.leader_epoch, NONE)
                replicas = tuple(new_rep if i == m.partition else r for i, r in enumerate(replicas))
        if m.controller_epoch == broker.controller_epoch and replicas == broker.replicas:
            return None
        new = Broker(
            m.controller_epoch,
            replicas,
            broker.active_epoch,
            broker.epoch_version,
            broker.context,
        )
        return _but(s, brokers=_with_broker(s.brokers, b, new))

    @action(domain="_leader_and_isr_deliveries")
    def apply_leader_and_isr(self, s: State, b: int, m: Request) -> State | None:
        """Broker ``b`` applies a LeaderAndIsr (``becomeLeaderOrFollower``): unless its
        controller epoch is older than ``b``'s (STALE_CONTROLLER_EPOCH), ``b`` takes the
        request's controller epoch, and if the partition's leader epoch is newer than its
        own, becomes leader or follower in it (``Partition.makeLeader`` /
        ``makeFollower``; an older or equal leader epoch is ignored for that partition)."""
        if m.kind != LEADER_AND_ISR:
            return None
        return self._applied(s, b, m)

    @action(domain="_stop_replica_deliveries")
    def apply_stop_replica(self, s: State, b: int, m: Request) -> State | None:
        """Broker ``b`` applies a StopReplica addressed to it (``ReplicaManager.stopReplicas``):
        unless stale (STALE_CONTROLLER_EPOCH), it takes the controller epoch and, if the
        request's leader epoch is newer than its own (KIP-570), stops its replica: it no
        longer leads nor follows the partition."""
        if m.kind != STOP_REPLICA:
            return None
        return self._applied(s, b, m)

    @action(domain="_update_metadata_deliveries")
    def apply_update_metadata(self, s: State, b: int, m: Request) -> State | None:
        """Broker ``b`` applies an UpdateMetadata (``maybeUpdateMetadataCache``): unless
        stale (STALE_CONTROLLER_EPOCH), it takes the controller epoch. The metadata cache's
        contents (what clients are told) are the replication spec's business, not modelled
        here; what matters is that a new controller's UpdateMetadata fences the old one."""
        if m.kind != UPDATE_METADATA:
            return None
        return self._applied(s, b, m)

    @action(domain="_stale_deliveries")
    def reject_stale_request(self, s: State, b: int, m: Request) -> State | None:
        """Broker ``b`` rejects a request from an older controller epoch than the last one it
        applied: STALE_CONTROLLER_EPOCH in the response, and nothing changes (a stutter).
        This is how a brain split is survived: the zombie's requests arrive and are
        ignored. (KRaft: FENCED_LEADER_EPOCH.)"""
        if not m.addressed_to(b) or self.accepts(s.broker(b), m):
            return None
        return s

    # --- invariants ----------------------------------------------------------------------

    @transition_property
    def no_stale_controller_epoch_applied(self, before: State, step: Step, after: State) -> bool:
        """No broker applies a request from a controller epoch older than one it has applied:
        ``ReplicaManager.controllerEpoch`` never goes back (the STALE_CONTROLLER_EPOCH check
        in ``becomeLeaderOrFollower``, ``stopReplicas`` and ``maybeUpdateMetadataCache``)."""
        if after.brokers is before.brokers:
            return True
        return all(
            a is b or a.controller_epoch >= b.controller_epoch
            for a, b in zip(after.brokers, before.brokers, strict=True)
        )

    @invariant
    def one_controller_writes_per_epoch(self, s: State) -> bool:
        """At most one controller's writes succeed per controller epoch: every partition-state
        write that lands while ``/controller_epoch`` holds E comes from one broker, the one
        elected with E. This is what KAFKA-6082 (Kafka 2.2) made the store enforce."""
        writers: dict[int, int] = {}
        return all(writers.setdefault(epoch, writer) == writer for epoch, writer in s.writes)

    @transition_property
    def leader_epochs_only_grow(self, before: State, step: Step, after: State) -> bool:
        """A partition's leader epoch only grows, in the store and on every broker: every
        controller write bumps it (``LeaderAndIsr.newLeaderAndIsr``), and a broker ignores a
        LeaderAndIsr whose leader epoch is not newer than its own."""
        if after.store.partitions is not before.store.partitions:
            for new, old in zip(after.store.partitions, before.store.partitions, strict=True):
                if new.leader_epoch < old.leader_epoch:
                    return False
        if after.brokers is before.brokers:
            return True
        for ab, bb in zip(after.brokers, before.brokers, strict=True):
            if ab.replicas is bb.replicas:
                continue
            for rnew, rold in zip(ab.replicas, bb.replicas, strict=True):
                if rnew.leader_epoch < rold.leader_epoch:
                    return False
        return True

    @invariant
    def one_leader_per_leader_epoch(self, s: State) -> bool:
        """No two brokers act as leader of a partition in the same leader epoch: each leader
        epoch of a partition is handed out once, by one successful write, and the leader
        epoch fences leaders (KIP-101, KIP-320) only if that holds."""
        for p in self.parts:
            seen: set[int] = set()
            for b in self.ids:
                rep = s.brokers[b - 1].replicas[p]
                if rep.leader == b:
                    if rep.leader_epoch in seen:
                        return False
                    seen.add(rep.leader_epoch)
        return True

    # --- liveness ---------------------------------------------------------------------------

    @eventually()
    def zombie_steps_down(self, s: State) -> bool:
        """A zombie controller eventually steps down: infinitely often, every broker that
        believes it is the controller is the one ``/controller`` names. It holds because the
        controller's event thread processes the ``ControllerChange`` watch or its own
        session's ``Expire`` whenever one is pending (weak fairness of ``resign``); until
        then a zombie may act, and only the fences stop it."""
        return all(s.store.controller == b for b in self.ids if s.brokers[b - 1].active)

    def fairness(self) -> tuple[Fair, ...]:
        """A controller keeps processing its events: ``resign`` is weakly fair per broker
        (unless ``zombie_never_resigns``). Elections, session expiries and reconnections
        are the environment's and the bounds' to decide: not fair."""
        if "zombie_never_resigns" in self.bugs:
            return ()
        return (Fair("resign"),)

    # --- "sometimes": the model is not vacuous --------------------------------------------

    @sometimes_transition
    def controller_failover(self, before: State, step: Step, after: State) -> bool:
        """A controller failover happens: a controller is elected after an earlier one (whose
        session expired, taking ``/controller`` with it)."""
        return step.action == "elect_controller" and before.store.controller_epoch != NO_EPOCH

    @sometimes
    def brain_split(self, s: State) -> bool:
        """Two brokers believe they are the controller at once (脑裂): the old one is paused
        or cut off and has not learnt that another was elected."""
        return sum(1 for broker in s.brokers if broker.active) >= 2

    @sometimes_transition
    def zombie_request_rejected(self, before: State, step: Step, after: State) -> bool:
        """A zombie controller's request arrives and is rejected: a broker refuses with
        STALE_CONTROLLER_EPOCH a request whose sender still believes it is the controller of
        that epoch."""
        if step.action != "reject_stale_request":
            return False
        m = dict(step.args)["m"]
        return any(broker.active_epoch == m.controller_epoch for broker in before.brokers)

    @sometimes_transition
    def zombie_write_refused(self, before: State, step: Step, after: State) -> bool:
        """A zombie's store write is refused: BADVERSION on ``/controller_epoch``, and the
        zombie resigns."""
        return step.action == "write_refused"

    @sometimes_transition
    def leader_moves(self, before: State, step: Step, after: State) -> bool:
        """A partition's leadership moves: a controller elects a new leader after the
        previous leader's registration went away."""
        if step.action != "elect_leader":
            return False
        p = dict(step.args)["p"]
        return before.store.partitions[p].leader_epoch != NIL

    def applicable_sometimes(self) -> tuple[Any, ...]:
        skip = set()
        if "accept_stale_controller_epoch" in self.bugs:
            skip.add("ZombieRequestRejected")
        if self.bugs & {"unconditional_write", "partition_version_only"}:
            skip.add("ZombieWriteRefused")
        if "epoch_not_persisted" in self.bugs:
            skip.update({"ZombieRequestRejected", "ZombieWriteRefused"})
        if self.p.max_controller_epoch < 2:
            skip.update({"ControllerFailover", "BrainSplit", "ZombieRequestRejected"})
            skip.add("ZombieWriteRefused")
        if self.p.max_leader_epoch < 1:
            skip.add("LeaderMoves")
        return tuple(d for d in self._sometimes if d.name not in skip)

    # --- symmetry: brokers are interchangeable ---------------------------------------------

    def symmetry_permutations(self) -> list[tuple[int, ...]]:
        return all_permutations(self.ids)

    def permute(self, s: State, perm: tuple[int, ...]) -> State:
        def m(b: int) -> int:
            return b if b == NONE else perm[b - 1]

        def mset(ids: frozenset[int]) -> frozenset[int]:
            return frozenset(perm[i - 1] for i in ids)

        def mpart(ps: PartitionState) -> PartitionState:
            return PartitionState(m(ps.leader), ps.leader_epoch, mset(ps.isr))

        store = s.store
        brokers: list[Broker | None] = [None] * len(self.ids)
        for b, broker in zip(self.ids, s.brokers, strict=True):
            brokers[perm[b - 1] - 1] = Broker(
                broker.controller_epoch,
                tuple(LocalReplica(r.leader_epoch, m(r.leader)) for r in broker.replicas),
                broker.active_epoch,
                broker.epoch_version,
                tuple(mpart(ps) for ps in broker.context),
            )
        return State(
            Store(
                mset(store.sessions),
                m(store.controller),
                store.controller_epoch,
                store.epoch_version,
                tuple(mpart(ps) for ps in store.partitions),
            ),
            tuple(brokers),  # type: ignore[arg-type]
            frozenset(
                Request(
                    r.kind,
                    r.controller_epoch,
                    r.partition,
                    m(r.leader),
                    r.leader_epoch,
                    m(r.broker),
                )
                for r in s.requests
            ),
            frozenset((epoch, m(w)) for epoch, w in s.writes),
            s.expiries,
        )

    def symmetry_signature(self, s: State, b: int) -> tuple[Any, ...]:
        """What broker ``b`` looks like without naming any broker: invariant under renaming,
        so sorting by it puts any two states of one orbit in the same order."""
        broker = s.brokers[b - 1]
        store = s.store

        def rel(leader: int) -> int:
            return 0 if leader == NONE else (1 if leader == b else 2)

        return (
            b in store.sessions,
            store.controller == b,
            broker.controller_epoch,
            tuple((r.leader_epoch, rel(r.leader)) for r in broker.replicas),
            broker.active_epoch,
            broker.epoch_version,
            tuple((c.leader_epoch, rel(c.leader), b in c.isr, len(c.isr)) for c in broker.context),
            tuple((ps.leader_epoch, rel(ps.leader), b in ps.isr) for ps in store.partitions),
            tuple(
                sorted(
                    (r.key()[:3], r.leader_epoch, r.leader == b, r.broker == b)
                    for r in s.requests
                    if r.leader == b or r.broker == b
                )
            ),
            tuple(sorted(epoch for epoch, w in s.writes if w == b)),
        )

    def sort_key(self, s: State) -> tuple[Any, ...]:
        return (
            s.store.key(),
            tuple(b.key() for b in s.brokers),
            tuple(sorted(r.key() for r in s.requests)),
            tuple(sorted(s.writes)),
            s.expiries,
        )

    # --- rendering -----------------------------------------------------------------------

    def columns(self, s: State) -> list[tuple[str, str, str]]:
        """One trace-table row: per broker, its session, the controller epoch it believes it
        holds (``C2``: it thinks it is the controller of epoch 2) and its controller
        context (the partition states it believes the store holds), the controller epoch it
        last applied (``ctl``), and per partition the leader epoch and leader it applied;
        then the store; then every request sent so far."""
        kraft = self.kraft
        cells: list[tuple[str, str, str]] = []
        for b, broker in zip(self.ids, s.brokers, strict=True):
            group = f"broker {b}"
            role = f"C{broker.active_epoch}" if broker.active else "-"
            context = " ".join(ps.describe() for ps in broker.context) if broker.active else "-"
            cells += [
                (group, "session", "yes" if b in s.store.sessions else "-"),
                (group, "role", role),
                (group, "context", context),
                (group, "ctl", str(broker.controller_epoch)),
            ]
            for p, rep in enumerate(broker.replicas):
                leader = "-" if rep.leader == NONE else str(rep.leader)
                epoch = "-" if rep.leader_epoch == NIL else str(rep.leader_epoch)
                cells.append((group, f"p{p}", f"e{epoch} L{leader}"))
        store = s.store
        group = "metadata quorum" if kraft else "ZooKeeper"
        controller = "-" if store.controller == NONE else str(store.controller)
        epoch = str(store.controller_epoch)
        if not kraft:
            epoch += f" v{store.epoch_version}"
        cells += [
            (group, "leader" if kraft else "/controller", controller),
            (group, "raft epoch" if kraft else "/controller_epoch", epoch),
        ]
        for p, part in enumerate(store.partitions):
            cells.append((group, f"p{p}", part.describe()))
        reqs = sorted(s.requests, key=Request.key)
        cells.append(("network", "requests sent", ", ".join(r.describe() for r in reqs) or "-"))
        return cells

    def short(self, s: State) -> str:
        parts = []
        for b, broker in zip(self.ids, s.brokers, strict=True):
            role = f"C{broker.active_epoch}" if broker.active else ""
            reps = "".join(f"[e{r.leader_epoch}L{r.leader}]" for r in broker.replicas)
            parts.append(f"{b}{role}:c{broker.controller_epoch}{reps}")
        store = s.store
        zk = f"zk(/c={store.controller},e{store.controller_epoch}," + ",".join(
            p.describe() for p in store.partitions
        )
        return " ".join(parts) + " " + zk + ")"

    def to_json(self, s: State) -> dict[str, Any]:
        store = s.store
        return {
            "store": {
                "sessions": sorted(store.sessions),
                "controller": store.controller,
                "controller_epoch": store.controller_epoch,
                "epoch_version": store.epoch_version,
                "partitions": [_partition_json(p) for p in store.partitions],
            },
            "brokers": {
                str(b): {
                    "controller_epoch": broker.controller_epoch,
                    "replicas": [
                        {"leader_epoch": r.leader_epoch, "leader": r.leader}
                        for r in broker.replicas
                    ],
                    "active_epoch": broker.active_epoch,
                    "epoch_version": broker.epoch_version,
                    "context": [_partition_json(p) for p in broker.context],
                }
                for b, broker in zip(self.ids, s.brokers, strict=True)
            },
            "requests": [
                {
                    "kind": r.kind,
                    "controller_epoch": r.controller_epoch,
                    "partition": r.partition,
                    "leader": r.leader,
                    "leader_epoch": r.leader_epoch,
                    "broker": r.broker,
                }
                for r in sorted(s.requests, key=Request.key)
            ],
            "writes": [list(w) for w in sorted(s.writes)],
        }


def _partition_json(p: PartitionState) -> dict[str, Any]:
    return {"leader": p.leader, "leader_epoch": p.leader_epoch, "isr": sorted(p.isr)}
