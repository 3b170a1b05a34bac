"""The controller and its metadata store (ZooKeeper-era ``KafkaController`` over a small
linearizable store; the same decisions KRaft's ``QuorumController`` makes).

``MetadataStore`` stands for ZooKeeper (or the KRaft metadata log): a linearizable store
that outlives any controller process. It holds, per partition, the quorum state -- leader,
leader epoch, ISR, partition epoch (the znode version) and the replica assignment -- the
broker registrations (a broker epoch per registration, KIP-380) and the controller epoch.

``Controller`` is the process that acts on it. Its decisions are *atomic*: one store write,
then the same LeaderAndIsr sent to every live replica. Each ``tick`` makes at most one
write (Kafka's controller processes one event at a time):

1. **failure detection**: a broker whose heartbeats stopped for ``session_timeout`` loses
   its registration (false suspicion included: a paused or partitioned broker is taken for
   dead, and so are brokers whose heartbeats are late by the controller's own clock when
   it jumps ahead, ``impl.sim.clock``). A crashed broker may lose it at once
   (``MetadataStore.close_session``).
2. **failure handling**, for an unregistered broker ``r`` still named by a partition:
   if ``r`` leads and a registered ISR member exists, that member leads in the next epoch
   and ``r`` leaves the ISR, in *one* write (``onBrokerFailure``); if no member is left,
   the partition has no leader (the ISR keeps its last member); if ``r`` only follows, it
   leaves the ISR (never the last member).
3. **election**, for a partition without a leader: the first registered ISR member in
   assignment order (clean); failing that, with ``unclean.leader.election.enable``, the
   first registered replica outside the ISR, with an ISR of itself (unclean).

``elect_preferred`` is the preferred-leader election (``auto.leader.rebalance.enable``): the
first replica of the assignment, when in the ISR and registered, takes over from a live
leader.

The leader changes the ISR itself with ``AlterPartition`` (KIP-497), accepted only from the
current leader in the current leader epoch and partition epoch, from its current
registration, and only adding registered brokers (KIP-841); no LeaderAndIsr follows.

Brokers register (``BrokerRegistration``) and heartbeat. A registration is refused while the
controller still has to handle the broker's previous failure (so a restarted broker is never
named by a partition state written for its previous incarnation). A new registration
gets the partitions' last *published* LeaderAndIsr again, with its new broker epoch.

Every write the controller makes is reported as a ``Published`` note: the world's record of
the LeaderAndIsr requests ever sent (the replication spec's ``requests``).

Producer ids (KIP-98's ``InitProducerId``): an idempotent producer asks the controller, which
hands out the next id of the store's counter with epoch 0. Kafka splits this in two -- the
producer asks any broker, whose ``ProducerIdManager`` hands out ids from a block it obtained
from the controller (``AllocateProducerIds``, KIP-730; ``/latest_producer_id_block`` in
ZooKeeper) -- but the point is the same: the counter lives in the metadata store, so no
controller failover ever hands an id out twice. Here the controller also answers the
clients' metadata requests, so it is the one broker clients talk to for both.
"""

from __future__ import annotations

import attrs

from impl.protocol import (
    NO_LEADER,
    AlterPartition,
    AlterPartitionResponse,
    BrokerHeartbeat,
    BrokerHeartbeatResponse,
    BrokerRegistration,
    BrokerRegistrationResponse,
    Effects,
    Errors,
    InitProducerId,
    InitProducerIdResponse,
    IsrChanged,
    LeaderAndIsr,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    Published,
    SessionExpired,
)

__all__ = [
    "CONTROLLER",
    "Controller",
    "ControllerConfig",
    "MetadataStore",
    "PartitionState",
    "broker_node",
]

CONTROLLER = "controller"
NIL_EPOCH = -1


def broker_node(broker_id: int) -> str:
    return f"b{broker_id}"


@attrs.frozen
class PartitionState:
    """One partition's record in the store."""

    leader: int
    leader_epoch: int
    isr: frozenset[int]
    partition_epoch: int
    replicas: tuple[int, ...]

    def __attrs_post_init__(self) -> None:
        assert self.leader == NO_LEADER or self.leader in self.isr, self
        assert self.isr <= frozenset(self.replicas), self


@attrs.frozen
class ControllerConfig:
    session_timeout_ns: int = 18_000_000_000
    """``broker.session.timeout.ms`` (KRaft; ZooKeeper's ``zookeeper.session.timeout.ms``)."""
    unclean_leader_election: bool = False
    """``unclean.leader.election.enable``."""


