"""The controller: a role any broker can take (ZooKeeper-era ``KafkaController``; the same
decisions KRaft's ``QuorumController`` makes), over the coordination store
(``impl.coordination``: ZooKeeper, which outlives every controller).

**Election.** Every registered broker whose link to the store is open races to create the
ephemeral ``/controller`` on its ticks; the winner sets ``/controller_epoch`` to its value + 1
in the same multi-op (``Controller.elect``), reads every partition state into its
*controller context*, and tells every registered broker the published state with its new
epoch (``onControllerFailover``). Failover is by election: when the controller's session
ends (its broker died, was paused past the session timeout, or was cut off from the store),
``/controller`` goes with it and another broker wins.

**The zombie.** Nobody tells the old controller. A paused controller wakes up, and a
controller cut off from the store reconnects, still believing it is in charge: it decides
from its *stale context* and writes. It learns otherwise only when its write is refused
(BADVERSION on ``/controller_epoch``: ``ControllerMovedException``) or when its broker finds
its session expired on reconnecting (a heartbeat answered ``STALE_BROKER_EPOCH``): it then
resigns (``onControllerResignation``). Until then two controllers act at once, a brain
split. Two fences make that harmless, each a testing knob (``ControllerConfig``):

- the store's: every partition-state write is conditional on ``/controller_epoch``'s version
  as this controller set it and on the partition znode's version it read (Kafka 2.2,
  KAFKA-6082; ``--bug unconditional_write`` checks neither);
- the brokers': they reject requests from a controller epoch older than the newest they have
  seen (STALE_CONTROLLER_EPOCH, ``impl.broker``; ``--bug accept_stale_controller_epoch``).
  That fence needs the epoch to grow: ``--bug epoch_not_persisted`` restarts the count at 1.

**Decisions.** Each ``tick`` makes at most one write (Kafka's controller processes one event
at a time), from its context and the live registrations (``/brokers/ids``):

1. **registrations** (the ``/brokers/ids`` watch): a broker registered with a new broker
   epoch gets the published LeaderAndIsr of its partitions (``onBrokerStartup``);
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

Every write the controller makes is reported as a ``Published`` note: the world's record of
the LeaderAndIsr requests ever sent (the replication spec's ``requests``).

**Retries.** A broker answers every LeaderAndIsr (``LeaderAndIsrResponse``); the controller
sends one still unanswered after ``ControllerConfig.resend_after_ns`` again, as long as its
broker keeps the registration it was meant for (``RequestSendThread`` retries until a
request is answered or the broker leaves the live set). Without it a request lost to a
network partition would leave a broker in an old leader epoch for good.

Producer ids (KIP-98's ``InitProducerId``): an idempotent producer asks the controller, which
hands out the next id of the store's counter with epoch 0. Kafka splits this in two -- the
producer asks any broker, whose ``ProducerIdManager`` hands out ids from a block it obtained
from the controller (``AllocateProducerIds``, KIP-730; ``/latest_producer_id_block`` in
ZooKeeper) -- but the point is the same: the counter lives in the metadata store, so no
controller failover ever hands an id out twice. Here the controller also answers the
clients' metadata requests (from its context), so it is the one broker clients talk to for
both; the world routes requests addressed to ``CONTROLLER`` to the broker ``/controller``
names (clients learn it from metadata; ``impl.world``).
"""

from __future__ import annotations

import functools

import attrs

from impl import elr as elr_rules
from impl.coordination import (
    NIL_EPOCH,
    MetadataStore,
    PartitionState,
    WriteResult,
    round_robin_replicas,
)
from impl.protocol import (
    EPOCH_DURING_DELETE,
    NO_LEADER,
    AlterPartition,
    AlterPartitionResponse,
    ControlledShutdown,
    ControlledShutdownResponse,
    ControllerResigned,
    Effects,
    Errors,
    InitProducerId,
    InitProducerIdResponse,
    IsrChanged,
    LeaderAndIsr,
    LeaderAndIsrResponse,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    Published,
    StopReplica,
    StopReplicaResponse,
)

__all__ = [
    "CONTROLLER",
    "CONTROLLER_REQUESTS",
    "NIL_EPOCH",
    "Controller",
    "ControllerConfig",
    "MetadataStore",
    "PartitionState",
    "broker_node",
]

CONTROLLER = "controller"
"""The address of whichever broker is the controller (the world resolves it)."""

CONTROLLER_REQUESTS = (
    AlterPartition,
    MetadataRequest,
    InitProducerId,
    ControlledShutdown,
    StopReplicaResponse,
    LeaderAndIsrResponse,
)
"""The requests a broker hands to its controller role."""


