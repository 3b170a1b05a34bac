"""The rebalance spec: each mechanism's rules on a small example, every property holds in
each mechanism's default bounds and is shown able to fail by a broken variant, the state
counts are pinned, and composing with the replication core leaves replication alone."""

from __future__ import annotations

from fractions import Fraction

import pytest

from model_tests.rebalance_runs import default_check
from spec.explore import check
from spec.framework import SpecError
from spec.liveness import check_liveness
from spec.rebalance import BUG_MECHANISM, BUGS, MECHANISMS, Params, Rebalance, RState
from spec.rebalance import elr as elr_rules
from spec.rebalance.preferred import imbalance_ratio, imbalanced
from spec.replication import NONE, Quorum

# bug -> the property it breaks first within its mechanism's default bounds
BREAKS = {
    "drop_before_isr_join": "ReassignmentKeepsMinIsr",
    "shutdown_to_non_isr": "LeaderAndIsrWellFormed",
    "stale_elr": "NoAckedAllWriteLost",
    "no_elr": "NoAckedAllWriteLost",
    "assignment_not_sent": "ReassignmentFinishes",
}

# property -> a bug under which it fails (checked alone)
FAILS_UNDER = {
    "LeaderAndIsrWellFormed": "shutdown_to_non_isr",
    "NoAckedAllWriteLost": "no_elr",
    "ReassignmentKeepsMinIsr": "drop_before_isr_join",
}

# mechanism -> (distinct states, states generated, depth) of its default bounds
PINNED = {
    "preferred": (5_725, 9_945, 25),
    "shutdown": (13_201, 34_748, 23),
    "reassignment": (10_883, 33_801, 24),
    "elr": (33_768, 81_676, 31),
    "all": (27_991, 62_590, 26),
}


def start(mechanism: str, **kwargs: object) -> tuple[Rebalance, RState]:
    spec = Rebalance(Params.of(mechanism, **kwargs))  # type: ignore[arg-type]
    return spec, next(iter(spec.init()))


def run(s: RState | None, *steps: object) -> RState:
    for step in steps:
        assert s is not None
        s = step(s)  # type: ignore[operator]
    assert s is not None
    return s


def led_by_one(spec: Rebalance, s: RState) -> RState:
    """Broker 1 elected, takes leadership; the other replicas follow it."""
    s = run(s, spec.elect_leader)
    q = s.core.quorum
    s = run(s, lambda t: spec.become_leader(t, q))
    for r in s.meta.assignment[1:]:
        s = run(s, lambda t, r=r: spec.become_follower(t, q, r))
    return s


def committed_write(spec: Rebalance, s: RState) -> RState:
    """Broker 1 appends a record; every follower fetches it twice (the second fetch
    reports the LEO, the HW passes it), so it is acknowledged."""
    s = run(s, lambda t: spec.leader_write(t, 1))
    for _ in range(2):
        for r in s.meta.assignment[1:]:
            s = run(s, lambda t, r=r: spec.fetch(t, r))
    assert s.core.acked
    return s


# --- preferred leader ------------------------------------------------------------------------


def test_imbalance_ratio_counts_the_partitions_a_broker_is_preferred_for() -> None:
    partitions = [((1, 2), 1), ((1, 3), 3), ((1, 2), 2), ((2, 1), 2), ((3, 1), 1)]
    assert imbalance_ratio(partitions, 1) == Fraction(2, 3)
    assert imbalance_ratio(partitions, 2) == 0
    assert imbalance_ratio(partitions, 4) == 0, "preferred for nothing: balanced"
    assert imbalanced(10, Fraction(1, 9)) and not imbalanced(10, Fraction(1, 10))
    assert not imbalanced(100, Fraction(1))


def test_preferred_replica_regains_leadership_only_from_the_isr() -> None:
    spec, s = start("preferred")
    s = led_by_one(spec, s)
    s = run(s, lambda t: spec.controller_shrink_isr(t, 1), spec.elect_leader)
    assert s.core.quorum.leader == 2 and s.core.quorum.isr == {2}
    assert spec.preferred_election(s) is None, "broker 1 is out of the ISR"
    assert spec.auto_rebalance(s) is None
    q = s.core.quorum
    s = run(
        s,
        lambda t: spec.become_leader(t, q),
        lambda t: spec.become_follower(t, q, 1),
        lambda t: spec.fetch(t, 1),
        lambda t: spec.expand_isr_caught_up(t, 2, 1),
    )
    back = spec.auto_rebalance(s)
    assert back is not None and back.core.quorum.leader == 1
    assert back.core.quorum.epoch == s.core.quorum.epoch + 1
    off = Rebalance(Params.of("preferred", auto_rebalance=False))
    assert off.auto_rebalance(s) is None and off.preferred_election(s) == back
    lenient = Rebalance(Params.of("preferred", imbalance_pct=100))
    assert lenient.auto_rebalance(s) is None, "100%: a ratio of 1 is not above it"


