"""Proof obligations: ``Init => Inv`` and ``S /\\ Action => Inv'``, discharged by z3.

For an invariant ``Inv`` and a set ``S`` of assumed invariants (the strengthening, which
contains ``Inv``), the obligation for an action ``A`` is unsatisfiability of

    TypeOK(s) /\\ S(s) /\\ guard_A(s, args) /\\ not Inv(post_A(s, args))

for every assignment of replicas to ``A``'s arguments (with a symbolic request epoch). Each
obligation is one ``push``/``check``/``pop`` on a solver holding the pre-state hypotheses and
the action's guard, with a timeout. z3 answers *proved* (unsat), *counterexample* (sat: a
counterexample to induction, CTI) or *unknown* (timeout, or incomplete quantifier
instantiation). If every obligation of every invariant of ``S`` is proved, ``S`` is an
inductive invariant: it holds initially and every action preserves it, so it holds in every
reachable state, for every size the encoding covers.

Finding a CTI is harder for z3 than refuting one (it must build a model of the quantified
hypotheses), so when the quantified query is inconclusive the obligation is searched again
in a finite instance (epochs and record ids below ``BOUNDED_EPOCHS``, quantifiers expanded).
Every CTI, from either search, is then *checked concretely*: read back as a spec state, the
pre-state must satisfy every assumed invariant and the post-state violate the invariant,
evaluated by the encoding's Python backend, and the spec's own Python action must produce
the same post-state. Only checked CTIs count as counterexamples; a CTI that cannot be
checked leaves the obligation *unknown*.

A CTI is minimised (fewest epochs, then log records, then ids and HWs, by iterative
bounding) and rendered as a trace table in ``spec.trace``'s style. It need not be reachable:
either the invariant is false (the BMC then finds a real trace) or ``S`` is too weak.

Vacuity: ``prove`` also checks that every action is enabled in some state satisfying ``S``
(otherwise its obligations would hold vacuously).

Timing: callers pass a clock (``time.perf_counter``); nothing here reads one itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import z3

from spec.framework import Step
from spec.proofs.encoding import (
    ActionEnc,
    BoundedZ3Ops,
    Config,
    Encoding,
    EncodingError,
    PyOps,
    SymState,
    Z3Ops,
)
from spec.proofs.invariants import REGISTRY, Inv
from spec.proofs.status import COUNTEREXAMPLE, PROVED, UNKNOWN, overall
from spec.replication import Params, Pending, Quorum, Replica, Replication, State, Write

BOUNDED_EPOCHS = 6
"""The finite instance searched for a CTI when the quantified query is inconclusive:
epochs and record ids in -1..BOUNDED_EPOCHS-1."""

Clock = Callable[[], float]


@attrs.frozen
class Cti:
    """A counterexample to induction (for ``Init``: a bad initial state)."""

    action: str
    step: Step | None
    pre: State | None
    post: State
    notes: tuple[str, ...] = ()
    validated: bool = False
    """Checked concretely (see the module docstring)."""
    log_size: int | None = None


@attrs.frozen
class Result:
    invariant: str
    action: str
    """An action's name, or ``Init``."""
    status: str
    seconds: float
    queries: int
    cti: Cti | None = None
    reason: str = ""


def transition_epochs_only_grow(enc: Encoding, pre: SymState, post: SymState) -> Any:
    """Leader epochs only grow: the quorum's and every replica's."""
    ops = enc.ops
    return ops.And(
        post.q_epoch >= pre.q_epoch,
        *[b.epoch >= a.epoch for a, b in zip(pre.reps, post.reps, strict=True)],
    )


TRANSITIONS: dict[str, Callable[[Encoding, SymState, SymState], Any]] = {
    "EpochsOnlyGrow": transition_epochs_only_grow,
}


def spec_params(config: Config, log_size: int) -> Params:
    """The spec parameters a concrete state of ``config`` is replayed with (absent bounds
    become effectively infinite)."""
    big = 10**9
    return Params(
        replicas=config.replicas,
        log_size=log_size,
        max_records=big if config.max_records is None else config.max_records,
        max_epoch=big if config.max_epoch is None else config.max_epoch,
        truncation=config.truncation,
        model=config.model,
        acks=config.acks,
        min_isr=config.min_isr,
        clamp_truncation=config.clamp_truncation,
        leader_view=False if config.extended else None,
        bugs=config.bugs,
    )


