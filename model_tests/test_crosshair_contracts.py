"""CrossHair contracts on the rules a bug would matter in, each checked within a budget.

``spec.proofs.rules`` restates the spec's pure rules (the HW rule, ISR expansion, the
truncation offsets) as functions with PEP 316 contracts. Here: (1) each agrees with the
spec's own computation on every reachable state of small configurations, so the contracts
are about the rules the spec uses; (2) CrossHair looks for a contract violation in each,
with a small per-condition budget, and finds none; (3) on a deliberately broken copy, it
does find one; (4) ``diffbehavior`` compares two formulations of a rule. The
implementation's partitioner, record-batch encoding, leader-epoch cache and sparse offset
index get the same treatment through the contract-carrying harnesses of ``impl.contracts``
(``spec`` may not import ``impl``); the consumer-group assignors (``impl.assignors``) carry
their contracts themselves, and are also checked through a small-group harness that
CrossHair searches far better. The catalogue, the controls and the runner are
``impl.contract_check``'s, which ``benchmarks/crosshair_paths.py`` runs too.

Budgets are CPU seconds per condition. The default run gives each function a fraction of a
second to a few seconds (``CONTRACTS``); ``test_crosshair_with_the_full_budget`` (slow)
gives every contract-carrying function ``KMODEL_CROSSHAIR_BUDGET`` seconds per condition
(default 10), which ``make verify`` sets.
"""

from __future__ import annotations

import itertools
import os

import pytest

from impl.assignors import (
    count_spread,
    owned_by_subscribers,
    owned_exactly_once,
    range_assign,
    round_robin_assign,
)
from impl.contract_check import (
    CONTRACTS,
    RULES,
    crosshair_check,
    crosshair_diff,
    follower_hw_unclamped,
)
from impl.contracts import (
    ASSIGNORS,
    BROKEN_ASSIGNORS,
    IMPL_FUNCTIONS,
    IMPL_LOG,
    equal_group,
    group_of,
    index_lookup,
    index_lookup_bisect_left,
    range_assign_forgetting_the_remainder,
    range_assign_with_the_remainder_to_the_last,
    round_robin_ignoring_subscriptions,
    round_robin_restarting_per_topic,
)
from impl.fetcher import fenced
from impl.log.checkpoint import EpochEntry, TopicPartition
from impl.log.leader_epoch import LeaderEpochCache
from spec.explore import reachable_states
from spec.proofs import rules
from spec.replication import Params, Replication, State

# A must-find search stops at its first violation (``first_only``) or after a bound on its
# paths (``max_iterations``); its seconds are a ceiling, reached only when it fails. Each
# control below is found in a few seconds at most on an idle machine, so that a loaded one,
# slower several times over, still finds it well within the ceiling.
CEILING = 60.0

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


def test_the_exchange_asks_again_when_the_follower_lacks_the_leaders_epoch() -> None:
    """CrossHair's ``diffbehavior`` (the slow test below) found this pair: the follower
    holds epochs 0 and 2, the leader only epoch 1. Asked about epoch 2, the leader answers
    epoch 1, ending at 1; the follower has no epoch 1, so the logs may part where its epoch
    0 ends: it cuts there and asks about epoch 0, which the leader lacks, and truncates to
    0, where the records differ. One round alone stopped at 1 and kept a diverging record."""
    follower, leader = [(0, 5), (2, 6)], [(1, 7)]
    assert rules.log_matching(follower, leader)
    assert rules.truncation_offset_kip279(follower, leader) == 0
    assert rules.truncation_by_epoch_exchange(follower, leader) == 0


@pytest.mark.parametrize("truncation", ["high_watermark", "kip320"])
def test_hw_rules_agree_with_the_spec(truncation: str) -> None:
    """The follower's HW after a fetch, and the leader's HW advance, as the spec computes
    them in every reachable state."""
    params = PUBLISHED[truncation]
    spec = Replication(params)
    epoch_fenced = fenced(truncation)
    fetch = spec.follower_fetch_fenced if epoch_fenced else spec.follower_fetch
    advance = spec.leader_advance_hw_fenced if epoch_fenced else spec.leader_advance_hw
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
                spec.following_epoch(s, leader, m) if epoch_fenced else s.rep(m).leader == leader
                for m in members
            ]
            size = lrep.leo if epoch_fenced else params.log_size
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


