"""The coordination store: ZooKeeper as ZooKeeper-era Kafka uses it, one node of the
simulation (``STORE``) that outlives every broker.

What it holds (the znodes of ``KafkaZkClient``, each with its version):

- ``/brokers/ids/N``: one *ephemeral* registration per live broker session. A broker opens a
  session by registering (``BrokerRegistration``) and keeps it alive with heartbeats
  (``BrokerHeartbeat``: ZooKeeper's pings); the registration's creation number is the
  broker epoch (its czxid, KIP-380). The store expires a session whose heartbeats stopped
  for ``zookeeper.session.timeout.ms`` *by its own monotonic clock* (``impl.sim.clock``:
  ZooKeeper's session tracker reads ``Time.currentElapsedTime``, a ``nanoTime``), so a
  paused broker, or one cut off from the store, loses its session -- and so may a broker
  that is only slow (false suspicion). The broker is not told; it learns it when a
  heartbeat is answered ``STALE_BROKER_EPOCH`` (``SESSION_EXPIRED`` on reconnect).
- ``/controller``: *ephemeral*, naming the broker whose session holds it; it goes when that
  session ends.
- ``/controller_epoch``: *persistent*, the controller epoch and its version. The election
  (``elect``) is one atomic multi-op: create ``/controller``, set ``/controller_epoch`` to
  its value + 1 at the version read ("first start 1, +1 on every re-election",
  ``KafkaZkClient.registerControllerAndIncrementControllerEpoch``).
- each partition's state znode (leader, leader epoch, ISR; its version is the partition
  epoch) and the replica assignment; the LeaderAndIsr last *published* per partition; the
  producer-id counter (``/latest_producer_id_block``);
- ``/admin/delete_topics``: the replicas still to delete, of deleted topics and of the
  replicas a reassignment removed (``pending_deletions``), which the controller keeps asking
  to delete their logs (StopReplica) until they confirm, also after a restart of theirs or a
  controller failover (``TopicDeletionManager``).

Every operation is a method call that happens at one instant: the store is linearizable
and each multi-op atomic. The controller's partition-state writes (``write``) are
conditional on ``/controller_epoch``'s version as the writer set it when elected and on the
partition znode's version it read (Kafka 2.2, KAFKA-6082: ``checkControllerAndUpdate``
wraps every write in a multi-op with a ``CheckOp`` on ``/controller_epoch``), so a zombie
controller's write fails with BADVERSION (``ControllerMovedException``). Passing ``None``
for an expected version skips that check: the broken variants (``--bug
unconditional_write``) do.

Brokers reach the store by messages (registration, heartbeats: delayed, lost or cut off by
the network); a controller reaches it by direct calls, made only while its broker's link to
the store is open (the world decides, ``impl.world``): a cut link is ZooKeeper's
``CONNECTION_LOSS``, and the controller can neither read nor write.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import attrs

from impl import elr as elr_rules
from impl.protocol import (
    NO_LEADER,
    BrokerHeartbeat,
    BrokerHeartbeatResponse,
    BrokerRegistration,
    BrokerRegistrationResponse,
    Effects,
    Errors,
    SessionExpired,
)

__all__ = [
    "NIL_EPOCH",
    "STORE",
    "MetadataStore",
    "PartitionState",
    "WriteResult",
    "round_robin_replicas",
]

STORE = "zk"
"""The coordination store's node name."""
NIL_EPOCH = -1


def round_robin_replicas(brokers: Sequence[int], partition: int) -> tuple[int, ...]:
    """Partition ``partition``'s replicas, every broker of ``brokers`` in a rotating order:
    Kafka's rack-unaware replica assignment (``AdminUtils.assignReplicasToBrokers``, here
    from start index 0 with no shift) gives partition ``p`` the broker ``p mod n`` as its
    first, preferred replica, so the preferred leaders spread over the brokers."""
    shift = partition % len(brokers)
    return (*brokers[shift:], *brokers[:shift])


class WriteResult(enum.Enum):
    OK = "ok"
    MOVED = "moved"
    """BADVERSION on ``/controller_epoch``: another controller was elected since."""
    CONFLICT = "conflict"
    """BADVERSION on the partition znode: someone else wrote the partition since."""


