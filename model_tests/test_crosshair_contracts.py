"""CrossHair contracts on the rules a bug would matter in, each checked within a budget.

``spec.proofs.rules`` restates the spec's pure rules (the HW rule, ISR expansion, the
truncation offsets) as functions with PEP 316 contracts. Here: (1) each agrees with the
spec's own computation on every reachable state of small configurations, so the contracts
are about the rules the spec uses; (2) CrossHair looks for a contract violation in each,
with a small per-condition budget, and finds none; (3) on a deliberately broken copy, it
does find one; (4) ``diffbehavior`` compares two formulations of a rule. The
implementation's partitioner, record-batch encoding, leader-epoch cache and sparse offset
index get the same treatment through contract-carrying wrappers defined below (``spec`` may
not import ``impl``); the consumer-group assignors (``impl.assignors``) carry their
contracts themselves, and are also checked through a small-group harness that CrossHair
searches far better.

Budgets are CPU seconds per condition. The default run gives each function a fraction of a
second to a few seconds (``CONTRACTS``); ``test_crosshair_with_the_full_budget`` (slow)
gives every contract-carrying function ``KMODEL_CROSSHAIR_BUDGET`` seconds per condition
(default 10), which ``make verify`` sets.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import os
from collections.abc import Callable
from typing import Any

import crosshair
import crosshair.core_and_libs
import pytest
from crosshair.core import analyze_function, run_checkables
from crosshair.diff_behavior import diff_behavior
from crosshair.fnutil import FunctionInfo
from crosshair.options import DEFAULT_OPTIONS, AnalysisKind, AnalysisOptionSet
from crosshair.statespace import MessageType
from crosshair.tracers import NoTracing

from impl.assignors import (
    Assignment,
    count_spread,
    owned_by_subscribers,
    owned_exactly_once,
    range_assign,
    round_robin_assign,
    subscribed_partitions,
)
from impl.log.batch import RecordBatch, decode, encode
from impl.log.checkpoint import EpochEntry, TopicPartition
from impl.log.index import OffsetIndex
from impl.log.leader_epoch import LeaderEpochCache
from impl.partitioner import RoundRobinPartitioner, murmur2, partition_for_key, to_positive
from impl.sim.disk import SimDisk
from spec.explore import reachable_states
from spec.proofs import rules
from spec.replication import Params, Replication, State

# --- running CrossHair ---------------------------------------------------------------------


def crosshair_check(
    fn: Callable[..., Any], seconds: float, first_only: bool = False
) -> tuple[list[str], int]:
    """CrossHair on ``fn``'s PEP 316 contracts: (violations found, paths explored).
    ``first_only``: stop at the first condition found violated (a broken copy's test need
    not spend the budget on its other conditions)."""
    stats: collections.Counter[str] = collections.Counter()
    options = AnalysisOptionSet(
        analysis_kind=[AnalysisKind.PEP316],
        per_condition_timeout=seconds,
        per_path_timeout=max(seconds / 2, 0.5),
        stats=stats,
    )
    bad_states = (MessageType.POST_FAIL, MessageType.EXEC_ERR, MessageType.POST_ERR)
    if first_only:
        for checkable in analyze_function(fn, options):
            bad = [m.message for m in checkable.analyze() if m.state in bad_states]
            if bad:
                return bad, stats["num_paths"]
        return [], stats["num_paths"]
    messages = run_checkables(analyze_function(fn, options))
    bad = [m.message for m in messages if m.state in bad_states]
    return bad, stats["num_paths"]


def crosshair_diff(f: Callable[..., Any], g: Callable[..., Any], seconds: float) -> list[Any]:
    options = DEFAULT_OPTIONS.overlay(
        AnalysisOptionSet(per_condition_timeout=seconds, per_path_timeout=max(seconds / 4, 0.5))
    )
    diffs = diff_behavior(FunctionInfo.from_fn(f), FunctionInfo.from_fn(g), options)
    assert not isinstance(diffs, str), diffs
    return list(diffs)


# --- the rules agree with the spec ---------------------------------------------------------


def reachable(params: Params, limit: int = 4_000) -> list[State]:
    return reachable_states(Replication(params), limit)


PUBLISHED = {t: Params(truncation=t) for t in ("high_watermark", "kip101", "kip279", "kip320")}
LEADER_VIEW = Params(model="extended", truncation="kip320", max_crashes=0)


@pytest.mark.parametrize("truncation", sorted(PUBLISHED))
def test_truncation_rules_agree_with_the_spec(truncation: str) -> None:
    params = PUBLISHED[truncation]
    spec = Replication(params)
    for s in reachable(params):
        for r, leader in itertools.permutations(spec.ids, 2):
            rep, lrep = s.rep(r), s.rep(leader)
            follower, leader_log = list(rep.log), list(lrep.log)
            if truncation == "high_watermark":
                mine = rules.truncation_offset_hw(rep.hw)
            elif truncation == "kip101":
                mine = rules.truncation_offset_kip101(follower, leader_log, rep.hw)
            else:
                mine = rules.truncation_offset_kip279(follower, leader_log)
            assert mine == spec.truncation_offset(s, r, leader), (s, r, leader)


@pytest.mark.parametrize(
    "params",
    [
        PUBLISHED["kip320"],
        pytest.param(Params(replicas=3, truncation="kip320"), marks=pytest.mark.slow),
    ],
    ids=["2-replicas", "3-replicas"],
)
def test_the_kip279_exchange_agrees_with_the_spec_rule_on_kip320_logs(params: Params) -> None:
    """Every pair of logs the KIP-320 protocol produces has the strong log-matching shape,
    and on it the follower's OffsetsForLeaderEpoch exchange truncates exactly where the
    spec's rule does (the spec's abstraction of KIP-279 is faithful there)."""
    pairs = {
        (x.log, y.log)
        for s in reachable(params, 60_000)
        for x, y in itertools.permutations(s.replicas, 2)
    }
    for a, b in pairs:
        assert rules.log_matching(list(a), list(b)), (a, b)
        assert rules.truncation_by_epoch_exchange(list(a), list(b)) == (
            rules.truncation_offset_kip279(list(a), list(b))
        ), (a, b)


@pytest.mark.parametrize("truncation", ["high_watermark", "kip320"])
def test_hw_rules_agree_with_the_spec(truncation: str) -> None:
    """The follower's HW after a fetch, and the leader's HW advance, as the spec computes
    them in every reachable state."""
    params = PUBLISHED[truncation]
    spec = Replication(params)
    fenced = truncation == "kip320"
    fetch = spec.follower_fetch_fenced if fenced else spec.follower_fetch
    advance = spec.leader_advance_hw_fenced if fenced else spec.leader_advance_hw
    seen_fetch = seen_advance = 0
    for s in reachable(params):
        for f in spec.ids:
            leader = s.rep(f).leader
            if leader in (-1, f):
                continue
            after = fetch(s, f)
            if after is not None:
                expected = rules.follower_hw(s.rep(leader).hw, after.rep(f).leo)
                assert after.rep(f).hw == expected
                seen_fetch += 1
        for leader in spec.ids:
            lrep = s.rep(leader)
            if lrep.leader != leader:
                continue
            members = sorted(lrep.isr)
            oks = [
                spec.following_epoch(s, leader, m) if fenced else s.rep(m).leader == leader
                for m in members
            ]
            size = lrep.leo if fenced else params.log_size
            mine = rules.leader_advance_hw(
                lrep.hw, lrep.leo, size, [s.rep(m).leo for m in members], oks
            )
            after = advance(s, leader)
            assert mine == (None if after is None else after.rep(leader).hw), s
            seen_advance += after is not None
    assert seen_fetch > 100 and seen_advance > 100


def test_isr_expansion_rule_agrees_with_the_spec() -> None:
    params = PUBLISHED["kip320"]
    spec = Replication(params)
    for s in reachable(params):
        for leader, f in itertools.permutations(spec.ids, 2):
            lrep = s.rep(leader)
            if lrep.leader != leader or f in lrep.isr:
                continue
            mine = rules.may_join_isr_published(
                lrep.hw,
                [e for e, _ in lrep.log],
                lrep.epoch,
                s.rep(f).leo,
                spec.following_epoch(s, leader, f),
            )
            enabled = spec.leader_expand_isr_fenced(s, leader, f) is not None
            assert enabled == (mine and spec.is_true_leader(s, leader)), s


def test_leader_view_rules_agree_with_the_spec() -> None:
    """The extended model's leader view: Kafka's HW recomputation and ISR expansion."""
    spec = Replication(LEADER_VIEW)
    checked = 0
    for s in reachable(LEADER_VIEW, 6_000):
        for leader in spec.ids:
            lrep = s.rep(leader)
            if lrep.leader != leader or not lrep.remote:
                continue
            reported = [lrep.remote[m - 1] for m in sorted(lrep.isr) if m != leader]
            mine = rules.recompute_leader_hw(lrep.hw, lrep.leo, reported)
            assert spec.recompute_hw(s, leader).rep(leader).hw == mine
            for f in spec.ids:
                if f in lrep.isr or lrep.remote[f - 1] < 0:
                    continue
                may = rules.may_join_isr_kafka(
                    lrep.hw, [e for e, _ in lrep.log], lrep.epoch, lrep.remote[f - 1], True
                )
                enabled = spec.expand_isr_caught_up(s, leader, f) is not None
                assert enabled == (may and spec.is_true_leader(s, leader)), s
                checked += 1
    assert checked > 50


# --- CrossHair on the rules ----------------------------------------------------------------

# function -> CPU seconds per condition (postcondition) in the default run
RULES: dict[str, tuple[Callable[..., Any], float]] = {
    "follower_hw": (rules.follower_hw, 1.0),
    "recompute_leader_hw": (rules.recompute_leader_hw, 0.3),
    "may_join_isr_published": (rules.may_join_isr_published, 0.3),
    "truncation_offset_kip279": (rules.truncation_offset_kip279, 0.3),
    "truncation_offset_hw": (rules.truncation_offset_hw, 0.3),
}
SLOW_RULES: dict[str, tuple[Callable[..., Any], float]] = {
    "leader_advance_hw": (rules.leader_advance_hw, 0.5),
    "epoch_start_offset": (rules.epoch_start_offset, 0.5),
    "may_join_isr_kafka": (rules.may_join_isr_kafka, 0.5),
    "truncation_offset_kip101": (rules.truncation_offset_kip101, 0.5),
    "epoch_end_offset": (rules.epoch_end_offset, 0.5),
    "truncation_by_epoch_exchange": (rules.truncation_by_epoch_exchange, 1.0),
}


@pytest.mark.parametrize("name", sorted(RULES))
def test_crosshair_finds_no_contract_violation_in_the_rules(name: str) -> None:
    fn, seconds = RULES[name]
    bad, paths = crosshair_check(fn, seconds)
    assert bad == []
    assert paths > 0


def follower_hw_unclamped(leader_hw: int, follower_leo: int) -> int:
    """The ``follower_hw_unclamped`` bug: the follower takes the leader's HW as is.

    pre: leader_hw >= 0
    pre: follower_leo >= 0
    post: __return__ <= follower_leo
    post: __return__ <= leader_hw
    """
    return leader_hw


def truncation_to_common_prefix_broken(
    follower: list[rules.Record], leader: list[rules.Record]
) -> int:
    """An off-by-one slip in the spec's truncation rule (returns the last shared offset,
    not one past it), with the rule's contract.

    post: 0 <= __return__ <= min(len(follower), len(leader))
    post: __return__ == 0 or follower[__return__ - 1] == leader[__return__ - 1]
    post: all(follower[k] != leader[k] for k in range(__return__, min(len(follower), len(leader))))
    """
    for offset in range(min(len(follower), len(leader)) - 1, -1, -1):
        if follower[offset] == leader[offset]:
            return offset
    return 0


def test_crosshair_finds_the_violation_in_a_broken_hw_rule() -> None:
    bad, _ = crosshair_check(follower_hw_unclamped, 2.0)
    assert bad and "false when calling follower_hw_unclamped" in bad[0]


@pytest.mark.slow
def test_crosshair_finds_the_violation_in_a_broken_truncation_rule() -> None:
    bad, _ = crosshair_check(truncation_to_common_prefix_broken, 2.0)
    assert bad


def test_diffbehavior_tells_the_broken_hw_rule_from_the_spec_rule() -> None:
    diffs = crosshair_diff(rules.follower_hw, follower_hw_unclamped, 2.0)
    assert diffs
    d = diffs[0]
    assert d.result1.return_repr != d.result2.return_repr


@pytest.mark.slow
def test_diffbehavior_finds_no_difference_between_the_truncation_rule_and_the_exchange() -> None:
    """Bounded: on log pairs of the KIP-320 shape, the spec's truncation rule and the
    follower's OffsetsForLeaderEpoch exchange agree on every path explored (the exhaustive
    check on reachable logs is in test_the_kip279_exchange_agrees_...)."""
    diffs = crosshair_diff(
        rules.truncation_kip279_if_matching, rules.truncation_by_epoch_exchange_if_matching, 20.0
    )
    assert diffs == []


def test_the_published_expansion_rule_is_stricter_than_kafkas() -> None:
    """The two ISR-expansion rules differ (found by hand: CrossHair's diffbehavior did not
    reach it within its budget): the published model waits until the leader's HW reaches
    its own epoch, Kafka only until the follower's LEO has. Both keep a new member holding
    everything a previous leader committed (their shared postcondition)."""
    args = (0, [0], 1, 1, True)
    assert rules.may_join_published_if_valid(*args) == 0
    assert rules.may_join_kafka_if_valid(*args) == 1


# --- the implementation: partitioner, record batches, leader-epoch cache ---------------------


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


@pytest.mark.parametrize("name", sorted({**IMPL_FUNCTIONS, **IMPL_LOG}))
def test_crosshair_finds_no_contract_violation_in_the_implementation(name: str) -> None:
    fn, seconds = {**IMPL_FUNCTIONS, **IMPL_LOG}[name]
    bad, paths = crosshair_check(fn, seconds)
    assert bad == []
    assert paths > 0


def test_crosshair_finds_the_violation_in_a_broken_index_lookup() -> None:
    bad, _ = crosshair_check(index_lookup_bisect_left, 5.0)
    assert bad and "false when calling index_lookup_bisect_left" in bad[0]


def test_the_index_contract_holds_on_a_concrete_segment_index() -> None:
    """The case CrossHair reports for the broken copy, on the real index: a target that is
    an indexed offset starts from that entry."""
    entries = [(10, 4096), (20, 8200), (31, 12300)]
    assert index_lookup(0, entries, 20) == (20, 8200)
    assert index_lookup(0, entries, 19) == (10, 4096)
    assert index_lookup(0, entries, 9) == (0, 0)
    assert index_lookup(0, entries, 99) == (31, 12300)
    assert index_lookup_bisect_left(0, entries, 20) == (10, 4096)


def test_the_cache_lookup_agrees_with_the_rule_on_logs() -> None:
    """The implementation's leader-epoch cache answers OffsetsForLeaderEpoch as the rule
    does on a log, for every epoch from the log's first to its last. (Outside that range
    they differ by design: Kafka answers an epoch above every known one UNDEFINED, and one
    below every known one as itself; a Kafka leader's cache always holds its current epoch,
    so followers never ask above it.)"""
    logs = {rep.log for s in reachable(PUBLISHED["kip320"]) for rep in s.replicas}
    for log in logs:
        entries: list[EpochEntry] = []
        for offset, (epoch, _) in enumerate(log):
            if not entries or entries[-1].epoch != epoch:
                entries.append(EpochEntry(epoch, offset))
        cache = LeaderEpochCache(entries=entries)
        for requested in range(-1, 4):
            answer = cache.end_offset_for(requested, len(log))
            expected = rules.epoch_end_offset(list(log), requested)
            if not entries or not entries[0].epoch <= requested <= entries[-1].epoch:
                continue
            assert (answer.leader_epoch, answer.end_offset) == expected, (log, requested)


def _epochs_in_domain(epochs: list[int], requested: int) -> bool:
    """Where the cache and the rule are meant to agree: a log's record epochs (non-negative,
    non-decreasing) and an epoch between its first and its last."""
    return (
        bool(epochs)
        and epochs[0] >= 0
        and all(a <= b for a, b in itertools.pairwise(epochs))
        and epochs[0] <= requested <= epochs[-1]
    )


def _cache_of(epochs: list[int]) -> LeaderEpochCache:
    entries: list[EpochEntry] = []
    for offset, epoch in enumerate(epochs):
        if not entries or entries[-1].epoch != epoch:
            entries.append(EpochEntry(epoch, offset))
    return LeaderEpochCache(entries=entries)


def spec_epoch_end(epochs: list[int], requested: int) -> tuple[int, int]:
    """The spec's rule (``rules.epoch_end_offset``) on a log with these record epochs;
    (-2, -2) outside the shared domain."""
    if not _epochs_in_domain(epochs, requested):
        return (-2, -2)
    return rules.epoch_end_offset([(epoch, 0) for epoch in epochs], requested)


def impl_epoch_end(epochs: list[int], requested: int) -> tuple[int, int]:
    """The implementation's ``LeaderEpochCache.end_offset_for`` on the cache such a log
    builds; (-2, -2) outside the shared domain."""
    if not _epochs_in_domain(epochs, requested):
        return (-2, -2)
    answer = _cache_of(epochs).end_offset_for(requested, len(epochs))
    return (answer.leader_epoch, answer.end_offset)


def impl_epoch_end_off_by_one(epochs: list[int], requested: int) -> tuple[int, int]:
    """A broken lookup: the end of an epoch taken as the start of the epoch itself."""
    if not _epochs_in_domain(epochs, requested):
        return (-2, -2)
    cache = _cache_of(epochs)
    answer = cache.end_offset_for(requested, len(epochs))
    starts = {entry.epoch: entry.start_offset for entry in cache.entries}
    if answer.leader_epoch in starts and answer.leader_epoch != epochs[-1]:
        return (answer.leader_epoch, starts[answer.leader_epoch])
    return (answer.leader_epoch, answer.end_offset)


def test_diffbehavior_finds_no_difference_between_the_spec_rule_and_the_epoch_cache() -> None:
    """``crosshair diffbehavior`` between the spec's OffsetsForLeaderEpoch rule and the
    implementation's cache, on the domain where they are meant to agree (bounded)."""
    assert crosshair_diff(spec_epoch_end, impl_epoch_end, 3.0) == []


