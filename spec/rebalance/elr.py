"""KIP-966 Eligible Leader Replicas: the controller's rules for the ELR and for electing
from it.

Before KIP-966 the controller never empties the ISR: when the last ISR member fails, it
stays the ISR's only member and the partition goes offline until it comes back, and then
it is elected, whatever it lost. With ``min.insync.replicas=2`` that "last replica
standing" loses acknowledged writes after one unclean shutdown (power loss: the unflushed
tail of the log is gone). KIP-966 (Kafka 4.0; on by default for new clusters in 4.1):

- **strict min ISR**: the HW advances only while the ISR has at least
  ``min.insync.replicas`` members (``spec.rebalance.data_plane``), so every committed record
  is on at least ``min.insync.replicas`` replicas;
- **ELR**: a replica removed from the ISR while the ISR is (then) below
  ``min.insync.replicas`` still holds every committed record; it is kept in the partition's
  ELR. The ELR is emptied when the ISR reaches ``min.insync.replicas`` again; a member
  leaves it when it rejoins the ISR, and when it restarts after an *unclean* shutdown (the
  broker registers with its previous broker epoch missing: it may have lost records);
- **the last ISR member may leave the ISR**: the ISR can become empty;
- **election**: from the ISR if a member is live; else from the unfenced ELR members,
  the new leader's ISR being itself ("If ISR is not empty, select one of them. If ELR is
  not empty, select one that is not fenced", Kafka docs, "Eligible Leader Replicas").

The ``stale_elr`` variant keeps a broker in the ELR across an unclean restart, the mistake
the KIP's unclean-shutdown rule prevents; ``no_elr`` is the behaviour before the KIP.
"""

from __future__ import annotations

from collections.abc import Iterable

from spec.rebalance.params import Params
from spec.replication import NONE


def elr_after(
    p: Params,
    elr: frozenset[int],
    old_isr: frozenset[int],
    new_isr: frozenset[int],
    replicas: Iterable[int],
) -> frozenset[int]:
    """The ELR after the ISR changes from ``old_isr`` to ``new_isr``: empty at or above
    ``min.insync.replicas``; below it, the replicas just removed join the ELR, and members
    back in the ISR leave it. Only replicas of the partition are eligible."""
    if not p.elr or len(new_isr) >= p.min_isr:
        return frozenset()
    return ((elr | (old_isr - new_isr)) - new_isr) & frozenset(replicas)


def isr_without(p: Params, isr: frozenset[int], r: int, leader: int) -> frozenset[int]:
    """The ISR once the controller removes failed (or shutting-down) broker ``r``. Before
    KIP-966 the last member of a leader's ISR stays (the "last replica standing"); with
    it, the ISR may become empty and ``r`` goes to the ELR."""
    if not p.elr and leader == r and isr == frozenset({r}):
        return isr
    return isr - {r}


def elect(
    p: Params,
    assignment: tuple[int, ...],
    isr: frozenset[int],
    elr: frozenset[int],
    eligible: frozenset[int],
) -> tuple[int, frozenset[int], frozenset[int]]:
    """Kafka's clean election (``PartitionLeaderElectionAlgorithms``): the first replica
    of the assignment that is live (``eligible``) and in the ISR; with KIP-966, failing
    that, the first live ELR member, whose ISR becomes itself. Returns (leader, ISR, ELR);
    the leader is ``NONE`` when nobody can be elected cleanly."""
    for r in assignment:
        if r in isr and r in eligible:
            return r, isr, elr
    if p.elr:
        for r in assignment:
            if r in elr and r in eligible:
                return r, frozenset({r}), elr - {r}
    return NONE, isr, elr


def after_restart(p: Params, elr: frozenset[int], r: int, clean: bool) -> frozenset[int]:
    """The ELR once broker ``r`` registers again: after an unclean shutdown it may have
    lost records and leaves the ELR (KIP-966), unless ``stale_elr`` keeps it."""
    if clean or "stale_elr" in p.bugs:
        return elr
    return elr - {r}
