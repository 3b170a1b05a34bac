"""What the replication protocol promises: the invariants, the transition property, and the
"sometimes" properties that show the model is not vacuous.

The invariants are Kafka's guarantees as its documentation and KIPs state them: committed
data is not lost (``StrongIsr``, the property KIP-101, KIP-279 and KIP-320 fixed violations
of), replica logs do not diverge below the high watermark, acknowledged writes survive
(``acks=all``, and what ``acks=1`` does not promise), one leader per epoch. Every one is
shown able to fail by a deliberately broken variant (``Params.bugs``) or a known Kafka bug
(``spec.outcomes``).
"""

from __future__ import annotations

from spec.framework import (
    PredicateDecl,
    Step,
    eventually,
    invariant,
    sometimes,
    sometimes_transition,
    transition_property,
)
from spec.replication.core import ReplicationCore
from spec.replication.fencing import FENCED_FORM
from spec.replication.state import NIL, NONE, State

BECOMING_FOLLOWER = frozenset({"become_follower", FENCED_FORM["become_follower"]})


class ReplicationProperties(ReplicationCore):
    """Invariants, the transition property and the "sometimes" properties."""

    # --- invariants ----------------------------------------------------------------------

    def _commits_held(self, s: State, *, by_quorum_isr: bool) -> bool:
        """For every replica that presumes it leads, every live member of the quorum's ISR
        (``by_quorum_isr``) or of the ISR the leader believes in holds exactly the leader's
        records below its HW."""
        for leader in self.ids:
            rep = s.replicas[leader - 1]
            if rep.leader != leader or rep.hw == 0:
                continue
            hw, committed = rep.hw, rep.log[: rep.hw]
            for m in s.quorum.isr if by_quorum_isr else rep.isr:
                member = s.replicas[m - 1]
                if member.alive and (member.leo < hw or member.log[:hw] != committed):
                    return False
        return True

    @invariant
    def strong_isr(self, s: State) -> bool:
        """No committed data is lost: for every replica that presumes it leads, every member
        of the quorum ISR holds exactly its records below its HW (records below a leader's
        HW have been given to consumers). The property KIP-101, KIP-279 and KIP-320 fixed
        violations of. In the extended model a crashed ISR member is exempt until the
        controller has handled its failure (it cannot serve, nor be elected)."""
        return self._commits_held(s, by_quorum_isr=True)

    @invariant
    def weak_isr(self, s: State) -> bool:
        """The logs of a leader's own ISR agree below its HW: every member of the ISR a
        presumed leader believes in holds exactly its records below its HW."""
        return self._commits_held(s, by_quorum_isr=False)

    @invariant
    def no_divergence_below_hw(self, s: State) -> bool:
        """Replica logs never diverge below the high watermark: any two live replicas hold
        the same records at every offset below both of their HWs. KIP-101's second scenario
        breaks it: after a power loss a replica keeps a record at an offset where the new
        leader wrote another, both below the HW."""
        live = [rep for rep in s.replicas if rep.alive and rep.hw > 0]
        for i, a in enumerate(live):
            for b in live[i + 1 :]:
                upto = min(a.hw, b.hw)
                if a.log[:upto] != b.log[:upto]:
                    return False
        return True

    def _acked_durable(self, s: State, scope: tuple[str, ...]) -> bool:
        if not s.acked:
            return True
        leader = self.true_leader(s)
        if leader == NONE:
            return True
        log = s.rep(leader).log
        for w in s.acked:
            if w.acks in scope and (w.offset >= len(log) or log[w.offset][1] != w.id):
                return False
        return True

    @invariant
    def no_acked_all_write_lost(self, s: State) -> bool:
        """Every write acknowledged under acks=all is in the true leader's log at the offset
        it was acknowledged with, whenever a leader exists ("a committed message will not be
        lost, as long as there is at least one in sync replica alive")."""
        return self._acked_durable(s, ("all",))

    @invariant
    def no_acked_write_lost(self, s: State) -> bool:
        """Every acknowledged write, acks=1 included, is in the true leader's log at its
        offset. acks=1 promises only that the leader appended it, so this one is expected to
        fail with acks=1 and a leader crash."""
        return self._acked_durable(s, ("1", "all"))

    @invariant
    def hw_below_leo(self, s: State) -> bool:
        """Every replica's HW is at most its LEO (a follower caps the leader's HW at its own
        LEO; truncation lowers the HW with the log)."""
        return all(rep.hw <= rep.leo for rep in s.replicas)

    @invariant
    def leader_in_isr(self, s: State) -> bool:
        """The quorum's leader is a member of the quorum's ISR (a leader is in its own ISR;
        a clean election picks from the ISR, an unclean one resets the ISR to the new
        leader)."""
        q = s.quorum
        return q.leader == NONE or q.leader in q.isr

    @invariant
    def one_leader_per_epoch(self, s: State) -> bool:
        """At most one replica presumes leadership in any given leader epoch: each epoch is
        handed out once, by one controller update (the leader epoch is what fences zombie
        leaders, KIP-101/KIP-320)."""
        seen: set[int] = set()
        for r in self.ids:
            rep = s.rep(r)
            if rep.leader == r:
                if rep.epoch in seen:
                    return False
                seen.add(rep.epoch)
        return True

    @transition_property
    def epochs_only_grow(self, before: State, step: Step, after: State) -> bool:
        """Leader epochs only grow: the quorum's, and each live replica's (a replica never
        goes back to an older epoch; a crash loses the in-memory epoch, which is not going
        back)."""
        if after.quorum.epoch < before.quorum.epoch:
            return False
        if step.action == "crash":
            return True
        return all(a.epoch >= b.epoch for a, b in zip(after.replicas, before.replicas, strict=True))

    # --- liveness --------------------------------------------------------------------------

    @eventually()
    def leader_commits_its_log(self, s: State) -> bool:
        """Replication makes progress: infinitely often, the current leader (the replica the
        quorum names, acting in the quorum's epoch) has committed every record of its log,
        or there is no current leader. It holds because followers keep fetching and the
        leader keeps advancing its HW (weak fairness of those steps, the periodic fetch loop
        of ``ReplicaFetcherThread``): with acks=all, this is what lets a producer's request
        complete at all."""
        q = s.quorum
        if q.leader == NONE:
            return True
        rep = s.rep(q.leader)
        if rep.leader != q.leader or rep.epoch != q.epoch or not rep.alive:
            return True
        return rep.hw >= rep.leo

    # --- "sometimes": proofs the model is not vacuous ------------------------------------

    @sometimes_transition
    def leader_change(self, before: State, step: Step, after: State) -> bool:
        """Leadership moves to another replica after a first leader was elected."""
        return (
            before.quorum.epoch != NIL
            and after.quorum.leader not in (NONE, before.quorum.leader)
            and any(self.presumes_leadership(before, r) for r in self.ids)
        )

    @sometimes
    def isr_shrinks_to_one(self, s: State) -> bool:
        """The ISR shrinks to the leader alone (``min.insync.replicas`` matters then)."""
        return len(s.quorum.isr) == 1 and s.quorum.leader != NONE and self.p.replicas > 1

    @sometimes
    def hw_advances(self, s: State) -> bool:
        """Some record is committed: a leader's HW moves past zero."""
        return any(rep.hw > 0 for rep in s.replicas)

    @sometimes
    def acked_write_exists(self, s: State) -> bool:
        """A write is acknowledged to the producer."""
        return bool(s.acked)

    @sometimes_transition
    def truncation_removes_records(self, before: State, step: Step, after: State) -> bool:
        """A replica becoming follower truncates records away."""
        return step.action in BECOMING_FOLLOWER and any(
            a.leo < b.leo for a, b in zip(after.replicas, before.replicas, strict=True)
        )

    def applicable_sometimes(self) -> tuple[PredicateDecl, ...]:
        """Without a producer that waits for acknowledgements nothing is acknowledged; with
        one replica there is no ISR to shrink and no follower to truncate."""
        skip = set()
        if not self.extended or self.p.acks == "0":
            skip.add("acked_write_exists")
        if self.p.replicas < 2:
            skip.update({"isr_shrinks_to_one", "truncation_removes_records"})
        return tuple(d for d in self._sometimes if d.method not in skip)