class MetadataStore:
    """The linearizable store; see the module docstring. Plain data, no process."""

    def __init__(self) -> None:
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.published: dict[tuple[str, int], PartitionState] = {}
        """Per partition, the state the controller last wrote and sent as LeaderAndIsr (an
        ISR change by the leader changes ``partitions`` but publishes nothing)."""
        self.registrations: dict[int, int] = {}
        self.failed: set[int] = set()
        """Brokers whose registration ended (session expired, process died) and which have
        not registered since: their failure may still need handling."""
        self.next_broker_epoch = 1
        self.controller_epoch = 0
        self.next_producer_id = 0
        """KIP-98: the next producer id InitProducerId hands out (never reused)."""

    def create_partition(self, topic: str, partition: int, replicas: tuple[int, ...]) -> None:
        """A new partition: no leader yet, every replica in the ISR."""
        key = (topic, partition)
        assert key not in self.partitions, key
        self.partitions[key] = PartitionState(
            NO_LEADER, NIL_EPOCH, frozenset(replicas), 0, replicas
        )

    def register(self, broker_id: int) -> int:
        epoch = self.next_broker_epoch
        self.next_broker_epoch += 1
        self.registrations[broker_id] = epoch
        self.failed.discard(broker_id)
        return epoch

    def close_session(self, broker_id: int) -> bool:
        """The broker's session ends (expired, or its process died); returns whether it was
        registered."""
        if self.registrations.pop(broker_id, None) is None:
            return False
        self.failed.add(broker_id)
        return True

    def may_register(self, broker_id: int) -> bool:
        """A broker may (re-)register once the controller handled its last failure."""
        return broker_id not in self.failed or not self.needs_handling(broker_id)

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
        return False

    def describe(self) -> str:
        parts = []
        for (topic, partition), p in sorted(self.partitions.items()):
            parts.append(
                f"{topic}-{partition}: leader={p.leader} epoch={p.leader_epoch} "
                f"isr={sorted(p.isr)} version={p.partition_epoch}"
            )
        regs = ", ".join(f"{b}@{e}" for b, e in sorted(self.registrations.items()))
        return "; ".join(parts) + f"; registered: {regs}; controller epoch {self.controller_epoch}"


