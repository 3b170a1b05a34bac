"""Invariants over the encoded state: the spec's own, and the auxiliary ones its proof needs.

Each invariant is a function ``(enc, state) -> term`` written against the encoding's backend,
so it can be evaluated on concrete states (the tests check that every invariant holds on
every reachable state of small configurations, and that the spec's invariants restated here
agree with ``spec.replication``'s on every reachable state, violating ones included) and
proved with z3.

Vocabulary: a replica *presumes leadership* when it believes it is the leader; it *follows*
a leader ``l`` (KIP-320) when both are in ``l``'s current epoch and it believes ``l`` leads;
``agree(a, b, n)`` says both logs hold the same first ``n`` records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from spec.proofs.encoding import NIL, NONE, Encoding, SymState

InvFn = Callable[[Encoding, SymState], Any]


@attrs.frozen
class Inv:
    name: str
    fn: InvFn
    doc: str
    kind: str
    """``spec``: restates an invariant of ``spec.replication`` (same name); ``aux``: an
    auxiliary invariant of the strengthening; ``type``: well-formedness."""
    extended_only: bool = False

    def __call__(self, enc: Encoding, st: SymState) -> Any:
        return self.fn(enc, st)


REGISTRY: dict[str, Inv] = {}


def _register(kind: str, *, extended_only: bool = False) -> Callable[[InvFn], InvFn]:
    def mark(fn: InvFn) -> InvFn:
        name = "".join(part.capitalize() for part in fn.__name__.split("_"))
        doc = " ".join((fn.__doc__ or "").split())
        REGISTRY[name] = Inv(name, fn, doc, kind, extended_only)
        return fn

    return mark


def _all(enc: Encoding, items: Any, body: Callable[..., Any]) -> Any:
    return enc.ops.And(*[body(*item) if isinstance(item, tuple) else body(item) for item in items])


def _pairs(enc: Encoding) -> list[tuple[int, int]]:
    """Every ordered pair of replica ids, (1, 1) included."""
    return [(a, b) for a in enc.ids for b in enc.ids]


def _distinct_pairs(enc: Encoding) -> list[tuple[int, int]]:
    """Every ordered pair of two different replica ids, in `_pairs` order."""
    return [(a, b) for a, b in _pairs(enc) if a != b]


def _unordered_pairs(enc: Encoding) -> list[tuple[int, int]]:
    """Every pair of two different replica ids once, the smaller first."""
    return [(a, b) for a, b in _pairs(enc) if a < b]


# --- well-formedness ---------------------------------------------------------------------


@_register("type")
def type_ok(enc: Encoding, st: SymState) -> Any:
    """Every field has a value of its type: LEO in 0..L, HW >= 0, leader ids are replicas or
    NONE, epochs >= NIL, counters >= 0, requests name a replica or NONE."""
    ops = enc.ops

    def leader_ok(v: Any) -> Any:
        return ops.Or(v == NONE, enc.is_replica(v))

    parts = [
        leader_ok(st.q_leader),
        st.q_epoch >= NIL,
        st.next_epoch >= 0,
        st.next_id >= 0,
        ops.forall(st.req_in, lambda e: leader_ok(ops.select(st.req_leader, e))),
    ]
    for rep in st.reps:
        parts += [rep.leo >= 0, rep.leo <= enc.L, rep.hw >= 0, leader_ok(rep.leader)]
        parts.append(rep.epoch >= NIL)
    if enc.c.extended:
        parts.append(
            ops.forall(st.pend_in, lambda i: enc.is_replica(ops.select(st.pend_leader, i)))
        )
    return ops.And(*parts)


# --- the spec's invariants ---------------------------------------------------------------


@_register("spec")
def strong_isr(enc: Encoding, st: SymState) -> Any:
    """No committed data is lost: for every replica presuming leadership, every member of
    the quorum ISR holds exactly its records below its HW."""
    ops = enc.ops
    return _all(
        enc,
        _pairs(enc),
        lambda ld, m: ops.Implies(
            ops.And(enc.presumes(st, ld), enc.rep(st, ld).hw != 0, st.q_isr[m - 1]),
            enc.agree(enc.rep(st, m), enc.rep(st, ld), enc.rep(st, ld).hw),
        ),
    )


@_register("spec")
def weak_isr(enc: Encoding, st: SymState) -> Any:
    """Every member of the ISR a presumed leader believes in holds exactly its records below
    its HW."""
    ops = enc.ops
    return _all(
        enc,
        _pairs(enc),
        lambda ld, m: ops.Implies(
            ops.And(enc.presumes(st, ld), enc.rep(st, ld).hw != 0, enc.rep(st, ld).isr[m - 1]),
            enc.agree(enc.rep(st, m), enc.rep(st, ld), enc.rep(st, ld).hw),
        ),
    )


@_register("spec")
def no_divergence_below_hw(enc: Encoding, st: SymState) -> Any:
    """Any two replicas hold the same records below both of their HWs."""
    ops = enc.ops
    out = []
    for a, b in _unordered_pairs(enc):
        ra, rb = enc.rep(st, a), enc.rep(st, b)
        upto = enc.min(ra.hw, rb.hw)
        # the spec compares the slices log[:upto]: their lengths, then their records
        la, lb = enc.min(upto, ra.leo), enc.min(upto, rb.leo)
        same = ops.And(
            la == lb,
            *[ops.Implies(k < la, enc.same_record(ra, rb, k)) for k in range(enc.L)],
        )
        out.append(ops.Implies(ops.And(ra.hw > 0, rb.hw > 0), same))
    return ops.And(*out)


@_register("spec")
def hw_below_leo(enc: Encoding, st: SymState) -> Any:
    """Every replica's HW is at most its LEO."""
    return enc.ops.And(*[rep.hw <= rep.leo for rep in st.reps])


