"""The explicit-state model checker.

Two modes over any ``spec.framework.Spec``:

- ``check``: breadth-first exploration of every reachable state (within the spec's bounds).
  Because the search is breadth-first and invariants are checked when a state is first
  found, the first violation found is at the smallest possible depth: its trace is a
  *shortest* counterexample. "Depth" counts states along a trace, the initial state being
  depth 1, as TLC counts it.
- ``simulate``: seeded random walks of bounded depth, for state spaces too large to exhaust.
  A violation found this way is real but not necessarily shortest.

Symmetry reduction (safety only): when the spec declares interchangeable ids (replicas),
states are stored by the canonical member of their orbit under permutation of those ids.
The reduction factor is exact: the sum of the orbit sizes of the canonical states found is
the number of states the unreduced search would have found (the reachable set of a symmetric
spec is closed under permutation).

Measurement is the caller's business: pass ``clock`` (for example ``time.perf_counter``) to
get seconds and states/second; ``spec/`` itself never reads a clock.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Container, Iterable, Iterator
from typing import Any, Protocol

import attrs

from spec.framework import ActionDecl, PredicateDecl, Spec, Step


@attrs.frozen
class TraceStep:
    """A state of a trace and the step that led to it (``None`` for the initial state)."""

    step: Step | None
    state: Any


@attrs.frozen
class Violation:
    """A property that failed, with the trace that shows it."""

    kind: str  # "invariant" or "transition"
    name: str
    doc: str
    trace: tuple[TraceStep, ...]

    @property
    def depth(self) -> int:
        """States along the trace, the initial state counting as 1 (TLC's depth)."""
        return len(self.trace)


@attrs.define
class Stats:
    distinct_states: int = 0
    states_generated: int = 0
    depth: int = 0
    seconds: float = 0.0
    fired: dict[str, int] = attrs.Factory(dict)
    """Per action: how many transitions it produced (including to states already seen)."""
    new_states: dict[str, int] = attrs.Factory(dict)
    """Per action: how many distinct states it found first."""
    unreduced_states: int | None = None
    """With symmetry: how many states the search without symmetry would have found."""
    seen_bytes: int | None = None
    """With fingerprints (``spec.fingerprints``): the seen set's size in bytes."""
    collision_probability: float | None = None
    """With fingerprints: TLC's estimate of the probability of a fingerprint collision."""

    @property
    def states_per_second(self) -> float | None:
        return self.distinct_states / self.seconds if self.seconds > 0 else None

    @property
    def symmetry_factor(self) -> float | None:
        if self.unreduced_states is None or self.distinct_states == 0:
            return None
        return self.unreduced_states / self.distinct_states


@attrs.frozen
class CheckResult:
    spec: str
    mode: str  # "exhaustive" or "simulation"
    stats: Stats
    violation: Violation | None
    complete: bool
    """True when every reachable state was explored (no violation stopped it, no budget)."""
    sometimes: dict[str, tuple[TraceStep, ...] | None]
    """Per "sometimes" property: the shortest witness trace found, or None if never seen."""
    warnings: tuple[str, ...]
    checked: tuple[str, ...]
    """Names of the invariants and transition properties that were checked."""
    graph: tuple[tuple[int, int, str], ...] | None = None
    graph_states: tuple[Any, ...] | None = None

    @property
    def missing_sometimes(self) -> list[str]:
        return [name for name, trace in self.sometimes.items() if trace is None]


ProgressFn = Callable[[Stats], None]


def exhaustive_result(
    spec: Spec,
    stats: Stats,
    *,
    names: list[str],
    fired: list[int],
    found_new: list[int],
    complete: bool,
    violation: Violation | None,
    witnessed: dict[str, tuple[TraceStep, ...] | None],
    checked: Iterable[PredicateDecl],
    graph: tuple[tuple[int, int, str], ...] | None = None,
    graph_states: tuple[Any, ...] | None = None,
) -> CheckResult:
    """The result of an exhaustive search (every engine's): ``stats`` completed with the
    per-action counts (``names[i]`` fired ``fired[i]`` transitions and found ``found_new[i]``
    states first), and a warning per action that never fired."""
    stats.fired = dict(zip(names, fired, strict=True))
    stats.states_generated = sum(fired)
    stats.new_states = dict(zip(names, found_new, strict=True))
    warnings = [
        f"action {name} never fired"
        for name, count in stats.fired.items()
        if count == 0 and (complete or violation is None)
    ]
    return CheckResult(
        spec=spec.name,
        mode="exhaustive",
        stats=stats,
        violation=violation,
        complete=complete,
        sometimes=witnessed,
        warnings=tuple(warnings),
        checked=tuple(d.name for d in checked),
        graph=graph,
        graph_states=graph_states,
    )


class Canonical:
    """Maps a state to the canonical member of its symmetry orbit (or to itself)."""

    def __init__(self, spec: Spec, symmetry: bool) -> None:
        self.symmetry = symmetry
        self.perms = list(spec.symmetry_permutations()) if symmetry else []
        if symmetry and not self.perms:
            raise ValueError(f"spec {spec.name} declares no symmetry to reduce by")
        self.canonical = spec.canonical if self.perms else None
        self.orbit_size = spec.orbit_size

    def __call__(self, state: Any) -> Any:
        return state if self.canonical is None else self.canonical(state)


def predicates(spec: Spec, decls: Iterable[PredicateDecl]) -> list[tuple[PredicateDecl, Any]]:
    return [(d, getattr(spec, d.method)) for d in decls]


def trace_to(
    parents: dict[Any, tuple[Any, ActionDecl, tuple[Any, ...]] | None],
    spec: Spec,
    state: Any,
) -> list[TraceStep]:
    steps: list[TraceStep] = []
    cur = state
    while True:
        link = parents[cur]
        if link is None:
            steps.append(TraceStep(None, cur))
            break
        prev, decl, args = link
        steps.append(TraceStep(spec.step_of(decl, args), cur))
        cur = prev
    steps.reverse()
    return steps


def concretize(spec: Spec, canon: Canonical, trace: list[TraceStep]) -> tuple[TraceStep, ...]:
    """Turn a trace through canonical states into a real execution of the spec.

    Each canonical step ``c_i -> c_{i+1}`` is matched from the concrete state ``s_i`` by a
    successor whose canonical form is ``c_{i+1}``; one always exists, since ``s_i`` is a
    permutation of ``c_i`` and the spec is symmetric.
    """
    if not canon.perms:
        return tuple(trace)
    concrete = [trace[0]]
    current = trace[0].state
    for target in trace[1:]:
        want = canon(target.state)
        for decl, args, nxt in spec.successors(current):
            if canon(nxt) == want:
                concrete.append(TraceStep(spec.step_of(decl, args), nxt))
                current = nxt
                break
        else:  # pragma: no cover - would mean the spec is not symmetric
            raise AssertionError(
                f"symmetry reduction is unsound for {spec.name}: no concrete successor of "
                f"{current!r} matches {target.step}"
            )
    return tuple(concrete)


class Level(Protocol):
    """A breadth-first level: (state, key) pairs appended while it is built, then read
    once, in order (a ``list``, or ``spec.spill.SpillLevel`` on disk)."""

    def append(self, item: tuple[Any, Any], /) -> None: ...

    def __iter__(self) -> Iterator[tuple[Any, Any]]: ...

    def __len__(self) -> int: ...


class Seen(Protocol):
    """Where a breadth-first search remembers the states it found: each state's *key* (the
    canonical state itself, or its fingerprint), the link to its parent, and how to rebuild
    the path to it. ``ExactSeen`` keeps states; ``spec.fingerprints.FingerprintSeen`` keeps
    16 bytes a state and replays paths through the spec."""

    def key(self, state: Any) -> Any:
        """What identifies ``state`` (canonical) in this store."""
        ...

    def __contains__(self, key: Any) -> bool: ...

    @property
    def known(self) -> Container[Any]:
        """The keys stored, as a container (``in`` on it is the search's hot test)."""
        ...

    def add(
        self, key: Any, state: Any, parent: tuple[Any, ActionDecl, tuple[Any, ...]] | None
    ) -> None:
        """Remember a new state: ``parent`` is (the parent's key, the action, its
        arguments), None for an initial state."""
        ...

    def edge(self, source: Any, target: Any, action: str, new: bool) -> None:
        """A transition between two stored states (for the state graph)."""
        ...

    def close_level(self) -> None:
        """A breadth-first level is complete."""
        ...

    def path(self, key: Any) -> list[TraceStep]:
        """The path from an initial state to the stored state ``key``, through canonical
        states."""
        ...

    def finish(self, stats: Stats) -> None:
        """Fill in what the store measures (its size, its risk)."""
        ...


class ExactSeen:
    """Every distinct state as a Python object, with the link to its parent (its key is
    the state itself); with ``graph``, the state graph too (for ``--dot``)."""

    def __init__(self, spec: Spec, *, graph: bool = False, max_graph_states: int = 5_000) -> None:
        self.spec = spec
        self.parents: dict[Any, tuple[Any, ActionDecl, tuple[Any, ...]] | None] = {}
        self.graph = graph
        self.max_graph_states = max_graph_states
        self.ids: dict[Any, int] = {}
        self.edges: list[tuple[int, int, str]] = []

    def key(self, state: Any) -> Any:
        return state

    def __contains__(self, key: Any) -> bool:
        return key in self.parents

    @property
    def known(self) -> Container[Any]:
        return self.parents

    def add(
        self, key: Any, state: Any, parent: tuple[Any, ActionDecl, tuple[Any, ...]] | None
    ) -> None:
        self.parents[key] = parent
        if self.graph:
            if len(self.ids) >= self.max_graph_states:
                raise ValueError(
                    f"the state graph has more than {self.max_graph_states} states; "
                    "--dot is for small models (lower the bounds)"
                )
            self.ids[key] = len(self.ids)

    def edge(self, source: Any, target: Any, action: str, new: bool) -> None:
        if self.graph:
            self.edges.append((self.ids[source], self.ids[target], action))

    def close_level(self) -> None:
        pass

    def path(self, key: Any) -> list[TraceStep]:
        return trace_to(self.parents, self.spec, key)

    def finish(self, stats: Stats) -> None:
        pass


def breadth_first(
    spec: Spec,
    seen: Seen,
    canon: Canonical,
    *,
    invariants: Iterable[str] | None = None,
    max_states: int | None = None,
    max_depth: int | None = None,
    clock: Callable[[], float] | None = None,
    progress: ProgressFn | None = None,
    progress_every: int = 20_000,
    count_unreduced: bool = True,
    new_level: Callable[[], Level] = list,
) -> CheckResult:
    """The breadth-first search every sequential engine runs, remembering states in
    ``seen`` and keeping each level's (state, key) pairs in a ``new_level()`` (a list, or
    ``spec.spill.SpillLevel`` on disk): invariants and "sometimes" properties are checked
    when a state is first found, transition properties on every transition, so the first
    violation is at the smallest depth and its trace a shortest counterexample.
    ``max_states`` / ``max_depth`` are budgets: hitting one makes the result incomplete
    (UNKNOWN), never a pass. With symmetry, ``count_unreduced=False`` skips the orbit size
    of every new state."""
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
    actions = [
        (i, decl, getattr(spec, decl.method), getattr(spec, decl.domain) if decl.domain else None)
        for i, decl in enumerate(spec.actions())
    ]
    fired = [0] * len(actions)
    found_new = [0] * len(actions)
    stats = Stats(unreduced_states=0 if canon.symmetry and count_unreduced else None)
    start = clock() if clock else 0.0
    violation: Violation | None = None
    budget_hit = False

    def finish(complete: bool) -> CheckResult:
        stats.seconds = (clock() - start) if clock else 0.0
        stats.states_generated = sum(fired)
        seen.finish(stats)
        edges: tuple[tuple[int, int, str], ...] | None = None
        graph_states: tuple[Any, ...] | None = None
        if isinstance(seen, ExactSeen) and seen.graph:
            edges, graph_states = tuple(seen.edges), tuple(seen.ids)
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
            graph=edges,
            graph_states=graph_states,
        )

    def found_state(state: Any, key: Any) -> Violation | None:
        for decl, pred in state_invs:
            if not pred(state):
                trace = concretize(spec, canon, seen.path(key))
                return Violation("invariant", decl.name, decl.doc, trace)
        for entry in list(state_sometimes):
            decl, pred = entry
            if pred(state):
                witnessed[decl.name] = concretize(spec, canon, seen.path(key))
                state_sometimes.remove(entry)
        return None

    frontier: Level = new_level()
    for s0 in spec.init():
        c0 = canon(s0)
        k0 = seen.key(c0)
        if k0 in seen:
            continue
        seen.add(k0, c0, None)
        stats.distinct_states += 1
        if stats.unreduced_states is not None:
            stats.unreduced_states += canon.orbit_size(c0)
        frontier.append((c0, k0))
        violation = found_state(c0, k0)
        if violation is not None:
            stats.depth = 1
            return finish(False)
    seen.close_level()
    depth = 1
    within = spec.within_bounds
    steps: dict[tuple[str, tuple[Any, ...]], Step] = {}

    def step_of(decl: ActionDecl, args: tuple[Any, ...]) -> Step:
        # Labels repeat across states: build each once.
        key = (decl.name, args)
        step = steps.get(key)
        if step is None:
            step = steps[key] = spec.step_of(decl, args)
        return step

    # The hot loop reads the store's container and skips the calls it does not need.
    known = seen.known
    by_state = isinstance(seen, ExactSeen)
    keyof = seen.key
    drawing = isinstance(seen, ExactSeen) and seen.graph
    add = seen.add
    next_report = progress_every
    while frontier:
        stats.depth = depth
        if max_depth is not None and depth >= max_depth:
            budget_hit = True
            break
        next_frontier = new_level()
        for s, s_key in frontier:
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
                                trace = seen.path(s_key)
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
                                trace = seen.path(s_key)
                                trace.append(TraceStep(step, t))
                                witnessed[sdecl.name] = concretize(spec, canon, trace)
                                trans_sometimes.remove(entry)
                    c = canon(t)
                    key = c if by_state else keyof(c)
                    if key in known:
                        if drawing:
                            seen.edge(s_key, key, decl.name, False)
                        continue
                    add(key, c, (s_key, decl, args))
                    if drawing:
                        seen.edge(s_key, key, decl.name, True)
                    stats.distinct_states += 1
                    found_new[i] += 1
                    if stats.unreduced_states is not None:
                        stats.unreduced_states += canon.orbit_size(c)
                    violation = found_state(c, key)
                    if violation is not None:
                        stats.depth = depth + 1
                        return finish(False)
                    next_frontier.append((c, key))
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


