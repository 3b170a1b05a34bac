"""The classic consumer-group protocol as an executable state machine: JoinGroup, SyncGroup,
Heartbeat, LeaveGroup and OffsetCommit between consumers and the group coordinator, with
generations, member ids, expiry, coordinator failover and the fences that make a zombie
member harmless.

The *group coordinator* of a group is the broker leading partition
``abs(groupId.hashCode()) % offsets.topic.num.partitions`` of ``__consumer_offsets`` (50 by
default). A rebalance has two phases (the "embedded protocol" of the Kafka protocol guide,
KIP-62 for the separate ``max.poll.interval.ms``):

1. *join*: every member sends JoinGroup; the coordinator parks the requests until every
   known member has (re)joined, or ``rebalance.timeout.ms`` (= ``max.poll.interval.ms``)
   has passed and the laggards are removed; then it bumps the *generation id*, picks a
   *leader*, and answers every JoinGroup (the leader's response lists the members and
   their subscriptions);
2. *sync*: the leader computes the assignment and sends it in its SyncGroup; the
   coordinator stores it in ``__consumer_offsets`` and answers every member's SyncGroup
   with its partitions. The group is Stable.

Members heartbeat within ``session.timeout.ms`` and poll within ``max.poll.interval.ms``;
either expiry removes the member and starts a rebalance. Here expiry is abstract: *any*
member may be expired at any time (false suspicion included: a slow member, a long GC, a
network cut). The member is not told. A member paused past its session is a *zombie*: it
still believes it owns its partitions in its old generation. What keeps it harmless is that
every request carries the member id and generation id, and the coordinator answers
UNKNOWN_MEMBER_ID (the id is no longer a member), ILLEGAL_GENERATION (the generation is not
the current one) or REBALANCE_IN_PROGRESS (a rebalance is under way: rejoin) instead of
acting on it. OffsetCommit is fenced the same way, which is what makes a zombie's progress
harmless: it may still process records (duplicates), but it cannot commit them.

The coordinator may move (its broker loses the leadership of the ``__consumer_offsets``
partition): the old coordinator unloads the group (Dead) and answers NOT_COORDINATOR; the
new one answers COORDINATOR_LOAD_IN_PROGRESS until it has loaded the group's last stored
metadata (written when the leader's assignment arrived), from which the group resumes
Stable or Empty. Members find the new coordinator (FindCoordinator) and carry on.

With ``protocol = "cooperative"`` (KIP-429, cooperative-sticky) members keep their
partitions through the join phase and report them in their JoinGroup; the leader gives a
partition that moves to no one in this generation; its old owner revokes it on seeing it
missing from its assignment and rejoins, and the next rebalance hands it over.

Requests in flight: SyncGroup and OffsetCommit travel as messages that the coordinator
handles at some later step, while other members and the coordinator move on. A member may
give up on one (``request.timeout.ms``, a bounded fault: the request or its answer was
lost); the client then closes the connection, so a request is never handled after a later
request of the same consumer. Stale generations therefore reach the coordinator from
zombies and across coordinator failover: the coordinator stores the generation only with
the leader's assignment (and when the group empties), so after a failover the group
resumes at the last *stored* generation and the next rebalance hands out a generation id
that members of the lost one still hold. JoinGroup, Heartbeat and LeaveGroup are single
steps. ``Params.network = "reordering"`` drops the per-connection order: a request given up
on stays in the network and may overtake nothing but be overtaken by its sender's next
ones. There the SyncGroup generation check is what stops a leader's stale assignment -- and
a generation id reused after failover defeats it (the pinned finding
``generation-reused-after-failover``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs

from spec.framework import (
    Fair,
    Kind,
    Spec,
    Step,
    action,
    eventually,
    invariant,
    sometimes_transition,
    transition_property,
)
from spec.group.assignors import cooperative_assignment, range_assignment
from spec.group.lifecycle import (
    AWAITING_SYNC,
    COMPLETING,
    DEAD,
    EMPTY,
    JOINING,
    MEMBER_STABLE,
    PREPARING,
    STABLE,
    UNJOINED,
    group_transition,
    member_transition,
)
from spec.group.params import Params

MemberId = tuple[int, int]
"""(consumer slot, incarnation): Kafka's member ids are ``client.id-UUID``, fresh on every
join without an id; here the n-th id handed to consumer ``c`` is ``(c, n)``."""
NOBODY: MemberId = (0, 0)
"""No member id (Kafka's ``UNKNOWN_MEMBER_ID`` sentinel, the empty string)."""
NO_GENERATION = 0

SYNC = "SyncGroup"
COMMIT = "OffsetCommit"

# error codes, as the Kafka protocol names them
NONE_ERROR = "NONE"
NOT_COORDINATOR = "NOT_COORDINATOR"
UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
ILLEGAL_GENERATION = "ILLEGAL_GENERATION"
REBALANCE_IN_PROGRESS = "REBALANCE_IN_PROGRESS"
PARKED = "parked"
"""Not an error: a follower's SyncGroup waits for the leader's."""

Assignment = tuple[tuple[MemberId, frozenset[int]], ...]


def show_id(mid: MemberId) -> str:
    """``1a``: consumer 1's first member id; ``-``: none."""
    return "-" if mid == NOBODY else f"{mid[0]}{'abcdefgh'[mid[1] - 1]}"


def show_set(ps: frozenset[int]) -> str:
    return "{" + ",".join(f"p{p}" for p in sorted(ps)) + "}"


def show_assignment(a: Assignment) -> str:
    return " ".join(f"{show_id(m)}:{show_set(ps)}" for m, ps in a) or "-"


@attrs.frozen(slots=True, cache_hash=True)
class Request:
    """A SyncGroup or OffsetCommit in the network, with the member id, generation id and
    coordinator it was sent with. A leader's SyncGroup carries the assignment; an
    OffsetCommit the partitions whose offsets it commits."""

    kind: str
    """SyncGroup or OffsetCommit."""
    slot: int
    """The consumer that sent it."""
    member_id: MemberId
    """The member id it carries."""
    generation: int
    """The generation id it carries: what the coordinator fences stale requests by."""
    coordinator: int
    """The coordinator it was sent to (a stale one answers NOT_COORDINATOR)."""
    assignment: Assignment = ()
    """A leader's SyncGroup: the assignment it computed."""
    partitions: frozenset[int] = frozenset()
    """An OffsetCommit: the partitions whose offsets it commits."""

    def describe(self) -> str:
        who = f"{show_id(self.member_id)} g{self.generation} c{self.coordinator}"
        if self.kind == SYNC:
            body = f" [{show_assignment(self.assignment)}]" if self.assignment else ""
            return f"Sync {who}{body}"
        return f"Commit {who} {show_set(self.partitions)}"

    def key(self) -> tuple[Any, ...]:
        return (
            self.kind,
            self.slot,
            self.member_id,
            self.generation,
            self.coordinator,
            tuple((m, tuple(sorted(ps))) for m, ps in self.assignment),
            tuple(sorted(self.partitions)),
        )


@attrs.frozen(slots=True, cache_hash=True)
class MemberMeta:
    """The coordinator's record of a member (``MemberMetadata``)."""

    member_id: MemberId
    """Its member id."""
    joined: bool = False
    """Its JoinGroup of the current join phase is parked (``awaitingJoinCallback``)."""
    owned: frozenset[int] = frozenset()
    """The partitions its JoinGroup said it owns (KIP-429's subscription ``ownedPartitions``;
    always empty under the eager protocol)."""
    assignment: frozenset[int] = frozenset()
    """The partitions the leader's assignment gave it in this generation."""
    sync_parked: bool = False
    """Its SyncGroup is parked until the leader's arrives (``awaitingSyncCallback``)."""

    def describe(self) -> str:
        flags = ("J" if self.joined else "") + ("S" if self.sync_parked else "")
        return f"{show_id(self.member_id)}{flags}:{show_set(self.assignment)}"


@attrs.frozen(slots=True, cache_hash=True)
class Group:
    """The group as its coordinator holds it (``GroupMetadata``)."""

    state: str
    """Empty, PreparingRebalance, CompletingRebalance, Stable or Dead."""
    generation: int
    """The generation id, bumped when a join phase completes."""
    leader: MemberId
    """The member chosen to compute the assignment in this generation."""
    members: tuple[MemberMeta, ...]
    """Sorted by member id."""
    coordinator: int
    """Which coordinator holds it: bumped on every failover (the new leader of the group's
    ``__consumer_offsets`` partition)."""
    loading: bool = False
    """The new coordinator is still loading the group: COORDINATOR_LOAD_IN_PROGRESS."""

    def meta(self, mid: MemberId) -> MemberMeta | None:
        for meta in self.members:
            if meta.member_id == mid:
                return meta
        return None

    def ids(self) -> frozenset[MemberId]:
        return frozenset(meta.member_id for meta in self.members)


@attrs.frozen(slots=True, cache_hash=True)
class Stored:
    """The group's last metadata record in ``__consumer_offsets`` (``GroupMetadataManager
    .storeGroup``): written with the leader's assignment, and when the group empties."""

    generation: int
    """The generation id it was written in."""
    leader: MemberId
    """That generation's leader."""
    members: tuple[MemberMeta, ...]
    """Each member with its subscription (cooperatively: the partitions it reported owned)
    and its assignment."""

    def describe(self) -> str:
        return f"g{self.generation} " + (
            " ".join(f"{show_id(m.member_id)}:{show_set(m.assignment)}" for m in self.members)
            or "-"
        )


@attrs.frozen(slots=True, cache_hash=True)
class Member:
    """A consumer's view of its membership (``AbstractCoordinator`` / ``ConsumerCoordinator``)."""

    state: str = UNJOINED
    """unjoined, joining, awaiting-sync or stable."""
    member_id: MemberId = NOBODY
    """The member id it was given (NOBODY before its first JoinGroup response)."""
    generation: int = NO_GENERATION
    """The generation id it believes current, sent with every request."""
    owned: frozenset[int] = frozenset()
    """The partitions it believes it owns and reads (``SubscriptionState``'s assignment)."""
    plan: Assignment = ()
    """As leader: the assignment it computed from its JoinGroup response."""
    pending: Request | None = None
    """The SyncGroup or OffsetCommit it is waiting on."""


@attrs.frozen(slots=True, cache_hash=True)
class State:
    """One group: the coordinator's view, what ``__consumer_offsets`` stores, every
    consumer's view, and the requests in the network."""

    group: Group
    """The group as the current coordinator holds it in memory."""
    stored: Stored
    """The group's last metadata record in ``__consumer_offsets``."""
    members: tuple[Member, ...]
    """``members[i]`` is consumer ``i + 1``."""
    inflight: frozenset[Request]
    """SyncGroup and OffsetCommit requests sent and not yet handled."""
    offsets: tuple[int, ...]
    """Per partition: the generation of the last accepted OffsetCommit (0: none). The
    offsets themselves are the offsets spec's business; what matters here is who may
    commit."""
    ids_issued: tuple[int, ...]
    """Per consumer: member ids handed out so far."""
    expiries: int = 0
    """Members expired so far (the fault budget ``Params.max_expiries``)."""
    timeouts: int = 0
    """Requests given up on so far (the fault budget ``Params.max_timeouts``)."""
    failovers: int = 0
    """Coordinator moves so far (the fault budget ``Params.max_failovers``)."""

    def member(self, slot: int) -> Member:
        return self.members[slot - 1]


def _with_member(s: State, slot: int, new: Member) -> tuple[Member, ...]:
    out = list(s.members)
    out[slot - 1] = new
    return tuple(out)


def _sorted_metas(metas: list[MemberMeta]) -> tuple[MemberMeta, ...]:
    return tuple(sorted(metas, key=lambda m: m.member_id))


class ClassicGroup(Spec):
    """The classic group protocol (eager, or KIP-429 cooperative). See the module docstring."""

    name = "group"

    def __init__(self, params: Params | None = None) -> None:
        self.p = params or Params()
        self.cooperative = self.p.protocol == "cooperative"
        self.bugs = self.p.bugs
        self.slots = self.p.slots
        self.everything = self.p.all_partitions
        self._slot_args = tuple((m,) for m in self.slots)

    def enabled_actions(self) -> tuple[Any, ...]:
        """The faults whose budget is zero are left out (and the coordinator's loading with
        failover), so that coverage warns only about what could have fired."""
        skip = set()
        if self.p.max_failovers == 0:
            skip |= {"coordinator_moves", "load_group", "coordinator_loading"}
        if self.p.max_timeouts == 0:
            skip.add("request_timeout")
        if self.p.max_expiries == 0:
            skip.add("expire")
        return tuple(d for d in self._actions if d.name not in skip)

    # --- initial state -------------------------------------------------------------------

    def init(self) -> Iterator[State]:
        """A new group: Empty at generation 0 on its first coordinator, nothing stored, no
        offsets committed; every consumer subscribed but not yet joined."""
        yield State(
            group=Group(EMPTY, NO_GENERATION, NOBODY, (), 0),
            stored=Stored(NO_GENERATION, NOBODY, ()),
            members=tuple(Member() for _ in self.slots),
            inflight=frozenset(),
            offsets=tuple(0 for _ in range(self.p.partitions)),
            ids_issued=tuple(0 for _ in self.slots),
        )

    # --- helpers -------------------------------------------------------------------------

    def checks_generation(self, kind: str) -> bool:
        """Whether the coordinator checks a request's generation id (ILLEGAL_GENERATION)."""
        if "no_generation_check" in self.bugs:
            return False
        return not (kind == SYNC and "sync_without_generation_check" in self.bugs)

    def _rejoin(self, member: Member, error: str) -> Member:
        """The member after an error that sends it back to JoinGroup
        (``AbstractCoordinator.requestRejoin`` / ``resetStateAndRejoin``):

        - REBALANCE_IN_PROGRESS: rejoin with the same member id; the eager protocol revokes
          every partition first (``onPartitionsRevoked`` in ``onJoinPrepare``), the
          cooperative one keeps them (KIP-429);
        - ILLEGAL_GENERATION: the generation is reset and the partitions are *lost*
          (``onPartitionsLost``, KIP-429), the member id kept;
        - UNKNOWN_MEMBER_ID: member id and generation reset, partitions lost;
        - NOT_COORDINATOR (on a parked JoinGroup or SyncGroup): FindCoordinator, then rejoin.
        """
        state = member_transition(member.state, UNJOINED)
        owned = member.owned
        mid, generation = member.member_id, member.generation
        if error == REBALANCE_IN_PROGRESS:
            owned = owned if self.cooperative else frozenset()
        elif error == ILLEGAL_GENERATION:
            owned, generation = frozenset(), NO_GENERATION
        elif error == UNKNOWN_MEMBER_ID:
            owned, generation, mid = frozenset(), NO_GENERATION, NOBODY
        return Member(state, mid, generation, owned)

    def _start_rebalance(self, s: State, group: Group, joiner: MemberId) -> tuple[Group, State]:
        """The group enters PreparingRebalance (``prepareRebalance``): every member must
        rejoin; parked SyncGroups are answered REBALANCE_IN_PROGRESS
        (``resetAndPropagateAssignmentError``)."""
        members = s.members
        metas = []
        for meta in group.members:
            if meta.sync_parked:
                members = self._answer_parked(members, meta.member_id, REBALANCE_IN_PROGRESS, s)
            metas.append(attrs.evolve(meta, joined=meta.member_id == joiner, sync_parked=False))
        new_group = attrs.evolve(
            group, state=group_transition(group.state, PREPARING), members=tuple(metas)
        )
        return new_group, attrs.evolve(s, members=members)

    def _answer_parked(
        self, members: tuple[Member, ...], mid: MemberId, error: str, s: State
    ) -> tuple[Member, ...]:
        """Answer the parked SyncGroup of ``mid`` with ``error``."""
        out = list(members)
        for i, member in enumerate(members):
            pending = member.pending
            if member.member_id == mid and pending is not None and pending.kind == SYNC:
                out[i] = self._rejoin(member, error)
        return tuple(out)

    def _deliver_sync(self, member: Member, assignment: frozenset[int]) -> Member:
        """A successful SyncGroup response: the member owns its assignment
        (``onPartitionsAssigned``). Cooperatively, what it owned and is no longer assigned
        is revoked (``onPartitionsRevoked``), and having revoked anything it rejoins at once
        so the partitions can move in the next rebalance (KIP-429)."""
        revoked = member.owned - assignment
        if self.cooperative and revoked:
            state = member_transition(member.state, UNJOINED)
        else:
            state = member_transition(member.state, MEMBER_STABLE)
        return Member(state, member.member_id, member.generation, assignment)

    def _leaves(self, s: State, group: Group, mid: MemberId) -> tuple[Group, State]:
        """``mid`` is removed from the group (expiry or LeaveGroup,
        ``removeMemberAndUpdateGroup``): a Stable or CompletingRebalance group rebalances;
        its parked JoinGroup or SyncGroup is answered UNKNOWN_MEMBER_ID."""
        members = list(s.members)
        for i, member in enumerate(s.members):
            if member.member_id != mid:
                continue
            if member.state == JOINING or (
                member.pending is not None and member.pending.kind == SYNC and _parked(group, mid)
            ):
                members[i] = self._rejoin(member, UNKNOWN_MEMBER_ID)
        s = attrs.evolve(s, members=tuple(members))
        metas = tuple(meta for meta in group.members if meta.member_id != mid)
        leader = NOBODY if group.leader == mid else group.leader
        group = attrs.evolve(group, members=metas, leader=leader)
        if group.state in (STABLE, COMPLETING):
            group, s = self._start_rebalance(s, group, NOBODY)
        return group, s

    def _plan(self, group: Group) -> Assignment:
        """The leader's assignment from its JoinGroup response: the range assignor's target
        (eager), or KIP-429's target minus what others still own (cooperative)."""
        order = [meta.member_id for meta in group.members]
        if self.cooperative:
            owned = {meta.member_id: meta.owned for meta in group.members}
            revocation_first = "no_revocation_first" not in self.bugs
            plan = cooperative_assignment(
                order, owned, self.p.partitions, revocation_first=revocation_first
            )
        else:
            plan = range_assignment(order, self.p.partitions)
        return tuple((m, plan[m]) for m in order)

    # --- argument domains ----------------------------------------------------------------

    def _each_slot(self, s: State) -> tuple[tuple[int], ...]:
        return self._slot_args

    def _group_members(self, s: State) -> list[tuple[MemberId]]:
        return [(meta.member_id,) for meta in s.group.members]

    def _leaders(self, s: State) -> list[tuple[MemberId]]:
        group = s.group
        if group.state != PREPARING or group.loading:
            return []
        if not group.members:
            return [(NOBODY,)]
        if group.meta(group.leader) is not None:
            return [(group.leader,)]
        return [(meta.member_id,) for meta in group.members]

    def _inflight_of(self, kind: str, s: State) -> list[tuple[Request]]:
        return [(r,) for r in sorted(s.inflight, key=Request.key) if r.kind == kind]

    def _syncs(self, s: State) -> list[tuple[Request]]:
        return self._inflight_of(SYNC, s)

    def _commits(self, s: State) -> list[tuple[Request]]:
        return self._inflight_of(COMMIT, s)

    # --- members: JoinGroup ----------------------------------------------------------------

    def _ready(self, s: State, slot: int) -> bool:
        """The member can make a request: none outstanding, and the coordinator has loaded
        the group (else ``coordinator_loading`` answers it). A member that still addresses
        the old coordinator gets NOT_COORDINATOR, sends FindCoordinator and retries: that
        round trip is folded into the request's step, which therefore always reaches the
        current coordinator."""
        member = s.member(slot)
        group = s.group
        return member.pending is None and not group.loading

    @action(domain="_each_slot")
    def join_group(self, s: State, slot: int) -> State | None:
        """Consumer ``slot`` sends JoinGroup (``subscribe`` + ``poll``, or a rejoin after an
        error). Without a member id the coordinator hands out a fresh one (KIP-394's
        MEMBER_ID_REQUIRED round trip folded in); with one it no longer knows, it answers
        UNKNOWN_MEMBER_ID and the consumer resets its id. A join into an Empty, Stable or
        CompletingRebalance group starts a rebalance (PreparingRebalance); in
        PreparingRebalance it is parked until the join phase completes. Cooperatively the
        request carries the partitions the member owns (KIP-429)."""
        member = s.member(slot)
        if member.state != UNJOINED or not self._ready(s, slot):
            return None
        group = s.group
        mid = member.member_id
        ids = s.ids_issued
        if mid == NOBODY:
            if ids[slot - 1] >= self.p.max_member_ids:
                return None
            mid = (slot, ids[slot - 1] + 1)
            ids = tuple(n + 1 if i == slot - 1 else n for i, n in enumerate(ids))
        elif group.meta(mid) is None:
            lost = self._rejoin(member, UNKNOWN_MEMBER_ID)
            return attrs.evolve(s, members=_with_member(s, slot, lost))
        if group.state != PREPARING and group.generation >= self.p.generation_bound:
            return None
        owned = member.owned if self.cooperative else frozenset()
        meta = MemberMeta(mid, joined=True, owned=owned)
        metas = [m for m in group.members if m.member_id != mid] + [meta]
        group = attrs.evolve(group, members=_sorted_metas(metas))
        s = attrs.evolve(s, ids_issued=ids)
        if group.state != PREPARING:
            group, s = self._start_rebalance(s, group, mid)
        joining = Member(
            member_transition(member.state, JOINING),
            mid,
            member.generation,
            owned,
        )
        return attrs.evolve(s, group=group, members=_with_member(s, slot, joining))

    @action(domain="_leaders")
    def complete_join(self, s: State, leader: MemberId) -> State | None:
        """The join phase completes (``onCompleteJoin``): every member the coordinator knows
        has rejoined (those that did not within ``rebalance.timeout.ms`` were expired). The
        generation id is bumped (``initNextGeneration``), the leader is kept if it rejoined
        and is otherwise any member, and every parked JoinGroup is answered: the new
        generation and, to the leader, the members and their subscriptions, from which it
        computes the assignment. With no member left the group becomes Empty, and that is
        stored."""
        group = s.group
        if group.state != PREPARING or group.loading:
            return None
        if not all(meta.joined for meta in group.members):
            return None
        if group.generation >= self.p.generation_bound:
            return None
        generation = group.generation + 1
        if not group.members:
            empty = attrs.evolve(
                group, state=group_transition(group.state, EMPTY), generation=generation
            )
            return attrs.evolve(s, group=empty, stored=Stored(generation, NOBODY, ()))
        metas = tuple(
            attrs.evolve(meta, joined=False, assignment=frozenset()) for meta in group.members
        )
        new_group = Group(
            group_transition(group.state, COMPLETING),
            generation,
            leader,
            metas,
            group.coordinator,
        )
        plan = self._plan(group)
        members = list(s.members)
        for i, member in enumerate(s.members):
            if member.state == JOINING and group.meta(member.member_id) is not None:
                members[i] = Member(
                    member_transition(member.state, AWAITING_SYNC),
                    member.member_id,
                    generation,
                    member.owned,
                    plan if member.member_id == leader else (),
                )
        return attrs.evolve(s, group=new_group, members=tuple(members))

    # --- members: SyncGroup ------------------------------------------------------------------

    @action(domain="_each_slot")
    def send_sync(self, s: State, slot: int) -> State | None:
        """Consumer ``slot``, with its JoinGroup response, sends SyncGroup with its member id
        and generation id; the leader's carries the assignment it computed."""
        member = s.member(slot)
        if member.state != AWAITING_SYNC or member.pending is not None:
            return None
        req = Request(
            SYNC, slot, member.member_id, member.generation, s.group.coordinator, member.plan
        )
        sent = attrs.evolve(member, pending=req)
        return attrs.evolve(s, members=_with_member(s, slot, sent), inflight=s.inflight | {req})

    def sync_outcome(self, s: State, r: Request) -> str:
        """The coordinator's answer to a SyncGroup (``GroupCoordinator.doSyncGroup``), in
        Kafka's order of checks."""
        group = s.group
        if r.coordinator != group.coordinator:
            return NOT_COORDINATOR
        if group.meta(r.member_id) is None:
            return UNKNOWN_MEMBER_ID
        if r.generation != group.generation and self.checks_generation(SYNC):
            return ILLEGAL_GENERATION
        if group.state == PREPARING:
            return REBALANCE_IN_PROGRESS
        if group.state == COMPLETING and r.member_id != group.leader:
            return PARKED
        return NONE_ERROR

    @action(domain="_syncs")
    def handle_sync(self, s: State, r: Request) -> State | None:
        """The coordinator handles a SyncGroup (some steps after it was sent). Stale
        coordinator: NOT_COORDINATOR; unknown member id: UNKNOWN_MEMBER_ID; another
        generation: ILLEGAL_GENERATION; a rebalance under way: REBALANCE_IN_PROGRESS. In
        CompletingRebalance a follower's request is parked; the leader's carries the
        assignment, which is stored in ``__consumer_offsets`` (``storeGroup``) and answered
        to the leader and every parked member (``receive_assignment``): the group is Stable.
        In Stable a member gets its current assignment. An answer reaches the member only if
        it still waits on this request."""
        group = s.group
        if group.loading and r.coordinator == group.coordinator:
            return None
        outcome = self.sync_outcome(s, r)
        inflight = s.inflight - {r}
        members = s.members
        waiting = s.member(r.slot).pending == r
        if outcome == PARKED:
            metas = tuple(
                attrs.evolve(meta, sync_parked=True) if meta.member_id == r.member_id else meta
                for meta in group.members
            )
            return attrs.evolve(s, group=attrs.evolve(group, members=metas), inflight=inflight)
        if outcome != NONE_ERROR:
            if waiting:
                member = s.member(r.slot)
                members = _with_member(s, r.slot, self._rejoin(member, outcome))
            return attrs.evolve(s, members=members, inflight=inflight)
        if group.state == STABLE:
            if waiting:
                meta = group.meta(r.member_id)
                assert meta is not None
                members = _with_member(
                    s, r.slot, self._deliver_sync(s.member(r.slot), meta.assignment)
                )
            return attrs.evolve(s, members=members, inflight=inflight)
        # the leader's SyncGroup in CompletingRebalance: the assignment becomes the group's
        plan = dict(r.assignment)
        metas = tuple(
            MemberMeta(meta.member_id, False, meta.owned, plan.get(meta.member_id, frozenset()))
            for meta in group.members
        )
        new_group = attrs.evolve(group, state=group_transition(group.state, STABLE), members=metas)
        stored = Stored(group.generation, group.leader, metas)
        return attrs.evolve(s, group=new_group, stored=stored, inflight=inflight)

    def _answered(self, s: State, slot: int) -> frozenset[int] | None:
        """The assignment on its way to consumer ``slot``: its SyncGroup was handled (not in
        the network, not parked) and the coordinator's group, at the consumer's generation,
        holds the answer it sent."""
        member = s.member(slot)
        r = member.pending
        if r is None or r.kind != SYNC or r in s.inflight:
            return None
        group = s.group
        meta = group.meta(member.member_id)
        if meta is None or meta.sync_parked or group.generation != member.generation:
            return None
        if group.state not in (STABLE, PREPARING) or group.loading:
            return None
        return meta.assignment

    @action(domain="_each_slot")
    def receive_assignment(self, s: State, slot: int) -> State | None:
        """Consumer ``slot`` receives the SyncGroup response the leader's assignment
        released: the leader's own and every parked follower's are sent when the leader's
        SyncGroup is handled, and each arrives when it arrives -- one member may already own
        its new partitions while another has not yet heard that it must give some up."""
        assignment = self._answered(s, slot)
        if assignment is None:
            return None
        delivered = self._deliver_sync(s.member(slot), assignment)
        return attrs.evolve(s, members=_with_member(s, slot, delivered))

    # --- members: Heartbeat, OffsetCommit, LeaveGroup --------------------------------------

    def fence_outcome(self, s: State, kind: str, mid: MemberId, generation: int) -> str:
        """The coordinator's answer to a Heartbeat or OffsetCommit (``doHeartbeat``,
        ``doCommitOffsets``): UNKNOWN_MEMBER_ID, then ILLEGAL_GENERATION, then the group's
        state (a commit in CompletingRebalance, a heartbeat in PreparingRebalance:
        REBALANCE_IN_PROGRESS). A commit in PreparingRebalance from the current generation is
        accepted: members commit before they rejoin (``onPartitionsRevoked``)."""
        group = s.group
        if kind == COMMIT and group.state == COMPLETING:
            return REBALANCE_IN_PROGRESS
        if group.meta(mid) is None:
            return UNKNOWN_MEMBER_ID
        if generation != group.generation and self.checks_generation(kind):
            return ILLEGAL_GENERATION
        if kind == "Heartbeat" and group.state == PREPARING:
            return REBALANCE_IN_PROGRESS
        return NONE_ERROR

    @action(domain="_each_slot")
    def heartbeat(self, s: State, slot: int) -> State | None:
        """Stable consumer ``slot``'s heartbeat thread sends Heartbeat with its member id and
        generation (every ``heartbeat.interval.ms``). Only an error changes anything:
        REBALANCE_IN_PROGRESS sends it to rejoin; UNKNOWN_MEMBER_ID and ILLEGAL_GENERATION
        fence it: a zombie learns here that its partitions are lost."""
        member = s.member(slot)
        if member.state != MEMBER_STABLE or not self._ready(s, slot):
            return None
        outcome = self.fence_outcome(s, "Heartbeat", member.member_id, member.generation)
        if outcome == NONE_ERROR:
            return None
        if outcome == REBALANCE_IN_PROGRESS and "ignores_rebalance_in_progress" in self.p.bugs:
            return None  # the broken client keeps reading instead of rejoining
        fenced = self._rejoin(member, outcome)
        return attrs.evolve(s, members=_with_member(s, slot, fenced))

    @action(domain="_each_slot")
    def send_commit(self, s: State, slot: int) -> State | None:
        """Stable consumer ``slot`` commits the offsets of the partitions it owns
        (``commitSync``/``commitAsync``): OffsetCommit with its member id and generation."""
        member = s.member(slot)
        if member.state != MEMBER_STABLE or member.pending is not None or not member.owned:
            return None
        req = Request(
            COMMIT,
            slot,
            member.member_id,
            member.generation,
            s.group.coordinator,
            partitions=member.owned,
        )
        sent = attrs.evolve(member, pending=req)
        return attrs.evolve(s, members=_with_member(s, slot, sent), inflight=s.inflight | {req})

    @action(domain="_commits")
    def handle_commit(self, s: State, r: Request) -> State | None:
        """The coordinator handles an OffsetCommit: NOT_COORDINATOR from a stale
        coordinator; otherwise ``fence_outcome``; accepted, it is appended to
        ``__consumer_offsets`` (here: each partition records the committing generation).
        The committer, if still waiting, learns the outcome: CommitFailedException on a
        fence, and it rejoins."""
        group = s.group
        if group.loading and r.coordinator == group.coordinator:
            return None
        inflight = s.inflight - {r}
        member = s.member(r.slot)
        waiting = member.pending == r
        if r.coordinator != group.coordinator:
            outcome = NOT_COORDINATOR
        else:
            outcome = self.fence_outcome(s, COMMIT, r.member_id, r.generation)
        offsets = s.offsets
        members = s.members
        if outcome == NONE_ERROR:
            offsets = tuple(
                r.generation if p in r.partitions else g for p, g in enumerate(s.offsets)
            )
            if waiting:
                members = _with_member(s, r.slot, attrs.evolve(member, pending=None))
        elif waiting and outcome == NOT_COORDINATOR:
            done = attrs.evolve(member, pending=None)
            members = _with_member(s, r.slot, done)
        elif waiting:
            members = _with_member(s, r.slot, self._rejoin(member, outcome))
        return attrs.evolve(s, offsets=offsets, members=members, inflight=inflight)

    @action(domain="_each_slot")
    def leave_group(self, s: State, slot: int) -> State | None:
        """Stable consumer ``slot`` leaves (``close`` or ``unsubscribe``): it revokes its
        partitions and sends LeaveGroup; the coordinator removes it at once
        (``removeMemberAndUpdateGroup``) and the group rebalances without waiting for the
        session to expire. It may join again later, under a new member id."""
        member = s.member(slot)
        if member.state != MEMBER_STABLE or not self._ready(s, slot):
            return None
        group = s.group
        left = Member(member_transition(member.state, UNJOINED))
        s = attrs.evolve(s, members=_with_member(s, slot, left))
        if group.meta(member.member_id) is None:
            return s
        group, s = self._leaves(s, group, member.member_id)
        return attrs.evolve(s, group=group)

    @action(domain="_each_slot")
    def coordinator_loading(self, s: State, slot: int) -> State | None:
        """Consumer ``slot``'s request reaches the new coordinator while it is still loading
        the group from ``__consumer_offsets``: COORDINATOR_LOAD_IN_PROGRESS, and it retries
        after ``retry.backoff.ms``. Nothing changes (a stutter)."""
        member = s.member(slot)
        if not s.group.loading or member.pending is not None:
            return None
        return s

    # --- faults ----------------------------------------------------------------------------

    @action(domain="_group_members", kind=Kind.FAULT)
    def expire(self, s: State, member_id: MemberId) -> State | None:
        """The coordinator expires a member: no heartbeat within ``session.timeout.ms``, or
        no poll within ``max.poll.interval.ms`` (KIP-62; also a member that does not rejoin
        within ``rebalance.timeout.ms``). Any member may expire: it may be paused, cut off,
        or only slow (false suspicion). It is not told: until its next request it is a
        zombie that believes it owns its partitions."""
        group = s.group
        if group.loading or s.expiries >= self.p.max_expiries:
            return None
        if group.meta(member_id) is None:
            return None
        group, s = self._leaves(s, group, member_id)
        return attrs.evolve(s, group=group, expiries=s.expiries + 1)

    @action(domain="_each_slot", kind=Kind.FAULT)
    def request_timeout(self, s: State, slot: int) -> State | None:
        """Consumer ``slot`` stops waiting for its SyncGroup or OffsetCommit
        (``request.timeout.ms``). On the ordered network the request or its answer was lost:
        the client closes the connection, so the request is not handled after any later
        request of the same consumer (Kafka handles a connection's requests in order, one at
        a time). On the reordering network the request stays in the network and may be
        handled later, its answer dropped. After a SyncGroup it rejoins; after a commit it
        carries on."""
        member = s.member(slot)
        if member.pending is None or s.timeouts >= self.p.max_timeouts:
            return None
        if member.pending.kind == SYNC:
            gave_up = self._rejoin(member, REBALANCE_IN_PROGRESS)
        else:
            gave_up = attrs.evolve(member, pending=None)
        inflight = s.inflight
        if self.p.network == "ordered":
            inflight = inflight - {member.pending}
        return attrs.evolve(
            s,
            members=_with_member(s, slot, gave_up),
            inflight=inflight,
            timeouts=s.timeouts + 1,
        )

    @action(kind=Kind.FAULT)
    def coordinator_moves(self, s: State) -> State | None:
        """The group's coordinator moves: another broker becomes leader of the group's
        ``__consumer_offsets`` partition (its leader failed or was moved). The old
        coordinator unloads the group (``removeGroupsForPartition``: the group is Dead) and
        answers its parked JoinGroup and SyncGroup requests NOT_COORDINATOR; the new one
        starts loading the partition."""
        group = s.group
        if group.loading or s.failovers >= self.p.max_failovers:
            return None
        epoch = group.coordinator + 1
        members = list(s.members)
        for i, member in enumerate(s.members):
            parked_sync = (
                member.pending is not None
                and member.pending.kind == SYNC
                and _parked(group, member.member_id)
            )
            if member.state == JOINING or parked_sync:
                members[i] = self._rejoin(member, NOT_COORDINATOR)
        dead = Group(group_transition(group.state, DEAD), group.generation, NOBODY, (), epoch, True)
        return attrs.evolve(s, group=dead, members=tuple(members), failovers=s.failovers + 1)

    @action(kind=Kind.HEAL)
    def load_group(self, s: State) -> State | None:
        """The new coordinator has loaded the group from ``__consumer_offsets``
        (``GroupMetadataManager.loadGroupsForPartition``): a fresh group object, Stable with
        the last stored generation, leader and assignment, or Empty if none was stored with
        members. Never bounded."""
        group = s.group
        if not group.loading:
            return None
        stored = s.stored
        state = STABLE if stored.members else EMPTY
        loaded = Group(state, stored.generation, stored.leader, stored.members, group.coordinator)
        return attrs.evolve(s, group=loaded)

    # --- invariants ----------------------------------------------------------------------------

    @invariant
    def assignment_partitions_subscribed_partitions(self, s: State) -> bool:
        """Within a generation the assignment is a partition of the subscribed partitions:
        once the group is Stable, every partition is assigned to exactly one member of the
        generation. Cooperatively (KIP-429) a partition may be unassigned for one generation,
        and only while a member still owns it and must revoke it first."""
        group = s.group
        if group.state != STABLE:
            return True
        seen: set[int] = set()
        for meta in group.members:
            if meta.assignment & seen or not meta.assignment <= self.everything:
                return False
            seen |= meta.assignment
        missing = self.everything - seen
        if not missing:
            return True
        if not self.cooperative:
            return False
        held = frozenset(p for meta in group.members for p in meta.owned - meta.assignment)
        return missing <= held

    @invariant
    def one_owner_per_partition(self, s: State) -> bool:
        """No partition is owned by two members of the current generation: among consumers
        whose member id is a member of the group and whose generation id is the group's
        current one, each partition has at most one owner. A zombie (its id expired) may
        still read a partition, but any request of it is fenced."""
        group = s.group
        current = group.ids()
        seen: set[int] = set()
        for member in s.members:
            if member.generation != group.generation or member.member_id not in current:
                continue
            if member.owned & seen:
                return False
            seen |= member.owned
        return True

    @transition_property
    def stale_generation_changes_nothing(self, before: State, step: Step, after: State) -> bool:
        """No request from a stale generation changes group state: a SyncGroup, OffsetCommit
        or Heartbeat whose generation id is not the group's current one (at the coordinator
        it was sent to) leaves the group, its stored metadata and its committed offsets as
        they were (ILLEGAL_GENERATION)."""
        args = dict(step.args)
        if step.action in ("handle_sync", "handle_commit"):
            r = args["r"]
            generation, coordinator = r.generation, r.coordinator
        elif step.action == "heartbeat":
            member = before.member(args["slot"])
            generation, coordinator = member.generation, before.group.coordinator
        else:
            return True
        group = before.group
        if coordinator != group.coordinator or generation == group.generation:
            return True
        return (
            after.group == before.group
            and after.stored == before.stored
            and after.offsets == before.offsets
        )

    # --- "sometimes": the model is not vacuous -----------------------------------------------

    @sometimes_transition
    def rebalance_completes(self, before: State, step: Step, after: State) -> bool:
        """A rebalance completes: the group becomes Stable again in a later generation (the
        leader's SyncGroup arrives after the membership changed)."""
        return (
            after.group.state == STABLE
            and before.group.state == COMPLETING
            and after.group.generation >= 2
        )

    @sometimes_transition
    def zombie_fenced(self, before: State, step: Step, after: State) -> bool:
        """A zombie is fenced: a consumer that believed it owned partitions, but whose member
        id or generation the coordinator no longer knows, gets UNKNOWN_MEMBER_ID or
        ILLEGAL_GENERATION and loses them."""
        for b, a in zip(before.members, after.members, strict=True):
            if b.state != MEMBER_STABLE or not b.owned or a.owned or a.state != UNJOINED:
                continue
            group = before.group
            if group.meta(b.member_id) is None or b.generation != group.generation:
                return True
        return False

    @sometimes_transition
    def coordinator_moves_and_group_resumes(self, before: State, step: Step, after: State) -> bool:
        """The coordinator moves: a new coordinator loads the group and it resumes Stable
        from the stored metadata."""
        return step.action == "load_group" and after.group.state == STABLE

    # --- liveness ------------------------------------------------------------------------------

    def rebalancing(self, s: State) -> bool:
        """A rebalance is under way that the bounds let finish: the group is in
        PreparingRebalance below the generation bound, or in CompletingRebalance (the
        premise of ``RebalanceFinishes``)."""
        group = s.group
        if group.state == PREPARING:
            return group.generation < self.p.generation_bound
        return group.state == COMPLETING

    @eventually(after="rebalancing")
    def rebalance_finishes(self, s: State) -> bool:
        """A started rebalance finishes, for every member: the group is Stable (or Empty)
        and every consumer the group counts as a member is Stable in the group's generation,
        its assignment received, reading again. Under weak fairness of the protocol's own
        steps (join, the join phase's completion, SyncGroup sent, handled and answered,
        heartbeats, commits handled, loading); faults and membership changes are not fair, and
        bounded. Two states count as finished because the bounds, not the protocol, stop
        them: one at the generation bound (a member that must rejoin there could start no
        further generation within the bounds, where Kafka would), and a join phase waiting
        for a member id no consumer holds any more (one that left while the coordinator
        moved): Kafka's ``rebalance.timeout.ms`` drops it, which the spec models as the
        bounded ``expire`` fault."""
        group = s.group
        if group.generation >= self.p.generation_bound:
            return True  # the bounds: a rejoin could start no further generation here
        held = {m.member_id for m in s.members}
        if group.state == PREPARING and any(m not in held for m in group.ids()):
            return True  # waits for rebalance.timeout.ms to drop a member nobody holds
        if group.state not in (STABLE, EMPTY) or group.loading:
            return False
        ids = group.ids()
        return all(
            m.state == MEMBER_STABLE and m.generation == group.generation
            for m in s.members
            if m.member_id in ids
        )

    def fairness(self) -> tuple[Fair, ...]:
        """What keeps happening: every consumer (re)joins, the join phase completes, each
        SyncGroup is sent, handled and answered, an OffsetCommit sent is handled, a new
        coordinator loads the group (weak fairness); heartbeats run whenever they can,
        between the poll loop's requests (strong fairness: the heartbeat thread is not held
        back by commits). Expiry, request timeouts, coordinator moves, leaving and sending
        commits are not fair."""
        fair = (
            "join_group",
            "complete_join",
            "send_sync",
            "handle_sync",
            "receive_assignment",
            "heartbeat",
            "handle_commit",
            "coordinator_loading",
            "load_group",
        )
        strong = ("heartbeat",)  # the heartbeat thread runs beside the poll loop's requests
        return tuple(
            Fair(d.name, strong=d.name in strong) for d in self.enabled_actions() if d.name in fair
        )

    def applicable_sometimes(self) -> tuple[Any, ...]:
        skip = set()
        if self.p.generation_bound < 2:
            skip.add("RebalanceCompletes")
        if self.p.max_expiries < 1:
            skip.add("ZombieFenced")
        if self.p.max_failovers < 1:
            skip.add("CoordinatorMovesAndGroupResumes")
        return tuple(d for d in self._sometimes if d.name not in skip)

    # --- rendering -----------------------------------------------------------------------------

    def columns(self, s: State) -> list[tuple[str, str, str]]:
        """One trace-table row: per consumer its state, member id, generation, owned
        partitions and the request it waits on; then the coordinator's group (``c1*``: the
        second coordinator, still loading), the stored metadata, the committed offsets'
        generations and the requests in the network."""
        cells: list[tuple[str, str, str]] = []
        for slot, m in zip(self.slots, s.members, strict=True):
            group = f"consumer {slot}"
            cells += [
                (group, "state", m.state),
                (group, "id", show_id(m.member_id)),
                (group, "gen", str(m.generation)),
                (group, "owns", show_set(m.owned)),
                (group, "waits", m.pending.describe() if m.pending else "-"),
            ]
        g = s.group
        coord = f"c{g.coordinator}" + ("*" if g.loading else "")
        leader = show_id(g.leader)
        cells += [
            ("coordinator", "at", coord),
            ("coordinator", "group", g.state),
            ("coordinator", "gen", str(g.generation)),
            ("coordinator", "leader", leader),
            ("coordinator", "members", " ".join(m.describe() for m in g.members) or "-"),
            ("__consumer_offsets", "stored", s.stored.describe()),
            (
                "__consumer_offsets",
                "commits",
                " ".join(f"p{p}:g{g_}" for p, g_ in enumerate(s.offsets)),
            ),
            (
                "network",
                "in flight",
                ", ".join(r.describe() for r in sorted(s.inflight, key=Request.key)) or "-",
            ),
        ]
        return cells

    def sort_key(self, s: State) -> str:
        """A total order on states (for ``reachable_states``): their JSON, keys sorted."""
        return json.dumps(self.to_json(s), sort_keys=True)

    def short(self, s: State) -> str:
        parts = [
            f"{slot}:{m.state[0]}{show_id(m.member_id)}g{m.generation}{show_set(m.owned)}"
            for slot, m in zip(self.slots, s.members, strict=True)
        ]
        g = s.group
        return (
            " ".join(parts)
            + f" | {g.state} g{g.generation} "
            + " ".join(m.describe() for m in g.members)
        )

    def to_json(self, s: State) -> dict[str, Any]:
        def req(r: Request | None) -> Any:
            if r is None:
                return None
            return {
                "kind": r.kind,
                "consumer": r.slot,
                "member_id": show_id(r.member_id),
                "generation": r.generation,
                "coordinator": r.coordinator,
                "assignment": {show_id(m): sorted(ps) for m, ps in r.assignment},
                "partitions": sorted(r.partitions),
            }

        g = s.group
        return {
            "consumers": {
                str(slot): {
                    "state": m.state,
                    "member_id": show_id(m.member_id),
                    "generation": m.generation,
                    "owned": sorted(m.owned),
                    "waits": req(m.pending),
                }
                for slot, m in zip(self.slots, s.members, strict=True)
            },
            "group": {
                "state": g.state,
                "generation": g.generation,
                "leader": show_id(g.leader),
                "coordinator": g.coordinator,
                "loading": g.loading,
                "members": {
                    show_id(m.member_id): {
                        "joined": m.joined,
                        "owned": sorted(m.owned),
                        "assignment": sorted(m.assignment),
                        "sync_parked": m.sync_parked,
                    }
                    for m in g.members
                },
            },
            "stored": {
                "generation": s.stored.generation,
                "leader": show_id(s.stored.leader),
                "assignment": {
                    show_id(m.member_id): sorted(m.assignment) for m in s.stored.members
                },
            },
            "offsets": list(s.offsets),
            "inflight": [req(r) for r in sorted(s.inflight, key=Request.key)],
        }


def _parked(group: Group, mid: MemberId) -> bool:
    meta = group.meta(mid)
    return meta is not None and meta.sync_parked
