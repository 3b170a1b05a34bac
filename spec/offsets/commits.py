"""Committed offsets of a consumer group as an executable state machine: OffsetCommit with
(member id, generation) fenced as Kafka's group coordinator does, OffsetFetch, the
``__consumer_offsets`` partition that stores them and a new coordinator that must load them
first, and the consumer's processing loop, committing after or before it processes.

Kafka stores a group's committed offsets in the internal compacted topic
``__consumer_offsets`` (``offsets.topic.num.partitions``, 50 by default; replicated
``offsets.topic.replication.factor`` times, 3 by default, and written with acks=all: an
OffsetCommit is answered once every in-sync replica has it, so an acknowledged commit
survives the loss of the coordinator's broker). The leader of the group's partition of that
topic is the *group coordinator*: it keeps the offsets in a cache and answers OffsetFetch
from it. When the coordinator moves, the new one reads the partition into its cache before
it answers anything about the group: until then OffsetCommit and OffsetFetch get
COORDINATOR_LOAD_IN_PROGRESS (a retriable error; the consumer retries after
``retry.backoff.ms``).

*The committed offset is the offset of the next record to read*: the last processed + 1
(the Javadoc of ``KafkaConsumer``: "the committed position is the last offset that has been
stored securely. Should the process fail and restart, this is the offset that the consumer
will recover to"). A consumer that is assigned a partition asks for the group's committed
offset (OffsetFetch) and starts there; without one, where ``auto.offset.reset`` says.

Membership is the classic protocol's (``spec.group`` models it in full; here it is reduced to
what decides whose commit counts, with one partition and the eager protocol): JoinGroup
parks until every member has rejoined, the join phase hands out a new *generation id*, and
SyncGroup stores the assignment (with the generation) in ``__consumer_offsets``. A member
whose session expires is removed without being told: until its next request it is a
*zombie* that still reads, processes and commits. Every OffsetCommit carries the member id
and generation; the coordinator checks, in ``GroupCoordinator.handleCommitOffsets``' order:
REBALANCE_IN_PROGRESS (the group is CompletingRebalance), UNKNOWN_MEMBER_ID (not a member),
ILLEGAL_GENERATION (another generation). A commit in PreparingRebalance from the current
generation is accepted: members commit in ``onPartitionsRevoked`` before they rejoin.

Simplifications, each on purpose: one group, one partition of the consumed topic, its
records produced before the group starts; a request's answer reaches its sender in the step
that handles it; JoinGroup, SyncGroup and OffsetFetch are single steps (``spec.group`` has
them as messages); the generation reused after a failover (``spec.group``'s pinned finding
``generation-reused-after-failover``) cannot reach a commit here, because only a member
that completed SyncGroup owns the partition, and SyncGroup stores its generation.
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
    sometimes,
    sometimes_transition,
    transition_property,
)
from spec.group.classic import (
    ILLEGAL_GENERATION,
    NOBODY,
    NONE_ERROR,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    MemberId,
    show_id,
)
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
from spec.offsets.params import Params

COORDINATOR_LOAD_IN_PROGRESS = "COORDINATOR_LOAD_IN_PROGRESS"
RETRIABLE = (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS)


def show_offset(offset: int | None) -> str:
    """``-`` for no committed offset (OffsetFetch answers -1)."""
    return "-" if offset is None else str(offset)


@attrs.frozen(slots=True, cache_hash=True)
class Commit:
    """An OffsetCommit in the network: the sender, its member id and generation, the
    coordinator it was sent to, and the offset (the next record to read)."""

    slot: int
    """The consumer that sent it."""
    member_id: MemberId
    """The member id it carries."""
    generation: int
    """The generation id it carries: what fences a zombie's commit."""
    coordinator: int
    """The coordinator it was sent to (a stale one answers NOT_COORDINATOR)."""
    offset: int
    """The offset committed: the next record to read (last processed + 1)."""

    def describe(self) -> str:
        return (
            f"Commit {show_id(self.member_id)} g{self.generation} c{self.coordinator} "
            f"@{self.offset}"
        )

    def key(self) -> tuple[Any, ...]:
        return (self.slot, self.member_id, self.generation, self.coordinator, self.offset)


