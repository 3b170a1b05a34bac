"""KIP-848's consumer group (``spec.group.consumer``) as z3 terms.

State, for consumers ``1..N`` and partitions ``0..P-1``:

- ``ge`` (the group epoch) and ``tgt[c][p]`` (the target assignment);
- per consumer, its record at the coordinator: ``has[c]`` (a member), ``rep[c]`` (member
  epoch), ``asg[c][p]`` (assigned), ``rev[c][p]`` (being revoked);
- per consumer, the client: ``cep[c]`` (its member epoch) and ``own[c][p]``;
- ``loading`` (a new coordinator replaying the group's records).

The fault budgets and ``max_generation`` are dropped. One encoding serves both uses: with
fresh z3 constants it is proved; with a concrete state's values substituted and simplified,
it is compared with the spec's own successors (``cross_check``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import z3

from spec.group.assignors import range_assignment
from spec.group.consumer import Client, ConsumerGroup, Record, State
from spec.group.params import Params

ACTIONS = (
    "heartbeat",
    "heartbeat_response_lost",
    "leave_group",
    "expire",
    "coordinator_moves",
    "load_group",
)
PER_CONSUMER = frozenset({"heartbeat", "heartbeat_response_lost", "leave_group", "expire"})

Vec = tuple[Any, ...]
BIG = 10**6


@attrs.frozen
class Sym:
    ge: Any
    tgt: tuple[Vec, ...]
    has: Vec
    rep: Vec
    asg: tuple[Vec, ...]
    rev: tuple[Vec, ...]
    cep: Vec
    own: tuple[Vec, ...]
    loading: Any


def _any(bits: Vec) -> Any:
    return z3.Or(*bits) if bits else z3.BoolVal(False)


class Encoding:
    def __init__(self, params: Params) -> None:
        if params.protocol != "consumer":
            raise ValueError("the z3 encoding covers --protocol consumer (KIP-848) only")
        self.p = params
        self.n = params.members
        self.np = params.partitions
        self.bugs = params.bugs
        self.spec = ConsumerGroup(
            attrs.evolve(
                params, max_generation=BIG, max_expiries=BIG, max_timeouts=BIG, max_failovers=BIG
            )
        )
        """The spec without its bounds: the encoding drops them."""

    # --- states ----------------------------------------------------------------------------

    def fresh(self, prefix: str) -> Sym:
        n, np_ = range(self.n), range(self.np)

        def bools(name: str) -> tuple[Vec, ...]:
            return tuple(tuple(z3.Bool(f"{prefix}{name}_{c}_{p}") for p in np_) for c in n)

        return Sym(
            ge=z3.Int(f"{prefix}ge"),
            tgt=bools("tgt"),
            has=tuple(z3.Bool(f"{prefix}has_{c}") for c in n),
            rep=tuple(z3.Int(f"{prefix}rep_{c}") for c in n),
            asg=bools("asg"),
            rev=bools("rev"),
            cep=tuple(z3.Int(f"{prefix}cep_{c}") for c in n),
            own=bools("own"),
            loading=z3.Bool(f"{prefix}loading"),
        )

    def of_state(self, s: State) -> Sym:
        """A concrete spec state as z3 constants."""

        def bits(ps: frozenset[int]) -> Vec:
            return tuple(z3.BoolVal(p in ps) for p in range(self.np))

        none = Record(0)
        recs = [r if r is not None else none for r in s.records]
        return Sym(
            ge=z3.IntVal(s.group_epoch),
            tgt=tuple(bits(t) for t in s.target),
            has=tuple(z3.BoolVal(r is not None) for r in s.records),
            rep=tuple(z3.IntVal(r.epoch) for r in recs),
            asg=tuple(bits(r.assigned) for r in recs),
            rev=tuple(bits(r.revoking) for r in recs),
            cep=tuple(z3.IntVal(c.epoch) for c in s.clients),
            own=tuple(bits(c.owned) for c in s.clients),
            loading=z3.BoolVal(s.loading),
        )

    def read(self, sym: Sym, value: Any) -> State:
        """A state whose terms ``value`` evaluates (a model's ``eval``, or ``simplify``)."""

        def b(t: Any) -> bool:
            return bool(z3.is_true(value(t)))

        def i(t: Any) -> int:
            return int(value(t).as_long())

        def ps(vec: Vec) -> frozenset[int]:
            return frozenset(p for p in range(self.np) if b(vec[p]))

        records = tuple(
            Record(i(sym.rep[c]), ps(sym.asg[c]), ps(sym.rev[c])) if b(sym.has[c]) else None
            for c in range(self.n)
        )
        return State(
            group_epoch=i(sym.ge),
            target=tuple(ps(t) for t in sym.tgt),
            records=records,
            clients=tuple(Client(i(sym.cep[c]), ps(sym.own[c])) for c in range(self.n)),
            loading=b(sym.loading),
        )

    # --- the rules ------------------------------------------------------------------------------

    def target(self, has: Vec) -> tuple[Vec, ...]:
        """The range assignor's target for the members ``has`` names, as an If-chain over
        every subset of consumers."""
        out: list[list[Any]] = [[z3.BoolVal(False)] * self.np for _ in range(self.n)]
        for mask in range(2**self.n):
            members = [c for c in range(self.n) if mask >> c & 1]
            plan = range_assignment(members, self.np)
            cond = z3.And(*[has[c] if mask >> c & 1 else z3.Not(has[c]) for c in range(self.n)])
            for c in range(self.n):
                for p in range(self.np):
                    val = z3.BoolVal(p in plan.get(c, frozenset()))
                    out[c][p] = z3.If(cond, val, out[c][p])
        return tuple(tuple(row) for row in out)

    def fenced(self, s: Sym, c: int) -> Any:
        if "no_member_epoch_fencing" in self.bugs:
            return z3.BoolVal(False)
        return z3.And(s.cep[c] != 0, z3.Or(z3.Not(s.has[c]), s.rep[c] != s.cep[c]))

    def _membership(self, s: Sym, has: Vec, **changes: Any) -> Sym:
        return attrs.evolve(s, ge=s.ge + 1, tgt=self.target(has), has=has, **changes)

    def _set(self, vec: Vec, c: int, value: Any) -> Vec:
        return tuple(value if i == c else x for i, x in enumerate(vec))

    def heartbeat(self, s: Sym, c: int, answered: bool) -> tuple[Any, Sym]:
        """``ConsumerGroup._heartbeat`` and the client's side of the answer."""
        np_ = range(self.np)
        empty = tuple(z3.BoolVal(False) for _ in np_)
        fenced = self.fenced(s, c)
        join = z3.Or(s.cep[c] == 0, z3.Not(s.has[c]))
        joined_has = self._set(s.has, c, z3.BoolVal(True))
        j = self._membership(
            s,
            joined_has,
            rep=self._set(s.rep, c, z3.IntVal(0)),
            asg=self._set(s.asg, c, empty),
            rev=self._set(s.rev, c, empty),
        )
        m = _pick(join, j, s)
        # reconcile member c in m
        owned = s.own[c]
        r_ep, r_asg, r_rev = m.rep[c], m.asg[c], m.rev[c]
        t = m.tgt[c]
        revoking = tuple(z3.And(r_rev[p], owned[p]) for p in np_)
        to_revoke = tuple(z3.And(r_asg[p], z3.Not(t[p])) for p in np_)
        taken = []
        for p in np_:
            terms = []
            for o in range(self.n):
                if o == c:
                    continue
                held = m.asg[o][p]
                if "assign_before_revoked" not in self.bugs:
                    held = z3.Or(held, m.rev[o][p])
                terms.append(z3.And(m.has[o], held))
            taken.append(_any(tuple(terms)))
        still = _any(revoking)
        revoke_now = z3.And(z3.Not(still), _any(to_revoke), r_ep < m.ge)
        moved_asg = tuple(
            z3.Or(z3.And(r_asg[p], t[p]), z3.And(t[p], z3.Not(taken[p]))) for p in np_
        )
        n_ep = z3.If(z3.Or(still, revoke_now), r_ep, m.ge)
        n_asg = tuple(
            z3.If(still, r_asg[p], z3.If(revoke_now, z3.And(r_asg[p], t[p]), moved_asg[p]))
            for p in np_
        )
        n_rev = tuple(
            z3.If(still, revoking[p], z3.If(revoke_now, to_revoke[p], z3.BoolVal(False)))
            for p in np_
        )
        reconciled = attrs.evolve(
            m,
            rep=self._set(m.rep, c, n_ep),
            asg=self._set(m.asg, c, n_asg),
            rev=self._set(m.rev, c, n_rev),
        )
        if answered:
            reconciled = attrs.evolve(
                reconciled,
                cep=self._set(reconciled.cep, c, n_ep),
                own=self._set(reconciled.own, c, n_asg),
            )
            fenced_post = attrs.evolve(
                s, cep=self._set(s.cep, c, z3.IntVal(0)), own=self._set(s.own, c, empty)
            )
        else:
            fenced_post = s
        return z3.Not(s.loading), _pick(fenced, fenced_post, reconciled)

    def step(self, s: Sym, action: str, c: int) -> tuple[Any, Sym]:
        """(guard, successor) of an action instance (``c`` is 0-based; ignored by the
        coordinator's actions). Stutters are allowed where the spec says "not enabled":
        a step that changes nothing preserves every invariant."""
        np_ = range(self.np)
        empty = tuple(z3.BoolVal(False) for _ in np_)
        if action == "heartbeat":
            return self.heartbeat(s, c, answered=True)
        if action == "heartbeat_response_lost":
            return self.heartbeat(s, c, answered=False)
        if action == "leave_group":
            guard = z3.And(z3.Not(s.loading), s.cep[c] != 0, s.has[c])
            post = self._membership(
                s,
                self._set(s.has, c, z3.BoolVal(False)),
                cep=self._set(s.cep, c, z3.IntVal(0)),
                own=self._set(s.own, c, empty),
            )
            return guard, post
        if action == "expire":
            guard = z3.And(z3.Not(s.loading), s.has[c])
            return guard, self._membership(s, self._set(s.has, c, z3.BoolVal(False)))
        if action == "coordinator_moves":
            return z3.Not(s.loading), attrs.evolve(s, loading=z3.BoolVal(True))
        if action == "load_group":
            return s.loading, attrs.evolve(s, loading=z3.BoolVal(False))
        raise KeyError(f"unknown action {action!r}; known: {', '.join(ACTIONS)}")

    def instances(self) -> Iterator[tuple[str, int]]:
        for action in ACTIONS:
            if action in PER_CONSUMER:
                for c in range(self.n):
                    yield action, c
            else:
                yield action, 0

    def init(self) -> State:
        return next(iter(self.spec.init()))


def _pick(cond: Any, a: Sym, b: Sym) -> Sym:
    """Field by field ``If(cond, a, b)``."""

    def mix(x: Any, y: Any) -> Any:
        if isinstance(x, tuple):
            return tuple(mix(u, v) for u, v in zip(x, y, strict=True))
        return z3.If(cond, x, y)

    return Sym(*(mix(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(Sym)))


def cross_check(enc: Encoding, states: list[State]) -> list[str]:
    """Compare the encoding's successors with the spec's on concrete states: the problems
    found (empty: they agree). The spec's bookkeeping (budgets, coordinator number) is not
    in the encoding and is ignored; where the spec says "not enabled" the encoding may
    stutter."""
    spec = enc.spec
    problems = []

    def key(s: State) -> tuple[Any, ...]:
        return (s.group_epoch, s.target, s.records, s.clients, s.loading)

    for s in states:
        sym = enc.of_state(s)
        for action, c in enc.instances():
            fn = getattr(spec, action)
            theirs = fn(s, c + 1) if action in PER_CONSUMER else fn(s)
            guard, post = enc.step(sym, action, c)
            enabled = z3.is_true(z3.simplify(guard))
            ours = enc.read(post, z3.simplify) if enabled else None
            if theirs is None:
                if ours is not None and key(ours) != key(s):
                    problems.append(f"{action}({c + 1}) from {s}: the spec says not enabled")
            elif ours is None or key(ours) != key(theirs):
                problems.append(f"{action}({c + 1}) from {s}: {ours} != {theirs}")
    return problems
