"""A fault-injection run with retention (``kmodel test --retention-bytes/--retention-ms``):
the checker is told what was deleted on purpose (the polls' ``log_start``), so the run is
VALID, its deleted records are ``deleted-by-retention`` and none is a lost write; and the
same history without the log starts would not be valid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from jepsen_py.checker.verdict import check_keys
from jepsen_py.cli import main
from jepsen_py.history.op import Op
from jepsen_py.runner import TestConfig, run_test
from jepsen_py.runner.config import reproduce_command


def test_a_run_with_aggressive_retention_is_valid_and_reports_what_it_deleted(
    tmp_path: Path,
) -> None:
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "test",
            "--retention-bytes", "1500",
            "--segment-bytes", "600",
            "--nemesis", "kill,partition",
            "--time-limit", "20s",
            "--seed", "3",
            "--store", str(tmp_path),
            "--no-reports",
            "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["verdict"] == "valid"
    history = (tmp_path / "kafka" / "latest" / "history.jsonl").read_text().splitlines()
    ops = [json.loads(line) for line in history]
    starts = [op["value"]["log_start"] for op in ops if op["f"] == "poll" and op["type"] == "ok"]
    assert max(starts) > 0
    results = json.loads((tmp_path / "kafka" / "latest" / "results.json").read_text())
    text = json.dumps(results)
    assert "deleted-by-retention" in text
    assert results["lost_acknowledged_writes"] == 0


@pytest.mark.parametrize(
    ("limits", "flags"),
    [
        ({"retention_bytes": 1500}, "--retention-bytes 1500 --segment-bytes 600"),
        ({"retention_ms": 2000}, "--retention-ms 2000 --segment-bytes 600"),
    ],
)
def test_without_the_log_start_the_same_deletions_would_be_losses(
    tmp_path: Path, limits: dict[str, int], flags: str
) -> None:
    config = TestConfig(
        segment_bytes=600,
        nemesis=("kill",),
        time_limit_ns=20 * 10**9,
        **limits,  # type: ignore[arg-type]
    )
    outcome = run_test(config, 4, store_root=str(tmp_path), reports=False)
    assert outcome.verdict_name == "valid"
    assert outcome.check.anomaly_counts["deleted-by-retention"] > 0
    assert flags in reproduce_command(config, 4)
    stripped = []
    for op in outcome.history:
        value = op.value
        if isinstance(value, dict) and "log_start" in value:
            value = {k: v for k, v in value.items() if k != "log_start"}
        stripped.append(Op(op.index, op.time, op.process, op.type, op.f, op.key, value))
    verdicts = {c.verdict.verdict.name for c in check_keys(stripped)}
    assert verdicts != {"OK"}  # the final read is incomplete, or records are lost


def test_retention_flags_are_refused_for_the_group_workload(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["test", "--workload", "group", "--retention-ms", "5", "--store", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "apply to --workload kafka" in result.output