class Prover:
    """Discharges obligations for one configuration."""

    def __init__(
        self,
        config: Config,
        *,
        timeout_ms: int = 20_000,
        clock: Clock | None = None,
        minimise: bool = True,
        minimise_ms: int = 2_000,
        bounded_search: bool = True,
        encoding: type[Encoding] = Encoding,
    ) -> None:
        self.config = config
        self.encoding = encoding
        """The encoding class: ``Encoding``, or a deliberately broken variant of it
        (``spec.proofs.mutants``), whose CTIs are checked against its own Python reading
        instead of the spec."""
        self.enc = encoding(config, Z3Ops())
        self.benc = encoding(config, BoundedZ3Ops(-1, BOUNDED_EPOCHS))
        self.timeout_ms = timeout_ms
        self.clock = clock
        self.minimise = minimise
        self.minimise_ms = minimise_ms
        self.bounded_search = bounded_search

    def _now(self) -> float:
        return self.clock() if self.clock else 0.0

    def _solver(self) -> Any:
        solver = z3.Solver()
        solver.set("timeout", self.timeout_ms)
        return solver

    # --- obligations -----------------------------------------------------------------------

    def init_obligation(self, inv: Inv) -> Result:
        enc = self.enc
        st = enc.fresh("s0_")
        solver = self._solver()
        solver.add(*enc.assumptions(), enc.init(st), z3.Not(inv(enc, st)))
        start = self._now()
        answer = solver.check()
        seconds = self._now() - start
        if answer == z3.unsat:
            return Result(inv.name, "Init", PROVED, seconds, 1)
        if answer == z3.sat:
            post = read_state(enc, solver.model(), st)
            cti = Cti("Init", None, None, post, validated=True)
            return Result(inv.name, "Init", COUNTEREXAMPLE, seconds, 1, cti)
        return Result(inv.name, "Init", UNKNOWN, seconds, 1, reason=solver.reason_unknown())

    def enabled(self, action: ActionEnc, assume: Sequence[Inv]) -> tuple[str, float]:
        """Is ``action`` enabled in some state satisfying ``assume``? ("sat" with a
        witness checked concretely, "unsat", or "unknown"; and the seconds it took.) An
        action never enabled there would make its obligations hold vacuously."""
        start = self._now()
        answer = "unknown"
        # a witness is easier to find in the finite instance: try it first
        for enc, prefix in ((self.benc, "w_"), (self.enc, "v_")):
            pre = enc.fresh(prefix)
            q = enc.ops.const(f"{prefix}q") if isinstance(enc.ops, Z3Ops) else None
            choices = []
            for args in enc.instances(action):
                full: dict[str, Any] = dict(args)
                if action.request:
                    full["q"] = q
                choices.append((args, enc.step(pre, action, full)[0]))
            solver = self._solver()
            solver.add(*enc.assumptions(), *(inv(enc, pre) for inv in assume))
            if enc is self.benc:
                solver.add(*_bounds(pre, q if action.request else None))
            solver.add(z3.Or(*[guard for _, guard in choices]))
            result = solver.check()
            if result == z3.unsat:
                return "unsat", self._now() - start
            if result == z3.sat:
                model = solver.model()
                state = read_state(enc, model, pre)
                for args, guard in choices:
                    if not model_bool(model, guard):
                        continue
                    concrete: dict[str, int] = dict(args)
                    if action.request:
                        concrete["q"] = model_int(model, q)
                    if self._enabled_concretely(state, action, concrete, assume, model, enc):
                        return "sat", self._now() - start
        return answer, self._now() - start

    def _enabled_concretely(
        self,
        state: State,
        action: ActionEnc,
        args: dict[str, int],
        assume: Sequence[Inv],
        model: Any,
        enc: Encoding,
    ) -> bool:
        if self.config.log_size is not None:
            size = self.config.log_size
        else:
            size = model_int(model, enc.log_size)
        penc = self.encoding(attrs.evolve(self.config, log_size=max(1, size)), PyOps())
        try:
            st = penc.from_state(state)
        except EncodingError:
            return False
        if not all(inv(penc, st) for inv in assume):
            return False
        return bool(penc.step(st, action, dict(args))[0])

    def action_obligations(
        self,
        action: ActionEnc,
        targets: Sequence[Inv],
        assume: Sequence[Inv],
        transitions: Sequence[str] = (),
    ) -> list[Result]:
        """One obligation per target invariant (and per transition property) for
        ``action``, over every assignment of its replica arguments."""
        names = [t.name for t in targets] + list(transitions)
        seconds = dict.fromkeys(names, 0.0)
        queries = dict.fromkeys(names, 0)
        found: dict[str, Cti] = {}
        unknown: dict[str, str] = {}
        unchecked: dict[str, Cti] = {}
        for args in self.enc.instances(action):
            inconclusive: list[str] = []
            for name, answer, cti, reason, spent in self._phase(
                self.enc, "s_", action, args, targets, assume, transitions, set(found)
            ):
                seconds[name] += spent
                queries[name] += 1
                if answer == z3.sat and cti is not None and cti.validated:
                    found[name] = cti
                elif answer == z3.sat and cti is not None:
                    unchecked.setdefault(name, cti)
                    inconclusive.append(name)
                elif answer == z3.unknown:
                    unknown.setdefault(name, reason)
                    inconclusive.append(name)
            if inconclusive and self.bounded_search:
                todo = [t for t in targets if t.name in inconclusive]
                trans = [t for t in transitions if t in inconclusive]
                for name, answer, cti, _reason, spent in self._phase(
                    self.benc, "t_", action, args, todo, assume, trans, set(found)
                ):
                    seconds[name] += spent
                    queries[name] += 1
                    if answer == z3.sat and cti is not None and cti.validated:
                        found[name] = cti
        results = []
        for name in names:
            if name in found:
                status, cti, reason = COUNTEREXAMPLE, found[name], ""
            elif name in unknown or name in unchecked:
                status, cti = UNKNOWN, unchecked.get(name)
                reason = unknown.get(name) or "a CTI was found but could not be checked concretely"
            else:
                status, cti, reason = PROVED, None, ""
            results.append(
                Result(name, action.name, status, seconds[name], queries[name], cti, reason)
            )
        return results

    def _phase(
        self,
        enc: Encoding,
        prefix: str,
        action: ActionEnc,
        args: dict[str, int],
        targets: Sequence[Inv],
        assume: Sequence[Inv],
        transitions: Sequence[str],
        skip: set[str],
    ) -> Iterator[tuple[str, Any, Cti | None, str, float]]:
        """Check each goal for one assignment of the action's replica arguments; yields
        (goal, z3 answer, CTI, reason unknown, seconds)."""
        pre = enc.fresh(prefix)
        q = z3.Int(f"{prefix}q")
        full: dict[str, Any] = dict(args)
        if action.request:
            full["q"] = q
        guard, post = enc.step(pre, action, full)
        solver = self._solver()
        solver.add(*enc.assumptions(), *(inv(enc, pre) for inv in assume), guard)
        if enc is self.benc:
            solver.add(*_bounds(pre, q if action.request else None))
        goals: list[tuple[str, Any]] = [(t.name, t(enc, post)) for t in targets]
        goals += [(name, TRANSITIONS[name](enc, pre, post)) for name in transitions]
        for name, goal in goals:
            if name in skip:
                continue
            solver.push()
            solver.add(z3.Not(goal))
            start = self._now()
            answer = solver.check()
            spent = self._now() - start
            cti: Cti | None = None
            reason = ""
            if answer == z3.sat:
                cti = self._cti(enc, solver, pre, action, full, name, assume)
                spent = self._now() - start
                if cti.validated:
                    skip.add(name)
            elif answer == z3.unknown:
                reason = solver.reason_unknown()
            solver.pop()
            yield name, answer, cti, reason, spent

    # --- counterexamples -------------------------------------------------------------------

    def _cti(
        self,
        enc: Encoding,
        solver: Any,
        pre: SymState,
        action: ActionEnc,
        args: dict[str, Any],
        goal: str,
        assume: Sequence[Inv],
    ) -> Cti:
        model = solver.model()
        if self.minimise:
            model = self._minimised(solver, pre, model)
        pre_state = read_state(enc, model, pre)
        concrete: dict[str, int] = {name: args[name] for name in action.replicas}
        if action.request:
            concrete["q"] = model.eval(args["q"], model_completion=True).as_long()
        shown: list[tuple[str, Any]] = []
        for name in action.params:
            if name == "q":
                shown.append(("q", read_request(enc, model, pre, concrete["q"])))
            else:
                shown.append((name, args[name]))
        step = Step(action.name, tuple(shown))
        if self.config.log_size is not None:
            log_size = self.config.log_size
        else:
            log_size = int(model.eval(enc.log_size, model_completion=True).as_long())
        notes: list[str] = []
        stray = stray_requests(enc, model, pre)
        if stray:
            notes.append(f"the model also holds requests with epochs {stray}, not shown")
        post_state, problem = self.validate(pre_state, action, concrete, goal, assume, log_size)
        if post_state is None:
            notes.append(f"not checked concretely: {problem}")
            post_state = read_state(enc, model, enc.step(pre, action, args)[1])
        return Cti(
            action.name,
            step,
            pre_state,
            post_state,
            tuple(notes),
            validated=not problem,
            log_size=log_size,
        )

    def _minimised(self, solver: Any, pre: SymState, model: Any) -> Any:
        """Iterative bounding: fewest epochs handed out, then fewest log records, then the
        smallest ids and HWs. Each measure is bounded by the smallest value that stays
        satisfiable among 0..8 (then by halving), each check with a short timeout."""
        measures = [
            pre.next_epoch + z3.Sum([z3.If(rep.epoch > 0, rep.epoch, 0) for rep in pre.reps]),
            z3.Sum([rep.leo for rep in pre.reps]),
            pre.next_id,
            z3.Sum([z3.If(rep.hw > 0, rep.hw, 0) for rep in pre.reps]),
        ]
        solver.push()
        solver.set("timeout", self.minimise_ms)
        try:
            for measure in measures:
                value = model.eval(measure, model_completion=True).as_long()
                bounds = set(range(0, min(value, 9)))
                bound = value
                while bound > 16:
                    bound //= 2
                    bounds.add(bound)
                for bound in sorted(bounds):
                    solver.push()
                    solver.add(measure <= bound)
                    if solver.check() == z3.sat:
                        model = solver.model()
                        solver.pop()
                        break
                    solver.pop()
                solver.add(measure <= model.eval(measure, model_completion=True).as_long())
        finally:
            solver.pop()
            solver.set("timeout", self.timeout_ms)
        return model

    def validate(
        self,
        pre_state: State,
        action: ActionEnc,
        args: dict[str, int],
        goal: str,
        assume: Sequence[Inv],
        log_size: int,
    ) -> tuple[State | None, str]:
        """Re-check a CTI on the concrete state: the assumed invariants hold before, the
        action is enabled and breaks ``goal``, by the Python backend; and the spec's own
        action agrees. Returns (post-state, "") or (None, what failed)."""
        size = min(max(log_size, 1), self.config.log_bound)
        config = attrs.evolve(self.config, log_size=size)
        penc = self.encoding(config, PyOps())
        try:
            st = penc.from_state(pre_state)
        except EncodingError as err:
            return None, str(err)
        failing = [inv.name for inv in assume if not inv(penc, st)]
        if failing:
            return None, f"the pre-state violates {failing} once read as a finite state"
        guard, post = penc.step(st, action, dict(args))
        if not guard:
            return None, "the action is not enabled in the finite pre-state"
        if goal in TRANSITIONS:
            holds = TRANSITIONS[goal](penc, st, post)
        else:
            holds = REGISTRY[goal](penc, post)
        if holds:
            return None, f"{goal} holds after the action in the finite state"
        post_state = penc.to_state(post)
        if self.encoding is not Encoding:
            return post_state, ""  # a mutant has no spec to agree with
        spec = Replication(spec_params(config, size))
        decl = next(d for d in spec.actions() if d.name == action.name)
        spec_args = tuple(
            next(q for q in pre_state.requests if q.epoch == args["q"]) if p == "q" else args[p]
            for p in decl.params
        )
        domain = list(getattr(spec, decl.domain)(pre_state)) if decl.domain else [()]
        if spec_args not in domain:
            return None, "the spec's argument domain excludes these arguments"
        try:
            expected = getattr(spec, decl.method)(pre_state, *spec_args)
        except Exception as err:  # the spec is undefined on a state no run reaches
            return None, f"the spec's action raises {type(err).__name__} on this state"
        if expected != post_state:
            raise AssertionError(
                f"the encoding of {action.name} disagrees with the spec on {pre_state!r}: "
                f"encoding {post_state!r}, spec {expected!r}"
            )
        return post_state, ""


