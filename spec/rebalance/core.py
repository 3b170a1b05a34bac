"""The rebalance spec's core: the replication data plane run inside the partition's
metadata, and the controller's writes and election shared by every mechanism.

A rebalance state is the replication core's state (``spec.replication.State``) beside the
partition metadata (``spec.rebalance.state.Meta``). The data plane's actions are
``spec.replication``'s own (``DataPlane``), applied to the core state, with one guard the
metadata adds: only replicas of the current assignment take part (the controller sends
LeaderAndIsr only to them, over one ordered connection per broker, after which a removed
replica gets StopReplica; a leader answers a fetch from a non-replica with an error), and a
broker in controlled shutdown is not added back to the ISR (KIP-841). Every ISR change
also updates KIP-966's ELR (``spec.rebalance.elr``).

The controller writes the partition through ``write_partition``: a new leader epoch (the
budget ``max_epoch`` bounds every controller write), leader and ISR as a LeaderAndIsr
request, and the metadata, in one step (one metadata record under KRaft).
"""

from __future__ import annotations

from collections.abc import Iterator

from spec.framework import Kind, Spec, action
from spec.rebalance import elr as elr_rules
from spec.rebalance.data_plane import DataPlane
from spec.rebalance.params import Params
from spec.rebalance.state import Meta, RState
from spec.replication import NIL, NONE, Quorum, Replica, State

DATA_PLANE = (
    "become_leader",
    "leader_write",
    "become_follower",
    "fetch",
    "shrink_isr_lagging",
    "expand_isr_caught_up",
)
"""The replication steps every mechanism runs, in the order the checker tries them."""
ELECTION = ("elect_leader",)
FAILURES = ("controller_shrink_isr",)
"""The controller's failure detector (ZooKeeper session expiry, KRaft fencing)."""
CRASHES = ("crash", "restart", "flush")


