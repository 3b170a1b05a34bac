"""Breadth-first search that remembers states by 64-bit fingerprint, as TLC does.

``spec.explore.check`` keeps every distinct state it has seen, as a Python object, with the
link to its parent: about 1.3 KB a state for the replication spec, which caps a 24 GB
machine near 15 million states. Here the seen set holds only each state's fingerprint and
its parent's, 16 bytes a state, in sorted arrays; full states are kept only for the frontier
(the breadth-first level being expanded and the next one). A counterexample is rebuilt from
the chain of parent fingerprints by replaying the spec forward from an initial state.

The search is ``spec.explore.breadth_first``, the one ``check`` runs, in the same order, its
states remembered by ``FingerprintSeen``: the same
distinct states, transitions, depth, per-action coverage, shortest counterexample and
"sometimes" witnesses, as long as no two distinct states share a fingerprint. Like TLC, the
result reports the probability that one pair did (TLC's optimistic estimate: distinct x
(generated - distinct) / 2^64); a collision would make the search skip a state, never report
a false violation.

The fingerprint is Python's ``hash`` of the (canonical) state: 64 bits, stable within one
process (the states hold ints, tuples, frozensets and short strings). No clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from typing import Any, Protocol

import numpy as np

from spec.explore import (
    Canonical,
    CheckResult,
    Level,
    ProgressFn,
    Stats,
    TraceStep,
    breadth_first,
)
from spec.framework import ActionDecl, Spec

ROOT = 0
"""Not a parent: the entry of an initial state's parent slot is its own fingerprint."""


def fingerprint_figures(stats: Stats, seen_bytes: int, generated: int) -> None:
    """What a fingerprint search cost and risked, into ``stats``: its seen set's bytes and
    TLC's collision estimate over the ``generated`` transitions (every engine's)."""
    stats.seen_bytes = seen_bytes
    stats.collision_probability = collision_probability(stats.distinct_states, generated)


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

    def __contains__(self, fp: object) -> bool:
        if fp in self.level:
            return True
        if not isinstance(fp, int):
            return False
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
        """Bytes in memory: the sorted arrays, and 16 a fingerprint of the level being
        built (its dict costs more; this is the figure TLC's own accounting compares to)."""
        return int(self.keys.nbytes + self.parents.nbytes) + 16 * len(self.level)


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


class FingerprintSeen:
    """The ``Seen`` of a fingerprint search: a state's key is its fingerprint, stored with
    its parent's in a ``SeenSet``; paths are replayed through the spec."""

    def __init__(self, spec: Spec, canon: Canonical, seen_set: SeenSet | None = None) -> None:
        self.spec = spec
        self.canon = canon
        self.set = SeenSet() if seen_set is None else seen_set

    def key(self, state: Any) -> int:
        return fingerprint(state)

    def __contains__(self, key: Any) -> bool:
        return key in self.set

    @property
    def known(self) -> Container[Any]:
        return self.set

    def add(
        self, key: Any, state: Any, parent: tuple[Any, ActionDecl, tuple[Any, ...]] | None
    ) -> None:
        # An initial state is its own parent (ROOT): the chain stops there.
        self.set.add(key, key if parent is None else parent[0])

    def edge(self, source: Any, target: Any, action: str, new: bool) -> None:
        pass

    def close_level(self) -> None:
        self.set.close_level()

    def path(self, key: Any) -> list[TraceStep]:
        return rebuild_trace(self.spec, self.canon, self.set, key)

    def finish(self, stats: Stats) -> None:
        fingerprint_figures(stats, self.set.nbytes, stats.states_generated)


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
    seen_set: SeenSet | None = None,
    new_level: Callable[[], Level] = list,
) -> CheckResult:
    """``spec.explore.check`` with a fingerprint seen set (see the module doc): the same
    ``breadth_first`` search, its states remembered by ``FingerprintSeen``. The result's
    ``stats.seen_bytes`` and ``stats.collision_probability`` say what it cost and risked.
    With symmetry, ``count_unreduced=False`` skips the orbit size of every new state (about
    a third of a symmetric search's time): ``stats.unreduced_states`` is then None.
    ``seen_set`` and ``new_level`` say where the fingerprints and the levels live
    (``spec.spill`` puts them on disk)."""
    canon = Canonical(spec, symmetry)
    return breadth_first(
        spec,
        FingerprintSeen(spec, canon, seen_set),
        canon,
        invariants=invariants,
        max_states=max_states,
        max_depth=max_depth,
        clock=clock,
        progress=progress,
        progress_every=progress_every,
        count_unreduced=count_unreduced,
        new_level=new_level,
    )
