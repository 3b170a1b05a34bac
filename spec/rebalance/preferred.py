"""Preferred-leader election and the periodic auto rebalance.

The first replica of a partition's assignment is its *preferred* leader. Leadership drifts
away from it when a broker fails or shuts down; the controller brings it back:

- on request (``kafka-leader-election.sh --election-type PREFERRED``, KIP-460; before it
  ``kafka-preferred-replica-election.sh``): ``preferred_election``;
- periodically, with ``auto.leader.rebalance.enable=true`` (the default), every
  ``leader.imbalance.check.interval.seconds``: for each broker, the controller computes the
  share of the partitions it is preferred for that it does not lead; above
  ``leader.imbalance.per.broker.percentage`` (default 10) it runs a preferred election for
  them (``KafkaController.checkAndTriggerAutoLeaderRebalance``): ``auto_rebalance``.

Either way the preferred replica is elected only when it is live and in the ISR (a clean
election); the ISR is unchanged and the leader epoch bumped. The spec has one partition,
so a broker's ratio is 0 or 100%; ``imbalance_ratio`` is written for any number of
partitions and tested on several.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from spec.framework import action
from spec.rebalance.core import RebalanceCore
from spec.rebalance.state import RState
from spec.replication import NONE

PREFERRED = ("preferred_election", "auto_rebalance")


def imbalance_ratio(partitions: Sequence[tuple[Sequence[int], int]], broker: int) -> Fraction:
    """``broker``'s leader imbalance: of the partitions (assignment, leader) whose preferred
    replica is ``broker``, the fraction it does not lead (0 when it is preferred for none)."""
    preferred = [leader for assignment, leader in partitions if assignment[0] == broker]
    if not preferred:
        return Fraction(0)
    return Fraction(sum(1 for leader in preferred if leader != broker), len(preferred))


def imbalanced(pct: int, ratio: Fraction) -> bool:
    """The controller's trigger: ratio > ``leader.imbalance.per.broker.percentage`` / 100."""
    return ratio > Fraction(pct, 100)


class PreferredLeader(RebalanceCore):
    """Preferred-leader election, by request and by the auto rebalance."""

    def preferred_move(self, s: RState) -> RState | None:
        """Elect the preferred replica if it is live, in the ISR and not leading, and the
        partition has a leader (an online partition) and is not being reassigned."""
        q, m = s.core.quorum, s.meta
        preferred = m.preferred
        if q.leader in (NONE, preferred) or m.ongoing:
            return None
        if preferred not in q.isr or preferred not in self.live(s):
            return None
        return self.write_partition(s, preferred, q.isr)

    @action()
    def preferred_election(self, s: RState) -> RState | None:
        """An administrator asks for a preferred-leader election (KIP-460
        ``ElectLeaders`` with ``ElectionType.PREFERRED``): the preferred replica becomes
        leader if it is live and in the ISR."""
        return self.preferred_move(s)

    @action()
    def auto_rebalance(self, s: RState) -> RState | None:
        """``auto.leader.rebalance.enable``: the controller's periodic check finds the
        preferred replica's leader imbalance above
        ``leader.imbalance.per.broker.percentage`` and elects it back."""
        if not self.p.auto_rebalance:
            return None
        ratio = imbalance_ratio([(s.meta.assignment, s.core.quorum.leader)], s.meta.preferred)
        if not imbalanced(self.p.imbalance_pct, ratio):
            return None
        return self.preferred_move(s)
