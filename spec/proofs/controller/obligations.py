"""Proof obligations for the controller spec, discharged by z3.

For an invariant ``Inv`` of the strengthening ``S`` and an action instance ``A`` (concrete
broker and partition arguments; a request argument is a symbolic key of the request set),
the obligation is unsatisfiability of

    TypeOk(s) /\\ S(s) /\\ guard_A(s, key) /\\ not Inv(post_A(s, key))

over unbounded integers and sets (``Z3Ops``). A transition property ``P`` gives
``S(s) /\\ guard_A => P(s, post_A)``. ``Init => Inv`` is evaluated on the spec's single
initial state. If every obligation is proved, ``S`` is an inductive invariant: it holds in
every reachable state, for every number of elections, leader changes, session expiries and
requests.

When the unbounded query does not say unsat, the same query is searched in a finite window
of epochs (``WindowOps``: quantifier-free, every set member readable). A model found there
is a counterexample to induction (CTI) only once it is *checked concretely*: read back as
Python values, the pre-state satisfies every assumed invariant, the action is enabled and
the goal fails, by the encoding's Python reading; and the spec's own action, from the same
state, produces the same successor. A CTI that cannot be checked leaves the obligation
*unknown*; so does an unbounded query that times out.

Vacuity: every action instance must be enabled in some state satisfying ``S`` (a checked
witness), or its obligations would hold for nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import z3

from spec.controller import Controller, State
from spec.framework import Step
from spec.proofs.controller.encoding import ActionEnc, Config, Encoding, SymPart, SymRep, SymState
from spec.proofs.controller.invariants import REGISTRY, TRANSITIONS, Inv
from spec.proofs.controller.ops import PyOps, WindowOps, Z3Ops
from spec.proofs.status import COUNTEREXAMPLE, PROVED, UNKNOWN, overall

Clock = Callable[[], float]


@attrs.frozen
class Cti:
    """A counterexample to induction, checked concretely."""

    step: Step
    pre: State
    post: State
    notes: tuple[str, ...] = ()


@attrs.frozen
class Result:
    invariant: str
    action: str
    """An action's name (all its instances), or ``Init``."""
    status: str
    seconds: float
    queries: int
    cti: Cti | None = None
    reason: str = ""


@attrs.frozen
class Run:
    config: Config
    assumed: tuple[str, ...]
    results: tuple[Result, ...]
    seconds: float
    enabled: tuple[tuple[str, str], ...] = ()
    """Per action instance (its label): enabled in some state satisfying the assumptions?"""

    @property
    def status(self) -> str:
        return overall(r.status for r in self.results)

    def table(self) -> dict[str, dict[str, Result]]:
        out: dict[str, dict[str, Result]] = {}
        for r in self.results:
            out.setdefault(r.invariant, {})[r.action] = r
        return out


def strengthening() -> list[str]:
    """Every invariant of the registry: well-formedness, the spec's, the auxiliary ones."""
    return list(REGISTRY)


# --- reading models --------------------------------------------------------------------------


def _value(model: Any, term: Any) -> Any:
    value = model.eval(term, model_completion=True)
    if z3.is_bool(value):
        return bool(z3.is_true(value))
    return int(value.as_long())


def read_state(model: Any, st: SymState) -> SymState:
    """A window model's state as Python values (``PyOps``)."""

    def part(sp: SymPart) -> SymPart:
        return SymPart(
            _value(model, sp.leader),
            _value(model, sp.le),
            tuple(_value(model, x) for x in sp.isr),
        )

    def members(s: dict[tuple[int, ...], Any]) -> frozenset[tuple[int, ...]]:
        return frozenset(key for key, term in s.items() if _value(model, term))

    brokers = tuple(
        attrs.evolve(
            sb,
            ce=_value(model, sb.ce),
            act=_value(model, sb.act),
            ver=_value(model, sb.ver),
            reps=tuple(SymRep(_value(model, r.le), _value(model, r.leader)) for r in sb.reps),
            ctx=tuple(part(c) for c in sb.ctx),
        )
        for sb in st.brokers
    )
    return SymState(
        sess=tuple(_value(model, x) for x in st.sess),
        ctl=_value(model, st.ctl),
        cepoch=_value(model, st.cepoch),
        cver=_value(model, st.cver),
        parts=tuple(part(sp) for sp in st.parts),
        brokers=brokers,
        um=members(st.um),
        lai=tuple(members(s) for s in st.lai),
        sr=tuple(tuple(members(s) for s in row) for row in st.sr),
        wrote=tuple(members(s) for s in st.wrote),
        hist=tuple({k: _value(model, v) for k, v in h.items()} for h in st.hist),
        expiries=_value(model, st.expiries),
    )


