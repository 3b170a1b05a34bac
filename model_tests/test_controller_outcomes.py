"""The controller's fences and what goes wrong without each, reproduced by the model checker.

Each outcome of ``spec.controller_outcomes`` is checked and pinned as a scenario file under
``scenarios/controller/``: the command, the violated property (or "holds" with the state
count), and the shortest trace as a table, readable without Python. The shortest witnesses
of the brain split being survived (a zombie's request rejected, a zombie's write refused)
are pinned beside them. Run pytest with ``--rewrite`` (or ``KMODEL_REWRITE=1``) to
regenerate them, and review the diff.
"""

from __future__ import annotations

import pytest

from model_tests.controller_runs import default_check
from model_tests.scenario_files import (
    SCENARIOS,
    assert_matches_file,
    outcome_cases,
    render_outcome_file,
)
from spec.controller import Controller, Params
from spec.controller_outcomes import OUTCOMES, WITNESSES, ControllerOutcome
from spec.explore import CheckResult, check
from spec.trace import render_table

DIRECTORY = SCENARIOS / "controller"


def _result(outcome: ControllerOutcome) -> CheckResult:
    if outcome.params == Params() and not outcome.invariants:
        return default_check()
    return check(Controller(outcome.params), invariants=list(outcome.invariants) or None)


def render_outcome(outcome: ControllerOutcome) -> str:
    return render_outcome_file(
        Controller(outcome.params),
        _result(outcome),
        title=outcome.title,
        reference=outcome.reference,
        command=outcome.command(),
        gap=2,
    )


def _cases() -> list[object]:
    return outcome_cases(OUTCOMES)


@pytest.mark.parametrize("outcome", _cases())
def test_known_outcome(outcome: ControllerOutcome, rewrite: bool) -> None:
    text = render_outcome(outcome)
    if outcome.expect_violation is None:
        assert text.splitlines()[4].startswith("holds:"), text
    else:
        assert f"violated: {outcome.expect_violation} " in text, text
    assert_matches_file(DIRECTORY / f"{outcome.name}.txt", text, rewrite)


@pytest.mark.parametrize(("name", "prop"), WITNESSES, ids=[name for name, _ in WITNESSES])
def test_brain_split_is_survived(name: str, prop: str, rewrite: bool) -> None:
    result = default_check()
    trace = result.sometimes[prop]
    assert trace is not None, f"{prop} was never witnessed"
    spec = Controller(Params())
    doc = next(d.doc for d in spec.applicable_sometimes() if d.name == prop)
    lines = [
        f"# The brain split survived: the shortest run in which {prop} happens",
        "# reproduce: kmodel check controller (the witness of the sometimes property)",
        "",
        f"witnessed: {prop} ({len(trace)} states)",
        f"  {doc}",
        "",
        "",
    ]
    text = "\n".join(lines) + render_table(spec, trace)
    assert_matches_file(DIRECTORY / f"{name}.txt", text, rewrite)