# --- controlled shutdown ---------------------------------------------------------------------


def test_controlled_shutdown_moves_leadership_within_the_isr_then_stops() -> None:
    spec, s = start("shutdown")
    s = committed_write(spec, led_by_one(spec, s))
    assert spec.controlled_shutdown(s, 1, NONE) is None, "a leader must hand over"
    assert spec.stop_broker(s, 1) is None, "not granted yet"
    moved = spec.controlled_shutdown(s, 1, 3)
    assert moved is not None
    assert moved.core.quorum.leader == 3 and moved.core.quorum.isr == {2, 3}
    assert moved.meta.shutting == {1}
    stopped = spec.stop_broker(moved, 1)
    assert stopped is not None and not stopped.core.rep(1).alive
    assert stopped.core.rep(1).log == s.core.rep(1).log, "a clean shutdown keeps the log"
    assert spec.expand_isr_caught_up(moved, 1, 1) is None
    back = spec.restart(stopped, 1)
    assert back is not None and back.meta.shutting == frozenset()


def test_shutdown_to_non_isr_hands_leadership_outside_the_isr() -> None:
    spec, s = start("shutdown", bugs={"shutdown_to_non_isr"})
    s = led_by_one(spec, s)
    s = run(s, lambda t: spec.shrink_isr_lagging(t, 1, frozenset({3})))
    moved = spec.controlled_shutdown(s, 1, 3)
    assert moved is not None and moved.core.quorum.leader == 3
    assert not spec.leader_and_isr_well_formed(moved)


# --- reassignment ----------------------------------------------------------------------------


def test_reassignment_waits_for_the_target_replicas_to_join_the_isr() -> None:
    spec, s = start("reassignment")
    s = committed_write(spec, led_by_one(spec, s))
    s = run(s, lambda t: spec.start_reassignment(t, (2, 3)))
    assert s.meta.assignment == (2, 3, 1)
    assert s.meta.adding == {3} and s.meta.removing == {1}
    assert spec.complete_reassignment(s, 2) is None, "broker 3 has not joined the ISR"
    q = s.core.quorum
    s = run(
        s,
        lambda t: spec.become_follower(t, q, 3),
        lambda t: spec.fetch(t, 3),
        lambda t: spec.fetch(t, 3),
        lambda t: spec.expand_isr_caught_up(t, 1, 3),
    )
    assert s.core.quorum.isr == {1, 2, 3}
    assert spec.complete_reassignment(s, NONE) is None, "the leader is removed: name one"
    assert spec.complete_reassignment(s, 1) is None, "not a target replica"
    done = spec.complete_reassignment(s, 3)
    assert done is not None
    assert done.meta.assignment == (2, 3) and not done.meta.ongoing
    assert done.core.quorum.leader == 3 and done.core.quorum.isr == {2, 3}
    assert done.core.rep(1).log == (), "the removed replica deleted its copy"
    assert spec.no_acked_all_write_lost(done)


def test_cancelling_drops_the_adding_replicas() -> None:
    spec, s = start("reassignment")
    s = led_by_one(spec, s)
    s = run(s, lambda t: spec.start_reassignment(t, (1, 2, 3)))
    q = s.core.quorum
    s = run(s, lambda t: spec.become_follower(t, q, 3))
    cancelled = spec.cancel_reassignment(s, NONE)
    assert cancelled is not None
    assert cancelled.meta.assignment == (1, 2) and not cancelled.meta.ongoing
    assert cancelled.core.rep(3).leader == NONE
    assert spec.fetch(cancelled, 3) is None, "no longer a replica"


def test_drop_before_isr_join_completes_at_once() -> None:
    spec, s = start("reassignment", bugs={"drop_before_isr_join"})
    s = run(s, lambda t: spec.start_reassignment(t, (1, 3)))
    done = spec.complete_reassignment(s, 1)
    assert done is not None and done.core.quorum.isr == {1}
    assert done.meta.assignment == (1, 3)