@attrs.frozen(slots=True, cache_hash=True)
class Consumer:
    """A consumer process: its membership (``ConsumerCoordinator``) and its position in the
    partition (``SubscriptionState``), all in memory, all lost in a crash."""

    state: str = UNJOINED
    """unjoined, joining, awaiting-sync or stable."""
    member_id: MemberId = NOBODY
    """The member id it was given (NOBODY before its first JoinGroup response)."""
    generation: int = 0
    """The generation id it believes current, sent with every OffsetCommit."""
    owns: bool = False
    """The partition is in its assignment (as it believes: a zombie still does)."""
    position: int | None = None
    """The next offset it will poll; ``None``: unknown, it must OffsetFetch first."""
    pending: int | None = None
    """The record it polled and has not processed yet."""
    acked: int | None = None
    """The committed offset as it last heard it (OffsetFetch, or its acknowledged commit)."""
    waiting: bool = False
    """Its OffsetCommit is in the network (``commitSync`` blocks on it)."""


@attrs.frozen(slots=True, cache_hash=True)
class Group:
    """The group as its coordinator holds it in memory (``GroupMetadata`` and the offsets
    cache of ``GroupMetadataManager``)."""

    state: str
    """Empty, PreparingRebalance, CompletingRebalance, Stable or Dead."""
    generation: int
    """The generation id, bumped when a join phase completes."""
    members: frozenset[MemberId]
    """The member ids of the group."""
    joined: frozenset[MemberId]
    """Members whose JoinGroup of this join phase is parked."""
    owner: MemberId
    """The member the partition is assigned to in this generation."""
    coordinator: int
    """Which coordinator: bumped on every move."""
    loading: bool
    """The new coordinator is still loading the partition: COORDINATOR_LOAD_IN_PROGRESS."""
    cache: int | None
    """The committed offset in the coordinator's cache (``None``: none, or not loaded)."""


@attrs.frozen(slots=True, cache_hash=True)
class Stored:
    """What the group's partition of ``__consumer_offsets`` holds, replicated with acks=all:
    the last offset commit record and the last group metadata record (written by SyncGroup,
    and when the group empties)."""

    committed: int | None
    """The last committed offset (``None``: none yet)."""
    generation: int
    """The generation of the last group metadata record."""
    members: frozenset[MemberId]
    """Its members."""
    owner: MemberId
    """The member the partition was assigned to."""


@attrs.frozen(slots=True, cache_hash=True)
class State:
    """One group and one partition: the coordinator's memory, what ``__consumer_offsets``
    stores, every consumer process, and the commits in the network."""

    group: Group
    """The group and its offsets cache at the current coordinator."""
    stored: Stored
    """The group's partition of ``__consumer_offsets``."""
    consumers: tuple[Consumer, ...]
    """``consumers[i]`` is consumer ``i + 1``."""
    inflight: frozenset[Commit]
    """OffsetCommit requests sent and not yet handled."""
    processed: frozenset[int]
    """History variable: the offsets some consumer has processed."""
    commit_generation: int
    """History variable: the generation of the last accepted OffsetCommit."""
    ids_issued: tuple[int, ...]
    """Per consumer: member ids handed out so far (bounded by ``Params.max_member_ids``)."""
    expiries: int = 0
    """Sessions expired so far (the fault budget ``Params.max_expiries``)."""
    crashes: int = 0
    """Consumer crashes so far (the fault budget ``Params.max_crashes``)."""
    failovers: int = 0
    """Coordinator moves so far (the fault budget ``Params.max_failovers``)."""

    def consumer(self, slot: int) -> Consumer:
        return self.consumers[slot - 1]


