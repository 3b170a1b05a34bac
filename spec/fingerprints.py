"""Breadth-first search that remembers states by 64-bit fingerprint, as TLC does.

``spec.explore.check`` keeps every distinct state it has seen, as a Python object, with the
link to its parent: about 1.3 KB a state for the replication spec, which caps a 24 GB
machine near 15 million states. Here the seen set holds only each state's fingerprint and
its parent's, 16 bytes a state, in sorted arrays; full states are kept only for the frontier
(the breadth-first level being expanded and the next one). A counterexample is rebuilt from
the chain of parent fingerprints by replaying the spec forward from an initial state.

The search is the same breadth-first search as ``check``, in the same order: the same
distinct states, transitions, depth, per-action coverage, shortest counterexample and
"sometimes" witnesses, as long as no two distinct states share a fingerprint. Like TLC, the
result reports the probability that one pair did (TLC's optimistic estimate: distinct x
(generated - distinct) / 2^64); a collision would make the search skip a state, never report
a false violation.

The fingerprint is Python's ``hash`` of the (canonical) state: 64 bits, stable within one
process (the states hold ints, tuples, frozensets and short strings). No clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

import numpy as np

from spec.explore import (
    Canonical,
    CheckResult,
    ProgressFn,
    Stats,
    TraceStep,
    Violation,
    concretize,
    exhaustive_result,
    predicates,
)
from spec.framework import ActionDecl, Spec, Step

ROOT = 0
"""Not a parent: the entry of an initial state's parent slot is its own fingerprint."""


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate of the probability that two distinct states share a
    fingerprint: ``distinct * (generated - distinct) / 2**64``."""
    return distinct * max(generated - distinct, 0) / 2.0**64


class SeenSet:
    """Fingerprints of the states found, with their parents' fingerprints: two sorted
    ``int64`` arrays (16 bytes a state), merged once per breadth-first level; the level
    being built is a Python dict until then."""

    def __init__(self) -> None:
        self.keys = np.empty(0, dtype=np.int64)
        self.parents = np.empty(0, dtype=np.int64)
        self.level: dict[int, int] = {}

    def __contains__(self, fp: int) -> bool:
        if fp in self.level:
            return True
        i = int(np.searchsorted(self.keys, fp))
        return i < len(self.keys) and int(self.keys[i]) == fp

    def add(self, fp: int, parent: int) -> None:
        self.level[fp] = parent

    def parent(self, fp: int) -> int:
        if fp in self.level:
            return self.level[fp]
        i = int(np.searchsorted(self.keys, fp))
        return int(self.parents[i])

    def close_level(self) -> None:
        """Merge the level into the sorted arrays."""
        if not self.level:
            return
        keys = np.fromiter(self.level.keys(), dtype=np.int64, count=len(self.level))
        parents = np.fromiter(self.level.values(), dtype=np.int64, count=len(self.level))
        all_keys = np.concatenate((self.keys, keys))
        order = np.argsort(all_keys, kind="stable")
        self.keys = all_keys[order]
        self.parents = np.concatenate((self.parents, parents))[order]
        self.level = {}

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.parents.nbytes)


def fingerprint(state: Any) -> int:
    return hash(state)


class ParentLookup(Protocol):
    """Where a search remembers each state's parent fingerprint (a ``SeenSet``, or the
    Spark search's partitioned seen table)."""

    def parent(self, fp: int) -> int: ...


def parent_chain(seen: ParentLookup, fp: int) -> list[int]:
    """The fingerprints from an initial state to ``fp``, by following parents."""
    chain = [fp]
    while True:
        parent = seen.parent(chain[-1])
        if parent == chain[-1]:
            break
        chain.append(parent)
    chain.reverse()
    return chain


def replay(spec: Spec, canon: Canonical, chain: list[int]) -> list[TraceStep]:
    """The path through canonical states whose fingerprints are ``chain``, replayed forward
    from an initial state through the spec (each step the first successor that fits).
    Fingerprints depend on the process's hash seed: replay where they were computed."""
    state = next(c for c in map(canon, spec.init()) if fingerprint(c) == chain[0])
    steps = [TraceStep(None, state)]
    for want in chain[1:]:
        for decl, args, t in spec.successors(state):
            c = canon(t)
            if fingerprint(c) == want:
                steps.append(TraceStep(spec.step_of(decl, args), c))
                state = c
                break
        else:  # pragma: no cover - would mean the spec is not deterministic
            raise AssertionError(f"{spec.name}: cannot replay the path to a state")
    return steps


def replay_then(spec: Spec, canon: Canonical, chain: list[int], nth: int) -> list[TraceStep]:
    """The path along ``chain``, then the last state's ``nth`` transition, ending in the raw
    successor (as ``spec.explore.check`` reports a transition's trace)."""
    trace = replay(spec, canon, chain)
    decl, args, t = list(spec.successors(trace[-1].state))[nth]
    trace.append(TraceStep(spec.step_of(decl, args), t))
    return trace


def rebuild_trace(spec: Spec, canon: Canonical, seen: ParentLookup, fp: int) -> list[TraceStep]:
    """The path to the state with fingerprint ``fp``, through canonical states: the chain of
    parent fingerprints back to an initial state, replayed forward through the spec."""
    return replay(spec, canon, parent_chain(seen, fp))


