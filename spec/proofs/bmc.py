"""Bounded model checking: the encoding unrolled k steps from the initial state.

``s_0`` is an initial state; ``s_{i+1}`` is the successor of ``s_i`` by one of the actions
(one disjunct per action and assignment of its replica arguments, with a symbolic request
epoch per step). For k = 0, 1, 2, ... the solver is asked for a state ``s_k`` that violates
the invariant; the first k that is satisfiable gives a shortest counterexample, of k steps
(k + 1 states: the explicit checker's "depth"). The trace is read back as spec states, so
it can be replayed through the Python spec and rendered with ``spec.trace``.

Unlike the inductive proofs, BMC needs bounded parameters (``Config.of(params)`` with its
default ``bounded=True``): it explores the same state space as the explicit checker, by a
different method, and must find counterexamples of the same length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import z3

from spec.explore import TraceStep
from spec.framework import Step
from spec.proofs.encoding import Config, Encoding, SymState, VecOps, Z3Ops
from spec.proofs.invariants import REGISTRY
from spec.proofs.obligations import model_bool, model_int, read_request, read_state

WIDTH = 8
"""Bit-vector width: values of bounded configurations stay far below 2**7."""


@attrs.frozen
class BmcResult:
    invariant: str
    status: str
    """``counterexample``, ``no violation within the bound`` (``bounded``) or ``unknown``."""
    steps: int
    """The length of the counterexample in steps, or the bound reached."""
    trace: tuple[TraceStep, ...] = ()
    seconds: float = 0.0
    reason: str = ""

    @property
    def depth(self) -> int:
        """States along the trace (the explicit checker's and TLC's depth)."""
        return self.steps + 1


def _same(enc: Encoding, pre: SymState, post: SymState) -> Any:
    """Field-wise equality of two states (arrays extensionally)."""
    assert isinstance(enc.ops, Z3Ops)
    same = enc.ops.arrays_equal
    eqs = [
        pre.q_epoch == post.q_epoch,
        pre.q_leader == post.q_leader,
        pre.next_epoch == post.next_epoch,
        pre.next_id == post.next_id,
        same(pre.req_in, post.req_in),
        same(pre.req_leader, post.req_leader),
        same(pre.pend_in, post.pend_in),
        same(pre.pend_leader, post.pend_leader),
        same(pre.pend_offset, post.pend_offset),
        same(pre.acked_in, post.acked_in),
        same(pre.acked_offset, post.acked_offset),
    ]
    eqs += [a == b for a, b in zip(pre.q_isr, post.q_isr, strict=True)]
    eqs += [same(a, b) for a, b in zip(pre.req_isr, post.req_isr, strict=True)]
    for a, b in zip(pre.reps, post.reps, strict=True):
        eqs += [a.leo == b.leo, a.hw == b.hw, a.epoch == b.epoch, a.leader == b.leader]
        eqs += [x == y for x, y in zip(a.isr, b.isr, strict=True)]
        eqs += [x == y for x, y in zip(a.log_ep, b.log_ep, strict=True)]
        eqs += [x == y for x, y in zip(a.log_id, b.log_id, strict=True)]
    return z3.And(*eqs)


def bmc(
    config: Config,
    invariant: str,
    max_steps: int,
    *,
    lemmas: Sequence[str] = (),
    timeout_ms: int = 120_000,
    clock: Callable[[], float] | None = None,
) -> BmcResult:
    """The shortest trace (in steps, up to ``max_steps``) to a state violating
    ``invariant``.

    With bounded records and epochs (the explicit checker's configurations) integers are
    8-bit signed bit-vectors and the maps finite vectors (``VecOps``): exact there, and
    propositional. Each depth is a fresh, non-incremental query (z3's preprocessing then
    applies, much faster than push/pop here). ``lemmas`` are invariants asserted in every
    state of the unrolling to prune it; they must be invariants of ``config`` (prove them
    first, e.g. ``prove(config, lemmas)``), or the search could miss traces."""
    if invariant not in REGISTRY:
        raise KeyError(f"unknown invariant {invariant!r}; known: {', '.join(REGISTRY)}")
    inv = REGISTRY[invariant]
    ops: Z3Ops
    if config.max_records is not None and config.max_epoch is not None:
        # every key ever stored is an epoch <= max_epoch or an id < max_records
        ops = VecOps(-1, max(config.max_epoch, config.max_records) + 2, WIDTH)
    else:
        ops = Z3Ops()
    enc = Encoding(config, ops)
    start = clock() if clock else 0.0
    states = [enc.fresh("b0_")]
    steps: list[Any] = [*enc.assumptions(), enc.init(states[0])]
    labels: list[list[tuple[Any, str, dict[str, Any], tuple[str, ...]]]] = []
    for k in range(max_steps + 1):
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*steps)
        solver.add(z3.Not(inv(enc, states[k])))
        answer = solver.check()
        if answer == z3.sat:
            trace = _read_trace(enc, solver.model(), states, labels)
            seconds = (clock() - start) if clock else 0.0
            return BmcResult(invariant, "counterexample", k, tuple(trace), seconds)
        if answer == z3.unknown:
            seconds = (clock() - start) if clock else 0.0
            return BmcResult(invariant, "unknown", k, (), seconds, solver.reason_unknown())
        if k == max_steps:
            break
        pre, post = states[k], enc.fresh(f"b{k + 1}_")
        q = ops.const(f"bq{k}")
        disjuncts = []
        step_labels = []
        for action in enc.actions():
            for args in enc.instances(action):
                full: dict[str, Any] = dict(args)
                if action.request:
                    full["q"] = q
                guard, image = enc.step(pre, action, full)
                taken = z3.And(guard, _same(enc, image, post))
                disjuncts.append(taken)
                step_labels.append((taken, action.name, full, action.params))
        steps.append(z3.Or(*disjuncts))
        steps += [REGISTRY[name](enc, post) for name in lemmas]
        states.append(post)
        labels.append(step_labels)
    seconds = (clock() - start) if clock else 0.0
    return BmcResult(invariant, "bounded", max_steps, (), seconds)


def _read_trace(
    enc: Encoding,
    model: Any,
    states: list[SymState],
    labels: list[list[tuple[Any, str, dict[str, Any], tuple[str, ...]]]],
) -> list[TraceStep]:
    trace = [TraceStep(None, read_state(enc, model, states[0]))]
    for i, step_labels in enumerate(labels):
        step: Step | None = None
        for taken, name, args, params in step_labels:
            if model_bool(model, taken):
                shown: list[tuple[str, Any]] = []
                for p in params:
                    if p == "q":
                        e = model_int(model, args["q"])
                        shown.append(("q", read_request(enc, model, states[i], e)))
                    else:
                        shown.append((p, args[p]))
                step = Step(name, tuple(shown))
                break
        assert step is not None, f"no action explains step {i + 1} of the BMC trace"
        trace.append(TraceStep(step, read_state(enc, model, states[i + 1])))
    return trace