def test_diffbehavior_tells_a_broken_epoch_cache_from_the_spec_rule() -> None:
    diffs = crosshair_diff(spec_epoch_end, impl_epoch_end_off_by_one, 3.0)
    assert diffs, "diffbehavior found no input where the broken cache differs"


# --- the implementation: consumer-group assignors ------------------------------------------

# ``impl.assignors`` carries its contracts itself. CrossHair checks them on symbolic dicts of
# strings, but within a small budget it rarely invents two members whose subscriptions name
# the same topic (it did not find the forgotten remainder below in 10 CPU seconds per
# condition). The small-group harnesses state the same contracts over partition counts and
# subscription bitmasks, or over a member count when every member subscribes to every topic
# (round robin's balance condition), which CrossHair searches well: it finds the broken
# copies below within a few hundred paths.


def _group(counts: list[int], masks: list[int]) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Topics t0, t1, ... with ``counts`` partitions, and members c0, c1, ... where member
    ``j`` subscribes to topic ``i`` iff bit ``i`` of ``masks[j]`` is set."""
    topics = [f"t{i}" for i in range(len(counts))]
    subscriptions = {
        f"c{j}": [t for i, t in enumerate(topics) if mask >> i & 1] for j, mask in enumerate(masks)
    }
    return dict(zip(topics, counts, strict=True)), subscriptions


def _equal_group(counts: list[int], members: int) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Topics t0, t1, ... with ``counts`` partitions; ``members`` members c0, c1, ...,
    each subscribed to every topic."""
    topics = [f"t{i}" for i in range(len(counts))]
    return dict(zip(topics, counts, strict=True)), {f"c{j}": topics for j in range(members)}


