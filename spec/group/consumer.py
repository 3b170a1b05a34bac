"""The next-generation consumer-group protocol of KIP-848 (``group.protocol=consumer``) as an
executable state machine: server-side assignment, member epochs, and heartbeats that carry
the partitions a member owns.

There is no JoinGroup/SyncGroup barrier. Every member sends ConsumerGroupHeartbeat with its
member id, its *member epoch* and the partitions it owns; the coordinator answers with the
member's epoch and the partitions it should own. A membership change (a member joins with
epoch 0, leaves with epoch -1, or its session expires) bumps the *group epoch* and the
coordinator computes a new *target assignment* (the server-side assignor, ``uniform`` or
``range``). Each member then reconciles towards it on its own, in at most two steps:

1. if it owns partitions the target gives to others, it is told to revoke them and keeps
   its member epoch; its next heartbeat, no longer listing them, releases them;
2. then it moves to the target epoch and is given its target partitions -- only those that
   are *free*, i.e. no other member still owns them or is still revoking them (the rest
   follow in later heartbeats, once released).

A heartbeat whose member is unknown gets UNKNOWN_MEMBER_ID, one whose member epoch is not
the member's current one FENCED_MEMBER_EPOCH: the member drops all its partitions and
rejoins with epoch 0. A member whose session expired is such a zombie until its next
heartbeat. The group's state (member epochs, assignments, target) is written to
``__consumer_offsets`` as records on every change, so a coordinator failover loses nothing:
the new coordinator answers COORDINATOR_LOAD_IN_PROGRESS until it has replayed them.

Here the member id of consumer ``c`` is ``c`` (KIP-848 lets the client generate its member
id once and keep it). The coordinator's check is strict: Kafka also accepts a heartbeat
carrying the member's *previous* epoch when its owned partitions are a subset of its
assignment (a lost response); accepting less is safe, and only costs rejoins.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs

from spec.framework import (
    Kind,
    Spec,
    Step,
    action,
    invariant,
    sometimes_transition,
    transition_property,
)
from spec.group.assignors import range_assignment
from spec.group.params import Params

CONSUMER_EMPTY = "Empty"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"
CONSUMER_STABLE = "Stable"


def _show(ps: frozenset[int]) -> str:
    return "{" + ",".join(f"p{p}" for p in sorted(ps)) + "}"


@attrs.frozen(slots=True, cache_hash=True)
class Record:
    """The coordinator's record of a member (``ConsumerGroupMember``): its member epoch, the
    partitions assigned to it, and those it must revoke before its epoch moves on."""

    epoch: int
    """The member epoch the coordinator expects in its next heartbeat."""
    assigned: frozenset[int] = frozenset()
    """The partitions it is given (it may own them)."""
    revoking: frozenset[int] = frozenset()
    """The partitions it must release before its epoch moves to the target."""

    def describe(self) -> str:
        out = f"e{self.epoch}{_show(self.assigned)}"
        return out + (f"-{_show(self.revoking)}" if self.revoking else "")


@attrs.frozen(slots=True, cache_hash=True)
class Client:
    """The consumer's side (``ConsumerMembershipManager``): the member epoch it believes it
    has (0: not a member, joining) and the partitions it owns."""

    epoch: int = 0
    """The member epoch it sends (0: joining; it rejoins with 0 after being fenced)."""
    owned: frozenset[int] = frozenset()
    """The partitions it owns and reads, listed in its heartbeats."""


@attrs.frozen(slots=True, cache_hash=True)
class State:
    """One KIP-848 group: the coordinator's records, the target assignment and every
    consumer's view."""

    group_epoch: int
    """Bumped on every membership change; the target assignment is computed for it."""
    target: tuple[frozenset[int], ...]
    """The target assignment of the group epoch, per consumer."""
    records: tuple[Record | None, ...]
    """Per consumer: its record at the coordinator, or None when it is not a member."""
    clients: tuple[Client, ...]
    """``clients[i]`` is consumer ``i + 1``'s side."""
    coordinator: int = 0
    """Which coordinator holds the group: bumped on every move."""
    loading: bool = False
    """The new coordinator is still replaying the group's records:
    COORDINATOR_LOAD_IN_PROGRESS."""
    expiries: int = 0
    """Sessions expired so far (the fault budget ``Params.max_expiries``)."""
    lost: int = 0
    """Heartbeat responses lost so far (the fault budget ``Params.max_timeouts``)."""
    failovers: int = 0
    """Coordinator moves so far (the fault budget ``Params.max_failovers``)."""


def _replace(items: tuple[Any, ...], i: int, new: Any) -> tuple[Any, ...]:
    out = list(items)
    out[i] = new
    return tuple(out)


