"""The controller spec: each rule on a small example, every invariant holds with both fences
on and is shown able to fail by a broken variant, the state counts of the default bounds are
pinned, and the KRaft reading is the same transition system."""

from __future__ import annotations

import itertools

import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from model_tests.controller_runs import default_check
from spec.controller import (
    BUGS,
    LEADER_AND_ISR,
    NONE,
    UPDATE_METADATA,
    Controller,
    Params,
    Request,
    State,
)
from spec.explore import check, reachable_states
from spec.framework import SpecError
from spec.liveness import check_liveness

# invariant -> a configuration where it must fail
FAILS_UNDER = {
    "NoStaleControllerEpochApplied": Params(bugs=frozenset({"accept_stale_controller_epoch"})),
    "OneControllerWritesPerEpoch": Params(bugs=frozenset({"epoch_not_persisted"})),
    "LeaderEpochsOnlyGrow": Params(bugs=frozenset({"unconditional_write"})),
    "OneLeaderPerLeaderEpoch": Params(bugs=frozenset({"unconditional_write"})),
}

# bug -> the invariant it breaks first (its pinned scenario shows the trace)
BREAKS = {
    "accept_stale_controller_epoch": "NoStaleControllerEpochApplied",
    "unconditional_write": "OneControllerWritesPerEpoch",
    "partition_version_only": "OneControllerWritesPerEpoch",
    "epoch_not_persisted": "OneControllerWritesPerEpoch",
    "zombie_never_resigns": "ZombieStepsDown",
}


def start(params: Params | None = None) -> tuple[Controller, State]:
    spec = Controller(params or Params())
    return spec, next(iter(spec.init()))


def failover(spec: Controller, s: State) -> State:
    """Broker 1 is elected, elects itself leader, is paused past its session, and broker 2
    is elected: broker 1 is now a zombie."""
    for step in (
        lambda t: spec.elect_controller(t, 1),
        lambda t: spec.elect_leader(t, 1, 0, 1),
        lambda t: spec.session_expires(t, 1),
        lambda t: spec.elect_controller(t, 2),
    ):
        nxt = step(s)
        assert nxt is not None
        s = nxt
    return s


# --- the rules, one at a time ----------------------------------------------------------------


def test_controller_epoch_starts_at_one_and_grows_by_one_per_election() -> None:
    spec, s = start()
    s1 = spec.elect_controller(s, 1)
    assert s1 is not None and s1.store.controller_epoch == 1 and s1.store.controller == 1
    assert spec.elect_controller(s1, 2) is None, "/controller exists: NODEEXISTS"
    s2 = failover(spec, s)
    assert s2.store.controller_epoch == 2 and s2.store.epoch_version == 2
    assert s2.broker(1).active_epoch == 1 and s2.broker(2).active_epoch == 2


def test_without_persisted_epoch_every_controller_is_epoch_one() -> None:
    spec, s = start(Params(bugs=frozenset({"epoch_not_persisted"})))
    s2 = failover(spec, s)
    assert s2.store.controller_epoch == 1
    assert s2.broker(1).active_epoch == s2.broker(2).active_epoch == 1


def test_expiry_removes_the_ephemeral_nodes_and_tells_nobody() -> None:
    spec, s = start()
    s1 = spec.elect_controller(s, 1)
    assert s1 is not None
    gone = spec.session_expires(s1, 1)
    assert gone is not None
    assert gone.store.controller == NONE and 1 not in gone.store.sessions
    assert gone.broker(1).active_epoch == 1, "the paused controller still believes"


def test_zombie_write_is_refused_by_the_store_and_the_zombie_resigns() -> None:
    spec, s = start()
    s2 = spec.reconnect(failover(spec, s), 1)
    assert s2 is not None
    # broker 2's session expires: the zombie's context says broker 2 must leave the ISR
    s3 = spec.session_expires(s2, 2)
    assert s3 is not None
    assert spec.decisions(s3, 1, 0), "the zombie has something to write"
    assert spec.shrink_isr(s3, 1, 0, 2) is None
    refused = spec.write_refused(s3, 1, 0)
    assert refused is not None and not refused.broker(1).active
    assert refused.store == s3.store and refused.writes == s3.writes