# --- KIP-966 ---------------------------------------------------------------------------------


def test_elr_rules() -> None:
    p = Params.of("elr")
    assert elr_rules.elr_after(p, frozenset(), frozenset({1, 2}), frozenset({2}), (1, 2)) == {1}
    assert elr_rules.elr_after(p, frozenset({1}), frozenset({2}), frozenset(), (1, 2)) == {1, 2}
    back = elr_rules.elr_after(p, frozenset({1}), frozenset({2}), frozenset({1, 2}), (1, 2))
    assert back == set(), "min.insync.replicas reached: the ELR is emptied"
    assert elr_rules.isr_without(p, frozenset({2}), 2, 2) == frozenset()
    assert elr_rules.elect(p, (1, 2), frozenset(), frozenset({1, 2}), frozenset({2})) == (
        2,
        frozenset({2}),
        frozenset({1}),
    )
    assert elr_rules.after_restart(p, frozenset({1, 2}), 1, clean=False) == {2}
    assert elr_rules.after_restart(p, frozenset({1, 2}), 1, clean=True) == {1, 2}
    stale = Params.of("elr", bugs={"stale_elr"})
    assert elr_rules.after_restart(stale, frozenset({1}), 1, clean=False) == {1}
    old = Params.of("elr", bugs={"no_elr"})
    assert elr_rules.isr_without(old, frozenset({2}), 2, 2) == {2}, "last replica standing"
    assert elr_rules.elr_after(old, frozenset(), frozenset({1, 2}), frozenset({2}), (1, 2)) == set()
    assert elr_rules.elect(old, (1, 2), frozenset(), frozenset({1}), frozenset({1}))[0] == NONE


@pytest.mark.parametrize(("bugs", "advances"), [(set(), False), ({"no_elr"}, True)])
def test_hw_waits_for_min_isr_with_kip966_only(bugs: set[str], advances: bool) -> None:
    spec, s = start("elr", bugs=bugs)
    s = led_by_one(spec, s)
    s = run(s, lambda t: spec.leader_write(t, 1))
    s = run(s, lambda t: spec.shrink_isr_lagging(t, 1, frozenset({2})))
    assert (s.core.rep(1).hw == 1) is advances
    assert not s.core.acked, "below min.insync.replicas nothing is acknowledged"


def test_the_last_isr_member_goes_to_the_elr_and_an_unclean_restart_leaves_it() -> None:
    spec, s = start("elr")
    s = committed_write(spec, led_by_one(spec, s))
    s = run(s, lambda t: spec.controller_shrink_isr(t, 1))
    assert s.core.quorum == Quorum(1, NONE, frozenset({2})) and s.meta.elr == {1}
    s = run(s, lambda t: spec.crash(t, 2, 0))
    assert spec.restart(s, 2) is None, "still in the ISR: fenced first"
    s = run(s, lambda t: spec.controller_shrink_isr(t, 2))
    assert s.core.quorum.isr == frozenset() and s.meta.elr == {1, 2}
    s = run(s, lambda t: spec.restart(t, 2))
    assert s.meta.elr == {1}
    s = run(s, spec.elect_leader)
    assert s.core.quorum.leader == 1 and s.core.quorum.isr == {1}


# --- every property holds, and can fail ------------------------------------------------------


@pytest.mark.parametrize("mechanism", [*MECHANISMS, "all"])
def test_every_property_holds_and_the_counts_are_pinned(mechanism: str) -> None:
    result = default_check(mechanism)
    assert result.violation is None and result.complete
    assert result.missing_sometimes == [] and result.warnings == ()
    stats = result.stats
    assert (stats.distinct_states, stats.states_generated, stats.depth) == PINNED[mechanism]


def test_every_property_has_a_failing_configuration() -> None:
    names = {d.name for d in Rebalance(Params()).select_invariants(None)}
    assert names == set(FAILS_UNDER)


