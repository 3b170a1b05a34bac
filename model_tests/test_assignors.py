"""The consumer-group assignors against the assignments Kafka documents and tests.

Expected assignments are the examples of the Java client's javadoc (``RangeAssignor``,
``RoundRobinAssignor``) and cases of its ``RangeAssignorTest`` / ``RoundRobinAssignorTest``;
then the properties the contracts state, on random groups (CrossHair checks the same
contracts symbolically in ``test_crosshair_contracts.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.assignors import (
    Assignment,
    count_spread,
    owned_exactly_once,
    range_assign,
    round_robin_assign,
)
from impl.log.checkpoint import TopicPartition

ASSIGNORS: dict[str, Callable[..., Assignment]] = {
    "range": range_assign,
    "roundrobin": round_robin_assign,
}


def tps(*names: str) -> list[TopicPartition]:
    """``tps("t0p1", "t1p0")``: the javadoc's notation."""
    out = []
    for name in names:
        topic, partition = name.rsplit("p", 1)
        out.append(TopicPartition(topic, int(partition)))
    return out


TWO_BY_THREE = {"t0": 3, "t1": 3}
BOTH_TOPICS = {"C0": ["t0", "t1"], "C1": ["t0", "t1"]}


def test_range_assigns_the_javadoc_example() -> None:
    """RangeAssignor javadoc: C0, C1 both subscribe to t0, t1 of 3 partitions each."""
    assert range_assign(TWO_BY_THREE, BOTH_TOPICS) == {
        "C0": tps("t0p0", "t0p1", "t1p0", "t1p1"),
        "C1": tps("t0p2", "t1p2"),
    }


def test_round_robin_assigns_the_javadoc_example() -> None:
    """RoundRobinAssignor javadoc, first example (same group as the range one)."""
    assert round_robin_assign(TWO_BY_THREE, BOTH_TOPICS) == {
        "C0": tps("t0p0", "t0p2", "t1p1"),
        "C1": tps("t0p1", "t1p0", "t1p2"),
    }


def test_round_robin_passes_over_members_not_subscribed_to_the_topic() -> None:
    """RoundRobinAssignor javadoc, second example: C0 subscribes to t0; C1 to t0, t1; C2
    to t0, t1, t2; with 1, 2 and 3 partitions. The deal skips non-subscribers, so the
    counts are not balanced when subscriptions differ."""
    subscriptions = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    assert round_robin_assign({"t0": 1, "t1": 2, "t2": 3}, subscriptions) == {
        "C0": tps("t0p0"),
        "C1": tps("t1p0"),
        "C2": tps("t1p1", "t2p0", "t2p1", "t2p2"),
    }


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_mixed_subscriptions_match_kafkas_assignor_tests(name: str) -> None:
    """``testMultipleConsumersMixedTopics`` of both Kafka test classes: topic1 with 3
    partitions, topic2 with 2; consumer2 alone subscribes to topic2."""
    subscriptions = {
        "consumer1": ["topic1"],
        "consumer2": ["topic1", "topic2"],
        "consumer3": ["topic1"],
    }
    assert ASSIGNORS[name]({"topic1": 3, "topic2": 2}, subscriptions) == {
        "consumer1": tps("topic1p0"),
        "consumer2": tps("topic1p1", "topic2p0", "topic2p1"),
        "consumer3": tps("topic1p2"),
    }


def test_range_gives_the_first_members_the_remainder_of_every_topic() -> None:
    """Per topic, the first ``n % c`` members in member-id order get one more partition:
    with many single-partition topics the first member takes them all (the range
    assignor's known skew, which round robin avoids)."""
    topics = {"a": 1, "b": 1, "c": 1}
    members = {"m1": ["a", "b", "c"], "m0": ["a", "b", "c"]}
    assert range_assign(topics, members) == {"m0": tps("ap0", "bp0", "cp0"), "m1": []}
    assert round_robin_assign(topics, members) == {"m0": tps("ap0", "cp0"), "m1": tps("bp0")}


