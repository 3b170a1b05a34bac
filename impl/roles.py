"""A partition replica's role and its life cycle, as a table (h11's ``_state.py`` style):
Kafka's ``Partition`` is led (``makeLeader``), followed (``makeFollower``) or not yet known
to its broker (``offline``).

A replica starts ``offline`` (its broker just started, or the partition was just created: it
knows no leader), and LeaderAndIsr requests move it to ``leader`` or ``follower``
(``TRANSITIONS``: every row says what the transition does; ``next_role`` refuses any other
with one readable error). A replica never goes back to ``offline``: it goes away with its
process (a crash drops the whole object) and comes back ``offline`` from disk. ``SERVES``
says which messages each role acts on (``impl.replica.Replica.step`` dispatches by it).
``roles_to_mermaid`` and ``roles_to_markdown`` draw the table for ``docs/impl.md``.
"""

from __future__ import annotations

import enum

import attrs

from impl.messages import Message
from impl.protocol import (
    AlterPartitionResponse,
    Fetch,
    FetchResponse,
    OffsetsForLeaderEpoch,
    Produce,
)

__all__ = [
    "REQUESTS",
    "SERVES",
    "TRANSITIONS",
    "IllegalRoleTransition",
    "Role",
    "RoleEvent",
    "RoleTransition",
    "next_role",
    "roles_to_markdown",
    "roles_to_mermaid",
]


class Role(enum.Enum):
    OFFLINE = "offline"
    FOLLOWER = "follower"
    LEADER = "leader"


class RoleEvent(enum.Enum):
    BECOME_LEADER = "become-leader"
    BECOME_FOLLOWER = "become-follower"


@attrs.frozen
class RoleTransition:
    source: Role
    event: RoleEvent
    target: Role
    does: str


_O, _F, _L = Role.OFFLINE, Role.FOLLOWER, Role.LEADER
_BL, _BF = RoleEvent.BECOME_LEADER, RoleEvent.BECOME_FOLLOWER

TRANSITIONS: tuple[RoleTransition, ...] = (
    RoleTransition(_O, _BL, _L, "take epoch and ISR; epoch starts at LEO; reset remote states"),
    RoleTransition(_O, _BF, _F, "truncate by the variant's rule; start fetching"),
    RoleTransition(_F, _BL, _L, "stop fetching; take epoch and ISR; reset remote states"),
    RoleTransition(_F, _BF, _F, "newer epoch: truncate again; fetch from the named leader"),
    RoleTransition(_L, _BL, _L, "newer epoch: fail purgatory; reset remote states"),
    RoleTransition(_L, _BF, _F, "fail purgatory; truncate; start fetching"),
)

_TABLE = {(t.source, t.event): t for t in TRANSITIONS}
assert len(_TABLE) == len(TRANSITIONS)
assert all(t.target is not Role.OFFLINE for t in TRANSITIONS), "offline only with the process"

SERVES: dict[Role, frozenset[type[Message]]] = {
    Role.OFFLINE: frozenset(),
    Role.FOLLOWER: frozenset({FetchResponse, Fetch}),
    Role.LEADER: frozenset({Produce, Fetch, OffsetsForLeaderEpoch, AlterPartitionResponse}),
}
"""Which messages each role acts on (``Replica.step``); any other request is answered
NOT_LEADER_OR_FOLLOWER, any other response dropped. A follower takes a Fetch for a
consumer's (KIP-392: up to its own high watermark) and refuses a replica's."""

REQUESTS: frozenset[type[Message]] = frozenset({Produce, Fetch, OffsetsForLeaderEpoch})
"""The requests a replica answers (``Replica.step``); the other messages it takes are
responses to its own requests."""


class IllegalRoleTransition(Exception):
    """A role change the table does not allow; names the ones it does."""

    def __init__(self, replica: str, role: Role, event: RoleEvent) -> None:
        allowed = ", ".join(t.event.value for t in TRANSITIONS if t.source is role)
        super().__init__(
            f"replica {replica} cannot {event.value} while {role.value}; allowed: {allowed}"
        )


def next_role(replica: str, role: Role, event: RoleEvent) -> Role:
    """The role ``replica`` takes on ``event`` in ``role``; raises if the table has no row."""
    row = _TABLE.get((role, event))
    if row is None:
        raise IllegalRoleTransition(replica, role, event)
    return row.target


def roles_to_mermaid() -> str:
    lines = ["stateDiagram-v2", f"    [*] --> {Role.OFFLINE.value}"]
    lines += [f"    {t.source.value} --> {t.target.value}: {t.event.value}" for t in TRANSITIONS]
    return "\n".join(lines) + "\n"


def roles_to_markdown() -> str:
    lines = ["| from | event | to | does |", "| --- | --- | --- | --- |"]
    lines += [
        f"| {t.source.value} | {t.event.value} | {t.target.value} | {t.does} |" for t in TRANSITIONS
    ]
    return "\n".join(lines) + "\n"