def topics_of(counts: list[int]) -> dict[str, int]:
    return _group(counts, [])[0]


def subs_of(counts: list[int], masks: list[int]) -> dict[str, list[str]]:
    return _group(counts, masks)[1]


def everyone_subs(counts: list[int], members: int) -> dict[str, list[str]]:
    return _equal_group(counts, members)[1]


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
    return range_assign(*_group(counts, masks))


def range_on_equal_subscriptions(counts: list[int], members: int) -> Assignment:
    """Range's balance where CrossHair reaches it best: every member subscribes to every
    topic, and per topic member counts differ by at most one.

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: 0 <= members <= 4
    post: balanced_per_topic(__return__, topics_of(counts), everyone_subs(counts, members))
    """
    return range_assign(*_equal_group(counts, members))


def round_robin_on_small_groups(counts: list[int], masks: list[int]) -> Assignment:
    """``round_robin_assign``'s contract on groups of up to 4 members and 3 topics
    (its balance condition: ``round_robin_on_equal_subscriptions``).

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: len(masks) <= 4
    post: owned_by_subscribers(__return__, subs_of(counts, masks))
    post: owned_exactly_once(__return__, topics_of(counts), subs_of(counts, masks))
    """
    return round_robin_assign(*_group(counts, masks))


def round_robin_on_equal_subscriptions(counts: list[int], members: int) -> Assignment:
    """Round robin's balance: when every member subscribes to the same topics, member
    counts over all topics differ by at most one.

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: 0 <= members <= 4
    post: count_spread(__return__, everyone_subs(counts, members), None) <= 1
    """
    return round_robin_assign(*_equal_group(counts, members))


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
    return range_assign_forgetting_the_remainder(*_group(counts, masks))


