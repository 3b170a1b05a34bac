"""Controlled shutdown (``controlled.shutdown.enable=true``, the default).

A broker about to stop asks the controller first (ControlledShutdownRequest; under KRaft a
heartbeat asking to shut down). For each partition it leads, the controller elects another
live ISR member (``ControlledShutdownLeaderElection``) and takes the broker out of the ISR;
where it is a follower, it only leaves the ISR. Once the controller has answered, the
broker stops: a clean shutdown, its log flushed whole. So no partition is left leaderless
and the clients move to the new leaders at once, instead of waiting for a session timeout.

If the broker is the only live ISR member, leadership cannot move cleanly: the shutdown
goes ahead (after ``controlled.shutdown.max.retries`` in ZooKeeper mode) and the partition
is offline until the broker returns, as after a failure (with KIP-966 the broker goes to the
ELR, and a clean restart keeps it there).

The ``shutdown_to_non_isr`` variant lets the controller hand leadership to any other live
replica, in the ISR or not.
"""

from __future__ import annotations

from collections.abc import Iterator

from spec.framework import action
from spec.rebalance import elr as elr_rules
from spec.rebalance.core import RebalanceCore
from spec.rebalance.state import RState
from spec.replication import NIL, NONE, Replica

SHUTDOWN = ("controlled_shutdown", "stop_broker", "restart")


class ControlledShutdown(RebalanceCore):
    """The shutdown request, the controller's answer, and the stop."""

    def shutdown_candidates(self, s: RState) -> Iterator[tuple[int, int]]:
        """(broker, new leader or NONE) for each broker that may ask to shut down."""
        if s.meta.shutdowns >= self.p.max_shutdowns:
            return
        for b in self.ids:
            if b not in s.meta.assignment or b in s.meta.shutting:
                continue
            yield (b, NONE)
            if s.core.quorum.leader == b:
                for n in self.ids:
                    if n != b:
                        yield (b, n)

    def new_leader_allowed(self, s: RState, b: int, n: int) -> bool:
        """Who may take over from shutting-down leader ``b``: a live ISR member (any live
        replica of the assignment with ``shutdown_to_non_isr``); NONE only when there is no
        live ISR member to take over."""
        q, live = s.core.quorum, self.live(s)
        candidates = (q.isr - {b}) & live
        if "shutdown_to_non_isr" in self.p.bugs:
            candidates = (frozenset(s.meta.assignment) - {b}) & live
        if n == NONE:
            return not candidates
        return n in candidates

    @action(domain="shutdown_candidates")
    def controlled_shutdown(self, s: RState, b: int, n: int) -> RState | None:
        """Broker ``b`` asks the controller to shut down. If it leads, leadership moves to
        ``n``, a live member of the ISR; ``b`` leaves the ISR (the last live ISR member
        stays, or goes to the ELR with KIP-966, and the partition goes offline). Bounded by
        ``max_shutdowns``."""
        m, q = s.meta, s.core.quorum
        if s.meta.shutdowns >= self.p.max_shutdowns or b in m.shutting:
            return None
        if b not in m.assignment or not s.core.replicas[b - 1].alive:
            return None
        meta = m.evolve(shutting=m.shutting | {b}, shutdowns=m.shutdowns + 1)
        if q.leader == b:
            if not self.new_leader_allowed(s, b, n):
                return None
            isr = elr_rules.isr_without(self.p, q.isr, b, b if n == NONE else NONE)
            return self.write_partition(s, n, isr, meta)
        if n != NONE:
            return None
        if b not in q.isr:
            return s.evolve(meta=meta)
        return self.write_partition(s, q.leader, q.isr - {b}, meta)

    @action(domain="each_broker")
    def stop_broker(self, s: RState, b: int) -> RState | None:
        """Broker ``b``, its shutdown granted, stops: it flushed its log, so nothing is lost,
        and its in-memory view of the partition is gone. It may restart (``restart``)."""
        q = s.core.quorum
        rep = s.core.replicas[b - 1]
        if b not in s.meta.shutting or not rep.alive:
            return None
        if q.leader == b or (b in q.isr and q.isr != frozenset({b})):
            return None
        stopped = Replica(rep.log, rep.hw, NIL, NONE, frozenset(), rep.leo, False, NIL, ())
        pending = frozenset(w for w in s.core.pending if w.leader != b)
        return s.evolve(core=s.core.with_replica(b, stopped, pending=pending))