@_register("spec")
def leader_in_isr(enc: Encoding, st: SymState) -> Any:
    """The quorum's leader is a member of the quorum's ISR."""
    ops = enc.ops
    return ops.Or(st.q_leader == NONE, enc.pick(st.q_leader, lambda r: st.q_isr[r - 1]))


@_register("spec")
def one_leader_per_epoch(enc: Encoding, st: SymState) -> Any:
    """At most one replica presumes leadership in any leader epoch."""
    ops = enc.ops
    out = []
    for a in enc.ids:
        for b in enc.ids:
            if a < b:
                out.append(
                    ops.Not(
                        ops.And(
                            enc.presumes(st, a),
                            enc.presumes(st, b),
                            enc.rep(st, a).epoch == enc.rep(st, b).epoch,
                        )
                    )
                )
    return ops.And(*out)


def _true_leader_holds_acked(enc: Encoding, st: SymState) -> Any:
    ops = enc.ops

    def holds(leader: int) -> Any:
        rep = enc.rep(st, leader)
        return ops.forall(
            st.acked_in,
            lambda i: ops.And(
                ops.select(st.acked_offset, i) < rep.leo,
                enc.rec_id(rep, ops.select(st.acked_offset, i)) == i,
            ),
        )

    return _all(enc, enc.ids, lambda t: ops.Implies(enc.true_leader(st, t), holds(t)))


@_register("spec", extended_only=True)
def no_acked_all_write_lost(enc: Encoding, st: SymState) -> Any:
    """Every write acknowledged under acks=all is in the true leader's log at its offset,
    whenever there is a true leader."""
    if enc.c.acked_kind != "all":
        return enc.ops.lit(True)
    return _true_leader_holds_acked(enc, st)


@_register("spec", extended_only=True)
def no_acked_write_lost(enc: Encoding, st: SymState) -> Any:
    """Every acknowledged write (acks=1 included) is in the true leader's log at its
    offset."""
    return _true_leader_holds_acked(enc, st)


# --- auxiliary invariants ----------------------------------------------------------------


