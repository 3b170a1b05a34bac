"""The consumer-group spec: each rule on a small example, the life-cycle tables refuse what
Kafka refuses, every invariant holds with the fences on and is shown able to fail by a
broken variant, the state counts are pinned, and ``kmodel check group`` works."""

from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from spec.explore import check
from spec.framework import SpecError
from spec.group import BUGS, ClassicGroup, Params, build
from spec.group.assignors import cooperative_assignment, range_assignment
from spec.group.classic import (
    NOBODY,
    State,
)
from spec.group.lifecycle import (
    AWAITING_SYNC,
    COMPLETING,
    DEAD,
    EMPTY,
    GROUP_TRANSITIONS,
    GROUP_WHY,
    MEMBER_STABLE,
    PREPARING,
    STABLE,
    UNJOINED,
    group_transition,
    member_transition,
    mermaid,
)
from spec.liveness import check_liveness

# invariant -> a configuration where it must fail
FAILS_UNDER = {
    "StaleGenerationChangesNothing": Params(bugs=frozenset({"no_generation_check"})),
    "OneOwnerPerPartition": Params(protocol="cooperative", bugs=frozenset({"no_revocation_first"})),
    "AssignmentPartitionsSubscribedPartitions": Params(network="reordering"),
}

# bug -> (configuration, the invariant it breaks first)
BREAKS = {
    "no_generation_check": (
        Params(bugs=frozenset({"no_generation_check"})),
        "StaleGenerationChangesNothing",
    ),
    "sync_without_generation_check": (
        Params(
            network="reordering", max_failovers=0, bugs=frozenset({"sync_without_generation_check"})
        ),
        "StaleGenerationChangesNothing",
    ),
    "no_revocation_first": (
        Params(protocol="cooperative", bugs=frozenset({"no_revocation_first"})),
        "OneOwnerPerPartition",
    ),
    "no_member_epoch_fencing": (
        Params(protocol="consumer", bugs=frozenset({"no_member_epoch_fencing"})),
        "StaleGenerationChangesNothing",
    ),
    "assign_before_revoked": (
        Params(protocol="consumer", bugs=frozenset({"assign_before_revoked"})),
        "AssignmentPartitionsSubscribedPartitions",
    ),
}


def start(params: Params | None = None) -> tuple[ClassicGroup, State]:
    spec = ClassicGroup(params or Params())
    return spec, next(iter(spec.init()))


def stable_alone(spec: ClassicGroup, s: State) -> State:
    """Consumer 1 joins alone, leads, and owns every partition in generation 1."""
    for step in (
        lambda t: spec.join_group(t, 1),
        lambda t: spec.complete_join(t, (1, 1)),
        lambda t: spec.send_sync(t, 1),
        lambda t: spec.handle_sync(t, next(iter(t.inflight))),
        lambda t: spec.receive_assignment(t, 1),
    ):
        nxt = step(s)
        assert nxt is not None
        s = nxt
    return s


# --- the tables and the assignors -------------------------------------------------------------


def test_group_table_is_kafkas_group_state() -> None:
    assert group_transition(EMPTY, PREPARING) == PREPARING
    assert group_transition(COMPLETING, STABLE) == STABLE
    for old in (EMPTY, PREPARING, COMPLETING, STABLE):
        assert DEAD in GROUP_TRANSITIONS[old]
    with pytest.raises(SpecError, match="illegal group transition Stable -> CompletingRebalance"):
        group_transition(STABLE, COMPLETING)
    with pytest.raises(SpecError, match="nothing \\(terminal\\)"):
        group_transition(DEAD, EMPTY)
    assert "Stable --> PreparingRebalance: a member joins" in mermaid(GROUP_TRANSITIONS, GROUP_WHY)


def test_member_table_refuses_skipping_the_sync() -> None:
    with pytest.raises(SpecError, match="illegal member transition unjoined -> stable"):
        member_transition(UNJOINED, MEMBER_STABLE)
    assert member_transition(AWAITING_SYNC, MEMBER_STABLE) == MEMBER_STABLE


def test_range_and_cooperative_assignment() -> None:
    assert range_assignment(["a", "b"], 3) == {"a": frozenset({0, 1}), "b": frozenset({2})}
    owned = {"a": frozenset({0, 1}), "b": frozenset()}
    assert cooperative_assignment(["a", "b"], owned, 2) == {
        "a": frozenset({0}),
        "b": frozenset(),
    }, "p1 moves to b only after a has revoked it"
    assert cooperative_assignment(["a", "b"], owned, 2, revocation_first=False)["b"] == {1}


# --- the rules, one at a time ----------------------------------------------------------------


def test_first_member_leads_and_owns_everything_in_generation_one() -> None:
    spec, s = start()
    s = stable_alone(spec, s)
    assert s.group.state == STABLE and s.group.generation == 1
    assert s.member(1).owned == frozenset({0, 1}) and s.stored.generation == 1


