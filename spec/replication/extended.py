"""The extended model's controller and environment: failover, unclean leader election, and
crashes that lose unflushed data, restarts and flushes.

These are what a Kafka user configures and suffers beyond the published 2018 model:

- the controller handles a failed leader in one metadata write (``controller_failover``);
- ``unclean.leader.election.enable`` lets an out-of-sync replica lead (``unclean_elect``);
- Kafka does not fsync on append (``flush.messages`` defaults to Long.MAX_VALUE), so a
  crash loses some of the unflushed tail of the log (``crash``); a restarted broker rejoins
  with a new incarnation (``restart``, KIP-380 broker epochs); ``flush`` writes the log
  to disk. Crashes are faults, bounded by ``Params.max_crashes``; restarts heal, unbounded.

Producer acknowledgements (``acks``, ``min.insync.replicas``) are in
``spec.replication.acks``, the leader's view of its followers in
``spec.replication.leader_view``.
"""

from __future__ import annotations

from spec.framework import Kind, action
from spec.replication.acks import drop_pending
from spec.replication.core import ReplicationCore
from spec.replication.state import NIL, NONE, Replica, State

FAILOVER = ("controller_failover",)
"""The extended controller's action, tried after the shared controller actions."""
UNCLEAN = ("unclean_elect",)
"""Enabled by ``Params.unclean``."""
ENVIRONMENT = ("crash", "restart", "flush")
"""Enabled by a crash budget (``Params.max_crashes`` > 0)."""


class ExtendedModel(ReplicationCore):
    """Controller failover, unclean election, crashes, restarts and flushes."""

    def failover_candidates(self, s: State) -> list[tuple[int, int]]:
        q = s.quorum
        if q.leader == NONE:
            return []
        return [(q.leader, n) for n in sorted(q.isr) if n != q.leader]

    def crash_points(self, s: State) -> list[tuple[int, int]]:
        if s.crashes >= self.p.max_crashes:
            return []
        return [
            (r, keep)
            for r in self.ids
            if s.replicas[r - 1].alive
            for keep in range(s.replicas[r - 1].flushed, s.replicas[r - 1].leo + 1)
        ]

    # --- the controller ------------------------------------------------------------------

    @action(domain="failover_candidates")
    def controller_failover(self, s: State, failed: int, n: int) -> State | None:
        """The controller handles the failure of the leader in one metadata write: it takes
        the failed broker out of the ISR and elects a live ISR member in its place (ZooKeeper
        ``onBrokerFailure``; KRaft's fencing of a broker). Extended model only: the
        published model splits this into a shrink and an election."""
        q = s.quorum
        if q.leader != failed or n == failed or n not in q.isr or not s.rep(n).alive:
            return None
        return self.controller_update(s, n, q.isr - {failed})

    @action(domain="each_replica")
    def unclean_elect(self, s: State, n: int) -> State | None:
        """``unclean.leader.election.enable=true``: with no leader and no ISR member to elect
        (the controller believes them all failed), an out-of-sync live replica becomes
        leader with an ISR of itself; its log becomes the source of truth even though it may
        lack committed records (Kafka docs, "Unclean leader election")."""
        q = s.quorum
        if q.leader != NONE or n in q.isr or not s.rep(n).alive:
            return None
        return self.controller_update(s, n, frozenset({n}))

    # --- the environment: crashes, restarts, flushes -------------------------------------

    @action(domain="crash_points", kind=Kind.FAULT)
    def crash(self, s: State, r: int, keep: int) -> State | None:
        """A broker crashes (power loss, kill -9) and with it its in-memory view of the
        partition. Kafka does not fsync on append (``flush.messages`` defaults to
        Long.MAX_VALUE), so some suffix of the unflushed tail is lost: the log keeps its
        first ``keep`` records, at least the flushed ones (write-back may have saved more;
        recovery drops a torn batch). Its HW checkpoint keeps at most what survived.
        Faults are bounded by ``max_crashes``."""
        rep = s.rep(r)
        if not rep.alive or s.crashes >= self.p.max_crashes:
            return None
        if not rep.flushed <= keep <= rep.leo:
            return None
        log = rep.log[:keep]
        new = Replica(log, min(rep.hw, len(log)), NIL, NONE, frozenset(), len(log), False, NIL, ())
        return s.with_replica(r, new, crashes=s.crashes + 1, pending=drop_pending(s, r))

    @action(domain="each_replica", kind=Kind.HEAL)
    def restart(self, s: State, r: int) -> State | None:
        """A crashed broker starts again, once the controller has handled its failure (its
        ZooKeeper registration expired, or KRaft fenced it): it is out of the ISR, or it is
        the last ISR member of a partition left without a leader. It accepts only requests
        sent to this new incarnation (KIP-380). Healing is never bounded."""
        rep = s.rep(r)
        if rep.alive:
            return None
        q = s.quorum
        if r in q.isr and not (q.isr == frozenset({r}) and q.leader == NONE):
            return None
        new = Replica(rep.log, rep.hw, NIL, NONE, frozenset(), rep.flushed, True, q.epoch, ())
        return s.with_replica(r, new)

    @action(domain="each_replica")
    def flush(self, s: State, r: int) -> State | None:
        """The broker fsyncs its log (``flush.messages`` / ``flush.ms``, or the OS writing
        back dirty pages): everything appended so far survives a crash."""
        rep = s.rep(r)
        if not rep.alive or rep.flushed >= rep.leo:
            return None
        return s.with_replica(r, rep.evolve(flushed=rep.leo))
