"""Leadership and replica movement, and what goes wrong without each rule, reproduced by the
model checker.

Each outcome of ``spec.rebalance_outcomes`` is checked and pinned as a scenario file under
``scenarios/rebalance/``: the command, the violated property (or "holds" with the state
count), and the shortest trace as a table, readable without Python. The shortest witnesses
of each mechanism doing its work (the preferred leader regaining leadership, a controlled
shutdown moving a leader, a reassignment completing, a leader elected from the ELR) are
pinned beside them. Run pytest with ``--rewrite`` (or ``KMODEL_REWRITE=1``) to regenerate
them, and review the diff.
"""

from __future__ import annotations

import pytest

from model_tests.rebalance_runs import default_check
from model_tests.scenario_files import (
    SCENARIOS,
    assert_matches_file,
    outcome_cases,
    render_outcome_file,
)
from spec.explore import CheckResult, check
from spec.liveness import check_liveness
from spec.rebalance import Params, Rebalance
from spec.rebalance_outcomes import OUTCOMES, WITNESSES, RebalanceOutcome, by_name
from spec.trace import render_lasso, render_table

DIRECTORY = SCENARIOS / "rebalance"

COUNTEREXAMPLE_STATES = {
    "shutdown-to-non-isr": 5,
    "shutdown-to-non-isr-acked-write-lost": 10,
    "drop-before-isr-join": 3,
    "drop-before-isr-join-acked-write-lost": 10,
    "no-elr-last-replica-standing": 12,
    "stale-elr": 13,
    "no-elr-three-replicas": 13,
}
"""The length (states, TLC's depth) of each shortest counterexample."""


def _result(outcome: RebalanceOutcome) -> CheckResult:
    if outcome.params == Params.of(outcome.params.mechanism) and not outcome.invariants:
        return default_check(outcome.params.mechanism)
    return check(Rebalance(outcome.params), invariants=list(outcome.invariants) or None)


def render_outcome(outcome: RebalanceOutcome) -> str:
    return render_outcome_file(
        Rebalance(outcome.params),
        _result(outcome),
        title=outcome.title,
        reference=outcome.reference,
        command=outcome.command(),
        gap=2,
    )


def _cases() -> list[object]:
    return outcome_cases(OUTCOMES)


@pytest.mark.parametrize("outcome", _cases())
def test_known_outcome(outcome: RebalanceOutcome, rewrite: bool) -> None:
    text = render_outcome(outcome)
    if outcome.expect_violation is None:
        assert text.splitlines()[4].startswith("holds:"), text
    else:
        states = COUNTEREXAMPLE_STATES[outcome.name]
        assert f"violated: {outcome.expect_violation} ({states} states)" in text, text
    assert_matches_file(DIRECTORY / f"{outcome.name}.txt", text, rewrite)


def test_every_violation_has_a_pinned_length() -> None:
    expected = {o.name for o in OUTCOMES if o.expect_violation is not None}
    assert expected == set(COUNTEREXAMPLE_STATES)


def test_last_replica_standing_is_lost_without_elr_and_kept_with_it() -> None:
    """KIP-966 side by side: the same bounds, the ELR off and on."""
    without, fixed = by_name("no-elr-last-replica-standing"), by_name("elr-holds")
    assert without.params.bugs == {"no_elr"} and not fixed.params.bugs
    assert attrs_without_bugs(without.params) == attrs_without_bugs(fixed.params)
    lost = _result(without)
    assert lost.violation is not None and lost.violation.name == "NoAckedAllWriteLost"
    kept = _result(fixed)
    assert kept.violation is None and kept.complete and kept.missing_sometimes == []


def attrs_without_bugs(params: Params) -> Params:
    import attrs

    return attrs.evolve(params, bugs=frozenset())


@pytest.mark.parametrize(
    ("name", "mechanism", "prop"), WITNESSES, ids=[name for name, _, _ in WITNESSES]
)
def test_mechanism_does_its_work(name: str, mechanism: str, prop: str, rewrite: bool) -> None:
    result = default_check(mechanism)
    trace = result.sometimes[prop]
    assert trace is not None, f"{prop} was never witnessed"
    spec = Rebalance(Params.of(mechanism))
    doc = next(d.doc for d in spec.applicable_sometimes() if d.name == prop)
    lines = [
        f"# The shortest run in which {prop} happens",
        f"# reproduce: kmodel check rebalance --mechanism {mechanism} "
        "(the witness of the sometimes property)",
        "",
        f"witnessed: {prop} ({len(trace)} states)",
        f"  {doc}",
        "",
        "",
    ]
    text = "\n".join(lines) + render_table(spec, trace)
    assert_matches_file(DIRECTORY / f"{name}.txt", text, rewrite)


def test_a_reassignment_the_leader_never_learns_of_never_finishes(rewrite: bool) -> None:
    """The liveness bug's lasso, pinned: the adding replica's fetches are refused, so it
    never joins the ISR and the reassignment never completes."""
    params = Params.of(bugs={"assignment_not_sent"})
    spec = Rebalance(params)
    assert check(spec).violation is None, "a liveness bug: every safety property holds"
    live = check_liveness(spec)
    violation = live.violation
    assert violation is not None and violation.name == "ReassignmentFinishes"
    lasso = violation.lasso
    assert (len(lasso.prefix), len(lasso.cycle)) == (7, 0)
    lines = [
        "# The controller records a reassignment but the leader never learns the new "
        "replicas: their fetches are refused and the reassignment never finishes",
        "# reference: KIP-455",
        "# reproduce: kmodel check rebalance --mechanism reassignment --bug assignment_not_sent",
        "",
        f"violated: {violation.name} (liveness: {lasso.states} states, then a cycle of "
        f"{len(lasso.cycle)} steps)",
        "",
        "",
    ]
    text = "\n".join(lines) + render_lasso(spec, lasso)
    assert_matches_file(DIRECTORY / "assignment-not-sent.txt", text, rewrite)