@_register("aux")
def request_epochs(enc: Encoding, st: SymState) -> Any:
    """Every request's epoch was handed out: 0 <= e < next_epoch (epochs are never reused;
    this is also what makes the by-epoch request map exact)."""
    ops = enc.ops
    return ops.forall(st.req_in, lambda e: ops.And(e >= 0, e < st.next_epoch))


@_register("aux")
def quorum_is_latest_request(enc: Encoding, st: SymState) -> Any:
    """The quorum state is the initial one (no epoch yet, every replica in the ISR) or it
    carries the last epoch handed out, with the leader of that epoch's request."""
    ops = enc.ops
    initial = ops.And(st.q_epoch == NIL, st.q_leader == NONE, st.next_epoch == 0, *st.q_isr)
    latest = ops.And(
        st.q_epoch == st.next_epoch - 1,
        st.q_epoch >= 0,
        ops.select(st.req_in, st.q_epoch),
        ops.select(st.req_leader, st.q_epoch) == st.q_leader,
    )
    return ops.Or(initial, latest)


@_register("aux")
def replica_epoch_from_request(enc: Encoding, st: SymState) -> Any:
    """A replica knows no leader and no epoch, or its epoch is a request's and it believes
    that request's leader (replicas take epoch and leader from one LeaderAndIsr)."""
    ops = enc.ops
    return _all(
        enc,
        enc.ids,
        lambda r: ops.Or(
            ops.And(enc.rep(st, r).leader == NONE, enc.rep(st, r).epoch == NIL),
            ops.And(
                enc.is_replica(enc.rep(st, r).leader),
                ops.select(st.req_in, enc.rep(st, r).epoch),
                ops.select(st.req_leader, enc.rep(st, r).epoch) == enc.rep(st, r).leader,
            ),
        ),
    )


@_register("aux")
def request_leader_in_isr(enc: Encoding, st: SymState) -> Any:
    """Every request's leader (if any) is in that request's ISR."""
    ops = enc.ops
    return ops.forall(
        st.req_in,
        lambda e: ops.Or(
            ops.select(st.req_leader, e) == NONE,
            enc.pick(ops.select(st.req_leader, e), lambda r: ops.select(st.req_isr[r - 1], e)),
        ),
    )


@_register("aux")
def leader_in_own_isr(enc: Encoding, st: SymState) -> Any:
    """A replica presuming leadership is in its own ISR."""
    ops = enc.ops
    return _all(enc, enc.ids, lambda r: ops.Implies(enc.presumes(st, r), enc.rep(st, r).isr[r - 1]))


@_register("aux")
def true_leader_isr_is_quorum_isr(enc: Encoding, st: SymState) -> Any:
    """The true leader's ISR is the quorum's ISR (it changes both together)."""
    ops = enc.ops
    return _all(
        enc,
        enc.ids,
        lambda t: ops.Implies(
            enc.true_leader(st, t),
            ops.And(*[a == b for a, b in zip(enc.rep(st, t).isr, st.q_isr, strict=True)]),
        ),
    )


@_register("aux")
def record_epochs(enc: Encoding, st: SymState) -> Any:
    """Every record's epoch is at least 0 and at most its replica's current epoch, and along
    a log record epochs never decrease."""
    ops = enc.ops
    out = []
    for rep in st.reps:
        for k in range(enc.L):
            ep = rep.log_ep[k]
            out.append(ops.Implies(k < rep.leo, ops.And(ep >= 0, ep <= rep.epoch)))
            if k + 1 < enc.L:
                out.append(ops.Implies(k + 1 < rep.leo, ep <= rep.log_ep[k + 1]))
    return ops.And(*out)


