"""KIP-966 Eligible Leader Replicas: the controller's rules for the ELR and for electing from
it, as pure functions of a partition's leader, ISR and ELR (``spec.rebalance.elr`` states
the same rules; the controller (``impl.controller``) and the store (``impl.coordination``)
apply them).

Before KIP-966 the controller never empties the ISR: when the last ISR member fails it
stays the only member, the partition goes offline, and when it comes back it is elected,
whatever it lost. With ``min.insync.replicas=2`` that "last replica standing" loses
acknowledged writes after one power loss (``jepsen_py.scenarios.LAST_REPLICA_STANDING``).
KIP-966 (Kafka 4.0; ``eligible.leader.replicas.version=1``, on for new clusters in 4.1):

- **strict min ISR** (``impl.replica``): the leader's HW advances only while the ISR has at
  least ``min.insync.replicas`` members, so every committed record is on that many replicas;
- **ELR**: a replica removed from the ISR while the new ISR is below ``min.insync.replicas``
  joins the ELR (it holds every committed record: the HW has not moved since). The ELR is
  emptied when the ISR reaches ``min.insync.replicas`` again; a member leaves it when it
  rejoins the ISR, and when it registers after an *unclean* shutdown;
- **the last ISR member may leave the ISR**: the ISR can become empty;
- **election**: from the ISR if a member is live, else from the live ELR members, the new
  leader's ISR being itself ("If ISR is not empty, select one of them. If ELR is not empty,
  select one that is not fenced", Kafka docs, "Eligible Leader Replicas").

``--bug stale_elr`` keeps a re-registering broker in the ELR, the mistake the KIP's
unclean-shutdown rule prevents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from impl.protocol import NO_LEADER

__all__ = ["elect", "elr_after", "isr_without", "unclean_restart"]


def elr_after(
    elr: frozenset[int],
    old_isr: frozenset[int],
    new_isr: frozenset[int],
    replicas: Iterable[int],
    min_isr: int,
) -> frozenset[int]:
    """The ELR after the ISR changes from ``old_isr`` to ``new_isr``: empty at or above
    ``min.insync.replicas``; below it, the replicas just removed join the ELR, and members
    back in the ISR leave it."""
    if len(new_isr) >= min_isr:
        return frozenset()
    return ((elr | (old_isr - new_isr)) - new_isr) & frozenset(replicas)


def isr_without(isr: frozenset[int], r: int, leader: int, enabled: bool) -> frozenset[int]:
    """The ISR once the controller removes failed broker ``r``: before KIP-966 the last
    member of a leader's ISR stays (the last replica standing); with it the ISR may empty."""
    if not enabled and leader == r and isr == frozenset({r}):
        return isr
    return isr - {r}


def elect(
    replicas: Iterable[int],
    isr: frozenset[int],
    elr: frozenset[int],
    live: Callable[[int], bool],
) -> tuple[int, frozenset[int], frozenset[int]]:
    """Clean election: the first live ISR member in assignment order; failing that, the
    first live ELR member, whose ISR becomes itself. Returns (leader, ISR, ELR), the
    leader ``NO_LEADER`` when nobody can be elected cleanly."""
    order = tuple(replicas)
    for r in order:
        if r in isr and live(r):
            return r, isr, elr
    for r in order:
        if r in elr and live(r):
            return r, frozenset({r}), elr - {r}
    return NO_LEADER, isr, elr


def unclean_restart(
    leader: int, isr: frozenset[int], elr: frozenset[int], r: int, keep_elr: bool
) -> tuple[int, frozenset[int], frozenset[int]]:
    """Broker ``r`` registers after an unclean shutdown: it leaves the ISR (and leadership)
    and the ELR (``handleBrokerUncleanShutdown``); ``keep_elr`` is ``--bug stale_elr``."""
    new_isr = isr - {r}
    new_leader = NO_LEADER if leader == r else leader
    new_elr = elr if keep_elr else elr - {r}
    return new_leader, new_isr, new_elr