def test_without_the_version_check_the_zombie_write_lands() -> None:
    spec, s = start(Params(bugs=frozenset({"unconditional_write"})))
    s2 = spec.reconnect(failover(spec, s), 1)
    assert s2 is not None
    s3 = spec.session_expires(s2, 2)
    assert s3 is not None
    landed = spec.shrink_isr(s3, 1, 0, 2)
    assert landed is not None and (2, 1) in landed.writes


def test_broker_rejects_an_older_controller_epoch() -> None:
    spec, s = start()
    s2 = failover(spec, s)
    new_um = Request(UPDATE_METADATA, 2)
    old_lai = Request(LEADER_AND_ISR, 1, 0, 1, 0)
    s3 = spec.apply_update_metadata(s2, 2, new_um)
    assert s3 is not None and s3.broker(2).controller_epoch == 2
    assert spec.apply_leader_and_isr(s3, 2, old_lai) is None
    assert spec.reject_stale_request(s3, 2, old_lai) is s3, "a rejection changes nothing"
    buggy, t = start(Params(bugs=frozenset({"accept_stale_controller_epoch"})))
    t3 = buggy.apply_update_metadata(failover(buggy, t), 2, new_um)
    assert t3 is not None
    applied = buggy.apply_leader_and_isr(t3, 2, old_lai)
    assert applied is not None and applied.broker(2).controller_epoch == 1


def test_broker_ignores_a_leader_epoch_that_is_not_newer() -> None:
    spec, s = start()
    s1 = spec.elect_leader(spec.elect_controller(s, 1), 1, 0, 1)  # type: ignore[arg-type]
    assert s1 is not None
    lai = Request(LEADER_AND_ISR, 1, 0, 1, 0)
    s2 = spec.apply_leader_and_isr(s1, 1, lai)
    assert s2 is not None and s2.broker(1).replicas[0].leader == 1
    assert spec.apply_leader_and_isr(s2, 1, lai) is None, "same epochs: nothing to apply"


# --- every property holds, and can fail -----------------------------------------------------


def test_every_invariant_holds_with_both_fences_and_the_counts_are_pinned() -> None:
    result = default_check()
    assert result.violation is None and result.complete
    assert result.missing_sometimes == [] and result.warnings == ()
    # Pinned: a change in the spec's semantics shows here.
    assert result.stats.distinct_states == 39_920
    assert result.stats.states_generated == 328_266
    assert result.stats.depth == 16


def test_symmetry_reduction_is_exact() -> None:
    reduced = check(Controller(Params(max_expiries=1)), symmetry=True)
    assert reduced.violation is None and reduced.complete
    assert reduced.stats.unreduced_states == 3_670
    assert reduced.stats.distinct_states == 1_837


@pytest.mark.slow
def test_symmetry_reduction_of_the_default_bounds() -> None:
    reduced = check(Controller(Params()), symmetry=True)
    assert reduced.violation is None and reduced.complete
    assert reduced.stats.unreduced_states == 39_920
    assert reduced.stats.distinct_states == 19_968


def test_every_invariant_has_a_failing_configuration() -> None:
    names = {d.name for d in Controller(Params()).select_invariants(None)}
    assert names == set(FAILS_UNDER)


