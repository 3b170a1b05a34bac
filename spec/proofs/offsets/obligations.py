"""Proof obligations for the offsets spec, discharged by z3.

For every invariant ``Inv`` of the strengthening ``S`` (the spec's invariants and the
auxiliary ones below) and every action instance ``A``, z3 shows unsatisfiable

    S(s) /\\ guard_A(s) /\\ not Inv(post_A(s))

over unbounded integers (generations, coordinator numbers); a transition property ``P``
gives ``S(s) /\\ guard_A => P(s, post_A)``. ``Init => Inv`` is evaluated on the spec's
initial state. If every obligation is proved, ``S`` holds in every reachable state, for any
number of rebalances, expiries, crashes and coordinator moves.

Three shapes of invariant: of the state; of every OffsetCommit in flight ("every commit in
the network ..."), proved for an arbitrary commit (a fresh witness, so for all of them); and
of every two distinct commits in flight. The assumptions about commits are instantiated at
the witnesses, at the commit an action handles and at the one it sends: instances of a true
universal statement, so what is proved is proved; a counterexample could in principle be
spurious for lack of an instance (none of the reported ones is: each is read back as a spec
state and the pre-state is shown).

Why the strengthening is what it is. A commit can move the group's offset only while it is
*viable*: sent to the current coordinator, in the current generation, by a current member,
with the group not CompletingRebalance (during a load: the generation and members the
coordinator will load). Only the partition's owner in a generation sends commits that can
be viable (``ViableCommitFromOwner``), because SyncGroup gives the partition to one member
and stores that assignment (``StableOwnerIsGroupOwner``, ``StableOwnerIsStoredOwner``,
``GroupOwnerIsStored``), and a consumer sends one commit at a time in a generation
(``OneCommitPerGeneration``: ``commitSync`` waits, ``MatchingStableCommitWaits``); its
offset is behind the sender's position (``InflightBehindSender``) and not behind the group's
committed offset (``ViableCommitAhead``). A consumer starts at the committed offset the
coordinator caches, which is the stored one once loaded (``CacheIsStored``), so the owner's
position is never behind it (``StoredOwnerProgress``). Committing after processing, every
offset below a commit, a position or the committed offset was processed
(``CommittedProcessed``, ``PositionProcessed``, ``InflightProcessed``). Committing before
processing, every record below the committed offset was processed or is held by a consumer
that heard its commit past it accepted (``CommittedHeldOrProcessed``, with
``PositionAcked``, ``WaitingHolds``, ``MatchingCommitAtPosition`` and
``ViableCommitHeldOrProcessed``): only a crash of that consumer breaks it, which is how
committing before processing loses a record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import z3

from spec.offsets.commits import Commit, State
from spec.offsets.params import Params
from spec.proofs.offsets.encoding import (
    C_STABLE,
    C_UNJOINED,
    G_COMPLETING,
    G_DEAD,
    CSym,
    Encoding,
    Sym,
    covered,
    same,
)
from spec.proofs.status import (
    COUNTEREXAMPLE,
    PROVED,
    UNKNOWN,
    Obligation,
    ProofRun,
    cti_lines,
    grid,
    summary_line,
)

StateFn = Callable[[Encoding, Sym], Any]
CommitFn = Callable[[Encoding, Sym, CSym], Any]
PairFn = Callable[[Encoding, Sym, CSym, CSym], Any]


def _and(terms: list[Any]) -> Any:
    return z3.And(*terms) if terms else z3.BoolVal(True)


def _in_range(x: Any, lo: Any, hi: Any) -> Any:
    return z3.And(lo <= x, x <= hi)


def _issued_id(enc: Encoding, s: Sym, slot: int, mid: Any) -> Any:
    """``mid`` is one of the member ids handed out to consumer ``slot`` (1-based)."""
    base = (slot - 1) * enc.k
    return _in_range(mid, base + 1, base + s.issued[slot - 1])


def _some_issued_id(enc: Encoding, s: Sym, mid: Any) -> Any:
    return z3.Or(*[_issued_id(enc, s, slot, mid) for slot in range(1, enc.n + 1)])


# --- the spec's invariants ---------------------------------------------------------------------


def at_least_once(enc: Encoding, s: Sym) -> Any:
    """The spec's ``AtLeastOnce``: every record below the committed offset was processed,
    or is held by a consumer that will process it."""
    committed = covered(s.scom_h, s.scom)
    return _and(
        [
            z3.Implies(
                o < committed,
                z3.Or(
                    s.proc[o],
                    *[z3.And(s.pen_h[c], s.pen[c] == o) for c in range(enc.n)],
                ),
            )
            for o in range(enc.r)
        ]
    )


def committed_within_owner_progress(enc: Encoding, s: Sym) -> Any:
    """The spec's ``CommittedWithinOwnerProgress``: the committed offset is not past the
    current owner's position (the first consumer that is the owner, as the spec reads it)."""
    out: Any = z3.BoolVal(True)
    for c in range(enc.n - 1, -1, -1):
        owner = z3.And(
            s.owns[c],
            s.cmid[c] == s.gowner,
            enc.member(s.gmem, s.cmid[c]),
            s.cgen[c] == s.ggen,
            s.pos_h[c],
        )
        out = z3.If(owner, covered(s.scom_h, s.scom) <= s.pos[c], out)
    return out


