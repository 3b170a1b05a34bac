"""The group coordinator (classic protocol): Kafka's ``GroupCoordinator`` for the groups whose
``__consumer_offsets`` partition this broker leads (``impl.group.placement``).

Sans-I/O: ``step(src, msg, now)`` handles one request and ``tick(now)`` runs the timers; both
return ``Effects`` (responses to send, notes for the world's records). ``now`` is the broker's
**monotonic** clock (``impl.sim.clock``: the coordinator's heartbeat and rebalance purgatories
are ``SystemTimer`` s on ``hiResClockMs``). A request for a group this coordinator does not
host gets ``NOT_COORDINATOR`` (the client looks the coordinator up again).

The group moves through Kafka's states (the table of ``spec.group.lifecycle``, every move
through ``group_transition``):

- a JoinGroup (a new member, or a known one rejoining) moves Empty, Stable or
  CompletingRebalance to **PreparingRebalance**; the JoinGroup is parked until every known
  member has rejoined, or until the rebalance timeout (the largest ``max.poll.interval.ms``
  of the members, KIP-62) expires, when the members that did not rejoin are removed;
- then the generation id goes up by one, a leader is kept or chosen, the group is
  **CompletingRebalance** and every parked JoinGroup is answered (the leader's answer
  carries every member's subscription);
- the leader's SyncGroup carries the assignment: the group is **Stable**, every parked
  SyncGroup is answered with its member's partitions;
- a member that sends no heartbeat for ``session.timeout.ms`` is removed (a parked JoinGroup
  keeps its member alive, as ``MemberMetadata.shouldKeepAlive``), as is one that sends
  LeaveGroup; either starts a rebalance; the group is **Empty** when none is left.

Fencing, in ``GroupCoordinator``'s order: an unknown member id gets ``UNKNOWN_MEMBER_ID``; a
generation id that is not the group's gets ``ILLEGAL_GENERATION``; a Heartbeat or SyncGroup
during PreparingRebalance gets ``REBALANCE_IN_PROGRESS``; an OffsetCommit gets it during
CompletingRebalance, before any other check, and is accepted from the current generation
during PreparingRebalance (the commit in ``onPartitionsRevoked``).
``check_generation=False`` is the ``no_generation_check`` bug (``spec/group``'s): the
generation id is not compared.

``Coordinator.unload(group)`` is what happens when the broker stops leading the partition:
the group is Dead here, and every parked request is answered ``NOT_COORDINATOR``.
``Coordinator.load(...)`` is the new leader reading the group's last stored state (Kafka
stores the group when the leader's SyncGroup completes a generation, and when it empties).

Committed offsets (issue 19): an accepted OffsetCommit updates the coordinator's offsets
cache, from which OffsetFetch is answered (``GroupMetadataManager.getOffsets``; ``NO_OFFSET``
where the group committed nothing). With ``CoordinatorConfig.durable`` (the coordinator on
the simulated cluster, ``impl.group.hosting``) an accepted commit is not answered at once:
it waits in ``to_store`` for the host to append it to ``__consumer_offsets`` with
``offsets.commit.required.acks=-1``, and ``commit_done`` answers it once the append is
committed (the cache is updated only then, as ``storeOffsets``' callback does) or failed.
Between ``begin_load`` (the broker became the partition's leader) and ``load`` (it has read
its replica of the partition) every request of the group is answered
``COORDINATOR_LOAD_IN_PROGRESS``.
"""

from __future__ import annotations

import attrs

from impl.group.messages import (
    COORDINATOR_LOAD_IN_PROGRESS,
    ILLEGAL_GENERATION,
    NO_OFFSET,
    NONE,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    CommitAccepted,
    GenerationCompleted,
    Heartbeat,
    HeartbeatResponse,
    JoinGroup,
    JoinGroupResponse,
    LeaveGroup,
    LeaveGroupResponse,
    MemberRemoved,
    OffsetCommit,
    OffsetCommitResponse,
    OffsetFetch,
    OffsetFetchResponse,
    Partitions,
    SyncGroup,
    SyncGroupResponse,
)
from impl.messages import Message
from impl.protocol import Effects
from spec.group.lifecycle import (
    COMPLETING,
    DEAD,
    EMPTY,
    PREPARING,
    STABLE,
    group_transition,
)

