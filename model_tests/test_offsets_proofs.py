"""``kmodel prove offsets``: the offsets spec's invariants are inductive for every
generation, coordinator and number of faults, the encoding agrees with the spec state by
state, and each broken variant (and committing before processing) yields a counterexample
to induction for the property it breaks."""

from __future__ import annotations

import random

import orjson
import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from spec.explore import reachable_states
from spec.offsets import Offsets, Params, build
from spec.offsets.commits import State
from spec.proofs.offsets.encoding import Encoding, cross_check
from spec.proofs.offsets.obligations import COUNTEREXAMPLE, PROVED, holds_on, invariants, prove


def _sample(states: list[State], n: int, seed: int = 1) -> list[State]:
    return random.Random(seed).sample(states, min(n, len(states)))


def _unbounded_states(params: Params, limit: int = 3_000) -> list[State]:
    """Reachable states of the spec without its fault budgets (what the encoding models)."""
    return reachable_states(Encoding(params).spec, limit)


@pytest.mark.parametrize(
    "params",
    [
        Params(),
        Params(commit="before-process", reset="latest"),
        Params(members=1, records=3, max_member_ids=3),
        Params(bugs=frozenset({"stale_generation_commit"})),
        Params(bugs=frozenset({"fetch_before_load", "commit_given_up"})),
    ],
    ids=["default", "before-latest", "one-consumer", "stale", "before-load-given-up"],
)
def test_encoding_agrees_with_the_spec_on_reachable_states(params: Params) -> None:
    states = _unbounded_states(params)
    assert len(states) >= 1_000
    assert cross_check(Encoding(params), _sample(states, 60)) == []


def test_the_cross_check_notices_an_encoding_that_differs_from_the_spec() -> None:
    enc = Encoding(Params())
    enc.spec = Offsets(
        Params(
            bugs=frozenset({"stale_generation_commit"}),
            max_generation=10**6,
            max_expiries=10**6,
            max_crashes=10**6,
            max_failovers=10**6,
        )
    )
    with_commits = [s for s in _unbounded_states(Params()) if s.inflight]
    problems = cross_check(enc, _sample(with_commits, 100))
    assert any(p.startswith("handle_commit") for p in problems)


def test_the_strengthening_holds_on_reachable_states() -> None:
    params = Params()
    enc = Encoding(params)
    for s in _sample(_unbounded_states(params), 200):
        for inv in invariants(params):
            assert holds_on(enc, inv, s), (inv.name, enc.spec.short(s))


@pytest.mark.slow
def test_the_strengthening_holds_across_the_bounded_state_space() -> None:
    """Every 25th state of all ``kmodel check offsets`` visits (96,232 states), and the
    encoding agrees with the spec on every 250th."""
    params = Params()
    enc = Encoding(params)
    states = reachable_states(build(params), 10**6)
    for s in states[::25]:
        for inv in invariants(params):
            assert holds_on(enc, inv, s), (inv.name, enc.spec.short(s))
    assert cross_check(enc, states[::250]) == []


@pytest.mark.parametrize(
    "params",
    [Params(), Params(members=3, records=4, max_member_ids=3), Params(members=1, records=1)],
    ids=["default", "three-consumers", "one-record"],
)
def test_every_obligation_is_proved_committing_after_processing(params: Params) -> None:
    run = prove(params)
    failed = [(r.invariant, r.action) for r in run.results if r.status != PROVED]
    assert run.status == PROVED, failed
    assert all(answer == "sat" for _, answer in run.enabled), "no action holds vacuously"


def _broken(params: Params) -> set[str]:
    run = prove(params)
    assert run.status == COUNTEREXAMPLE
    assert all(r.cti is not None for r in run.results if r.status == COUNTEREXAMPLE)
    return {r.invariant for r in run.results if r.status == COUNTEREXAMPLE}


@pytest.mark.parametrize(
    ("bug", "broken"),
    [
        ("stale_generation_commit", "StaleGenerationNeverCommits"),
        ("fetch_before_load", "StoredOwnerProgress"),
        ("commit_given_up", "AckedNotAheadOfCommitted"),
    ],
)
def test_each_bug_gives_a_counterexample_to_induction(bug: str, broken: str) -> None:
    assert broken in _broken(Params(bugs=frozenset({bug})))


def test_committing_before_processing_only_a_crash_loses_a_record() -> None:
    """At most once: AtLeastOnce (and the two auxiliaries that carry it) fail only at
    ``crash``, between the commit and the processing; every other obligation is proved."""
    run = prove(Params(commit="before-process"))
    failed = {(r.invariant, r.action) for r in run.results if r.status != PROVED}
    assert {name for name, _ in failed} == {
        "AtLeastOnce",
        "CommittedHeldOrProcessed",
        "ViableCommitHeldOrProcessed",
    }
    assert {action for _, action in failed} == {"crash(1)", "crash(2)"}
    assert all(r.cti is not None for r in run.results if r.status == COUNTEREXAMPLE)


def test_the_before_process_strengthening_holds_on_states_reached_without_a_crash() -> None:
    params = Params(commit="before-process", max_crashes=0)
    enc = Encoding(params)
    for s in _sample(reachable_states(build(params), 20_000), 200):
        for inv in invariants(params):
            assert holds_on(enc, inv, s), (inv.name, enc.spec.short(s))


def test_reset_to_latest_skips_records_the_proof_reports_it() -> None:
    """``auto.offset.reset=latest`` starts past records nobody processed (``kmodel check
    offsets --offset-reset latest`` finds AtLeastOnce violated)."""
    assert _broken(Params(reset="latest")) == {"PositionProcessed"}


def test_a_counterexample_is_read_back_as_spec_states() -> None:
    run = prove(Params(bugs=frozenset({"stale_generation_commit"})))
    cti = next(r for r in run.results if r.invariant == "StaleGenerationNeverCommits" and r.cti)
    assert cti.cti is not None
    pre, post = cti.cti
    (commit,) = pre.inflight - post.inflight
    assert commit.member_id not in pre.group.members or commit.generation != pre.group.generation
    assert post.stored.committed == commit.offset


def test_cli_proves_and_reports_json() -> None:
    result = CliRunner().invoke(main, ["prove", "offsets", "--json"])
    assert result.exit_code == 0, result.output
    payload = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert payload["status"] == "proved"
    assert payload["obligations"] == payload["proved"] == 521
    assert payload["exit_code"] == 0


def test_cli_exits_one_on_a_counterexample_and_two_on_bad_input() -> None:
    bad = CliRunner().invoke(main, ["prove", "offsets", "--bug", "fetch_before_load"])
    assert bad.exit_code == 1 and "counterexample to induction" in bad.stdout
    before = CliRunner().invoke(main, ["prove", "offsets", "--commit", "before-process", "--json"])
    assert before.exit_code == 1
    assert orjson.loads(before.stdout.strip().splitlines()[-1])["counterexamples"] == 6
    wrong = CliRunner().invoke(main, ["prove", "offsets", "--records", "9"])
    assert wrong.exit_code == 2 and "records must be 1..4" in wrong.stderr
    other = CliRunner().invoke(main, ["prove", "offsets", "--bug", "assign_before_revoked"])
    assert other.exit_code == 2 and "not a bug of spec offsets" in other.stderr