# --- auxiliary invariants of the state --------------------------------------------------------


def well_formed(enc: Encoding, s: Sym) -> Any:
    """Auxiliary: every field in its domain, and the spec's structural facts: a consumer's
    member id is one the coordinator handed to it (Kafka's member ids are
    ``client.id-UUID``, unique per client); only a stable member owns the partition
    (SyncGroup gives it), only an owner has a position (OffsetFetch on assignment), a
    polled record is the one before the position, a consumer waits for a commit only after
    it has a position; a loading coordinator (Dead group) has no members and an empty cache."""
    r = enc.r
    terms = []
    for slot in range(1, enc.n + 1):
        c = slot - 1
        terms += [
            _in_range(s.issued[c], 0, enc.k),
            _in_range(s.cst[c], 0, 3),
            z3.Or(s.cmid[c] == 0, _issued_id(enc, s, slot, s.cmid[c])),
            z3.Implies(s.cst[c] != C_UNJOINED, s.cmid[c] != 0),
            s.cgen[c] >= 0,
            z3.Implies(s.owns[c], s.cst[c] == C_STABLE),
            z3.Implies(s.pos_h[c], z3.And(s.owns[c], _in_range(s.pos[c], 0, r))),
            z3.Implies(s.pen_h[c], z3.And(s.pos_h[c], s.pen[c] == s.pos[c] - 1)),
            z3.Implies(s.ack_h[c], _in_range(s.ack[c], 0, r)),
            z3.Implies(s.waiting[c], s.pos_h[c]),
        ]
    for i in enc.ids:
        slot = (i - 1) // enc.k + 1
        issued = i - (slot - 1) * enc.k <= s.issued[slot - 1]
        terms += [
            z3.Implies(s.gmem[i - 1], issued),
            z3.Implies(s.smem[i - 1], issued),
            z3.Implies(s.gjoin[i - 1], s.gmem[i - 1]),
        ]
    terms += [
        _in_range(s.gst, 0, 4),
        s.loading == (s.gst == G_DEAD),
        z3.Implies(
            s.loading,
            z3.And(z3.Not(z3.Or(*s.gmem)), s.gowner == 0, z3.Not(s.cache_h)),
        ),
        z3.Or(s.gowner == 0, _some_issued_id(enc, s, s.gowner)),
        z3.Or(s.sowner == 0, _some_issued_id(enc, s, s.sowner)),
        z3.Implies(s.scom_h, _in_range(s.scom, 0, r)),
        z3.Implies(s.cache_h, _in_range(s.cache, 0, r)),
        s.gcoord >= 0,
        s.cgen_hist >= 0,
    ]
    return _and(terms)


def generations_ordered(enc: Encoding, s: Sym) -> Any:
    """Auxiliary: the generation of the last accepted commit is at most the stored one,
    which is at most the coordinator's (a join phase bumps the generation, SyncGroup stores
    it, a new coordinator loads it); CompletingRebalance is ahead of what is stored (its
    SyncGroup has not come); a stable member's generation is one SyncGroup stored."""
    terms = [
        s.cgen_hist >= 0,
        s.cgen_hist <= s.sgen,
        s.sgen <= s.ggen,
        z3.Implies(s.gst == G_COMPLETING, s.sgen < s.ggen),
    ]
    for c in range(enc.n):
        terms.append(z3.Implies(s.cst[c] == C_STABLE, _in_range(s.cgen[c], 1, s.sgen)))
    return _and(terms)


