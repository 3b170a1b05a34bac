"""``kmodel prove rebalance``: the partition-state invariants are inductive for every number
of elections, shutdowns and reassignments; each proof can fail (a broken variant gives a
counterexample to induction); and the encoding over-approximates the spec (every step of
the spec, on reachable states, is a step of the encoding)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from spec.explore import reachable_states
from spec.proofs.rebalance import COUNTEREXAMPLE, PROVED, Config, project, prove, step_matches
from spec.rebalance import Params, Rebalance


@pytest.mark.parametrize(("brokers", "min_isr"), [(2, 1), (3, 2)])
def test_partition_state_invariants_are_inductive(brokers: int, min_isr: int) -> None:
    run = prove(Config(brokers=brokers, min_isr=min_isr))
    assert run.status == PROVED, [r for r in run.results if r.status != PROVED]
    assert all(answer == "sat" for _, answer in run.enabled), "an action is never enabled"
    proved = {r.invariant for r in run.results}
    assert proved == {"LeaderAndIsrWellFormed", "ReassignmentWellFormed", "ReassignmentKeepsMinIsr"}


@pytest.mark.parametrize(
    ("bug", "invariant", "action"),
    [
        ("shutdown_to_non_isr", "LeaderAndIsrWellFormed", "controlled_shutdown"),
        ("drop_before_isr_join", "ReassignmentKeepsMinIsr", "complete_reassignment"),
    ],
)
def test_a_broken_variant_has_a_counterexample_to_induction(
    bug: str, invariant: str, action: str
) -> None:
    run = prove(Config(bugs=frozenset({bug})))
    failed = [(r.invariant, r.action) for r in run.results if r.status == COUNTEREXAMPLE]
    assert failed == [(invariant, action)]
    cti = next(r.cti for r in run.results if r.status == COUNTEREXAMPLE)
    assert cti is not None


@pytest.mark.parametrize("bug", ["no_elr", "stale_elr"])
def test_elr_bugs_break_only_what_is_not_encoded(bug: str) -> None:
    """They lose acknowledged writes (``kmodel check``), not partition-state shape."""
    assert prove(Config(bugs=frozenset({bug}))).status == PROVED


CONFIGURATIONS = [
    ("preferred", ()),
    ("shutdown", ()),
    ("reassignment", ()),
    ("elr", ()),
    ("all", ()),
    ("shutdown", ("shutdown_to_non_isr",)),
    ("reassignment", ("drop_before_isr_join",)),
    ("elr", ("no_elr",)),
    ("elr", ("stale_elr",)),
]


@pytest.mark.parametrize(
    ("mechanism", "bugs"), CONFIGURATIONS, ids=[f"{m}-{'-'.join(b)}" for m, b in CONFIGURATIONS]
)
def test_every_step_of_the_spec_is_a_step_of_the_encoding(
    mechanism: str, bugs: tuple[str, ...]
) -> None:
    params = Params.of(mechanism, bugs=frozenset(bugs))
    spec = Rebalance(params)
    cfg = Config(brokers=params.brokers, min_isr=params.min_isr, bugs=params.bugs)
    steps = 0
    for s in reachable_states(spec, 400):
        for decl, args, t in spec.successors(s):
            steps += 1
            assert step_matches(cfg, decl.name, project(s), project(t)), (decl.name, args, s)
    assert steps > 1_000


def test_cli_proves_and_reports() -> None:
    import orjson

    result = CliRunner().invoke(main, ["prove", "rebalance", "--brokers", "2", "--json"])
    assert result.exit_code == 0, result.output
    payload = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert payload["status"] == "proved" and payload["never_enabled"] == []
    broken = CliRunner().invoke(main, ["prove", "rebalance", "--bug", "drop_before_isr_join"])
    assert broken.exit_code == 1
    assert "ReassignmentKeepsMinIsr is not preserved by complete_reassignment" in broken.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--truncation", "kip101"], "--truncation is a flag of spec replication"),
        (["--bug", "unconditional_write"], "is not a bug of spec rebalance"),
        (["--brokers", "9"], "brokers must be 2..4"),
    ],
)
def test_cli_rejects_bad_input(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["prove", "rebalance", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
