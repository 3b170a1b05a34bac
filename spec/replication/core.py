"""The core of the replication protocol, shared by both models: the controller, leadership,
and the effects every replication step is built from.

One partition, replicas ``1..N``, and a controller that acts only through the quorum state
(``Quorum``). The controller publishes each new quorum state as a LeaderAndIsr request; a
replica may act on any request ever sent, at any time (``State.requests``), so requests can
be delayed, duplicated, reordered or never delivered.

Here: the reference model's vocabulary (presumed and true leaders), the controller's two
updates (a new leader epoch with a LeaderAndIsr, or an ISR change through the controller),
the actions both models share (``controller_elect``, ``controller_shrink_isr``,
``become_leader``, ``leader_write``), the argument domains, and the shared effects: the HW
advance, one record replicated, truncation on becoming a follower. The replication steps
themselves are in ``published`` (the 2018 model's), ``fencing`` (KIP-320's forms) and
``leader_view`` (the extended model's broker handlers).
"""

from __future__ import annotations

from collections.abc import Iterator

from spec.framework import Spec, action
from spec.replication.acks import drop_pending, on_append, on_hw_advance
from spec.replication.params import Params
from spec.replication.state import NIL, NONE, Quorum, Record, Replica, State

CONTROLLER = ("controller_elect", "controller_shrink_isr")
"""The controller's actions in both models, in the order the model checker tries them."""
LEADERSHIP = ("become_leader", "leader_write")
"""A replica taking leadership and appending, in both models."""


