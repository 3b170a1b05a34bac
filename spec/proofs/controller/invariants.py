"""Invariants over the encoded controller state: the spec's own, restated, and the auxiliary
ones its proof needs (the strengthening).

Each is a function ``(enc, state) -> term`` written against the encoding's backend, so it
is evaluated on concrete states (the tests check that every one holds on every reachable
state of small configurations, and that the restated spec invariants agree with
``spec.controller``'s, violating states included) and proved with z3.

Why the strengthening is what it is, in one paragraph: a controller's write passes the
store's check only if the version it expects is ``/controller_epoch``'s current one; the
version moves with the epoch (``EpochVersionMatches``), each election hands out an epoch no
controller holds yet (``ControllersNotAhead``), so only the controller elected last can write
(``OneControllerPerEpoch``), and no write was ever made in an epoch before it was handed out
(``WritesNotAhead``, ``WritesByTheirController``). For leaders: every successful write
creates a new leader epoch (the store's, plus one), so the leader it names is the only one
that epoch ever has -- the proof's history ``hist`` -- and every LeaderAndIsr and every
broker's view agree with it (``LeaderAndIsrMatchHistory``, ``BrokersMatchHistory``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from spec.controller import NIL, NO_EPOCH, NONE
from spec.proofs.controller.encoding import Encoding, SymState

InvFn = Callable[[Encoding, SymState], Any]
TransFn = Callable[[Encoding, SymState, SymState], Any]


@attrs.frozen
class Inv:
    name: str
    fn: InvFn
    doc: str
    kind: str
    """``spec``: restates an invariant of ``spec.controller`` (same name); ``aux``: an
    auxiliary invariant the proof of the spec's needs; ``fact``: proved along, not needed;
    ``type``: well-formedness."""

    def __call__(self, enc: Encoding, st: SymState) -> Any:
        return self.fn(enc, st)


REGISTRY: dict[str, Inv] = {}
TRANSITIONS: dict[str, TransFn] = {}


def _name(fn: Callable[..., Any]) -> str:
    return "".join(part.capitalize() for part in fn.__name__.split("_"))


def _register(kind: str) -> Callable[[InvFn], InvFn]:
    def mark(fn: InvFn) -> InvFn:
        REGISTRY[_name(fn)] = Inv(_name(fn), fn, " ".join((fn.__doc__ or "").split()), kind)
        return fn

    return mark


def _transition(fn: TransFn) -> TransFn:
    TRANSITIONS[_name(fn)] = fn
    return fn


def _broker_or_none(enc: Encoding, x: Any) -> Any:
    ops = enc.ops
    return ops.Or(x == NONE, *[x == b for b in enc.ids])


def _pairs(enc: Encoding) -> list[tuple[int, int]]:
    return [(a, b) for a in enc.ids for b in enc.ids if a < b]


# --- well-formedness ---------------------------------------------------------------------


@_register("type")
def type_ok(enc: Encoding, st: SymState) -> Any:
    """Every field has a value of its type: broker ids are brokers or NONE, epochs are at
    least NIL (leader) or 0 (controller), a broker that is not controller expects version 0,
    and every request and write carries a controller epoch >= 1."""
    ops = enc.ops
    out = [_broker_or_none(enc, st.ctl), st.cepoch >= 0, st.cver >= 0]
    for ps in st.parts:
        out += [_broker_or_none(enc, ps.leader), ps.le >= NIL]
    for sb in st.brokers:
        out += [sb.ce >= 0, sb.act >= 0, ops.Implies(sb.act == NO_EPOCH, sb.ver == 0)]
        for rep in sb.reps:
            out += [rep.le >= NIL, _broker_or_none(enc, rep.leader)]
        for c in sb.ctx:
            out.append(
                ops.Implies(
                    sb.act != NO_EPOCH, ops.And(_broker_or_none(enc, c.leader), c.le >= NIL)
                )
            )
    out.append(ops.forall(st.um, lambda ce: ce >= 1))
    for p in enc.parts:
        out.append(
            ops.forall(
                st.lai[p],
                lambda ce, le, leader: ops.And(ce >= 1, le >= 0, _broker_or_none(enc, leader)),
            )
        )
        for row in st.sr[p]:
            out.append(ops.forall(row, lambda ce, le: ops.And(ce >= 1, le >= 0)))
    for w in st.wrote:
        out.append(ops.forall(w, lambda e: e >= 1))
    return ops.And(*out)


# --- the spec's invariants, restated -----------------------------------------------------


@_register("spec")
def one_controller_writes_per_epoch(enc: Encoding, st: SymState) -> Any:
    """At most one controller's writes succeed per controller epoch (no two brokers have a
    write that landed while ``/controller_epoch`` held the same value)."""
    ops = enc.ops
    return ops.And(
        *[
            ops.forall(st.wrote[a - 1], lambda e, b=b: ops.Not(ops.member(st.wrote[b - 1], (e,))))
            for a, b in _pairs(enc)
        ]
    )


@_register("spec")
def one_leader_per_leader_epoch(enc: Encoding, st: SymState) -> Any:
    """No two brokers act as leader of a partition in the same leader epoch."""
    ops = enc.ops
    out = []
    for p in enc.parts:
        for a, b in _pairs(enc):
            ra, rb = st.broker(a).reps[p], st.broker(b).reps[p]
            out.append(ops.Not(ops.And(ra.leader == a, rb.leader == b, ra.le == rb.le)))
    return ops.And(*out)


@_transition
def no_stale_controller_epoch_applied(enc: Encoding, pre: SymState, post: SymState) -> Any:
    """No broker's controller epoch goes back."""
    ops = enc.ops
    return ops.And(*[a.ce >= b.ce for a, b in zip(post.brokers, pre.brokers, strict=True)])