class RebalanceCore(Spec):
    """State, data plane, controller writes and the clean election."""

    name = "rebalance"

    def __init__(self, params: Params | None = None) -> None:
        self.p = params or Params()
        self.data = DataPlane(self.p)
        self.ids = self.p.ids

    # --- initial state -------------------------------------------------------------------

    def init(self) -> Iterator[RState]:
        """A new partition: brokers ``1..replication_factor`` assigned (broker 1 preferred),
        all in the ISR, no leader yet; the other brokers hold nothing."""
        assignment = tuple(range(1, self.p.replication_factor + 1))
        empty = Replica((), 0, NIL, NONE, frozenset())
        core = State(
            replicas=tuple(empty for _ in self.ids),
            quorum=Quorum(NIL, NONE, frozenset(assignment)),
            requests=frozenset(),
            next_record_id=0,
            next_epoch=0,
        )
        yield RState(core, Meta(assignment))

    def sort_key(self, s: RState) -> tuple[object, ...]:
        """A total order on states (for listing reachable states deterministically); the
        spec declares no symmetry: the assignment's order tells replicas apart."""
        m = s.meta
        return (
            self.data.sort_key(s.core),
            m.assignment,
            tuple(sorted(m.adding)),
            tuple(sorted(m.removing)),
            tuple(sorted(m.elr)),
            tuple(sorted(m.shutting)),
            m.reassignments,
            m.shutdowns,
        )

    # --- shared vocabulary ---------------------------------------------------------------

    def live(self, s: RState) -> frozenset[int]:
        """Brokers the controller may make leader: running and not shutting down."""
        return frozenset(
            r for r in self.ids if s.core.replicas[r - 1].alive and r not in s.meta.shutting
        )

    def write_partition(
        self, s: RState, leader: int, isr: frozenset[int], meta: Meta | None = None
    ) -> RState | None:
        """The controller writes leader and ISR in a new leader epoch (a LeaderAndIsr
        request) with the metadata ``meta``; the ELR follows the ISR change. None when the
        epoch budget is spent."""
        core = self.data.controller_update(s.core, leader, isr)
        if core is None:
            return None
        meta = meta or s.meta
        elr = elr_rules.elr_after(self.p, meta.elr, s.core.quorum.isr, isr, meta.assignment)
        return RState(core, meta.evolve(elr=elr) if elr != meta.elr else meta)

    def after_isr_change(self, s: RState, core: State | None) -> RState | None:
        """A leader changed the ISR (AlterPartition): the ELR follows."""
        if core is None:
            return None
        old, new = s.core.quorum.isr, core.quorum.isr
        elr = elr_rules.elr_after(self.p, s.meta.elr, old, new, s.meta.assignment)
        return RState(core, s.meta.evolve(elr=elr) if elr != s.meta.elr else s.meta)

    def drop_replica(self, core: State, r: int) -> State:
        """StopReplica with delete: broker ``r`` deletes its copy of the partition."""
        rep = core.replicas[r - 1]
        gone = Replica((), 0, NIL, NONE, frozenset(), 0, rep.alive, NIL, ())
        pending = frozenset(w for w in core.pending if w.leader != r)
        return core.with_replica(r, gone, pending=pending)

    def forget_incarnation(self, core: State, r: int) -> State:
        """KIP-903: what a leader learnt from broker ``r``'s fetches before it restarted no
        longer counts (an ISR expansion carrying the old broker epoch is rejected by the
        controller): every leader's view of ``r`` goes back to unknown."""
        for leader, rep in zip(self.ids, core.replicas, strict=True):
            if rep.remote and rep.remote[r - 1] != -1:
                remote = list(rep.remote)
                remote[r - 1] = -1
                core = core.with_replica(leader, rep.evolve(remote=tuple(remote)))
        return core

    # --- domains -------------------------------------------------------------------------

    def each_broker(self, s: RState) -> tuple[tuple[int], ...]:
        return self.data.replica_args

    def requests_to_leaders(self, s: RState) -> list[tuple[Quorum]]:
        return [a for a in self.data.each_request(s.core) if a[0].leader in s.meta.assignment]

    def requests_to_followers(self, s: RState) -> list[tuple[Quorum, int]]:
        return [a for a in self.data.request_and_replica(s.core) if a[1] in s.meta.assignment]

    def presumed_leaders(self, s: RState) -> list[tuple[int]]:
        return self.data.presumed_leaders(s.core)

    def followers(self, s: RState) -> list[tuple[int]]:
        return [a for a in self.data.followers(s.core) if a[0] in s.meta.assignment]

    def leader_and_lagging_set(self, s: RState) -> Iterator[tuple[int, frozenset[int]]]:
        return self.data.leader_and_lagging_set(s.core)

    def leader_and_outsider(self, s: RState) -> Iterator[tuple[int, int]]:
        return (
            (leader, f)
            for leader, f in self.data.leader_and_outsider(s.core)
            if f in s.meta.assignment and f not in s.meta.shutting
        )

    def crash_points(self, s: RState) -> list[tuple[int, int]]:
        return self.data.crash_points(s.core)

    # --- the data plane: spec.replication's actions inside the assignment ----------------

    @action(domain="requests_to_leaders")
    def become_leader(self, s: RState, q: Quorum) -> RState | None:
        """``spec.replication``'s ``become_leader`` (``Partition.makeLeader``), for a replica
        of the current assignment."""
        if q.leader not in s.meta.assignment:
            return None
        core = self.data.become_leader(s.core, q)
        return None if core is None else s.evolve(core=core)

    @action(domain="presumed_leaders")
    def leader_write(self, s: RState, r: int) -> RState | None:
        """``spec.replication``'s ``leader_write``: an acks=all produce, refused below
        ``min.insync.replicas`` (NotEnoughReplicas), acknowledged once the HW passes it."""
        core = self.data.leader_write(s.core, r)
        return None if core is None else s.evolve(core=core)

    @action(domain="requests_to_followers")
    def become_follower(self, s: RState, q: Quorum, r: int) -> RState | None:
        """``spec.replication``'s KIP-320 ``become_follower_fenced`` (``makeFollower``),
        for a replica of the current assignment: a replica added by a reassignment starts
        here, with an empty log, outside the ISR."""
        if r not in s.meta.assignment:
            return None
        core = self.data.become_follower_fenced(s.core, q, r)
        return None if core is None else s.evolve(core=core)

    @action(domain="followers")
    def fetch(self, s: RState, f: int) -> RState | None:
        """``spec.replication``'s ``fetch`` (one round trip of the replica fetcher), from a
        replica of the current assignment: how a new replica catches up. With
        ``assignment_not_sent`` the leader does not know the adding replicas and refuses
        their fetches (an unknown replica)."""
        if f not in s.meta.assignment:
            return None
        if "assignment_not_sent" in self.p.bugs and f in s.meta.adding:
            return None
        core = self.data.fetch(s.core, f)
        return None if core is None else s.evolve(core=core)

    @action(domain="leader_and_lagging_set")
    def shrink_isr_lagging(self, s: RState, leader: int, dropped: frozenset[int]) -> RState | None:
        """``spec.replication``'s ``shrink_isr_lagging`` (``replica.lag.time.max.ms``,
        AlterPartition); the ELR follows the ISR (KIP-966)."""
        return self.after_isr_change(s, self.data.shrink_isr_lagging(s.core, leader, dropped))

    @action(domain="leader_and_outsider")
    def expand_isr_caught_up(self, s: RState, leader: int, f: int) -> RState | None:
        """``spec.replication``'s ``expand_isr_caught_up``, for a replica of the assignment
        that is not shutting down (KIP-841: a broker in controlled shutdown is not added to
        the ISR); a new replica joins the ISR here once it has caught up."""
        if f not in s.meta.assignment or f in s.meta.shutting:
            return None
        return self.after_isr_change(s, self.data.expand_isr_caught_up(s.core, leader, f))

    # --- the controller: clean election and failure detection ----------------------------

    @action()
    def elect_leader(self, s: RState) -> RState | None:
        """A partition without a leader gets one (``OfflinePartitionLeaderElection``): the
        first replica of the assignment that is live and in the ISR; with KIP-966, failing
        that, the first live ELR member, with an ISR of itself."""
        q = s.core.quorum
        if q.leader != NONE:
            return None
        m = s.meta
        leader, isr, elr = elr_rules.elect(self.p, m.assignment, q.isr, m.elr, self.live(s))
        if leader == NONE:
            return None
        return self.write_partition(s, leader, isr, m.evolve(elr=elr))

    @action(domain="each_broker")
    def controller_shrink_isr(self, s: RState, r: int) -> RState | None:
        """The controller takes a broker it believes failed out of the ISR (ZooKeeper
        session expiry, KRaft fencing; the failure detector may be wrong). A leader leaves
        the partition leaderless until ``elect_leader``. Before KIP-966 the last member
        stays (last replica standing); with it the ISR may empty, ``r`` joining the ELR."""
        q = s.core.quorum
        if r not in q.isr:
            return None
        isr = elr_rules.isr_without(self.p, q.isr, r, q.leader)
        if isr == q.isr and q.leader != r:
            return None
        return self.write_partition(s, NONE if q.leader == r else q.leader, isr)

    # --- crashes (faults) and restarts (heal) --------------------------------------------

    @action(domain="crash_points", kind=Kind.FAULT)
    def crash(self, s: RState, r: int, keep: int) -> RState | None:
        """``spec.replication``'s ``crash``: an unclean shutdown (power loss) loses some of
        the unflushed tail of the log. Bounded by ``max_crashes``."""
        core = self.data.crash(s.core, r, keep)
        return None if core is None else s.evolve(core=core)

    @action(domain="each_broker", kind=Kind.HEAL)
    def restart(self, s: RState, r: int) -> RState | None:
        """``spec.replication``'s ``restart``: a stopped broker registers again, out of the
        ISR. After a controlled shutdown its log is whole (a clean shutdown); after a crash
        it is not, and KIP-966 takes it out of the ELR. With KIP-966 even the last ISR
        member must have been fenced out of the ISR first (the controller fences the old
        incarnation before the new one registers)."""
        if self.p.elr and r in s.core.quorum.isr:
            return None
        core = self.data.restart(s.core, r)
        if core is None:
            return None
        core = self.forget_incarnation(core, r)
        m = s.meta
        clean = r in m.shutting
        elr = elr_rules.after_restart(self.p, m.elr, r, clean)
        return RState(core, m.evolve(elr=elr, shutting=m.shutting - {r}))

    @action(domain="each_broker")
    def flush(self, s: RState, r: int) -> RState | None:
        """``spec.replication``'s ``flush``: the broker fsyncs its log."""
        core = self.data.flush(s.core, r)
        return None if core is None else s.evolve(core=core)