class Controller:
    """One controller process over ``store``. Starting one bumps the controller epoch."""

    def __init__(self, store: MetadataStore, config: ControllerConfig, now: int) -> None:
        self.store = store
        self.config = config
        store.controller_epoch += 1
        self.epoch = store.controller_epoch
        # A new controller gives every registered broker a full session from now.
        self.deadlines: dict[int, int] = {
            b: now + config.session_timeout_ns for b in sorted(store.registrations)
        }

    # ------------------------------------------------------------------ sending decisions

    def _leader_and_isr(
        self, key: tuple[str, int], state: PartitionState, broker: int
    ) -> LeaderAndIsr:
        return LeaderAndIsr(
            controller_epoch=self.epoch,
            broker_epoch=self.store.registrations[broker],
            topic=key[0],
            partition=key[1],
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            isr=state.isr,
            partition_epoch=state.partition_epoch,
            replicas=state.replicas,
        )

    def _write(self, key: tuple[str, int], leader: int, isr: frozenset[int], out: Effects) -> None:
        """One decision: next leader epoch, store write, LeaderAndIsr to live replicas."""
        old = self.store.partitions[key]
        new = PartitionState(
            leader, old.leader_epoch + 1, isr, old.partition_epoch + 1, old.replicas
        )
        self.store.partitions[key] = new
        self.store.published[key] = new
        out.note(Published(key[0], key[1], new.leader_epoch, new.leader, new.isr))
        for broker in new.replicas:
            if self.store.is_registered(broker):
                out.send(broker_node(broker), self._leader_and_isr(key, new, broker))

    def resend_all(self) -> Effects:
        """A new controller tells every live broker the published state (same epochs)."""
        out = Effects()
        for key in sorted(self.store.published):
            state = self.store.published[key]
            for broker in state.replicas:
                if self.store.is_registered(broker):
                    out.send(broker_node(broker), self._leader_and_isr(key, state, broker))
        return out

    # ------------------------------------------------------------------ requests

    def step(self, src: str, msg: object, now: int) -> Effects:
        out = Effects()
        if isinstance(msg, BrokerHeartbeat):
            self._on_heartbeat(src, msg, now, out)
        elif isinstance(msg, BrokerRegistration):
            self._on_registration(src, msg, now, out)
        elif isinstance(msg, AlterPartition):
            out.send(src, self._on_alter_partition(msg, out))
        elif isinstance(msg, MetadataRequest):
            out.send(src, self._metadata(msg))
        elif isinstance(msg, InitProducerId):
            producer_id = self.store.next_producer_id
            self.store.next_producer_id += 1
            out.send(src, InitProducerIdResponse(Errors.NONE, msg.request_id, producer_id, 0))
        return out

    def _on_heartbeat(self, src: str, msg: BrokerHeartbeat, now: int, out: Effects) -> None:
        if self.store.registrations.get(msg.broker_id) != msg.broker_epoch:
            out.send(src, BrokerHeartbeatResponse(Errors.STALE_BROKER_EPOCH, msg.broker_epoch))
            return
        self.deadlines[msg.broker_id] = now + self.config.session_timeout_ns
        out.send(src, BrokerHeartbeatResponse(Errors.NONE, msg.broker_epoch))

    def _on_registration(self, src: str, msg: BrokerRegistration, now: int, out: Effects) -> None:
        broker = msg.broker_id
        # A new registration ends the previous one: that incarnation is gone.
        self.store.close_session(broker)
        self.deadlines.pop(broker, None)
        if not self.store.may_register(broker):
            out.send(
                src,
                BrokerRegistrationResponse(Errors.DUPLICATE_BROKER_REGISTRATION, -1, self.epoch),
            )
            return
        epoch = self.store.register(broker)
        self.deadlines[broker] = now + self.config.session_timeout_ns
        out.send(src, BrokerRegistrationResponse(Errors.NONE, epoch, self.epoch))
        for key in sorted(self.store.published):
            state = self.store.published[key]
            if broker in state.replicas:
                out.send(src, self._leader_and_isr(key, state, broker))

    def _on_alter_partition(self, msg: AlterPartition, out: Effects) -> AlterPartitionResponse:
        key = (msg.topic, msg.partition)
        state = self.store.partitions.get(key)

        def answer(error: Errors, s: PartitionState | None = None) -> AlterPartitionResponse:
            s = s or state
            if s is None:
                return AlterPartitionResponse(
                    msg.topic, msg.partition, error, msg.request_id, -1, -1, frozenset(), -1
                )
            return AlterPartitionResponse(
                msg.topic,
                msg.partition,
                error,
                msg.request_id,
                s.leader,
                s.leader_epoch,
                s.isr,
                s.partition_epoch,
            )

        if state is None:
            return answer(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if self.store.registrations.get(msg.broker_id) != msg.broker_epoch:
            return answer(Errors.STALE_BROKER_EPOCH)
        if state.leader != msg.broker_id or state.leader_epoch != msg.leader_epoch:
            return answer(Errors.FENCED_LEADER_EPOCH)
        if state.partition_epoch != msg.partition_epoch:
            return answer(Errors.INVALID_UPDATE_VERSION)
        if msg.broker_id not in msg.new_isr or not msg.new_isr <= frozenset(state.replicas):
            return answer(Errors.INVALID_UPDATE_VERSION)
        added = msg.new_isr - state.isr
        if any(not self.store.is_registered(b) for b in added):
            return answer(Errors.INELIGIBLE_REPLICA)
        new = attrs.evolve(state, isr=msg.new_isr, partition_epoch=state.partition_epoch + 1)
        self.store.partitions[key] = new
        out.note(IsrChanged(msg.topic, msg.partition, new.leader_epoch, new.leader, new.isr))
        return answer(Errors.NONE, new)

    def _metadata(self, msg: MetadataRequest) -> MetadataResponse:
        parts = []
        for (topic, partition), state in sorted(self.store.partitions.items()):
            if topic == msg.topic:
                parts.append(
                    PartitionMetadata(partition, state.leader, state.leader_epoch, state.isr)
                )
        return MetadataResponse(msg.topic, msg.request_id, tuple(parts))

    # ------------------------------------------------------------------ time

    def expire_sessions(self, now: int) -> list[int]:
        """Brokers whose heartbeats stopped for a session timeout lose their registration."""
        expired = []
        for broker in sorted(self.deadlines):
            if self.deadlines[broker] < now:
                del self.deadlines[broker]
                if self.store.close_session(broker):
                    expired.append(broker)
        return expired

    def tick(self, now: int) -> Effects:
        """Failure detection, then at most one decision (one store write)."""
        out = Effects()
        for broker in self.expire_sessions(now):
            out.note(SessionExpired(broker))
        for key in sorted(self.store.partitions):
            if self._decide(key, out):
                break
        return out

    def _decide(self, key: tuple[str, int], out: Effects) -> bool:
        state = self.store.partitions[key]
        registered = self.store.is_registered
        for r in state.replicas:
            if registered(r):
                continue
            if state.leader == r:
                candidates = [
                    n for n in state.replicas if n in state.isr and n != r and registered(n)
                ]
                if candidates:
                    self._write(key, candidates[0], state.isr - {r}, out)  # failover
                elif state.isr == frozenset({r}):
                    self._write(key, NO_LEADER, state.isr, out)
                else:
                    self._write(key, NO_LEADER, state.isr - {r}, out)
                return True
            if r in state.isr and len(state.isr) > 1:
                self._write(key, state.leader, state.isr - {r}, out)
                return True
        if state.leader == NO_LEADER:
            clean = [n for n in state.replicas if n in state.isr and registered(n)]
            if clean:
                self._write(key, clean[0], state.isr, out)
                return True
            if self.config.unclean_leader_election:
                unclean = [n for n in state.replicas if n not in state.isr and registered(n)]
                if unclean:
                    self._write(key, unclean[0], frozenset({unclean[0]}), out)
                    return True
        return False

    def elect_preferred(self, now: int) -> Effects:
        """Preferred-leader election: the first replica takes over from a live leader."""
        out = Effects()
        for key in sorted(self.store.partitions):
            state = self.store.partitions[key]
            preferred = state.replicas[0]
            if (
                state.leader not in (NO_LEADER, preferred)
                and self.store.is_registered(state.leader)
                and preferred in state.isr
                and self.store.is_registered(preferred)
            ):
                self._write(key, preferred, state.isr, out)
                break
        return out
