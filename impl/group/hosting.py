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

What is simplified: the group's metadata record (written when a generation completes) is
kept by the host as if the partition's log never lost it, rather than appended to the
replicated log; the consumers' fetches do not follow their assignment yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from impl.group.coordinator import GROUP_BUGS, Coordinator, CoordinatorConfig, StoredGroup
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
    SyncGroup,
    SyncGroupResponse,
)
from impl.group.placement import CONSUMER_OFFSETS, coordinator_partition
from impl.messages import Message
from impl.protocol import Effects

__all__ = ["GROUP_BUGS", "GROUP_REQUESTS", "GROUP_RESPONSES", "GroupHost"]

GROUP_REQUESTS = (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit)
GROUP_RESPONSES = (
    FindCoordinatorResponse,
    JoinGroupResponse,
    SyncGroupResponse,
    HeartbeatResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
)


class _Broker(Protocol):
    def replica(self, topic: str, partition: int) -> Any: ...


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
        member_config: MemberConfig | None = None,
    ) -> None:
        self.group = group
        self.partition = coordinator_partition(group, offsets_partitions)
        self.brokers = dict(brokers)
        self._leader_of = leader_of
        self._config = CoordinatorConfig(check_generation=check_generation)
        self.coordinators = {b: Coordinator(name, self._config) for b, name in brokers.items()}
        self.stored: StoredGroup | None = None
        self.notes: list[Message] = []
        self._member_config = member_config or MemberConfig(group=group)
        self._topics = dict(topics)
        self.members: dict[str, Member] = {}
        for i, name in enumerate(consumers):
            self.members[name] = self._member(name, 200 + i)

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

    def _sync_hosting(self, b: int, broker: _Broker, now: int) -> Effects:
        coordinator = self.coordinators[b]
        replica = broker.replica(CONSUMER_OFFSETS, self.partition)
        leads = replica is not None and bool(replica.is_leader)
        hosted = self.group in coordinator.hosted
        if leads and not hosted:
            coordinator.load(self.group, self.stored, now)
        elif hosted and not leads:
            return coordinator.unload(self.group)
        return Effects()

    def _keep(self, b: int) -> None:
        coordinator = self.coordinators[b]
        if self.group in coordinator.hosted and self.group in coordinator.stored:
            self.stored = coordinator.stored[self.group]

    def broker_step(self, b: int, broker: _Broker, src: str, msg: Message, now: int) -> Effects:
        effects = self._sync_hosting(b, broker, now)
        if isinstance(msg, FindCoordinator):
            leader = self._leader_of(self.partition)
            if leader is None:
                effects.send(src, FindCoordinatorResponse(msg.group, COORDINATOR_NOT_AVAILABLE))
            else:
                effects.send(src, FindCoordinatorResponse(msg.group, NONE, self.brokers[leader]))
            return effects
        effects.extend(self.coordinators[b].step(src, msg, now))
        self._keep(b)
        self.notes.extend(effects.notes)
        return effects

    def broker_tick(self, b: int, broker: _Broker, now: int) -> Effects:
        effects = self._sync_hosting(b, broker, now)
        effects.extend(self.coordinators[b].tick(now))
        self._keep(b)
        self.notes.extend(effects.notes)
        return effects

    # ------------------------------------------------------------------ consumers

    def subscribe(self, name: str, now: int) -> None:
        self.members[name].subscribe(tuple(sorted(self._topics)), now)

    def client_restarted(self, name: str, now: int) -> None:
        """A consumer's process started again: a new member (same node), subscribed."""
        self.members[name] = self._member(name, self.members[name].process + 1000)
        self.subscribe(name, now)
