"""The fingerprint search on disk (``spec.spill``, ``kmodel check --fingerprints --spill``):
the same search as in memory, its levels and seen set in files that are gone afterwards."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from spec.fingerprints import check_fingerprints
from spec.replication import Params, Replication
from spec.spill import SpillDirectory, SpillLevel, check_spilled


@pytest.mark.parametrize("count", [0, 5, 4096, 10_001])
def test_a_level_reads_back_what_was_written_in_order_then_its_file_is_gone(
    tmp_path: Path, count: int
) -> None:
    level = SpillLevel(SpillDirectory(tmp_path), chunk=4096)
    items = [((i, frozenset({i % 3})), i * 7) for i in range(count)]
    for item in items:
        level.append(item)
    assert len(level) == count
    assert list(level) == items
    assert not any(tmp_path.iterdir()), "read once, then deleted"


@pytest.mark.parametrize(
    ("truncation", "replicas"), [("kip320", 2), ("kip101", 2), ("high_watermark", 3)]
)
def test_the_spilled_search_is_the_fingerprint_search(
    tmp_path: Path, truncation: str, replicas: int
) -> None:
    """Same distinct states, transitions, depth, coverage, witnesses, and the same shortest
    counterexample where the protocol variant has one; nothing left on disk."""
    spec = Replication(Params(replicas=replicas, truncation=truncation))
    memory = check_fingerprints(spec)
    disk = check_spilled(spec, tmp_path / "spill")
    assert disk.stats.distinct_states == memory.stats.distinct_states
    assert disk.stats.states_generated == memory.stats.states_generated
    assert disk.stats.depth == memory.stats.depth
    assert disk.stats.fired == memory.stats.fired
    assert disk.sometimes == memory.sometimes
    assert (disk.violation is None) == (memory.violation is None)
    if memory.violation is not None:
        assert disk.violation is not None
        assert disk.violation.trace == memory.violation.trace
    assert not any((tmp_path / "spill").iterdir())


def test_kmodel_check_spill(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["check", "replication", "--replicas", "2", "--fingerprints", "--json"]
    plain = runner.invoke(main, args)
    spilled = runner.invoke(main, [*args, "--spill", str(tmp_path / "d")])
    assert plain.exit_code == spilled.exit_code == 0, spilled.output
    a, b = (orjson.loads(r.stdout.strip().splitlines()[-1]) for r in (plain, spilled))
    assert a["distinct_states"] == b["distinct_states"] > 0
    refused = runner.invoke(main, ["check", "replication", "--spill", str(tmp_path)])
    assert refused.exit_code == 2 and "--fingerprints" in refused.output
    refused = runner.invoke(
        main, ["check", "replication", "--fingerprints", "--workers", "2", "--spill", "x"]
    )
    assert refused.exit_code == 2 and "one process" in refused.output