@_register("aux")
def record_ids(enc: Encoding, st: SymState) -> Any:
    """Every record id was handed out (0 <= id < next_id), and one id is one write: two
    records with the same id sit at the same offset with the same epoch."""
    ops = enc.ops
    out = []
    for rep in st.reps:
        for k in range(enc.L):
            out.append(
                ops.Implies(k < rep.leo, ops.And(rep.log_id[k] >= 0, rep.log_id[k] < st.next_id))
            )
    for a in st.reps:
        for b in st.reps:
            for j in range(enc.L):
                for k in range(enc.L):
                    if a is b and j >= k:
                        continue
                    same_id = ops.And(j < a.leo, k < b.leo, a.log_id[j] == b.log_id[k])
                    if j == k:
                        out.append(ops.Implies(same_id, a.log_ep[j] == b.log_ep[k]))
                    else:
                        out.append(ops.Not(same_id))
    return ops.And(*out)


@_register("aux")
def log_matching(enc: Encoding, st: SymState) -> Any:
    """Two logs with records of the same epoch at an offset agree up to and including that
    offset (each epoch has one writer, whose log only grows while it leads in it, and
    followers copy a prefix of it)."""
    ops = enc.ops
    out = []
    for a, b in _unordered_pairs(enc):
        ra, rb = enc.rep(st, a), enc.rep(st, b)
        for k in range(enc.L):
            out.append(
                ops.Implies(
                    ops.And(k < ra.leo, k < rb.leo, ra.log_ep[k] == rb.log_ep[k]),
                    enc.agree(ra, rb, k + 1),
                )
            )
    return ops.And(*out)


@_register("aux")
def leader_holds_its_epoch(enc: Encoding, st: SymState) -> Any:
    """While a replica presumes leadership in epoch e, every record of epoch e, on any
    replica, is in its log at the same offset."""
    ops = enc.ops
    out = []
    for ld, r in _distinct_pairs(enc):
        lrep, rrep = enc.rep(st, ld), enc.rep(st, r)
        for k in range(enc.L):
            out.append(
                ops.Implies(
                    ops.And(enc.presumes(st, ld), k < rrep.leo, rrep.log_ep[k] == lrep.epoch),
                    ops.And(k < lrep.leo, enc.same_record(rrep, lrep, k)),
                )
            )
    return ops.And(*out)


@_register("aux")
def follower_is_prefix(enc: Encoding, st: SymState) -> Any:
    """KIP-320: a follower in its leader's epoch holds a prefix of the leader's log (it
    truncated to where they agree, and since then only copied the leader's records)."""
    ops = enc.ops
    return _all(
        enc,
        _distinct_pairs(enc),
        lambda ld, f: ops.Implies(
            enc.following(st, ld, f), enc.prefix_of(enc.rep(st, f), enc.rep(st, ld))
        ),
    )


@_register("aux")
def follower_leader_reached_epoch(enc: Encoding, st: SymState) -> Any:
    """KIP-320: the leader a follower believes in has reached the follower's epoch (a
    follower only takes an epoch its leader already leads in)."""
    ops = enc.ops
    return _all(
        enc,
        _distinct_pairs(enc),
        lambda ld, f: ops.Implies(
            enc.rep(st, f).leader == ld, enc.rep(st, ld).epoch >= enc.rep(st, f).epoch
        ),
    )


@_register("aux")
def committed_everywhere(enc: Encoding, st: SymState) -> Any:
    """Every replica's committed prefix (its records below its HW) is held by every member
    of the quorum ISR: StrongIsr for every replica, leaders and followers alike (a follower
    that becomes leader keeps its HW)."""
    ops = enc.ops
    return _all(
        enc,
        _pairs(enc),
        lambda x, m: ops.Implies(
            st.q_isr[m - 1], enc.agree(enc.rep(st, m), enc.rep(st, x), enc.rep(st, x).hw)
        ),
    )


@_register("aux")
def epoch_records_committed_by_leader(enc: Encoding, st: SymState) -> Any:
    """A follower in its leader's epoch has no committed record of that epoch above the
    leader's HW (a follower's HW comes from the leader's, except what it kept from older
    epochs when it truncated)."""
    ops = enc.ops
    out = []
    for ld, x in _distinct_pairs(enc):
        lrep, xrep = enc.rep(st, ld), enc.rep(st, x)
        premise = ops.And(enc.presumes(st, ld), xrep.leader == ld, xrep.epoch == lrep.epoch)
        for k in range(enc.L):
            out.append(
                ops.Implies(
                    ops.And(premise, k < xrep.hw, k < xrep.leo, xrep.log_ep[k] == lrep.epoch),
                    k < lrep.hw,
                )
            )
    return ops.And(*out)