def _with(s: State, slot: int, new: Consumer) -> tuple[Consumer, ...]:
    out = list(s.consumers)
    out[slot - 1] = new
    return tuple(out)


def _covered(offset: int | None) -> int:
    """An offset as a count of records covered (no committed offset covers none)."""
    return 0 if offset is None else offset


class Offsets(Spec):
    """``kmodel check offsets``: commits, fetches and delivery for one group and partition."""

    name = "offsets"

    def __init__(self, params: Params | None = None) -> None:
        self.p = params or Params()
        self.bugs = self.p.bugs
        self.slots = self.p.slots
        self._slot_args = tuple((slot,) for slot in self.slots)

    def enabled_actions(self) -> tuple[Any, ...]:
        """Faults whose budget is zero are left out (and loading, without failover)."""
        skip = set()
        if self.p.max_failovers == 0:
            skip |= {"coordinator_moves", "load_offsets"}
        if self.p.max_expiries == 0:
            skip.add("expire")
        if self.p.max_crashes == 0:
            skip.add("crash")
        return tuple(d for d in self._actions if d.name not in skip)

    def init(self) -> Iterator[State]:
        """A new group: Empty at generation 0, no committed offset; no consumer joined yet."""
        yield State(
            group=Group(EMPTY, 0, frozenset(), frozenset(), NOBODY, 0, False, None),
            stored=Stored(None, 0, frozenset(), NOBODY),
            consumers=tuple(Consumer() for _ in self.slots),
            inflight=frozenset(),
            processed=frozenset(),
            commit_generation=0,
            ids_issued=tuple(0 for _ in self.slots),
        )

    # --- domains -------------------------------------------------------------------------

    def _each_slot(self, s: State) -> tuple[tuple[int], ...]:
        return self._slot_args

    def _members(self, s: State) -> list[tuple[MemberId]]:
        return [(mid,) for mid in sorted(s.group.members)]

    def _commits(self, s: State) -> list[tuple[Commit]]:
        return [(r,) for r in sorted(s.inflight, key=Commit.key)]

    # --- the coordinator's answer --------------------------------------------------------

    def commit_outcome(self, s: State, r: Commit) -> str:
        """The coordinator's answer to OffsetCommit ``r`` (``handleCommitOffsets``):
        NOT_COORDINATOR if it was sent to a coordinator that has moved;
        COORDINATOR_LOAD_IN_PROGRESS while the new one loads; then the fences:
        REBALANCE_IN_PROGRESS in CompletingRebalance, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION.
        With ``stale_generation_commit`` the fences are skipped."""
        group = s.group
        if r.coordinator != group.coordinator:
            return NOT_COORDINATOR
        if group.loading:
            return COORDINATOR_LOAD_IN_PROGRESS
        if "stale_generation_commit" in self.bugs:
            return NONE_ERROR
        if group.state == COMPLETING:
            return REBALANCE_IN_PROGRESS
        if r.member_id not in group.members:
            return UNKNOWN_MEMBER_ID
        if r.generation != group.generation:
            return ILLEGAL_GENERATION
        return NONE_ERROR

    def _fenced(self, c: Consumer, error: str) -> Consumer:
        """The consumer after a fencing error (``onPartitionsLost``, KIP-429): the partition
        and position are gone and it rejoins; UNKNOWN_MEMBER_ID also resets its member id."""
        mid = NOBODY if error == UNKNOWN_MEMBER_ID else c.member_id
        return Consumer(member_transition(c.state, UNJOINED), mid)

    # --- membership (the classic protocol, reduced) ---------------------------------------

    @action(domain="_each_slot")
    def join_group(self, s: State, slot: int) -> State | None:
        """Consumer ``slot`` sends JoinGroup: unjoined, or told by a Heartbeat that a
        rebalance is under way (REBALANCE_IN_PROGRESS) or that it is no longer a member of
        the current generation (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION: a zombie learns it
        here, or in its next commit). It rejoins inside ``poll()``, so never while it
        holds a polled record. The eager protocol revokes the partition first
        (``onPartitionsRevoked``): its position is dropped. A consumer
        that is not a member gets a new member id. The group goes to PreparingRebalance."""
        c = s.consumer(slot)
        group = s.group
        if group.loading or group.state == DEAD:
            return None
        member = c.member_id in group.members
        if c.pending is not None:
            return None  # it rejoins inside its next poll(), after processing this record
        if c.state == JOINING and member:
            return None  # parked: its JoinGroup is already in
        current = c.state != UNJOINED and member and c.generation == group.generation
        if current and (group.state != PREPARING or c.member_id in group.joined):
            return None  # a current member hears of no rebalance
        mid = c.member_id
        ids = s.ids_issued
        if not member:
            issued = s.ids_issued[slot - 1]
            if issued >= self.p.max_member_ids:
                return None
            mid = (slot, issued + 1)
            ids = tuple(n + 1 if i == slot - 1 else n for i, n in enumerate(ids))
        joined = {mid} if group.state != PREPARING else group.joined | {mid}
        new_group = attrs.evolve(
            group,
            state=group_transition(group.state, PREPARING),
            members=group.members | {mid},
            joined=frozenset(joined),
        )
        joining = Consumer(
            member_transition(member_transition(c.state, UNJOINED), JOINING), mid, c.generation
        )
        return attrs.evolve(s, group=new_group, consumers=_with(s, slot, joining), ids_issued=ids)

    @action()
    def complete_join(self, s: State) -> State | None:
        """The join phase completes (``onCompleteJoin``): every member has rejoined; the
        coordinator bumps the generation id and answers every parked JoinGroup. Stops at
        ``max_generation``."""
        group = s.group
        if group.state != PREPARING or not group.members or group.joined != group.members:
            return None
        if group.generation >= self.p.max_generation:
            return None
        generation = group.generation + 1
        consumers = tuple(
            attrs.evolve(c, state=member_transition(c.state, AWAITING_SYNC), generation=generation)
            if c.state == JOINING and c.member_id in group.members
            else c
            for c in s.consumers
        )
        new_group = attrs.evolve(
            group,
            state=group_transition(group.state, COMPLETING),
            generation=generation,
            joined=frozenset(),
            owner=NOBODY,
        )
        return attrs.evolve(s, group=new_group, consumers=consumers)

    @action(domain="_members")
    def sync_group(self, s: State, owner: MemberId) -> State | None:
        """The leader's SyncGroup assigns the partition to member ``owner`` (any member: the
        assignor's choice); the coordinator stores the group metadata (generation, members,
        assignment) in ``__consumer_offsets`` and answers every member's SyncGroup. The group
        is Stable; the new owner must OffsetFetch before it reads."""
        group = s.group
        if group.state != COMPLETING:
            return None
        consumers = tuple(
            Consumer(
                member_transition(c.state, MEMBER_STABLE),
                c.member_id,
                c.generation,
                owns=c.member_id == owner,
            )
            if c.state == AWAITING_SYNC
            and c.member_id in group.members
            and c.generation == group.generation
            else c
            for c in s.consumers
        )
        new_group = attrs.evolve(group, state=group_transition(group.state, STABLE), owner=owner)
        stored = attrs.evolve(
            s.stored, generation=group.generation, members=group.members, owner=owner
        )
        return attrs.evolve(s, group=new_group, stored=stored, consumers=consumers)

    # --- the consumer's loop --------------------------------------------------------------

    @action(domain="_each_slot")
    def fetch_offset(self, s: State, slot: int) -> State | None:
        """The partition's new owner sends OffsetFetch and starts at the committed offset;
        without one, at ``auto.offset.reset`` (earliest: 0; latest: the log end). While the
        coordinator loads, the answer is COORDINATOR_LOAD_IN_PROGRESS and the consumer
        retries (not enabled here); with ``fetch_before_load`` it is answered from the
        cache not yet loaded."""
        c = s.consumer(slot)
        if c.state != MEMBER_STABLE or not c.owns or c.position is not None:
            return None
        group = s.group
        if group.loading and "fetch_before_load" not in self.bugs:
            return None
        committed = group.cache
        if committed is not None:
            position = committed
        else:
            position = 0 if self.p.reset == "earliest" else self.p.records
        started = attrs.evolve(c, position=position, acked=committed)
        return attrs.evolve(s, consumers=_with(s, slot, started))

    @action(domain="_each_slot")
    def poll(self, s: State, slot: int) -> State | None:
        """``poll()`` returns the record at the consumer's position, which moves past it."""
        c = s.consumer(slot)
        if not c.owns or c.position is None or c.pending is not None:
            return None
        if c.position >= self.p.records:
            return None
        polled = attrs.evolve(c, pending=c.position, position=c.position + 1)
        return attrs.evolve(s, consumers=_with(s, slot, polled))

    @action(domain="_each_slot")
    def process(self, s: State, slot: int) -> State | None:
        """The application processes the polled record. Committing before processing
        (``commit = before-process``), it first waits for the commit past the record to be
        acknowledged."""
        c = s.consumer(slot)
        if c.pending is None:
            return None
        if self.p.commit == "before-process" and _covered(c.acked) <= c.pending:
            return None
        done = attrs.evolve(c, pending=None)
        return attrs.evolve(s, consumers=_with(s, slot, done), processed=s.processed | {c.pending})

    @action(domain="_each_slot")
    def send_commit(self, s: State, slot: int) -> State | None:
        """The consumer commits its position (``commitSync``): OffsetCommit with its member
        id and generation, of the offset after the last record it processed
        (``after-process``), or after the record it polled, before processing it
        (``before-process``). A zombie commits too: it does not know it is one."""
        c = s.consumer(slot)
        if c.state != MEMBER_STABLE or not c.owns or c.waiting or c.position is None:
            return None
        if c.position <= _covered(c.acked):
            return None
        if (c.pending is None) != (self.p.commit == "after-process"):
            return None
        r = Commit(slot, c.member_id, c.generation, s.group.coordinator, c.position)
        sent = attrs.evolve(c, waiting=True)
        return attrs.evolve(s, consumers=_with(s, slot, sent), inflight=s.inflight | {r})

    @action(domain="_commits")
    def handle_commit(self, s: State, r: Commit) -> State | None:
        """The coordinator handles OffsetCommit ``r`` (``commit_outcome``). Accepted, the
        offset is appended to ``__consumer_offsets`` and, once replicated (acks=all), put in
        the cache. The sender, if it still waits, learns the outcome: on a retriable error it
        commits again (``commitSync`` retries; with ``commit_given_up`` it takes the offset
        as committed); on a fence it has lost the partition (CommitFailedException) and
        rejoins."""
        outcome = self.commit_outcome(s, r)
        group, stored = s.group, s.stored
        commit_generation = s.commit_generation
        if outcome == NONE_ERROR:
            group = attrs.evolve(group, cache=r.offset)
            stored = attrs.evolve(stored, committed=r.offset)
            commit_generation = r.generation
        c = s.consumer(r.slot)
        consumers = s.consumers
        if c.waiting and c.member_id == r.member_id and c.generation == r.generation:
            given_up = outcome in RETRIABLE and "commit_given_up" in self.bugs
            if outcome == NONE_ERROR or given_up:
                answered = attrs.evolve(c, waiting=False, acked=r.offset)
            elif outcome in RETRIABLE:
                answered = attrs.evolve(c, waiting=False)
            else:
                answered = self._fenced(c, outcome)
            consumers = _with(s, r.slot, answered)
        return attrs.evolve(
            s,
            group=group,
            stored=stored,
            consumers=consumers,
            inflight=s.inflight - {r},
            commit_generation=commit_generation,
        )

    # --- faults and healing ---------------------------------------------------------------

    @action(domain="_members", kind=Kind.FAULT)
    def expire(self, s: State, member_id: MemberId) -> State | None:
        """The coordinator expires a member (no heartbeat within ``session.timeout.ms``, no
        poll within ``max.poll.interval.ms``): it is removed without being told, and the
        group rebalances without it, or becomes Empty (stored as such). The consumer goes on
        as a zombie until a request tells it."""
        group = s.group
        if group.loading or s.expiries >= self.p.max_expiries:
            return None
        members = group.members - {member_id}
        stored = s.stored
        if members:
            joined = group.joined - {member_id} if group.state == PREPARING else frozenset()
            state = PREPARING
        else:
            joined, state = frozenset(), EMPTY
            stored = attrs.evolve(stored, members=frozenset(), owner=NOBODY)
        # Stable or CompletingRebalance pass through PreparingRebalance on the way to Empty.
        via = group.state if group.state == PREPARING else group_transition(group.state, PREPARING)
        new_group = attrs.evolve(
            group, state=group_transition(via, state), members=members, joined=joined
        )
        return attrs.evolve(s, group=new_group, stored=stored, expiries=s.expiries + 1)

    @action(domain="_each_slot", kind=Kind.FAULT)
    def crash(self, s: State, slot: int) -> State | None:
        """Consumer process ``slot`` crashes and restarts: its member id, position and the
        record it was processing are gone (its member stays in the group until its session
        expires). Committing before processing, a crash between the commit and the
        processing loses the record."""
        c = s.consumer(slot)
        if s.crashes >= self.p.max_crashes or not c.owns:
            return None
        return attrs.evolve(s, consumers=_with(s, slot, Consumer()), crashes=s.crashes + 1)

    @action(kind=Kind.FAULT)
    def coordinator_moves(self, s: State) -> State | None:
        """The group's coordinator moves: another broker becomes leader of the group's
        ``__consumer_offsets`` partition. The old one unloads the group (its cache is gone,
        its requests answered NOT_COORDINATOR); the new one starts loading the partition.
        Nothing acknowledged is lost: the partition's commits were replicated with acks=all
        (``offsets.commit.required.acks``)."""
        group = s.group
        if group.loading or s.failovers >= self.p.max_failovers:
            return None
        consumers = tuple(
            Consumer(member_transition(c.state, UNJOINED), c.member_id) if c.state == JOINING else c
            for c in s.consumers
        )
        dead = Group(
            group_transition(group.state, DEAD),
            group.generation,
            frozenset(),
            frozenset(),
            NOBODY,
            group.coordinator + 1,
            True,
            None,
        )
        return attrs.evolve(s, group=dead, consumers=consumers, failovers=s.failovers + 1)

    @action(kind=Kind.HEAL)
    def load_offsets(self, s: State) -> State | None:
        """The new coordinator has read the group's partition of ``__consumer_offsets``
        (``GroupMetadataManager.loadGroupsForPartition``): its cache holds the last committed
        offset, and the group resumes from its last stored metadata, Stable (or Empty)."""
        group, stored = s.group, s.stored
        if not group.loading:
            return None
        loaded = Group(
            STABLE if stored.members else EMPTY,
            stored.generation,
            stored.members,
            frozenset(),
            stored.owner,
            group.coordinator,
            False,
            stored.committed,
        )
        return attrs.evolve(s, group=loaded)

    # --- properties -------------------------------------------------------------------------

    @invariant
    def at_least_once(self, s: State) -> bool:
        """At least once: every record below the group's committed offset was processed by
        some consumer, or is held by one that will process it (committing before
        processing, between the commit and the processing). Committing after processing
        keeps it through crashes, expiries and coordinator moves; committing before
        processing breaks it (at most once: a crash, or a rebalance, between the commit and
        the processing loses the record)."""
        held = {c.pending for c in s.consumers if c.pending is not None}
        return all(o in s.processed or o in held for o in range(_covered(s.stored.committed)))

    @invariant
    def committed_within_owner_progress(self, s: State) -> bool:
        """The group's committed offset never runs ahead of the partition's current owner
        (the member the current generation assigned it to, once it has fetched its
        position): only the owner's own progress moves it. A commit past the owner's
        position (a zombie's) would make the next owner skip records this one has not
        processed."""
        group = s.group
        for c in s.consumers:
            owner = c.owns and c.member_id == group.owner and c.member_id in group.members
            if owner and c.generation == group.generation and c.position is not None:
                return _covered(s.stored.committed) <= c.position
        return True

    @transition_property
    def stale_generation_never_commits(self, before: State, step: Step, after: State) -> bool:
        """A commit from a stale generation is never accepted: an OffsetCommit that changes
        the group's offset comes from the member the current generation assigned the
        partition to, in that generation, and no older than the last accepted commit."""
        if step.action != "handle_commit":
            return True
        if self.commit_outcome(before, dict(step.args)["r"]) != NONE_ERROR:
            return True
        r = dict(step.args)["r"]
        group = before.group
        return (
            r.member_id == group.owner
            and r.member_id in group.members
            and r.generation == group.generation
            and r.generation >= before.commit_generation
        )

    @transition_property
    def committed_never_regresses(self, before: State, step: Step, after: State) -> bool:
        """Committed offsets survive coordinator failover and never go backwards: the
        group's committed offset in ``__consumer_offsets`` only grows."""
        return _covered(after.stored.committed) >= _covered(before.stored.committed)

    @eventually(after="uncommitted_work")
    def work_committed(self, s: State) -> bool:
        """A consumer's processed records are eventually committed (or it loses the
        partition): under weak fairness of committing, handling commits and loading, the
        committed offset eventually passes every record the owner processed."""
        return not self.uncommitted_work(s)

    def uncommitted_work(self, s: State) -> bool:
        """Some owner has processed records the group's committed offset does not cover."""
        committed = _covered(s.stored.committed)
        return any(
            c.state == MEMBER_STABLE
            and c.owns
            and c.position is not None
            and c.pending is None
            and c.position > committed
            for c in s.consumers
        )

    def fairness(self) -> tuple[Fair, ...]:
        """What keeps happening: each consumer commits what it processed, the coordinator
        handles every commit, and a new coordinator finishes loading (weak fairness). Faults
        and membership changes are not fair."""
        fair = ("send_commit", "handle_commit", "load_offsets")
        return tuple(Fair(d.name) for d in self.enabled_actions() if d.name in fair)

    @sometimes_transition
    def zombie_commit_fenced(self, before: State, step: Step, after: State) -> bool:
        """A zombie's (or a stale generation's) OffsetCommit is refused with
        UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION."""
        if step.action != "handle_commit":
            return False
        outcome = self.commit_outcome(before, dict(step.args)["r"])
        return outcome in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION)

    @sometimes_transition
    def commit_during_load_refused(self, before: State, step: Step, after: State) -> bool:
        """A new coordinator still loading answers an OffsetCommit
        COORDINATOR_LOAD_IN_PROGRESS."""
        if step.action != "handle_commit":
            return False
        return self.commit_outcome(before, dict(step.args)["r"]) == COORDINATOR_LOAD_IN_PROGRESS

    @sometimes
    def offsets_survive_failover(self, s: State) -> bool:
        """After a coordinator move, the new coordinator serves a committed offset it
        loaded."""
        return s.failovers > 0 and not s.group.loading and s.group.cache is not None

    @sometimes
    def everything_committed(self, s: State) -> bool:
        """The group's committed offset reaches the log end."""
        return s.stored.committed == self.p.records

    def applicable_sometimes(self) -> tuple[Any, ...]:
        skip = set()
        if self.p.max_failovers < 1:
            skip |= {"CommitDuringLoadRefused", "OffsetsSurviveFailover"}
        if self.p.max_expiries < 1 or "stale_generation_commit" in self.bugs:
            skip.add("ZombieCommitFenced")
        return tuple(d for d in self._sometimes if d.name not in skip)

    # --- rendering ---------------------------------------------------------------------------

    def columns(self, s: State) -> list[tuple[str, str, str]]:
        """One trace-table row: per consumer its membership, whether it owns the partition,
        its position, the record it holds and the commit it last heard of; the coordinator
        (``c1*``: the second, still loading) with its cache; ``__consumer_offsets``; the
        records processed; the commits in flight."""
        cells: list[tuple[str, str, str]] = []
        for slot, c in zip(self.slots, s.consumers, strict=True):
            group = f"consumer {slot}"
            cells += [
                (group, "state", c.state),
                (group, "id", show_id(c.member_id)),
                (group, "gen", str(c.generation)),
                (group, "owns", "p0" if c.owns else "-"),
                (group, "pos", show_offset(c.position)),
                (group, "holds", show_offset(c.pending)),
                (group, "acked", show_offset(c.acked)),
            ]
        g = s.group
        members = " ".join(show_id(m) + ("J" if m in g.joined else "") for m in sorted(g.members))
        cells += [
            ("coordinator", "at", f"c{g.coordinator}" + ("*" if g.loading else "")),
            ("coordinator", "group", g.state),
            ("coordinator", "gen", str(g.generation)),
            ("coordinator", "members", members or "-"),
            ("coordinator", "owner", show_id(g.owner)),
            ("coordinator", "cache", show_offset(g.cache)),
            ("__consumer_offsets", "committed", show_offset(s.stored.committed)),
            ("__consumer_offsets", "group", f"g{s.stored.generation} {show_id(s.stored.owner)}"),
            ("processed", "offsets", "{" + ",".join(map(str, sorted(s.processed))) + "}"),
            (
                "network",
                "in flight",
                ", ".join(r.describe() for r in sorted(s.inflight, key=Commit.key)) or "-",
            ),
        ]
        return cells

    def to_json(self, s: State) -> dict[str, Any]:
        return {
            "consumers": [
                {
                    "state": c.state,
                    "member_id": show_id(c.member_id),
                    "generation": c.generation,
                    "owns": c.owns,
                    "position": c.position,
                    "pending": c.pending,
                    "acked": c.acked,
                    "waiting": c.waiting,
                }
                for c in s.consumers
            ],
            "group": {
                "state": s.group.state,
                "generation": s.group.generation,
                "members": [show_id(m) for m in sorted(s.group.members)],
                "joined": [show_id(m) for m in sorted(s.group.joined)],
                "owner": show_id(s.group.owner),
                "coordinator": s.group.coordinator,
                "loading": s.group.loading,
                "cache": s.group.cache,
            },
            "stored": {
                "committed": s.stored.committed,
                "generation": s.stored.generation,
                "members": [show_id(m) for m in sorted(s.stored.members)],
                "owner": show_id(s.stored.owner),
            },
            "inflight": [r.describe() for r in sorted(s.inflight, key=Commit.key)],
            "processed": sorted(s.processed),
            "commit_generation": s.commit_generation,
            "expiries": s.expiries,
            "crashes": s.crashes,
            "failovers": s.failovers,
        }

    def sort_key(self, s: State) -> str:
        return json.dumps(self.to_json(s), sort_keys=True)

    def short(self, s: State) -> str:
        parts = [
            f"{slot}:{c.state[0]}{show_id(c.member_id)}g{c.generation}"
            f"{'p' if c.owns else ''}@{show_offset(c.position)}"
            for slot, c in zip(self.slots, s.consumers, strict=True)
        ]
        g = s.group
        return (
            " ".join(parts)
            + f" | {g.state} g{g.generation} committed {show_offset(s.stored.committed)}"
        )
