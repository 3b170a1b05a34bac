"""The consumer group on the simulated cluster: each broker's group coordinator, hosted while
the broker leads the group's ``__consumer_offsets`` partition, and each consumer's group
member. ``impl.world`` owns one ``GroupHost`` when ``ClusterConfig.offsets_partitions`` is
set and hands it the group messages, ticks and polls; this module never imports the world.

Hosting follows leadership, as Kafka's ``GroupCoordinator.onElection`` / ``onResignation``
follow the LeaderAndIsr of an ``__consumer_offsets`` partition: before a broker handles a
group request, and on each of its ticks, its coordinator loads the group when its replica
of the group's partition (``coordinator_partition``) is the leader, and unloads it (Dead,
``NOT_COORDINATOR``) when it no longer is. A crashed broker's coordinator loses everything
in memory. FindCoordinator is answered by any broker with the partition's leader as the
metadata names it (the store's record, which brokers learn from LeaderAndIsr).

The group's state lives in the partition's replicated log (``impl.group.records``): an
accepted OffsetCommit is appended by the coordinator to its broker's leader replica of the
partition as a Produce with ``acks=-1`` (``offsets.commit.required.acks``; the replica
refuses it with ``NOT_ENOUGH_REPLICAS`` below ``min.insync.replicas``), followers fetch it
as any record, and the OffsetCommit is answered only when the replica's purgatory completes
it (the HW passed it) or fails it, with ``GroupMetadataManager.storeOffsets``' mapping of
the append's error: ``NOT_LEADER_OR_FOLLOWER``/``KAFKA_STORAGE_ERROR`` ->
``NOT_COORDINATOR``, ``NOT_ENOUGH_REPLICAS(_AFTER_APPEND)``/``UNKNOWN_TOPIC_OR_PARTITION``
-> ``COORDINATOR_NOT_AVAILABLE``, ``REQUEST_TIMED_OUT`` as is. The append is local to the
broker (``ReplicaManager.appendRecords`` with a callback): its answer is taken out of the
broker's effects (``broker_effects``), never sent on the network. The group metadata record
is appended the same way when a generation completes or the group empties, and the
generation's SyncGroups are answered only once it is committed (``storeGroup``'s callback:
until then the group stays CompletingRebalance; if the append fails they get its error and
the group rebalances). A broker that
becomes the partition's leader **loads** the group by reading its own replica of the log
from start to end, ``load_delay_ns`` after it became leader (``COORDINATOR_LOAD_IN_PROGRESS``
meanwhile); so what an unclean election truncated away is lost to the group too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from impl.group.consumer import ConsumerApp, GroupConsumer
from impl.group.coordinator import (
    GROUP_BUGS,
    Coordinator,
    CoordinatorConfig,
    PendingCommit,
    StoredGroup,
)
from impl.group.member import Member, MemberConfig
from impl.group.messages import (
    COORDINATOR_NOT_AVAILABLE,
    NONE,
    FindCoordinator,
    FindCoordinatorResponse,
    Heartbeat,
    HeartbeatResponse,
    JoinGroup,
    JoinGroupResponse,
    LeaveGroup,
    LeaveGroupResponse,
    OffsetCommit,
    OffsetCommitResponse,
    OffsetFetch,
    OffsetFetchResponse,
    SyncGroup,
    SyncGroupResponse,
)
from impl.group.placement import CONSUMER_OFFSETS, coordinator_partition
from impl.group.records import group_record, offset_records, read_group
from impl.messages import Message
from impl.protocol import Effects, Errors, Produce, ProduceResponse
from impl.sim.clock import ms

__all__ = ["GROUP_BUGS", "GROUP_REQUESTS", "GROUP_RESPONSES", "GroupHost"]

GROUP_REQUESTS = (
    FindCoordinator,
    JoinGroup,
    SyncGroup,
    Heartbeat,
    LeaveGroup,
    OffsetCommit,
    OffsetFetch,
)
GROUP_RESPONSES = (
    FindCoordinatorResponse,
    JoinGroupResponse,
    SyncGroupResponse,
    HeartbeatResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
)

APPEND_ERRORS = {
    Errors.NONE: "NONE",
    Errors.NOT_LEADER_OR_FOLLOWER: "NOT_COORDINATOR",
    Errors.KAFKA_STORAGE_ERROR: "NOT_COORDINATOR",
    Errors.NOT_ENOUGH_REPLICAS: "COORDINATOR_NOT_AVAILABLE",
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: "COORDINATOR_NOT_AVAILABLE",
    Errors.UNKNOWN_TOPIC_OR_PARTITION: "COORDINATOR_NOT_AVAILABLE",
    Errors.REQUEST_TIMED_OUT: "REQUEST_TIMED_OUT",
}
"""``GroupMetadataManager.storeOffsets``: the append's error -> the OffsetCommit's (any other
is answered ``COORDINATOR_NOT_AVAILABLE`` here: retriable for the consumer)."""


class _Broker(Protocol):
    def replica(self, topic: str, partition: int) -> Any: ...

    def step(self, src: str, msg: object, now: int, wall: int | None = None) -> Effects: ...


class GroupHost:
    """The group's coordinators (one per broker) and members (one per consumer)."""

    def __init__(
        self,
        group: str,
        offsets_partitions: int,
        brokers: Mapping[int, str],
        consumers: list[str],
        topics: Mapping[str, int],
        leader_of: Callable[[int], int | None],
        check_generation: bool = True,
        fetch_before_load: bool = False,
        member_config: MemberConfig | None = None,
        load_delay_ns: int = ms(300),
        app: ConsumerApp | None = None,
    ) -> None:
        self.group = group
        self.partition = coordinator_partition(group, offsets_partitions)
        self.brokers = dict(brokers)
        self._leader_of = leader_of
        self._config = CoordinatorConfig(
            check_generation=check_generation, fetch_before_load=fetch_before_load, durable=True
        )
        self.coordinators = {b: Coordinator(name, self._config) for b, name in brokers.items()}
        self.load_delay_ns = load_delay_ns
        """How long reading the partition takes a new coordinator (the load is scheduled on
        the broker's ``group-metadata-manager`` thread; here a fixed logical delay)."""
        self._loads: dict[int, tuple[int, int]] = {}
        """Broker -> (leader epoch it loads for, when the load completes)."""
        self._written: dict[int, StoredGroup | None] = {}
        """Broker -> the group record its coordinator last appended (or loaded)."""
        self._appends: dict[int, dict[int, PendingCommit | int]] = {}
        """Broker -> request id -> the commit it carries, or the generation of the group
        record it carries."""
        self._next_request = 0
        self.stats: dict[str, int] = {}
        """Loads completed, appends by outcome (``commit_NONE``, ``commit_NOT_COORDINATOR``...)."""
        self.notes: list[Message] = []
        self._member_config = member_config or MemberConfig(group=group)
        self._topics = dict(topics)
        self.app = app or ConsumerApp()
        self._next_process = 199
        self.consumers: dict[str, GroupConsumer] = {}
        """Each consumer node's client: its member and its application
        (``impl.group.consumer``); the world keeps this very dict as its consumers."""
        for name in consumers:
            self.consumers[name] = self._consumer(name)

    @property
    def members(self) -> dict[str, Member]:
        """Each consumer's group member."""
        return {name: c.member for name, c in self.consumers.items()}

    def fresh_process(self) -> int:
        """A history process id never used in this run (a restarted consumer, or one whose
        commit ended unknown, goes on as a new process)."""
        self._next_process += 1
        return self._next_process

    def _consumer(self, name: str) -> GroupConsumer:
        process = self.fresh_process()
        topic = min(self._topics)
        return GroupConsumer(
            name, self._member(name, process), topic, self.app, process, self.fresh_process
        )

    def _member(self, name: str, process: int) -> Member:
        names = [self.brokers[b] for b in sorted(self.brokers)]
        asked = [0]

        def bootstrap() -> str:
            """The next bootstrap broker in turn (the client's ``leastLoadedNode``: a
            FindCoordinator that went unanswered is retried on another broker)."""
            asked[0] += 1
            return names[(asked[0] - 1) % len(names)]

        return Member(
            name,
            self._member_config,
            bootstrap=bootstrap,
            metadata=lambda: self._topics,
            process=process,
        )

    # ------------------------------------------------------------------ brokers

    def broker_started(self, b: int) -> None:
        """A broker (re)started: its coordinator starts empty (nothing survives a crash)."""
        self.coordinators[b] = Coordinator(self.brokers[b], self._config)
        self._loads.pop(b, None)
        self._written.pop(b, None)
        self._appends[b] = {}

    def address(self, b: int) -> str:
        """The coordinator's own name as the producer of its appends (never a network node)."""
        return f"{self.brokers[b]}/group-coordinator"

    def _bump(self, key: str) -> None:
        self.stats[key] = self.stats.get(key, 0) + 1

    def _sync_hosting(self, b: int, broker: _Broker, now: int) -> Effects:
        """Follow the leadership of the group's partition: begin loading when this broker
        became its leader (again: a new leader epoch reloads), finish loading once
        ``load_delay_ns`` passed, unload when it no longer leads."""
        coordinator = self.coordinators[b]
        replica = broker.replica(CONSUMER_OFFSETS, self.partition)
        leads = replica is not None and bool(replica.is_leader)
        hosted = self.group in coordinator.hosted
        effects = Effects()
        if hosted and (not leads or self._loads[b][0] != replica.leader_epoch):
            effects.extend(coordinator.unload(self.group))
            self._loads.pop(b, None)
            hosted = False
        if leads and not hosted:
            coordinator.begin_load(self.group)
            self._loads[b] = (replica.leader_epoch, now + self.load_delay_ns)
        elif leads and self.group in coordinator.loading and now >= self._loads[b][1]:
            stored, offsets = read_group(replica.log.entries(), self.group)
            coordinator.load(self.group, stored, now, offsets)
            self._written[b] = stored
            self._bump("loads")
        return effects

    def _append(
        self,
        b: int,
        broker: _Broker,
        records: tuple[tuple[bytes, bytes], ...],
        pending: PendingCommit | int,
        now: int,
    ) -> Effects:
        """Append ``records`` to the broker's replica of the group's partition, acks=-1; the
        outcome comes back through ``broker_effects``."""
        self._next_request += 1
        rid = self._next_request
        self._appends[b][rid] = pending
        produce = Produce(self.address(b), rid, CONSUMER_OFFSETS, self.partition, -1, records)
        return self.broker_effects(b, broker.step(self.address(b), produce, now), now)

    def _store(self, b: int, broker: _Broker, now: int) -> Effects:
        """Append what the coordinator accepted since: commits, and its group record if it
        changed."""
        coordinator = self.coordinators[b]
        effects = Effects()
        if self.group not in coordinator.hosted or self.group in coordinator.loading:
            return effects
        stored = coordinator.stored.get(self.group)
        if stored is not None and stored != self._written.get(b):
            self._written[b] = stored
            record = (group_record(self.group, stored),)
            effects.extend(self._append(b, broker, record, stored.generation, now))
        while coordinator.to_store:
            pending = coordinator.to_store.pop(0)
            records = offset_records(pending.group, pending.offsets)
            effects.extend(self._append(b, broker, records, pending, now))
        return effects

    def broker_effects(self, b: int, effects: Effects, now: int) -> Effects:
        """Take the answers to the coordinator's own appends out of a step's ``effects``
        (the local callback of ``appendRecords``) and answer the commits they carried."""
        address = self.address(b)
        if not any(dst == address for dst, _ in effects.sends):
            return effects
        out = Effects(notes=list(effects.notes))
        for dst, msg in effects.sends:
            if dst != address:
                out.sends.append((dst, msg))
                continue
            assert isinstance(msg, ProduceResponse), msg
            pending = self._appends[b].pop(msg.request_id, None)
            error = APPEND_ERRORS.get(msg.error, "COORDINATOR_NOT_AVAILABLE")
            if isinstance(pending, PendingCommit):
                self._bump("commit_" + error)
                answered = self.coordinators[b].commit_done(pending, error)
            elif pending is not None:
                self._bump("group_record_" + error)
                answered = self.coordinators[b].group_stored(self.group, pending, error, now)
            else:
                continue
            self.notes.extend(answered.notes)
            out.extend(answered)
        return out

    def broker_step(self, b: int, broker: _Broker, src: str, msg: Message, now: int) -> Effects:
        effects = self._sync_hosting(b, broker, now)
        if isinstance(msg, FindCoordinator):
            leader = self._leader_of(self.partition)
            if leader is None:
                answer = FindCoordinatorResponse(
                    msg.group, COORDINATOR_NOT_AVAILABLE, correlation=msg.correlation
                )
            else:
                answer = FindCoordinatorResponse(
                    msg.group, NONE, self.brokers[leader], msg.correlation
                )
            effects.send(src, answer)
            return effects
        effects.extend(self.coordinators[b].step(src, msg, now))
        self.notes.extend(effects.notes)
        return effects.extend(self._store(b, broker, now))

    def broker_tick(self, b: int, broker: _Broker, now: int) -> Effects:
        effects = self._sync_hosting(b, broker, now)
        effects.extend(self.coordinators[b].tick(now))
        self.notes.extend(effects.notes)
        return effects.extend(self._store(b, broker, now))

    # ------------------------------------------------------------------ consumers

    def subscribe(self, name: str, now: int) -> None:
        self.consumers[name].subscribe(tuple(sorted(self._topics)), now)

    def client_restarted(self, name: str, now: int) -> None:
        """A consumer's process started again: a new member (same node, new history
        process), subscribed."""
        self.consumers[name] = self._consumer(name)
        self.subscribe(name, now)
