"""``kmodel demo``, the main job: every stage runs, shows what it should, and writes its
results where the summary says; and a stage's expectation can fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from jepsen_py.demo import groups as demo_groups
from jepsen_py.demo import liveness as demo_liveness
from jepsen_py.demo.faults import DemoRun, outcome_row
from jepsen_py.runner import run_test
from jepsen_py.scenarios import jepsen_2013
from spec.replication import Params, Replication


@pytest.mark.spark
def test_demo_runs_the_whole_story_and_writes_its_results(tmp_path: Path, spark: Any) -> None:
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path), "--time-limit", "10"])
    assert result.exit_code == 0, result.output
    stages = ("Fault injection", "verified on Spark", "Parity", "shortest counterexamples")
    for stage in (*stages, "brain split", "Liveness", "Consumer groups"):
        assert stage in result.stdout
    summary = orjson.loads((tmp_path / "summary.json").read_bytes())
    assert summary["runs_as_expected"] == summary["runs_total"] == 5
    assert summary["spark_agrees"] == summary["spark_total"] == 5
    assert summary["parity_matches"] == summary["parity_total"] == 5
    assert summary["outcomes_as_expected"] == summary["outcomes_total"]
    assert summary["brain_split_as_expected"] == summary["brain_split_total"] == 3
    assert summary["liveness_as_expected"] == summary["liveness_total"] == 5
    assert summary["groups_as_expected"] == summary["groups_total"] == 4
    assert (tmp_path / "traces" / "follower-stops-fetching.txt").is_file()
    unclean = next(r for r in summary["runs"] if r["name"] == "jepsen-2013-unclean")
    assert unclean["lost_acknowledged_writes"] > 0 and unclean["verdict"] == "invalid"
    standing = next(r for r in summary["runs"] if r["name"] == "last-replica-standing")
    assert standing["loss_mechanisms"] == ["last-replica-standing"]
    assert "lost by: last-replica-standing" in result.stdout
    fixed = next(r for r in summary["runs"] if r["name"] == "last-replica-standing-elr")
    assert fixed["lost_acknowledged_writes"] == 0 and fixed["as_expected"], "KIP-966's fix"
    for run in summary["runs"]:
        store = Path(run["store"])
        for name in ("history.jsonl", "results.json", "timeline.html", "latency.png", "rate.png"):
            assert (store / name).is_file(), (store, name)
        assert run["timeline"] in result.stdout
    assert Path(summary["spark"]["verdicts"]).exists()
    assert (tmp_path / "spark" / "verdicts.json").exists()  # a directory of JSON parts
    assert (tmp_path / "traces" / "kip101-acked-write-lost.txt").is_file()


def test_a_run_that_loses_writes_where_none_may_be_lost_is_unexpected(tmp_path: Path) -> None:
    config = jepsen_2013(unclean=True)
    outcome = run_test(config, 1, store_root=tmp_path, reports=False)
    mechanism = "unclean-leader-election"
    assert outcome_row(DemoRun("expects loss", config, 1, True, mechanism), outcome)["as_expected"]
    assert not outcome_row(DemoRun("expects none", config, 1, expect_loss=False), outcome)[
        "as_expected"
    ]
    other = DemoRun("another mechanism", config, 1, True, "last-replica-standing")
    assert not outcome_row(other, outcome)["as_expected"], (
        "a loss explained otherwise is unexpected"
    )


def test_the_brain_split_stage_shows_each_fence_at_work() -> None:
    from jepsen_py.demo.brain_split import brain_split_rows

    rows = {row["title"]: row for row in brain_split_rows(lambda _: None)}
    assert all(row["as_expected"] for row in rows.values()), rows
    assert rows["both fences on"]["stale_controller_rejected"] > 0
    assert rows["--bug accept_stale_controller_epoch"]["stale_controller_applied"] > 0
    assert rows["--bug unconditional_write"]["zombie_writes"] > 0


def test_a_liveness_case_that_does_not_fail_as_expected_is_unexpected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = demo_liveness.LivenessCase(
        "wrong",
        "expects a lasso where none is",
        Replication(Params()),
        "LeaderCommitsItsLog",
        "kmodel check replication",
    )
    monkeypatch.setattr(demo_liveness, "cases", lambda: (wrong,))
    (row,) = demo_liveness.liveness_rows(tmp_path)
    assert row["found"] == "holds" and not row["as_expected"]


def test_the_group_stage_fences_the_zombie_and_a_wrong_expectation_is_unexpected(
    tmp_path: Path,
) -> None:
    rows = demo_groups.group_rows(tmp_path)
    assert [(r["ok"], r["as_expected"]) for r in rows] == [(True, True)] * 2 + [(False, True)] * 2
    fenced, before, _, early = rows
    assert fenced["delivery"]["counts"].get("lost", 0) == 0, "at least once: nothing lost"
    assert before["delivery"]["counts"].get("lost", 0) > 0, "at most once: a kill loses"
    assert early["delivery"]["violations"] == ["commit-regression"], early["delivery"]
    wrong = demo_groups.GroupCase(
        "expects-valid", "bug expected valid", 2, tuple(rows[2]["bugs"]), True
    )
    no_loss = demo_groups.GroupCase("no-loss", "expects no loss", 2, (), True, "before-process")
    assert not any(r["as_expected"] for r in demo_groups.group_rows(tmp_path, (wrong, no_loss)))