@pytest.mark.parametrize("name", sorted(FAILS_UNDER))
def test_invariant_can_fail(name: str) -> None:
    result = check(Controller(FAILS_UNDER[name]), invariants=[name])
    assert result.violation is not None, f"{name} was not violated"
    assert result.violation.name == name


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_every_bug_breaks_a_property_within_the_default_bounds(bug: str) -> None:
    spec = Controller(Params(bugs=frozenset({bug})))
    result = check(spec)
    if BREAKS[bug] in {d.name for d in spec.applicable_liveness()}:
        assert result.violation is None  # a liveness bug: every safety property holds
        live = check_liveness(spec)
        assert live.violation is not None and live.violation.name == BREAKS[bug]
    else:
        assert result.violation is not None and result.violation.name == BREAKS[bug]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"brokers": 7}, "brokers must be 2..4"),
        ({"partitions": 3}, "partitions must be 1 or 2"),
        ({"mode": "raft"}, "mode 'raft' is not one of"),
        ({"bugs": frozenset({"nope"})}, "unknown bug flag"),
        ({"mode": "kraft", "bugs": frozenset({"epoch_not_persisted"})}, "only in --mode zookeeper"),
        ({"max_expiries": -1}, "max_expiries must be >= 0"),
    ],
)
def test_bad_parameters_say_what_is_accepted(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        Params(**kwargs)  # type: ignore[arg-type]


# --- KRaft ------------------------------------------------------------------------------------


def test_kraft_is_the_same_transition_system_read_another_way() -> None:
    """The active controller is the metadata quorum's leader and the controller epoch its
    Raft epoch: on reachable states, both readings have the same successors."""
    zk, kraft = Controller(Params()), Controller(Params(mode="kraft"))
    for s in reachable_states(zk, 3_000):
        ours = [(d.name, args, t) for d, args, t in zk.successors(s)]
        theirs = [(d.name, args, t) for d, args, t in kraft.successors(s)]
        assert ours == theirs
    cells = dict(((g, c), v) for g, c, v in kraft.columns(next(iter(kraft.init()))))
    assert ("metadata quorum", "raft epoch") in cells


# --- the command line -------------------------------------------------------------------------


def test_cli_checks_the_controller_and_reports_figures() -> None:
    import orjson

    result = CliRunner().invoke(main, ["check", "controller", "--max-expiries", "1", "--json"])
    assert result.exit_code == 0, result.output
    payload = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert payload["spec"] == "controller" and payload["violated"] is None
    assert payload["distinct_states"] == 3_670 and payload["params"]["max_expiries"] == 1
    assert all(payload["sometimes"].values())


def test_cli_prints_the_counterexample_of_a_bug() -> None:
    result = CliRunner().invoke(
        main, ["check", "controller", "--bug", "accept_stale_controller_epoch"]
    )
    assert result.exit_code == 1
    assert "NoStaleControllerEpochApplied is violated (6 states)" in result.stdout
    assert "apply_update_metadata(b=1, m=UM c1)" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--truncation", "kip101"], "--truncation is a flag of spec replication"),
        (["--bug", "reuse_epoch"], "is not a bug of spec controller"),
        (["--brokers", "9"], "brokers must be 2..4"),
    ],
)
def test_cli_rejects_bad_input_with_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["check", "controller", *args])
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_replication_rejects_controller_flags() -> None:
    result = CliRunner().invoke(main, ["check", "replication", "--brokers", "3"])
    assert result.exit_code == 2
    assert "--brokers is a flag of spec controller" in result.stderr


# --- larger configurations (slow) -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kwargs", "states"),
    [
        ({"brokers": 3, "max_expiries": 1}, 97_375),
        ({"partitions": 2, "max_expiries": 1}, 138_022),
    ],
)
def test_larger_configurations_hold(kwargs: dict[str, object], states: int | None) -> None:
    result = check(Controller(Params(**kwargs)))  # type: ignore[arg-type]
    assert result.violation is None and result.complete
    assert result.missing_sometimes == []
    if states is not None:
        assert result.stats.distinct_states == states


def test_domains_list_every_enabled_argument() -> None:
    """The argument domains skip only disabled arguments: on reachable states, every
    (broker, request) pair outside the delivery domains is disabled for every delivery
    action."""
    spec = Controller(Params(bugs=frozenset({"partition_version_only"})))
    for s in reachable_states(spec, 1_500):
        for decl in spec.actions():
            if decl.domain is None:
                continue
            domain = set(getattr(spec, decl.domain)(s))
            fn = getattr(spec, decl.method)
            spaces = []
            for param in decl.params:
                if param == "m":
                    spaces.append(sorted(s.requests, key=Request.key))
                elif param == "p":
                    spaces.append(list(spec.parts))
                else:
                    spaces.append(list(spec.ids))
            for args in itertools.product(*spaces):
                if args not in domain:
                    assert fn(s, *args) is None, (decl.name, args)
