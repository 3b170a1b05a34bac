"""Liveness: "eventually" properties checked on the state graph, under fairness.

A safety property fails on a finite trace; a liveness property fails only on an infinite
behavior: a *lasso*, a path from an initial state to a cycle that repeats forever. This module
builds the whole reachable state graph of a spec (within its bounds), then, for each property
``P ~> Q`` ("whenever P holds, Q holds then or later"; ``[]<>Q`` is ``TRUE ~> Q``), searches
for a fair cycle along which ``Q`` never holds, reachable from a state where ``P`` holds and
``Q`` does not. This is the method TLC uses for its liveness checking: strongly connected
components of the graph restricted to ``~Q`` states, tested against the fairness conditions.

**Behaviors may stutter.** As in TLA+, every state has an implicit step to itself: a system
may stop doing anything. Stopping forever in a state is a fair behavior unless a fair action
is enabled there; so a state where nothing fair is enabled and ``Q`` does not hold is a
counterexample on its own (the cycle is "stutters forever").

**Fairness** (``Spec.fairness()``; TLA+'s ``WF``/``SF``): a cycle is fair when, for each
weakly fair action, the cycle takes it or passes through a state where it is disabled; and for
each strongly fair action, the cycle takes it or it is disabled in every state of the cycle.
A component of the graph contains a fair cycle when these hold over the whole component
(visiting every state and edge of it); a strongly fair action enabled in the component but
never taken in it rules out the states where it is enabled, and the rest is searched again
(Emerson and Lei's algorithm, as TLC applies it). An action counts as *enabled* in a state
when it leads to a different state (``<<A>>_vars``): a step that changes nothing is a stutter.

**Bounds.** States outside ``within_bounds`` are not expanded, so what happens after them is
unknown. They are never part of a counterexample's path or cycle, but the actions leading to
them still count as enabled: a fair action that would leave the bounds is not taken to be
ignored forever. Every counterexample reported is therefore a real behavior of the spec; a
violation that needs to leave the bounds is not found (raise the bounds to look further).
Symmetry reduction is not used here: it is sound for safety, not for fairness per action
argument.

Pure, like the rest of ``spec/``: no clock, no I/O; the caller measures time.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from spec.explore import TraceStep
from spec.framework import Fair, LivenessDecl, Spec, SpecError


@attrs.frozen
class Lasso:
    """A behavior that repeats forever: ``prefix`` from an initial state, then ``cycle``.

    ``cycle`` holds the steps taken from the last state of ``prefix`` back to it; when it is
    empty the behavior stutters in that state forever."""

    prefix: tuple[TraceStep, ...]
    cycle: tuple[TraceStep, ...]

    @property
    def states(self) -> int:
        return len(self.prefix) + len(self.cycle)


@attrs.frozen
class LivenessViolation:
    """A liveness property that fails, with the lasso that shows it."""

    name: str
    doc: str
    premise: str | None
    lasso: Lasso


@attrs.frozen
class LivenessResult:
    spec: str
    states: int
    edges: int
    checked: tuple[str, ...]
    fairness: tuple[str, ...]
    """The fairness conditions assumed, as TLA+ writes them (``WF(follower_fetch(f))``)."""
    violation: LivenessViolation | None
    complete: bool
    """False when ``max_states`` stopped the graph before every reachable state was known."""


def describe_fairness(fair: Fair) -> str:
    """TLA+'s notation: ``WF(fetch)``, with ``per argument`` when each argument tuple is
    fair on its own."""
    kind = "SF" if fair.strong else "WF"
    return f"{kind}({fair.action}{', per argument' if fair.per_argument else ''})"


@attrs.define
class StateGraph:
    """The reachable graph, compactly: states by id (breadth-first order, so parents give
    shortest paths), edges in CSR form (``start[k]:start[k+1]`` are state ``k``'s), each edge
    labelled with the fairness unit it takes (-1: an action no fairness condition names)."""

    states: list[Any]
    ids: dict[Any, int]
    parent: array
    start: array
    dst: array
    unit: array
    cut: bytearray
    """1 for a state outside the bounds (not expanded)."""
    enabled: list[int]
    """Per state, a bit set of the fairness units enabled there (leading to another state)."""
    units: list[tuple[Fair, tuple[Any, ...]]]
    complete: bool

    def successors(self, k: int) -> Iterable[tuple[int, int]]:
        for e in range(self.start[k], self.start[k + 1]):
            yield self.dst[e], self.unit[e]


def build_graph(
    spec: Spec,
    *,
    max_states: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    progress_every: int = 20_000,
) -> StateGraph:
    """Every reachable state and transition, breadth-first (no symmetry reduction)."""
    fairness = {f.action: f for f in spec.fairness()}
    known_actions = {d.name for d in spec.actions()}
    for name in fairness:
        if name not in known_actions:
            raise SpecError(f"fairness names action {name!r}, which {spec.name} does not run")
    unit_ids: dict[tuple[str, tuple[Any, ...]], int] = {}
    units: list[tuple[Fair, tuple[Any, ...]]] = []
    states: list[Any] = []
    ids: dict[Any, int] = {}
    parent = array("q")
    start = array("q", [0])
    dst = array("q")
    unit = array("q")
    cut = bytearray()
    enabled: list[int] = []
    complete = True

    def add(state: Any, via: int) -> int:
        k = ids.get(state)
        if k is None:
            k = ids[state] = len(states)
            states.append(state)
            parent.append(via)
        return k

    for s0 in spec.init():
        add(s0, -1)
    within = spec.within_bounds
    next_report = progress_every
    k = 0
    while k < len(states):
        s = states[k]
        bits = 0
        if within(s):
            cut.append(0)
            for decl, args, t in spec.successors(s):
                if t == s:
                    continue  # a stutter: changes nothing, takes nothing
                fair = fairness.get(decl.name)
                u = -1
                if fair is not None:
                    key = (decl.name, args if fair.per_argument else ())
                    u = unit_ids.get(key, -1)
                    if u < 0:
                        u = unit_ids[key] = len(units)
                        units.append((fair, key[1]))
                    bits |= 1 << u
                if max_states is not None and t not in ids and len(states) >= max_states:
                    complete = False
                    continue
                dst.append(add(t, k))
                unit.append(u)
        else:
            cut.append(1)
        enabled.append(bits)
        start.append(len(dst))
        k += 1
        if progress is not None and k >= next_report:
            next_report += progress_every
            progress(len(states), len(dst))
    return StateGraph(states, ids, parent, start, dst, unit, cut, enabled, units, complete)


def check_liveness(
    spec: Spec,
    *,
    properties: Iterable[str] | None = None,
    graph: StateGraph | None = None,
    max_states: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LivenessResult:
    """Check every selected liveness property; stop at the first that fails."""
    selected = spec.select_liveness(properties)
    g = graph if graph is not None else build_graph(spec, max_states=max_states, progress=progress)
    violation = None
    if g.complete:
        for decl in selected:
            violation = _check_one(spec, g, decl)
            if violation is not None:
                break
    return LivenessResult(
        spec=spec.name,
        states=len(g.states),
        edges=len(g.dst),
        checked=tuple(d.name for d in selected),
        fairness=tuple(describe_fairness(f) for f in spec.fairness()),
        violation=violation,
        complete=g.complete,
    )


def _check_one(spec: Spec, g: StateGraph, decl: LivenessDecl) -> LivenessViolation | None:
    goal = getattr(spec, decl.method)
    premise = getattr(spec, decl.premise) if decl.premise else None
    n = len(g.states)
    # The states a counterexample may pass through: within bounds, Q false.
    open_ = bytearray(0 if g.cut[k] or goal(g.states[k]) else 1 for k in range(n))
    sources = [k for k in range(n) if open_[k] and (premise is None or premise(g.states[k]))]
    if not sources:
        return None
    # Reachable from a source without Q ever holding.
    region = bytearray(n)
    came_from: dict[int, int] = {}
    queue = deque(sources)
    for k in sources:
        region[k] = 1
    while queue:
        k = queue.popleft()
        for t, _ in g.successors(k):
            if open_[t] and not region[t]:
                region[t] = 1
                came_from[t] = k
                queue.append(t)
    members = [k for k in range(n) if region[k]]
    # Of every component holding a fair cycle, report the one nearest an initial state
    # (ids are breadth-first), for a short prefix.
    best: list[int] | None = None
    for component in _components(g, members, region):
        fair = _fair_part(g, component)
        if fair is not None and (best is None or min(fair) < min(best)):
            best = fair
    if best is None:
        return None
    return LivenessViolation(decl.name, decl.doc, decl.premise, _lasso(spec, g, best, came_from))


def _components(g: StateGraph, members: Sequence[int], allowed: bytearray) -> list[list[int]]:
    """Strongly connected components of the subgraph on ``allowed`` states (Tarjan's
    algorithm, iterative), singletons included: a stutter makes every state a cycle."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in members:
        if root in index:
            continue
        work: list[tuple[int, Iterable[tuple[int, int]]]] = [(root, iter(g.successors(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w, _ in it:
                if not allowed[w]:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(g.successors(w))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                out.append(component)
    return out


def _taken(g: StateGraph, component: Iterable[int], inside: set[int]) -> int:
    bits = 0
    for k in component:
        for t, u in g.successors(k):
            if u >= 0 and t in inside:
                bits |= 1 << u
    return bits


def _fair_part(g: StateGraph, component: list[int]) -> list[int] | None:
    """A sub-component holding a fair cycle, or None (Emerson-Lei refinement for SF)."""
    inside = set(component)
    taken = _taken(g, component, inside)
    enabled_somewhere = 0
    enabled_everywhere = -1
    for k in component:
        enabled_somewhere |= g.enabled[k]
        enabled_everywhere &= g.enabled[k]
    unfair_strong = 0
    for u, (fair, _) in enumerate(g.units):
        bit = 1 << u
        if taken & bit or not enabled_somewhere & bit:
            continue
        if not fair.strong:
            if enabled_everywhere & bit:
                return None  # always enabled, never taken: no sub-cycle does better
            continue
        unfair_strong |= bit
    if not unfair_strong:
        return component
    rest = [k for k in component if not g.enabled[k] & unfair_strong]
    allowed = bytearray(len(g.states))
    for k in rest:
        allowed[k] = 1
    for sub in _components(g, rest, allowed):
        found = _fair_part(g, sub)
        if found is not None:
            return found
    return None


def _path(g: StateGraph, start: int, targets: set[int], inside: set[int]) -> list[int]:
    """A shortest path (state ids, ``start`` first) from ``start`` to any of ``targets``,
    through ``inside`` only; ``[start]`` when it is a target."""
    if start in targets:
        return [start]
    back = {start: -1}
    queue = deque([start])
    while queue:
        k = queue.popleft()
        for t, _ in g.successors(k):
            if t in inside and t not in back:
                back[t] = k
                if t in targets:
                    path = [t]
                    while back[path[-1]] != -1:
                        path.append(back[path[-1]])
                    return path[::-1]
                queue.append(t)
    raise AssertionError("no path inside a strongly connected component")  # pragma: no cover


def _lasso(spec: Spec, g: StateGraph, component: list[int], came_from: dict[int, int]) -> Lasso:
    inside = set(component)
    # The prefix: the shortest way from an initial state to where the region was entered,
    # then the region's own breadth-first path to the component.
    entry = min(component)
    region_path = [entry]
    while region_path[-1] in came_from:
        region_path.append(came_from[region_path[-1]])
    region_path.reverse()
    head = [region_path[0]]
    while g.parent[head[-1]] != -1:
        head.append(g.parent[head[-1]])
    head.reverse()
    prefix_ids = head + region_path[1:]
    # The cycle: for each fairness unit it must honour, visit a state where the unit is
    # disabled, or take an edge of it; then return to the entry.
    taken = _taken(g, component, inside)
    waypoints: list[tuple[int, int]] = []  # (state, then step to: -1 to stay)
    for u in range(len(g.units)):
        bit = 1 << u
        if not any(g.enabled[k] & bit for k in component):
            continue
        if taken & bit:
            edge = next(
                (k, t)
                for k in component
                for t, unit in g.successors(k)
                if unit == u and t in inside
            )
            waypoints.append(edge)
        else:
            waypoints.append((next(k for k in component if not g.enabled[k] & bit), -1))
    cycle_ids: list[int] = []
    at = entry
    for state, then in waypoints:
        leg = _path(g, at, {state}, inside)
        cycle_ids += leg[1:]
        at = state
        if then >= 0:
            cycle_ids.append(then)
            at = then
    if cycle_ids or at != entry:
        cycle_ids += _path(g, at, {entry}, inside)[1:]
    prefix = _steps(spec, g, prefix_ids, None)
    cycle = _steps(spec, g, cycle_ids, prefix_ids[-1])
    return Lasso(prefix, cycle)


def _steps(spec: Spec, g: StateGraph, path: list[int], before: int | None) -> tuple[TraceStep, ...]:
    """Label a path of state ids with the actions that take it (the first state of the
    prefix is initial)."""
    out: list[TraceStep] = []
    previous = before
    for k in path:
        state = g.states[k]
        if previous is None:
            out.append(TraceStep(None, state))
        else:
            source = g.states[previous]
            label = next(
                spec.step_of(decl, args) for decl, args, t in spec.successors(source) if t == state
            )
            out.append(TraceStep(label, state))
        previous = k
    return tuple(out)
