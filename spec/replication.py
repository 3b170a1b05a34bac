"""Kafka partition replication as an executable state machine.

One partition, replicas ``1..N``, and a controller that acts only through the *quorum state*:
the partition record the controller keeps in ZooKeeper (``/brokers/topics/T/partitions/P/
state``) or, under KRaft, in the metadata log: leader, leader epoch and ISR. The controller
publishes each new quorum state as a LeaderAndIsr request; the set ``requests`` holds every
request ever sent, and a replica may act on any of them at any time, so requests can be
delayed, duplicated, reordered or never delivered.

Two models in one spec (``Params.model``):

``published-2018``
    Exactly the model Kafka's engineers published in 2018 and checked with TLC (see
    ``shared/reference-models/kafka-replication-2018.md``): the same variables, initial state
    and actions, for the truncation variants ``high_watermark`` (before KIP-101),
    ``kip101``, ``kip279`` and ``kip320``. On it our checker reproduces TLC's distinct-state
    counts and shortest counterexamples (``model_tests/test_replication_parity.py``).

``extended``
    The same core plus what a user of Kafka configures and suffers: ``acks`` (0, 1, all) and
    ``min.insync.replicas``, crashes that lose the unflushed tail of the log and restarts,
    flushes, unclean leader election (``unclean.leader.election.enable``), and a ghost record
    of every acknowledged write so that loss is stated directly. The extra state is constant
    when the extra actions are off, so the core's behaviour is unchanged.

Records are ``(epoch, id)`` pairs: the leader epoch the record was written in (every record
batch carries it, since KIP-101) and a unique id, so two records are equal only if they are
the same write.

Deliberate buggy variants (``Params.bugs``) exist so that every invariant is shown able to
fail; each is named after the mistake it makes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import attrs

from spec.framework import (
    Kind,
    Spec,
    SpecError,
    Step,
    action,
    all_permutations,
    invariant,
    sometimes,
    sometimes_transition,
    transition_property,
)

NONE = -1
"""No replica: the leader field of a quorum state with no leader (Kafka writes -1)."""
NIL = -1
"""No epoch: smaller than every leader epoch."""

Record = tuple[int, int]
"""A record: (leader epoch it was written in, unique id)."""

TRUNCATIONS = ("high_watermark", "kip101", "kip279", "kip320")
MODELS = ("published-2018", "extended")
ACKS = ("0", "1", "all")
BUGS = {
    "follower_hw_unclamped": "a follower takes the leader's HW without capping it at its own LEO",
    "elect_outside_isr": "the controller may elect a replica outside the ISR, keeping the ISR",
    "reuse_epoch": "the controller elects a new leader without bumping the leader epoch",
    "accept_stale_epoch": "a replica accepts a LeaderAndIsr with an epoch older than its own",
    "ack_before_hw": "acks=all writes are acknowledged on append, before the HW passes them",
}


@attrs.frozen
class Params:
    """Bounds and protocol variants. Defaults are the published model's small configuration."""

    replicas: int = attrs.field(default=2)
    log_size: int = 2
    max_records: int = 2
    max_epoch: int = 2
    truncation: str = "kip320"
    model: str = "published-2018"
    acks: str = "all"
    min_isr: int = 1
    unclean: bool = False
    max_crashes: int = 0
    clamp_truncation: bool | None = None
    """Truncate to min(offset, LEO) as Kafka's ``Log.truncateTo`` does, instead of disabling
    the step (the published model's rule). Default: off in ``published-2018``, on in
    ``extended``."""
    leader_view: bool | None = None
    """The leader knows a follower's LEO only from that follower's last fetch, and
    recomputes its HW as the minimum over the ISR of what it knows (Kafka's
    ``Partition.maybeIncrementLeaderHW``), instead of reading followers' logs directly as
    the published model does. Default: on in ``extended``; the published model has no
    such state."""
    bugs: frozenset[str] = frozenset()

    def __attrs_post_init__(self) -> None:
        problems = []
        if self.model not in MODELS:
            problems.append(f"model {self.model!r} is not one of {', '.join(MODELS)}")
        if self.truncation not in TRUNCATIONS:
            problems.append(
                f"truncation {self.truncation!r} is not one of {', '.join(TRUNCATIONS)}"
            )
        if not 1 <= self.replicas <= 4:
            problems.append(f"replicas must be 1..4, got {self.replicas}")
        for name in ("log_size", "max_records"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_epoch < 0:
            problems.append(f"max_epoch must be >= 0, got {self.max_epoch}")
        if self.acks not in ACKS:
            problems.append(f"acks {self.acks!r} is not one of 0, 1, all")
        if not 1 <= self.min_isr <= self.replicas:
            problems.append(f"min_isr must be 1..replicas ({self.replicas}), got {self.min_isr}")
        if self.max_crashes < 0:
            problems.append(f"max_crashes must be >= 0, got {self.max_crashes}")
        unknown = sorted(set(self.bugs) - set(BUGS))
        if unknown:
            problems.append(f"unknown bug flag(s) {unknown}; known: {', '.join(sorted(BUGS))}")
        if self.model == "published-2018":
            extras = []
            if self.acks != "all":
                extras.append("acks")
            if self.min_isr != 1:
                extras.append("min_isr")
            if self.unclean:
                extras.append("unclean")
            if self.max_crashes:
                extras.append("max_crashes")
            if self.leader_view:
                extras.append("leader_view")
            if extras:
                problems.append(
                    f"{', '.join(extras)}: only in --model extended "
                    "(the published 2018 model has no acks, crashes or unclean election)"
                )
        if problems:
            raise SpecError("; ".join(problems))

    @property
    def extended(self) -> bool:
        return self.model == "extended"

    @property
    def views(self) -> bool:
        return self.extended if self.leader_view is None else self.leader_view

    @property
    def clamps(self) -> bool:
        return self.extended if self.clamp_truncation is None else self.clamp_truncation

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.replicas + 1))