@attrs.frozen
class PartitionState:
    """One partition's record in the store."""

    leader: int
    leader_epoch: int
    isr: frozenset[int]
    partition_epoch: int
    replicas: tuple[int, ...]
    elr: frozenset[int] = frozenset()
    """KIP-966's Eligible Leader Replicas (``impl.elr``): replicas out of the ISR that still
    hold every committed record. Always empty with ``eligible.leader.replicas`` off."""
    adding: frozenset[int] = frozenset()
    """KIP-455: replicas a reassignment in progress adds (``replicas`` holds the target
    replicas first, then those it removes)."""
    removing: frozenset[int] = frozenset()
    """KIP-455: replicas a reassignment in progress removes."""

    @property
    def target(self) -> tuple[int, ...]:
        """The replicas once the reassignment completes (``replicas`` when none runs)."""
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        """The replicas before the reassignment (what cancelling it goes back to)."""
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    def __attrs_post_init__(self) -> None:
        assert self.leader == NO_LEADER or self.leader in self.isr, self
        assert self.isr <= frozenset(self.replicas), self
        assert self.elr <= frozenset(self.replicas) and not (self.elr & self.isr), self
        assert self.adding | self.removing <= frozenset(self.replicas), self
        assert not (self.adding & self.removing), self


class MetadataStore:
    """The store; see the module docstring. ``session_timeout_ns`` is
    ``zookeeper.session.timeout.ms``."""

    def __init__(
        self,
        session_timeout_ns: int = 18_000_000_000,
        *,
        eligible_leader_replicas: bool = False,
        keep_elr_on_unclean_restart: bool = False,
    ) -> None:
        self.session_timeout_ns = session_timeout_ns
        self.eligible_leader_replicas = eligible_leader_replicas
        """KIP-966 on: the last ISR member's failure must be handled too (it leaves the ISR
        for the ELR) before it registers again, and registering again takes it out of
        every ISR and ELR (``impl.elr.unclean_restart``)."""
        self.keep_elr_on_unclean_restart = keep_elr_on_unclean_restart
        self.incarnations: dict[int, int] = {}
        """Broker -> the process incarnation of its last registration: a new one means the
        process restarted (KIP-966's unclean shutdown; the simulated brokers only crash)."""
        """Testing knob (``--bug stale_elr``): a re-registering broker stays in the ELR."""
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.published: dict[tuple[str, int], PartitionState] = {}
        """Per partition, the state a controller last wrote and sent as LeaderAndIsr (an
        ISR change by the leader changes ``partitions`` but publishes nothing)."""
        self.registrations: dict[int, int] = {}
        """``/brokers/ids``: broker -> broker epoch of its live session."""
        self.deadlines: dict[int, int] = {}
        """Broker -> when its session expires, on the store's monotonic clock."""
        self.failed: set[int] = set()
        """Brokers whose registration ended (session expired, process died) and which have
        not registered since: their failure may still need handling."""
        self.next_broker_epoch = 1
        self.controller = NO_LEADER
        """``/controller``: the broker holding it, or NO_LEADER when the node is absent."""
        self.controller_session = -1
        """The broker epoch (session) that owns the ephemeral ``/controller``."""
        self.controller_epoch = 0
        """``/controller_epoch``'s data (Kafka creates it holding 0)."""
        self.epoch_version = 0
        """``/controller_epoch``'s version: every election sets it once."""
        self.next_producer_id = 0
        """KIP-98: the next producer id InitProducerId hands out (never reused)."""
        self.pending_deletions: dict[tuple[str, int], frozenset[int]] = {}
        """Per partition, the brokers whose replica must still be deleted (StopReplica with
        ``delete``): every replica of a deleted topic, and the replicas a reassignment
        removed. A topic with pending deletions cannot be created again."""

    # ------------------------------------------------------------------ partitions

    def create_partition(self, topic: str, partition: int, replicas: tuple[int, ...]) -> None:
        """A new partition: no leader yet, every replica in the ISR."""
        key = (topic, partition)
        assert key not in self.partitions, key
        self.partitions[key] = PartitionState(
            NO_LEADER, NIL_EPOCH, frozenset(replicas), 0, replicas
        )

    def write(
        self,
        key: tuple[str, int],
        new: PartitionState,
        *,
        epoch_version: int | None,
        partition_epoch: int | None,
        publish: bool,
    ) -> WriteResult:
        """A controller's conditional write of a partition's state znode (one multi-op: a
        check of ``/controller_epoch``'s version, then a set of the partition znode at the
        version read). ``None`` skips a check. ``publish``: the write goes out as
        LeaderAndIsr (a new leader epoch), not an ISR change of the leader's."""
        if epoch_version is not None and epoch_version != self.epoch_version:
            return WriteResult.MOVED
        if partition_epoch is not None and partition_epoch != self.partitions[key].partition_epoch:
            return WriteResult.CONFLICT
        self.partitions[key] = new
        if publish:
            self.published[key] = new
        return WriteResult.OK

    def delete_topic(self, topic: str, *, epoch_version: int | None) -> WriteResult:
        """A controller deletes ``topic`` (one multi-op, conditional on
        ``/controller_epoch``'s version like every partition write): its partition znodes
        go, and each partition's replicas become pending deletions."""
        if epoch_version is not None and epoch_version != self.epoch_version:
            return WriteResult.MOVED
        for key in sorted(k for k in self.partitions if k[0] == topic):
            replicas = frozenset(self.partitions.pop(key).replicas)
            self.published.pop(key, None)
            self.pending_deletions[key] = self.pending_deletions.get(key, frozenset()) | replicas
        return WriteResult.OK

    def add_pending_deletion(self, key: tuple[str, int], brokers: frozenset[int]) -> None:
        """The replicas of ``key`` on ``brokers`` are to be deleted (a reassignment removed
        them)."""
        if brokers:
            self.pending_deletions[key] = self.pending_deletions.get(key, frozenset()) | brokers

    def cancel_pending_deletion(self, key: tuple[str, int], broker: int) -> None:
        """Broker ``broker`` deleted its replica of ``key`` (or hosts it again: a new
        reassignment added it back): nothing more to delete there."""
        left = self.pending_deletions.get(key, frozenset()) - {broker}
        if left:
            self.pending_deletions[key] = left
        else:
            self.pending_deletions.pop(key, None)

    def deleting(self, topic: str) -> bool:
        """Whether a deletion of ``topic`` is still in progress."""
        return any(t == topic and (t, p) not in self.partitions for t, p in self.pending_deletions)

    # ------------------------------------------------------------------ sessions

    def register(self, broker_id: int, now: int | None = None, *, unclean: bool = False) -> int:
        """Open a session and create ``/brokers/ids/N``; returns the broker epoch.
        ``unclean``: the broker process restarted since its last registration (KIP-966)."""
        epoch = self.next_broker_epoch
        self.next_broker_epoch += 1
        self.registrations[broker_id] = epoch
        if now is not None:
            self.deadlines[broker_id] = now + self.session_timeout_ns
        if unclean and self.eligible_leader_replicas:
            self._unclean_restart(broker_id)
        self.failed.discard(broker_id)
        return epoch

    def _unclean_restart(self, broker_id: int) -> None:
        """KIP-966: a broker registering after an unclean shutdown may have lost the
        unflushed tail of its log, so the controller takes it out of every ISR and ELR in
        the same step (KRaft's ``handleBrokerUncleanShutdown``). The store never learns
        that a restart was clean (the simulated brokers only crash), so every
        restart of the process counts as unclean (a conservative reading: it only narrows
        the election). A broker that registers again with the same process (its session
        expired while it was paused or cut off) kept its log and stays eligible."""
        for key in sorted(self.partitions):
            state = self.partitions[key]
            leader, isr, elr = elr_rules.unclean_restart(
                state.leader, state.isr, state.elr, broker_id, self.keep_elr_on_unclean_restart
            )
            if (leader, isr, elr) != (state.leader, state.isr, state.elr):
                self.partitions[key] = attrs.evolve(
                    state,
                    leader=leader,
                    leader_epoch=state.leader_epoch + (leader != state.leader),
                    isr=isr,
                    elr=elr,
                    partition_epoch=state.partition_epoch + 1,
                )

    def close_session(self, broker_id: int) -> bool:
        """The broker's session ends (expired, or its process died): its ephemeral znodes
        go, ``/controller`` too if it held it. Returns whether it was registered."""
        epoch = self.registrations.pop(broker_id, None)
        self.deadlines.pop(broker_id, None)
        if epoch is None:
            return False
        if self.controller == broker_id and self.controller_session == epoch:
            self.controller, self.controller_session = NO_LEADER, -1
        self.failed.add(broker_id)
        return True

    def may_register(self, broker_id: int) -> bool:
        """A broker may (re-)register once the controller handled its last failure (so a
        restarted broker is never named by a state written for its previous incarnation)
        -- or when no other broker is registered: a controller is elected only by a
        registered broker, so someone must register for the failure to be handled."""
        if broker_id not in self.failed or not self.needs_handling(broker_id):
            return True
        return not any(b != broker_id for b in self.registrations)

    def is_registered(self, broker_id: int) -> bool:
        return broker_id in self.registrations

    def needs_handling(self, broker_id: int) -> bool:
        """Whether the store still names ``broker_id`` in a way its failure must undo: as a
        leader, or as an ISR member beside others."""
        for state in self.partitions.values():
            if state.leader == broker_id:
                return True
            if broker_id in state.isr and len(state.isr) > 1:
                return True
            if broker_id in state.isr and self.eligible_leader_replicas:
                return True  # KIP-966: even the last ISR member leaves it (for the ELR)
        return False

    def expire_sessions(self, now: int) -> list[int]:
        """Sessions whose heartbeats stopped for a session timeout end (``now`` is the
        store's monotonic clock)."""
        expired = []
        for broker in sorted(self.deadlines):
            if self.deadlines[broker] < now and self.close_session(broker):
                expired.append(broker)
        return expired

    # ------------------------------------------------------------------ the controller

    def elect(self, broker_id: int, broker_epoch: int, *, persist_epoch: bool = True) -> int | None:
        """``/controller`` is created by ``broker_id`` (whose session must be the live one,
        ``broker_epoch``) and ``/controller_epoch`` set to its value + 1, in one multi-op;
        returns the new controller epoch, or None (``NODE_EXISTS``: another holds it, or
        the session is gone). ``persist_epoch=False`` is the broken variant
        ``epoch_not_persisted``: the count starts again at 1 (version 1) every time."""
        if self.controller != NO_LEADER or self.registrations.get(broker_id) != broker_epoch:
            return None
        if persist_epoch:
            self.controller_epoch += 1
            self.epoch_version += 1
        else:
            self.controller_epoch, self.epoch_version = 1, 1
        self.controller, self.controller_session = broker_id, broker_epoch
        return self.controller_epoch

    def delete_controller(self) -> bool:
        """An operator deletes ``/controller`` (``zookeeper-shell rmr /controller``, the
        usual way to force a re-election): the next broker to create it wins; the old
        controller is not told."""
        if self.controller == NO_LEADER:
            return False
        self.controller, self.controller_session = NO_LEADER, -1
        return True

    def next_id(self) -> int:
        producer_id = self.next_producer_id
        self.next_producer_id += 1
        return producer_id

    # ------------------------------------------------------------------ the store's node

    def step(self, src: str, msg: object, now: int) -> Effects:
        """A broker's registration or heartbeat arrives (``now``: the store's clock)."""
        out = Effects()
        if isinstance(msg, BrokerRegistration):
            broker = msg.broker_id
            # A new session ends the previous one: that incarnation is gone.
            self.close_session(broker)
            if not self.may_register(broker):
                error = Errors.DUPLICATE_BROKER_REGISTRATION
                out.send(src, BrokerRegistrationResponse(error, -1, self.controller_epoch))
                return out
            previous = self.incarnations.get(broker)
            self.incarnations[broker] = msg.incarnation
            restarted = previous is not None and previous != msg.incarnation
            epoch = self.register(broker, now, unclean=restarted)
            out.send(src, BrokerRegistrationResponse(Errors.NONE, epoch, self.controller_epoch))
        elif isinstance(msg, BrokerHeartbeat):
            if self.registrations.get(msg.broker_id) != msg.broker_epoch:
                out.send(src, BrokerHeartbeatResponse(Errors.STALE_BROKER_EPOCH, msg.broker_epoch))
                return out
            self.deadlines[msg.broker_id] = now + self.session_timeout_ns
            out.send(src, BrokerHeartbeatResponse(Errors.NONE, msg.broker_epoch))
        return out

    def tick(self, now: int) -> Effects:
        """Session expiry by the store's clock."""
        out = Effects()
        for broker in self.expire_sessions(now):
            out.note(SessionExpired(broker))
        return out

    def describe(self) -> str:
        parts = []
        for (topic, partition), p in sorted(self.partitions.items()):
            parts.append(
                f"{topic}-{partition}: leader={p.leader} epoch={p.leader_epoch} "
                f"isr={sorted(p.isr)} version={p.partition_epoch}"
                + (f" elr={sorted(p.elr)}" if p.elr else "")
            )
        regs = ", ".join(f"{b}@{e}" for b, e in sorted(self.registrations.items()))
        return (
            "; ".join(parts)
            + f"; registered: {regs}; controller {self.controller} epoch "
            + f"{self.controller_epoch} v{self.epoch_version}"
        )