def _live(enc: Encoding, st: SymState, ld: int) -> Any:
    """``ld`` presumes leadership and no member of its ISR has moved past its epoch."""
    ops = enc.ops
    lrep = enc.rep(st, ld)
    return ops.And(
        enc.presumes(st, ld),
        *[ops.Implies(lrep.isr[f - 1], enc.rep(st, f).epoch <= lrep.epoch) for f in enc.ids],
    )


@_register("aux")
def live_leader_covers_quorum_isr(enc: Encoding, st: SymState) -> Any:
    """While no member of a presumed leader's ISR has moved past its epoch, the quorum ISR
    is within that ISR (the quorum ISR only grows through a true leader of a later epoch,
    and that leader is a member that moved on)."""
    ops = enc.ops
    return _all(
        enc,
        enc.ids,
        lambda ld: ops.Implies(
            _live(enc, st, ld),
            ops.And(*[ops.Implies(st.q_isr[m - 1], enc.rep(st, ld).isr[m - 1]) for m in enc.ids]),
        ),
    )


@_register("aux")
def quorum_isr_in_later_requests(enc: Encoding, st: SymState) -> Any:
    """A quorum ISR member that has not reached a request's epoch is in that request's ISR
    (members added after a request was sent reached a later epoch to be added)."""
    ops = enc.ops
    return _all(
        enc,
        enc.ids,
        lambda m: ops.Implies(
            st.q_isr[m - 1],
            ops.forall(
                st.req_in,
                lambda e: ops.Implies(e > enc.rep(st, m).epoch, ops.select(st.req_isr[m - 1], e)),
            ),
        ),
    )


@_register("aux")
def later_leaders_hold_commits(enc: Encoding, st: SymState) -> Any:
    """A presumed leader whose epoch some quorum ISR member has not reached holds every
    replica's committed prefix (nothing can be committed without that member)."""
    ops = enc.ops
    out = []
    for ld in enc.ids:
        lrep = enc.rep(st, ld)
        lagging = ops.Or(
            *[ops.And(st.q_isr[m - 1], enc.rep(st, m).epoch < lrep.epoch) for m in enc.ids]
        )
        for x in enc.ids:
            if x == ld:
                continue
            out.append(
                ops.Implies(
                    ops.And(enc.presumes(st, ld), lagging),
                    enc.agree(lrep, enc.rep(st, x), enc.rep(st, x).hw),
                )
            )
    return ops.And(*out)


@_register("aux")
def live_leader_covers_later_requests(enc: Encoding, st: SymState) -> Any:
    """While no member of a presumed leader's ISR has moved past its epoch, every later
    request's ISR is within that ISR (the controller only ever sends a subset of the quorum
    ISR, and the quorum ISR is within it, by LiveLeaderCoversQuorumIsr)."""
    ops = enc.ops
    return _all(
        enc,
        enc.ids,
        lambda ld: ops.Implies(
            _live(enc, st, ld),
            ops.forall(
                st.req_in,
                lambda e: ops.Implies(
                    e > enc.rep(st, ld).epoch,
                    ops.And(
                        *[
                            ops.Implies(
                                ops.select(st.req_isr[m - 1], e), enc.rep(st, ld).isr[m - 1]
                            )
                            for m in enc.ids
                        ]
                    ),
                ),
            ),
        ),
    )


