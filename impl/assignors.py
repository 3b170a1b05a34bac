"""Consumer-group partition assignors: Kafka's ``RangeAssignor`` and ``RoundRobinAssignor``.

When a consumer group rebalances, the group leader (a consumer, chosen by the coordinator)
runs the assignor named by ``partition.assignment.strategy`` on every member's subscription
and sends the result back through SyncGroup. The two classic strategies of the Java client
(``org.apache.kafka.clients.consumer.RangeAssignor``, the default before 3.0 and still the
first in the default list, and ``...RoundRobinAssignor``) are here as pure functions of

- ``partitions_per_topic``: topic -> number of partitions (the leader's metadata), and
- ``subscriptions``: member id -> the topics the member subscribes to,

returning member id -> the ``TopicPartition`` s it owns, every member present (possibly
with nothing), as ``AbstractPartitionAssignor.assign`` does.

What the group relies on, and the PEP 316 contracts (``pre:``/``post:``, checked by
CrossHair in ``model_tests/test_crosshair_contracts.py``) state:

- every partition of a topic someone subscribes to is assigned to **exactly one** member,
  and only to a member subscribed to its topic (a partition owned twice is consumed twice;
  one owned by nobody is not consumed at all);
- the load is balanced: ``RangeAssignor`` per topic (among the topic's subscribers, counts
  differ by at most one), ``RoundRobinAssignor`` over all topics when every member
  subscribes to the same topics.

The result depends on the inputs only, never on dict or set iteration order: members are
sorted by member id (Kafka compares ``MemberInfo``, by ``group.instance.id`` first for
static members (KIP-345), which are not modelled here) and topics by name, so every member
computes the same assignment. Topics a member subscribes to that have no metadata (absent
from ``partitions_per_topic``) are skipped, as Kafka skips a topic without metadata.
Rack-aware assignment (KIP-881) and the cooperative sticky assignor (KIP-429) are not
modelled.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from impl.log.checkpoint import TopicPartition

__all__ = [
    "Assignment",
    "assigned_partitions",
    "count_spread",
    "owned_by_subscribers",
    "owned_exactly_once",
    "range_assign",
    "round_robin_assign",
    "same_topics",
    "subscribed_partitions",
]

Assignment = dict[str, list[TopicPartition]]


def range_assign(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Collection[str]]
) -> Assignment:
    """Kafka's ``RangeAssignor``: topic by topic, the topic's partitions in order are cut
    into contiguous ranges, one per subscriber in member-id order; with ``n`` partitions
    and ``c`` subscribers each gets ``n // c`` and the first ``n % c`` one more. (So with
    many topics of few partitions the first members carry more overall: only the
    per-topic counts are balanced, which is what co-partitioned joins want.)

    pre: all(n >= 0 for n in partitions_per_topic.values())
    post: owned_exactly_once(__return__, partitions_per_topic, subscriptions)
    post: sorted(__return__) == sorted(subscriptions)
    post: owned_by_subscribers(__return__, subscriptions)
    post: all(count_spread(__return__, subscriptions, t) <= 1 for t in partitions_per_topic)
    """
    assignment: Assignment = {member: [] for member in sorted(subscriptions)}
    for topic in sorted(partitions_per_topic):
        consumers = _subscribers(subscriptions, topic)
        if not consumers:
            continue
        n = partitions_per_topic[topic]
        per_consumer, extra = divmod(n, len(consumers))
        for i, member in enumerate(consumers):
            start = per_consumer * i + min(i, extra)
            length = per_consumer + (1 if i < extra else 0)
            assignment[member].extend(
                TopicPartition(topic, p) for p in range(start, start + length)
            )
        assert start + length == n, f"the ranges of {topic} end at {start + length}, not {n}"
    return assignment


def round_robin_assign(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Collection[str]]
) -> Assignment:
    """Kafka's ``RoundRobinAssignor``: every subscribed topic-partition, sorted by (topic,
    partition), is dealt in turn to the members in member-id order, a member that does not
    subscribe to the partition's topic being passed over (Kafka's ``CircularIterator``).
    When all members subscribe to the same topics, member counts differ by at most one
    over all topics together.

    pre: all(n >= 0 for n in partitions_per_topic.values())
    post: owned_exactly_once(__return__, partitions_per_topic, subscriptions)
    post: sorted(__return__) == sorted(subscriptions)
    post: owned_by_subscribers(__return__, subscriptions)
    post: not same_topics(subscriptions) or count_spread(__return__, subscriptions, None) <= 1
    """
    members = sorted(subscriptions)
    assignment: Assignment = {member: [] for member in members}
    turn = 0  # index in ``members`` of the next member to consider
    for tp in subscribed_partitions(partitions_per_topic, subscriptions):
        # At most one full turn: some member subscribes to tp.topic, or tp would not be here.
        for _ in range(len(members)):
            member = members[turn]
            turn = (turn + 1) % len(members)
            if tp.topic in subscriptions[member]:
                assignment[member].append(tp)
                break
        else:  # pragma: no cover - subscribed_partitions only lists subscribed topics
            raise AssertionError(f"no member subscribes to {tp.topic}")
    return assignment


# --- what the contracts are stated in ---------------------------------------------------------


def subscribed_partitions(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Collection[str]]
) -> list[TopicPartition]:
    """Every partition of every known topic some member subscribes to, sorted."""
    return [
        TopicPartition(topic, p)
        for topic in sorted(partitions_per_topic)
        if _subscribers(subscriptions, topic)
        for p in range(partitions_per_topic[topic])
    ]


def assigned_partitions(assignment: Mapping[str, list[TopicPartition]]) -> list[TopicPartition]:
    """Every partition of an assignment, with repetitions, sorted: equal to
    ``subscribed_partitions`` iff each subscribed partition is owned exactly once."""
    return sorted(tp for tps in assignment.values() for tp in tps)


def owned_exactly_once(
    assignment: Mapping[str, list[TopicPartition]],
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Collection[str]],
) -> bool:
    """Each subscribed partition is owned by exactly one member, and nothing else is."""
    return assigned_partitions(assignment) == subscribed_partitions(
        partitions_per_topic, subscriptions
    )


def owned_by_subscribers(
    assignment: Mapping[str, list[TopicPartition]], subscriptions: Mapping[str, Collection[str]]
) -> bool:
    """Every member owns partitions of the topics it subscribes to only."""
    return all(
        m in subscriptions and tp.topic in subscriptions[m]
        for m, tps in assignment.items()
        for tp in tps
    )


def count_spread(
    assignment: Mapping[str, list[TopicPartition]],
    subscriptions: Mapping[str, Collection[str]],
    topic: str | None,
) -> int:
    """Max minus min of how many partitions of ``topic`` each of its subscribers owns
    (``topic=None``: of all topics, over all members); 0 when nobody subscribes."""
    if topic is None:
        counts = [len(assignment.get(m, [])) for m in subscriptions]
    else:
        counts = [
            sum(1 for tp in assignment.get(m, []) if tp.topic == topic)
            for m in _subscribers(subscriptions, topic)
        ]
    return max(counts) - min(counts) if counts else 0


def _subscribers(subscriptions: Mapping[str, Collection[str]], topic: str) -> list[str]:
    return sorted(m for m, topics in subscriptions.items() if topic in topics)


def same_topics(subscriptions: Mapping[str, Collection[str]]) -> bool:
    """Every member subscribes to the same set of topics (true for an empty group)."""
    topic_sets = [set(topics) for topics in subscriptions.values()]
    return all(s == topic_sets[0] for s in topic_sets)