class Prover:
    """Discharges the obligations of one configuration."""

    def __init__(
        self,
        config: Config,
        *,
        timeout_ms: int = 20_000,
        window_timeout_ms: int = 60_000,
        clock: Clock | None = None,
    ):
        self.config = config
        self.window_timeout_ms = window_timeout_ms
        """The window search is quantifier-free and quick; its own, generous timeout keeps a
        short ``timeout_ms`` from turning a CTI it would find into an unknown."""
        self.enc = Encoding(config, Z3Ops())
        self.wenc = Encoding(config, WindowOps())
        self.penc = Encoding(config, PyOps())
        self.spec = Controller(config.params())
        self.timeout_ms = timeout_ms
        self.clock = clock

    def _now(self) -> float:
        return self.clock() if self.clock else 0.0

    def _solver(self) -> Any:
        solver = z3.Solver()
        solver.set("timeout", self.timeout_ms)
        return solver

    def init_obligation(self, inv: Inv) -> Result:
        start = self._now()
        init = self.penc.init()
        holds = bool(inv(self.penc, init))
        seconds = self._now() - start
        if holds:
            return Result(inv.name, "Init", PROVED, seconds, 0)
        cti = Cti(Step("Init"), self.penc.to_state(init), self.penc.to_state(init))
        return Result(inv.name, "Init", COUNTEREXAMPLE, seconds, 0, cti)

    def _goal(self, enc: Encoding, name: str, pre: SymState, post: SymState) -> Any:
        if name in TRANSITIONS:
            return TRANSITIONS[name](enc, pre, post)
        return REGISTRY[name](enc, post)

    def _query(
        self, enc: Encoding, prefix: str, a: ActionEnc, assume: Sequence[Inv]
    ) -> tuple[Any, SymState, tuple[Any, ...], SymState]:
        pre = enc.fresh(prefix)
        key = tuple(z3.Int(f"{prefix}key{i}") for i in range(a.arity))
        guard, post = enc.step(pre, a, key)
        solver = self._solver()
        solver.add(*(inv(enc, pre) for inv in assume), guard)
        if enc is self.wenc:
            solver.set("timeout", self.window_timeout_ms)
            solver.add(*enc.window_bounds(pre, key))
        return solver, pre, key, post

    def obligations(
        self, a: ActionEnc, goals: Sequence[str], assume: Sequence[Inv]
    ) -> list[tuple[str, str, float, Cti | None, str]]:
        """(goal, status, seconds, CTI, reason) for each goal, for instance ``a``."""
        solver, pre, _key, post = self._query(self.enc, "s_", a, assume)
        out: list[tuple[str, str, float, Cti | None, str]] = []
        pending = []
        for name in goals:
            solver.push()
            solver.add(z3.Not(self._goal(self.enc, name, pre, post)))
            start = self._now()
            answer = solver.check()
            seconds = self._now() - start
            reason = solver.reason_unknown() if answer == z3.unknown else ""
            solver.pop()
            if answer == z3.unsat:
                out.append((name, PROVED, seconds, None, ""))
            else:
                pending.append((name, seconds, reason or "z3 found a model of the negation"))
        if not pending:
            return out
        wsolver, wpre, wkey, wpost = self._query(self.wenc, "w_", a, assume)
        for name, seconds, reason in pending:
            wsolver.push()
            wsolver.add(z3.Not(self._goal(self.wenc, name, wpre, wpost)))
            start = self._now()
            answer = wsolver.check()
            seconds += self._now() - start
            cti: Cti | None = None
            problem = "no counterexample within the window"
            if answer == z3.sat:
                model = wsolver.model()
                concrete = read_state(model, wpre)
                key = tuple(_value(model, k) for k in wkey)
                cti, problem = self.validate(concrete, a, key, name, assume)
            wsolver.pop()
            if cti is not None:
                out.append((name, COUNTEREXAMPLE, seconds, cti, ""))
            else:
                out.append((name, UNKNOWN, seconds, None, f"{reason}; {problem}"))
        return out

    def validate(
        self,
        pre: SymState,
        a: ActionEnc,
        key: tuple[int, ...],
        goal: str,
        assume: Sequence[Inv],
    ) -> tuple[Cti | None, str]:
        """Check a CTI concretely (see the module docstring): (CTI, "") or (None, why not)."""
        penc = self.penc
        failing = [inv.name for inv in assume if not inv(penc, pre)]
        if failing:
            return None, f"the pre-state violates {failing} when read concretely"
        guard, post = penc.step(pre, a, key)
        if not guard:
            return None, "the action is not enabled in the concrete pre-state"
        if self._goal(penc, goal, pre, post):
            return None, f"{goal} holds after the action in the concrete state"
        before, after = penc.to_state(pre), penc.to_state(post)
        spec = self.spec
        decl = next(d for d in spec.actions() if d.name == a.name)
        args = penc.spec_args(a, key)
        domain = list(getattr(spec, decl.domain)(before)) if decl.domain else [()]
        if args not in domain:
            return None, "the spec's argument domain excludes these arguments"
        expected = getattr(spec, decl.method)(before, *args)
        if expected != after:
            raise AssertionError(
                f"the encoding of {a.label()} disagrees with the spec on {before!r}: "
                f"encoding {after!r}, spec {expected!r}"
            )
        notes = []
        if any(int(part.le) >= 0 for part in pre.parts):
            hist = "; ".join(
                f"p{p}: "
                + ", ".join(
                    f"e{e}->{leader}"
                    for e, leader in sorted(h.items())
                    if 0 <= e <= int(pre.parts[p].le)
                )
                for p, h in enumerate(pre.hist)
            )
            notes.append(f"the proof's history (leader per leader epoch): {hist}")
        return Cti(spec.step_of(decl, args), before, after, tuple(notes)), ""

    def enabled(self, a: ActionEnc, assume: Sequence[Inv]) -> str:
        """Is instance ``a`` enabled in some state satisfying ``assume``? ("sat" with a
        witness checked concretely, "unsat", or "unknown")."""
        solver, pre, key, _post = self._query(self.wenc, "v_", a, assume)
        answer = solver.check()
        if answer == z3.unsat:
            return "unsat"
        if answer != z3.sat:
            return "unknown"
        model = solver.model()
        concrete = read_state(model, pre)
        values = tuple(_value(model, k) for k in key)
        if not all(inv(self.penc, concrete) for inv in assume):
            return "unknown"
        guard, _ = self.penc.step(concrete, a, values)
        return "sat" if guard else "unknown"


