"""Every invariant of the replication spec holds where Kafka is correct, and is shown able
to fail: a protocol variant or a deliberately broken flag produces a counterexample."""

from __future__ import annotations

import pytest

from spec.explore import check
from spec.replication import BUGS, Params, Replication

SAFE = Params(model="extended", truncation="kip320", max_crashes=0)

# invariant -> a configuration where it must fail
FAILS_UNDER = {
    "StrongIsr": Params(truncation="high_watermark"),
    "WeakIsr": Params(truncation="high_watermark"),
    "NoDivergenceBelowHw": Params(model="extended", truncation="high_watermark"),
    "NoAckedAllWriteLost": Params(
        model="extended", truncation="kip320", bugs=frozenset({"ack_before_hw"})
    ),
    "NoAckedWriteLost": Params(model="extended", truncation="kip320", acks="1", max_crashes=1),
    "HwBelowLeo": Params(truncation="kip320", bugs=frozenset({"follower_hw_unclamped"})),
    "LeaderInIsr": Params(truncation="kip320", bugs=frozenset({"elect_outside_isr"})),
    "OneLeaderPerEpoch": Params(truncation="kip320", bugs=frozenset({"reuse_epoch"})),
    "EpochsOnlyGrow": Params(truncation="kip320", bugs=frozenset({"accept_stale_epoch"})),
}


def test_every_invariant_has_a_failing_configuration() -> None:
    names = {d.name for d in Replication(SAFE).select_invariants(None)}
    assert names == set(FAILS_UNDER)


def test_every_invariant_holds_in_the_safe_configuration() -> None:
    result = check(Replication(SAFE))
    assert result.violation is None and result.complete
    assert result.missing_sometimes == []
    assert result.warnings == ()
    # Pinned: a change in the extended model's semantics shows here.
    assert result.stats.distinct_states == 9_067
    reduced = check(Replication(SAFE), symmetry=True)
    assert reduced.stats.distinct_states == 4_534
    assert reduced.stats.unreduced_states == 9_067


@pytest.mark.parametrize("name", sorted(FAILS_UNDER))
def test_invariant_can_fail(name: str) -> None:
    result = check(Replication(FAILS_UNDER[name]), invariants=[name])
    assert result.violation is not None, f"{name} was not violated"
    assert result.violation.name == name


def test_every_bug_flag_is_used() -> None:
    # follower_stops_fetching breaks a liveness property (model_tests/test_liveness.py)
    used = set().union(*(p.bugs for p in FAILS_UNDER.values())) | {"follower_stops_fetching"}
    assert used == set(BUGS)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"truncation": "kip999"}, "truncation 'kip999' is not one of"),
        ({"replicas": 7}, "replicas must be 1..4"),
        ({"acks": "2", "model": "extended"}, "acks '2' is not one of"),
        ({"min_isr": 3}, "min_isr must be 1..replicas"),
        ({"unclean": True}, "only in --model extended"),
        ({"bugs": frozenset({"nope"})}, "unknown bug flag"),
    ],
)
def test_bad_parameters_say_what_is_accepted(kwargs: dict[str, object], message: str) -> None:
    from spec.framework import SpecError

    with pytest.raises(SpecError, match=message):
        Params(**kwargs)  # type: ignore[arg-type]
