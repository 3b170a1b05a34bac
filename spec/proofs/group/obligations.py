"""Proof obligations for KIP-848's consumer group, discharged by z3.

For every invariant ``Inv`` of the strengthening ``S`` (the spec's invariants and the
auxiliary ones below) and every action instance ``A``, z3 shows unsatisfiable

    S(s) /\\ guard_A(s) /\\ not Inv(post_A(s))

over unbounded integers (epochs); a transition property ``P`` gives
``S(s) /\\ guard_A => P(s, post_A)``. ``Init => Inv`` is evaluated on the spec's initial
state. If every obligation is proved, ``S`` holds in every reachable state, for every
number of joins, leaves, expiries, lost answers and coordinator moves. A model z3 finds is
read back as a spec state and reported as a counterexample to induction (CTI): the
pre-state satisfies every assumed invariant, and the goal fails after the action.

Why the strengthening is what it is: a consumer that is current (a member, at its record's
member epoch) owns only partitions its record holds (``OwnedWithinRecord``), because its
epoch comes from its own record and a record's epoch only grows while it is a member
(``EpochsNotAhead``); records never overlap because a partition is handed out only when no
other record holds it (the spec's ``AssignmentPartitionsSubscribedPartitions``), and a
record at the group epoch holds only its target (``AtTargetWithinTarget``), so reaching
the target never keeps a partition that moved. Together: no two current consumers own a
partition (``OneOwnerPerPartition``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

from spec.group.consumer import State
from spec.group.params import Params
from spec.proofs.group.encoding import PER_CONSUMER, Encoding, Sym
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

InvFn = Callable[[Encoding, Sym], Any]


def _pairs(n: int) -> list[tuple[int, int]]:
    return [(a, b) for a in range(n) for b in range(n) if a < b]


def _current(s: Sym, c: int) -> Any:
    return z3.And(s.has[c], s.cep[c] == s.rep[c], s.cep[c] != 0)


def assignment_partitions_subscribed_partitions(enc: Encoding, s: Sym) -> Any:
    """The spec's: the target partitions the partitions among the members, and records
    (assigned or revoking) never overlap."""
    terms = []
    anyone = z3.Or(*s.has)
    for p in range(enc.np):
        terms.append(z3.Implies(anyone, z3.Or(*[s.tgt[c][p] for c in range(enc.n)])))
        for c in range(enc.n):
            terms.append(z3.Implies(s.tgt[c][p], s.has[c]))
        for a, b in _pairs(enc.n):
            terms.append(z3.Not(z3.And(s.tgt[a][p], s.tgt[b][p])))
            held_a = z3.And(s.has[a], z3.Or(s.asg[a][p], s.rev[a][p]))
            held_b = z3.And(s.has[b], z3.Or(s.asg[b][p], s.rev[b][p]))
            terms.append(z3.Not(z3.And(held_a, held_b)))
    return z3.And(*terms)


def one_owner_per_partition(enc: Encoding, s: Sym) -> Any:
    """The spec's: no partition is owned by two current consumers."""
    return z3.And(
        *[
            z3.Not(z3.And(_current(s, a), s.own[a][p], _current(s, b), s.own[b][p]))
            for p in range(enc.np)
            for a, b in _pairs(enc.n)
        ]
    )


def owned_within_record(enc: Encoding, s: Sym) -> Any:
    """Auxiliary: a current consumer owns only partitions its record assigns or revokes."""
    return z3.And(
        *[
            z3.Implies(z3.And(_current(s, c), s.own[c][p]), z3.Or(s.asg[c][p], s.rev[c][p]))
            for c in range(enc.n)
            for p in range(enc.np)
        ]
    )


def epochs_not_ahead(enc: Encoding, s: Sym) -> Any:
    """Auxiliary: epochs are non-negative; a record's epoch is at most the group epoch, and
    a member consumer's epoch, when not 0, at most its record's."""
    terms = [s.ge >= 0]
    for c in range(enc.n):
        terms += [s.cep[c] >= 0, s.rep[c] >= 0]
        terms.append(z3.Implies(s.has[c], s.rep[c] <= s.ge))
        terms.append(z3.Implies(z3.And(s.has[c], s.cep[c] != 0), s.cep[c] <= s.rep[c]))
    return z3.And(*terms)


def at_target_within_target(enc: Encoding, s: Sym) -> Any:
    """Auxiliary: a record at the group epoch holds only its target and revokes nothing."""
    return z3.And(
        *[
            z3.Implies(
                z3.And(s.has[c], s.rep[c] == s.ge),
                z3.And(z3.Implies(s.asg[c][p], s.tgt[c][p]), z3.Not(s.rev[c][p])),
            )
            for c in range(enc.n)
            for p in range(enc.np)
        ]
    )


