"""Symmetry reduction for the replication spec: replicas are interchangeable.

Nothing in the protocol depends on a replica's id except through the state itself, so two
states that differ only by a renaming of replicas have the same future. The model checker
stores one canonical member of each orbit (``canonical``) and counts the orbit
(``orbit_size``) to report the reduction factor. Safety properties only: the invariants are
themselves invariant under renaming.
"""

from __future__ import annotations

from typing import Any

from spec.framework import SignatureSymmetry, all_permutations
from spec.replication.core import ReplicationCore
from spec.replication.state import NONE, Pending, Quorum, Replica, State


class ReplicaSymmetry(SignatureSymmetry, ReplicationCore):
    """Renaming replicas, and a canonical form per orbit."""

    def symmetry_permutations(self) -> list[tuple[int, ...]]:
        return all_permutations(self.ids)

    def permute(self, s: State, perm: tuple[int, ...]) -> State:
        def m(r: int) -> int:
            return r if r == NONE else perm[r - 1]

        def mset(ids: frozenset[int]) -> frozenset[int]:
            return frozenset(perm[i - 1] for i in ids)

        def mq(q: Quorum) -> Quorum:
            return Quorum(q.epoch, m(q.leader), mset(q.isr))

        reps: list[Replica | None] = [None] * len(self.ids)
        for r, rep in zip(self.ids, s.replicas, strict=True):
            remote = rep.remote
            if remote:
                moved = [-1] * len(remote)
                for i, value in enumerate(remote):
                    moved[perm[i] - 1] = value
                remote = tuple(moved)
            reps[perm[r - 1] - 1] = Replica(
                rep.log,
                rep.hw,
                rep.epoch,
                m(rep.leader),
                mset(rep.isr),
                rep.flushed,
                rep.alive,
                rep.fence,
                remote,
            )
        return State(
            tuple(reps),  # type: ignore[arg-type]
            mq(s.quorum),
            frozenset(mq(q) for q in s.requests),
            s.next_record_id,
            s.next_epoch,
            s.crashes,
            s.acked,
            frozenset(Pending(m(w.leader), w.offset, w.id) for w in s.pending),
        )

    def symmetry_signature(self, s: State, r: int) -> tuple[Any, ...]:
        """What replica ``r`` looks like without naming any replica: invariant under
        renaming, so sorting by it puts any two states of one orbit in the same order."""
        rep = s.rep(r)
        q = s.quorum
        return (
            rep.log,
            rep.hw,
            rep.epoch,
            rep.leader == r,
            rep.leader == NONE,
            r in rep.isr,
            len(rep.isr),
            rep.flushed,
            rep.alive,
            rep.fence,
            q.leader == r,
            r in q.isr,
            sum(1 for w in s.pending if w.leader == r),
            tuple(sorted(rep.remote)),
        )

    def sort_key(self, s: State) -> tuple[Any, ...]:
        return (
            tuple(rep.key() for rep in s.replicas),
            s.quorum.key(),
            tuple(sorted(q.key() for q in s.requests)),
            s.next_record_id,
            s.next_epoch,
            s.crashes,
            tuple(sorted((w.offset, w.id, w.acks) for w in s.acked)),
            tuple(sorted((w.leader, w.offset, w.id) for w in s.pending)),
        )