@_register("aux")
def quorum_isr_as_sent(enc: Encoding, st: SymState) -> Any:
    """Until the leader of the quorum's epoch takes that epoch, the quorum ISR is the ISR
    the controller sent (only that epoch's true leader changes it in between)."""
    ops = enc.ops
    took = ops.And(
        st.q_leader != NONE, enc.pick(st.q_leader, lambda r: enc.rep(st, r).epoch == st.q_epoch)
    )
    sent = enc.req_isr_at(st, st.q_epoch)
    return ops.Implies(
        ops.And(st.q_epoch != NIL, ops.Not(took)),
        ops.And(*[a == b for a, b in zip(st.q_isr, sent, strict=True)]),
    )


@_register("aux")
def record_epoch_leader_reached(enc: Encoding, st: SymState) -> Any:
    """A record of epoch e exists only if e was handed out to a leader that has reached e
    (the leader of e writes e's records, and epochs only grow)."""
    ops = enc.ops
    out = []
    for rep in st.reps:
        for k in range(enc.L):
            e = rep.log_ep[k]
            leader = ops.select(st.req_leader, e)
            out.append(
                ops.Implies(
                    k < rep.leo,
                    ops.And(
                        ops.select(st.req_in, e),
                        enc.is_replica(leader),
                        enc.pick(leader, _reached(enc, st, e)),
                    ),
                )
            )
    return ops.And(*out)


def _reached(enc: Encoding, st: SymState, e: Any) -> Callable[[int], Any]:
    def check(r: int) -> Any:
        return enc.rep(st, r).epoch >= e

    return check


def _someone_reached(enc: Encoding, st: SymState, e: Any) -> Any:
    """Some member of request e's ISR has reached epoch e."""
    ops = enc.ops
    return ops.Or(
        *[ops.And(ops.select(st.req_isr[f - 1], e), enc.rep(st, f).epoch >= e) for f in enc.ids]
    )


@_register("aux")
def isr_growth_needs_a_leader(enc: Encoding, st: SymState) -> Any:
    """An ISR only grows through a true leader: a replica in a later request's ISR, or in
    the quorum ISR, but not in request e's ISR, was added after e was sent, by a leader of
    an epoch >= e who was in e's ISR (or was added itself the same way)."""
    ops = enc.ops

    def later_request(e: Any) -> Any:
        return ops.forall(
            st.req_in,
            lambda e2: ops.Implies(
                e2 > e,
                ops.Or(
                    _someone_reached(enc, st, e),
                    ops.And(
                        *[
                            ops.Implies(
                                ops.select(st.req_isr[m - 1], e2),
                                ops.select(st.req_isr[m - 1], e),
                            )
                            for m in enc.ids
                        ]
                    ),
                ),
            ),
        )

    def quorum(e: Any) -> Any:
        return ops.Or(
            _someone_reached(enc, st, e),
            ops.And(
                *[ops.Implies(st.q_isr[m - 1], ops.select(st.req_isr[m - 1], e)) for m in enc.ids]
            ),
        )

    return ops.forall(st.req_in, lambda e: ops.And(later_request(e), quorum(e)))


@_register("aux")
def isr_additions_followed(enc: Encoding, st: SymState) -> Any:
    """A member of a presumed leader's ISR, or of the quorum ISR, that was not in the ISR
    the controller sent with that epoch was added by the leader while following it in that
    epoch, so it has reached that epoch."""
    ops = enc.ops
    out = []
    for ld in enc.ids:
        lrep = enc.rep(st, ld)
        for m in enc.ids:
            out.append(
                ops.Implies(
                    ops.And(
                        enc.presumes(st, ld),
                        lrep.isr[m - 1],
                        ops.Not(ops.select(st.req_isr[m - 1], lrep.epoch)),
                    ),
                    enc.rep(st, m).epoch >= lrep.epoch,
                )
            )
    for m in enc.ids:
        out.append(
            ops.Implies(
                ops.And(
                    st.q_epoch != NIL,
                    st.q_isr[m - 1],
                    ops.Not(ops.select(st.req_isr[m - 1], st.q_epoch)),
                ),
                enc.rep(st, m).epoch >= st.q_epoch,
            )
        )
    return ops.And(*out)