def test_a_join_starts_a_rebalance_and_the_heartbeat_tells_the_member() -> None:
    spec, s = start()
    s = stable_alone(spec, s)
    s2 = spec.join_group(s, 2)
    assert s2 is not None and s2.group.state == PREPARING
    s3 = spec.heartbeat(s2, 1)
    assert s3 is not None and s3.member(1).state == UNJOINED
    assert s3.member(1).owned == frozenset(), "eager: revoke everything before rejoining"
    coop, t = start(Params(protocol="cooperative"))
    t = stable_alone(coop, t)
    t3 = coop.heartbeat(coop.join_group(t, 2), 1)  # type: ignore[arg-type]
    assert t3 is not None and t3.member(1).owned == frozenset({0, 1}), "KIP-429 keeps them"


def test_an_expired_member_is_a_zombie_until_its_next_request() -> None:
    spec, s = start()
    s = stable_alone(spec, s)
    gone = spec.expire(s, (1, 1))
    assert gone is not None and gone.group.members == ()
    assert gone.member(1).owned == frozenset({0, 1}), "the zombie still believes"
    fenced = spec.heartbeat(gone, 1)
    assert fenced is not None
    assert fenced.member(1).member_id == NOBODY and fenced.member(1).owned == frozenset()


def test_the_new_coordinator_answers_load_in_progress_then_resumes_stable() -> None:
    spec, s = start()
    s = stable_alone(spec, s)
    moved = spec.coordinator_moves(s)
    assert moved is not None and moved.group.state == DEAD and moved.group.loading
    assert spec.heartbeat(moved, 1) is None and spec.coordinator_loading(moved, 1) is moved
    loaded = spec.load_group(moved)
    assert loaded is not None and loaded.group.state == STABLE
    assert loaded.group.generation == 1 and loaded.group.coordinator == 1


# --- every property holds, and can fail -----------------------------------------------------


def test_every_invariant_holds_without_failover_and_the_counts_are_pinned() -> None:
    result = check(ClassicGroup(Params(max_failovers=0)))
    assert result.violation is None and result.complete
    assert result.missing_sometimes == [] and result.warnings == ()
    # Pinned: a change in the spec's semantics shows here.
    assert result.stats.distinct_states == 31_306
    assert result.stats.depth == 29


@pytest.mark.slow
@pytest.mark.parametrize(
    ("protocol", "states", "depth"), [("classic", 192_429, 31), ("cooperative", 297_236, 36)]
)
def test_default_bounds_hold_and_the_counts_are_pinned(
    protocol: str, states: int, depth: int
) -> None:
    result = check(build(Params(protocol=protocol)))
    assert result.violation is None and result.complete and result.missing_sometimes == []
    assert (result.stats.distinct_states, result.stats.depth) == (states, depth)


def test_every_invariant_has_a_failing_configuration() -> None:
    names = {d.name for d in ClassicGroup(Params()).select_invariants(None)}
    assert names == set(FAILS_UNDER)


@pytest.mark.parametrize("name", sorted(FAILS_UNDER))
def test_invariant_can_fail(name: str) -> None:
    result = check(build(FAILS_UNDER[name]), invariants=[name])
    assert result.violation is not None and result.violation.name == name


LIVENESS_BREAKS = {
    "ignores_rebalance_in_progress": Params(
        max_failovers=0, bugs=frozenset({"ignores_rebalance_in_progress"})
    ),
}
"""The liveness bug: the invariants hold, ``RebalanceFinishes`` does not."""


def test_every_bug_has_a_breaking_configuration() -> None:
    assert set(BREAKS) | set(LIVENESS_BREAKS) == set(BUGS)


@pytest.mark.parametrize("protocol", ["classic", "cooperative"])
def test_a_started_rebalance_finishes_under_fairness(protocol: str) -> None:
    """``RebalanceFinishes`` holds on every fair behavior (coordinator moves left out here
    to keep the default suite quick; the slow test below has them)."""
    result = check_liveness(build(Params(protocol=protocol, max_failovers=0)))
    assert result.complete and result.violation is None


def test_a_consumer_that_ignores_rebalance_in_progress_stalls_the_rebalance() -> None:
    """The broken client keeps reading when its heartbeat says REBALANCE_IN_PROGRESS: every
    invariant holds, but the join phase waits for it forever (the rebalance timeout is the
    bounded expiry fault, not fair): a lasso of 7 states that then stutters."""
    params = LIVENESS_BREAKS["ignores_rebalance_in_progress"]
    assert check(build(params)).violation is None
    violation = check_liveness(build(params)).violation
    assert violation is not None and violation.name == "RebalanceFinishes"
    assert (len(violation.lasso.prefix), len(violation.lasso.cycle)) == (7, 0)
    steps = [step.step.action for step in violation.lasso.prefix if step.step is not None]
    assert steps[-1] == "receive_assignment", "consumer 1 goes on reading"


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["classic", "cooperative"])
def test_a_started_rebalance_finishes_within_the_default_bounds(protocol: str) -> None:
    result = check_liveness(build(Params(protocol=protocol)))
    assert result.complete and result.violation is None
    broken = Params(protocol=protocol, bugs=frozenset({"ignores_rebalance_in_progress"}))
    assert check_liveness(build(broken)).violation is not None