@functools.cache  # one string per broker: node names key the network's tables per message
def broker_node(broker_id: int) -> str:
    return f"b{broker_id}"


@attrs.frozen
class ControllerConfig:
    unclean_leader_election: bool = False
    """``unclean.leader.election.enable``."""
    eligible_leader_replicas: bool = False
    """KIP-966 (``eligible.leader.replicas.version=1``): the ISR may empty, replicas leaving
    it below ``min.insync.replicas`` join the ELR, and a leader is elected from the ELR
    when no ISR member is live (``impl.elr``)."""
    min_insync_replicas: int = 1
    """``min.insync.replicas``: below it, the ISR's leavers join the ELR."""
    shutdown_to_isr_only: bool = True
    """Testing knob (off: ``--bug shutdown_to_non_isr``, as ``spec.rebalance``'s variant): a
    controlled shutdown hands leadership only to another ISR member; off, to the first
    other live replica of the assignment, in the ISR or not."""
    reassignment_waits_for_isr: bool = True
    """Testing knob (off: ``--bug drop_before_isr_join``, as ``spec.rebalance``'s variant):
    a KIP-455 reassignment completes only once every target replica is in the ISR; off, it
    drops the removed replicas at once."""
    auto_leader_rebalance: bool = False
    """``auto.leader.rebalance.enable``: every ``leader.imbalance.check.interval.seconds``
    the controller hands leadership back to the preferred replica of the partitions of
    each broker whose imbalance ratio exceeds ``leader.imbalance.per.broker.percentage``
    (``imbalance``). Kafka's default is on; here off by default, so that runs without it
    keep their histories (the ``preferred-election`` fault asks for it instead)."""
    leader_imbalance_per_broker_percentage: int = 10
    """``leader.imbalance.per.broker.percentage`` (Kafka's default 10)."""
    leader_imbalance_check_interval_ns: int = 300_000_000_000
    """``leader.imbalance.check.interval.seconds`` (Kafka's default 300 s)."""
    conditional_writes: bool = True
    """Testing knob (off: ``--bug unconditional_write``): every partition-state write checks
    ``/controller_epoch``'s version and the partition znode's (KAFKA-6082, Kafka 2.2)."""
    persist_epoch: bool = True
    """Testing knob (off: ``--bug epoch_not_persisted``): the election increments the
    persisted ``/controller_epoch``; off, every controller starts again at epoch 1."""
    delete_topic_enable: bool = True
    """``delete.topic.enable`` (Kafka's default true): off, DeleteTopics is refused with
    ``TOPIC_DELETION_DISABLED``."""
    stop_replica_retry_ns: int = 5_000_000_000
    """How often the controller asks again the registered brokers whose replica of a
    deleted topic, or removed by a reassignment, it has not heard deleted (a StopReplica or
    its answer may be lost; ``TopicDeletionManager`` retries on failure)."""
    resend_after_ns: int = 10_000_000_000
    """How long a LeaderAndIsr may go unanswered before the controller sends it again, as
    long as its broker keeps the registration it was meant for (``RequestSendThread``
    retries a request until it is answered or the broker leaves the live set; a broker that
    registers again gets the published state afresh). 10 s is
    ``socket.connection.setup.timeout.ms``: a request lost to a network partition goes again
    on a new connection, whose attempts time out after it until the partition heals. (On a
    connection that stays up, Kafka would wait ``controller.socket.timeout.ms``, 30 s; the
    simulation does not tell the two apart.)"""
    queued_sends: bool = False
    """Requests to brokers wait in the controller's queues and go out on its next tick
    (``ControllerChannelManager``'s per-broker ``RequestSendThread``s, threads of the
    controller's process): a controller paused between a write and its next tick sends
    them when it wakes, with its old epoch. Off: sent with the decision (the refinement
    driver's atomic steps)."""