def _stable_owner_is(enc: Encoding, s: Sym, members: Any, generation: Any, owner: Any) -> Any:
    """Every stable consumer that owns the partition, is one of ``members`` and is in
    ``generation`` is ``owner``."""
    return _and(
        [
            z3.Implies(
                z3.And(
                    s.cst[c] == C_STABLE,
                    s.owns[c],
                    enc.member(members, s.cmid[c]),
                    s.cgen[c] == generation,
                ),
                s.cmid[c] == owner,
            )
            for c in range(enc.n)
        ]
    )


def stable_owner_is_group_owner(enc: Encoding, s: Sym) -> Any:
    """Auxiliary: a stable consumer that owns the partition and is a member of the current
    generation is the member the coordinator assigned it to (SyncGroup's assignment)."""
    return _stable_owner_is(enc, s, s.gmem, s.ggen, s.gowner)


def stable_owner_is_stored_owner(enc: Encoding, s: Sym) -> Any:
    """Auxiliary: the same for the group metadata record in ``__consumer_offsets`` (what a
    new coordinator loads): SyncGroup stores the assignment with the generation."""
    return _stable_owner_is(enc, s, s.smem, s.sgen, s.sowner)


def group_owner_is_stored(enc: Encoding, s: Sym) -> Any:
    """Auxiliary: in the stored generation, the coordinator's owner, while still a member,
    is the stored owner (both come from the same SyncGroup, or the load)."""
    return z3.Implies(
        z3.And(z3.Not(s.loading), s.ggen == s.sgen, enc.member(s.gmem, s.gowner)),
        s.gowner == s.sowner,
    )


def cache_is_stored(enc: Encoding, s: Sym) -> Any:
    """Auxiliary: a loaded coordinator's cache holds the stored committed offset (an
    accepted OffsetCommit is appended with acks=all, then cached;
    ``loadGroupsForPartition`` fills the cache from the log)."""
    return z3.Implies(
        z3.Not(s.loading),
        z3.And(s.cache_h == s.scom_h, z3.Implies(s.scom_h, s.cache == s.scom)),
    )


def stored_owner_progress(enc: Encoding, s: Sym) -> Any:
    """Auxiliary: ``CommittedWithinOwnerProgress`` for the stored assignment (what a new
    coordinator will load): the committed offset is not past the position of the stored
    owner in the stored generation. It is what keeps the spec's invariant through a load."""
    committed = covered(s.scom_h, s.scom)
    return _and(
        [
            z3.Implies(
                z3.And(
                    s.owns[c],
                    s.cmid[c] == s.sowner,
                    enc.member(s.smem, s.cmid[c]),
                    s.cgen[c] == s.sgen,
                    s.pos_h[c],
                ),
                committed <= s.pos[c],
            )
            for c in range(enc.n)
        ]
    )


def acked_not_ahead_of_committed(enc: Encoding, s: Sym) -> Any:
    """Auxiliary: a consumer takes an offset as committed only from OffsetFetch or from the
    successful answer to its OffsetCommit, so what it believes committed is never past what
    ``__consumer_offsets`` holds. (The safety shadow of the spec's liveness property
    ``WorkCommitted``: a consumer that believes more is committed stops committing.)"""
    committed = covered(s.scom_h, s.scom)
    return _and([z3.Implies(s.ack_h[c], s.ack[c] <= committed) for c in range(enc.n)])


def _covered_processed(enc: Encoding, s: Sym, upto: Any, held: Callable[[int], Any]) -> Any:
    return _and([z3.Implies(o < upto, z3.Or(s.proc[o], held(o))) for o in range(enc.r)])


def committed_processed(enc: Encoding, s: Sym) -> Any:
    """Auxiliary (after-process): every record below the committed offset was processed:
    a consumer commits the offset after the last record it processed."""
    return _covered_processed(enc, s, covered(s.scom_h, s.scom), lambda o: z3.BoolVal(False))


def position_processed(enc: Encoding, s: Sym) -> Any:
    """Auxiliary (after-process): every record below a consumer's position was processed,
    or is the one it polled and holds: it starts at the committed offset."""
    terms = []
    for c in range(enc.n):

        def held(o: int, c: int = c) -> Any:
            return z3.And(s.pen_h[c], s.pen[c] == o)

        terms.append(z3.Implies(s.pos_h[c], _covered_processed(enc, s, s.pos[c], held)))
    return _and(terms)