@pytest.mark.parametrize("name", sorted(FAILS_UNDER))
def test_property_can_fail(name: str) -> None:
    bug = FAILS_UNDER[name]
    result = check(Rebalance(Params.of(bugs={bug})), invariants=[name])
    assert result.violation is not None and result.violation.name == name


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_every_bug_breaks_a_property_within_its_default_bounds(bug: str) -> None:
    params = Params.of(bugs={bug})
    assert params.mechanism == BUG_MECHANISM[bug]
    spec = Rebalance(params)
    result = check(spec)
    if BREAKS[bug] in {d.name for d in spec.applicable_liveness()}:
        assert result.violation is None  # a liveness bug: every safety property holds
        live = check_liveness(spec)
        assert live.violation is not None and live.violation.name == BREAKS[bug]
    else:
        assert result.violation is not None and result.violation.name == BREAKS[bug]


def test_a_started_reassignment_finishes_under_fairness() -> None:
    """``ReassignmentFinishes`` holds on the reassignment mechanism's whole state graph,
    and fails (a lasso) when the leader never learns the new replicas."""
    spec = Rebalance(Params.of("reassignment"))
    live = check_liveness(spec)
    assert live.complete and live.violation is None
    assert (live.states, live.edges) == (10_883, 33_801)
    assert live.checked == ("ReassignmentFinishes",)
    broken = check_liveness(Rebalance(Params.of(bugs={"assignment_not_sent"})))
    assert broken.violation is not None and broken.violation.lasso.states == 7
    for mechanism in ("preferred", "shutdown", "elr", "all"):
        assert Rebalance(Params.of(mechanism)).applicable_liveness() == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"brokers": 7}, "brokers must be 2..4"),
        ({"replication_factor": 4}, "replication_factor must be 1..brokers"),
        ({"min_isr": 3}, "min_isr must be 1..replication_factor"),
        ({"mechanism": "quorum"}, "mechanism 'quorum' is not one of"),
        ({"bugs": frozenset({"nope"})}, "unknown bug flag"),
        (
            {"mechanism": "preferred", "bugs": frozenset({"stale_elr"})},
            "--bug stale_elr belongs to mechanism elr",
        ),
        ({"imbalance_pct": 101}, "imbalance_pct must be 0..100"),
    ],
)
def test_bad_parameters_say_what_is_accepted(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        Params(**kwargs)  # type: ignore[arg-type]


def test_the_mechanism_of_a_bug_is_chosen_when_none_is_given() -> None:
    assert Params.of(bugs={"stale_elr"}).mechanism == "elr"
    assert Params.of().mechanism == "all"
    assert Params.of("elr", min_isr=None).min_isr == 2, "unset flags keep the defaults"


# --- the command line ------------------------------------------------------------------------


def test_cli_checks_a_mechanism_and_reports_figures() -> None:
    import orjson
    from click.testing import CliRunner

    from jepsen_py.cli import main

    result = CliRunner().invoke(
        main, ["check", "rebalance", "--mechanism", "preferred", "--max-records", "1", "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert payload["spec"] == "rebalance" and payload["violated"] is None
    assert payload["params"]["mechanism"] == "preferred"
    assert payload["params"]["max_records"] == 1 and payload["params"]["max_epoch"] == 3
    assert payload["distinct_states"] == 1_548
    assert all(payload["sometimes"].values())


def test_cli_picks_the_mechanism_of_a_bug_and_prints_its_counterexample() -> None:
    from click.testing import CliRunner

    from jepsen_py.cli import main

    result = CliRunner().invoke(main, ["check", "rebalance", "--bug", "shutdown_to_non_isr"])
    assert result.exit_code == 1
    assert "LeaderAndIsrWellFormed is violated (5 states)" in result.stdout
    assert "controlled_shutdown(b=1, n=2)" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--truncation", "kip101"], "--truncation is a flag of spec replication"),
        (["--mode", "kraft"], "--mode is a flag of spec controller"),
        (["--bug", "reuse_epoch"], "is not a bug of spec rebalance"),
        (["--mechanism", "elr", "--bug", "drop_before_isr_join"], "belongs to mechanism"),
        (["--brokers", "9"], "brokers must be 2..4"),
    ],
)
def test_cli_rejects_bad_input_with_exit_2(args: list[str], message: str) -> None:
    from click.testing import CliRunner

    from jepsen_py.cli import main

    result = CliRunner().invoke(main, ["check", "rebalance", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.stderr


def test_other_specs_reject_rebalance_flags() -> None:
    from click.testing import CliRunner

    from jepsen_py.cli import main

    result = CliRunner().invoke(main, ["check", "replication", "--mechanism", "elr"])
    assert result.exit_code == 2
    assert "--mechanism is a flag of spec rebalance" in result.stderr
