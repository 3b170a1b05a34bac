"""The rebalance spec's partition-state invariants, proved inductive with z3.

``kmodel check rebalance`` visits every reachable state of a few brokers, one or two
records and a few leader epochs. Here the controller's partition state -- the assignment,
KIP-455's adding and removing sets, leader, ISR, KIP-966's ELR, the brokers in controlled
shutdown and which brokers run -- is proved well formed for *every* sequence of actions,
any number of elections, ISR changes, shutdowns, restarts and reassignments, for 2 to 4
brokers and any ``min.insync.replicas``.

What is encoded: the projection of a rebalance state onto that partition state
(``project``), and each action's effect on it. Actions that touch only logs, HWs and
replica views (``become_leader``, ``leader_write``, ``become_follower``, ``fetch``,
``flush``) leave it unchanged. The encoding over-approximates the spec: a leader's ISR
change (``shrink_isr_lagging``, ``expand_isr_caught_up``) may drop any followers or add
any assigned replica not shutting down, whether or not it lags or caught up; an election
may pick any eligible replica, not only the first of the assignment. A property proved
here therefore holds for the spec; ``model_tests/test_rebalance_proofs.py`` checks, on
every reachable state of each mechanism's bounds, that each step of the spec is a step of
the encoding.

Proved: ``LeaderAndIsrWellFormed`` (with the auxiliary ``ReassignmentWellFormed``:
adding and removing are disjoint parts of the replicas, and the target is not empty) and
the transition property ``ReassignmentKeepsMinIsr``. Not proved here:
``NoAckedAllWriteLost``, which is about logs and the data plane (the replication proofs in
``spec.proofs`` cover the data plane without these mechanisms); it is checked by
exhaustive exploration only.

Obligations: ``Init => Inv`` on the spec's initial state, and for every action instance
(concrete broker arguments, every target set) unsatisfiability of
``S(pre) /\\ Action(pre, post) /\\ not Inv(post)``; each action instance must be enabled
in some state satisfying ``S`` (so nothing holds vacuously).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import z3

from spec.proofs.status import COUNTEREXAMPLE, PROVED, UNKNOWN, overall
from spec.rebalance.params import Params
from spec.rebalance.state import RState
from spec.replication import NONE

ENCODED_BUGS = ("drop_before_isr_join", "shutdown_to_non_isr", "no_elr", "stale_elr")
"""Bugs the encoding can run with: the first two break a proved property; ``no_elr`` and
``stale_elr`` change the ELR rules but break only ``NoAckedAllWriteLost``, which is not
encoded, so their proofs still succeed."""

SETS = ("assigned", "adding", "removing", "isr", "elr", "shutting", "alive")

Term = Any
"""A z3 expression (z3 ships no type information)."""


@attrs.frozen
class Config:
    brokers: int = 3
    min_isr: int = 2
    bugs: frozenset[str] = frozenset()

    def __attrs_post_init__(self) -> None:
        if not 2 <= self.brokers <= 4:
            raise ValueError(f"brokers must be 2..4, got {self.brokers}")
        if not 1 <= self.min_isr <= self.brokers:
            raise ValueError(f"min_isr must be 1..brokers ({self.brokers}), got {self.min_isr}")
        unknown = sorted(set(self.bugs) - set(ENCODED_BUGS))
        if unknown:
            raise ValueError(f"bug(s) {unknown} are not encoded; encoded: {ENCODED_BUGS}")

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.brokers + 1))

    @property
    def elr(self) -> bool:
        return "no_elr" not in self.bugs


@attrs.frozen
class Abstract:
    """The partition state of a rebalance state, as Python values (or a z3 model's)."""

    assigned: frozenset[int]
    adding: frozenset[int]
    removing: frozenset[int]
    isr: frozenset[int]
    elr: frozenset[int]
    shutting: frozenset[int]
    alive: frozenset[int]
    leader: int


def project(s: RState) -> Abstract:
    """The partition state the proof is about."""
    m, q = s.meta, s.core.quorum
    alive = frozenset(r for r, rep in enumerate(s.core.replicas, start=1) if rep.alive)
    return Abstract(
        frozenset(m.assignment), m.adding, m.removing, q.isr, m.elr, m.shutting, alive, q.leader
    )


class Sym:
    """One symbolic state: a Boolean per broker for each set, and the leader."""

    def __init__(self, cfg: Config, name: str) -> None:
        self.cfg = cfg
        self.sets: dict[str, tuple[Term, ...]] = {
            field: tuple(z3.Bool(f"{name}.{field}.{r}") for r in cfg.ids) for field in SETS
        }
        self.leader: Term = z3.Int(f"{name}.leader")

    def has(self, field: str, r: int) -> Term:
        return self.sets[field][r - 1]

    def bind(self, a: Abstract) -> Term:
        """This state equals the Python value ``a``."""
        parts = [self.leader == a.leader]
        for field in SETS:
            members = getattr(a, field)
            parts += [self.has(field, r) == (r in members) for r in self.cfg.ids]
        return z3.And(*parts)

    def read(self, model: Any) -> Abstract:
        def members(field: str) -> frozenset[int]:
            return frozenset(
                r
                for r in self.cfg.ids
                if z3.is_true(model.eval(self.has(field, r), model_completion=True))
            )

        leader = model.eval(self.leader, model_completion=True).as_long()
        sets = {field: members(field) for field in SETS}
        return Abstract(leader=leader, **sets)


Set = tuple[Term, ...]
"""A set of brokers as one z3 Boolean per broker."""


# --- set algebra over Boolean vectors ---------------------------------------------------------


def _union(a: Set, b: Set) -> Set:
    return tuple(z3.Or(x, y) for x, y in zip(a, b, strict=True))


def _minus(a: Set, b: Set) -> Set:
    return tuple(z3.And(x, z3.Not(y)) for x, y in zip(a, b, strict=True))


def _inter(a: Set, b: Set) -> Set:
    return tuple(z3.And(x, y) for x, y in zip(a, b, strict=True))


def _const(cfg: Config, members: Sequence[int]) -> Set:
    return tuple(z3.BoolVal(r in members) for r in cfg.ids)


def _empty(cfg: Config) -> Set:
    return _const(cfg, ())


def _subset(a: Set, b: Set) -> Term:
    return z3.And(*(z3.Implies(x, y) for x, y in zip(a, b, strict=True)))


def _eq(a: Set, b: Set) -> Term:
    return z3.And(*(x == y for x, y in zip(a, b, strict=True)))


def _nonempty(a: Set) -> Term:
    return z3.Or(*a)


def _size(a: Set) -> Term:
    return z3.Sum(*(z3.If(x, 1, 0) for x in a))


def _ite(c: Term, a: Set, b: Set) -> Set:
    return tuple(z3.If(c, x, y) for x, y in zip(a, b, strict=True))


def _member(a: Set, r: int) -> Term:
    return a[r - 1]


def _member_of(cfg: Config, a: Set, leader: Term) -> Term:
    """``leader`` (an integer term) is in ``a``."""
    return z3.Or(*(z3.And(leader == r, a[r - 1]) for r in cfg.ids))


# --- the actions ------------------------------------------------------------------------------


class Post:
    """The post-state being built: starts as a copy of the pre-state's terms."""

    def __init__(self, pre: Sym) -> None:
        self.sets = dict(pre.sets)
        self.leader = pre.leader

    def equals(self, post: Sym) -> Term:
        parts = [post.leader == self.leader]
        for field in SETS:
            parts.append(_eq(post.sets[field], self.sets[field]))
        return z3.And(*parts)


def elr_after(cfg: Config, elr: Set, old: Set, new: Set, assigned: Set) -> Set:
    """``spec.rebalance.elr.elr_after``."""
    if not cfg.elr:
        return _empty(cfg)
    below = _size(new) < cfg.min_isr
    kept = _inter(_minus(_union(elr, _minus(old, new)), new), assigned)
    return _ite(below, kept, _empty(cfg))


def write(
    cfg: Config, pre: Sym, post: Post, leader: Term, isr: Set, elr: Set | None = None
) -> None:
    """The controller's write: leader, ISR, and the ELR following the ISR change."""
    base = post.sets["elr"] if elr is None else elr
    post.sets["elr"] = elr_after(cfg, base, pre.sets["isr"], isr, post.sets["assigned"])
    post.sets["isr"] = isr
    post.leader = leader


def live(pre: Sym) -> Set:
    return _minus(pre.sets["alive"], pre.sets["shutting"])


Instance = tuple[str, str, Callable[[Sym, Sym], Term]]
"""(action, its arguments as a label, pre x post -> the transition formula)."""


def isr_without(cfg: Config, pre: Sym, r: int, leader_is_r: Term) -> Set:
    """``spec.rebalance.elr.isr_without``."""
    removed = _minus(pre.sets["isr"], _const(cfg, (r,)))
    if cfg.elr:
        return removed
    last = z3.And(leader_is_r, _eq(pre.sets["isr"], _const(cfg, (r,))))
    return _ite(last, pre.sets["isr"], removed)


def instances(cfg: Config) -> list[Instance]:
    ids = cfg.ids
    none = z3.IntVal(NONE)
    out: list[Instance] = []

    def add(action: str, label: str, fn: Callable[[Sym, Post], Term | None]) -> None:
        def formula(pre: Sym, post: Sym, fn: Callable[[Sym, Post], Term | None] = fn) -> Term:
            p = Post(pre)
            guard = fn(pre, p)
            return z3.And(guard, p.equals(post))

        out.append((action, label, formula))

    # elect_leader: from the ISR, or (KIP-966) from the ELR when no ISR member is live
    for n in ids:

        def elect_isr(pre: Sym, p: Post, n: int = n) -> Term:
            write(cfg, pre, p, z3.IntVal(n), pre.sets["isr"])
            guard = [pre.leader == NONE, _member(pre.sets["isr"], n), _member(live(pre), n)]
            return z3.And(*guard, _member(pre.sets["assigned"], n))

        add("elect_leader", f"n={n} from ISR", elect_isr)
        if cfg.elr:

            def elect_elr(pre: Sym, p: Post, n: int = n) -> Term:
                no_isr = z3.Not(
                    _nonempty(_inter(_inter(pre.sets["isr"], live(pre)), pre.sets["assigned"]))
                )
                elr = _minus(pre.sets["elr"], _const(cfg, (n,)))
                write(cfg, pre, p, z3.IntVal(n), _const(cfg, (n,)), elr)
                guard = [pre.leader == NONE, no_isr, _member(pre.sets["elr"], n)]
                return z3.And(*guard, _member(live(pre), n), _member(pre.sets["assigned"], n))

            add("elect_leader", f"n={n} from ELR", elect_elr)

    # controller_shrink_isr(r)
    for r in ids:

        def shrink(pre: Sym, p: Post, r: int = r) -> Term:
            is_leader = pre.leader == r
            isr = isr_without(cfg, pre, r, is_leader)
            write(cfg, pre, p, z3.If(is_leader, none, pre.leader), isr)
            return _member(pre.sets["isr"], r)

        add("controller_shrink_isr", f"r={r}", shrink)

    # the leader's ISR changes (AlterPartition): any followers dropped, any replica added
    for leader in ids:
        for size in range(1, len(ids)):
            for dropped in itertools.combinations([r for r in ids if r != leader], size):

                def lagging(
                    pre: Sym, p: Post, leader: int = leader, d: tuple[int, ...] = dropped
                ) -> Term:
                    gone = _const(cfg, d)
                    write(cfg, pre, p, pre.leader, _minus(pre.sets["isr"], gone))
                    return z3.And(pre.leader == leader, _subset(gone, pre.sets["isr"]))

                add("shrink_isr_lagging", f"leader={leader}, dropped={set(dropped)}", lagging)
        for f in ids:
            if f == leader:
                continue

            def expand(pre: Sym, p: Post, leader: int = leader, f: int = f) -> Term:
                write(cfg, pre, p, pre.leader, _union(pre.sets["isr"], _const(cfg, (f,))))
                return z3.And(
                    pre.leader == leader,
                    z3.Not(_member(pre.sets["isr"], f)),
                    _member(pre.sets["assigned"], f),
                    z3.Not(_member(pre.sets["shutting"], f)),
                )

            add("expand_isr_caught_up", f"leader={leader}, f={f}", expand)

    # preferred_election / auto_rebalance: any live ISR member other than the leader
    for n in ids:

        def preferred(pre: Sym, p: Post, n: int = n) -> Term:
            write(cfg, pre, p, z3.IntVal(n), pre.sets["isr"])
            ongoing = _nonempty(_union(pre.sets["adding"], pre.sets["removing"]))
            return z3.And(
                pre.leader != NONE,
                pre.leader != n,
                z3.Not(ongoing),
                _member(pre.sets["isr"], n),
                _member(live(pre), n),
                _member(pre.sets["assigned"], n),
            )

        add("preferred_election", f"n={n}", preferred)

    # controlled_shutdown(b, n), stop_broker(b), crash(r), restart(r)
    for b in ids:
        for n in (NONE, *ids):
            if n == b:
                continue

            def shutdown(pre: Sym, p: Post, b: int = b, n: int = n) -> Term:
                p.sets["shutting"] = _union(pre.sets["shutting"], _const(cfg, (b,)))
                enabled = z3.And(
                    z3.Not(_member(pre.sets["shutting"], b)),
                    _member(pre.sets["assigned"], b),
                    _member(pre.sets["alive"], b),
                )
                isr = pre.sets["isr"]
                lv = live(pre)
                candidates = _inter(_minus(isr, _const(cfg, (b,))), lv)
                if "shutdown_to_non_isr" in cfg.bugs:
                    candidates = _inter(_minus(pre.sets["assigned"], _const(cfg, (b,))), lv)
                leads = pre.leader == b
                if n == NONE:
                    allowed = z3.Not(_nonempty(candidates))
                    lead_isr = isr_without(cfg, pre, b, z3.BoolVal(True))
                else:
                    allowed = _member(candidates, n)
                    lead_isr = _minus(isr, _const(cfg, (b,)))
                follow_isr = _minus(isr, _const(cfg, (b,)))
                new_isr = _ite(leads, lead_isr, follow_isr)
                new_leader = z3.If(leads, z3.IntVal(n), pre.leader)
                # b outside the ISR and not leading: no partition write at all
                writes = z3.Or(leads, _member(isr, b))
                elr = elr_after(cfg, pre.sets["elr"], isr, new_isr, pre.sets["assigned"])
                p.sets["isr"] = _ite(writes, new_isr, isr)
                p.sets["elr"] = _ite(writes, elr, pre.sets["elr"])
                p.leader = z3.If(writes, new_leader, pre.leader)
                return z3.And(enabled, z3.If(leads, allowed, n == NONE))

            add("controlled_shutdown", f"b={b}, n={n}", shutdown)

        def stop(pre: Sym, p: Post, b: int = b) -> Term:
            p.sets["alive"] = _minus(pre.sets["alive"], _const(cfg, (b,)))
            in_isr = _member(pre.sets["isr"], b)
            return z3.And(
                _member(pre.sets["shutting"], b),
                _member(pre.sets["alive"], b),
                pre.leader != b,
                z3.Or(z3.Not(in_isr), _eq(pre.sets["isr"], _const(cfg, (b,)))),
            )

        add("stop_broker", f"b={b}", stop)

        def crash(pre: Sym, p: Post, r: int = b) -> Term:
            p.sets["alive"] = _minus(pre.sets["alive"], _const(cfg, (r,)))
            return _member(pre.sets["alive"], r)

        add("crash", f"r={b}", crash)

        def restart(pre: Sym, p: Post, r: int = b) -> Term:
            p.sets["alive"] = _union(pre.sets["alive"], _const(cfg, (r,)))
            p.sets["shutting"] = _minus(pre.sets["shutting"], _const(cfg, (r,)))
            clean = _member(pre.sets["shutting"], r)
            if "stale_elr" not in cfg.bugs:
                p.sets["elr"] = _ite(
                    clean, pre.sets["elr"], _minus(pre.sets["elr"], _const(cfg, (r,)))
                )
            in_isr = _member(pre.sets["isr"], r)
            allowed = z3.Or(
                z3.Not(in_isr),
                z3.And(_eq(pre.sets["isr"], _const(cfg, (r,))), pre.leader == NONE),
            )
            if cfg.elr:
                allowed = z3.Not(in_isr)
            return z3.And(z3.Not(_member(pre.sets["alive"], r)), allowed)

        add("restart", f"r={b}", restart)

    # KIP-455
    for size in range(1, len(ids) + 1):
        for target in itertools.combinations(ids, size):

            def start(pre: Sym, p: Post, target: tuple[int, ...] = target) -> Term:
                t = _const(cfg, target)
                a = pre.sets["assigned"]
                p.sets["assigned"] = _union(a, t)
                p.sets["adding"] = _minus(t, a)
                p.sets["removing"] = _minus(a, t)
                ongoing = _nonempty(_union(pre.sets["adding"], pre.sets["removing"]))
                return z3.And(z3.Not(ongoing), z3.Not(_eq(a, t)))

            add("start_reassignment", f"target={set(target)}", start)

    def leader_after(pre: Sym, keep: Set, n: int, isr: Set) -> tuple[Term, Term]:
        """``Reassignment.leader_after``: (allowed, new leader)."""
        stays = z3.And(pre.leader != NONE, _member_of(cfg, keep, pre.leader))
        if n == NONE:
            allowed = z3.Or(stays, z3.Not(_nonempty(_inter(isr, live(pre)))))
            return allowed, z3.If(stays, pre.leader, none)
        allowed = z3.And(z3.Not(stays), _member(isr, n), _member(live(pre), n))
        return allowed, z3.IntVal(n)

    for n in (NONE, *ids):

        def complete(pre: Sym, p: Post, n: int = n) -> Term:
            a, rem = pre.sets["assigned"], pre.sets["removing"]
            ongoing = _nonempty(_union(pre.sets["adding"], rem))
            target = _minus(a, rem)
            isr = _inter(pre.sets["isr"], target)
            guard = [ongoing]
            if "drop_before_isr_join" in cfg.bugs:
                lone = z3.And(z3.Not(_nonempty(isr)), z3.Not(_member_of(cfg, target, pre.leader)))
                if n != NONE:
                    guard.append(
                        z3.Implies(lone, z3.And(_member(target, n), _member(live(pre), n)))
                    )
                    isr = _ite(lone, _const(cfg, (n,)), isr)
            else:
                guard.append(_subset(target, pre.sets["isr"]))
            allowed, leader = leader_after(pre, target, n, isr)
            p.sets["assigned"] = target
            p.sets["adding"] = _empty(cfg)
            p.sets["removing"] = _empty(cfg)
            write(cfg, pre, p, leader, isr, _minus(pre.sets["elr"], rem))
            return z3.And(*guard, allowed)

        add("complete_reassignment", f"n={n}", complete)

        def cancel(pre: Sym, p: Post, n: int = n) -> Term:
            a, add_ = pre.sets["assigned"], pre.sets["adding"]
            ongoing = _nonempty(_union(add_, pre.sets["removing"]))
            original = _minus(a, add_)
            isr = _minus(pre.sets["isr"], add_)
            allowed, leader = leader_after(pre, original, n, isr)
            p.sets["assigned"] = original
            p.sets["adding"] = _empty(cfg)
            p.sets["removing"] = _empty(cfg)
            same = z3.And(leader == pre.leader, _eq(isr, pre.sets["isr"]))
            elr = _minus(pre.sets["elr"], add_)
            written = elr_after(cfg, elr, pre.sets["isr"], isr, original)
            p.sets["elr"] = _ite(same, elr, written)
            p.sets["isr"] = isr
            p.leader = leader
            return z3.And(ongoing, allowed)

        add("cancel_reassignment", f"n={n}", cancel)
    return out


# --- the properties ---------------------------------------------------------------------------


def leader_and_isr_well_formed(cfg: Config, s: Sym) -> Term:
    """``LeaderAndIsrWellFormed``."""
    st = s.sets
    return z3.And(
        z3.Or(s.leader == NONE, _member_of(cfg, st["isr"], s.leader)),
        _subset(st["isr"], st["assigned"]),
        _subset(st["elr"], st["assigned"]),
        z3.Not(_nonempty(_inter(st["elr"], st["isr"]))),
    )


def reassignment_well_formed(cfg: Config, s: Sym) -> Term:
    """Auxiliary: adding and removing are disjoint subsets of the replicas, neither the
    target (replicas minus removing) nor the original (replicas minus adding) is empty,
    and the leader is a broker or NONE."""
    st = s.sets
    return z3.And(
        _subset(st["adding"], st["assigned"]),
        _subset(st["removing"], st["assigned"]),
        z3.Not(_nonempty(_inter(st["adding"], st["removing"]))),
        _nonempty(_minus(st["assigned"], st["removing"])),
        _nonempty(_minus(st["assigned"], st["adding"])),
        z3.Or(s.leader == NONE, z3.And(s.leader >= 1, s.leader <= cfg.brokers)),
    )


INVARIANTS: dict[str, Callable[[Config, Sym], Term]] = {
    "LeaderAndIsrWellFormed": leader_and_isr_well_formed,
    "ReassignmentWellFormed": reassignment_well_formed,
}


def reassignment_keeps_min_isr(cfg: Config, pre: Sym, post: Sym) -> Term:
    """``ReassignmentKeepsMinIsr`` on a completion: every target replica in the ISR, and
    at least min(min.insync.replicas, |target|) of them."""
    target = post.sets["assigned"]
    in_sync = _inter(post.sets["isr"], target)
    size = _size(target)
    enough = _size(in_sync) >= z3.If(size < cfg.min_isr, size, cfg.min_isr)
    return z3.And(_eq(in_sync, target), enough)


# --- obligations ------------------------------------------------------------------------------


@attrs.frozen
class Result:
    invariant: str
    action: str
    status: str
    seconds: float
    cti: tuple[str, Abstract, Abstract] | None = None
    """(the instance's label, pre-state, post-state) of a counterexample to induction."""


@attrs.frozen
class Run:
    config: Config
    results: tuple[Result, ...]
    enabled: tuple[tuple[str, str], ...]
    seconds: float

    @property
    def status(self) -> str:
        return overall(r.status for r in self.results)


def initial(cfg: Config) -> Abstract:
    """The spec's initial state, projected (the rebalance spec's ``init``)."""
    from spec.rebalance.models import Rebalance

    spec = Rebalance(
        Params(brokers=cfg.brokers, replication_factor=cfg.brokers, min_isr=cfg.min_isr)
    )
    return project(next(iter(spec.init())))


def _check(solver: Any, timeout_ms: int) -> str:
    solver.set("timeout", timeout_ms)
    return str(solver.check())


def prove(
    cfg: Config,
    *,
    timeout_ms: int = 20_000,
    clock: Callable[[], float] | None = None,
) -> Run:
    """Every obligation of ``INVARIANTS`` (relative to all of them) and of
    ``ReassignmentKeepsMinIsr``, and the vacuity check of every action instance."""
    start = clock() if clock else 0.0
    pre, post = Sym(cfg, "pre"), Sym(cfg, "post")
    strengthening = z3.And(*(inv(cfg, pre) for inv in INVARIANTS.values()))
    results: list[Result] = []
    init = initial(cfg)
    for name, inv in INVARIANTS.items():
        t0 = clock() if clock else 0.0
        solver = z3.Solver()
        solver.add(pre.bind(init), z3.Not(inv(cfg, pre)))
        answer = _check(solver, timeout_ms)
        status = PROVED if answer == "unsat" else COUNTEREXAMPLE if answer == "sat" else UNKNOWN
        results.append(Result(name, "Init", status, (clock() - t0) if clock else 0.0))
    every = instances(cfg)
    actions = list(dict.fromkeys(action for action, _, _ in every))
    goals: list[tuple[str, Callable[[Sym, Sym], Term], set[str] | None]] = []
    for name, inv in INVARIANTS.items():

        def holds_after(p: Sym, q: Sym, inv: Callable[[Config, Sym], Term] = inv) -> Term:
            return inv(cfg, q)

        goals.append((name, holds_after, None))

    def keeps_min_isr(p: Sym, q: Sym) -> Term:
        return reassignment_keeps_min_isr(cfg, p, q)

    goals.append(("ReassignmentKeepsMinIsr", keeps_min_isr, {"complete_reassignment"}))
    for name, goal, only in goals:
        for action in actions:
            if only is not None and action not in only:
                continue
            t0 = clock() if clock else 0.0
            status, cti = PROVED, None
            for act, label, formula in every:
                if act != action:
                    continue
                solver = z3.Solver()
                solver.add(strengthening, formula(pre, post), z3.Not(goal(pre, post)))
                answer = _check(solver, timeout_ms)
                if answer == "sat":
                    model = solver.model()
                    status, cti = COUNTEREXAMPLE, (label, pre.read(model), post.read(model))
                    break
                if answer != "unsat":
                    status = UNKNOWN
            results.append(Result(name, action, status, (clock() - t0) if clock else 0.0, cti))
    enabled = []
    for act, label, formula in every:
        solver = z3.Solver()
        solver.add(strengthening, formula(pre, post))
        enabled.append((f"{act}({label})", _check(solver, timeout_ms)))
    return Run(cfg, tuple(results), tuple(enabled), (clock() - start) if clock else 0.0)


def step_matches(cfg: Config, action: str, before: Abstract, after: Abstract) -> bool:
    """Whether some instance of ``action`` relates ``before`` to ``after`` in the encoding
    (an action the encoding leaves out must leave the partition state alone). Used to
    check that the encoding over-approximates the spec."""
    if action == "auto_rebalance":
        action = "preferred_election"
    formulas = _formulas(cfg).get(action)
    if formulas is None:
        return before == after
    pre, post = _SYMS[cfg]
    pairs = _values(pre, before) + _values(post, after)
    return any(z3.is_true(z3.simplify(z3.substitute(f, *pairs))) for f in formulas)


_FORMULAS: dict[Config, dict[str, list[Term]]] = {}
_SYMS: dict[Config, tuple[Sym, Sym]] = {}


def _formulas(cfg: Config) -> dict[str, list[Term]]:
    """Each action's instances as formulas over one pair of symbolic states (built once)."""
    if cfg not in _FORMULAS:
        pre, post = Sym(cfg, "pre"), Sym(cfg, "post")
        _SYMS[cfg] = (pre, post)
        table: dict[str, list[Term]] = {}
        for action, _, formula in instances(cfg):
            table.setdefault(action, []).append(formula(pre, post))
        _FORMULAS[cfg] = table
    return _FORMULAS[cfg]


def _values(s: Sym, a: Abstract) -> list[tuple[Term, Term]]:
    pairs: list[tuple[Term, Term]] = [(s.leader, z3.IntVal(a.leader))]
    for field in SETS:
        members = getattr(a, field)
        pairs += [(s.has(field, r), z3.BoolVal(r in members)) for r in s.cfg.ids]
    return pairs


def render_abstract(a: Abstract) -> str:
    def ids(x: frozenset[int]) -> str:
        return "{" + ",".join(str(i) for i in sorted(x)) + "}"

    leader = "-" if a.leader == NONE else str(a.leader)
    return (
        f"replicas {ids(a.assigned)} adding {ids(a.adding)} removing {ids(a.removing)} "
        f"leader {leader} ISR {ids(a.isr)} ELR {ids(a.elr)} shutting {ids(a.shutting)} "
        f"alive {ids(a.alive)}"
    )


def render_run(run: Run) -> str:
    lines = [
        f"rebalance: partition-state invariants, {run.config.brokers} brokers, "
        f"min.insync.replicas={run.config.min_isr}"
        + (f", bugs {', '.join(sorted(run.config.bugs))}" if run.config.bugs else ""),
    ]
    width = max(len(r.invariant) for r in run.results)
    for r in run.results:
        lines.append(
            f"  {r.invariant.ljust(width)}  {r.action:<24} {r.status:<15} {r.seconds:.2f} s"
        )
    for r in run.results:
        if r.cti is not None:
            label, before, after = r.cti
            lines += [
                "",
                f"{r.invariant} is not preserved by {r.action}({label}) (counterexample to "
                "induction):",
                f"  pre:  {render_abstract(before)}",
                f"  post: {render_abstract(after)}",
            ]
    lines.append(f"{run.status} in {run.seconds:.2f} s")
    return "\n".join(lines) + "\n"


def run_json(run: Run) -> dict[str, Any]:
    return {
        "spec": "rebalance",
        "status": run.status,
        "brokers": run.config.brokers,
        "min_isr": run.config.min_isr,
        "bugs": sorted(run.config.bugs),
        "seconds": round(run.seconds, 3),
        "obligations": [
            {
                "invariant": r.invariant,
                "action": r.action,
                "status": r.status,
                "seconds": round(r.seconds, 3),
            }
            for r in run.results
        ],
        "never_enabled": [label for label, answer in run.enabled if answer != "sat"],
    }
