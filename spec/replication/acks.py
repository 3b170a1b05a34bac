"""Producer acknowledgements (extended model): ``acks``, ``min.insync.replicas`` and the
produce purgatory, recorded in ghost variables so that losing an acknowledged write is a
property of a state.

- ``acks=0``: the producer does not wait; nothing is acknowledged, nothing recorded.
- ``acks=1``: acknowledged as soon as the leader appends (``Write(..., "1")``).
- ``acks=all``: refused with NotEnoughReplicas while the leader's ISR is smaller than
  ``min.insync.replicas``; otherwise the write waits in the leader's purgatory
  (``Pending``) until the HW passes it, and is then acknowledged, or failed with
  NotEnoughReplicasAfterAppend if the ISR shrank below ``min.insync.replicas`` meanwhile.
  A replica that stops leading fails its purgatory (NOT_LEADER_OR_FOLLOWER).

The published 2018 model has no producer: its writes are never acknowledged and these
functions are not called.
"""

from __future__ import annotations

from spec.replication.params import Params
from spec.replication.state import Pending, Replica, State, Write

Ghosts = tuple[frozenset[Write], frozenset[Pending]]
"""The acknowledged writes and the purgatory, as a state holds them."""


def on_append(p: Params, s: State, r: int, rep: Replica) -> Ghosts | None:
    """The ghosts after leader ``r`` appends the next record, or None when an acks=all
    append is refused (NotEnoughReplicas: ``r``'s ISR is below ``min.insync.replicas``).
    The ``ack_before_hw`` bug acknowledges acks=all on append, as acks=1 is."""
    offset, rid = rep.leo, s.next_record_id
    if p.acks == "all":
        if len(rep.isr) < p.min_isr:
            return None
        if "ack_before_hw" in p.bugs:
            return s.acked | {Write(offset, rid, "all")}, s.pending
        return s.acked, s.pending | {Pending(r, offset, rid)}
    if p.acks == "1":
        return s.acked | {Write(offset, rid, "1")}, s.pending
    return s.acked, s.pending


def on_hw_advance(p: Params, s: State, leader: int, rep: Replica, hw: int) -> Ghosts:
    """The ghosts after ``leader``'s HW reaches ``hw``: its purgatory entries below it
    complete, acknowledged if its ISR still has ``min.insync.replicas`` members, else
    failed (NotEnoughReplicasAfterAppend: the producer sees an error)."""
    done = frozenset(w for w in s.pending if w.leader == leader and w.offset < hw)
    if not done:
        return s.acked, s.pending
    acked = s.acked
    if len(rep.isr) >= p.min_isr:
        acked = acked | {Write(w.offset, w.id, "all") for w in done}
    return acked, s.pending - done


def drop_pending(s: State, r: int) -> frozenset[Pending]:
    """A replica that stops leading fails its purgatory with NOT_LEADER_OR_FOLLOWER."""
    if not s.pending:
        return s.pending
    return frozenset(w for w in s.pending if w.leader != r)
