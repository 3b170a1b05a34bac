"""The fingerprint search (``spec.fingerprints``) is the same breadth-first search as
``spec.explore.check``: the same counts, coverage, depth, counterexamples and witnesses, with
16 bytes a state in its seen set."""

from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from spec.controller import Controller
from spec.controller import Params as ControllerParams
from spec.explore import CheckResult, check
from spec.fingerprints import SeenSet, check_fingerprints, collision_probability
from spec.framework import Spec
from spec.replication import Params, Replication

CONFIGS: dict[str, Spec] = {
    "kip320": Replication(Params()),
    "kip279": Replication(Params(truncation="kip279")),
    "high_watermark (violated)": Replication(Params(truncation="high_watermark")),
    "extended acks=1 (violated)": Replication(Params(model="extended", acks="1", max_crashes=1)),
    "controller unconditional_write (violated)": Controller(
        ControllerParams(bugs=frozenset({"unconditional_write"}))
    ),
    "replication accept_stale_epoch (transition)": Replication(
        Params(bugs=frozenset({"accept_stale_epoch"}))
    ),
}


def same_search(a: CheckResult, b: CheckResult) -> None:
    for field in (
        "distinct_states",
        "states_generated",
        "depth",
        "fired",
        "new_states",
        "unreduced_states",
    ):
        assert getattr(a.stats, field) == getattr(b.stats, field), field
    assert a.complete == b.complete
    assert (a.violation is None) == (b.violation is None)
    if a.violation is not None and b.violation is not None:
        assert (a.violation.kind, a.violation.name) == (b.violation.kind, b.violation.name)
        assert a.violation.trace == b.violation.trace
    assert a.sometimes == b.sometimes
    assert a.warnings == b.warnings


@pytest.mark.parametrize("symmetry", [False, True], ids=["plain", "symmetry"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_same_search_as_check(name: str, symmetry: bool) -> None:
    spec = CONFIGS[name]
    fp = check_fingerprints(spec, symmetry=symmetry)
    same_search(check(spec, symmetry=symmetry), fp)
    assert fp.stats.seen_bytes == 16 * fp.stats.distinct_states


def test_budgets_stop_it_as_they_stop_check() -> None:
    spec = CONFIGS["kip320"]
    same_search(check(spec, max_states=1_000), check_fingerprints(spec, max_states=1_000))
    same_search(check(spec, max_depth=6), check_fingerprints(spec, max_depth=6))


def test_symmetry_without_the_unreduced_count() -> None:
    spec = CONFIGS["kip320"]
    fast = check_fingerprints(spec, symmetry=True, count_unreduced=False)
    full = check_fingerprints(spec, symmetry=True)
    assert fast.stats.unreduced_states is None and full.stats.unreduced_states == 5_973
    assert fast.stats.distinct_states == full.stats.distinct_states == 2_987


def test_seen_set_merges_levels_and_keeps_parents() -> None:
    seen = SeenSet()
    seen.add(50, 50)
    seen.close_level()
    for fp, parent in ((7, 50), (-3, 50), (2**62, 7)):
        seen.add(fp, parent)
    assert 7 in seen and 2**62 in seen  # before the merge
    seen.close_level()
    assert list(seen.keys) == sorted([50, 7, -3, 2**62])
    assert seen.parent(2**62) == 7 and seen.parent(50) == 50
    assert 8 not in seen and 2**63 - 1 not in seen and -(2**63) not in seen


def test_collision_probability_is_tlcs_estimate() -> None:
    assert collision_probability(1_000, 1_000) == 0.0
    assert collision_probability(2**20, 2**20 + 2**30) == pytest.approx(2.0**50 / 2.0**64)


def test_cli_reports_the_seen_set_and_refuses_what_it_cannot_do() -> None:
    result = CliRunner().invoke(main, ["check", "replication", "--fingerprints", "--json"])
    assert result.exit_code == 0, result.output
    payload = orjson.loads(result.output.strip().splitlines()[-1])
    assert payload["distinct_states"] == 5_973
    assert payload["seen_bytes"] == 16 * 5_973
    assert 0 < payload["collision_probability"] < 1e-9
    refused = CliRunner().invoke(main, ["check", "replication", "--fingerprints", "--simulate"])
    assert refused.exit_code == 2 and "--fingerprints" in refused.output


@pytest.mark.slow
def test_the_published_three_replica_model_counts_the_same() -> None:
    spec = Replication(Params(replicas=3))
    a = check_fingerprints(spec)
    assert a.violation is None and a.stats.distinct_states == 737_794
    same_search(check(spec), a)
