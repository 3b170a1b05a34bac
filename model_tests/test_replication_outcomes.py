"""Kafka's known replication bugs, reproduced by the model checker.

Each outcome of ``spec.outcomes`` is checked; where a violation is expected, its shortest
counterexample is pinned as a scenario file under ``scenarios/replication/``: the command,
the violated property, and the trace as a table, readable without Python. Run pytest with
``--rewrite`` (or ``KMODEL_REWRITE=1``) to regenerate them, and review the diff.
"""

from __future__ import annotations

import pytest

from model_tests.scenario_files import SCENARIOS, assert_matches_file
from spec.explore import check
from spec.outcomes import OUTCOMES, Outcome
from spec.replication import Replication
from spec.trace import render_table


def render_outcome(outcome: Outcome) -> str:
    spec = Replication(outcome.params)
    result = check(spec, invariants=list(outcome.invariants))
    lines = [
        f"# {outcome.title}",
        f"# reference: {outcome.reference}",
        f"# reproduce: {outcome.command()}",
        "",
    ]
    if result.violation is None:
        assert result.complete
        lines.append(
            f"holds: {', '.join(result.checked)} "
            f"({result.stats.distinct_states} distinct states, depth {result.stats.depth})"
        )
        return "\n".join(lines) + "\n"
    violation = result.violation
    lines.append(f"violated: {violation.name} ({violation.depth} states)")
    lines.append("")
    return "\n".join(lines) + render_table(spec, violation.trace)


def _cases() -> list[object]:
    return [
        pytest.param(o, id=o.name, marks=[pytest.mark.slow] if o.slow else []) for o in OUTCOMES
    ]


@pytest.mark.parametrize("outcome", _cases())
def test_known_outcome(outcome: Outcome, rewrite: bool) -> None:
    text = render_outcome(outcome)
    if outcome.expect_violation is None:
        assert text.splitlines()[4].startswith("holds:"), text
    else:
        assert f"violated: {outcome.expect_violation} " in text, text
    assert_matches_file(SCENARIOS / "replication" / f"{outcome.name}.txt", text, rewrite)
