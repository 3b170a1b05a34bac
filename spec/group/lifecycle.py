"""The life cycles of a consumer group and of a member, as tables (h11's ``_state.py`` style).

The group's states and their allowed transitions are Kafka's ``GroupState`` (``GroupMetadata``
in the classic coordinator: each state lists its valid previous states); a member's are
the consumer's view of its own membership (``AbstractCoordinator.MemberState`` and the
join/sync futures). Every transition the spec makes goes through ``group_transition`` or
``member_transition``, which raise one readable error on a transition the table does not
allow; the docs draw the diagrams from the same tables.
"""

from __future__ import annotations

from spec.framework import SpecError

EMPTY = "Empty"
PREPARING = "PreparingRebalance"
COMPLETING = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"
GROUP_STATES = (EMPTY, PREPARING, COMPLETING, STABLE, DEAD)

GROUP_TRANSITIONS: dict[str, frozenset[str]] = {
    EMPTY: frozenset({PREPARING, DEAD}),
    PREPARING: frozenset({COMPLETING, EMPTY, DEAD}),
    COMPLETING: frozenset({STABLE, PREPARING, DEAD}),
    STABLE: frozenset({PREPARING, DEAD}),
    DEAD: frozenset(),
}
"""Kafka's ``GroupState``: PreparingRebalance from Stable, CompletingRebalance or Empty (a
member joins, leaves or expires); CompletingRebalance once every member has joined (the
JoinGroup responses are sent); Stable once the leader's SyncGroup arrives; Empty when the
last member is gone; Dead from anywhere, when the coordinator unloads the group (it no
longer leads the group's ``__consumer_offsets`` partition) or the group is deleted. A Dead
group object is never reused: the new coordinator loads a fresh one from the log."""

GROUP_WHY: dict[tuple[str, str], str] = {
    (EMPTY, PREPARING): "a member joins",
    (PREPARING, COMPLETING): "every known member has joined (or the rest were expired)",
    (PREPARING, EMPTY): "the last member is gone",
    (COMPLETING, STABLE): "the leader's SyncGroup carries the assignment",
    (COMPLETING, PREPARING): "a member joins, leaves or expires",
    (STABLE, PREPARING): "a member joins, leaves or expires",
}

UNJOINED = "unjoined"
JOINING = "joining"
AWAITING_SYNC = "awaiting-sync"
MEMBER_STABLE = "stable"
MEMBER_STATES = (UNJOINED, JOINING, AWAITING_SYNC, MEMBER_STABLE)

MEMBER_TRANSITIONS: dict[str, frozenset[str]] = {
    UNJOINED: frozenset({JOINING}),
    JOINING: frozenset({AWAITING_SYNC, UNJOINED}),
    AWAITING_SYNC: frozenset({MEMBER_STABLE, UNJOINED}),
    MEMBER_STABLE: frozenset({UNJOINED}),
}
"""A member: unjoined (must send JoinGroup, with or without a member id); joining (its
JoinGroup is parked at the coordinator until the join phase completes); awaiting sync (it
has the JoinGroup response: generation, member id, and for the leader the members to
assign); stable (its SyncGroup response gave it its partitions). Every error that asks for
a rejoin (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, NOT_COORDINATOR on a
parked request) and a LeaveGroup return it to unjoined."""

MEMBER_WHY: dict[tuple[str, str], str] = {
    (UNJOINED, JOINING): "sends JoinGroup",
    (JOINING, AWAITING_SYNC): "JoinGroup response (generation, member id, leader)",
    (JOINING, UNJOINED): "UNKNOWN_MEMBER_ID / NOT_COORDINATOR",
    (AWAITING_SYNC, MEMBER_STABLE): "SyncGroup response (its assignment)",
    (AWAITING_SYNC, UNJOINED): "REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION / fenced",
    (MEMBER_STABLE, UNJOINED): "rebalance noticed, fenced, or LeaveGroup",
}


def group_transition(old: str, new: str) -> str:
    """``new`` if the table allows ``old -> new`` (or no change); ``SpecError`` otherwise."""
    if old != new and new not in GROUP_TRANSITIONS[old]:
        allowed = ", ".join(sorted(GROUP_TRANSITIONS[old])) or "nothing (terminal)"
        raise SpecError(f"illegal group transition {old} -> {new}; from {old}: {allowed}")
    return new


def member_transition(old: str, new: str) -> str:
    """``new`` if the table allows ``old -> new`` (or no change); ``SpecError`` otherwise."""
    if old != new and new not in MEMBER_TRANSITIONS[old]:
        allowed = ", ".join(sorted(MEMBER_TRANSITIONS[old]))
        raise SpecError(f"illegal member transition {old} -> {new}; from {old}: {allowed}")
    return new


def mermaid(transitions: dict[str, frozenset[str]], why: dict[tuple[str, str], str]) -> str:
    """A mermaid ``stateDiagram`` of a table, for the docs."""
    lines = ["stateDiagram-v2"]
    for old, news in transitions.items():
        for new in sorted(news):
            label = why.get((old, new), "")
            lines.append(f"    {old} --> {new}" + (f": {label}" if label else ""))
    return "\n".join(lines)