def test_range_splits_seven_partitions_over_three_members_three_two_two() -> None:
    members = {"c": ["t"], "a": ["t"], "b": ["t"]}
    assert range_assign({"t": 7}, members) == {
        "a": tps("tp0", "tp1", "tp2"),
        "b": tps("tp3", "tp4"),
        "c": tps("tp5", "tp6"),
    }


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_unsubscribed_and_unknown_topics_are_not_assigned(name: str) -> None:
    """Only topics some member subscribes to are assigned (Kafka's
    ``testOnlyAssignsPartitionsFromSubscribedTopics``); a subscribed topic without metadata
    is skipped; a member with nothing to do is still in the result, with no partitions."""
    result = ASSIGNORS[name]({"t": 2, "other": 3}, {"c0": ["t", "missing"], "c1": []})
    assert result == {"c0": tps("tp0", "tp1"), "c1": []}


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_more_members_than_partitions_leaves_the_last_members_idle(name: str) -> None:
    result = ASSIGNORS[name]({"t": 1}, {"c0": ["t"], "c1": ["t"]})
    assert result == {"c0": tps("tp0"), "c1": []}


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_no_members_no_assignment(name: str) -> None:
    assert ASSIGNORS[name]({"t": 3}, {}) == {}


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_the_assignment_does_not_depend_on_input_order(name: str) -> None:
    """Every member runs the assignor (the leader's result is the one used, but a member
    that becomes leader must compute the same): dict order and subscription order must
    not matter."""
    topics = {"b": 4, "a": 5, "c": 2}
    members = {"m2": ["c", "a"], "m0": ["a", "b", "c"], "m1": ["b", "a"]}
    reordered_topics = dict(reversed(topics.items()))
    reordered_members = {m: list(reversed(ts)) for m, ts in reversed(members.items())}
    assert ASSIGNORS[name](topics, members) == ASSIGNORS[name](reordered_topics, reordered_members)


# --- the contracts' properties on random groups -----------------------------------------------

groups = st.integers(min_value=1, max_value=4).flatmap(
    lambda n_topics: st.tuples(
        st.lists(st.integers(min_value=0, max_value=9), min_size=n_topics, max_size=n_topics).map(
            lambda counts: {f"t{i}": n for i, n in enumerate(counts)}
        ),
        st.dictionaries(
            st.text("abcdef", min_size=1, max_size=3),
            st.lists(st.sampled_from([f"t{i}" for i in range(n_topics)] + ["gone"])),
            max_size=6,
        ),
    )
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(groups)
def test_every_subscribed_partition_is_owned_once_by_a_subscriber(group) -> None:
    topics, members = group
    for assign in ASSIGNORS.values():
        result = assign(topics, members)
        assert owned_exactly_once(result, topics, members)
        assert sorted(result) == sorted(members)
        assert all(tp.topic in members[m] for m, owned in result.items() for tp in owned)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(groups)
def test_range_balances_each_topic_among_its_subscribers(group) -> None:
    topics, members = group
    result = range_assign(topics, members)
    assert all(count_spread(result, members, t) <= 1 for t in topics)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(groups.map(lambda g: (g[0], {m: list(g[0]) for m in g[1]})))
def test_round_robin_balances_members_with_the_same_subscription(group) -> None:
    topics, members = group
    assert count_spread(round_robin_assign(topics, members), members, None) <= 1


def test_the_balance_measure_sees_an_imbalance() -> None:
    """The contracts' measures are not vacuous: an assignment owning a partition twice,
    or giving one member two more partitions than another, is rejected."""
    members = {"c0": ["t"], "c1": ["t"]}
    twice = {"c0": tps("tp0", "tp1"), "c1": tps("tp1")}
    assert not owned_exactly_once(twice, {"t": 2}, members)
    skewed = {"c0": tps("tp0", "tp1", "tp2"), "c1": tps("tp3")}
    assert owned_exactly_once(skewed, {"t": 4}, members)
    assert count_spread(skewed, members, "t") == 2
