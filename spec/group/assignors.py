"""Partition assignment as the group's leader (classic, KIP-429) or the coordinator (KIP-848)
computes it: pure functions of the members and what they own.

The target is the range assignor's (``RangeAssignor``: members sorted by id, partitions in
contiguous ranges). Any deterministic assignor would do for the protocol's safety argument:
what matters is that partitions move when the membership changes. Stickiness
(``StickyAssignor``, ``CooperativeStickyAssignor``) only reduces how many move.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

M = TypeVar("M", bound=Hashable)


def range_assignment(members: Sequence[M], partitions: int) -> dict[M, frozenset[int]]:
    """``RangeAssignor`` over one topic: members in the given (sorted) order, the first
    ``partitions % n`` members get one partition more."""
    out: dict[M, frozenset[int]] = {}
    n = len(members)
    if n == 0:
        return out
    per, extra = divmod(partitions, n)
    start = 0
    for i, m in enumerate(members):
        count = per + (1 if i < extra else 0)
        out[m] = frozenset(range(start, start + count))
        start += count
    return out


def cooperative_assignment(
    members: Sequence[M],
    owned: dict[M, frozenset[int]],
    partitions: int,
    *,
    revocation_first: bool = True,
) -> dict[M, frozenset[int]]:
    """KIP-429 (``ConsumerPartitionAssignor`` with the COOPERATIVE rebalance protocol,
    ``AbstractStickyAssignor``): the target assignment, minus every partition that another
    member still owns (as its JoinGroup subscription reported). Such a partition is left
    unassigned in this generation: its owner sees it missing from its assignment, revokes it
    and rejoins, and the next rebalance gives it to its new owner. Without
    ``revocation_first`` (the broken variant), the target is handed out at once."""
    target = range_assignment(members, partitions)
    if not revocation_first:
        return target
    out = {}
    for m in members:
        held_elsewhere = frozenset(
            p for other in members if other != m for p in owned.get(other, frozenset())
        )
        out[m] = target[m] - held_elsewhere
    return out