def _committed_by(enc: Encoding, st: SymState, x: int, e: Any, *, strict: bool) -> Any:
    """A witness that replica ``x``'s committed prefix was committed in an epoch <= ``e``
    (< ``e`` if ``strict``): ``x``'s own epoch is, or ``x`` presumes leadership and a member
    of its ISR lags at such an epoch (nothing can be committed in an epoch while an ISR
    member has not reached it, and a lagging member was never dropped and re-added)."""
    ops = enc.ops

    def early(epoch: Any) -> Any:
        return epoch < e if strict else epoch <= e

    xrep = enc.rep(st, x)
    return ops.Or(
        early(xrep.epoch),
        ops.And(
            enc.presumes(st, x),
            ops.Or(*[ops.And(xrep.isr[w - 1], early(enc.rep(st, w).epoch)) for w in enc.ids]),
        ),
    )


@_register("aux")
def leader_completeness(enc: Encoding, st: SymState) -> Any:
    """A presumed leader holds every committed prefix that was committed in an epoch up to
    its own (what was committed before it took its epoch, it was elected with, or fetched
    from the stale leader that committed it; in its epoch, only it commits)."""
    ops = enc.ops
    return _all(
        enc,
        _distinct_pairs(enc),
        lambda ld, x: ops.Implies(
            ops.And(
                enc.presumes(st, ld),
                _committed_by(enc, st, x, enc.rep(st, ld).epoch, strict=False),
            ),
            enc.agree(enc.rep(st, ld), enc.rep(st, x), enc.rep(st, x).hw),
        ),
    )


@_register("aux")
def request_isr_holds_older_commits(enc: Encoding, st: SymState) -> Any:
    """A member of a request's ISR holds every prefix committed in an epoch before the
    request's (it was in the quorum ISR when the request was sent; whoever commits in an
    older epoch since has it in its ISR; and when it truncates, it is against a leader that
    holds those commits too)."""
    ops = enc.ops

    def body(e: Any) -> Any:
        out = []
        for m, x in _distinct_pairs(enc):
            out.append(
                ops.Implies(
                    ops.And(
                        ops.select(st.req_isr[m - 1], e),
                        _committed_by(enc, st, x, e, strict=True),
                    ),
                    enc.agree(enc.rep(st, m), enc.rep(st, x), enc.rep(st, x).hw),
                )
            )
        return ops.And(*out)

    return ops.forall(st.req_in, body)


@_register("aux", extended_only=True)
def ghost_ids(enc: Encoding, st: SymState) -> Any:
    """Ghost writes carry ids that were handed out, and a write is pending or acknowledged,
    not both."""
    ops = enc.ops
    return ops.And(
        ops.forall(st.pend_in, lambda i: ops.And(i >= 0, i < st.next_id)),
        ops.forall(st.acked_in, lambda i: ops.And(i >= 0, i < st.next_id)),
        ops.forall(st.pend_in, lambda i: ops.Not(ops.select(st.acked_in, i))),
    )


@_register("aux", extended_only=True)
def pending_in_leader_log(enc: Encoding, st: SymState) -> Any:
    """A pending acks=all write is in its leader's log at its offset, written in the
    leader's current epoch, and its leader presumes leadership (a leader that steps down or
    takes a new epoch fails its purgatory)."""
    ops = enc.ops

    def ok(i: Any) -> Any:
        leader = ops.select(st.pend_leader, i)
        offset = ops.select(st.pend_offset, i)
        return enc.pick(
            leader,
            lambda r: ops.And(
                enc.presumes(st, r),
                offset >= 0,
                offset < enc.rep(st, r).leo,
                enc.rec_id(enc.rep(st, r), offset) == i,
                enc.rec_ep(enc.rep(st, r), offset) == enc.rep(st, r).epoch,
            ),
        )

    return ops.forall(st.pend_in, ok)


def _holds_write(enc: Encoding, rep: Any, offset: Any, i: Any) -> Any:
    return enc.ops.And(offset >= 0, offset < rep.leo, enc.rec_id(rep, offset) == i)