INVARIANTS: dict[str, tuple[InvFn, str]] = {
    "AssignmentPartitionsSubscribedPartitions": (
        assignment_partitions_subscribed_partitions,
        "spec",
    ),
    "OneOwnerPerPartition": (one_owner_per_partition, "spec"),
    "OwnedWithinRecord": (owned_within_record, "aux"),
    "EpochsNotAhead": (epochs_not_ahead, "aux"),
    "AtTargetWithinTarget": (at_target_within_target, "aux"),
}


def stale_generation_changes_nothing(enc: Encoding, c: int, pre: Sym, post: Sym) -> Any:
    """The spec's transition property, for a heartbeat of consumer ``c``."""
    stale = z3.And(pre.cep[c] != 0, z3.Or(z3.Not(pre.has[c]), pre.rep[c] != pre.cep[c]))
    same = [post.ge == pre.ge]
    for o in range(enc.n):
        same.append(post.has[o] == pre.has[o])
        member = [post.rep[o] == pre.rep[o]]
        for p in range(enc.np):
            same += [post.tgt[o][p] == pre.tgt[o][p]]
            member += [post.asg[o][p] == pre.asg[o][p], post.rev[o][p] == pre.rev[o][p]]
        same.append(z3.Implies(pre.has[o], z3.And(*member)))
    return z3.Implies(stale, z3.And(*same))


TRANSITION = "StaleGenerationChangesNothing"


Result = Obligation
"""One obligation's outcome (``spec.proofs.status.Obligation``)."""
Run = ProofRun
"""The whole proof (``spec.proofs.status.ProofRun``)."""


def _label(action: str, c: int) -> str:
    return f"{action}({c + 1})" if action in PER_CONSUMER else action


def prove(params: Params, *, timeout_ms: int = 20_000) -> ProofRun[Params, State]:
    """Every obligation of the strengthening, for every action instance."""
    enc = Encoding(params)
    init = enc.of_state(enc.init())
    results: list[Obligation[State]] = []
    for name, (fn, _) in INVARIANTS.items():
        holds = z3.is_true(z3.simplify(fn(enc, init)))
        results.append(Result(name, "Init", PROVED if holds else COUNTEREXAMPLE))
    pre = enc.fresh("s_")
    assume = [fn(enc, pre) for fn, _ in INVARIANTS.values()]
    enabled = []
    for action, c in enc.instances():
        guard, post = enc.step(pre, action, c)
        label = _label(action, c)
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*assume, guard)
        enabled.append((label, str(solver.check())))
        goals: list[tuple[str, Any]] = [(n, fn(enc, post)) for n, (fn, _) in INVARIANTS.items()]
        if action in ("heartbeat", "heartbeat_response_lost"):
            goals.append((TRANSITION, stale_generation_changes_nothing(enc, c, pre, post)))
        for name, goal in goals:
            solver.push()
            solver.add(z3.Not(goal))
            answer = solver.check()
            if answer == z3.unsat:
                results.append(Result(name, label, PROVED))
            elif answer == z3.sat:
                model = solver.model()

                def value(t: Any, model: Any = model) -> Any:
                    return model.eval(t, model_completion=True)

                cti = (enc.read(pre, value), enc.read(post, value))
                results.append(Result(name, label, COUNTEREXAMPLE, cti))
            else:
                results.append(Result(name, label, UNKNOWN))
            solver.pop()
    return Run(params, tuple(results), tuple(enabled))


def render(run: ProofRun[Params, State]) -> str:
    """The invariant x action table, then every CTI as a two-row trace table."""
    enc = Encoding(run.params)
    table, names = grid(
        run.results,
        lambda a: a.replace("heartbeat_response_lost", "lost").replace("coordinator_", ""),
    )
    p = run.params
    lines = [
        f"kmodel prove group --protocol consumer: {p.members} consumers, {p.partitions} "
        f"partitions, every group and member epoch"
        + (f", bugs {', '.join(sorted(p.bugs))}" if p.bugs else ""),
        "",
    ]
    lines += table
    kinds = {n: k for n, (_, k) in INVARIANTS.items()}
    spec_names = [n for n in names if kinds.get(n, "spec") == "spec"]
    lines += [
        "",
        "columns: lost = heartbeat_response_lost, moves = coordinator_moves",
        f"the spec's properties: {', '.join(spec_names)}; the rest is the strengthening",
        summary_line(run.results),
    ]
    lines += cti_lines(enc.spec, run.results)
    return "\n".join(lines) + "\n"