@pytest.mark.parametrize("name", sorted(RULES))
def test_crosshair_finds_no_contract_violation_in_the_rules(name: str) -> None:
    fn, seconds = RULES[name]
    bad, paths = crosshair_check(fn, seconds)
    assert bad == []
    assert paths > 0


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
    bad, _ = crosshair_check(follower_hw_unclamped, CEILING, first_only=True)
    assert bad and "false when calling follower_hw_unclamped" in bad[0]


@pytest.mark.slow
def test_crosshair_finds_the_violation_in_a_broken_truncation_rule() -> None:
    bad, _ = crosshair_check(truncation_to_common_prefix_broken, 2.0)
    assert bad


def test_diffbehavior_tells_the_broken_hw_rule_from_the_spec_rule() -> None:
    diffs = crosshair_diff(rules.follower_hw, follower_hw_unclamped, CEILING, max_iterations=30)
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


@pytest.mark.parametrize("name", sorted({**IMPL_FUNCTIONS, **IMPL_LOG}))
def test_crosshair_finds_no_contract_violation_in_the_implementation(name: str) -> None:
    fn, seconds = {**IMPL_FUNCTIONS, **IMPL_LOG}[name]
    bad, paths = crosshair_check(fn, seconds)
    assert bad == []
    assert paths > 0


def test_crosshair_finds_the_violation_in_a_broken_index_lookup() -> None:
    bad, _ = crosshair_check(index_lookup_bisect_left, CEILING, first_only=True)
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
    """Found within 60 paths (about 1.5 CPU seconds); bounded by paths, not seconds, so that
    a loaded machine explores the same ones."""
    diffs = crosshair_diff(spec_epoch_end, impl_epoch_end_off_by_one, CEILING, max_iterations=150)
    assert diffs, "diffbehavior found no input where the broken cache differs"


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_crosshair_finds_no_contract_violation_in_the_assignors(name: str) -> None:
    fn, seconds = ASSIGNORS[name]
    bad, paths = crosshair_check(fn, seconds)
    assert bad == []
    assert paths > 0


@pytest.mark.parametrize("name", sorted(BROKEN_ASSIGNORS))
def test_crosshair_finds_the_violation_in_a_broken_assignor(name: str) -> None:
    """Each contract checked above, shown able to fail: CrossHair finds a counterexample
    in a broken copy run under the same contract (stopping at the first violated
    condition; found within a few hundred paths, the budget is a ceiling)."""
    broken = BROKEN_ASSIGNORS[name]
    bad, _ = crosshair_check(broken, CEILING, first_only=True)
    assert bad and f"false when calling {broken.__name__}" in bad[0]


def test_the_broken_assignors_fail_on_the_smallest_groups() -> None:
    """What CrossHair finds, by hand, against the correct assignors."""
    partitions, subscriptions = group_of([1], [1, 1])  # one partition, two subscribers
    forgotten = range_assign_forgetting_the_remainder(partitions, subscriptions)
    assert not owned_exactly_once(forgotten, partitions, subscriptions)
    assert owned_exactly_once(range_assign(partitions, subscriptions), partitions, subscriptions)

    partitions, subscriptions = equal_group([5], 3)  # 5 partitions over 3 members
    last = range_assign_with_the_remainder_to_the_last(partitions, subscriptions)
    assert [len(last[m]) for m in sorted(last)] == [1, 1, 3]
    assert [len(tps) for tps in range_assign(partitions, subscriptions).values()] == [2, 2, 1]

    partitions, subscriptions = group_of([2], [1, 0])  # c1 does not subscribe to t0
    dealt = round_robin_ignoring_subscriptions(partitions, subscriptions)
    assert not owned_by_subscribers(dealt, subscriptions)
    assert owned_by_subscribers(round_robin_assign(partitions, subscriptions), subscriptions)

    partitions, subscriptions = equal_group([1, 1], 2)  # two single-partition topics
    skewed = round_robin_restarting_per_topic(partitions, subscriptions)
    assert skewed == {"c0": [TopicPartition("t0", 0), TopicPartition("t1", 0)], "c1": []}
    assert count_spread(skewed, subscriptions, None) == 2
    assert count_spread(round_robin_assign(partitions, subscriptions), subscriptions, None) == 0


# --- every contract, with the full budget (``make verify``) ----------------------------------

BUDGET_VARIABLE = "KMODEL_CROSSHAIR_BUDGET"


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