def _held_acked(enc: Encoding, s: Sym, o: Any) -> Any:
    """Some consumer holds record ``o`` and has heard that the commit past it is accepted:
    it will process it (unless it crashes)."""
    return z3.Or(
        *[
            z3.And(s.pen_h[c], s.pen[c] == o, covered(s.ack_h[c], s.ack[c]) > o)
            for c in range(enc.n)
        ]
    )


def committed_held_or_processed(enc: Encoding, s: Sym) -> Any:
    """Auxiliary (before-process): every record below the committed offset was processed, or
    is held by a consumer that heard its commit past the record accepted and so will
    process it: ``AtLeastOnce`` with the holder's knowledge (only a crash breaks it)."""
    return _covered_processed(enc, s, covered(s.scom_h, s.scom), lambda o: _held_acked(enc, s, o))


def position_acked(enc: Encoding, s: Sym) -> Any:
    """Auxiliary (before-process): a consumer polls a record only once its commit up to it is
    acknowledged (it starts where OffsetFetch said the commit is, and processes a record
    only after the commit past it is answered)."""
    terms = []
    for c in range(enc.n):
        acked = covered(s.ack_h[c], s.ack[c])
        terms += [
            z3.Implies(s.pen_h[c], acked >= s.pen[c]),
            z3.Implies(z3.And(s.pos_h[c], z3.Not(s.pen_h[c]), s.pos[c] < enc.r), acked >= s.pos[c]),
        ]
    return _and(terms)


def waiting_holds(enc: Encoding, s: Sym) -> Any:
    """Auxiliary (before-process): a consumer waiting for its commit holds the record the
    commit is past, and has not heard it committed (it cannot process it yet)."""
    return _and(
        [
            z3.Implies(
                s.waiting[c],
                z3.And(s.pen_h[c], covered(s.ack_h[c], s.ack[c]) <= s.pen[c]),
            )
            for c in range(enc.n)
        ]
    )


# --- auxiliary invariants of every commit in flight ----------------------------------------------


def viable(enc: Encoding, s: Sym, q: CSym) -> Any:
    """The commit would be accepted now, or once the new coordinator has loaded."""
    loaded = z3.And(enc.member(s.gmem, q.mid), q.gen == s.ggen)
    loading = z3.And(enc.member(s.smem, q.mid), q.gen == s.sgen)
    return z3.And(q.coord == s.gcoord, s.gst != G_COMPLETING, z3.If(s.loading, loading, loaded))


def inflight_well_formed(enc: Encoding, s: Sym, q: CSym) -> Any:
    """Auxiliary: a commit in flight carries its sender's member id, a generation SyncGroup
    stored, a coordinator that exists, and an offset past 0 within the log."""
    return z3.And(
        _in_range(q.slot, 1, enc.n),
        z3.Or(
            *[
                z3.And(q.slot == slot, _issued_id(enc, s, slot, q.mid))
                for slot in range(1, enc.n + 1)
            ]
        ),
        _in_range(q.gen, 1, s.sgen),
        _in_range(q.coord, 0, s.gcoord),
        _in_range(q.off, 1, enc.r),
    )


def _sender(enc: Encoding, s: Sym, q: CSym, field: str) -> Any:
    return enc.select(getattr(s, field), q.slot)


def _from_sender(enc: Encoding, s: Sym, q: CSym) -> Any:
    """The sender still has the member id and generation the commit carries."""
    return z3.And(_sender(enc, s, q, "cmid") == q.mid, _sender(enc, s, q, "cgen") == q.gen)


def matching_stable_commit_waits(enc: Encoding, s: Sym, q: CSym) -> Any:
    """Auxiliary: a stable consumer still in the generation of its commit in flight waits
    for its answer (``commitSync`` blocks; it drops the wait only when it rejoins, which
    ends the generation for it)."""
    return z3.Implies(
        z3.And(_sender(enc, s, q, "cst") == C_STABLE, _from_sender(enc, s, q)),
        _sender(enc, s, q, "waiting"),
    )