def broken_range_on_equal_subscriptions(counts: list[int], members: int) -> Assignment:
    """The range assignor giving the remainder to the last member, under
    ``range_on_equal_subscriptions``'s contract.

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: 0 <= members <= 4
    post: balanced_per_topic(__return__, topics_of(counts), everyone_subs(counts, members))
    """
    return range_assign_with_the_remainder_to_the_last(*_equal_group(counts, members))


def broken_round_robin_on_small_groups(counts: list[int], masks: list[int]) -> Assignment:
    """The round-robin assignor ignoring subscriptions, under
    ``round_robin_on_small_groups``'s contract.

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: len(masks) <= 4
    post: owned_by_subscribers(__return__, subs_of(counts, masks))
    post: owned_exactly_once(__return__, topics_of(counts), subs_of(counts, masks))
    """
    return round_robin_ignoring_subscriptions(*_group(counts, masks))


def broken_round_robin_on_equal_subscriptions(counts: list[int], members: int) -> Assignment:
    """The round-robin assignor restarting per topic, under
    ``round_robin_on_equal_subscriptions``'s contract.

    pre: len(counts) <= 3 and all(0 <= n <= 8 for n in counts)
    pre: 0 <= members <= 4
    post: count_spread(__return__, everyone_subs(counts, members), None) <= 1
    """
    return round_robin_restarting_per_topic(*_equal_group(counts, members))


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


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_crosshair_finds_no_contract_violation_in_the_assignors(name: str) -> None:
    fn, seconds = ASSIGNORS[name]
    bad, paths = crosshair_check(fn, seconds)
    assert bad == []
    assert paths > 0