class ReplicationCore(Spec):
    """The state, vocabulary, shared actions and effects of the replication spec."""

    name = "replication"

    def __init__(self, params: Params | None = None) -> None:
        self.p = params or Params()
        self.ids = self.p.ids
        self.all_isr = frozenset(self.ids)
        self.variant = self.p.variant
        self.truncate_to = self.variant.truncation_offset
        self.fenced = self.p.fenced
        self.extended = self.p.extended
        self.views = self.p.views
        self.clamps = self.p.clamps
        self.bugs = self.p.bugs
        self.replica_args = tuple((r,) for r in self.ids)
        self.unknown_leos = tuple(-1 for _ in self.ids)

    # --- initial state -------------------------------------------------------------------

    def init(self) -> Iterator[State]:
        """Empty logs; no replica knows a leader; the quorum has no leader and every replica
        in its ISR (a new partition's assignment)."""
        empty = Replica((), 0, NIL, NONE, frozenset())
        yield State(
            replicas=tuple(empty for _ in self.ids),
            quorum=Quorum(NIL, NONE, self.all_isr),
            requests=frozenset(),
            next_record_id=0,
            next_epoch=0,
        )

    # --- the reference model's vocabulary ------------------------------------------------

    def presumes_leadership(self, s: State, r: int) -> bool:
        return s.rep(r).leader == r

    def is_true_leader(self, s: State, r: int) -> bool:
        rep = s.rep(r)
        return s.quorum.leader == r and rep.leader == r and rep.epoch == s.quorum.epoch

    def true_leader(self, s: State) -> int:
        leader = s.quorum.leader
        if leader != NONE and self.is_true_leader(s, leader):
            return leader
        return NONE

    def accepts(self, rep: Replica, q: Quorum) -> bool:
        """A broker accepts a LeaderAndIsr only with a newer leader epoch than its own
        (``Partition.makeLeader``/``makeFollower``), and, after a restart, only requests sent
        to its current incarnation (KIP-380 broker epoch)."""
        if not rep.alive or q.epoch < rep.fence:
            return False
        if "accept_stale_epoch" in self.bugs:
            return q.epoch != rep.epoch
        return q.epoch > rep.epoch

    # --- the controller's two updates ----------------------------------------------------

    def controller_update(self, s: State, leader: int, isr: frozenset[int]) -> State | None:
        """The controller writes a new quorum state with the next leader epoch and sends it
        as a LeaderAndIsr request (ZooKeeper-era ``KafkaController`` / KRaft
        ``PartitionChangeBuilder``). Enabled while the epoch budget lasts."""
        if s.next_epoch > self.p.max_epoch:
            return None
        q = Quorum(s.next_epoch, leader, isr)
        return s.evolve(quorum=q, requests=s.requests | {q}, next_epoch=s.next_epoch + 1)

    def quorum_isr_update(self, s: State, leader: int, isr: frozenset[int]) -> State | None:
        """The leader changes the ISR through the controller (ZooKeeper conditional update,
        or KIP-497 AlterPartition): accepted only from the true leader, in its current epoch;
        no new leader epoch and no LeaderAndIsr."""
        if not self.is_true_leader(s, leader):
            return None
        new_rep = s.rep(leader).evolve(isr=isr)
        return s.with_replica(leader, new_rep, quorum=Quorum(s.quorum.epoch, leader, isr))

    # --- argument domains ----------------------------------------------------------------
    #
    # A domain enumerates the arguments an action could take. Domains skip arguments whose
    # action is plainly disabled (a request no replica would accept, a replica that does not
    # lead) only to save work; every action still checks its whole guard itself.

    def each_replica(self, s: State) -> tuple[tuple[int], ...]:
        return self.replica_args

    def presumed_leaders(self, s: State) -> list[tuple[int]]:
        reps = s.replicas
        return [(r,) for r in self.ids if reps[r - 1].leader == r]

    def followers(self, s: State) -> list[tuple[int]]:
        reps = s.replicas
        return [(r,) for r in self.ids if reps[r - 1].leader not in (NONE, r)]

    def each_request(self, s: State) -> list[tuple[Quorum]]:
        reps = s.replicas
        return [
            (q,)
            for q in sorted(s.requests, key=Quorum.key)
            if q.leader != NONE and self.accepts(reps[q.leader - 1], q)
        ]

    def request_and_replica(self, s: State) -> list[tuple[Quorum, int]]:
        reps = s.replicas
        args = []
        for q in sorted(s.requests, key=Quorum.key):
            if q.leader == NONE:
                continue
            for r in self.ids:
                if r != q.leader and self.accepts(reps[r - 1], q):
                    args.append((q, r))
        return args

    def leader_and_isr_member(self, s: State) -> Iterator[tuple[int, int]]:
        for leader in self.ids:
            rep = s.replicas[leader - 1]
            if rep.leader != leader:
                continue
            for f in sorted(rep.isr):
                if f != leader:
                    yield (leader, f)

    def leader_and_outsider(self, s: State) -> Iterator[tuple[int, int]]:
        for leader in self.ids:
            rep = s.replicas[leader - 1]
            if rep.leader != leader:
                continue
            for f in self.ids:
                if f not in rep.isr:
                    yield (leader, f)

    # --- controller actions --------------------------------------------------------------

    @action(domain="each_replica")
    def controller_elect(self, s: State, n: int) -> State | None:
        """The controller elects ``n`` leader from the ISR (clean election: ``n`` holds every
        committed record), bumping the leader epoch. Also a preferred-leader or controlled
        shutdown move when the current leader is alive."""
        q = s.quorum
        if "elect_outside_isr" in self.bugs:
            if n == q.leader or not s.rep(n).alive:
                return None
            return self.controller_update(s, n, q.isr)
        if n not in q.isr or n == q.leader or not s.rep(n).alive:
            return None
        if "reuse_epoch" in self.bugs and q.epoch != NIL:
            new_q = Quorum(q.epoch, n, q.isr)
            return s.evolve(quorum=new_q, requests=s.requests | {new_q})
        return self.controller_update(s, n, q.isr)

    @action(domain="each_replica")
    def controller_shrink_isr(self, s: State, r: int) -> State | None:
        """The controller removes a broker it believes failed (ZooKeeper session expiry,
        KRaft fencing) from the ISR. If it led, the partition is left without a leader until
        the next election. The failure detector may be wrong: any broker can be suspected.
        A leader that is the ISR's last member stays in it (the partition goes leaderless
        with ISR {r}: the last replica that may hold every committed record, the rule Kafka
        keeps and KIP-966 refines). A member of an ISR with no leader is removed like any
        other follower, so an ISR can become empty: the published model's third case,
        kept for parity."""
        q = s.quorum
        if q.leader == r:
            if q.isr == frozenset({r}):
                return self.controller_update(s, NONE, q.isr)
            return self.controller_update(s, NONE, q.isr - {r})
        if r in q.isr:
            return self.controller_update(s, q.leader, q.isr - {r})
        return None

    # --- replica actions: leadership -----------------------------------------------------

    @action(domain="each_request")
    def become_leader(self, s: State, q: Quorum) -> State | None:
        """A broker named leader by a LeaderAndIsr request with a newer epoch takes the
        epoch and the ISR (``Partition.makeLeader``). Its HW is kept: a new leader's HW may
        be stale until it advances in the new epoch."""
        if q.leader == NONE:
            return None
        rep = s.rep(q.leader)
        if not self.accepts(rep, q):
            return None
        remote = self.unknown_leos if self.views else ()
        new = rep.evolve(epoch=q.epoch, leader=q.leader, isr=q.isr, remote=remote)
        nxt = s.with_replica(q.leader, new, pending=drop_pending(s, q.leader))
        return self.recompute_hw(nxt, q.leader) if self.views else nxt

    @action(domain="presumed_leaders")
    def leader_write(self, s: State, r: int) -> State | None:
        """A producer's record is appended by a replica that presumes it leads, stamped with
        its leader epoch. With acks=all and ``min.insync.replicas`` the append is refused
        (NotEnoughReplicas) while the leader's ISR is too small; acks=1 is acknowledged at
        once; acks=all waits in the purgatory until the HW passes the record."""
        rep = s.rep(r)
        if rep.leader != r or s.next_record_id >= self.p.max_records:
            return None
        if rep.leo >= self.p.log_size:
            return None
        acked, pending = s.acked, s.pending
        if self.extended:
            ghosts = on_append(self.p, s, r, rep)
            if ghosts is None:
                return None
            acked, pending = ghosts
        new = rep.evolve(log=(*rep.log, (rep.epoch, s.next_record_id)))
        nxt = s.with_replica(
            r, new, next_record_id=s.next_record_id + 1, acked=acked, pending=pending
        )
        return self.recompute_hw(nxt, r) if self.views else nxt

    # --- shared effects ------------------------------------------------------------------

    def advance_hw(self, s: State, leader: int, rep: Replica, target: int | None = None) -> State:
        """``leader``'s HW moves to ``target`` (by default one record further), completing
        the acks=all writes it passes."""
        hw = rep.hw + 1 if target is None else target
        new = rep.evolve(hw=hw)
        acked, pending = s.acked, s.pending
        if pending:
            acked, pending = on_hw_advance(self.p, s, leader, rep, hw)
        return s.with_replica(leader, new, pending=pending, acked=acked)

    def recompute_hw(self, s: State, leader: int) -> State:
        """The leader view's ``maybeIncrementLeaderHW``: the HW becomes the smallest LEO
        over the ISR (the leader's own, and the followers' as last reported), if that is
        higher. A follower that has not fetched in this epoch holds it back."""
        rep = s.replicas[leader - 1]
        target = rep.leo
        for m in rep.isr:
            if m != leader:
                target = min(target, rep.remote[m - 1])
        if target <= rep.hw:
            return s
        return self.advance_hw(s, leader, rep, target)

    def replicate(self, s: State, leader: int, f: int, frep: Replica) -> State | None:
        """Follower ``f`` appends the leader's record at its LEO and sets its HW to
        min(leader's HW, its own new LEO)."""
        lrep = s.rep(leader)
        if lrep.leader != leader or lrep.leo <= frep.leo:
            return None
        log = (*frep.log, lrep.log[frep.leo])
        if "follower_hw_unclamped" in self.bugs:
            hw = lrep.hw
        else:
            hw = min(lrep.hw, len(log))
        return s.with_replica(f, frep.evolve(log=log, hw=hw))

    def truncation_offset(self, s: State, r: int, leader: int) -> int:
        """Where replica ``r`` becoming a follower of ``leader`` truncates its log to: the
        variant's rule (``Variant.truncation_offset``)."""
        return self.truncate_to(s.replicas[r - 1], s.replicas[leader - 1])

    def truncated_log(self, rep: Replica, offset: int) -> tuple[Record, ...] | None:
        """``Log.truncateTo``: keep the first ``offset`` records. The published model
        disables the step when ``offset`` is past the end; Kafka (and the extended model)
        treats that as a no-op."""
        if offset > rep.leo:
            if not self.clamps:
                return None
            offset = rep.leo
        return rep.log[:offset]

    def truncate_and_follow(self, s: State, q: Quorum, r: int, rep: Replica) -> State | None:
        """Replica ``r`` truncates by the variant's rule and follows ``q``'s leader, taking
        its epoch and ISR (``Partition.makeFollower``); the HW never stays above the cut."""
        offset = self.truncation_offset(s, r, q.leader)
        log = self.truncated_log(rep, offset)
        if log is None:
            return None
        new = rep.evolve(
            log=log,
            hw=min(offset, rep.hw),
            epoch=q.epoch,
            leader=q.leader,
            isr=q.isr,
            flushed=min(rep.flushed, len(log)),
            remote=(),
        )
        return s.with_replica(r, new, pending=drop_pending(s, r))
