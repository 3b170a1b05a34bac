"""The rebalance spec's state: the replication core's state (logs, HW, leader epochs, the
quorum state, LeaderAndIsr requests and the ghost of acknowledged writes, from
``spec.replication``) beside the partition metadata the rebalance mechanisms change.

``Meta`` is what the controller keeps for the partition beyond leader, epoch and ISR
(KRaft's ``PartitionRecord``; ZooKeeper's ``/brokers/topics/T`` and
``/admin/reassign_partitions``): the replica assignment, in order (its first replica is
the *preferred* leader), KIP-455's adding and removing replicas while a reassignment runs,
KIP-966's Eligible Leader Replicas, and the brokers in controlled shutdown.
"""

from __future__ import annotations

from typing import Any

import attrs

from spec.replication import State


@attrs.frozen(slots=True, cache_hash=True)
class Meta:
    """The partition metadata the rebalance mechanisms change (see the module docstring)."""

    assignment: tuple[int, ...]
    """The partition's replicas, in order. During a reassignment: the target replicas
    first, then those being removed (KIP-455)."""
    adding: frozenset[int] = frozenset()
    """KIP-455 ``AddingReplicas``: in the target, not in the original assignment."""
    removing: frozenset[int] = frozenset()
    """KIP-455 ``RemovingReplicas``: in the original assignment, not in the target."""
    elr: frozenset[int] = frozenset()
    """KIP-966 Eligible Leader Replicas: out of the ISR, but holding every committed record."""
    shutting: frozenset[int] = frozenset()
    """Brokers whose controlled shutdown the controller granted, until they restart."""
    reassignments: int = 0
    """Reassignments started so far (bounded by ``Params.max_reassignments``)."""
    shutdowns: int = 0
    """Controlled shutdowns granted so far (bounded by ``Params.max_shutdowns``)."""

    @property
    def ongoing(self) -> bool:
        """A reassignment is in progress."""
        return bool(self.adding or self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.assignment if r not in self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        return tuple(r for r in self.assignment if r not in self.adding)

    @property
    def preferred(self) -> int:
        """The preferred leader: the first replica of the assignment."""
        return self.assignment[0]

    def evolve(self, **changes: Any) -> Meta:
        return attrs.evolve(self, **changes)


@attrs.frozen(slots=True, cache_hash=True)
class RState:
    """The rebalance spec's state: replication's, and the partition metadata beside it."""

    core: State
    """The replication core's state (``spec.replication.State``)."""
    meta: Meta
    """The assignment, reassignment, ELR and controlled-shutdown metadata."""

    def evolve(self, core: State | None = None, meta: Meta | None = None) -> RState:
        return RState(self.core if core is None else core, self.meta if meta is None else meta)