def _bounds(pre: SymState, q: Any) -> list[Any]:
    top = BOUNDED_EPOCHS
    out = [pre.next_epoch >= 0, pre.next_epoch <= top, pre.next_id >= 0, pre.next_id <= top]
    out += [pre.q_epoch >= -1, pre.q_epoch < top]
    for rep in pre.reps:
        out += [rep.epoch >= -1, rep.epoch < top]
    if q is not None:
        out += [q >= 0, q < top]
    return out


# --- reading models ------------------------------------------------------------------------


def model_int(model: Any, term: Any) -> int:
    """The integer a z3 model gives ``term`` (a bit-vector read as signed)."""
    value = model.eval(term, model_completion=True)
    if z3.is_bv_value(value):
        return int(value.as_signed_long())
    return int(value.as_long())


def model_bool(model: Any, term: Any) -> bool:
    """Whether a z3 model makes ``term`` true."""
    return bool(z3.is_true(model.eval(term, model_completion=True)))


def _key(enc: Encoding, k: int) -> Any:
    return enc.ops.lit(k)


def _sel(enc: Encoding, arr: Any, key: Any) -> Any:
    return enc.ops.select(arr, key)


def read_request(enc: Encoding, model: Any, st: SymState, e: int) -> Quorum:
    key = _key(enc, e)
    leader = model_int(model, _sel(enc, st.req_leader, key))
    isr = frozenset(m for m in enc.ids if model_bool(model, _sel(enc, st.req_isr[m - 1], key)))
    return Quorum(e, leader, isr)