def check(
    spec: Spec,
    *,
    invariants: Iterable[str] | None = None,
    symmetry: bool = False,
    max_states: int | None = None,
    max_depth: int | None = None,
    clock: Callable[[], float] | None = None,
    progress: ProgressFn | None = None,
    progress_every: int = 20_000,
    graph: bool = False,
    max_graph_states: int = 5_000,
) -> CheckResult:
    """Explore every reachable state breadth-first, keeping every state
    (``breadth_first`` with ``ExactSeen``); stop at the first violation. With ``graph``,
    the result carries the state graph (at most ``max_graph_states`` states)."""
    return breadth_first(
        spec,
        ExactSeen(spec, graph=graph, max_graph_states=max_graph_states),
        Canonical(spec, symmetry),
        invariants=invariants,
        max_states=max_states,
        max_depth=max_depth,
        clock=clock,
        progress=progress,
        progress_every=progress_every,
    )


def reachable_states(spec: Spec, limit: int) -> list[Any]:
    """The states reachable from ``spec.init()``, breadth-first, until at least ``limit``
    are known (a whole BFS layer at a time), sorted by ``spec.sort_key``. No invariant is
    checked and no bound applied: violating states are included, which is what tests that
    compare two readings of a spec on its state space want."""
    seen = set(spec.init())
    frontier = list(seen)
    while frontier and len(seen) < limit:
        nxt = []
        for s in frontier:
            for _, _, t in spec.successors(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    return sorted(seen, key=spec.sort_key)


def simulate(
    spec: Spec,
    *,
    seed: int,
    depth: int,
    runs: int = 1_000,
    invariants: Iterable[str] | None = None,
    clock: Callable[[], float] | None = None,
    progress: ProgressFn | None = None,
) -> CheckResult:
    """Seeded random walks: ``runs`` walks of at most ``depth`` states each.

    The walk chooses uniformly among the enabled transitions, from one
    ``random.Random(seed)``: the same (spec, params, seed) always walks the same paths.
    """
    if depth < 1 or runs < 1:
        raise ValueError("simulation needs depth >= 1 and runs >= 1")
    rng = random.Random(seed)
    selected = spec.select_invariants(invariants)
    state_invs = predicates(spec, [d for d in selected if not d.on_transition])
    trans_props = predicates(spec, [d for d in selected if d.on_transition])
    sometimes_decls = predicates(spec, spec.applicable_sometimes())
    witnessed: dict[str, tuple[TraceStep, ...] | None] = {d.name: None for d, _ in sometimes_decls}
    stats = Stats(
        fired={d.name: 0 for d in spec.actions()},
        new_states={d.name: 0 for d in spec.actions()},
    )
    seen: set[Any] = set()
    start = clock() if clock else 0.0
    inits = list(spec.init())
    violation: Violation | None = None

    def witness(trace: list[TraceStep], before: Any, step: Step | None, after: Any) -> None:
        for decl, pred in sometimes_decls:
            if witnessed[decl.name] is not None:
                continue
            ok = pred(before, step, after) if decl.on_transition else pred(after)
            if ok and (decl.on_transition is False or step is not None):
                witnessed[decl.name] = tuple(trace)

    for run in range(runs):
        s = rng.choice(inits)
        trace = [TraceStep(None, s)]
        if s not in seen:
            seen.add(s)
            stats.distinct_states += 1
        for decl, pred in state_invs:
            if not pred(s):
                violation = Violation("invariant", decl.name, decl.doc, tuple(trace))
                break
        if violation is not None:
            break
        for _ in range(depth - 1):
            if not spec.within_bounds(s):
                break
            successors = list(spec.successors(s))
            if not successors:
                break
            adecl, args, t = successors[rng.randrange(len(successors))]
            step = spec.step_of(adecl, args)
            stats.states_generated += 1
            stats.fired[adecl.name] += 1
            trace.append(TraceStep(step, t))
            stats.depth = max(stats.depth, len(trace))
            for tdecl, prop in trans_props:
                if not prop(s, step, t):
                    violation = Violation("transition", tdecl.name, tdecl.doc, tuple(trace))
                    break
            if violation is None and t not in seen:
                seen.add(t)
                stats.distinct_states += 1
                stats.new_states[adecl.name] += 1
            if violation is None:
                for idecl, pred in state_invs:
                    if not pred(t):
                        violation = Violation("invariant", idecl.name, idecl.doc, tuple(trace))
                        break
            if violation is not None:
                break
            witness(trace, s, step, t)
            s = t
        if violation is not None:
            break
        if progress is not None and run % 100 == 99:
            if clock:
                stats.seconds = clock() - start
            progress(stats)
    stats.seconds = (clock() - start) if clock else 0.0
    warnings = [f"action {n} never fired" for n, c in stats.fired.items() if c == 0]
    return CheckResult(
        spec=spec.name,
        mode="simulation",
        stats=stats,
        violation=violation,
        complete=False,
        sometimes=witnessed,
        warnings=tuple(warnings),
        checked=tuple(d.name for d in selected),
    )
