"""Contract-carrying harnesses of the implementation's pure rules, for CrossHair (PEP 316
``pre:``/``post:`` docstrings), with deliberately broken copies that must fail them.

- the Java client's default partitioner (``impl.partitioner``): a keyed record's partition
  depends on the key and the partition count only; keyless records go round-robin over the
  available partitions;
- record batches (``impl.log.batch``): a batch decodes to itself, consuming its bytes;
- the leader-epoch cache (``impl.log.leader_epoch``): OffsetsForLeaderEpoch as KIP-279
  answers it;
- the sparse offset index (``impl.log.index``): a lookup starts at the greatest indexed
  offset at or below the target (``OffsetIndexBisectLeft``: a broken copy that does not);
- the consumer-group assignors (``impl.assignors``, which carry their contracts
  themselves), on small groups stated over partition counts and subscription bitmasks, which
  CrossHair searches far better than symbolic dicts of strings, with broken copies of
  RangeAssignor and RoundRobinAssignor.

``impl.contract_check`` lists them with the spec's rules and runs CrossHair on them; the
tests (``model_tests/test_crosshair_contracts.py``) and ``benchmarks/crosshair_paths.py``
both use it. Harnesses name no ``impl`` function in a ``post:`` they could make vacuous:
each states the Kafka property the harness checks.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

import crosshair
from crosshair.tracers import NoTracing

from impl.assignors import (  # some are named only in post: conditions, which see these globals
    Assignment,
    count_spread,
    owned_by_subscribers,  # noqa: F401
    owned_exactly_once,  # noqa: F401
    range_assign,
    round_robin_assign,
    subscribed_partitions,
)
from impl.log.batch import RecordBatch, decode, encode
from impl.log.checkpoint import EpochEntry, TopicPartition
from impl.log.index import OffsetIndex
from impl.log.leader_epoch import LeaderEpochCache
from impl.partitioner import RoundRobinPartitioner, partition_for_key, to_positive
from impl.sim.disk import SimDisk

__all__ = [
    "ASSIGNORS",
    "BROKEN_ASSIGNORS",
    "IMPL_FUNCTIONS",
    "IMPL_LOG",
    "OffsetIndexBisectLeft",
    "balanced_per_topic",
    "batch_round_trip",
    "broken_range_on_equal_subscriptions",
    "broken_range_on_small_groups",
    "broken_round_robin_on_equal_subscriptions",
    "broken_round_robin_on_small_groups",
    "epoch_lookup",
    "equal_group",
    "everyone_subs",
    "group_of",
    "index_lookup",
    "index_lookup_bisect_left",
    "keyed_partition_ignores_availability",
    "keyless_partitions_stay_in_range",
    "range_assign_dropping_the_last_partition",
    "range_assign_forgetting_the_remainder",
    "range_assign_with_the_remainder_to_the_last",
    "range_on_equal_subscriptions",
    "range_on_small_groups",
    "round_robin_ignoring_subscriptions",
    "round_robin_on_equal_subscriptions",
    "round_robin_on_small_groups",
    "round_robin_restarting_per_topic",
    "subs_of",
    "topics_of",
]

# --- the partitioner, record batches, the leader-epoch cache, the offset index ---------------


def keyed_partition_ignores_availability(key: bytes, num_partitions: int, up: list[int]) -> int:
    """A keyed record's partition depends on the key and the partition count only, not on
    which partitions have a leader (per-key ordering across producers needs that).

    pre: 0 < num_partitions <= 64
    pre: all(0 <= p < num_partitions for p in up)
    post: 0 <= __return__ < num_partitions
    post: __return__ == partition_for_key(key, num_partitions)
    """
    return RoundRobinPartitioner().partition("t", key, num_partitions, up or None)


def keyless_partitions_stay_in_range(num_partitions: int, up: list[int], count: int) -> int:
    """Keyless records go round-robin over the available partitions (all if none is).

    pre: 0 < num_partitions <= 64
    pre: all(0 <= p < num_partitions for p in up)
    pre: 0 < count <= 4
    post: 0 <= __return__ < num_partitions
    post: not up or __return__ in up
    """
    partitioner = RoundRobinPartitioner()
    chosen = 0
    for _ in range(count):
        chosen = partitioner.partition("t", None, num_partitions, up or None)
    return chosen


IMPL_FUNCTIONS: dict[str, tuple[Callable[..., Any], float]] = {
    "to_positive": (to_positive, 0.3),
    "partition_for_key": (partition_for_key, 0.5),
    "keyed_partition_ignores_availability": (keyed_partition_ignores_availability, 0.5),
}


def batch_round_trip(values: list[bytes], key: bytes, base_offset: int, epoch: int) -> bool:
    """A record batch decodes to itself, and decoding consumes exactly its bytes. (The
    CRC-32C is a C extension that CrossHair's symbolic byte arrays cannot enter, so its
    choices are realized and the codec runs natively on them: CrossHair picks the inputs,
    the round trip is checked on real bytes.)

    pre: 1 <= len(values) <= 3
    pre: 0 <= base_offset < 2**40
    pre: -1 <= epoch < 2**31
    post: __return__
    """
    values = [bytes(v) for v in crosshair.deep_realize(values)]
    key = bytes(crosshair.deep_realize(key))
    base_offset = crosshair.deep_realize(base_offset)
    epoch = crosshair.deep_realize(epoch)
    with NoTracing():
        batch = RecordBatch.of(*values, key=key or None).with_placement(base_offset, epoch)
        data = encode(batch)
        decoded, end = decode(data)
        return bool(decoded == batch and end == len(data))


def epoch_lookup(starts: list[int], requested: int, leo: int) -> tuple[int, int]:
    """OffsetsForLeaderEpoch on a leader-epoch cache whose epochs are 0, 1, 2, ... starting
    at strictly increasing offsets ``starts`` (KIP-279 semantics).

    pre: len(starts) <= 4
    pre: all(0 <= s for s in starts)
    pre: all(a < b for a, b in zip(starts, starts[1:]))
    pre: leo >= 0
    pre: not starts or starts[-1] <= leo
    pre: -1 <= requested <= 5
    post: __return__[0] <= requested
    post: __return__[1] <= leo
    post: not starts or requested != len(starts) - 1 or __return__ == (requested, leo)
    post: (__return__ == (-1, -1)) == (not starts or requested < 0 or requested >= len(starts))
    """
    cache = LeaderEpochCache(entries=[EpochEntry(e, s) for e, s in enumerate(starts)])
    answer = cache.end_offset_for(requested, leo)
    return (answer.leader_epoch, answer.end_offset)


def _index_lookup(
    index_class: type[OffsetIndex], base_offset: int, entries: list[tuple[int, int]], target: int
) -> tuple[int, int]:
    index = index_class(SimDisk(), "00000000000000000000.index", base_offset, max_entries=8)
    index.create()
    for offset, position in entries:
        index.append(offset, position)
    return index.lookup(target)


def index_lookup(base_offset: int, entries: list[tuple[int, int]], target: int) -> tuple[int, int]:
    """``OffsetIndex.lookup`` (Kafka's ``OffsetIndex.lookup``, its ``largestLowerBoundSlotFor``
    binary search) on a segment's sparse index holding ``entries`` (last offset of a
    batch, position of the batch), as appended: a read of ``target`` starts its scan at the
    entry with the greatest indexed offset <= the target, or at the segment's start (base
    offset, position 0) when there is none. A later entry's batch may lie past the
    target's; an earlier entry makes the scan read more than ``index.interval.bytes``.

    pre: 0 <= base_offset < 2**40
    pre: len(entries) <= 6
    pre: all(0 <= o - base_offset < 2**31 and 0 <= p < 2**31 for o, p in entries)
    pre: all(a[0] < b[0] and a[1] < b[1] for a, b in zip(entries, entries[1:]))
    post: __return__ == max((e for e in entries if e[0] <= target), default=(base_offset, 0))
    """
    return _index_lookup(OffsetIndex, base_offset, entries, target)


class OffsetIndexBisectLeft(OffsetIndex):
    """A deliberately broken index: ``bisect_left`` for ``bisect_right``, so a target that
    is itself an indexed offset starts from the entry before it (the scan still finds it,
    but reads a whole index interval more than Kafka's)."""

    def lookup(self, target_offset: int) -> tuple[int, int]:
        i = bisect.bisect_left(self._offsets, target_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self._offsets[i], self._positions[i]


def index_lookup_bisect_left(
    base_offset: int, entries: list[tuple[int, int]], target: int
) -> tuple[int, int]:
    """``index_lookup`` on the broken index, with the same contract.

    pre: 0 <= base_offset < 2**40
    pre: len(entries) <= 6
    pre: all(0 <= o - base_offset < 2**31 and 0 <= p < 2**31 for o, p in entries)
    pre: all(a[0] < b[0] and a[1] < b[1] for a, b in zip(entries, entries[1:]))
    post: __return__ == max((e for e in entries if e[0] <= target), default=(base_offset, 0))
    """
    return _index_lookup(OffsetIndexBisectLeft, base_offset, entries, target)


IMPL_LOG: dict[str, tuple[Callable[..., Any], float]] = {
    "epoch_lookup": (epoch_lookup, 0.3),
    "index_lookup": (index_lookup, 0.5),
}

# --- the consumer-group assignors ----------------------------------------------------------

# ``impl.assignors`` carries its contracts itself. CrossHair checks them on symbolic dicts of
# strings, but within a small budget it rarely invents two members whose subscriptions name
# the same topic (it did not find the forgotten remainder below in 10 CPU seconds per
# condition). The small-group harnesses state the same contracts over partition counts and
# subscription bitmasks, or over a member count when every member subscribes to every topic
# (round robin's balance condition), which CrossHair searches well: it finds the broken
# copies below within a few hundred paths.


def group_of(counts: list[int], masks: list[int]) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Topics t0, t1, ... with ``counts`` partitions, and members c0, c1, ... where member
    ``j`` subscribes to topic ``i`` iff bit ``i`` of ``masks[j]`` is set."""
    topics = [f"t{i}" for i in range(len(counts))]
    subscriptions = {
        f"c{j}": [t for i, t in enumerate(topics) if mask >> i & 1] for j, mask in enumerate(masks)
    }
    return dict(zip(topics, counts, strict=True)), subscriptions


def equal_group(counts: list[int], members: int) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Topics t0, t1, ... with ``counts`` partitions; ``members`` members c0, c1, ...,
    each subscribed to every topic."""
    topics = [f"t{i}" for i in range(len(counts))]
    return dict(zip(topics, counts, strict=True)), {f"c{j}": topics for j in range(members)}


def topics_of(counts: list[int]) -> dict[str, int]:
    return group_of(counts, [])[0]


def subs_of(counts: list[int], masks: list[int]) -> dict[str, list[str]]:
    return group_of(counts, masks)[1]


def everyone_subs(counts: list[int], members: int) -> dict[str, list[str]]:
    return equal_group(counts, members)[1]


def balanced_per_topic(
    assignment: Assignment, partitions: dict[str, int], subscriptions: dict[str, list[str]]
) -> bool:
    """Range's balance: per topic, its subscribers' counts differ by at most one."""
    return all(count_spread(assignment, subscriptions, t) <= 1 for t in partitions)


def range_on_small_groups(counts: list[int], masks: list[int]) -> Assignment:
    """``range_assign``'s contract on groups of up to 4 members and 3 topics.

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: len(masks) <= 4
    post: owned_exactly_once(__return__, topics_of(counts), subs_of(counts, masks))
    post: owned_by_subscribers(__return__, subs_of(counts, masks))
    post: balanced_per_topic(__return__, topics_of(counts), subs_of(counts, masks))
    """
    return range_assign(*group_of(counts, masks))


def range_on_equal_subscriptions(counts: list[int], members: int) -> Assignment:
    """Range's balance where CrossHair reaches it best: every member subscribes to every
    topic, and per topic member counts differ by at most one.

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: 0 <= members <= 4
    post: balanced_per_topic(__return__, topics_of(counts), everyone_subs(counts, members))
    """
    return range_assign(*equal_group(counts, members))


def round_robin_on_small_groups(counts: list[int], masks: list[int]) -> Assignment:
    """``round_robin_assign``'s contract on groups of up to 4 members and 3 topics
    (its balance condition: ``round_robin_on_equal_subscriptions``).

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: len(masks) <= 4
    post: owned_by_subscribers(__return__, subs_of(counts, masks))
    post: owned_exactly_once(__return__, topics_of(counts), subs_of(counts, masks))
    """
    return round_robin_assign(*group_of(counts, masks))


def round_robin_on_equal_subscriptions(counts: list[int], members: int) -> Assignment:
    """Round robin's balance: when every member subscribes to the same topics, member
    counts over all topics differ by at most one.

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: 0 <= members <= 4
    post: count_spread(__return__, everyone_subs(counts, members), None) <= 1
    """
    return round_robin_assign(*equal_group(counts, members))


def range_assign_forgetting_the_remainder(
    partitions_per_topic: dict[str, int], subscriptions: dict[str, list[str]]
) -> Assignment:
    """A deliberately broken RangeAssignor: every subscriber gets ``n // c`` partitions and
    the ``n % c`` left over are assigned to nobody (never consumed)."""
    assignment: Assignment = {member: [] for member in sorted(subscriptions)}
    for topic in sorted(partitions_per_topic):
        consumers = sorted(m for m, ts in subscriptions.items() if topic in ts)
        if not consumers:
            continue
        share = partitions_per_topic[topic] // len(consumers)
        for i, member in enumerate(consumers):
            assignment[member] += [
                TopicPartition(topic, p) for p in range(i * share, (i + 1) * share)
            ]
    return assignment


def range_assign_with_the_remainder_to_the_last(
    partitions_per_topic: dict[str, int], subscriptions: dict[str, list[str]]
) -> Assignment:
    """A deliberately broken RangeAssignor: the last subscriber takes the ``n % c`` left
    over, so it can own up to ``c - 1`` more than the others."""
    assignment: Assignment = {member: [] for member in sorted(subscriptions)}
    for topic in sorted(partitions_per_topic):
        consumers = sorted(m for m, ts in subscriptions.items() if topic in ts)
        n = partitions_per_topic[topic]
        share = n // len(consumers) if consumers else 0
        for i, member in enumerate(consumers):
            end = n if i == len(consumers) - 1 else (i + 1) * share
            assignment[member] += [TopicPartition(topic, p) for p in range(i * share, end)]
    return assignment


def round_robin_ignoring_subscriptions(
    partitions_per_topic: dict[str, int], subscriptions: dict[str, list[str]]
) -> Assignment:
    """A deliberately broken RoundRobinAssignor: the deal does not pass over members that
    do not subscribe to the partition's topic."""
    members = sorted(subscriptions)
    assignment: Assignment = {member: [] for member in members}
    for turn, tp in enumerate(subscribed_partitions(partitions_per_topic, subscriptions)):
        assignment[members[turn % len(members)]].append(tp)
    return assignment


def round_robin_restarting_per_topic(
    partitions_per_topic: dict[str, int], subscriptions: dict[str, list[str]]
) -> Assignment:
    """A deliberately broken RoundRobinAssignor: each topic is dealt from the first member
    again, so with several topics the first members collect every topic's remainder."""
    assignment: Assignment = {member: [] for member in sorted(subscriptions)}
    for topic in sorted(partitions_per_topic):
        consumers = sorted(m for m, ts in subscriptions.items() if topic in ts)
        for p in range(partitions_per_topic[topic] if consumers else 0):
            assignment[consumers[p % len(consumers)]].append(TopicPartition(topic, p))
    return assignment


def broken_range_on_small_groups(counts: list[int], masks: list[int]) -> Assignment:
    """The range assignor forgetting the remainder, under ``range_on_small_groups``'s
    contract.

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: len(masks) <= 4
    post: owned_exactly_once(__return__, topics_of(counts), subs_of(counts, masks))
    post: owned_by_subscribers(__return__, subs_of(counts, masks))
    post: balanced_per_topic(__return__, topics_of(counts), subs_of(counts, masks))
    """
    return range_assign_forgetting_the_remainder(*group_of(counts, masks))


def broken_range_on_equal_subscriptions(counts: list[int], members: int) -> Assignment:
    """The range assignor giving the remainder to the last member, under
    ``range_on_equal_subscriptions``'s contract.

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: 0 <= members <= 4
    post: balanced_per_topic(__return__, topics_of(counts), everyone_subs(counts, members))
    """
    return range_assign_with_the_remainder_to_the_last(*equal_group(counts, members))


def broken_round_robin_on_small_groups(counts: list[int], masks: list[int]) -> Assignment:
    """The round-robin assignor ignoring subscriptions, under
    ``round_robin_on_small_groups``'s contract.

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: len(masks) <= 4
    post: owned_by_subscribers(__return__, subs_of(counts, masks))
    post: owned_exactly_once(__return__, topics_of(counts), subs_of(counts, masks))
    """
    return round_robin_ignoring_subscriptions(*group_of(counts, masks))


def broken_round_robin_on_equal_subscriptions(counts: list[int], members: int) -> Assignment:
    """The round-robin assignor restarting per topic, under
    ``round_robin_on_equal_subscriptions``'s contract.

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: 0 <= members <= 4
    post: count_spread(__return__, everyone_subs(counts, members), None) <= 1
    """
    return round_robin_restarting_per_topic(*equal_group(counts, members))


def range_assign_dropping_the_last_partition(
    partitions_per_topic: dict[str, int], subscriptions: dict[str, list[str]]
) -> Assignment:
    """An off-by-one a single member shows, under ``range_assign``'s own contract: what
    the direct check on symbolic dicts does find.

    pre: all(n >= 0 for n in partitions_per_topic.values())
    post: owned_exactly_once(__return__, partitions_per_topic, subscriptions)
    """
    assignment = range_assign(partitions_per_topic, subscriptions)
    return {m: tps[:-1] for m, tps in assignment.items()}


ASSIGNORS: dict[str, tuple[Callable[..., Any], float]] = {
    "range_assign": (range_assign, 0.3),
    "round_robin_assign": (round_robin_assign, 0.3),
    "range_on_small_groups": (range_on_small_groups, 0.5),
    "range_on_equal_subscriptions": (range_on_equal_subscriptions, 1.0),
    "round_robin_on_small_groups": (round_robin_on_small_groups, 0.5),
    "round_robin_on_equal_subscriptions": (round_robin_on_equal_subscriptions, 1.0),
}


BROKEN_ASSIGNORS: dict[str, Callable[..., Any]] = {
    # deliberately broken copy -> the checked contract it runs under
    "range-forgets-the-remainder": broken_range_on_small_groups,
    "range-remainder-to-the-last": broken_range_on_equal_subscriptions,
    "range-off-by-one (direct)": range_assign_dropping_the_last_partition,
    "round-robin-ignores-subscriptions": broken_round_robin_on_small_groups,
    "round-robin-restarts-per-topic": broken_round_robin_on_equal_subscriptions,
}
"""Each broken copy, by what it gets wrong; each runs under a contract CrossHair checks."""