def inflight_behind_sender(enc: Encoding, s: Sym, q: CSym) -> Any:
    """Auxiliary: a commit's offset is not past its sender's position (it committed its
    position, which only moves forward until it rejoins)."""
    return z3.Implies(
        z3.And(_from_sender(enc, s, q), _sender(enc, s, q, "pos_h")),
        q.off <= _sender(enc, s, q, "pos"),
    )


def viable_commit_from_owner(enc: Encoding, s: Sym, q: CSym) -> Any:
    """Auxiliary: a commit that can be accepted comes from the member the partition is
    assigned to (during a load: the stored assignment)."""
    owner = z3.If(s.loading, s.sowner, s.gowner)
    return z3.Implies(viable(enc, s, q), q.mid == owner)


def viable_commit_ahead(enc: Encoding, s: Sym, q: CSym) -> Any:
    """Auxiliary: a commit that can be accepted is not behind the committed offset."""
    return z3.Implies(viable(enc, s, q), covered(s.scom_h, s.scom) <= q.off)


def inflight_processed(enc: Encoding, s: Sym, q: CSym) -> Any:
    """Auxiliary (after-process): every record below a commit's offset was processed."""
    return _covered_processed(enc, s, q.off, lambda o: z3.BoolVal(False))


def matching_commit_at_position(enc: Encoding, s: Sym, q: CSym) -> Any:
    """Auxiliary (before-process): a stable consumer still in its commit's generation
    committed its position, which does not move until the answer (it holds a record)."""
    return z3.Implies(
        z3.And(_sender(enc, s, q, "cst") == C_STABLE, _from_sender(enc, s, q)),
        q.off == _sender(enc, s, q, "pos"),
    )


def viable_commit_held_or_processed(enc: Encoding, s: Sym, q: CSym) -> Any:
    """Auxiliary (before-process): below a commit that can be accepted, every record was
    processed or is held by a consumer that will process it, except the last, which its
    sender holds while it waits (so a crash of the sender is what loses it)."""
    sender_holds = [
        z3.And(
            _sender(enc, s, q, "cst") == C_STABLE,
            _from_sender(enc, s, q),
            _sender(enc, s, q, "pen_h"),
            _sender(enc, s, q, "pen") == o,
        )
        for o in range(enc.r)
    ]
    return z3.Implies(
        viable(enc, s, q),
        _covered_processed(enc, s, q.off, lambda o: z3.Or(_held_acked(enc, s, o), sender_holds[o])),
    )


def one_commit_per_generation(enc: Encoding, s: Sym, a: CSym, b: CSym) -> Any:
    """Auxiliary, of two distinct commits in flight: a consumer has at most one commit in
    flight per member id and generation (it sends the next only after the answer, or in a
    later generation)."""
    return z3.Not(z3.And(a.slot == b.slot, a.mid == b.mid, a.gen == b.gen))


@attrs.frozen
class Invariant:
    name: str
    kind: str
    """``spec`` (the spec's property) or ``aux`` (the strengthening)."""
    shape: str
    """``state``, ``commit`` (of every commit in flight) or ``pair``."""
    fn: Any


SPEC_INVARIANTS = ("AtLeastOnce", "CommittedWithinOwnerProgress")
TRANSITIONS = ("StaleGenerationNeverCommits", "CommittedNeverRegresses")
AFTER_PROCESS_ONLY = frozenset({"CommittedProcessed", "PositionProcessed", "InflightProcessed"})
BEFORE_PROCESS_ONLY = frozenset(
    {
        "CommittedHeldOrProcessed",
        "PositionAcked",
        "WaitingHolds",
        "MatchingCommitAtPosition",
        "ViableCommitHeldOrProcessed",
    }
)