@attrs.frozen(slots=True, cache_hash=True)
class Quorum:
    """The controller's partition state, and the payload of a LeaderAndIsr request."""

    epoch: int
    leader: int
    isr: frozenset[int]

    def describe(self) -> str:
        leader = "-" if self.leader == NONE else str(self.leader)
        epoch = "-" if self.epoch == NIL else str(self.epoch)
        return f"(e{epoch},L{leader},{_set(self.isr)})"

    def key(self) -> tuple[Any, ...]:
        return (self.epoch, self.leader, tuple(sorted(self.isr)))


@attrs.frozen(slots=True, cache_hash=True)
class Replica:
    """What one broker holds for the partition: its log and its own view of the partition.

    ``flushed`` (the prefix of the log that is on disk), ``alive`` and ``fence`` are the
    extended model's; in ``published-2018`` they stay at their initial values.
    """

    log: tuple[Record, ...]
    hw: int
    epoch: int
    leader: int
    isr: frozenset[int]
    flushed: int = 0
    alive: bool = True
    fence: int = NIL
    """After a restart: the quorum epoch when the broker re-registered. Requests older than
    that were addressed to its previous incarnation and are rejected (KIP-380 broker
    epochs)."""
    remote: tuple[int, ...] = ()
    """Leader view only, while this replica leads: for each replica, the LEO it reported in
    its last fetch in this leader epoch (-1: not fetched yet). Empty otherwise."""

    @property
    def leo(self) -> int:
        return len(self.log)

    def key(self) -> tuple[Any, ...]:
        return (
            self.log,
            self.hw,
            self.epoch,
            self.leader,
            tuple(sorted(self.isr)),
            self.flushed,
            self.alive,
            self.fence,
            self.remote,
        )


@attrs.frozen(slots=True, cache_hash=True)
class Write:
    """Ghost: an acknowledged write, and the acks setting it was acknowledged under."""

    offset: int
    id: int
    acks: str


@attrs.frozen(slots=True, cache_hash=True)
class Pending:
    """Ghost: an acks=all write waiting in the leader's produce purgatory for the HW."""

    leader: int
    offset: int
    id: int


@attrs.frozen(slots=True, cache_hash=True)
class State:
    replicas: tuple[Replica, ...]
    """``replicas[i]`` is replica ``i + 1``."""
    quorum: Quorum
    requests: frozenset[Quorum]
    next_record_id: int
    next_epoch: int
    crashes: int = 0
    acked: frozenset[Write] = frozenset()
    pending: frozenset[Pending] = frozenset()

    def rep(self, r: int) -> Replica:
        return self.replicas[r - 1]


def _set(ids: frozenset[int]) -> str:
    return "{" + ",".join(str(i) for i in sorted(ids)) + "}"


def _but(s: State, **changes: Any) -> State:
    """``s`` with some fields replaced (a fast ``attrs.evolve`` for the hot path)."""
    return State(
        changes.get("replicas", s.replicas),
        changes.get("quorum", s.quorum),
        changes.get("requests", s.requests),
        changes.get("next_record_id", s.next_record_id),
        changes.get("next_epoch", s.next_epoch),
        changes.get("crashes", s.crashes),
        changes.get("acked", s.acked),
        changes.get("pending", s.pending),
    )


def _with(s: State, r: int, new: Replica, **changes: Any) -> State:
    """``s`` with replica ``r`` replaced (and maybe other fields)."""
    reps = list(s.replicas)
    reps[r - 1] = new
    return _but(s, replicas=tuple(reps), **changes)


def _local(
    rep: Replica,
    *,
    log: tuple[Record, ...] | None = None,
    hw: int | None = None,
    epoch: int | None = None,
    leader: int | None = None,
    isr: frozenset[int] | None = None,
    flushed: int | None = None,
    remote: tuple[int, ...] | None = None,
) -> Replica:
    return Replica(
        rep.log if log is None else log,
        rep.hw if hw is None else hw,
        rep.epoch if epoch is None else epoch,
        rep.leader if leader is None else leader,
        rep.isr if isr is None else isr,
        rep.flushed if flushed is None else flushed,
        rep.alive,
        rep.fence,
        rep.remote if remote is None else remote,
    )


