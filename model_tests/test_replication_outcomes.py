"""Kafka's known replication bugs, reproduced by the model checker.

Each outcome of ``spec.outcomes`` is checked; where a violation is expected, its shortest
counterexample is pinned as a scenario file under ``scenarios/replication/``: the command,
the violated property, and the trace as a table, readable without Python. Run pytest with
``--rewrite`` (or ``KMODEL_REWRITE=1``) to regenerate them, and review the diff.
"""

from __future__ import annotations

import pytest

from model_tests.scenario_files import (
    SCENARIOS,
    assert_matches_file,
    outcome_cases,
    render_outcome_file,
)
from spec.explore import check
from spec.outcomes import OUTCOMES, Outcome
from spec.replication import Replication


def render_outcome(outcome: Outcome) -> str:
    return render_outcome_file(
        Replication(outcome.params),
        check(Replication(outcome.params), invariants=list(outcome.invariants)),
        title=outcome.title,
        reference=outcome.reference,
        command=outcome.command(),
        gap=1,
    )


def _cases() -> list[object]:
    return outcome_cases(OUTCOMES)


@pytest.mark.parametrize("outcome", _cases())
def test_known_outcome(outcome: Outcome, rewrite: bool) -> None:
    text = render_outcome(outcome)
    if outcome.expect_violation is None:
        assert text.splitlines()[4].startswith("holds:"), text
    else:
        assert f"violated: {outcome.expect_violation} " in text, text
    assert_matches_file(SCENARIOS / "replication" / f"{outcome.name}.txt", text, rewrite)
