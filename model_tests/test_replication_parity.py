"""Parity with the TLA+ model of replication Kafka's engineers published in 2018.

TLC, run on that TLA+ specification (github.com/hachikuji/kafka-specification; breadth-first,
no symmetry, LOG_SIZE = MAX_RECORDS = MAX_EPOCH = 2), gives the results pinned here; in the
``published-2018`` configuration our checker must find the same numbers. A difference would
mean the two models differ, which must be found, never tuned away.
"""

from __future__ import annotations

import pytest

from spec.explore import check, reachable_states
from spec.replication import Params, Replication

# (replicas, truncation) -> TLC's result: distinct states when StrongIsr holds, or the depth
# of the shortest StrongIsr counterexample.
HOLDS = {(2, "kip279"): 9_027, (2, "kip320"): 5_973}
VIOLATED_AT = {
    (2, "high_watermark"): 10,
    (2, "kip101"): 12,
    (3, "high_watermark"): 9,
    (3, "kip101"): 11,
    (3, "kip279"): 11,
}


@pytest.mark.parametrize(("replicas", "truncation"), sorted(HOLDS))
def test_distinct_state_count_matches_tlc(replicas: int, truncation: str) -> None:
    spec = Replication(Params(replicas=replicas, truncation=truncation))
    result = check(spec, invariants=["StrongIsr", "WeakIsr"])
    assert result.violation is None and result.complete
    assert result.stats.distinct_states == HOLDS[(replicas, truncation)]
    assert result.missing_sometimes == []
    assert result.warnings == ()


@pytest.mark.parametrize(("replicas", "truncation"), sorted(VIOLATED_AT))
def test_shortest_counterexample_matches_tlc(replicas: int, truncation: str) -> None:
    spec = Replication(Params(replicas=replicas, truncation=truncation))
    result = check(spec, invariants=["StrongIsr"])
    assert result.violation is not None and result.violation.name == "StrongIsr"
    assert result.violation.depth == VIOLATED_AT[(replicas, truncation)]


def test_symmetry_keeps_the_shortest_counterexample() -> None:
    spec = Replication(Params(replicas=3, truncation="kip279"))
    result = check(spec, invariants=["StrongIsr"], symmetry=True)
    assert result.violation is not None and result.violation.depth == 11
    factor = result.stats.symmetry_factor
    assert factor is not None and 1 < factor <= 6


def test_symmetry_reduction_is_exact_on_a_complete_search() -> None:
    spec = Replication(Params(replicas=2, truncation="kip320"))
    reduced = check(spec, invariants=["StrongIsr"], symmetry=True)
    assert reduced.complete and reduced.stats.unreduced_states == 5_973
    assert reduced.stats.distinct_states < 5_973


@pytest.mark.slow
def test_kip320_holds_with_three_replicas() -> None:
    spec = Replication(Params(replicas=3, truncation="kip320"))
    result = check(spec, invariants=["StrongIsr"], symmetry=True)
    assert result.violation is None and result.complete


@pytest.mark.parametrize(
    "params",
    [
        Params(replicas=3, truncation="kip279", log_size=1, max_records=1, max_epoch=1),
        Params(
            replicas=3,
            model="extended",
            truncation="kip320",
            max_crashes=1,
            log_size=1,
            max_records=1,
            max_epoch=1,
        ),
    ],
    ids=["published", "extended"],
)
def test_fast_canonical_form_agrees_with_the_definition(params: Params) -> None:
    from spec.framework import Spec

    spec = Replication(params)
    for s in reachable_states(spec, 3_000):
        canonical = spec.canonical(s)
        images = {spec.permute(s, p) for p in spec.symmetry_permutations()}
        assert canonical in images
        for image in images:
            assert spec.canonical(image) == canonical
        assert spec.orbit_size(s) == Spec.orbit_size(spec, s) == len(images)