__all__ = [
    "GROUP_BUGS",
    "Coordinator",
    "CoordinatorConfig",
    "GroupState",
    "MemberState",
    "PendingCommit",
    "StoredGroup",
]

GROUP_BUGS = frozenset({"no_generation_check", "fetch_before_load"})
"""The group fences ``kmodel test --bug`` can turn off (the names of ``spec/group``'s and
``spec/offsets``' broken variants)."""


@attrs.frozen
class CoordinatorConfig:
    check_generation: bool = True
    """False: the ``no_generation_check`` bug."""
    fetch_before_load: bool = False
    """True: the ``fetch_before_load`` bug (``spec/offsets``'): while the group's partition
    of ``__consumer_offsets`` is still being read, OffsetFetch is answered from the cache
    (empty: "no committed offset") instead of ``COORDINATOR_LOAD_IN_PROGRESS``."""
    durable: bool = False
    """True: accepted commits wait for their append to ``__consumer_offsets``
    (``to_store``, ``commit_done``); False: answered at once (``impl.group.run``'s harness,
    which keeps no log)."""


@attrs.frozen
class PendingCommit:
    """An accepted OffsetCommit waiting for its record to be replicated."""

    group: str
    client: str
    member_id: str
    generation: int
    offsets: tuple[tuple[tuple[str, int], int], ...]
    correlation: int = 0


@attrs.define
class MemberState:
    client: str
    """The node the member's responses go to."""
    topics: tuple[str, ...]
    session_timeout_ns: int
    rebalance_timeout_ns: int
    last_heartbeat: int
    awaiting_join: bool = False
    awaiting_sync: bool = False
    partitions: Partitions = ()
    reported: Partitions = ()
    """What its last JoinGroup said it owns (``JoinGroup.owned``)."""
    join_correlation: int = 0
    sync_correlation: int = 0
    """The correlation ids of its parked JoinGroup and SyncGroup: their answers, sent later,
    echo them (Kafka answers a parked request on the connection it came in on; the client
    drops an answer whose request it no longer waits for)."""


@attrs.define
class GroupState:
    state: str = EMPTY
    generation: int = 0
    leader: str = ""
    members: dict[str, MemberState] = attrs.Factory(dict)
    rebalance_deadline: int = 0
    rebalance_started: int = 0


@attrs.frozen
class StoredGroup:
    """What Kafka's ``GroupMetadata`` record keeps: generation, leader, members with their
    subscriptions and assignments (``storeGroup``)."""

    generation: int
    leader: str
    members: tuple[tuple[str, str, tuple[str, ...], int, int, Partitions], ...]
    """(member id, client, topics, session timeout, rebalance timeout, partitions)."""


