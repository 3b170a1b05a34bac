"""Bounds, protocol variants and deliberately broken variants of the consumer-group spec.

``Params.protocol`` picks the rebalance protocol:

- ``classic``: the eager JoinGroup/SyncGroup protocol (``partition.assignment.strategy`` =
  range, round-robin or sticky): every member revokes all its partitions before it rejoins;
- ``cooperative``: the incremental protocol of KIP-429 (cooperative-sticky): members keep
  their partitions through a rebalance, and a partition that moves is revoked in one
  rebalance and assigned in the next;
- ``consumer``: the next-generation protocol of KIP-848 (``group.protocol=consumer``):
  server-side assignment, member epochs, and heartbeats that carry the owned partitions.

Each ``--bug`` is named after the mistake it makes and belongs to some protocols only.
"""

from __future__ import annotations

import attrs

from spec.framework import SpecError

PROTOCOLS = ("classic", "cooperative", "consumer")
NETWORKS = ("ordered", "reordering")
"""``ordered``: a consumer's requests are handled in the order it sent them (one TCP
connection per broker, handled one request at a time; a client that gives up on a request
closes the connection). ``reordering``: a request its sender gave up on stays in the network
and may be handled after the sender's later requests (a retried or delayed request
overtaken by the next one)."""

BUGS = {
    "no_generation_check": (
        "the coordinator checks no generation id: Heartbeat, SyncGroup and OffsetCommit from an "
        "older generation are accepted (no ILLEGAL_GENERATION)"
    ),
    "sync_without_generation_check": (
        "the leader's SyncGroup assignment is applied without checking its generation: an "
        "assignment computed for an older generation's members becomes the current one"
    ),
    "ignores_rebalance_in_progress": (
        "the consumer ignores REBALANCE_IN_PROGRESS in a heartbeat response and keeps reading "
        "instead of rejoining (no requestRejoin): the join phase waits for it until the "
        "rebalance timeout, and without one forever (a liveness bug)"
    ),
    "no_revocation_first": (
        "cooperative: the leader assigns a partition to its new owner in the same rebalance in "
        "which its old owner still holds it (KIP-429's revoke-then-reassign skipped)"
    ),
    "no_member_epoch_fencing": (
        "consumer (KIP-848): the coordinator does not check the member epoch a heartbeat "
        "carries: a heartbeat from a member it removed is taken as a join (no "
        "UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH)"
    ),
    "assign_before_revoked": (
        "consumer (KIP-848): a member is given its target partitions before their previous "
        "owner has revoked them"
    ),
}

PROTOCOL_BUGS = {
    "classic": frozenset(
        {"no_generation_check", "sync_without_generation_check", "ignores_rebalance_in_progress"}
    ),
    "cooperative": frozenset(
        {
            "no_generation_check",
            "sync_without_generation_check",
            "no_revocation_first",
            "ignores_rebalance_in_progress",
        }
    ),
    "consumer": frozenset({"no_member_epoch_fencing", "assign_before_revoked"}),
}
"""Which mistakes each protocol can make."""

BUG_SETTINGS: dict[str, dict[str, object]] = {
    "no_revocation_first": {"protocol": "cooperative"},
    "no_member_epoch_fencing": {"protocol": "consumer"},
    "assign_before_revoked": {"protocol": "consumer"},
    "sync_without_generation_check": {"network": "reordering", "max_failovers": 0},
}
"""Where a bug shows, for settings the user leaves unset: the protocol that can make the
mistake, and for ``sync_without_generation_check`` a network that lets a stale SyncGroup
arrive late (with per-connection order the member-id check already stops it) and no
coordinator move (so the search reaches it within the default bounds)."""


@attrs.frozen
class Params:
    """Bounds and protocol variants. Faults are bounded by budgets; healing (rejoining,
    finding the coordinator, loading the group) never is."""

    protocol: str = "classic"
    members: int = 2
    """Consumer processes (slots 1..members), all subscribed to the same topic."""
    partitions: int = 2
    """Partitions of the subscribed topic."""
    max_generation: int | None = None
    """Rebalances stop once the generation (KIP-848: the group epoch) reaches this; by
    default 2 for the classic protocols (one rebalance after the first) and 4 for KIP-848
    (whose group epoch moves on every join, leave and expiry)."""
    max_expiries: int = 1
    """Fault budget: members whose session (or poll interval) may expire."""
    max_timeouts: int = 1
    """Fault budget: requests a member may give up on (``request.timeout.ms``) while the
    request is still in the network."""
    max_failovers: int = 1
    """Fault budget: how often the coordinator may move."""
    network: str = "ordered"
    max_member_ids: int = 2
    """Member ids the coordinator may hand out per consumer (a fenced or departed member
    rejoins under a new id)."""
    bugs: frozenset[str] = frozenset()

    def __attrs_post_init__(self) -> None:
        problems = []
        if self.protocol not in PROTOCOLS:
            problems.append(f"protocol {self.protocol!r} is not one of {', '.join(PROTOCOLS)}")
        if not 1 <= self.members <= 3:
            problems.append(f"members must be 1..3, got {self.members}")
        if not 1 <= self.partitions <= 3:
            problems.append(f"partitions must be 1..3, got {self.partitions}")
        if self.max_generation is not None and self.max_generation < 1:
            problems.append(f"max_generation must be >= 1, got {self.max_generation}")
        for name in ("max_expiries", "max_timeouts", "max_failovers"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.network not in NETWORKS:
            problems.append(f"network {self.network!r} is not one of {', '.join(NETWORKS)}")
        if self.max_member_ids < 1:
            problems.append(f"max_member_ids must be >= 1, got {self.max_member_ids}")
        unknown = sorted(set(self.bugs) - set(BUGS))
        if unknown:
            problems.append(f"unknown bug flag(s) {unknown}; known: {', '.join(sorted(BUGS))}")
        elif self.protocol in PROTOCOLS:
            foreign = sorted(set(self.bugs) - PROTOCOL_BUGS[self.protocol])
            if foreign:
                owners = {bug: [p for p in PROTOCOLS if bug in PROTOCOL_BUGS[p]] for bug in foreign}
                problems.append(
                    "; ".join(
                        f"--bug {bug} needs --protocol {' or '.join(owners[bug])}"
                        for bug in foreign
                    )
                )
        if problems:
            raise SpecError("; ".join(problems))

    @property
    def generation_bound(self) -> int:
        """``max_generation``, or the protocol's default."""
        if self.max_generation is not None:
            return self.max_generation
        return 4 if self.protocol == "consumer" else 2

    @property
    def slots(self) -> tuple[int, ...]:
        return tuple(range(1, self.members + 1))

    @property
    def all_partitions(self) -> frozenset[int]:
        return frozenset(range(self.partitions))
