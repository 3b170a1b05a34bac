"""The replication core the rebalance mechanisms run on, with KIP-966's strict min ISR.

The rebalance spec does not restate replication: logs, fetches, ISR changes by the leader,
acks and the acknowledged-write ghost are ``spec.replication``'s extended model (leader
view, KIP-320 fencing, ``acks=all``), so that "no acknowledged write is lost" means the
same thing in both specs. ``DataPlane`` is that model with one rule of KIP-966 added: the
high watermark advances only while the leader's ISR has at least ``min.insync.replicas``
members ("strict min ISR"), which is what makes the ELR safe to elect from. The ``no_elr``
variant leaves the rule off, as Kafka before 4.0.
"""

from __future__ import annotations

from spec.rebalance.params import Params
from spec.replication import Params as ReplicationParams
from spec.replication import Replication, State


def replication_params(p: Params) -> ReplicationParams:
    """The replication model every mechanism runs on: extended, KIP-320, acks=all."""
    return ReplicationParams(
        model="extended",
        replicas=p.brokers,
        log_size=p.max_records,
        max_records=p.max_records,
        max_epoch=p.max_epoch,
        truncation="kip320",
        acks="all",
        min_isr=p.min_isr,
        max_crashes=p.max_crashes,
    )


class DataPlane(Replication):
    """``spec.replication``'s extended model, with KIP-966's strict min ISR when on."""

    def __init__(self, params: Params) -> None:
        super().__init__(replication_params(params))
        self.strict_min_isr = params.elr

    def recompute_hw(self, s: State, leader: int) -> State:
        """KIP-966: "the High Watermark can only advance if the ISR size is larger or equal
        to min.insync.replicas"; otherwise ``Partition.maybeIncrementLeaderHW`` as before."""
        if self.strict_min_isr and len(s.replicas[leader - 1].isr) < self.p.min_isr:
            return s
        return super().recompute_hw(s, leader)