def check_fingerprints(
    spec: Spec,
    *,
    invariants: Iterable[str] | None = None,
    symmetry: bool = False,
    max_states: int | None = None,
    max_depth: int | None = None,
    clock: Callable[[], float] | None = None,
    progress: ProgressFn | None = None,
    progress_every: int = 20_000,
    count_unreduced: bool = True,
) -> CheckResult:
    """``spec.explore.check`` with a fingerprint seen set (see the module doc); the result's
    ``stats.seen_bytes`` and ``stats.collision_probability`` say what it cost and risked.
    With symmetry, ``count_unreduced=False`` skips the orbit size of every new state (about
    a third of a symmetric search's time): ``stats.unreduced_states`` is then None."""
    selected = spec.select_invariants(invariants)
    state_invs = predicates(spec, [d for d in selected if not d.on_transition])
    trans_props = predicates(spec, [d for d in selected if d.on_transition])
    state_sometimes = predicates(
        spec, [d for d in spec.applicable_sometimes() if not d.on_transition]
    )
    trans_sometimes = predicates(spec, [d for d in spec.applicable_sometimes() if d.on_transition])
    witnessed: dict[str, tuple[TraceStep, ...] | None] = {
        d.name: None for d in spec.applicable_sometimes()
    }
    canon = Canonical(spec, symmetry)
    actions = [
        (i, decl, getattr(spec, decl.method), getattr(spec, decl.domain) if decl.domain else None)
        for i, decl in enumerate(spec.actions())
    ]
    fired = [0] * len(actions)
    found_new = [0] * len(actions)
    stats = Stats(unreduced_states=0 if symmetry and count_unreduced else None)
    start = clock() if clock else 0.0
    seen = SeenSet()
    violation: Violation | None = None
    budget_hit = False

    def finish(complete: bool) -> CheckResult:
        stats.seconds = (clock() - start) if clock else 0.0
        stats.seen_bytes = seen.nbytes + 16 * len(seen.level)
        stats.collision_probability = collision_probability(stats.distinct_states, sum(fired))
        return exhaustive_result(
            spec,
            stats,
            names=[decl.name for _, decl, _, _ in actions],
            fired=fired,
            found_new=found_new,
            complete=complete,
            violation=violation,
            witnessed=witnessed,
            checked=selected,
        )

    def path_to(fp: int) -> list[TraceStep]:
        return rebuild_trace(spec, canon, seen, fp)

    def found_state(state: Any, fp: int) -> Violation | None:
        for decl, pred in state_invs:
            if not pred(state):
                return Violation(
                    "invariant", decl.name, decl.doc, concretize(spec, canon, path_to(fp))
                )
        for entry in list(state_sometimes):
            decl, pred = entry
            if pred(state):
                witnessed[decl.name] = concretize(spec, canon, path_to(fp))
                state_sometimes.remove(entry)
        return None

    frontier: list[tuple[Any, int]] = []
    for s0 in spec.init():
        c0 = canon(s0)
        fp0 = fingerprint(c0)
        if fp0 in seen:
            continue
        seen.add(fp0, fp0)
        stats.distinct_states += 1
        if stats.unreduced_states is not None:
            stats.unreduced_states += canon.orbit_size(c0)
        frontier.append((c0, fp0))
        violation = found_state(c0, fp0)
        if violation is not None:
            stats.depth = 1
            return finish(False)
    seen.close_level()
    depth = 1
    within = spec.within_bounds
    steps: dict[tuple[str, tuple[Any, ...]], Step] = {}

    def step_of(decl: ActionDecl, args: tuple[Any, ...]) -> Step:
        key = (decl.name, args)
        step = steps.get(key)
        if step is None:
            step = steps[key] = spec.step_of(decl, args)
        return step

    next_report = progress_every
    while frontier:
        stats.depth = depth
        if max_depth is not None and depth >= max_depth:
            budget_hit = True
            break
        next_frontier: list[tuple[Any, int]] = []
        for s, s_fp in frontier:
            if not within(s):
                continue
            for i, decl, fn, domain in actions:
                arg_lists = domain(s) if domain is not None else ((),)
                for args in arg_lists:
                    t = fn(s, *args)
                    if t is None:
                        continue
                    fired[i] += 1
                    if trans_props or trans_sometimes:
                        step = step_of(decl, args)
                        for tdecl, prop in trans_props:
                            if not prop(s, step, t):
                                trace = path_to(s_fp)
                                trace.append(TraceStep(step, t))
                                violation = Violation(
                                    "transition",
                                    tdecl.name,
                                    tdecl.doc,
                                    concretize(spec, canon, trace),
                                )
                                stats.depth = depth + 1
                                return finish(False)
                        for entry in list(trans_sometimes):
                            sdecl, pred = entry
                            if pred(s, step, t):
                                trace = path_to(s_fp)
                                trace.append(TraceStep(step, t))
                                witnessed[sdecl.name] = concretize(spec, canon, trace)
                                trans_sometimes.remove(entry)
                    c = canon(t)
                    fp = fingerprint(c)
                    if fp in seen:
                        continue
                    seen.add(fp, s_fp)
                    stats.distinct_states += 1
                    found_new[i] += 1
                    if stats.unreduced_states is not None:
                        stats.unreduced_states += canon.orbit_size(c)
                    violation = found_state(c, fp)
                    if violation is not None:
                        stats.depth = depth + 1
                        return finish(False)
                    next_frontier.append((c, fp))
                    if max_states is not None and stats.distinct_states >= max_states:
                        budget_hit = True
                        return finish(False)
                    if progress is not None and stats.distinct_states >= next_report:
                        next_report += progress_every
                        stats.states_generated = sum(fired)
                        if clock:
                            stats.seconds = clock() - start
                        progress(stats)
        seen.close_level()
        frontier = next_frontier
        if frontier:
            depth += 1
    return finish(not budget_hit)