@_transition
def leader_epochs_only_grow(enc: Encoding, pre: SymState, post: SymState) -> Any:
    """Leader epochs only grow, in the store and on every broker."""
    ops = enc.ops
    out = [a.le >= b.le for a, b in zip(post.parts, pre.parts, strict=True)]
    for sa, sb in zip(post.brokers, pre.brokers, strict=True):
        out += [a.le >= b.le for a, b in zip(sa.reps, sb.reps, strict=True)]
    return ops.And(*out)


# --- the controller epoch ----------------------------------------------------------------


@_register("aux")
def epoch_version_matches(enc: Encoding, st: SymState) -> Any:
    """``/controller_epoch``'s version equals its value, and a controller expects the
    version that equals its epoch (each election sets both once, from 0)."""
    ops = enc.ops
    return ops.And(
        st.cver == st.cepoch,
        *[ops.Implies(sb.act != NO_EPOCH, sb.ver == sb.act) for sb in st.brokers],
    )


@_register("aux")
def controllers_not_ahead(enc: Encoding, st: SymState) -> Any:
    """No broker believes in a controller epoch the store has not handed out."""
    return enc.ops.And(*[sb.act <= st.cepoch for sb in st.brokers])


@_register("aux")
def one_controller_per_epoch(enc: Encoding, st: SymState) -> Any:
    """No two brokers believe they are the controller of the same epoch (a brain split
    always has two different epochs)."""
    ops = enc.ops
    out = []
    for a, b in _pairs(enc):
        ea, eb = st.broker(a).act, st.broker(b).act
        out.append(ops.Implies(ops.And(ea != NO_EPOCH, eb != NO_EPOCH), ea != eb))
    return ops.And(*out)


@_register("aux")
def writes_not_ahead(enc: Encoding, st: SymState) -> Any:
    """Every write landed in a controller epoch the store has handed out."""
    ops = enc.ops
    return ops.And(*[ops.forall(w, lambda e: e <= st.cepoch) for w in st.wrote])


@_register("aux")
def writes_by_their_controller(enc: Encoding, st: SymState) -> Any:
    """A write that landed in epoch E came from the broker that believes it is the
    controller of E, if any still does."""
    ops = enc.ops
    out = []
    for a in enc.ids:
        for b in enc.ids:
            if a != b:
                act = st.broker(b).act
                out.append(ops.forall(st.wrote[a - 1], lambda e, act=act: act != e))
    return ops.And(*out)


@_register("fact")
def context_is_current(enc: Encoding, st: SymState) -> Any:
    """The controller whose writes the store accepts has the store's partition states in
    its context: so the partition-version branch of a write (``partition_version_conflict``)
    is unreachable with the fences on."""
    ops = enc.ops
    out = []
    for sb in st.brokers:
        same = []
        for c, ps in zip(sb.ctx, st.parts, strict=True):
            same += [c.leader == ps.leader, c.le == ps.le]
            same += [x == y for x, y in zip(c.isr, ps.isr, strict=True)]
        out.append(ops.Implies(ops.And(sb.act != NO_EPOCH, sb.ver == st.cver), ops.And(*same)))
    return ops.And(*out)


# --- leader epochs -----------------------------------------------------------------------


@_register("aux")
def leader_and_isr_match_history(enc: Encoding, st: SymState) -> Any:
    """Every LeaderAndIsr names the leader that its leader epoch was written with, and no
    leader epoch beyond the store's."""
    ops = enc.ops
    return ops.And(
        *[
            ops.forall(
                st.lai[p],
                lambda ce, le, leader, p=p: ops.And(
                    le <= st.parts[p].le, ops.get(st.hist[p], le) == leader
                ),
            )
            for p in enc.parts
        ]
    )


@_register("aux")
def store_matches_history(enc: Encoding, st: SymState) -> Any:
    """The store's partition state names the leader its leader epoch was written with."""
    ops = enc.ops
    return ops.And(
        *[
            ops.Implies(ps.le != NIL, ops.get(st.hist[p], ps.le) == ps.leader)
            for p, ps in enumerate(st.parts)
        ]
    )


@_register("aux")
def brokers_match_history(enc: Encoding, st: SymState) -> Any:
    """A broker that follows or leads a partition does so in a leader epoch that was
    written, with the leader that epoch was written with."""
    ops = enc.ops
    out = []
    for sb in st.brokers:
        for p, rep in enumerate(sb.reps):
            out.append(
                ops.Implies(
                    rep.leader != NONE,
                    ops.And(rep.le >= 0, ops.get(st.hist[p], rep.le) == rep.leader),
                )
            )
    return ops.And(*out)


@_register("aux")
def brokers_not_ahead(enc: Encoding, st: SymState) -> Any:
    """No broker has a leader epoch the store has not reached."""
    ops = enc.ops
    return ops.And(
        *[rep.le <= st.parts[p].le for sb in st.brokers for p, rep in enumerate(sb.reps)]
    )


SPEC_NAMES = tuple(name for name, inv in REGISTRY.items() if inv.kind == "spec")
"""The restated spec invariants (the same names as ``spec.controller``'s)."""
