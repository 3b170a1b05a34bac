"""The consumer group's fences and what goes wrong without each, reproduced by the model
checker.

Each outcome of ``spec.group_outcomes`` is checked and pinned as a scenario file under
``scenarios/group/``: the command, the violated property (or "holds" with the state count),
and the shortest trace as a table, readable without Python. The length of each shortest
counterexample is pinned in the outcome itself. Run pytest with ``--rewrite`` (or
``KMODEL_REWRITE=1``) to regenerate the files, and review the diff.
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
from spec.group import Params, build
from spec.group_outcomes import OUTCOMES, WITNESSES, GroupOutcome
from spec.trace import render_table

DIRECTORY = SCENARIOS / "group"


@functools.cache
def _check(params: Params, invariants: tuple[str, ...]) -> CheckResult:
    return check(build(params), invariants=list(invariants) or None)


def render_outcome(outcome: GroupOutcome) -> str:
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
def test_known_outcome(outcome: GroupOutcome, rewrite: bool) -> None:
    text = render_outcome(outcome)
    result = _check(outcome.params, outcome.invariants)
    if outcome.expect_violation is None:
        assert text.splitlines()[4].startswith("holds:"), text
        assert result.missing_sometimes == []
    else:
        assert result.violation is not None, text
        assert result.violation.name == outcome.expect_violation
        assert result.violation.depth == outcome.trace_length, "the pinned shortest trace"
    assert_matches_file(DIRECTORY / f"{outcome.name}.txt", text, rewrite)


@pytest.mark.parametrize(
    ("name", "prop", "params"), WITNESSES, ids=[name for name, _, _ in WITNESSES]
)
def test_zombie_is_fenced_and_coordinator_moves(
    name: str, prop: str, params: Params, rewrite: bool
) -> None:
    spec = build(params)
    result = _check(params, ())
    trace = result.sometimes[prop]
    assert trace is not None, f"{prop} was never witnessed"
    doc = next(d.doc for d in spec.applicable_sometimes() if d.name == prop)
    command = GroupOutcome("", "", params, (), None, None, "").command()
    lines = [
        f"# The shortest run in which {prop} happens",
        f"# reproduce: {command} (the witness of the sometimes property)",
        "",
        f"witnessed: {prop} ({len(trace)} states)",
        f"  {doc}",
        "",
        "",
    ]
    text = "\n".join(lines) + render_table(spec, trace)
    assert_matches_file(DIRECTORY / f"{name}.txt", text, rewrite)