def epoch_window(model: Any, st: SymState) -> range:
    top = max(
        [model_int(model, st.next_epoch), model_int(model, st.q_epoch)]
        + [model_int(model, rep.epoch) for rep in st.reps]
    )
    return range(-1, max(top, 0) + 3)


def stray_requests(enc: Encoding, model: Any, st: SymState) -> list[int]:
    """Request epochs a model holds outside the window ``read_state`` shows (probed)."""
    window = epoch_window(model, st)
    probes = [-50, -10, -2, window.stop + 5, window.stop + 50, 10**6]
    return [e for e in probes if model_bool(model, _sel(enc, st.req_in, e))]


def read_state(enc: Encoding, model: Any, st: SymState) -> State:
    """The spec state a model assigns to ``st`` (requests within a window of epochs)."""
    reps = []
    for rep in st.reps:
        leo = max(0, min(model_int(model, rep.leo), enc.L))
        log = tuple(
            (model_int(model, rep.log_ep[k]), model_int(model, rep.log_id[k])) for k in range(leo)
        )
        isr = frozenset(m for m in enc.ids if model_bool(model, rep.isr[m - 1]))
        reps.append(
            Replica(
                log,
                model_int(model, rep.hw),
                model_int(model, rep.epoch),
                model_int(model, rep.leader),
                isr,
            )
        )
    requests = frozenset(
        read_request(enc, model, st, e)
        for e in epoch_window(model, st)
        if model_bool(model, _sel(enc, st.req_in, _key(enc, e)))
    )
    next_id = model_int(model, st.next_id)
    ids = range(-1, max(next_id, 0) + 3)
    pending: frozenset[Pending] = frozenset()
    acked: frozenset[Write] = frozenset()
    if enc.c.extended:
        pending = frozenset(
            Pending(
                model_int(model, _sel(enc, st.pend_leader, _key(enc, i))),
                model_int(model, _sel(enc, st.pend_offset, _key(enc, i))),
                i,
            )
            for i in ids
            if model_bool(model, _sel(enc, st.pend_in, _key(enc, i)))
        )
        acked = frozenset(
            Write(model_int(model, _sel(enc, st.acked_offset, _key(enc, i))), i, enc.c.acked_kind)
            for i in ids
            if model_bool(model, _sel(enc, st.acked_in, _key(enc, i)))
        )
    quorum_isr = frozenset(m for m in enc.ids if model_bool(model, st.q_isr[m - 1]))
    return State(
        replicas=tuple(reps),
        quorum=Quorum(model_int(model, st.q_epoch), model_int(model, st.q_leader), quorum_isr),
        requests=requests,
        next_record_id=next_id,
        next_epoch=model_int(model, st.next_epoch),
        acked=acked,
        pending=pending,
    )