class ConsumerGroup(Spec):
    """KIP-848's consumer group. See the module docstring."""

    name = "group"

    def __init__(self, params: Params | None = None) -> None:
        self.p = params or Params(protocol="consumer")
        self.bugs = self.p.bugs
        self.slots = self.p.slots
        self.everything = self.p.all_partitions
        self._slot_args = tuple((c,) for c in self.slots)

    def init(self) -> Iterator[State]:
        """A new group at group epoch 0: no member, an empty target; no consumer has joined."""
        yield State(
            group_epoch=0,
            target=tuple(frozenset() for _ in self.slots),
            records=tuple(None for _ in self.slots),
            clients=tuple(Client() for _ in self.slots),
        )

    def enabled_actions(self) -> tuple[Any, ...]:
        skip = set()
        if self.p.max_failovers == 0:
            skip |= {"coordinator_moves", "load_group"}
        if self.p.max_timeouts == 0:
            skip.add("heartbeat_response_lost")
        if self.p.max_expiries == 0:
            skip.add("expire")
        return tuple(d for d in self._actions if d.name not in skip)

    # --- the coordinator's rules -------------------------------------------------------------

    def new_target(self, records: tuple[Record | None, ...]) -> tuple[frozenset[int], ...]:
        """The server-side assignor's target for the members (``range`` over member ids)."""
        members = [c for c, r in zip(self.slots, records, strict=True) if r is not None]
        plan = range_assignment(members, self.p.partitions)
        return tuple(plan.get(c, frozenset()) for c in self.slots)

    def _membership_changed(self, s: State, records: tuple[Record | None, ...]) -> State | None:
        """A member joined, left or expired: the group epoch is bumped and a new target
        assignment computed (``ConsumerGroup`` state Assigning, then Reconciling)."""
        if s.group_epoch >= self.p.generation_bound:
            return None
        return attrs.evolve(
            s, group_epoch=s.group_epoch + 1, target=self.new_target(records), records=records
        )

    def fenced(self, s: State, c: int, epoch: int) -> str | None:
        """The heartbeat's fence (``throwIfMemberEpochIsInvalid``): UNKNOWN_MEMBER_ID for a
        member the coordinator does not know, FENCED_MEMBER_EPOCH for an epoch that is not
        the member's; None when it passes (or when the check is switched off)."""
        if epoch == 0 or "no_member_epoch_fencing" in self.bugs:
            return None
        record = s.records[c - 1]
        if record is None:
            return "UNKNOWN_MEMBER_ID"
        if record.epoch != epoch:
            return "FENCED_MEMBER_EPOCH"
        return None

    def reconcile(self, s: State, c: int, record: Record, owned: frozenset[int]) -> Record:
        """The member's next step towards the target (``CurrentAssignmentBuilder``):
        partitions it no longer reports owned are released; with nothing left to release it
        is told to revoke what the target gives to others, and once that is done it moves to
        the group epoch and gets the free part of its target."""
        revoking = record.revoking & owned
        target = s.target[c - 1]
        if revoking:
            return Record(record.epoch, record.assigned, revoking)
        to_revoke = record.assigned - target
        if to_revoke and record.epoch < s.group_epoch:
            return Record(record.epoch, record.assigned & target, to_revoke)
        taken: set[int] = set()
        for other, r in zip(self.slots, s.records, strict=True):
            if other == c or r is None:
                continue
            taken |= r.assigned
            if "assign_before_revoked" not in self.bugs:
                taken |= r.revoking
        assigned = (record.assigned & target) | (target - taken)
        return Record(s.group_epoch, assigned, frozenset())

    # --- actions -----------------------------------------------------------------------------

    def _each_slot(self, s: State) -> tuple[tuple[int], ...]:
        return self._slot_args

    def _heartbeat(self, s: State, c: int) -> tuple[State, Client] | None:
        """The coordinator's side of a heartbeat from consumer ``c``, and the answer."""
        if s.loading:
            return None
        client = s.clients[c - 1]
        error = self.fenced(s, c, client.epoch)
        if error is not None:
            return s, Client()
        record = s.records[c - 1]
        if client.epoch == 0 or record is None:
            joined = _replace(s.records, c - 1, Record(0))
            bumped = self._membership_changed(s, joined)
            if bumped is None:
                return None
            s = bumped
            record = Record(0)
        new = self.reconcile(s, c, record, client.owned)
        s = attrs.evolve(s, records=_replace(s.records, c - 1, new))
        return s, Client(new.epoch, new.assigned)

    @action(domain="_each_slot")
    def heartbeat(self, s: State, c: int) -> State | None:
        """Consumer ``c`` sends ConsumerGroupHeartbeat (every
        ``group.consumer.heartbeat.interval.ms``) with its member epoch and owned
        partitions, and applies the answer: it revokes what it is no longer assigned
        (``onPartitionsRevoked``), takes what it is newly assigned, and adopts the member
        epoch. Epoch 0 joins; an unknown member or a stale epoch is fenced: the consumer
        loses its partitions and rejoins with epoch 0."""
        result = self._heartbeat(s, c)
        if result is None:
            return None
        after, client = result
        after = attrs.evolve(after, clients=_replace(after.clients, c - 1, client))
        return None if after == s else after

    @action(domain="_each_slot", kind=Kind.FAULT)
    def heartbeat_response_lost(self, s: State, c: int) -> State | None:
        """Consumer ``c``'s heartbeat is handled but the answer is lost (or comes after
        ``request.timeout.ms``): the coordinator moved the member on, the consumer did not
        hear of it, and its next heartbeat carries its old epoch."""
        if s.lost >= self.p.max_timeouts:
            return None
        result = self._heartbeat(s, c)
        if result is None or result[0] == s:
            return None
        return attrs.evolve(result[0], lost=s.lost + 1)

    @action(domain="_each_slot")
    def leave_group(self, s: State, c: int) -> State | None:
        """Consumer ``c`` leaves (``close``/``unsubscribe``): it revokes its partitions and
        sends a heartbeat with member epoch -1; the coordinator removes it and bumps the
        group epoch. It may rejoin later with epoch 0."""
        client = s.clients[c - 1]
        if s.loading or client.epoch == 0 or s.records[c - 1] is None:
            return None
        left = self._membership_changed(s, _replace(s.records, c - 1, None))
        if left is None:
            return None
        return attrs.evolve(left, clients=_replace(left.clients, c - 1, Client()))

    @action(domain="_each_slot", kind=Kind.FAULT)
    def expire(self, s: State, c: int) -> State | None:
        """Consumer ``c``'s session expires (no heartbeat within
        ``group.consumer.session.timeout.ms``; or, while revoking, within the rebalance
        timeout): the coordinator removes it and bumps the group epoch. Any member may
        expire (false suspicion included); it is not told and stays a zombie, believing it
        owns its partitions, until its next heartbeat."""
        if s.loading or s.records[c - 1] is None or s.expiries >= self.p.max_expiries:
            return None
        gone = self._membership_changed(s, _replace(s.records, c - 1, None))
        if gone is None:
            return None
        return attrs.evolve(gone, expiries=s.expiries + 1)

    @action(kind=Kind.FAULT)
    def coordinator_moves(self, s: State) -> State | None:
        """The group's coordinator moves (another broker leads its ``__consumer_offsets``
        partition): the new one answers COORDINATOR_LOAD_IN_PROGRESS while it replays the
        group's records."""
        if s.loading or s.failovers >= self.p.max_failovers:
            return None
        return attrs.evolve(
            s, coordinator=s.coordinator + 1, loading=True, failovers=s.failovers + 1
        )

    @action(kind=Kind.HEAL)
    def load_group(self, s: State) -> State | None:
        """The new coordinator has replayed the group's records: every member epoch,
        assignment and the target are as they were (KIP-848 writes every change). Never
        bounded."""
        if not s.loading:
            return None
        return attrs.evolve(s, loading=False)

    # --- invariants ----------------------------------------------------------------------------

    @invariant
    def assignment_partitions_subscribed_partitions(self, s: State) -> bool:
        """Within a group epoch the target assignment is a partition of the subscribed
        partitions among the members, and the members' current assignments (assigned or
        still being revoked) never overlap."""
        members = [c for c, r in zip(self.slots, s.records, strict=True) if r is not None]
        seen: set[int] = set()
        for c in self.slots:
            t = s.target[c - 1]
            if t & seen or (t and c not in members):
                return False
            seen |= t
        if members and seen != self.everything:
            return False
        held: set[int] = set()
        for r in s.records:
            if r is None:
                continue
            mine = r.assigned | r.revoking
            if mine & held:
                return False
            held |= mine
        return True

    @invariant
    def one_owner_per_partition(self, s: State) -> bool:
        """No partition is owned by two members of the current group: among consumers the
        coordinator knows at the member epoch they hold, each partition has at most one
        owner (a zombie or a consumer with a stale epoch is fenced at its next
        heartbeat)."""
        seen: set[int] = set()
        for client, record in zip(s.clients, s.records, strict=True):
            if record is None or client.epoch != record.epoch or client.epoch == 0:
                continue
            if client.owned & seen:
                return False
            seen |= client.owned
        return True

    @transition_property
    def stale_generation_changes_nothing(self, before: State, step: Step, after: State) -> bool:
        """No request from a stale member epoch changes group state: a heartbeat whose
        member is unknown, or whose epoch is not the member's current one, leaves the group
        epoch, the target and every member record as they were."""
        if step.action not in ("heartbeat", "heartbeat_response_lost"):
            return True
        c = dict(step.args)["c"]
        epoch = before.clients[c - 1].epoch
        record = before.records[c - 1]
        if epoch == 0 or (record is not None and record.epoch == epoch):
            return True
        return (
            after.group_epoch == before.group_epoch
            and after.target == before.target
            and after.records == before.records
        )

    # --- "sometimes" -----------------------------------------------------------------------------

    @sometimes_transition
    def rebalance_completes(self, before: State, step: Step, after: State) -> bool:
        """A rebalance completes: after a membership change, every member has reached the
        group epoch (at least 2) with nothing left to revoke -- the group is Stable again."""
        return self.group_state(after) == CONSUMER_STABLE and (
            self.group_state(before) != CONSUMER_STABLE and after.group_epoch >= 2
        )

    @sometimes_transition
    def zombie_fenced(self, before: State, step: Step, after: State) -> bool:
        """A zombie is fenced: a consumer that believed it owned partitions, but that the
        coordinator no longer knows at that epoch, gets UNKNOWN_MEMBER_ID or
        FENCED_MEMBER_EPOCH and loses them."""
        if step.action != "heartbeat":
            return False
        c = dict(step.args)["c"]
        client = before.clients[c - 1]
        record = before.records[c - 1]
        stale = record is None or record.epoch != client.epoch
        return (
            client.epoch != 0 and bool(client.owned) and stale and after.clients[c - 1] == Client()
        )

    @sometimes_transition
    def coordinator_moves_and_group_resumes(self, before: State, step: Step, after: State) -> bool:
        """The coordinator moves: the new one replays the group's records and the group
        resumes with its members."""
        return step.action == "load_group" and any(r is not None for r in after.records)

    def applicable_sometimes(self) -> tuple[Any, ...]:
        skip = set()
        if self.p.generation_bound < 2:
            skip.add("RebalanceCompletes")
        if self.p.max_expiries < 1 or "no_member_epoch_fencing" in self.bugs:
            skip.add("ZombieFenced")
        if self.p.max_failovers < 1:
            skip.add("CoordinatorMovesAndGroupResumes")
        return tuple(d for d in self._sometimes if d.name not in skip)

    # --- rendering ---------------------------------------------------------------------------

    def group_state(self, s: State) -> str:
        """KIP-848's ``ConsumerGroupState``, derived: Empty without members; Reconciling
        while a member is below the group epoch or revoking; Stable otherwise (Assigning
        does not last a step here: the target is computed with the epoch bump)."""
        records = [r for r in s.records if r is not None]
        if not records:
            return CONSUMER_EMPTY
        if any(r.epoch < s.group_epoch or r.revoking for r in records):
            return RECONCILING
        return CONSUMER_STABLE

    def columns(self, s: State) -> list[tuple[str, str, str]]:
        """Per consumer: its member epoch and owned partitions, and its record at the
        coordinator (epoch, assigned, ``-{...}`` still revoking); then the group epoch,
        state and target."""
        cells: list[tuple[str, str, str]] = []
        for c, client, record in zip(self.slots, s.clients, s.records, strict=True):
            group = f"consumer {c}"
            cells += [
                (group, "epoch", str(client.epoch)),
                (group, "owns", _show(client.owned)),
                (group, "record", "-" if record is None else record.describe()),
            ]
        target = " ".join(f"{c}:{_show(t)}" for c, t in zip(self.slots, s.target, strict=True))
        cells += [
            ("coordinator", "at", f"c{s.coordinator}" + ("*" if s.loading else "")),
            ("coordinator", "group", self.group_state(s)),
            ("coordinator", "epoch", str(s.group_epoch)),
            ("coordinator", "target", target),
        ]
        return cells

    def sort_key(self, s: State) -> str:
        """A total order on states (for ``reachable_states``): their JSON, keys sorted."""
        return json.dumps(self.to_json(s), sort_keys=True)

    def short(self, s: State) -> str:
        return " ".join(
            f"{c}:e{cl.epoch}{_show(cl.owned)}" for c, cl in zip(self.slots, s.clients, strict=True)
        )

    def to_json(self, s: State) -> dict[str, Any]:
        return {
            "group_epoch": s.group_epoch,
            "state": self.group_state(s),
            "target": {str(c): sorted(t) for c, t in zip(self.slots, s.target, strict=True)},
            "records": {
                str(c): None
                if r is None
                else {
                    "epoch": r.epoch,
                    "assigned": sorted(r.assigned),
                    "revoking": sorted(r.revoking),
                }
                for c, r in zip(self.slots, s.records, strict=True)
            },
            "clients": {
                str(c): {"epoch": cl.epoch, "owned": sorted(cl.owned)}
                for c, cl in zip(self.slots, s.clients, strict=True)
            },
            "coordinator": s.coordinator,
            "loading": s.loading,
        }
