"""Partition reassignment as KIP-455 defines it (``AlterPartitionReassignments``).

An administrator gives a partition a *target* replica list. The controller records the
reassignment in the partition's metadata: the replicas become the target followed by the
replicas being removed, with ``AddingReplicas`` (target minus original) and
``RemovingReplicas`` (original minus target). Then:

1. the adding replicas start as followers with empty logs, outside the ISR, fetch from the
   leader and catch up (``spec.replication``'s fetch), and the leader adds each to the ISR
   once it has caught up;
2. when every target replica is in the ISR, the controller completes the reassignment in
   one write: the replicas become the target, the ISR loses the removed replicas, and if
   the leader is being removed, leadership moves to a target replica in the ISR (a new
   leader epoch); then the removed replicas are told to delete their copy (StopReplica);
3. until then the reassignment may be cancelled (KIP-455: an empty target cancels):
   the replicas go back to the original, the adding replicas are dropped, and leadership
   moves back into the original replicas if it had moved to an adding one.

A target larger than the assignment raises the replication factor, a smaller one lowers
it; the same steps do both. The ``drop_before_isr_join`` variant completes without waiting
for the target replicas to join the ISR (the mistake step 2's condition prevents).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from spec.framework import action
from spec.rebalance.core import RebalanceCore
from spec.rebalance.state import RState
from spec.replication import NONE, State

REASSIGNMENT = ("start_reassignment", "complete_reassignment", "cancel_reassignment")


class Reassignment(RebalanceCore):
    """Start, complete and cancel a KIP-455 reassignment."""

    def targets(self, s: RState) -> Iterator[tuple[tuple[int, ...]]]:
        """Every target replica set (in broker order) other than the current one."""
        m = s.meta
        if m.ongoing or m.reassignments >= self.p.max_reassignments:
            return
        current = frozenset(m.assignment)
        for size in range(1, len(self.ids) + 1):
            for target in itertools.combinations(self.ids, size):
                if frozenset(target) != current:
                    yield (target,)

    def new_leaders(self, s: RState) -> list[tuple[int]]:
        if not s.meta.ongoing:
            return []
        return [(NONE,)] + [(r,) for r in self.ids]

    @action(domain="targets")
    def start_reassignment(self, s: RState, target: tuple[int, ...]) -> RState | None:
        """``AlterPartitionReassignments`` with a target: the replicas become the target
        followed by the replicas being removed; adding and removing sets are recorded. The
        leader and ISR are unchanged. Bounded by ``max_reassignments``."""
        m = s.meta
        if m.ongoing or m.reassignments >= self.p.max_reassignments:
            return None
        current = frozenset(m.assignment)
        if not target or frozenset(target) == current:
            return None
        removing = tuple(r for r in m.assignment if r not in target)
        return s.evolve(
            meta=m.evolve(
                assignment=(*target, *removing),
                adding=frozenset(target) - current,
                removing=frozenset(removing),
                reassignments=m.reassignments + 1,
            )
        )

    def leader_after(
        self, s: RState, keep: tuple[int, ...], n: int, isr: frozenset[int]
    ) -> int | None:
        """The leader once only ``keep`` remain replicas: the current one if it stays (then
        ``n`` must be NONE); else ``n``, a live member of ``isr``. None: not allowed."""
        leader = s.core.quorum.leader
        if leader != NONE and leader in keep:
            return leader if n == NONE else None
        if n == NONE:
            return NONE if not (isr & self.live(s)) else None
        return n if n in isr and n in self.live(s) else None

    @action(domain="new_leaders")
    def complete_reassignment(self, s: RState, n: int) -> RState | None:
        """Every target replica is in the ISR: the replicas become the target, the ISR
        loses the removed replicas, leadership moves to ``n`` (a target replica in the ISR)
        if the leader is being removed, in a new leader epoch; the removed replicas delete
        their copy (StopReplica). ``drop_before_isr_join`` completes without waiting: a
        target replica that has not joined the ISR may then be made leader, alone in it."""
        m, q = s.meta, s.core.quorum
        if not m.ongoing:
            return None
        target = m.target
        waiting = frozenset(target) - q.isr
        buggy = "drop_before_isr_join" in self.p.bugs
        if waiting and not buggy:
            return None
        isr = q.isr & frozenset(target)
        if buggy and not isr and q.leader not in target:
            # The removed leader's ISR has no target replica: the mistaken controller makes
            # a target replica leader anyway, with an ISR of itself.
            if n not in target or n not in self.live(s):
                return None
            isr = frozenset({n})
        leader = self.leader_after(s, target, n, isr)
        if leader is None:
            return None
        meta = m.evolve(
            assignment=target, adding=frozenset(), removing=frozenset(), elr=m.elr - m.removing
        )
        nxt = self.write_partition(s, leader, isr, meta)
        if nxt is None:
            return None
        core = nxt.core
        for r in sorted(m.removing):
            core = self.drop_replica(core, r)
        return nxt.evolve(core=self.forget_remote(core, leader, m.removing))

    @action(domain="new_leaders")
    def cancel_reassignment(self, s: RState, n: int) -> RState | None:
        """``AlterPartitionReassignments`` with an empty target cancels: the replicas go
        back to the original list, the adding replicas leave the ISR and delete their copy;
        if one of them led, leadership moves to ``n``, an original replica in the ISR."""
        m, q = s.meta, s.core.quorum
        if not m.ongoing:
            return None
        original = m.original
        isr = q.isr - m.adding
        leader = self.leader_after(s, original, n, isr)
        if leader is None:
            return None
        meta = m.evolve(
            assignment=original, adding=frozenset(), removing=frozenset(), elr=m.elr - m.adding
        )
        if leader == q.leader and isr == q.isr:
            nxt: RState | None = s.evolve(meta=meta)
        else:
            nxt = self.write_partition(s, leader, isr, meta)
        if nxt is None:
            return None
        core = nxt.core
        for r in sorted(m.adding):
            core = self.drop_replica(core, r)
        return nxt.evolve(core=self.forget_remote(core, leader, m.adding))

    def forget_remote(self, core: State, leader: int, gone: frozenset[int]) -> State:
        """The leader forgets what it knew of replicas no longer assigned (its remote
        replica map loses them), so a replica added again starts unknown."""
        if leader == NONE or not gone:
            return core
        rep = core.replicas[leader - 1]
        if not rep.remote:
            return core
        remote = tuple(-1 if i + 1 in gone else v for i, v in enumerate(rep.remote))
        return core.with_replica(leader, rep.evolve(remote=remote))
