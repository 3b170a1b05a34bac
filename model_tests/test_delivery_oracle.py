"""The delivery checker (`delivery.check_delivery`) against the brute-force oracle
(`delivery_oracle`, written apart from it from docs/checking.md's definitions) on random
consumer-group histories (`deliverygen`): the same anomalies, counted the same, on every
key, and the same keys whose commit regression cannot be judged (a seek)."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jepsen_py.checker.delivery import check_delivery
from jepsen_py.checker.delivery_oracle import oracle
from jepsen_py.checker.deliverygen import GroupWorkload, generate_group
from jepsen_py.checker.taxonomy import AT_LEAST_ONCE, DELIVERY_ANOMALIES
from jepsen_py.history.op import Op


def checker_counts(ops: list[Op]) -> dict[str, dict[str, int]]:
    out = {}
    for key in check_delivery(ops, AT_LEAST_ONCE):
        counts = dict(key.anomalies.counts)
        counts["seek"] = sum("seek" in p.reason for p in key.anomalies.problems)
        out[key.key] = counts
    return out


workloads = st.builds(
    GroupWorkload,
    keys=st.integers(1, 3),
    producers=st.integers(1, 2),
    members=st.integers(1, 3),
    steps=st.integers(5, 100),
    p_fault=st.sampled_from([0.0, 0.1, 0.25]),
    p_final=st.sampled_from([0.0, 0.7, 1.0]),
)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), workload=workloads)
def test_checker_and_oracle_find_the_same_delivery_anomalies(
    seed: int, workload: GroupWorkload
) -> None:
    ops = generate_group(random.Random(seed), workload)
    expected = oracle(ops)
    found = checker_counts(ops)
    assert set(found) <= set(expected)
    for key, counts in expected.items():
        if key not in found:  # a key only named by a fetch: no event the checker keeps
            assert not any(counts.values()), (key, counts)
            continue
        assert found[key] == counts, key


def test_the_generated_histories_show_every_anomaly_and_explanation() -> None:
    """The comparison above is not vacuous: over 200 seeds every anomaly occurs, and so do
    keys with none."""
    seen: Counter[str] = Counter()
    clean = 0
    for seed in range(200):
        ops = generate_group(random.Random(seed), GroupWorkload(p_fault=0.1, steps=80))
        for counts in oracle(ops).values():
            seen.update(name for name, n in counts.items() if n)
            clean += not any(counts.values())
    assert set(DELIVERY_ANOMALIES) | {"seek"} <= set(seen), seen
    assert clean > 0


def test_checker_and_oracle_agree_on_a_thousand_seeded_histories() -> None:
    """A fixed sweep beside Hypothesis's draws: rarer interleavings (a commit that ended
    info yet took effect, seen only by a later fetch) need many histories to show up."""
    for seed in range(1000):
        ops = generate_group(random.Random(seed), GroupWorkload(p_fault=0.1, steps=80))
        expected = oracle(ops)
        for key, counts in checker_counts(ops).items():
            assert counts == expected[key], (seed, key)


@pytest.mark.slow
def test_checker_and_oracle_agree_on_ten_thousand_seeded_histories() -> None:
    for seed in range(10_000):
        w = GroupWorkload(keys=1 + seed % 3, members=1 + seed % 4, p_fault=0.15, steps=100)
        ops = generate_group(random.Random(seed), w)
        expected = oracle(ops)
        for key, counts in checker_counts(ops).items():
            assert counts == expected[key], (seed, key)