class Coordinator:
    """The coordinator role of broker ``name`` for the groups it hosts."""

    def __init__(self, name: str, config: CoordinatorConfig | None = None) -> None:
        self.name = name
        self.config = config or CoordinatorConfig()
        self.groups: dict[str, GroupState] = {}
        self.hosted: set[str] = set()
        self.stored: dict[str, StoredGroup] = {}
        """What this coordinator wrote to the group's partition (the world keeps the log)."""
        self.offsets: dict[str, dict[tuple[str, int], int]] = {}
        """The offsets cache: per group, per partition, the committed offset."""
        self.loading: set[str] = set()
        """Groups hosted here whose partition is still being read (``begin_load``)."""
        self.to_store: list[PendingCommit] = []
        """Durable mode: accepted commits the host must append (it drains this list)."""
        self.storing: dict[str, int] = {}
        """Durable mode: group -> the generation whose record is being appended (its
        SyncGroups wait for it)."""
        self._next_member = 0

    # ------------------------------------------------------------------ hosting

    def begin_load(self, group: str) -> None:
        """The broker became the leader of ``group``'s partition and starts reading it
        (``GroupMetadataManager.scheduleLoadGroupAndOffsets``): until ``load``, every
        request of the group gets ``COORDINATOR_LOAD_IN_PROGRESS``."""
        self.hosted.add(group)
        self.loading.add(group)
        self.groups[group] = GroupState()
        self.offsets[group] = {}

    def load(
        self,
        group: str,
        stored: StoredGroup | None,
        now: int,
        offsets: dict[tuple[str, int], int] | None = None,
    ) -> None:
        """Become ``group``'s coordinator, starting from its last stored state: the loaded
        members get a full session from ``now`` (Kafka schedules their expiry on load), and
        ``offsets`` fill the cache."""
        self.hosted.add(group)
        self.loading.discard(group)
        self.offsets[group] = dict(offsets or {})
        if stored is None:
            self.stored.pop(group, None)
        else:
            self.stored[group] = stored
        g = GroupState()
        if stored is not None and stored.members:
            g.state, g.generation, g.leader = STABLE, stored.generation, stored.leader
            for mid, client, topics, session, rebalance, parts in stored.members:
                g.members[mid] = MemberState(
                    client, topics, session, rebalance, now, partitions=parts
                )
        elif stored is not None:
            g.generation = stored.generation
        self.groups[group] = g

    def unload(self, group: str) -> Effects:
        """Stop coordinating ``group``: Dead here; parked requests get ``NOT_COORDINATOR``."""
        effects = Effects()
        self.hosted.discard(group)
        self.loading.discard(group)
        self.offsets.pop(group, None)
        self.storing.pop(group, None)
        g = self.groups.pop(group, None)
        if g is None:
            return effects
        g.state = group_transition(g.state, DEAD)
        for mid in sorted(g.members):
            m = g.members[mid]
            if m.awaiting_join:
                effects.send(m.client, _join_error(group, NOT_COORDINATOR, m.join_correlation))
            if m.awaiting_sync:
                effects.send(m.client, _sync_error(group, NOT_COORDINATOR, m.sync_correlation))
        return effects

    # ------------------------------------------------------------------ requests

    def step(self, src: str, msg: Message, now: int) -> Effects:
        effects = Effects()
        group = getattr(msg, "group", "")
        g = self.groups.get(group) if group in self.hosted else None
        if g is not None and group in self.loading:
            if isinstance(msg, OffsetFetch) and self.config.fetch_before_load:
                cache = self.offsets.get(group, {})  # the bug: not loaded yet
                answer = tuple((tp, cache.get(tp, NO_OFFSET)) for tp in msg.partitions)
                effects.send(src, OffsetFetchResponse(group, NONE, answer, msg.correlation))
                return effects
            self._refuse(src, msg, COORDINATOR_LOAD_IN_PROGRESS, effects)
            return effects
        if isinstance(msg, JoinGroup):
            if g is None:
                effects.send(src, _join_error(group, NOT_COORDINATOR, msg.correlation))
            else:
                self._join(g, src, msg, now, effects)
        elif isinstance(msg, SyncGroup):
            if g is None:
                effects.send(src, _sync_error(group, NOT_COORDINATOR, msg.correlation))
            else:
                self._sync(g, src, msg, now, effects)
        elif isinstance(msg, Heartbeat):
            error = NOT_COORDINATOR if g is None else self._heartbeat(g, msg, now)
            generation = g.generation if g else -1
            effects.send(src, HeartbeatResponse(group, error, generation, msg.correlation))
        elif isinstance(msg, LeaveGroup):
            if g is None:
                effects.send(src, LeaveGroupResponse(group, NOT_COORDINATOR))
            elif msg.member_id not in g.members:
                effects.send(src, LeaveGroupResponse(group, UNKNOWN_MEMBER_ID))
            else:
                self._remove(g, group, msg.member_id, "leave", now, effects)
                effects.send(src, LeaveGroupResponse(group, NONE))
        elif isinstance(msg, OffsetCommit):
            error = NOT_COORDINATOR if g is None else self._commit(g, msg, now, effects)
            if error == NONE and self.config.durable:
                # Answered by commit_done once the record is replicated (or not).
                self.to_store.append(
                    PendingCommit(
                        group, src, msg.member_id, msg.generation, msg.offsets, msg.correlation
                    )
                )
                return effects
            if error == NONE:
                self.offsets.setdefault(group, {}).update(msg.offsets)
            effects.send(
                src,
                OffsetCommitResponse(
                    group, error, g.generation if g else -1, msg.offsets, msg.correlation
                ),
            )
        elif isinstance(msg, OffsetFetch):
            if g is None:
                effects.send(
                    src, OffsetFetchResponse(group, NOT_COORDINATOR, correlation=msg.correlation)
                )
            else:
                cache = self.offsets.get(group, {})
                answer = tuple((tp, cache.get(tp, NO_OFFSET)) for tp in msg.partitions)
                effects.send(src, OffsetFetchResponse(group, NONE, answer, msg.correlation))
        else:
            raise TypeError(f"a group coordinator handles group requests, not {msg.describe()}")
        return effects

    @staticmethod
    def _refuse(src: str, msg: Message, error: str, effects: Effects) -> None:
        """Answer a group request with ``error`` and change nothing."""
        group = getattr(msg, "group", "")
        if isinstance(msg, JoinGroup):
            effects.send(src, _join_error(group, error, msg.correlation))
        elif isinstance(msg, SyncGroup):
            effects.send(src, _sync_error(group, error, msg.correlation))
        elif isinstance(msg, Heartbeat):
            effects.send(src, HeartbeatResponse(group, error, correlation=msg.correlation))
        elif isinstance(msg, LeaveGroup):
            effects.send(src, LeaveGroupResponse(group, error))
        elif isinstance(msg, OffsetCommit):
            effects.send(src, OffsetCommitResponse(group, error, -1, msg.offsets, msg.correlation))
        elif isinstance(msg, OffsetFetch):
            effects.send(src, OffsetFetchResponse(group, error, correlation=msg.correlation))
        else:
            raise TypeError(f"a group coordinator handles group requests, not {msg.describe()}")

    def commit_done(self, pending: PendingCommit, error: str) -> Effects:
        """The append of ``pending``'s record ended: committed (``NONE``: the cache takes the
        offsets) or not (``error``, Kafka's mapping of the append's error); its committer is
        answered now."""
        effects = Effects()
        g = self.groups.get(pending.group) if pending.group in self.hosted else None
        if error == NONE and g is not None:
            self.offsets.setdefault(pending.group, {}).update(pending.offsets)
        effects.send(
            pending.client,
            OffsetCommitResponse(
                pending.group,
                error,
                g.generation if g else -1,
                pending.offsets,
                pending.correlation,
            ),
        )
        return effects

    def _fence(self, g: GroupState, member_id: str, generation: int) -> str:
        if member_id not in g.members:
            return UNKNOWN_MEMBER_ID
        if self.config.check_generation and generation != g.generation:
            return ILLEGAL_GENERATION
        return NONE

    def _join(self, g: GroupState, src: str, msg: JoinGroup, now: int, effects: Effects) -> None:
        mid = msg.member_id
        if not mid:
            self._next_member += 1
            mid = f"{msg.client_id}-{self.name}-{self._next_member}"
        elif mid not in g.members:
            effects.send(src, _join_error(msg.group, UNKNOWN_MEMBER_ID, msg.correlation))
            return
        m = g.members.get(mid)
        if m is None:
            m = MemberState(src, msg.topics, msg.session_timeout_ns, msg.rebalance_timeout_ns, now)
            g.members[mid] = m
        m.client, m.topics, m.last_heartbeat = src, msg.topics, now
        m.session_timeout_ns, m.rebalance_timeout_ns = (
            msg.session_timeout_ns,
            msg.rebalance_timeout_ns,
        )
        m.awaiting_join, m.awaiting_sync = True, False
        m.join_correlation = msg.correlation
        m.reported = msg.owned
        if g.state != PREPARING:
            self._prepare(g, msg.group, now, effects)
        self._try_complete_join(g, msg.group, now, effects)

    def _prepare(self, g: GroupState, group: str, now: int, effects: Effects) -> None:
        """Start a rebalance: PreparingRebalance, deadline the largest rebalance timeout;
        members waiting for a SyncGroup answer are told ``REBALANCE_IN_PROGRESS``."""
        g.state = group_transition(g.state, PREPARING)
        g.rebalance_started = now
        g.rebalance_deadline = now + max(
            (m.rebalance_timeout_ns for m in g.members.values()), default=0
        )
        for mid in sorted(g.members):
            m = g.members[mid]
            if m.awaiting_sync:
                m.awaiting_sync = False
                effects.send(
                    m.client, _sync_error(group, REBALANCE_IN_PROGRESS, m.sync_correlation)
                )

    def _try_complete_join(
        self, g: GroupState, group: str, now: int, effects: Effects, expired: bool = False
    ) -> None:
        if g.state != PREPARING:
            return
        if not expired and not all(m.awaiting_join for m in g.members.values()):
            return
        for mid in sorted(g.members):
            if not g.members[mid].awaiting_join:
                self._drop(g, group, mid, "rebalance", now, effects)
        g.generation += 1
        if not g.members:
            g.state = group_transition(g.state, EMPTY)
            g.leader = ""
            self.stored[group] = StoredGroup(g.generation, "", ())
            return
        if g.leader not in g.members:
            g.leader = min(g.members)
        g.state = group_transition(g.state, COMPLETING)
        subscriptions = tuple((mid, g.members[mid].topics) for mid in sorted(g.members))
        reported = tuple((mid, g.members[mid].reported) for mid in sorted(g.members))
        for mid in sorted(g.members):
            m = g.members[mid]
            m.awaiting_join = False
            m.partitions = ()
            m.last_heartbeat = now
            lead = mid == g.leader
            effects.send(
                m.client,
                JoinGroupResponse(
                    group,
                    NONE,
                    g.generation,
                    mid,
                    g.leader,
                    subscriptions if lead else (),
                    reported if lead else (),
                    m.join_correlation,
                ),
            )

    def _sync(self, g: GroupState, src: str, msg: SyncGroup, now: int, effects: Effects) -> None:
        error = self._fence(g, msg.member_id, msg.generation)
        if error == NONE and g.state in (EMPTY, DEAD):
            error = UNKNOWN_MEMBER_ID
        if error == NONE and g.state == PREPARING:
            error = REBALANCE_IN_PROGRESS
        if error != NONE:
            effects.send(src, _sync_error(msg.group, error, msg.correlation))
            return
        m = g.members[msg.member_id]
        m.last_heartbeat = now
        if g.state == STABLE:
            effects.send(
                src,
                SyncGroupResponse(msg.group, NONE, g.generation, m.partitions, msg.correlation),
            )
            return
        m.awaiting_sync = True
        m.sync_correlation = msg.correlation
        if msg.member_id != g.leader or self.storing.get(msg.group) == g.generation:
            return
        given = dict(msg.assignment)
        for mid, member in g.members.items():
            member.partitions = tuple(sorted(given.get(mid, ())))
        self.stored[msg.group] = StoredGroup(
            g.generation,
            g.leader,
            tuple(
                (
                    mid,
                    x.client,
                    x.topics,
                    x.session_timeout_ns,
                    x.rebalance_timeout_ns,
                    x.partitions,
                )
                for mid, x in sorted(g.members.items())
            ),
        )
        if self.config.durable:
            # storeGroup: the members are answered once the record is replicated.
            self.storing[msg.group] = g.generation
            return
        self._complete_sync(g, msg.group, now, effects)

    def _complete_sync(self, g: GroupState, group: str, now: int, effects: Effects) -> None:
        """The generation's assignment is stored: Stable, and every parked SyncGroup is
        answered with its member's partitions."""
        g.state = group_transition(g.state, STABLE)
        assignment = tuple((mid, g.members[mid].partitions) for mid in sorted(g.members))
        effects.note(GenerationCompleted(self.name, group, g.generation, assignment, now))
        for mid in sorted(g.members):
            member = g.members[mid]
            if member.awaiting_sync:
                member.awaiting_sync = False
                effects.send(
                    member.client,
                    SyncGroupResponse(
                        group, NONE, g.generation, member.partitions, member.sync_correlation
                    ),
                )

    def group_stored(self, group: str, generation: int, error: str, now: int) -> Effects:
        """Durable mode: the append of ``group``'s record for ``generation`` ended
        (``GroupCoordinator.doSyncGroup``'s ``storeGroup`` callback). If the group still
        awaits it: on success Stable and the SyncGroups answered; on an error every parked
        SyncGroup gets it and the group rebalances."""
        effects = Effects()
        g = self.groups.get(group) if group in self.hosted else None
        if self.storing.get(group) != generation:
            return effects
        del self.storing[group]
        if g is None or g.state != COMPLETING or g.generation != generation:
            return effects
        if error == NONE:
            self._complete_sync(g, group, now, effects)
            return effects
        for mid in sorted(g.members):
            member = g.members[mid]
            member.partitions = ()
            if member.awaiting_sync:
                member.awaiting_sync = False
                effects.send(member.client, _sync_error(group, error, member.sync_correlation))
        self._prepare(g, group, now, effects)
        return effects

    def _heartbeat(self, g: GroupState, msg: Heartbeat, now: int) -> str:
        error = self._fence(g, msg.member_id, msg.generation)
        if error != NONE:
            return error
        g.members[msg.member_id].last_heartbeat = now
        return REBALANCE_IN_PROGRESS if g.state == PREPARING else NONE

    def _commit(self, g: GroupState, msg: OffsetCommit, now: int, effects: Effects) -> str:
        """``GroupCoordinator.handleCommitOffsets``: in CompletingRebalance every commit gets
        ``REBALANCE_IN_PROGRESS`` (the new generation's assignment is not known yet); then
        the member and generation fences; a commit of the current generation during
        PreparingRebalance is accepted: that is how a member commits in
        ``onPartitionsRevoked`` before it rejoins (``spec.group``'s ``fence_outcome``)."""
        if g.state == COMPLETING:
            return REBALANCE_IN_PROGRESS
        error = self._fence(g, msg.member_id, msg.generation)
        if error != NONE:
            return error
        m = g.members[msg.member_id]
        m.last_heartbeat = now
        partitions = tuple(sorted(tp for tp, _ in msg.offsets))
        effects.note(
            CommitAccepted(
                self.name,
                msg.group,
                msg.member_id,
                msg.generation,
                g.generation,
                partitions,
                m.partitions,
                now,
            )
        )
        return NONE

    # ------------------------------------------------------------------ removal and timers

    def _drop(
        self, g: GroupState, group: str, mid: str, why: str, now: int, effects: Effects
    ) -> None:
        m = g.members.pop(mid)
        if m.awaiting_join:
            effects.send(m.client, _join_error(group, UNKNOWN_MEMBER_ID, m.join_correlation))
        if m.awaiting_sync:
            effects.send(m.client, _sync_error(group, UNKNOWN_MEMBER_ID, m.sync_correlation))
        if g.leader == mid:
            g.leader = ""
        effects.note(MemberRemoved(self.name, group, mid, why, now))

    def _remove(
        self, g: GroupState, group: str, mid: str, why: str, now: int, effects: Effects
    ) -> None:
        """Remove a member (LeaveGroup, session expiry) and rebalance the rest."""
        self._drop(g, group, mid, why, now, effects)
        if g.state in (STABLE, COMPLETING):
            if g.members:
                self._prepare(g, group, now, effects)
            else:
                g.state = group_transition(g.state, PREPARING)
        self._try_complete_join(g, group, now, effects)

    def tick(self, now: int) -> Effects:
        """Expire sessions and rebalance timeouts (the heartbeat and join purgatories)."""
        effects = Effects()
        for group in sorted(self.hosted - self.loading):
            g = self.groups[group]
            for mid in sorted(g.members):
                m = g.members[mid]
                if not m.awaiting_join and now >= m.last_heartbeat + m.session_timeout_ns:
                    self._remove(g, group, mid, "session", now, effects)
            if g.state == PREPARING and now >= g.rebalance_deadline:
                self._try_complete_join(g, group, now, effects, expired=True)
        return effects


def _join_error(group: str, error: str, correlation: int) -> JoinGroupResponse:
    return JoinGroupResponse(group, error, correlation=correlation)


def _sync_error(group: str, error: str, correlation: int) -> SyncGroupResponse:
    return SyncGroupResponse(group, error, correlation=correlation)
