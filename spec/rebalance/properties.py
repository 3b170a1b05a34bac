"""What the rebalance mechanisms promise: the invariants, the transition property, and the
"sometimes" properties that show each mechanism does something.

- ``LeaderAndIsrWellFormed``: the leader is in the ISR, the ISR is a subset of the
  partition's replicas, and the ELR is of replicas outside the ISR;
- ``NoAckedAllWriteLost``: ``spec.replication``'s own invariant on the core state (every
  write acknowledged under acks=all is in the true leader's log at its offset), here across
  leadership moves, reassignments, controlled shutdowns and KIP-966's elections;
- ``ReassignmentKeepsMinIsr``: a reassignment completes only with every target replica in
  sync, so never with fewer than ``min.insync.replicas`` in-sync target replicas (fewer
  only when the target itself is smaller: Kafka lets an administrator lower the
  replication factor below ``min.insync.replicas``).

Each is shown able to fail by a ``--bug`` variant (``spec.rebalance.params.BUGS``).
"""

from __future__ import annotations

from spec.framework import (
    LivenessDecl,
    PredicateDecl,
    Step,
    eventually,
    invariant,
    sometimes,
    sometimes_transition,
    transition_property,
)
from spec.rebalance.core import RebalanceCore
from spec.rebalance.state import RState
from spec.replication import NONE

LEADERSHIP_MOVES = {
    "preferred_election": "preferred",
    "auto_rebalance": "preferred",
    "controlled_shutdown": "shutdown",
}


class RebalanceProperties(RebalanceCore):
    """Invariants, the transition property and the "sometimes" properties."""

    @invariant
    def leader_and_isr_well_formed(self, s: RState) -> bool:
        """The controller's partition state is well formed: the leader (if any) is in the
        ISR, the ISR is a subset of the current replicas, and the ELR (KIP-966) holds only
        replicas outside the ISR."""
        q, m = s.core.quorum, s.meta
        if q.leader != NONE and q.leader not in q.isr:
            return False
        replicas = frozenset(m.assignment)
        return q.isr <= replicas and m.elr <= replicas and not (m.elr & q.isr)

    @invariant
    def no_acked_all_write_lost(self, s: RState) -> bool:
        """Every write acknowledged under acks=all is in the true leader's log at the offset
        it was acknowledged with, whenever a leader exists (``spec.replication``'s
        ``NoAckedAllWriteLost``), across reassignments, controlled shutdowns and
        elections."""
        return self.data.no_acked_all_write_lost(s.core)

    @transition_property
    def reassignment_keeps_min_isr(self, before: RState, step: Step, after: RState) -> bool:
        """A reassignment completes with every target replica in the ISR: never with fewer
        than ``min.insync.replicas`` in-sync target replicas (or the whole target, when an
        administrator lowers the replication factor below it). KIP-455."""
        if step.action != "complete_reassignment":
            return True
        target = frozenset(after.meta.assignment)
        in_sync = after.core.quorum.isr & target
        return in_sync == target and len(in_sync) >= min(self.p.min_isr, len(target))

    # --- liveness ------------------------------------------------------------------------

    def reassignment_ongoing(self, s: RState) -> bool:
        """A reassignment has started and not finished (the premise of
        ``ReassignmentFinishes``)."""
        return s.meta.ongoing

    @eventually(after="reassignment_ongoing")
    def reassignment_finishes(self, s: RState) -> bool:
        """A started reassignment eventually completes (or is cancelled): the adding
        replicas catch up and join the ISR, and the controller, which reacts to every ISR
        change, completes it (KIP-455). Within the bounds: once the leader-epoch budget is
        spent, the completing write cannot happen, and the property asks nothing more."""
        return not s.meta.ongoing or s.core.next_epoch > self.p.max_epoch

    def applicable_liveness(self) -> tuple[LivenessDecl, ...]:
        """Checked in the reassignment mechanism alone: composed with controlled shutdown
        (a target broker may stay down) it does not hold, in Kafka either."""
        return self._liveness if self.p.mechanism == "reassignment" else ()

    # --- "sometimes" ---------------------------------------------------------------------

    @sometimes
    def acked_write_exists(self, s: RState) -> bool:
        """A write is acknowledged to the producer (so losing one is possible to see)."""
        return bool(s.core.acked)

    @sometimes_transition
    def preferred_leader_regains(self, before: RState, step: Step, after: RState) -> bool:
        """Leadership returns to the preferred replica from another leader, by a preferred
        election or the auto rebalance."""
        return (
            LEADERSHIP_MOVES.get(step.action) == "preferred"
            and before.core.quorum.leader not in (NONE, before.meta.preferred)
            and after.core.quorum.leader == after.meta.preferred
        )

    @sometimes_transition
    def shutdown_moves_leader(self, before: RState, step: Step, after: RState) -> bool:
        """A controlled shutdown moves leadership from the shutting-down broker to another."""
        return (
            step.action == "controlled_shutdown"
            and before.core.quorum.leader != NONE
            and after.core.quorum.leader not in (NONE, before.core.quorum.leader)
        )

    @sometimes_transition
    def reassignment_completes(self, before: RState, step: Step, after: RState) -> bool:
        """A reassignment completes, with an acknowledged write on the partition."""
        return step.action == "complete_reassignment" and bool(after.core.acked)

    @sometimes_transition
    def reassignment_moves_leader(self, before: RState, step: Step, after: RState) -> bool:
        """A reassignment removes the leader of a partition holding an acknowledged write:
        leadership moves to a target replica."""
        return (
            step.action == "complete_reassignment"
            and bool(before.core.acked)
            and before.core.quorum.leader not in (NONE, after.core.quorum.leader)
            and after.core.quorum.leader != NONE
        )

    @sometimes_transition
    def reassignment_cancelled(self, before: RState, step: Step, after: RState) -> bool:
        """A reassignment is cancelled after an adding replica started following."""
        return step.action == "cancel_reassignment" and any(
            before.core.replicas[r - 1].leader != NONE for r in before.meta.adding
        )

    @sometimes_transition
    def leader_elected_from_elr(self, before: RState, step: Step, after: RState) -> bool:
        """KIP-966 at work: after an unclean shutdown, with an acknowledged write on the
        partition and the ISR empty, a member of the ELR is elected leader."""
        return (
            step.action == "elect_leader"
            and bool(before.core.acked)
            and (before.core.crashes > 0 or not self.p.max_crashes)
            and not before.core.quorum.isr
            and after.core.quorum.leader in before.meta.elr
        )

    def applicable_sometimes(self) -> tuple[PredicateDecl, ...]:
        """Each mechanism's own "sometimes" properties (all of them with ``all``; the ELR
        election only when KIP-966 is on)."""
        own = {
            "preferred": {"preferred_leader_regains"},
            "shutdown": {"shutdown_moves_leader"},
            "reassignment": {
                "reassignment_completes",
                "reassignment_moves_leader",
                "reassignment_cancelled",
            },
            "elr": {"leader_elected_from_elr"} if self.p.elr else set(),
        }
        keep = {"acked_write_exists"}
        for mechanism, names in own.items():
            if self.p.runs(mechanism):
                keep |= names
        if self.p.brokers == self.p.replication_factor:
            keep.discard("reassignment_cancelled")  # no spare broker to add
        if self.p.mechanism == "all":
            keep.discard("leader_elected_from_elr")
        return tuple(d for d in self._sometimes if d.method in keep)
