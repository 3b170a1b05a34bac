"""The model checker itself, on toy specs whose answers are known by hand."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from spec.explore import check, simulate
from spec.framework import (
    Kind,
    Spec,
    SpecError,
    Step,
    action,
    all_permutations,
    invariant,
    sometimes,
    transition_property,
)
from spec.trace import render_table, result_json, to_dot, trace_json


class Counters(Spec):
    """Three processes, each with a counter 0..limit; any may increment its own."""

    name = "counters"

    def __init__(self, limit: int = 2, bad_sum: int | None = None, bound: int | None = None):
        self.limit = limit
        self.bad_sum = bad_sum
        self.bound = bound

    def init(self) -> Iterator[tuple[int, ...]]:
        yield (0, 0, 0)

    def within_bounds(self, s: tuple[int, ...]) -> bool:
        return self.bound is None or sum(s) <= self.bound

    def _procs(self, s: tuple[int, ...]) -> Iterator[tuple[int]]:
        for i in range(3):
            yield (i,)

    @action(domain="_procs")
    def inc(self, s: tuple[int, ...], i: int) -> tuple[int, ...] | None:
        """Process i increments its counter."""
        if s[i] >= self.limit:
            return None
        return (*s[:i], s[i] + 1, *s[i + 1 :])

    @action(kind=Kind.FAULT)
    def never(self, s: tuple[int, ...]) -> tuple[int, ...] | None:
        """An action whose guard is never true."""
        return None

    @invariant
    def sum_is_not_bad(self, s: tuple[int, ...]) -> bool:
        """The counters never add up to ``bad_sum``."""
        return self.bad_sum is None or sum(s) != self.bad_sum

    @transition_property
    def counters_grow(self, before: Any, step: Step, after: Any) -> bool:
        """Counters never decrease."""
        return all(a >= b for a, b in zip(after, before, strict=True))

    @sometimes
    def all_at_limit(self, s: tuple[int, ...]) -> bool:
        """Every counter reaches its limit."""
        return all(c == self.limit for c in s)

    def symmetry_permutations(self) -> list[tuple[int, ...]]:
        return all_permutations((1, 2, 3))

    def permute(self, s: tuple[int, ...], perm: tuple[int, ...]) -> tuple[int, ...]:
        out = [0, 0, 0]
        for i, value in enumerate(s):
            out[perm[i] - 1] = value
        return tuple(out)

    def sort_key(self, s: tuple[int, ...]) -> tuple[int, ...]:
        return s


def test_exhaustive_search_counts_every_reachable_state() -> None:
    result = check(Counters(limit=2))
    assert result.complete and result.violation is None
    assert result.stats.distinct_states == 27  # 3 counters, 3 values each
    assert result.stats.depth == 7  # (0,0,0) .. (2,2,2): six steps, seven states
    assert result.sometimes["AllAtLimit"] is not None


def test_counterexample_is_a_shortest_trace() -> None:
    result = check(Counters(limit=2, bad_sum=3))
    violation = result.violation
    assert violation is not None and violation.name == "SumIsNotBad"
    assert violation.depth == 4  # three increments after the initial state
    assert sum(violation.trace[-1].state) == 3
    assert [s.step.action for s in violation.trace[1:] if s.step] == ["inc", "inc", "inc"]


def test_symmetry_reduction_reports_the_exact_factor() -> None:
    plain = check(Counters(limit=2))
    reduced = check(Counters(limit=2), symmetry=True)
    # Orbits of (a, b, c) under permutation are multisets: C(3 + 3 - 1, 3) = 10.
    assert reduced.stats.distinct_states == 10
    assert reduced.stats.unreduced_states == plain.stats.distinct_states == 27
    assert reduced.stats.symmetry_factor == pytest.approx(2.7)


def test_symmetric_counterexample_is_replayed_as_a_real_execution() -> None:
    spec = Counters(limit=2, bad_sum=5)
    result = check(spec, symmetry=True)
    assert result.violation is not None and result.violation.depth == 6
    trace = result.violation.trace
    for before, after in itertools.pairwise(trace):
        assert after.step is not None
        args = dict(after.step.args)
        assert spec.inc(before.state, **args) == after.state


def test_never_fired_action_is_a_warning() -> None:
    result = check(Counters(limit=1))
    assert result.stats.fired["never"] == 0
    assert "action never never fired" in result.warnings


def test_bounds_stop_expansion_but_states_are_still_checked() -> None:
    result = check(Counters(limit=2, bound=2, bad_sum=3))
    assert result.violation is not None  # sum 3 is reached from states with sum 2
    bounded = check(Counters(limit=2, bound=1))
    # sums 0..2 are reached (a state with sum 2 is found but not expanded)
    assert bounded.stats.distinct_states == 1 + 3 + 6
    assert bounded.sometimes["AllAtLimit"] is None
    assert bounded.missing_sometimes == ["AllAtLimit"]


def test_budget_makes_the_result_incomplete() -> None:
    result = check(Counters(limit=2), max_states=5)
    assert not result.complete and result.violation is None


def test_transition_property_violation_names_the_step() -> None:
    class Shrinking(Counters):
        @action(domain="_procs")
        def dec(self, s: tuple[int, ...], i: int) -> tuple[int, ...] | None:
            """Process i decrements (a bug: counters must grow)."""
            if s[i] == 0:
                return None
            return (*s[:i], s[i] - 1, *s[i + 1 :])

    result = check(Shrinking(limit=1))
    assert result.violation is not None
    assert result.violation.kind == "transition"
    assert result.violation.name == "CountersGrow"
    assert result.violation.trace[-1].step is not None
    assert result.violation.trace[-1].step.action == "dec"
    assert result.violation.depth == 3


def test_unknown_invariant_name_lists_the_accepted_ones() -> None:
    with pytest.raises(SpecError, match="accepted: CountersGrow, SumIsNotBad"):
        check(Counters(), invariants=["NoSuchThing"])


def test_undocumented_action_is_rejected() -> None:
    with pytest.raises(SpecError, match="no docstring"):

        class Undocumented(Spec):
            @action()
            def step(self, s: Any) -> Any:
                return s


def test_simulation_is_deterministic_per_seed() -> None:
    a = simulate(Counters(limit=3, bad_sum=7), seed=11, depth=10, runs=50)
    b = simulate(Counters(limit=3, bad_sum=7), seed=11, depth=10, runs=50)
    assert a.violation is not None and b.violation is not None
    assert a.violation.trace == b.violation.trace
    assert a.stats == b.stats
    clean = simulate(Counters(limit=3), seed=11, depth=10, runs=50)
    assert clean.violation is None and clean.mode == "simulation" and not clean.complete


def test_trace_renderings() -> None:
    spec = Counters(limit=2, bad_sum=2)
    result = check(spec, graph=True)
    assert result.violation is not None
    table = render_table(spec, result.violation.trace)
    assert table.splitlines()[1].split("|")[1].strip() == "action"
    assert "inc(i=0)" in table
    steps = trace_json(spec, result.violation.trace)
    assert steps[0]["action"] is None and steps[-1]["args"] in ({"i": 0}, {"i": 1}, {"i": 2})
    summary = result_json(result)
    assert summary["violated"] == "SumIsNotBad" and summary["trace_length"] == 3
    dot = to_dot(spec, result)
    assert dot.startswith('digraph "counters"') and "-> s1" in dot
