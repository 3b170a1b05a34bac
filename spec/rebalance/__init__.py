"""Leadership and replica movement: preferred leaders and the auto rebalance, controlled
shutdown, partition reassignment (KIP-455), and KIP-966's Eligible Leader Replicas, as an
executable spec composed with the replication core.

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