class Replication(Spec):
    """The replication protocol of one partition. See the module docstring."""

    name = "replication"

    def __init__(self, params: Params | None = None) -> None:
        self.p = params or Params()
        self.ids = self.p.ids
        self.all_isr = frozenset(self.ids)
        self.fenced = self.p.truncation == "kip320"
        self.bugs = self.p.bugs
        self._replica_args = tuple((r,) for r in self.ids)
        self._unknown = tuple(-1 for _ in self.ids)

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

    def enabled_actions(self) -> tuple[Any, ...]:
        unfenced = {
            "leader_shrink_isr",
            "leader_expand_isr",
            "leader_advance_hw",
            "follower_fetch",
            "become_follower",
        }
        fenced = {name + "_fenced" for name in unfenced}
        viewed = {"fetch", "shrink_isr_lagging", "expand_isr_caught_up"}
        extended_only = {"crash", "restart", "flush", "unclean_elect", "controller_failover"}
        if self.p.views:
            # The leader-view handlers replace the global-read fetch, ISR and HW actions.
            skip = (unfenced | fenced) - {"become_follower", "become_follower_fenced"}
            skip |= {"become_follower_fenced"} if not self.fenced else {"become_follower"}
        else:
            skip = (unfenced if self.fenced else fenced) | viewed
        keep = []
        for decl in self._actions:
            if decl.name in skip:
                continue
            if decl.name in extended_only:
                if not self.p.extended:
                    continue
                if decl.name in ("crash", "restart", "flush") and self.p.max_crashes == 0:
                    continue
                if decl.name == "unclean_elect" and not self.p.unclean:
                    continue
            keep.append(decl)
        return tuple(keep)

    # --- helpers (the reference model's vocabulary) ---------------------------------------

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

    def _controller_update(self, s: State, leader: int, isr: frozenset[int]) -> State | None:
        """The controller writes a new quorum state with the next leader epoch and sends it
        as a LeaderAndIsr request (ZooKeeper-era ``KafkaController`` / KRaft
        ``PartitionChangeBuilder``). Enabled while the epoch budget lasts."""
        if s.next_epoch > self.p.max_epoch:
            return None
        q = Quorum(s.next_epoch, leader, isr)
        return _but(s, quorum=q, requests=s.requests | {q}, next_epoch=s.next_epoch + 1)

    def _quorum_isr_update(self, s: State, leader: int, isr: frozenset[int]) -> State | None:
        """The leader changes the ISR through the controller (ZooKeeper conditional update,
        or KIP-497 AlterPartition): accepted only from the true leader, in its current epoch;
        no new leader epoch and no LeaderAndIsr."""
        if not self.is_true_leader(s, leader):
            return None
        rep = s.rep(leader)
        new_rep = _local(rep, isr=isr)
        return _with(s, leader, new_rep, quorum=Quorum(s.quorum.epoch, leader, isr))

    def caught_up(self, s: State, leader: int, follower: int, end: int) -> bool:
        """The published model's (unfenced) idea of a follower being caught up to ``end``:
        it follows ``leader`` and holds *some* record at ``end - 1`` (records not compared)."""
        if s.rep(follower).leader != leader:
            return False
        if end == 0:
            return True
        return s.rep(leader).leo >= end and s.rep(follower).leo >= end

    def following_epoch(self, s: State, leader: int, follower: int) -> bool:
        """KIP-320: the follower fetches with the leader's current epoch."""
        lrep = s.replicas[leader - 1]
        frep = s.replicas[follower - 1]
        return lrep.leader == leader and frep.leader == leader and frep.epoch == lrep.epoch

    def _accepts(self, rep: Replica, q: Quorum) -> bool:
        """A broker accepts a LeaderAndIsr only with a newer leader epoch than its own
        (``Partition.makeLeader``/``makeFollower``), and, after a restart, only requests sent
        to its current incarnation (KIP-380 broker epoch)."""
        if not rep.alive or q.epoch < rep.fence:
            return False
        if "accept_stale_epoch" in self.bugs:
            return q.epoch != rep.epoch
        return q.epoch > rep.epoch

    def _drop_pending(self, s: State, r: int) -> frozenset[Pending]:
        """A replica that stops leading fails its purgatory with NOT_LEADER_OR_FOLLOWER."""
        if not s.pending:
            return s.pending
        return frozenset(w for w in s.pending if w.leader != r)

    def _truncate(self, rep: Replica, offset: int) -> tuple[Record, ...] | None:
        """``Log.truncateTo``: keep the first ``offset`` records. The published model
        disables the step when ``offset`` is past the end; Kafka (and the extended model)
        treats that as a no-op."""
        if offset > rep.leo:
            if not self.p.clamps:
                return None
            offset = rep.leo
        return rep.log[:offset]

    def truncation_offset(self, s: State, r: int, leader: int) -> int:
        """Where a replica becoming a follower of ``leader`` truncates its log to.

        - ``high_watermark`` (before KIP-101): its own high watermark;
        - ``kip101``: the end offset, on the leader, of the epoch of its last record
          (OffsetsForLeaderEpoch), falling back to its HW when the leader cannot answer;
        - ``kip279`` / ``kip320``: the offset after the last record both logs share (the
          follower repeats the epoch exchange until the logs agree).
        """
        rlog = s.rep(r).log
        llog = s.rep(leader).log
        rule = self.p.truncation
        if rule == "high_watermark":
            return s.rep(r).hw
        if rule == "kip101":
            if not rlog:
                return 0
            last_epoch = rlog[-1][0]
            if not llog:
                return s.rep(r).hw
            if llog[-1][0] == last_epoch:
                return len(llog)
            for offset, record in enumerate(llog):
                if record[0] > last_epoch:
                    return offset
            return s.rep(r).hw
        if not rlog or not llog:
            return 0
        for offset in range(min(len(rlog), len(llog)) - 1, -1, -1):
            if rlog[offset] == llog[offset]:
                return offset + 1
        return 0

    # --- argument domains ----------------------------------------------------------------
    #
    # A domain enumerates the arguments an action could take. Domains skip arguments whose
    # action is plainly disabled (a request no replica would accept, a replica that does not
    # lead) only to save work; every action still checks its whole guard itself.

    def _each_replica(self, s: State) -> tuple[tuple[int], ...]:
        return self._replica_args

    def _presumed_leaders(self, s: State) -> list[tuple[int]]:
        reps = s.replicas
        return [(r,) for r in self.ids if reps[r - 1].leader == r]

    def _followers(self, s: State) -> list[tuple[int]]:
        reps = s.replicas
        return [(r,) for r in self.ids if reps[r - 1].leader not in (NONE, r)]

    def _each_request(self, s: State) -> list[tuple[Quorum]]:
        reps = s.replicas
        return [
            (q,)
            for q in sorted(s.requests, key=Quorum.key)
            if q.leader != NONE and self._accepts(reps[q.leader - 1], q)
        ]

    def _request_and_replica(self, s: State) -> list[tuple[Quorum, int]]:
        reps = s.replicas
        args = []
        for q in sorted(s.requests, key=Quorum.key):
            if q.leader == NONE:
                continue
            for r in self.ids:
                if r != q.leader and self._accepts(reps[r - 1], q):
                    args.append((q, r))
        return args

    def _leader_and_isr_member(self, s: State) -> Iterator[tuple[int, int]]:
        for leader in self.ids:
            rep = s.replicas[leader - 1]
            if rep.leader != leader:
                continue
            for f in sorted(rep.isr):
                if f != leader:
                    yield (leader, f)

    def _leader_and_outsider(self, s: State) -> Iterator[tuple[int, int]]:
        for leader in self.ids:
            rep = s.replicas[leader - 1]
            if rep.leader != leader:
                continue
            for f in self.ids:
                if f not in rep.isr:
                    yield (leader, f)

    # --- controller actions --------------------------------------------------------------

    @action(domain="_each_replica")
    def controller_elect(self, s: State, n: int) -> State | None:
        """The controller elects ``n`` leader from the ISR (clean election: ``n`` holds every
        committed record), bumping the leader epoch. Also a preferred-leader or controlled
        shutdown move when the current leader is alive."""
        q = s.quorum
        if "elect_outside_isr" in self.bugs:
            if n == q.leader or not s.rep(n).alive:
                return None
            return self._controller_update(s, n, q.isr)
        if n not in q.isr or n == q.leader or not s.rep(n).alive:
            return None
        if "reuse_epoch" in self.bugs and q.epoch != NIL:
            new_q = Quorum(q.epoch, n, q.isr)
            return _but(s, quorum=new_q, requests=s.requests | {new_q})
        return self._controller_update(s, n, q.isr)

    @action(domain="_each_replica")
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
                return self._controller_update(s, NONE, q.isr)
            return self._controller_update(s, NONE, q.isr - {r})
        if r in q.isr:
            return self._controller_update(s, q.leader, q.isr - {r})
        return None

    def _failover_candidates(self, s: State) -> list[tuple[int, int]]:
        q = s.quorum
        if q.leader == NONE:
            return []
        return [(q.leader, n) for n in sorted(q.isr) if n != q.leader]

    @action(domain="_failover_candidates")
    def controller_failover(self, s: State, failed: int, n: int) -> State | None:
        """The controller handles the failure of the leader in one metadata write: it takes
        the failed broker out of the ISR and elects a live ISR member in its place (ZooKeeper
        ``onBrokerFailure``; KRaft's fencing of a broker). Extended model only: the
        published model splits this into a shrink and an election."""
        q = s.quorum
        if q.leader != failed or n == failed or n not in q.isr or not s.rep(n).alive:
            return None
        return self._controller_update(s, n, q.isr - {failed})

    @action(domain="_each_replica")
    def unclean_elect(self, s: State, n: int) -> State | None:
        """``unclean.leader.election.enable=true``: with no leader and no ISR member to elect
        (the controller believes them all failed), an out-of-sync live replica becomes
        leader with an ISR of itself; its log becomes the source of truth even though it may
        lack committed records (Kafka docs, "Unclean leader election")."""
        q = s.quorum
        if q.leader != NONE or n in q.isr or not s.rep(n).alive:
            return None
        return self._controller_update(s, n, frozenset({n}))

    # --- replica actions: leadership -----------------------------------------------------

    @action(domain="_each_request")
    def become_leader(self, s: State, q: Quorum) -> State | None:
        """A broker named leader by a LeaderAndIsr request with a newer epoch takes the
        epoch and the ISR (``Partition.makeLeader``). Its HW is kept: a new leader's HW may
        be stale until it advances in the new epoch."""
        if q.leader == NONE:
            return None
        rep = s.rep(q.leader)
        if not self._accepts(rep, q):
            return None
        remote = self._unknown if self.p.views else ()
        new = _local(rep, epoch=q.epoch, leader=q.leader, isr=q.isr, remote=remote)
        nxt = _with(s, q.leader, new, pending=self._drop_pending(s, q.leader))
        return self._recompute_hw(nxt, q.leader) if self.p.views else nxt

    @action(domain="_presumed_leaders")
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
        if self.p.extended:
            offset, rid = rep.leo, s.next_record_id
            if self.p.acks == "all":
                if len(rep.isr) < self.p.min_isr:
                    return None
                if "ack_before_hw" in self.bugs:
                    acked = acked | {Write(offset, rid, "all")}
                else:
                    pending = pending | {Pending(r, offset, rid)}
            elif self.p.acks == "1":
                acked = acked | {Write(offset, rid, "1")}
        new = _local(rep, log=(*rep.log, (rep.epoch, s.next_record_id)))
        nxt = _with(s, r, new, next_record_id=s.next_record_id + 1, acked=acked, pending=pending)
        return self._recompute_hw(nxt, r) if self.p.views else nxt

    # --- replica actions: the unfenced protocol (high_watermark, kip101, kip279) ----------

    @action(domain="_leader_and_isr_member")
    def leader_shrink_isr(self, s: State, leader: int, f: int) -> State | None:
        """The leader drops a follower that is not caught up to its LEO from the ISR
        (``replica.lag.time.max.ms``: here, any lagging follower may be dropped)."""
        if self.caught_up(s, leader, f, s.rep(leader).leo):
            return None
        return self._quorum_isr_update(s, leader, s.rep(leader).isr - {f})

    @action(domain="_leader_and_outsider")
    def leader_expand_isr(self, s: State, leader: int, f: int) -> State | None:
        """The leader adds a follower whose log has reached the leader's HW to the ISR."""
        if not self.caught_up(s, leader, f, s.rep(leader).hw):
            return None
        return self._quorum_isr_update(s, leader, s.rep(leader).isr | {f})

    @action(domain="_presumed_leaders")
    def leader_advance_hw(self, s: State, leader: int) -> State | None:
        """The leader's HW moves past offset ``hw`` once every ISR member follows it and
        holds a record there (HW = min LEO over the ISR, one record at a time)."""
        rep = s.rep(leader)
        if rep.leader != leader or rep.hw >= self.p.log_size:
            return None
        hw = rep.hw
        for f in rep.isr:
            frep = s.rep(f)
            if frep.leader != leader or frep.leo <= hw:
                return None
        return self._advance_hw(s, leader, rep)

    @action(domain="_followers")
    def follower_fetch(self, s: State, f: int) -> State | None:
        """A follower fetches the record at its LEO from the replica it believes leads, and
        sets its HW to min(leader's HW, its own LEO): it learns of HW advances one fetch
        late (the lag KIP-101's data loss needs)."""
        frep = s.rep(f)
        leader = frep.leader
        if leader in (NONE, f):
            return None
        return self._replicate(s, leader, f, frep)

    @action(domain="_request_and_replica")
    def become_follower(self, s: State, q: Quorum, r: int) -> State | None:
        """A broker named follower by a newer LeaderAndIsr truncates its log by the
        variant's rule (``Params.truncation``) and starts fetching from the named leader."""
        rep = s.rep(r)
        if not self._accepts(rep, q):
            return None
        return self._become_follower(s, q, r, rep)

    # --- replica actions: the KIP-320 fenced protocol ------------------------------------

    @action(domain="_leader_and_isr_member")
    def leader_shrink_isr_fenced(self, s: State, leader: int, f: int) -> State | None:
        """KIP-320: the leader drops a follower that does not fetch in its current epoch, or
        has not reached its LEO."""
        if self.following_epoch(s, leader, f) and s.rep(f).leo >= s.rep(leader).leo:
            return None
        return self._quorum_isr_update(s, leader, s.rep(leader).isr - {f})

    @action(domain="_leader_and_outsider")
    def leader_expand_isr_fenced(self, s: State, leader: int, f: int) -> State | None:
        """KIP-320: a follower joins the ISR when it fetches in the leader's epoch, holds a
        record at HW - 1, and the leader's HW has reached its own epoch (so the follower
        holds everything the previous leader may have committed)."""
        if not self.following_epoch(s, leader, f):
            return None
        lrep = s.rep(leader)
        hw = lrep.hw
        if hw != 0 and s.rep(f).leo < hw:
            return None
        if hw != lrep.leo and lrep.log[hw][0] != lrep.epoch:
            return None
        return self._quorum_isr_update(s, leader, lrep.isr | {f})

    @action(domain="_presumed_leaders")
    def leader_advance_hw_fenced(self, s: State, leader: int) -> State | None:
        """KIP-320: the HW advances past ``hw`` when every ISR member fetches in the
        leader's epoch and holds a record there."""
        rep = s.rep(leader)
        hw = rep.hw
        # The published rule does not say "l presumes leadership", but implies it whenever
        # l's ISR is not empty; saying it keeps a restarted replica (empty ISR) from
        # advancing a HW of its own.
        if rep.leader != leader or rep.leo <= hw:
            return None
        for f in rep.isr:
            if not self.following_epoch(s, leader, f) or s.replicas[f - 1].leo <= hw:
                return None
        return self._advance_hw(s, leader, rep)

    @action(domain="_followers")
    def follower_fetch_fenced(self, s: State, f: int) -> State | None:
        """KIP-320: a fetch carries the follower's leader epoch; the leader answers
        FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH unless the epochs match."""
        frep = s.rep(f)
        leader = frep.leader
        if leader in (NONE, f) or not self.following_epoch(s, leader, f):
            return None
        return self._replicate(s, leader, f, frep)

    @action(domain="_request_and_replica")
    def become_follower_fenced(self, s: State, q: Quorum, r: int) -> State | None:
        """KIP-320: a follower truncates (to where its log and the leader's last agree) only
        against a leader that has itself taken the request's epoch, so it never truncates
        against a replica whose leadership is stale."""
        rep = s.rep(r)
        if not self._accepts(rep, q):
            return None
        lrep = s.rep(q.leader)
        if lrep.leader != q.leader or lrep.epoch != q.epoch:
            return None
        return self._become_follower(s, q, r, rep)

    # --- replica actions: the leader's view (extended model) ----------------------------
    #
    # Each action is one broker event handler, as Kafka's code runs it: the leader learns a
    # follower's LEO only from its fetches, and recomputes its HW whenever that, its ISR or
    # its log changes. A fetch is one request/response round trip.

    def epoch_start_offset(self, rep: Replica) -> int:
        """The offset of the first record of the replica's current epoch (its LEO if it has
        written none): the leader-epoch cache entry a new leader appends (KIP-101)."""
        for offset, record in enumerate(rep.log):
            if record[0] == rep.epoch:
                return offset
        return rep.leo

    def _recompute_hw(self, s: State, leader: int) -> State:
        """``maybeIncrementLeaderHW``: the HW becomes the smallest LEO over the ISR (the
        leader's own, and the followers' as last reported), if that is higher. A follower
        that has not fetched in this epoch holds it back."""
        rep = s.replicas[leader - 1]
        target = rep.leo
        for m in rep.isr:
            if m != leader:
                target = min(target, rep.remote[m - 1])
        if target <= rep.hw:
            return s
        return self._advance_hw(s, leader, rep, target)

    @action(domain="_followers")
    def fetch(self, s: State, f: int) -> State | None:
        """One fetch round trip, in the order Kafka's ``ReplicaManager.fetchMessages`` runs
        it: the leader reads the record at the follower's LEO and its current HW for the
        response, *then* records that LEO and recomputes its HW; the follower appends and
        sets its HW to min(HW in the response, its own LEO). So a follower learns of an HW
        advance one fetch late, the lag KIP-101's data loss needs. With KIP-320 the fetch
        carries the follower's leader epoch and a mismatch is answered FENCED_LEADER_EPOCH
        or UNKNOWN_LEADER_EPOCH."""
        frep = s.replicas[f - 1]
        leader = frep.leader
        lrep = s.replicas[leader - 1]
        if lrep.leader != leader or frep.leo > lrep.leo:
            return None
        if self.fenced and frep.epoch != lrep.epoch:
            return None
        log = frep.log
        if frep.leo < lrep.leo:
            log = (*log, lrep.log[frep.leo])
        response_hw = lrep.hw
        remote = list(lrep.remote)
        remote[f - 1] = frep.leo
        nxt = self._recompute_hw(_with(s, leader, _local(lrep, remote=tuple(remote))), leader)
        clamped = (
            response_hw if "follower_hw_unclamped" in self.bugs else min(response_hw, len(log))
        )
        nxt = _with(nxt, f, _local(frep, log=log, hw=clamped))
        return None if nxt == s else nxt

    def _leader_and_lagging_set(self, s: State) -> Iterator[tuple[int, frozenset[int]]]:
        for leader in self.ids:
            lrep = s.replicas[leader - 1]
            if lrep.leader != leader or not lrep.remote:
                continue
            lagging = [f for f in sorted(lrep.isr) if f != leader and lrep.remote[f - 1] < lrep.leo]
            for size in range(1, len(lagging) + 1):
                for dropped in itertools.combinations(lagging, size):
                    yield (leader, frozenset(dropped))

    @action(domain="_leader_and_lagging_set")
    def shrink_isr_lagging(self, s: State, leader: int, dropped: frozenset[int]) -> State | None:
        """The leader drops followers whose last reported LEO is behind its own, all in one
        ISR change (``Partition.maybeShrinkIsr``: each was out of sync for
        ``replica.lag.time.max.ms``; the timers are abstracted, so any non-empty set of
        lagging followers may go at once), then recomputes its HW over the smaller ISR."""
        lrep = s.replicas[leader - 1]
        if leader in dropped or not dropped <= lrep.isr:
            return None
        if any(lrep.remote[f - 1] >= lrep.leo for f in dropped):
            return None
        nxt = self._quorum_isr_update(s, leader, lrep.isr - dropped)
        return None if nxt is None else self._recompute_hw(nxt, leader)

    @action(domain="_leader_and_outsider")
    def expand_isr_caught_up(self, s: State, leader: int, f: int) -> State | None:
        """The leader adds a follower whose reported LEO has reached its HW and, with
        KIP-320's fencing, the start offset of its current epoch (so the follower holds
        everything a previous leader may have committed)."""
        lrep = s.replicas[leader - 1]
        reported = lrep.remote[f - 1]
        if reported < lrep.hw or reported < 0:
            return None
        if self.fenced and reported < self.epoch_start_offset(lrep):
            return None
        return self._quorum_isr_update(s, leader, lrep.isr | {f})

    # --- shared effects ------------------------------------------------------------------

    def _advance_hw(self, s: State, leader: int, rep: Replica, target: int | None = None) -> State:
        hw = rep.hw + 1 if target is None else target
        new = _local(rep, hw=hw)
        pending, acked = s.pending, s.acked
        if pending:
            done = frozenset(w for w in pending if w.leader == leader and w.offset < hw)
            if done:
                pending = pending - done
                if len(rep.isr) >= self.p.min_isr:
                    acked = acked | {Write(w.offset, w.id, "all") for w in done}
                # else: NotEnoughReplicasAfterAppend, the producer sees an error.
        return _with(s, leader, new, pending=pending, acked=acked)

    def _replicate(self, s: State, leader: int, f: int, frep: Replica) -> State | None:
        lrep = s.rep(leader)
        if lrep.leader != leader or lrep.leo <= frep.leo:
            return None
        log = (*frep.log, lrep.log[frep.leo])
        if "follower_hw_unclamped" in self.bugs:
            hw = lrep.hw
        else:
            hw = min(lrep.hw, len(log))
        return _with(s, f, _local(frep, log=log, hw=hw))

    def _become_follower(self, s: State, q: Quorum, r: int, rep: Replica) -> State | None:
        offset = self.truncation_offset(s, r, q.leader)
        log = self._truncate(rep, offset)
        if log is None:
            return None
        new = _local(
            rep,
            log=log,
            hw=min(offset, rep.hw),
            epoch=q.epoch,
            leader=q.leader,
            isr=q.isr,
            flushed=min(rep.flushed, len(log)),
            remote=(),
        )
        return _with(s, r, new, pending=self._drop_pending(s, r))

    # --- the environment: crashes, restarts, flushes (extended model) --------------------

    def _crash_points(self, s: State) -> list[tuple[int, int]]:
        if s.crashes >= self.p.max_crashes:
            return []
        return [
            (r, keep)
            for r in self.ids
            if s.replicas[r - 1].alive
            for keep in range(s.replicas[r - 1].flushed, s.replicas[r - 1].leo + 1)
        ]

    @action(domain="_crash_points", kind=Kind.FAULT)
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
        return _with(s, r, new, crashes=s.crashes + 1, pending=self._drop_pending(s, r))

    @action(domain="_each_replica", kind=Kind.HEAL)
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
        return _with(s, r, new)

    @action(domain="_each_replica")
    def flush(self, s: State, r: int) -> State | None:
        """The broker fsyncs its log (``flush.messages`` / ``flush.ms``, or the OS writing
        back dirty pages): everything appended so far survives a crash."""
        rep = s.rep(r)
        if not rep.alive or rep.flushed >= rep.leo:
            return None
        return _with(s, r, _local(rep, flushed=rep.leo))

    # --- invariants ----------------------------------------------------------------------

    def _holds_prefix(self, s: State, member: int, log: tuple[Record, ...], upto: int) -> bool:
        mlog = s.rep(member).log
        return len(mlog) >= upto and mlog[:upto] == log[:upto]

    @invariant
    def strong_isr(self, s: State) -> bool:
        """No committed data is lost: for every replica that presumes it leads, every member
        of the quorum ISR holds exactly its records below its HW (records below a leader's
        HW have been given to consumers). The property KIP-101, KIP-279 and KIP-320 fixed
        violations of. In the extended model a crashed ISR member is exempt until the
        controller has handled its failure (it cannot serve, nor be elected)."""
        for leader in self.ids:
            rep = s.rep(leader)
            if rep.leader != leader or rep.hw == 0:
                continue
            for m in s.quorum.isr:
                if not s.rep(m).alive:
                    continue
                if not self._holds_prefix(s, m, rep.log, rep.hw):
                    return False
        return True

    @invariant
    def weak_isr(self, s: State) -> bool:
        """The logs of a leader's own ISR agree below its HW: every member of the ISR a
        presumed leader believes in holds exactly its records below its HW."""
        for leader in self.ids:
            rep = s.rep(leader)
            if rep.leader != leader or rep.hw == 0:
                continue
            for m in rep.isr:
                if not s.rep(m).alive:
                    continue
                if not self._holds_prefix(s, m, rep.log, rep.hw):
                    return False
        return True

    @invariant
    def no_divergence_below_hw(self, s: State) -> bool:
        """Replica logs never diverge below the high watermark: any two live replicas hold
        the same records at every offset below both of their HWs. KIP-101's second scenario
        breaks it: after a power loss a replica keeps a record at an offset where the new
        leader wrote another, both below the HW."""
        live = [rep for rep in s.replicas if rep.alive and rep.hw > 0]
        for i, a in enumerate(live):
            for b in live[i + 1 :]:
                upto = min(a.hw, b.hw)
                if a.log[:upto] != b.log[:upto]:
                    return False
        return True

    def _acked_durable(self, s: State, scope: tuple[str, ...]) -> bool:
        if not s.acked:
            return True
        leader = self.true_leader(s)
        if leader == NONE:
            return True
        log = s.rep(leader).log
        for w in s.acked:
            if w.acks in scope and (w.offset >= len(log) or log[w.offset][1] != w.id):
                return False
        return True

    @invariant
    def no_acked_all_write_lost(self, s: State) -> bool:
        """Every write acknowledged under acks=all is in the true leader's log at the offset
        it was acknowledged with, whenever a leader exists ("a committed message will not be
        lost, as long as there is at least one in sync replica alive")."""
        return self._acked_durable(s, ("all",))

    @invariant
    def no_acked_write_lost(self, s: State) -> bool:
        """Every acknowledged write, acks=1 included, is in the true leader's log at its
        offset. acks=1 promises only that the leader appended it, so this one is expected to
        fail with acks=1 and a leader crash."""
        return self._acked_durable(s, ("1", "all"))

    @invariant
    def hw_below_leo(self, s: State) -> bool:
        """Every replica's HW is at most its LEO (a follower caps the leader's HW at its own
        LEO; truncation lowers the HW with the log)."""
        return all(rep.hw <= rep.leo for rep in s.replicas)

    @invariant
    def leader_in_isr(self, s: State) -> bool:
        """The quorum's leader is a member of the quorum's ISR (a leader is in its own ISR;
        a clean election picks from the ISR, an unclean one resets the ISR to the new
        leader)."""
        q = s.quorum
        return q.leader == NONE or q.leader in q.isr

    @invariant
    def one_leader_per_epoch(self, s: State) -> bool:
        """At most one replica presumes leadership in any given leader epoch: each epoch is
        handed out once, by one controller update (the leader epoch is what fences zombie
        leaders, KIP-101/KIP-320)."""
        seen: set[int] = set()
        for r in self.ids:
            rep = s.rep(r)
            if rep.leader == r:
                if rep.epoch in seen:
                    return False
                seen.add(rep.epoch)
        return True

    @transition_property
    def epochs_only_grow(self, before: State, step: Step, after: State) -> bool:
        """Leader epochs only grow: the quorum's, and each live replica's (a replica never
        goes back to an older epoch; a crash loses the in-memory epoch, which is not going
        back)."""
        if after.quorum.epoch < before.quorum.epoch:
            return False
        if step.action == "crash":
            return True
        return all(a.epoch >= b.epoch for a, b in zip(after.replicas, before.replicas, strict=True))

    # --- "sometimes": proofs the model is not vacuous ------------------------------------

    @sometimes_transition
    def leader_change(self, before: State, step: Step, after: State) -> bool:
        """Leadership moves to another replica after a first leader was elected."""
        return (
            before.quorum.epoch != NIL
            and after.quorum.leader not in (NONE, before.quorum.leader)
            and any(self.presumes_leadership(before, r) for r in self.ids)
        )

    @sometimes
    def isr_shrinks_to_one(self, s: State) -> bool:
        """The ISR shrinks to the leader alone (min.insync.replicas matters then)."""
        return len(s.quorum.isr) == 1 and s.quorum.leader != NONE and self.p.replicas > 1

    @sometimes
    def hw_advances(self, s: State) -> bool:
        """Some record is committed: a leader's HW moves past zero."""
        return any(rep.hw > 0 for rep in s.replicas)

    @sometimes
    def acked_write_exists(self, s: State) -> bool:
        """A write is acknowledged to the producer."""
        return bool(s.acked)

    @sometimes_transition
    def truncation_removes_records(self, before: State, step: Step, after: State) -> bool:
        """A replica becoming follower truncates records away."""
        return step.action.startswith("become_follower") and any(
            a.leo < b.leo for a, b in zip(after.replicas, before.replicas, strict=True)
        )

    def applicable_sometimes(self) -> tuple[Any, ...]:
        skip = set()
        if not self.p.extended or self.p.acks == "0":
            skip.add("AckedWriteExists")
        if self.p.replicas < 2:
            skip.update({"IsrShrinksToOne", "TruncationRemovesRecords"})
        return tuple(d for d in self._sometimes if d.name not in skip)

    # --- symmetry ------------------------------------------------------------------------

    def symmetry_permutations(self) -> list[tuple[int, ...]]:
        return all_permutations(self.ids)

    def permute(self, s: State, perm: tuple[int, ...]) -> State:
        def m(r: int) -> int:
            return r if r == NONE else perm[r - 1]

        def mset(ids: frozenset[int]) -> frozenset[int]:
            return frozenset(perm[i - 1] for i in ids)

        def mq(q: Quorum) -> Quorum:
            return Quorum(q.epoch, m(q.leader), mset(q.isr))

        reps: list[Replica | None] = [None] * len(self.ids)
        for r, rep in zip(self.ids, s.replicas, strict=True):
            remote = rep.remote
            if remote:
                moved = [-1] * len(remote)
                for i, value in enumerate(remote):
                    moved[perm[i] - 1] = value
                remote = tuple(moved)
            reps[perm[r - 1] - 1] = Replica(
                rep.log,
                rep.hw,
                rep.epoch,
                m(rep.leader),
                mset(rep.isr),
                rep.flushed,
                rep.alive,
                rep.fence,
                remote,
            )
        return State(
            tuple(reps),  # type: ignore[arg-type]
            mq(s.quorum),
            frozenset(mq(q) for q in s.requests),
            s.next_record_id,
            s.next_epoch,
            s.crashes,
            s.acked,
            frozenset(Pending(m(w.leader), w.offset, w.id) for w in s.pending),
        )

    def _signature(self, s: State, r: int) -> tuple[Any, ...]:
        """What replica ``r`` looks like without naming any replica: invariant under
        renaming, so sorting by it puts any two states of one orbit in the same order."""
        rep = s.rep(r)
        q = s.quorum
        return (
            rep.log,
            rep.hw,
            rep.epoch,
            rep.leader == r,
            rep.leader == NONE,
            r in rep.isr,
            len(rep.isr),
            rep.flushed,
            rep.alive,
            rep.fence,
            q.leader == r,
            r in q.isr,
            sum(1 for w in s.pending if w.leader == r),
            tuple(sorted(rep.remote)),
        )

    def _candidate_perms(self, s: State) -> list[tuple[int, ...]]:
        """The permutations that sort replicas by signature (several only on ties)."""
        signed = sorted((self._signature(s, r), r) for r in self.ids)
        groups: list[list[int]] = []
        previous = None
        for sig, r in signed:
            if groups and sig == previous:
                groups[-1].append(r)
            else:
                groups.append([r])
            previous = sig
        orders: list[list[int]] = [[]]
        for group in groups:
            if len(group) == 1:
                for order in orders:
                    order.append(group[0])
                continue
            orders = [order + list(p) for order in orders for p in itertools.permutations(group)]
        perms = []
        for order in orders:
            perm = [0] * len(self.ids)
            for position, old in enumerate(order):
                perm[old - 1] = position + 1
            perms.append(tuple(perm))
        return perms

    def canonical(self, s: State) -> State:
        """The least signature-sorted image of ``s``. Only the permutations that sort the
        replicas by signature are tried: the set of sorted images is the same for every
        state of an orbit, so its least member is a canonical form."""
        perms = self._candidate_perms(s)
        if len(perms) == 1:
            perm = perms[0]
            return s if perm == self.ids else self.permute(s, perm)
        return min((self.permute(s, p) for p in perms), key=self.sort_key)

    def orbit_size(self, s: State) -> int:
        """n! over the number of renamings that fix ``s``; only renamings within groups of
        equal signatures can fix it."""
        perms = self._candidate_perms(s)
        base = self.permute(s, perms[0])
        fixing = sum(1 for p in perms if self.permute(s, p) == base)
        return math.factorial(len(self.ids)) // fixing

    def sort_key(self, s: State) -> tuple[Any, ...]:
        return (
            tuple(rep.key() for rep in s.replicas),
            s.quorum.key(),
            tuple(sorted(q.key() for q in s.requests)),
            s.next_record_id,
            s.next_epoch,
            s.crashes,
            tuple(sorted((w.offset, w.id, w.acks) for w in s.acked)),
            tuple(sorted((w.leader, w.offset, w.id) for w in s.pending)),
        )

    # --- rendering -----------------------------------------------------------------------

    def columns(self, s: State) -> list[tuple[str, str, str]]:
        """One trace-table row: a column group per replica (log of (epoch, id) records, LEO,
        HW, leader epoch, believed leader, ISR), then the controller's quorum state."""
        cells: list[tuple[str, str, str]] = []
        for r, rep in zip(self.ids, s.replicas, strict=True):
            group = f"replica {r}"
            log = " ".join(f"({e},{i})" for e, i in rep.log) or "-"
            if self.p.extended and self.p.max_crashes:
                if rep.flushed < rep.leo:
                    log += f" [flushed {rep.flushed}]"
                if not rep.alive:
                    log = "DOWN " + log
            cells += [
                (group, "log", log),
                (group, "LEO", str(rep.leo)),
                (group, "HW", str(rep.hw)),
                (group, "epoch", "-" if rep.epoch == NIL else str(rep.epoch)),
                (group, "leader", "-" if rep.leader == NONE else str(rep.leader)),
                (group, "ISR", _set(rep.isr)),
            ]
        cells.append(("quorum", "state", s.quorum.describe()))
        if self.p.extended:
            acked = " ".join(f"{w.offset}:{w.id}/{w.acks}" for w in _sorted_writes(s.acked))
            cells.append(("ghost", "acked", acked or "-"))
        return cells

    def short(self, s: State) -> str:
        parts = []
        for r, rep in zip(self.ids, s.replicas, strict=True):
            log = "".join(f"{e}{i}" for e, i in rep.log)
            lead = "*" if rep.leader == r else ""
            parts.append(f"{r}{lead}:[{log}]hw{rep.hw}e{rep.epoch}")
        return " ".join(parts) + " q" + s.quorum.describe()

    def to_json(self, s: State) -> dict[str, Any]:
        return {
            "replicas": {
                str(r): {
                    "log": [list(rec) for rec in rep.log],
                    "leo": rep.leo,
                    "hw": rep.hw,
                    "epoch": rep.epoch,
                    "leader": rep.leader,
                    "isr": sorted(rep.isr),
                    "flushed": rep.flushed,
                    "alive": rep.alive,
                }
                for r, rep in zip(self.ids, s.replicas, strict=True)
            },
            "quorum": {
                "epoch": s.quorum.epoch,
                "leader": s.quorum.leader,
                "isr": sorted(s.quorum.isr),
            },
            "requests": [
                {"epoch": q.epoch, "leader": q.leader, "isr": sorted(q.isr)}
                for q in sorted(s.requests, key=Quorum.key)
            ],
            "next_record_id": s.next_record_id,
            "next_epoch": s.next_epoch,
            "crashes": s.crashes,
            "acked": [[w.offset, w.id, w.acks] for w in _sorted_writes(s.acked)],
        }


def _sorted_writes(writes: frozenset[Write]) -> list[Write]:
    return sorted(writes, key=lambda w: (w.offset, w.id, w.acks))