BROKEN_ASSIGNORS = {
    # deliberately broken copy -> the checked contract it runs under
    "range-forgets-the-remainder": broken_range_on_small_groups,
    "range-remainder-to-the-last": broken_range_on_equal_subscriptions,
    "range-off-by-one (direct)": range_assign_dropping_the_last_partition,
    "round-robin-ignores-subscriptions": broken_round_robin_on_small_groups,
    "round-robin-restarts-per-topic": broken_round_robin_on_equal_subscriptions,
}


@pytest.mark.parametrize("name", sorted(BROKEN_ASSIGNORS))
def test_crosshair_finds_the_violation_in_a_broken_assignor(name: str) -> None:
    """Each contract checked above, shown able to fail: CrossHair finds a counterexample
    in a broken copy run under the same contract (stopping at the first violated
    condition; found within a few hundred paths, the budget is a ceiling)."""
    broken = BROKEN_ASSIGNORS[name]
    bad, _ = crosshair_check(broken, 8.0, first_only=True)
    assert bad and f"false when calling {broken.__name__}" in bad[0]


def test_the_broken_assignors_fail_on_the_smallest_groups() -> None:
    """What CrossHair finds, by hand, against the correct assignors."""
    partitions, subscriptions = _group([1], [1, 1])  # one partition, two subscribers
    forgotten = range_assign_forgetting_the_remainder(partitions, subscriptions)
    assert not owned_exactly_once(forgotten, partitions, subscriptions)
    assert owned_exactly_once(range_assign(partitions, subscriptions), partitions, subscriptions)

    partitions, subscriptions = _equal_group([5], 3)  # 5 partitions over 3 members
    last = range_assign_with_the_remainder_to_the_last(partitions, subscriptions)
    assert [len(last[m]) for m in sorted(last)] == [1, 1, 3]
    assert [len(tps) for tps in range_assign(partitions, subscriptions).values()] == [2, 2, 1]

    partitions, subscriptions = _group([2], [1, 0])  # c1 does not subscribe to t0
    dealt = round_robin_ignoring_subscriptions(partitions, subscriptions)
    assert not owned_by_subscribers(dealt, subscriptions)
    assert owned_by_subscribers(round_robin_assign(partitions, subscriptions), subscriptions)

    partitions, subscriptions = _equal_group([1, 1], 2)  # two single-partition topics
    skewed = round_robin_restarting_per_topic(partitions, subscriptions)
    assert skewed == {"c0": [TopicPartition("t0", 0), TopicPartition("t1", 0)], "c1": []}
    assert count_spread(skewed, subscriptions, None) == 2
    assert count_spread(round_robin_assign(partitions, subscriptions), subscriptions, None) == 0