@pytest.mark.parametrize("bug", sorted(BREAKS))
def test_every_bug_breaks_an_invariant(bug: str) -> None:
    params, name = BREAKS[bug]
    result = check(build(params))
    assert result.violation is not None and result.violation.name == name


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"members": 7}, "members must be 1..3"),
        ({"protocol": "kip-848"}, "protocol 'kip-848' is not one of"),
        ({"bugs": frozenset({"assign_before_revoked"})}, "needs --protocol consumer"),
        ({"bugs": frozenset({"nope"})}, "unknown bug flag"),
        ({"bugs": frozenset({"no_revocation_first"})}, "needs --protocol cooperative"),
        ({"network": "udp"}, "network 'udp' is not one of"),
    ],
)
def test_bad_parameters_say_what_is_accepted(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        Params(**kwargs)  # type: ignore[arg-type]


# --- the command line -------------------------------------------------------------------------


def test_cli_checks_the_group_and_reports_figures() -> None:
    result = CliRunner().invoke(main, ["check", "group", "--max-failovers", "0", "--json"])
    assert result.exit_code == 0, result.output
    payload = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert payload["violated"] is None and payload["distinct_states"] == 31_306
    assert payload["params"]["protocol"] == "classic" and all(payload["sometimes"].values())


def test_cli_prints_the_counterexample_of_a_bug() -> None:
    result = CliRunner().invoke(main, ["check", "group", "--bug", "no_generation_check"])
    assert result.exit_code == 1
    assert "StaleGenerationChangesNothing is violated (14 states)" in result.stdout
    assert "handle_commit(r=Commit 1a g2 c1 {p0,p1})" in result.stdout


@pytest.mark.parametrize(
    ("bug", "violated", "states"),
    [
        ("no_generation_check", "StaleGenerationChangesNothing", 14),
        ("sync_without_generation_check", "StaleGenerationChangesNothing", 8),
        ("no_revocation_first", "OneOwnerPerPartition", 14),
        ("no_member_epoch_fencing", "StaleGenerationChangesNothing", 4),
        ("assign_before_revoked", "AssignmentPartitionsSubscribedPartitions", 5),
    ],
)
def test_every_bug_alone_is_violated_with_the_defaults(
    bug: str, violated: str, states: int
) -> None:
    """A --bug alone picks where its mistake shows (group.BUG_SETTINGS)."""
    result = CliRunner().invoke(main, ["check", "group", "--bug", bug, "--json"])
    assert result.exit_code == 1, result.output
    payload = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert (payload["violated"], payload["trace_length"]) == (violated, states)


def test_cli_help_lists_the_group_bugs() -> None:
    result = CliRunner().invoke(main, ["check", "--help"])
    listed = (
        "group: assign_before_revoked, ignores_rebalance_in_progress, no_generation_check, "
        "no_member_epoch_fencing, no_revocation_first, sync_without_generation_check"
    )
    assert listed in " ".join(result.stdout.split())


# --- KIP-848 ----------------------------------------------------------------------------------


def test_kip848_revokes_before_it_reassigns() -> None:
    spec = build(Params(protocol="consumer"))
    s = next(iter(spec.init()))
    s = spec.heartbeat(s, 1)  # joins alone: epoch 1, both partitions
    s = spec.heartbeat(s, 2)  # joins: group epoch 2, target 1:{p0} 2:{p1}
    assert s.group_epoch == 2 and s.records[1].assigned == frozenset()
    s = spec.heartbeat(s, 1)  # told to revoke p1, keeps epoch 1
    assert s.records[0].revoking == {1} and s.clients[0].owned == {0}
    assert spec.heartbeat(s, 2) is None, "p1 is still being revoked: nothing to give yet"
    s = spec.heartbeat(s, 1)  # released p1, moves to epoch 2
    s = spec.heartbeat(s, 2)  # now p1 is free
    assert s.clients[1].owned == {1} and s.records[0].revoking == frozenset()


def test_kip848_default_bounds_hold_and_the_counts_are_pinned() -> None:
    result = check(build(Params(protocol="consumer")))
    assert result.violation is None and result.complete and result.missing_sometimes == []
    assert (result.stats.distinct_states, result.stats.depth) == (1_515, 11)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--brokers", "3"], "--brokers is a flag of spec controller"),
        (["--bug", "reuse_epoch"], "is not a bug of spec group"),
        (["--protocol", "classic", "--bug", "no_revocation_first"], "needs --protocol cooperative"),
    ],
)
def test_cli_rejects_bad_input_with_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["check", "group", *args])
    assert result.exit_code == 2
    assert message in " ".join((result.stdout + result.stderr).split())
