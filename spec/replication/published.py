"""The published 2018 model's replication steps, as Kafka ran them before KIP-320.

In the model Kafka's engineers published in 2018 (the TLA+ specification at
github.com/hachikuji/kafka-specification) a replica reads the other replicas' state
directly: a leader sees its followers' logs, a follower the leader's log and HW. Five steps
move the data and the ISR; the variants ``high_watermark``, ``kip101`` and ``kip279`` use
them as written here, ``kip320`` uses their fenced forms (``spec.replication.fencing``).

A follower here counts as caught up when it believes in the leader and holds *some* record
at the offset asked for: the records are not compared, and the follower's leader epoch is
not checked. That is what KIP-320 changed.
"""

from __future__ import annotations

from spec.framework import action
from spec.replication.core import ReplicationCore
from spec.replication.state import NONE, Quorum, State

PUBLISHED_STEPS = (
    "leader_shrink_isr",
    "leader_expand_isr",
    "leader_advance_hw",
    "follower_fetch",
    "become_follower",
)
"""The five steps, in the order the model checker tries them."""


class PublishedSteps(ReplicationCore):
    """The published model's five replication steps, unfenced."""

    def caught_up(self, s: State, leader: int, follower: int, end: int) -> bool:
        """The published model's (unfenced) idea of a follower being caught up to ``end``:
        it follows ``leader`` and holds *some* record at ``end - 1`` (records not compared)."""
        if s.rep(follower).leader != leader:
            return False
        if end == 0:
            return True
        return s.rep(leader).leo >= end and s.rep(follower).leo >= end

    @action(domain="leader_and_isr_member")
    def leader_shrink_isr(self, s: State, leader: int, f: int) -> State | None:
        """The leader drops a follower that is not caught up to its LEO from the ISR
        (``replica.lag.time.max.ms``: here, any lagging follower may be dropped)."""
        if self.caught_up(s, leader, f, s.rep(leader).leo):
            return None
        return self.quorum_isr_update(s, leader, s.rep(leader).isr - {f})

    @action(domain="leader_and_outsider")
    def leader_expand_isr(self, s: State, leader: int, f: int) -> State | None:
        """The leader adds a follower whose log has reached the leader's HW to the ISR."""
        if not self.caught_up(s, leader, f, s.rep(leader).hw):
            return None
        return self.quorum_isr_update(s, leader, s.rep(leader).isr | {f})

    @action(domain="presumed_leaders")
    def leader_advance_hw(self, s: State, leader: int) -> State | None:
        """The leader's HW moves past offset ``hw`` once every ISR member follows it and
        holds a record there (HW = min LEO over the ISR, one record at a time)."""
        rep = s.rep(leader)
        if rep.leader != leader or rep.hw >= self.p.log_size:
            return None
        hw = rep.hw
        for f in rep.isr:
            frep = s.rep(f)
            if frep.leader != leader or frep.leo <= hw:
                return None
        return self.advance_hw(s, leader, rep)

    @action(domain="followers")
    def follower_fetch(self, s: State, f: int) -> State | None:
        """A follower fetches the record at its LEO from the replica it believes leads, and
        sets its HW to min(leader's HW, its own LEO): it learns of HW advances one fetch
        late (the lag KIP-101's data loss needs)."""
        frep = s.rep(f)
        leader = frep.leader
        if leader in (NONE, f):
            return None
        return self.replicate(s, leader, f, frep)

    @action(domain="request_and_replica")
    def become_follower(self, s: State, q: Quorum, r: int) -> State | None:
        """A broker named follower by a newer LeaderAndIsr truncates its log by the
        variant's rule (``Params.truncation``) and starts fetching from the named leader."""
        rep = s.rep(r)
        if not self.accepts(rep, q):
            return None
        return self.truncate_and_follow(s, q, r, rep)
