"""KIP-320 leader-epoch fencing: every rule the ``kip320`` variant changes, in one place.

Before KIP-320 a replica could act on a stale view of leadership: a follower fetched from,
and truncated against, a replica that no longer led (or did not lead yet), and a leader
counted a follower as in sync while it followed an older epoch. KIP-320 (Kafka 2.1) makes
the leader epoch part of every exchange. On (``Params.fenced``) it changes five rules:

1. **fetch**: a fetch carries the follower's leader epoch; the leader answers
   FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH unless it is its own (``in_leader_epoch``:
   ``follower_fetch_fenced``, and the guard of the leader view's ``fetch``);
2. **HW advance**: only over ISR members fetching in the leader's epoch
   (``leader_advance_hw_fenced``);
3. **ISR shrink**: a follower not fetching in the leader's epoch is out of sync
   (``leader_shrink_isr_fenced``);
4. **ISR expansion**: a follower joins only once it holds everything the previous leader
   may have committed: the leader's HW has reached its own epoch
   (``leader_expand_isr_fenced``), or, in the leader view, the follower's reported LEO has
   reached the start of the leader's epoch (``holds_epoch_start``, in
   ``expand_isr_caught_up``);
5. **truncation**: a follower truncates only against a leader that has itself taken the
   request's epoch (``become_follower_fenced``, in both models).

Truncation itself follows KIP-279's rule (the ``COMMON_PREFIX`` of ``variants``).
``FENCED_FORM`` names the fenced form of each published step; the model definitions
(``spec.replication.models``) and the z3 encoding choose by it (``step_form``).
"""

from __future__ import annotations

from spec.framework import action
from spec.replication.core import ReplicationCore
from spec.replication.state import NONE, Quorum, Replica, State

FENCED_FORM = {
    "leader_shrink_isr": "leader_shrink_isr_fenced",
    "leader_expand_isr": "leader_expand_isr_fenced",
    "leader_advance_hw": "leader_advance_hw_fenced",
    "follower_fetch": "follower_fetch_fenced",
    "become_follower": "become_follower_fenced",
}
"""Each published step (``spec.replication.published``) and its KIP-320 form."""


def step_form(step: str, fenced: bool) -> str:
    """The form of published step ``step`` a variant runs: KIP-320's when fencing is on."""
    return FENCED_FORM[step] if fenced else step


def in_leader_epoch(follower: Replica, leader: Replica) -> bool:
    """KIP-320's fetch check: the follower fetches in the leader's current epoch."""
    return follower.epoch == leader.epoch


def epoch_start_offset(rep: Replica) -> int:
    """The offset of the first record of the replica's current epoch (its LEO if it has
    written none): the leader-epoch cache entry a new leader appends (KIP-101)."""
    for offset, record in enumerate(rep.log):
        if record[0] == rep.epoch:
            return offset
    return rep.leo


def holds_epoch_start(reported_leo: int, leader: Replica) -> bool:
    """KIP-320's ISR rule in Kafka (``Partition.isFollowerInSync``): a follower's reported
    LEO has reached the start offset of the leader's current epoch."""
    return reported_leo >= epoch_start_offset(leader)


class EpochFencing(ReplicationCore):
    """The KIP-320 forms of the published model's five steps."""

    def following_epoch(self, s: State, leader: int, follower: int) -> bool:
        """KIP-320: the follower fetches with the leader's current epoch (and both agree
        who leads)."""
        lrep = s.replicas[leader - 1]
        frep = s.replicas[follower - 1]
        return lrep.leader == leader and frep.leader == leader and frep.epoch == lrep.epoch

    @action(domain="leader_and_isr_member")
    def leader_shrink_isr_fenced(self, s: State, leader: int, f: int) -> State | None:
        """KIP-320: the leader drops a follower that does not fetch in its current epoch, or
        has not reached its LEO."""
        if self.following_epoch(s, leader, f) and s.rep(f).leo >= s.rep(leader).leo:
            return None
        return self.quorum_isr_update(s, leader, s.rep(leader).isr - {f})

    @action(domain="leader_and_outsider")
    def leader_expand_isr_fenced(self, s: State, leader: int, f: int) -> State | None:
        """KIP-320: a follower joins the ISR when it fetches in the leader's epoch, holds a
        record at HW - 1, and the leader's HW has reached its own epoch (so the follower
        holds everything the previous leader may have committed)."""
        if not self.following_epoch(s, leader, f):
            return None
        lrep = s.rep(leader)
        hw = lrep.hw
        if hw != 0 and s.rep(f).leo < hw:
            return None
        if hw != lrep.leo and lrep.log[hw][0] != lrep.epoch:
            return None
        return self.quorum_isr_update(s, leader, lrep.isr | {f})

    @action(domain="presumed_leaders")
    def leader_advance_hw_fenced(self, s: State, leader: int) -> State | None:
        """KIP-320: the HW advances past ``hw`` when every ISR member fetches in the
        leader's epoch and holds a record there."""
        rep = s.rep(leader)
        hw = rep.hw
        # The published rule does not say "l presumes leadership", but implies it whenever
        # l's ISR is not empty; saying it keeps a restarted replica (empty ISR) from
        # advancing a HW of its own.
        if rep.leader != leader or rep.leo <= hw:
            return None
        for f in rep.isr:
            if not self.following_epoch(s, leader, f) or s.replicas[f - 1].leo <= hw:
                return None
        return self.advance_hw(s, leader, rep)

    @action(domain="followers")
    def follower_fetch_fenced(self, s: State, f: int) -> State | None:
        """KIP-320: a fetch carries the follower's leader epoch; the leader answers
        FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH unless the epochs match."""
        frep = s.rep(f)
        leader = frep.leader
        if leader in (NONE, f) or not self.following_epoch(s, leader, f):
            return None
        return self.replicate(s, leader, f, frep)

    @action(domain="request_and_replica")
    def become_follower_fenced(self, s: State, q: Quorum, r: int) -> State | None:
        """KIP-320: a follower truncates (to where its log and the leader's last agree) only
        against a leader that has itself taken the request's epoch, so it never truncates
        against a replica whose leadership is stale."""
        rep = s.rep(r)
        if not self.accepts(rep, q):
            return None
        lrep = s.rep(q.leader)
        if lrep.leader != q.leader or lrep.epoch != q.epoch:
            return None
        return self.truncate_and_follow(s, q, r, rep)
