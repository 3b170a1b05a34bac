"""Committed offsets and delivery: each outcome of ``spec.offsets_outcomes`` reproduced by
the model checker and pinned as a scenario file under ``scenarios/offsets/`` (the command,
the violated property or "holds" with the state count, and the shortest trace as a table).
The trace lengths and state counts are pinned in the outcomes themselves. Run pytest with
``--rewrite`` (or ``KMODEL_REWRITE=1``) to regenerate the files, and review the diff.
"""

from __future__ import annotations

import functools

import pytest

from model_tests.scenario_files import (
    SCENARIOS,
    assert_matches_file,
    outcome_cases,
    render_outcome_file,
)
from spec.explore import CheckResult, check
from spec.liveness import LivenessResult, check_liveness
from spec.offsets import BUGS, Params, build
from spec.offsets_outcomes import LIVENESS, OUTCOMES, OffsetsOutcome
from spec.trace import render_lasso

DIRECTORY = SCENARIOS / "offsets"


@functools.cache
def _check(params: Params, invariants: tuple[str, ...]) -> CheckResult:
    return check(build(params), invariants=list(invariants) or None)


@functools.cache
def _liveness(params: Params) -> LivenessResult:
    return check_liveness(build(params))


def render_outcome(outcome: OffsetsOutcome) -> str:
    return render_outcome_file(
        build(outcome.params),
        _check(outcome.params, outcome.invariants),
        title=outcome.title,
        reference=outcome.reference,
        command=outcome.command(),
        gap=2,
    )


def _cases() -> list[object]:
    return outcome_cases(OUTCOMES)


@pytest.mark.parametrize("outcome", _cases())
def test_known_outcome(outcome: OffsetsOutcome, rewrite: bool) -> None:
    text = render_outcome(outcome)
    result = _check(outcome.params, outcome.invariants)
    if outcome.expect_violation is None:
        assert result.violation is None, text
        assert result.complete
        assert result.missing_sometimes == []
        assert result.stats.distinct_states == outcome.distinct_states, "the pinned state count"
    else:
        assert result.violation is not None, text
        assert result.violation.name == outcome.expect_violation
        assert result.violation.depth == outcome.trace_length, "the pinned shortest trace"
    assert_matches_file(DIRECTORY / f"{outcome.name}.txt", text, rewrite)


def test_every_bug_is_violated_under_the_default_bounds() -> None:
    """``kmodel check offsets --bug X`` alone shows each bug: a safety violation, or (the
    liveness bug) a fair behavior that never commits."""
    for bug in BUGS:
        params = Params(bugs=frozenset({bug}))
        result = _check(params, ())
        if result.violation is None:
            assert result.complete
            assert _liveness(params).violation is not None, bug


@pytest.mark.parametrize(
    ("name", "prop", "params", "expected", "lasso"),
    LIVENESS,
    ids=[case[0] for case in LIVENESS],
)
def test_liveness(
    name: str,
    prop: str,
    params: Params,
    expected: str | None,
    lasso: tuple[int, int] | None,
    rewrite: bool,
) -> None:
    spec = build(params)
    assert _check(params, ()).violation is None
    result = _liveness(params)
    assert result.complete
    command = "kmodel check offsets" + "".join(f" --bug {b}" for b in sorted(params.bugs))
    lines = [f"# {prop} under fairness", f"# reproduce: {command}", ""]
    if expected is None:
        assert result.violation is None
        lines.append(f"holds: {prop} ({result.states} states, {result.edges} transitions)")
        text = "\n".join(lines) + "\n"
    else:
        violation = result.violation
        assert violation is not None and violation.name == expected
        got = (len(violation.lasso.prefix), len(violation.lasso.cycle))
        assert got == lasso, "the pinned lasso"
        lines += [f"violated: {prop} ({got[0]} states, then a cycle of {got[1]} steps)", "", ""]
        text = "\n".join(lines) + render_lasso(spec, violation.lasso)
    assert_matches_file(DIRECTORY / f"{name}.txt", text, rewrite)