# --- every contract, with the full budget (``make verify``) ----------------------------------

BUDGET_VARIABLE = "KMODEL_CROSSHAIR_BUDGET"

# Every contract-carrying function, with its default-run budget (those not in the default run
# are too slow for it). ``RoundRobinPartitioner.partition`` is a method: it is checked
# through the two partitioner wrappers.
CONTRACTS: dict[str, tuple[Callable[..., Any], float]] = {
    **{f"rules.{name}": entry for name, entry in {**RULES, **SLOW_RULES}.items()},
    **IMPL_FUNCTIONS,
    **IMPL_LOG,
    **ASSIGNORS,
    "murmur2": (murmur2, 1.0),
    "keyless_partitions_stay_in_range": (keyless_partitions_stay_in_range, 2.0),
    "batch_round_trip": (batch_round_trip, 10.0),
}


def full_budget(default: float) -> float:
    """CPU seconds per condition for the full run: ``KMODEL_CROSSHAIR_BUDGET`` (``make
    verify`` sets it; 10 if unset), never less than the function's default-run budget."""
    text = os.environ.get(BUDGET_VARIABLE, "10")
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(
            f"{BUDGET_VARIABLE}={text!r}: give CPU seconds per condition, e.g. 10"
        ) from None
    return max(seconds, default)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_crosshair_with_the_full_budget(name: str) -> None:
    fn, seconds = CONTRACTS[name]
    bad, paths = crosshair_check(fn, full_budget(seconds))
    assert bad == []
    assert paths > 0
