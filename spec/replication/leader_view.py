"""The extended model's replication steps: a broker's handlers, as Kafka's code runs them.

The published model lets a leader read its followers' logs. A real leader knows a
follower's LEO only from that follower's last fetch in its epoch (``Replica.remote``), and
recomputes its HW as the minimum over the ISR of what it knows
(``Partition.maybeIncrementLeaderHW``: ``ReplicationCore.recompute_hw``) whenever that can
change: on a write, a fetch, an ISR shrink, when it becomes leader. Each action here is one
event handler; a fetch is one request/response round trip. ``Params.leader_view``
(on by default in the extended model) puts these three steps in place of the published
model's four global-read ones; becoming a follower is the published step (or its KIP-320
form).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from spec.framework import action
from spec.replication.core import ReplicationCore
from spec.replication.fencing import holds_epoch_start, in_leader_epoch
from spec.replication.state import State

LEADER_VIEW_STEPS = ("fetch", "shrink_isr_lagging", "expand_isr_caught_up")
"""The leader view's steps, in the order the model checker tries them."""


class LeaderView(ReplicationCore):
    """Fetch, ISR shrink and ISR expansion as a leader sees them."""

    def leader_and_lagging_set(self, s: State) -> Iterator[tuple[int, frozenset[int]]]:
        for leader in self.ids:
            lrep = s.replicas[leader - 1]
            if lrep.leader != leader or not lrep.remote:
                continue
            lagging = [f for f in sorted(lrep.isr) if f != leader and lrep.remote[f - 1] < lrep.leo]
            for size in range(1, len(lagging) + 1):
                for dropped in itertools.combinations(lagging, size):
                    yield (leader, frozenset(dropped))

    @action(domain="followers")
    def fetch(self, s: State, f: int) -> State | None:
        """One fetch round trip, in the order Kafka's ``ReplicaManager.fetchMessages`` runs
        it: the leader reads the record at the follower's LEO and its current HW for the
        response, *then* records that LEO and recomputes its HW; the follower appends and
        sets its HW to min(HW in the response, its own LEO). So a follower learns of an HW
        advance one fetch late, the lag KIP-101's data loss needs. With KIP-320 the fetch
        carries the follower's leader epoch and a mismatch is answered FENCED_LEADER_EPOCH
        or UNKNOWN_LEADER_EPOCH."""
        frep = s.replicas[f - 1]
        leader = frep.leader
        lrep = s.replicas[leader - 1]
        if lrep.leader != leader or frep.leo > lrep.leo:
            return None
        if self.fenced and not in_leader_epoch(frep, lrep):
            return None
        log = frep.log
        if frep.leo < lrep.leo:
            log = (*log, lrep.log[frep.leo])
        response_hw = lrep.hw
        remote = list(lrep.remote)
        remote[f - 1] = frep.leo
        nxt = self.recompute_hw(s.with_replica(leader, lrep.evolve(remote=tuple(remote))), leader)
        clamped = (
            response_hw if "follower_hw_unclamped" in self.bugs else min(response_hw, len(log))
        )
        nxt = nxt.with_replica(f, frep.evolve(log=log, hw=clamped))
        return None if nxt == s else nxt

    @action(domain="leader_and_lagging_set")
    def shrink_isr_lagging(self, s: State, leader: int, dropped: frozenset[int]) -> State | None:
        """The leader drops followers whose last reported LEO is behind its own, all in one
        ISR change (``Partition.maybeShrinkIsr``: each was out of sync for
        ``replica.lag.time.max.ms``; the timers are abstracted, so any non-empty set of
        lagging followers may go at once), then recomputes its HW over the smaller ISR."""
        lrep = s.replicas[leader - 1]
        if leader in dropped or not dropped <= lrep.isr:
            return None
        if any(lrep.remote[f - 1] >= lrep.leo for f in dropped):
            return None
        nxt = self.quorum_isr_update(s, leader, lrep.isr - dropped)
        return None if nxt is None else self.recompute_hw(nxt, leader)

    @action(domain="leader_and_outsider")
    def expand_isr_caught_up(self, s: State, leader: int, f: int) -> State | None:
        """The leader adds a follower whose reported LEO has reached its HW and, with
        KIP-320's fencing, the start offset of its current epoch (so the follower holds
        everything a previous leader may have committed)."""
        lrep = s.replicas[leader - 1]
        reported = lrep.remote[f - 1]
        if reported < lrep.hw or reported < 0:
            return None
        if self.fenced and not holds_epoch_start(reported, lrep):
            return None
        return self.quorum_isr_update(s, leader, lrep.isr | {f})