# --- runs ----------------------------------------------------------------------------------


@attrs.frozen
class Run:
    """The outcome of proving a set of invariants for one configuration."""

    config: Config
    mode: str
    """``relative``: each target invariant relative to the whole strengthening;
    ``alone``: each invariant relative to itself (and TypeOK) only."""
    assumed: tuple[str, ...]
    results: tuple[Result, ...]
    seconds: float
    enabled: tuple[tuple[str, str], ...] = ()
    """Per action: is it enabled in some state satisfying the assumptions (sat)?"""

    @property
    def status(self) -> str:
        return overall(r.status for r in self.results)

    @property
    def vacuous(self) -> list[str]:
        """Actions never enabled under the assumptions (their obligations prove nothing)."""
        return [name for name, answer in self.enabled if answer != "sat"]

    def table(self) -> dict[str, dict[str, Result]]:
        out: dict[str, dict[str, Result]] = {}
        for r in self.results:
            out.setdefault(r.invariant, {})[r.action] = r
        return out


def applicable(config: Config) -> list[Inv]:
    return [inv for inv in REGISTRY.values() if config.extended or not inv.extended_only]


def prove(
    config: Config,
    invariants: Sequence[str] | None = None,
    *,
    strengthening: Sequence[str] | None = None,
    mode: str = "relative",
    actions: Sequence[str] | None = None,
    transitions: Sequence[str] = ("EpochsOnlyGrow",),
    timeout_ms: int = 20_000,
    clock: Clock | None = None,
    minimise: bool = True,
    bounded_search: bool = True,
    check_vacuity: bool = True,
    progress: Callable[[Result], None] | None = None,
    encoding: type[Encoding] = Encoding,
) -> Run:
    """Prove ``invariants`` (default: every applicable one) for ``config``.

    ``relative``: each is checked against the conjunction of ``strengthening`` (default: the
    same list) plus TypeOK; ``alone``: each against itself plus TypeOK.
    """
    prover = Prover(
        config,
        timeout_ms=timeout_ms,
        clock=clock,
        minimise=minimise,
        bounded_search=bounded_search,
        encoding=encoding,
    )
    by_name = {inv.name: inv for inv in applicable(config)}
    names = list(invariants) if invariants is not None else list(by_name)
    missing = [n for n in [*names, *(strengthening or ())] if n not in by_name]
    if missing:
        raise KeyError(
            f"unknown invariant(s) {missing} for this configuration; known: " + ", ".join(by_name)
        )
    unknown_transitions = [t for t in transitions if t not in TRANSITIONS]
    if unknown_transitions:
        raise KeyError(f"unknown transition property {unknown_transitions}")
    targets = [by_name[n] for n in names]
    type_ok = by_name["TypeOk"]
    if mode == "relative":
        base = list(strengthening) if strengthening is not None else names
        assumed = [by_name[n] for n in dict.fromkeys(["TypeOk", *base])]
    elif mode == "alone":
        assumed = [type_ok]
    else:
        raise ValueError(f"mode must be relative or alone, got {mode!r}")
    chosen = (
        prover.enc.actions() if actions is None else tuple(prover.enc.action(a) for a in actions)
    )
    start = clock() if clock else 0.0
    results: list[Result] = []

    def emit(result: Result) -> None:
        results.append(result)
        if progress is not None:
            progress(result)

    for inv in targets:
        emit(prover.init_obligation(inv))
    enabled: list[tuple[str, str]] = []
    for action in chosen:
        if check_vacuity:
            answer, _ = prover.enabled(action, assumed)
            enabled.append((action.name, answer))
        if mode == "relative":
            for result in prover.action_obligations(action, targets, assumed, transitions):
                emit(result)
            continue
        for inv in targets:
            hyps = [type_ok] if inv is type_ok else [type_ok, inv]
            for result in prover.action_obligations(action, [inv], hyps):
                emit(result)
        if transitions:
            for result in prover.action_obligations(action, [], [type_ok], transitions):
                emit(result)
    seconds = (clock() - start) if clock else 0.0
    return Run(
        config,
        mode,
        tuple(i.name for i in assumed),
        tuple(results),
        seconds,
        tuple(enabled),
    )