class Controller:
    """The controller role on broker ``broker_id``, elected with controller epoch ``epoch``
    while its session was ``session_epoch`` (build it with ``Controller.elect``)."""

    def __init__(
        self,
        store: MetadataStore,
        config: ControllerConfig,
        broker_id: int,
        session_epoch: int,
        epoch: int,
    ) -> None:
        self.store = store
        self.config = config
        self.broker_id = broker_id
        self.session_epoch = session_epoch
        self.epoch = epoch
        self.epoch_version = store.epoch_version
        """The ``/controller_epoch`` version this controller's writes expect."""
        self.context: dict[tuple[str, int], PartitionState] = dict(store.partitions)
        """The controller context: the partition states it read when elected or wrote since."""
        self.published: dict[tuple[str, int], PartitionState] = dict(store.published)
        self.known: dict[int, int] = dict(store.registrations)
        """The registrations it has told the published state (its ``/brokers/ids`` view)."""
        self.resigned = False
        self.next_imbalance_check: int | None = None
        """When the auto rebalance next checks the imbalance (set on the first tick)."""
        self.shutting_down: dict[int, int] = {}
        """Brokers in controlled shutdown -> their broker epoch (``shuttingDownBrokerIds``;
        in memory only: a new controller learns them from the brokers' retries)."""
        self.preferred_pending: list[tuple[str, int]] = []
        """Partitions whose preferred replica is to take leadership back, one per tick."""
        self.outbox: list[tuple[str, LeaderAndIsr | StopReplica]] = []
        """Requests queued for the send threads (``ControllerConfig.queued_sends``)."""
        self.pending_effects = Effects()
        """What an admin request decided between ticks (sends, notes): out on the next tick."""
        self.next_stop_replica_retry: int | None = None
        """When the pending deletions are next asked for again (set on the first tick)."""
        self.unanswered: dict[tuple[str, tuple[str, int]], tuple[LeaderAndIsr, int]] = {}
        """(broker node, partition) -> the latest LeaderAndIsr sent there and not answered,
        with when it was sent (``_resend_unanswered``)."""
        self.now = 0
        """The controller's clock at its latest tick or request (admin requests between
        ticks are stamped with it)."""

    @classmethod
    def elect(
        cls, store: MetadataStore, config: ControllerConfig, broker_id: int, session_epoch: int
    ) -> Controller | None:
        """Broker ``broker_id`` tries to create ``/controller`` (``KafkaController.elect``);
        the winner is returned, having read the store."""
        epoch = store.elect(broker_id, session_epoch, persist_epoch=config.persist_epoch)
        if epoch is None:
            return None
        return cls(store, config, broker_id, session_epoch, epoch)

    @property
    def active(self) -> bool:
        return not self.resigned

    def resign(self, reason: str) -> Effects:
        """``onControllerResignation``: this broker learnt it no longer is the controller."""
        out = Effects()
        if not self.resigned:
            self.resigned = True
            self.outbox.clear()  # the channel manager shuts down with the controller
            self.unanswered.clear()
            out.note(ControllerResigned(self.broker_id, self.epoch, reason))
        return out

    def _send(self, dst: str, msg: LeaderAndIsr | StopReplica, out: Effects) -> None:
        if isinstance(msg, LeaderAndIsr):
            self.unanswered[(dst, (msg.topic, msg.partition))] = (msg, self.now)
        if self.config.queued_sends:
            self.outbox.append((dst, msg))
        else:
            out.send(dst, msg)

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

    def _stop_replicas(
        self, key: tuple[str, int], brokers: frozenset[int], leader_epoch: int, out: Effects
    ) -> None:
        """StopReplica with ``delete`` to the registered ones of ``brokers`` for ``key``."""
        for broker in sorted(brokers):
            if self.store.is_registered(broker):
                request = StopReplica(
                    controller_epoch=self.epoch,
                    broker_epoch=self.store.registrations[broker],
                    topic=key[0],
                    partition=key[1],
                    leader_epoch=leader_epoch,
                    delete=True,
                )
                self._send(broker_node(broker), request, out)

    def _ask_pending_deletions(self, brokers: frozenset[int] | None, out: Effects) -> None:
        """StopReplica for every pending deletion on ``brokers`` (None: on any broker). A
        deleted topic's replicas are stopped whatever their epoch; a replica a reassignment
        removed only if it is not in a newer leader epoch than the partition's now."""
        for key in sorted(self.store.pending_deletions):
            waiting = self.store.pending_deletions[key]
            if brokers is not None:
                waiting = waiting & brokers
            state = self.context.get(key)
            epoch = EPOCH_DURING_DELETE if state is None else state.leader_epoch
            self._stop_replicas(key, waiting, epoch, out)

    def _expected(self, key: tuple[str, int]) -> tuple[int | None, int | None]:
        """The versions a write of ``key`` is conditional on (none with the knob off)."""
        if not self.config.conditional_writes:
            return None, None
        return self.epoch_version, self.context[key].partition_epoch

    def _elr_after(self, old: PartitionState, isr: frozenset[int]) -> frozenset[int]:
        """The ELR once ``old``'s ISR becomes ``isr`` (always empty with KIP-966 off)."""
        if not self.config.eligible_leader_replicas:
            return frozenset()
        return elr_rules.elr_after(
            old.elr, old.isr, isr, old.replicas, self.config.min_insync_replicas
        )

    def _write(
        self,
        key: tuple[str, int],
        leader: int,
        isr: frozenset[int],
        out: Effects,
        elr: frozenset[int] | None = None,
        replicas: tuple[int, ...] | None = None,
        adding: frozenset[int] | None = None,
        removing: frozenset[int] | None = None,
    ) -> None:
        """One decision: next leader epoch, conditional store write, LeaderAndIsr to the live
        replicas. A refused write makes the controller resign (moved) or re-read the
        partition (conflict). The ELR follows the ISR unless given; the replicas and a
        reassignment's adding/removing sets stay unless given."""
        old = self.context[key]
        replicas = old.replicas if replicas is None else replicas
        elr = self._elr_after(old, isr) if elr is None else elr
        new = PartitionState(
            leader,
            old.leader_epoch + 1,
            isr,
            old.partition_epoch + 1,
            replicas,
            elr & frozenset(replicas),
            old.adding if adding is None else adding,
            old.removing if removing is None else removing,
        )
        epoch_version, partition_epoch = self._expected(key)
        result = self.store.write(
            key, new, epoch_version=epoch_version, partition_epoch=partition_epoch, publish=True
        )
        if result is WriteResult.MOVED:
            out.extend(self.resign("moved"))
            return
        if result is WriteResult.CONFLICT:
            self.context[key] = self.store.partitions[key]
            return
        self.context[key] = new
        self.published[key] = new
        out.note(Published(key[0], key[1], new.leader_epoch, new.leader, new.isr, new.elr))
        for broker in new.replicas:
            if self.store.is_registered(broker):
                self._send(broker_node(broker), self._leader_and_isr(key, new, broker), out)

    def resend_all(self) -> Effects:
        """A new controller tells every live broker the published state (same leader
        epochs, its controller epoch): ``onControllerFailover``'s UpdateMetadata and
        LeaderAndIsr."""
        out = Effects()
        for key in sorted(self.published):
            state = self.published[key]
            for broker in state.replicas:
                if self.store.is_registered(broker):
                    self._send(broker_node(broker), self._leader_and_isr(key, state, broker), out)
        return out

    # ------------------------------------------------------------------ requests

    def step(self, src: str, msg: object, now: int, connected: bool = True) -> Effects:
        """A request for the controller (``CONTROLLER_REQUESTS``). Without a connection to
        the store, nothing that reads or writes it is answered (the requester times out)."""
        out = Effects()
        if self.resigned:
            return out
        self.now = now
        if isinstance(msg, MetadataRequest):
            out.send(src, self._metadata(msg))
        elif not connected:
            return out
        elif isinstance(msg, AlterPartition):
            response = self._on_alter_partition(msg, out)
            if response is not None:
                out.send(src, response)
        elif isinstance(msg, InitProducerId):
            producer_id = self.store.next_id()
            out.send(src, InitProducerIdResponse(Errors.NONE, msg.request_id, producer_id, 0))
        elif isinstance(msg, ControlledShutdown):
            out.send(src, self._on_controlled_shutdown(msg))
        elif isinstance(msg, LeaderAndIsrResponse):
            self._on_leader_and_isr_response(src, msg)
        elif isinstance(msg, StopReplicaResponse) and msg.error in (
            Errors.NONE,
            Errors.FENCED_LEADER_EPOCH,  # the replica is in a newer epoch: a replica again
        ):
            self.store.cancel_pending_deletion((msg.topic, msg.partition), msg.broker_id)
        return out

    # ------------------------------------------------------------------ retried requests

    def _on_leader_and_isr_response(self, src: str, msg: LeaderAndIsrResponse) -> None:
        """The answer to this controller's latest LeaderAndIsr for the partition ends its
        retries (an answer to an older one, or to another controller's, does not)."""
        slot = (src, (msg.topic, msg.partition))
        waiting = self.unanswered.get(slot)
        if (
            waiting is not None
            and msg.controller_epoch == self.epoch
            and waiting[0].leader_epoch == msg.leader_epoch
        ):
            del self.unanswered[slot]

    def _resend_unanswered(self, now: int, out: Effects) -> None:
        """Send again each LeaderAndIsr unanswered for ``resend_after_ns`` (it, or its
        answer, was lost), while its broker keeps the registration it was meant for."""
        if not self.unanswered:
            return
        # Its own view of /brokers/ids (``known``), as the channel manager's live set.
        registered = {broker_node(b): e for b, e in self.known.items()}
        timeout = self.config.resend_after_ns
        for slot in sorted(self.unanswered):
            request, sent = self.unanswered[slot]
            if registered.get(slot[0]) != request.broker_epoch:
                del self.unanswered[slot]  # gone, or registered again: told afresh
            elif now - sent >= timeout:
                self._send(slot[0], request, out)

    # ------------------------------------------------------------------ controlled shutdown

    def _on_controlled_shutdown(self, msg: ControlledShutdown) -> ControlledShutdownResponse:
        """``KafkaController.doControlledShutdown``: mark the broker shutting down; its
        leaderships move and it leaves the ISRs on the next ticks (``_decide``). The answer
        counts the partitions that still name it as leader or ISR member."""
        if self.store.registrations.get(msg.broker_id) != msg.broker_epoch:
            return ControlledShutdownResponse(Errors.STALE_BROKER_EPOCH, msg.request_id, -1)
        self.shutting_down[msg.broker_id] = msg.broker_epoch
        remaining = sum(
            1
            for state in self.context.values()
            if state.leader == msg.broker_id or msg.broker_id in state.isr
        )
        return ControlledShutdownResponse(Errors.NONE, msg.request_id, remaining)

    def _eligible(self, broker: int) -> bool:
        """Registered and not shutting down: may lead or join an ISR."""
        return self.store.is_registered(broker) and broker not in self.shutting_down

    def _on_alter_partition(
        self, msg: AlterPartition, out: Effects
    ) -> AlterPartitionResponse | None:
        key = (msg.topic, msg.partition)
        state = self.context.get(key)

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
        if any(not self._eligible(b) for b in added):
            return answer(Errors.INELIGIBLE_REPLICA)
        new = attrs.evolve(
            state,
            isr=msg.new_isr,
            partition_epoch=state.partition_epoch + 1,
            elr=self._elr_after(state, msg.new_isr),
        )
        epoch_version, partition_epoch = self._expected(key)
        result = self.store.write(
            key, new, epoch_version=epoch_version, partition_epoch=partition_epoch, publish=False
        )
        if result is WriteResult.MOVED:
            out.extend(self.resign("moved"))
            return answer(Errors.NOT_CONTROLLER)
        if result is WriteResult.CONFLICT:
            self.context[key] = self.store.partitions[key]
            return answer(Errors.INVALID_UPDATE_VERSION, self.context[key])
        self.context[key] = new
        out.note(
            IsrChanged(msg.topic, msg.partition, new.leader_epoch, new.leader, new.isr, new.elr)
        )
        return answer(Errors.NONE, new)

    def _metadata(self, msg: MetadataRequest) -> MetadataResponse:
        parts = []
        for (topic, partition), state in sorted(self.context.items()):
            if topic == msg.topic:
                parts.append(
                    PartitionMetadata(partition, state.leader, state.leader_epoch, state.isr)
                )
        return MetadataResponse(msg.topic, msg.request_id, tuple(parts))

    # ------------------------------------------------------------------ time

    def tick(self, now: int, connected: bool = True) -> Effects:
        """The queued requests go out; then the ``/brokers/ids`` watch and at most one
        decision (one store write), if the store is reachable."""
        out = Effects()
        if self.resigned:
            return out
        self.now = now
        # The send threads deliver what was queued (they need no store connection).
        out.extend(self.pending_effects)
        self.pending_effects = Effects()
        for dst, msg in self.outbox:
            out.send(dst, msg)
        self.outbox.clear()
        if not connected:
            self._resend_unanswered(now, out)
            return out
        self._watch_registrations(out)
        self._resend_unanswered(now, out)
        self._retry_deletions(now, out)
        for key in sorted(self.context):
            if self._decide(key, out) or self.resigned:
                return out
        self._auto_rebalance(now)
        self._elect_one_preferred(out)
        return out

    def _retry_deletions(self, now: int, out: Effects) -> None:
        """Every ``stop_replica_retry_ns``, StopReplica again for each pending deletion."""
        if not self.store.pending_deletions:
            return
        if self.next_stop_replica_retry is None or now >= self.next_stop_replica_retry:
            if self.next_stop_replica_retry is not None:
                self._ask_pending_deletions(None, out)
            self.next_stop_replica_retry = now + self.config.stop_replica_retry_ns

    # ------------------------------------------------------------------ preferred leaders

    def imbalance(self) -> dict[int, float]:
        """Kafka's leader imbalance ratio per broker (``checkAndTriggerAutoLeaderRebalance``):
        of the partitions whose preferred replica (the first of the assignment) is the
        broker, the fraction it does not lead."""
        preferred: dict[int, int] = {}
        not_led: dict[int, int] = {}
        for key in sorted(self.context):
            state = self.context[key]
            b = state.replicas[0]
            preferred[b] = preferred.get(b, 0) + 1
            if state.leader != b:
                not_led[b] = not_led.get(b, 0) + 1
        return {b: not_led.get(b, 0) / n for b, n in sorted(preferred.items())}

    def _preferred_ready(self, key: tuple[str, int]) -> bool:
        """The preferred replica may take over: registered, in the ISR, and not leading."""
        state = self.context[key]
        preferred = state.replicas[0]
        return (
            state.leader not in (NO_LEADER, preferred)
            and self.store.is_registered(state.leader)
            and preferred in state.isr
            and self._eligible(preferred)
        )

    def _auto_rebalance(self, now: int) -> None:
        """``auto.leader.rebalance.enable``: the periodic check queues the partitions of
        over-imbalanced brokers; each tick without another decision elects one queued."""
        if not self.config.auto_leader_rebalance:
            return
        if self.next_imbalance_check is None:
            self.next_imbalance_check = now + self.config.leader_imbalance_check_interval_ns
        elif now >= self.next_imbalance_check:
            self.next_imbalance_check = now + self.config.leader_imbalance_check_interval_ns
            self.request_preferred_election(only_imbalanced=True)

    def request_preferred_election(
        self, only_imbalanced: bool = False, keys: frozenset[tuple[str, int]] | None = None
    ) -> int:
        """Queue preferred-leader elections (the admin's ``kafka-leader-election.sh
        --election-type preferred``, ``ElectLeaders``): every partition, those named by
        ``keys`` (``--topic T --partition P``), or with ``only_imbalanced`` those of the
        brokers over ``leader.imbalance.per.broker.percentage``. Returns how many
        partitions were queued."""
        limit = self.config.leader_imbalance_per_broker_percentage / 100
        over = {b for b, ratio in self.imbalance().items() if ratio > limit}
        queued = [
            key
            for key in sorted(self.context)
            if self._preferred_ready(key)
            and (keys is None or key in keys)
            and (not only_imbalanced or self.context[key].replicas[0] in over)
        ]
        self.preferred_pending = sorted(set(self.preferred_pending) | set(queued))
        return len(queued)

    def _elect_one_preferred(self, out: Effects) -> bool:
        while self.preferred_pending:
            key = self.preferred_pending.pop(0)
            if key in self.context and self._preferred_ready(key):
                state = self.context[key]
                self._write(key, state.replicas[0], state.isr, out)
                return True
        return False

    # ------------------------------------------------------------------ topic admin

    def create_partitions(self, topic: str, total: int) -> list[int]:
        """``CreatePartitions`` (``kafka-topics.sh --alter --partitions``; a new topic when
        it has none): the topic grows to ``total`` partitions, each new one with every
        registered broker as a replica, in a rotating order (Kafka's round-robin replica
        assignment) so the preferred leaders spread; no leader yet, every replica in the
        ISR, as ``MetadataStore.create_partition`` starts a partition. The election is the
        next ticks'. The key-to-partition mapping of keyed records changes with the count
        (``impl.partitioner.partition_for_key``): a key's later records land elsewhere, so
        its order across the change is lost. Returns the new partitions' numbers."""
        if self.resigned or self.store.deleting(topic):
            return []  # TOPIC_ALREADY_EXISTS: "marked for deletion"
        existing = sorted(p for t, p in self.context if t == topic)
        brokers = sorted(self.store.registrations)
        if not brokers or total <= len(existing):
            return []
        created = []
        for p in range(len(existing), total):
            replicas = round_robin_replicas(brokers, p)
            self.store.create_partition(topic, p, replicas)
            self.context[(topic, p)] = self.store.partitions[(topic, p)]
            created.append(p)
        return created

    def delete_topic(self, topic: str) -> Errors:
        """``DeleteTopics`` (``kafka-topics.sh --delete``): one conditional store write
        removes the topic's partitions and records every replica as to be deleted; each
        gets StopReplica with ``delete`` (``EPOCH_DURING_DELETE``), now if its broker is
        registered, else when it registers again; the topic cannot be created again until
        every replica confirmed (``TopicDeletionManager``). Records of a deleted topic are
        gone on purpose: a reader of the topic finds none."""
        if self.resigned:
            return Errors.NOT_CONTROLLER
        if not self.config.delete_topic_enable:
            return Errors.TOPIC_DELETION_DISABLED
        keys = sorted(k for k in self.context if k[0] == topic)
        if not keys:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        epoch_version = self.epoch_version if self.config.conditional_writes else None
        out = Effects()
        if self.store.delete_topic(topic, epoch_version=epoch_version) is WriteResult.MOVED:
            self.pending_effects.extend(self.resign("moved"))
            return Errors.NOT_CONTROLLER
        for key in keys:
            del self.context[key]
            self.published.pop(key, None)
            self.preferred_pending = [k for k in self.preferred_pending if k != key]
            waiting = self.store.pending_deletions.get(key, frozenset())
            self._stop_replicas(key, waiting, EPOCH_DURING_DELETE, out)
        self.pending_effects.extend(out)
        return Errors.NONE

    # ------------------------------------------------------------------ reassignment

    def alter_reassignment(self, key: tuple[str, int], target: tuple[int, ...] | None) -> Errors:
        """KIP-455's ``AlterPartitionReassignments`` for one partition: start moving it to
        the ``target`` replicas (in preference order), or with None cancel the one in
        progress. The replicas become target + removed ones; the adding replicas follow
        and catch up; ``_progress_reassignment`` finishes it. One store write.

        A new target for a partition already being reassigned replaces the running
        reassignment (KIP-455): adding and removing are computed again against the
        *original* replicas, and the replicas the old one was adding that the new target
        does not keep are dropped at once (out of the ISR, their logs deleted by
        StopReplica). When the leader is one of them, an ISR member of the new replicas
        takes over in the same write; with none, the request is refused
        (``INELIGIBLE_REPLICA``)."""
        state = self.context.get(key)
        if state is None or self.resigned:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        out = Effects()
        if target is None:
            if not state.reassigning:
                return Errors.NO_REASSIGNMENT_IN_PROGRESS
            original = state.original
            isr = state.isr & frozenset(original)
            leader = state.leader
            if leader not in original:
                candidates = [n for n in original if n in isr and self._eligible(n)]
                if not candidates:
                    return Errors.INELIGIBLE_REPLICA  # nobody of the original set can lead
                leader = candidates[0]
            self._write(key, leader, isr, out, None, original, frozenset(), frozenset())
            self._drop(key, frozenset(state.adding), original, out)
        else:
            if len(set(target)) != len(target) or not target:
                return Errors.INVALID_REPLICA_ASSIGNMENT
            if any(b not in self.store.registrations and b not in state.replicas for b in target):
                return Errors.INVALID_REPLICA_ASSIGNMENT  # an unknown broker
            original = state.original
            adding = frozenset(target) - frozenset(original)
            removing = frozenset(original) - frozenset(target)
            replicas = (*target, *(r for r in original if r in removing))
            if (replicas, adding, removing) == (state.replicas, state.adding, state.removing):
                return Errors.NONE  # the reassignment asked for is the one in progress
            dropped = frozenset(state.replicas) - frozenset(replicas)
            leader, isr = state.leader, state.isr - dropped
            if leader in dropped:
                candidates = [n for n in replicas if n in isr and self._eligible(n)]
                if not candidates:
                    return Errors.INELIGIBLE_REPLICA
                leader = candidates[0]
            for broker in sorted(adding):
                self.store.cancel_pending_deletion(key, broker)  # a replica again
            self._write(key, leader, isr, out, None, replicas, adding, removing)
            self._drop(key, dropped, replicas, out)
        self.pending_effects.extend(out)
        return Errors.NONE

    def _progress_reassignment(
        self, key: tuple[str, int], state: PartitionState, out: Effects
    ) -> bool:
        """A reassignment in progress: once every target replica is in the ISR, one write
        completes it (KRaft's ``PartitionChangeBuilder.completeReassignmentIfNeeded``): the
        replicas become the target, the ISR is cut to it, and a removed leader hands over to
        the first eligible target replica in the ISR, in the same new leader epoch. The
        removed replicas then delete their logs (StopReplica). ``--bug
        drop_before_isr_join`` completes without waiting."""
        target = state.target
        waits = self.config.reassignment_waits_for_isr
        if waits and not frozenset(target) <= state.isr:
            return False
        if state.leader not in target:
            candidates = [n for n in target if n in state.isr and self._eligible(n)]
            if candidates:
                leader, isr = candidates[0], state.isr & frozenset(target)
                self._complete(key, state, leader, isr, out)
                return True
            if waits:
                return False
            # The broken variant: a target replica outside the ISR takes over.
            live = [n for n in target if self._eligible(n)]
            if not live:
                return False
            leader, isr = live[0], (state.isr & frozenset(target)) | {live[0]}
        else:
            leader, isr = state.leader, state.isr & frozenset(target)
        self._complete(key, state, leader, isr, out)
        return True

    def _complete(
        self,
        key: tuple[str, int],
        state: PartitionState,
        leader: int,
        isr: frozenset[int],
        out: Effects,
    ) -> None:
        """The write that ends a reassignment (replicas := target, with ``leader`` and
        ``isr``), then StopReplica with delete to the removed replicas."""
        target = state.target
        self._write(key, leader, isr, out, None, target, frozenset(), frozenset())
        self._drop(key, frozenset(state.replicas) - frozenset(target), target, out)

    def _drop(
        self,
        key: tuple[str, int],
        gone: frozenset[int],
        replicas: tuple[int, ...],
        out: Effects,
    ) -> None:
        """If the last write made ``replicas`` the partition's replicas, the ``gone`` ones
        delete their logs: pending deletions in the store, and StopReplica now."""
        if gone and self.context[key].replicas == replicas:
            self.store.add_pending_deletion(key, gone)
            self._stop_replicas(key, gone, self.context[key].leader_epoch, out)

    def _move_off_shutting(
        self, key: tuple[str, int], state: PartitionState, r: int, out: Effects
    ) -> bool:
        """Controlled shutdown of ``r``: another eligible ISR member takes its leadership
        (and ``r`` leaves the ISR in the same write); as a follower it leaves the ISR,
        never emptying it. Leadership stays where no other ISR member can take it."""
        if state.leader == r:
            isr_only = self.config.shutdown_to_isr_only
            others = [
                n
                for n in state.replicas
                if (n in state.isr or not isr_only) and n != r and self._eligible(n)
            ]
            if not others:
                return False
            self._write(key, others[0], (state.isr - {r}) | {others[0]}, out)
            return True
        if r in state.isr and len(state.isr) > 1:
            self._write(key, state.leader, state.isr - {r}, out)
            return True
        return False

    def _session_live(self) -> bool:
        """Whether the store session this controller was elected in is still open (its
        broker's registration is the one it had then)."""
        return self.store.registrations.get(self.broker_id) == self.session_epoch

    def _watch_registrations(self, out: Effects) -> None:
        """A broker registered with a new broker epoch gets the published LeaderAndIsr of
        its partitions (``onBrokerStartup``); gone registrations are forgotten.

        The watch belongs to the controller's session: once that session has expired (a
        zombie that has not noticed yet) it fires no more, so the zombie never learns of
        a registration made since. ZooKeeper delivers watches only to the session that
        set them, and ``KafkaController`` handles ``Expire`` (put with ``clearAndPut``,
        dropping queued events, before the new session is opened) and resigns before a
        watch on a new session can fire. Otherwise a zombie would send its stale context
        (an older leader epoch than the store's) stamped with the new broker epoch; a
        broker restarted with no newer leader epoch recovered applies it, unless the
        controller epoch its registration answer carried fences it."""
        if not self._session_live():
            return
        registrations = self.store.registrations
        for broker in sorted(self.known):
            if broker not in registrations:
                del self.known[broker]
        for broker in sorted(self.shutting_down):
            if registrations.get(broker) != self.shutting_down[broker]:
                del self.shutting_down[broker]  # it stopped (or registered again)
        for broker in sorted(registrations):
            if self.known.get(broker) == registrations[broker]:
                continue
            self.known[broker] = registrations[broker]
            for key in sorted(self.published):
                state = self.published[key]
                if broker in state.replicas:
                    self._send(broker_node(broker), self._leader_and_isr(key, state, broker), out)
            self._ask_pending_deletions(frozenset({broker}), out)

    def _decide(self, key: tuple[str, int], out: Effects) -> bool:
        state = self.context[key]
        registered = self._eligible
        elr_on = self.config.eligible_leader_replicas
        shutting = self.shutting_down
        for r in state.replicas:
            if r in shutting and self.store.is_registered(r):
                if self._move_off_shutting(key, state, r, out):
                    return True
                continue
            if registered(r):
                continue
            if state.leader == r:
                candidates = [
                    n for n in state.replicas if n in state.isr and n != r and registered(n)
                ]
                if candidates:
                    self._write(key, candidates[0], state.isr - {r}, out)  # failover
                else:
                    isr = elr_rules.isr_without(state.isr, r, r, elr_on)
                    self._write(key, NO_LEADER, isr, out)
                return True
            if r in state.isr and (len(state.isr) > 1 or elr_on):
                self._write(key, state.leader, state.isr - {r}, out)
                return True
        reassigning = state.reassigning and state.leader != NO_LEADER
        if reassigning and self._progress_reassignment(key, state, out):
            return True
        if state.leader == NO_LEADER:
            elr = state.elr if elr_on else frozenset()
            leader, isr, elr = elr_rules.elect(state.replicas, state.isr, elr, registered)
            if leader != NO_LEADER:
                self._write(key, leader, isr, out, elr=None if isr == state.isr else elr)
                return True
            if self.config.unclean_leader_election:
                unclean = [n for n in state.replicas if n not in state.isr and registered(n)]
                if unclean:
                    self._write(key, unclean[0], frozenset({unclean[0]}), out, elr=frozenset())
                    return True
        return False

    def elect_preferred(self, now: int, connected: bool = True) -> Effects:
        """Preferred-leader election now: the first partition (in order) whose preferred
        replica is registered and in the ISR takes leadership from a live leader."""
        out = Effects()
        if self.resigned or not connected:
            return out
        for key in sorted(self.context):
            if self._preferred_ready(key):
                state = self.context[key]
                self._write(key, state.replicas[0], state.isr, out)
                break
        return out