def prove(
    config: Config,
    invariants: Sequence[str] | None = None,
    *,
    actions: Sequence[str] | None = None,
    assumed: Sequence[str] | None = None,
    transitions: Sequence[str] | None = None,
    timeout_ms: int = 20_000,
    clock: Clock | None = None,
    check_vacuity: bool = True,
    progress: Callable[[Result], None] | None = None,
) -> Run:
    """Prove ``invariants`` (default: the whole strengthening and every transition
    property; names of either kind) for ``config``, each relative to ``assumed`` (default:
    the strengthening)."""
    if invariants is None:
        names, trans = strengthening(), list(TRANSITIONS)
    else:
        names = [n for n in invariants if n not in TRANSITIONS]
        trans = [n for n in invariants if n in TRANSITIONS]
    if transitions is not None:
        trans = list(transitions)
    base = list(assumed) if assumed is not None else strengthening()
    unknown = [n for n in [*names, *base] if n not in REGISTRY]
    unknown += [t for t in trans if t not in TRANSITIONS]
    if unknown:
        known = ", ".join([*REGISTRY, *TRANSITIONS])
        raise KeyError(f"unknown invariant(s) {unknown}; known: {known}")
    assume = [REGISTRY[n] for n in dict.fromkeys(["TypeOk", *base])]
    prover = Prover(config, timeout_ms=timeout_ms, clock=clock)
    instances = prover.enc.actions()
    if actions is not None:
        wanted = set(actions)
        missing = wanted - {a.name for a in instances}
        if missing:
            raise KeyError(
                f"no action {sorted(missing)[0]!r} in this configuration; known: "
                + ", ".join(sorted({a.name for a in instances}))
            )
        instances = [a for a in instances if a.name in wanted]
    start = clock() if clock else 0.0
    results: list[Result] = []

    def emit(result: Result) -> None:
        results.append(result)
        if progress is not None:
            progress(result)

    for name in names:
        emit(prover.init_obligation(REGISTRY[name]))
    enabled: list[tuple[str, str]] = []
    by_action: dict[str, dict[str, list[tuple[str, float, Cti | None, str]]]] = {}
    for a in instances:
        if check_vacuity:
            enabled.append((a.label(), prover.enabled(a, assume)))
        for goal, status, seconds, cti, reason in prover.obligations(a, [*names, *trans], assume):
            by_action.setdefault(a.name, {}).setdefault(goal, []).append(
                (status, seconds, cti, reason)
            )
    for action, goals in by_action.items():
        for goal, outcomes in goals.items():
            statuses = [o[0] for o in outcomes]
            status = (
                COUNTEREXAMPLE
                if COUNTEREXAMPLE in statuses
                else UNKNOWN
                if UNKNOWN in statuses
                else PROVED
            )
            cti = next((o[2] for o in outcomes if o[2] is not None), None)
            reason = next((o[3] for o in outcomes if o[3]), "")
            emit(
                Result(
                    goal, action, status, sum(o[1] for o in outcomes), len(outcomes), cti, reason
                )
            )
    seconds = (clock() - start) if clock else 0.0
    return Run(config, tuple(a.name for a in assume), tuple(results), seconds, tuple(enabled))