def invariants(params: Params) -> tuple[Invariant, ...]:
    """The strengthening for ``params``: committing after processing, every record below a
    commit, a position or the committed offset was processed; committing before, it was
    processed or is held by a consumer (which only a crash breaks: ``AtLeastOnce`` is
    false)."""
    every = (
        Invariant("AtLeastOnce", "spec", "state", at_least_once),
        Invariant("CommittedWithinOwnerProgress", "spec", "state", committed_within_owner_progress),
        Invariant("WellFormed", "aux", "state", well_formed),
        Invariant("GenerationsOrdered", "aux", "state", generations_ordered),
        Invariant("StableOwnerIsGroupOwner", "aux", "state", stable_owner_is_group_owner),
        Invariant("StableOwnerIsStoredOwner", "aux", "state", stable_owner_is_stored_owner),
        Invariant("GroupOwnerIsStored", "aux", "state", group_owner_is_stored),
        Invariant("CacheIsStored", "aux", "state", cache_is_stored),
        Invariant("StoredOwnerProgress", "aux", "state", stored_owner_progress),
        Invariant("AckedNotAheadOfCommitted", "aux", "state", acked_not_ahead_of_committed),
        Invariant("CommittedProcessed", "aux", "state", committed_processed),
        Invariant("PositionProcessed", "aux", "state", position_processed),
        Invariant("CommittedHeldOrProcessed", "aux", "state", committed_held_or_processed),
        Invariant("PositionAcked", "aux", "state", position_acked),
        Invariant("WaitingHolds", "aux", "state", waiting_holds),
        Invariant("InflightWellFormed", "aux", "commit", inflight_well_formed),
        Invariant("MatchingStableCommitWaits", "aux", "commit", matching_stable_commit_waits),
        Invariant("InflightBehindSender", "aux", "commit", inflight_behind_sender),
        Invariant("ViableCommitFromOwner", "aux", "commit", viable_commit_from_owner),
        Invariant("ViableCommitAhead", "aux", "commit", viable_commit_ahead),
        Invariant("InflightProcessed", "aux", "commit", inflight_processed),
        Invariant("MatchingCommitAtPosition", "aux", "commit", matching_commit_at_position),
        Invariant("ViableCommitHeldOrProcessed", "aux", "commit", viable_commit_held_or_processed),
        Invariant("OneCommitPerGeneration", "aux", "pair", one_commit_per_generation),
    )
    skip = BEFORE_PROCESS_ONLY if params.commit == "after-process" else AFTER_PROCESS_ONLY
    return tuple(i for i in every if i.name not in skip)


def holds(enc: Encoding, inv: Invariant, s: Sym, commits: list[CSym]) -> Any:
    """``inv`` of state ``s``, its commit-shaped forms instantiated at ``commits``."""
    if inv.shape == "state":
        return inv.fn(enc, s)
    if inv.shape == "commit":
        return _and([z3.Implies(s.inflight(q), inv.fn(enc, s, q)) for q in commits])
    pairs = [(a, b) for a in commits for b in commits if a is not b]
    return _and(
        [
            z3.Implies(
                z3.And(s.inflight(a), s.inflight(b), z3.Not(same(a, b))), inv.fn(enc, s, a, b)
            )
            for a, b in pairs
        ]
    )


def holds_on(enc: Encoding, inv: Invariant, state: State) -> bool:
    """``inv`` on a concrete spec state (every commit in flight)."""
    commits = [enc.of_commit(r) for r in sorted(state.inflight, key=Commit.key)]
    return bool(z3.is_true(z3.simplify(holds(enc, inv, enc.of_state(state), commits))))


def stale_generation_never_commits(enc: Encoding, pre: Sym, r: CSym) -> Any:
    """The spec's transition property, for ``handle_commit`` of ``r``."""
    return z3.Implies(
        enc.outcome(pre, r)["ok"],
        z3.And(
            r.mid == pre.gowner,
            enc.member(pre.gmem, r.mid),
            r.gen == pre.ggen,
            r.gen >= pre.cgen_hist,
        ),
    )


def committed_never_regresses(pre: Sym, post: Sym) -> Any:
    """The spec's transition property: the stored committed offset only grows."""
    return covered(post.scom_h, post.scom) >= covered(pre.scom_h, pre.scom)


Result = Obligation
"""One obligation's outcome (``spec.proofs.status.Obligation``)."""
Run = ProofRun
"""The whole proof (``spec.proofs.status.ProofRun``)."""


