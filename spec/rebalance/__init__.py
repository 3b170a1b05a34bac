"""Leadership and replica movement: preferred leaders and the auto rebalance, controlled
shutdown, partition reassignment (KIP-455), and KIP-966's Eligible Leader Replicas, as an
executable spec composed with the replication core.

In plain words. Each partition has an ordered list of replicas, its *assignment*; the first
is the *preferred leader*. Leadership drifts as brokers fail and come back, so one broker can
end up leading most partitions; *preferred-leader election* moves leadership back to the
preferred replica when it is in the ISR, on request or, with
``auto.leader.rebalance.enable``, whenever a broker's share of non-preferred leaders passes
``leader.imbalance.per.broker.percentage``. *Controlled shutdown*
(``controlled.shutdown.enable``) lets a broker that is stopping ask the controller first to
move the leadership of its partitions elsewhere and take it out of their ISRs, so clients see
a clean move instead of a timeout. *Partition reassignment* (KIP-455) moves a partition to
other brokers: the new replicas are added and catch up, join the ISR, leadership moves if
needed, and only then are the old replicas removed; changing the replication factor is a
reassignment to a longer or shorter list. *Eligible Leader Replicas* (KIP-966) keeps, beside
the ISR, the replicas that left it but still hold every committed record, so that when the
last ISR member fails the partition can recover without an unclean election. Every one of
these moves must keep replication's promise: no write acknowledged with acks=all is lost.

One partition on a few brokers. The state is ``spec.replication``'s (logs, HW, leader
epochs, the controller's quorum state, LeaderAndIsr requests, the ghost of acknowledged
writes) beside the partition metadata these mechanisms change (``state.Meta``): the
ordered assignment (its first replica preferred), KIP-455's adding and removing replicas,
KIP-966's ELR, and the brokers in controlled shutdown. The data plane is replication's own
actions, so "no acknowledged write is lost" is the same statement in both specs.

The modules, one per mechanism:

- ``state``, ``params``: the state records; bounds, configs, mechanisms and bugs;
- ``data_plane``: the replication model run here, with KIP-966's strict min ISR;
- ``elr``: KIP-966's rules for the ELR and for electing from it;
- ``core``: the data plane inside the assignment, the controller's writes, the clean
  election and failure detection, crashes and restarts;
- ``preferred``: preferred-leader election and ``auto.leader.rebalance.enable``;
- ``shutdown``: ``controlled.shutdown.enable``;
- ``reassignment``: KIP-455's AlterPartitionReassignments, RF changes, cancellation;
- ``properties``, ``rendering``, ``models``: invariants and "sometimes" properties; trace
  rows; which actions each mechanism runs, and the ``Rebalance`` spec.

``kmodel check rebalance --mechanism NAME`` checks one mechanism with its default bounds;
each ``--bug`` (``BUGS``) belongs to one mechanism and is violated within its bounds.
"""

from spec.rebalance.models import MECHANISM_ACTIONS, Rebalance, actions_of
from spec.rebalance.params import (
    BUG_MECHANISM,
    BUGS,
    CHOICES,
    MECHANISM_DEFAULTS,
    MECHANISMS,
    Params,
)
from spec.rebalance.state import Meta, RState

__all__ = [
    "BUGS",
    "BUG_MECHANISM",
    "CHOICES",
    "MECHANISMS",
    "MECHANISM_ACTIONS",
    "MECHANISM_DEFAULTS",
    "Meta",
    "Params",
    "RState",
    "Rebalance",
    "actions_of",
]