@_register("aux", extended_only=True)
def acked_below_writer_hw(enc: Encoding, st: SymState) -> Any:
    """An acknowledged write of a presumed leader's own epoch is below its HW: only the
    leader that wrote a record acknowledges it (its purgatory), when its HW passes it, and
    its HW only grows while it leads in that epoch."""
    ops = enc.ops
    out = []
    for ld in enc.ids:
        lrep = enc.rep(st, ld)

        def ok(i: Any, lrep: Any = lrep, ld: int = ld) -> Any:
            offset = ops.select(st.acked_offset, i)
            return ops.Implies(
                ops.And(
                    enc.presumes(st, ld),
                    _holds_write(enc, lrep, offset, i),
                    enc.rec_ep(lrep, offset) == lrep.epoch,
                ),
                offset < lrep.hw,
            )

        out.append(ops.forall(st.acked_in, ok))
    return ops.And(*out)


@_register("aux", extended_only=True)
def acked_leader_completeness(enc: Encoding, st: SymState) -> Any:
    """A presumed leader holds every acknowledged write of an epoch up to its own (it was
    committed in its record's epoch, before the leader took a later one)."""
    ops = enc.ops
    out = []
    for ld, x in _distinct_pairs(enc):
        lrep, xrep = enc.rep(st, ld), enc.rep(st, x)

        def ok(i: Any, lrep: Any = lrep, xrep: Any = xrep, ld: int = ld) -> Any:
            offset = ops.select(st.acked_offset, i)
            return ops.Implies(
                ops.And(
                    enc.presumes(st, ld),
                    _holds_write(enc, xrep, offset, i),
                    enc.rec_ep(xrep, offset) <= lrep.epoch,
                ),
                _holds_write(enc, lrep, offset, i),
            )

        out.append(ops.forall(st.acked_in, ok))
    return ops.And(*out)


@_register("aux", extended_only=True)
def acked_in_request_isr(enc: Encoding, st: SymState) -> Any:
    """Every member of a request's ISR holds every acknowledged write of an earlier epoch
    (the request was sent from a quorum ISR that held it, and a member truncates only
    against leaders that hold it)."""
    ops = enc.ops

    def body(e: Any) -> Any:
        out = []
        for m in enc.ids:
            mrep = enc.rep(st, m)
            for x in enc.ids:
                xrep = enc.rep(st, x)

                def ok(i: Any, mrep: Any = mrep, xrep: Any = xrep, m: int = m) -> Any:
                    offset = ops.select(st.acked_offset, i)
                    return ops.Implies(
                        ops.And(
                            ops.select(st.req_isr[m - 1], e),
                            _holds_write(enc, xrep, offset, i),
                            enc.rec_ep(xrep, offset) < e,
                        ),
                        _holds_write(enc, mrep, offset, i),
                    )

                out.append(ops.forall(st.acked_in, ok))
        return ops.And(*out)

    return ops.forall(st.req_in, body)


@_register("aux", extended_only=True)
def acked_in_quorum_isr(enc: Encoding, st: SymState) -> Any:
    """Every acknowledged write is held, at its offset, by every member of the quorum ISR."""
    ops = enc.ops

    def ok(i: Any) -> Any:
        offset = ops.select(st.acked_offset, i)
        return ops.And(
            offset >= 0,
            *[
                ops.Implies(
                    st.q_isr[m - 1],
                    ops.And(offset < enc.rep(st, m).leo, enc.rec_id(enc.rep(st, m), offset) == i),
                )
                for m in enc.ids
            ],
        )

    return ops.forall(st.acked_in, ok)


def for_config(enc: Encoding, names: list[str] | None = None) -> list[Inv]:
    """The invariants that apply to the encoding's configuration (all, or ``names``)."""
    chosen = [REGISTRY[n] for n in names] if names is not None else list(REGISTRY.values())
    return [inv for inv in chosen if enc.c.extended or not inv.extended_only]