def prove(params: Params, *, timeout_ms: int = 20_000) -> ProofRun[Params, State]:
    """Every obligation of the strengthening, for every action instance."""
    enc = Encoding(params)
    invs = invariants(params)
    init = enc.init()
    results: list[Obligation[State]] = []
    for inv in invs:
        results.append(
            Result(inv.name, "Init", PROVED if holds_on(enc, inv, init) else COUNTEREXAMPLE)
        )
    pre = enc.fresh("s_")
    w1, w2 = enc.fresh_commit("w1_"), enc.fresh_commit("w2_")
    enabled = []
    for action, arg in enc.instances():
        r = enc.fresh_commit("r_", slot=arg) if action == "handle_commit" else None
        guard, post = enc.step(pre, action, arg, r)
        instances = [w1, w2]
        if r is not None:
            instances.append(r)
        if action == "send_commit":
            instances.append(enc.sent(pre, arg - 1))
        label = enc.label(action, arg)
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*[holds(enc, inv, pre, instances) for inv in invs], guard)
        enabled.append((label, str(solver.check())))
        goals: list[tuple[str, Any]] = []
        for inv in invs:
            if inv.shape == "state":
                goals.append((inv.name, inv.fn(enc, post)))
            elif inv.shape == "commit":
                goals.append((inv.name, holds(enc, inv, post, [w1])))
            else:
                goals.append((inv.name, holds(enc, inv, post, [w1, w2])))
        if r is not None:
            goals.append((TRANSITIONS[0], stale_generation_never_commits(enc, pre, r)))
        goals.append((TRANSITIONS[1], committed_never_regresses(pre, post)))
        for name, goal in goals:
            solver.push()
            solver.add(z3.Not(goal))
            answer = solver.check()
            if answer == z3.unsat:
                results.append(Result(name, label, PROVED))
            elif answer == z3.sat:
                model = _small_model(solver, _numbers(pre, [w1, w2] + ([r] if r else [])))

                def value(t: Any, model: Any = model) -> Any:
                    return model.eval(t, model_completion=True)

                shown = [w1, w2] + ([r] if r is not None else [])
                if action == "send_commit":
                    shown.append(enc.sent(pre, arg - 1))
                cti = (enc.read(pre, value, shown), enc.read(post, value, shown))
                results.append(Result(name, label, COUNTEREXAMPLE, cti))
            else:
                results.append(Result(name, label, UNKNOWN))
            solver.pop()
    return Run(params, tuple(results), tuple(enabled))


def _numbers(s: Sym, commits: list[CSym]) -> list[Any]:
    """The unbounded integers of an obligation: generations and coordinator numbers."""
    terms = [s.ggen, s.sgen, s.cgen_hist, s.gcoord, *s.cgen]
    for q in commits:
        terms += [q.gen, q.coord]
    return terms


def _small_model(solver: z3.Solver, numbers: list[Any]) -> Any:
    """A model with the smallest generations and coordinator numbers tried (so that a
    counterexample reads like a short run), or the one z3 found."""
    for bound in (1, 2, 3, 5, 8):
        solver.push()
        solver.add(*[z3.And(t >= 0, t <= bound) for t in numbers])
        found = solver.check() == z3.sat
        model = solver.model() if found else None
        solver.pop()
        if model is not None:
            return model
    solver.check()
    return solver.model()


def render(run: ProofRun[Params, State]) -> str:
    """The invariant x action table, then every CTI as a two-row trace table."""
    enc = Encoding(run.params)
    table, names = grid(run.results, _short)
    p = run.params
    lines = [
        f"kmodel prove offsets --commit {p.commit} --offset-reset {p.reset}: {p.members} "
        f"consumers, {p.records} records, {p.max_member_ids} member ids per consumer; every "
        "generation, coordinator and number of faults"
        + (f", bugs {', '.join(sorted(p.bugs))}" if p.bugs else ""),
        "",
    ]
    lines += table
    kinds = {i.name: i.kind for i in invariants(p)}
    spec_names = [n for n in names if kinds.get(n, "spec") == "spec"]
    lines += [
        "",
        "columns: action(slot) or action(member id); join = join_group, complete = "
        "complete_join, sync = sync_group, fetch = fetch_offset, send = send_commit, handle = "
        "handle_commit, moves = coordinator_moves, load = load_offsets",
        f"the spec's properties: {', '.join(spec_names)}; the rest is the strengthening",
        summary_line(run.results),
    ]
    lines += cti_lines(
        enc.spec, run.results, "; the commits shown are those the obligation is about"
    )
    return "\n".join(lines) + "\n"


def _short(label: str) -> str:
    for long, short in (
        ("join_group", "join"),
        ("complete_join", "complete"),
        ("sync_group", "sync"),
        ("fetch_offset", "fetch"),
        ("send_commit", "send"),
        ("handle_commit", "handle"),
        ("coordinator_moves", "moves"),
        ("load_offsets", "load"),
    ):
        label = label.replace(long, short)
    return label
