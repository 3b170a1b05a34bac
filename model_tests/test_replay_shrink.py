"""Replay and shrinking: a failing run's store directory is reproduced byte for byte, a
changed history is caught, and a failing run shrinks to a smaller run that still fails
the same way (and replays too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from jepsen_py.checker.result import Verdict
from jepsen_py.cli import main
from jepsen_py.generator import SECOND
from jepsen_py.nemesis import ScheduleStep
from jepsen_py.replay import ReplayError, first_anomaly, replay
from jepsen_py.runner import RunOutcome, TestConfig, run_test
from jepsen_py.scenarios import CUT_FOLLOWERS, ISOLATE_LEADER
from jepsen_py.shrink import ShrinkError, anomaly_types, shrink

# The 2013 pattern (``jepsen_py.scenarios``) with a few extra faults that have nothing to do with
# the loss, for the shrinker to throw away.
FAILING = TestConfig(
    name="unclean",
    acks="all",
    min_isr=1,
    unclean=True,
    partitions=1,
    schedule=(
        ScheduleStep(
            500_000_000, "start-delay", {"min_delay_ns": 5_000_000, "max_delay_ns": 20_000_000}
        ),
        ScheduleStep(900_000_000, "stop-delay"),
        ScheduleStep(
            1 * SECOND, "start-partition", {"shape": "isr-shrink", "grudge": CUT_FOLLOWERS}
        ),
        ScheduleStep(
            8 * SECOND, "start-partition", {"shape": "leader-cut", "grudge": ISOLATE_LEADER}
        ),
        ScheduleStep(10 * SECOND, "pause", {"node": "b3"}),
        ScheduleStep(11 * SECOND, "resume"),
        ScheduleStep(15 * SECOND, "stop-partition"),
    ),
    time_limit_ns=16 * SECOND,
    recovery_ns=8 * SECOND,
    rate=30,
    concurrency=2,
    replica_lag_time_max_ns=4 * SECOND,
)


GRAVEST = "inconsistent-offsets"
"""The gravest anomaly the failing run's history shows: the writes b1 acknowledged alone
were read by consumers, then replaced at the same offsets by the unclean leader's (so the
complete final read does not return them either: ``lost-write``)."""

LOSS = "lost-acknowledged-write:unclean-leader-election"
"""What matters about the failing run, and what the shrinker keeps: it lost acknowledged
writes, and the unclean election explains the loss."""


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> RunOutcome:
    outcome = run_test(FAILING, 2, store_root=tmp_path_factory.mktemp("store"), reports=False)
    assert outcome.check.lost_acknowledged_writes > 0
    types = anomaly_types(outcome.check)
    assert types[0] == LOSS, outcome.check.loss_explanations
    assert types[1] == GRAVEST, outcome.check.violations
    return outcome


def test_replaying_a_failing_run_reproduces_its_history_exactly(failing: RunOutcome) -> None:
    assert failing.run_dir is not None
    result = replay(failing.run_dir)
    assert result.identical and result.replayed_hash == failing.history_hash
    assert result.history == failing.history
    assert result.verdict is Verdict.ILLEGAL
    assert result.anomaly is not None and result.anomaly.name == GRAVEST
    witnessed = [event for event in result.trace if event.witness]
    assert witnessed, "the trace shows the witnessing ops"
    text = "\n".join(event.text for event in result.trace)
    assert "controller: leader b2" in text, "the unclean election is in the trace"
    assert "truncated its log" in text, "and the old leader truncating its writes away"


def test_replay_notices_a_history_that_differs(failing: RunOutcome, tmp_path: Path) -> None:
    assert failing.run_dir is not None
    copy = tmp_path / "unclean" / failing.run_dir.name
    copy.mkdir(parents=True)
    for name in ("test.json", "history.jsonl", "results.json"):
        (copy / name).write_bytes((failing.run_dir / name).read_bytes())
    lines = (copy / "history.jsonl").read_text().splitlines(keepends=True)
    lines[5] = lines[5].replace('"time":', '"time":1', 1)
    (copy / "history.jsonl").write_text("".join(lines))
    result = replay(copy)
    assert not result.identical and result.verdict is Verdict.UNKNOWN
    assert result.first_difference is not None and result.first_difference.startswith("line 6:")


def test_replay_refuses_what_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match="no such directory"):
        replay(tmp_path / "nothing")


def test_shrinking_keeps_the_loss_and_its_mechanism_and_makes_the_run_smaller(
    failing: RunOutcome,
) -> None:
    assert failing.run_dir is not None
    result = shrink(failing.run_dir, max_runs=30, reports=False)
    assert result.target == LOSS
    assert result.after.history_ops < result.before.history_ops
    assert result.after.faults < result.before.faults
    assert result.factor > 2
    assert result.outcome.check.lost_acknowledged_writes > 0
    mechanisms = set(result.outcome.check.loss_mechanisms)
    assert mechanisms == {"unclean-leader-election"}
    assert (
        result.outcome.run_dir is not None
        and result.outcome.run_dir.parent.name == "unclean-shrunk"
    )
    kept = {s.f for s in result.config.schedule or ()}
    assert "start-partition" in kept and "start-delay" not in kept
    again = replay(result.outcome.run_dir)
    assert again.identical and again.anomaly is not None


def test_shrinking_a_run_that_passed_is_refused(tmp_path: Path) -> None:
    config = TestConfig(nemesis=(), time_limit_ns=3 * SECOND, recovery_ns=2 * SECOND)
    outcome = run_test(config, 1, store_root=tmp_path, reports=False)
    assert outcome.verdict is Verdict.OK and outcome.run_dir is not None
    with pytest.raises(ShrinkError, match="nothing to shrink"):
        shrink(outcome.run_dir)


def test_first_anomaly_picks_the_gravest(failing: RunOutcome) -> None:
    anomaly = first_anomaly(failing.history)
    assert anomaly is not None and anomaly.name == GRAVEST


def test_kmodel_replay_and_shrink(failing: RunOutcome, tmp_path: Path) -> None:
    assert failing.run_dir is not None
    result = CliRunner().invoke(main, ["replay", str(failing.run_dir)])
    assert result.exit_code == 1, result.output
    assert "history: identical" in result.output and "<- witness" in result.output
    result = CliRunner().invoke(main, ["replay", str(failing.run_dir), "--json"])
    payload = json.loads(result.output.strip().splitlines()[-1])
    assert payload["identical"] and payload["anomaly"] == GRAVEST
    result = CliRunner().invoke(
        main,
        [
            "shrink",
            str(failing.run_dir),
            "--max-runs",
            "3",
            "--no-reports",
            "--store",
            str(tmp_path),
            "--json",
        ],
    )
    assert result.exit_code == 1, result.output
    payload = json.loads(result.output.strip().splitlines()[-1])
    assert payload["anomaly"] == LOSS and payload["runs"] <= 3
    assert payload["after"]["history_ops"] <= payload["before"]["history_ops"]
    assert Path(payload["shrunk"]).is_dir() and payload["command"].startswith("kmodel replay")
    result = CliRunner().invoke(main, ["replay", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "kmodel: error" in result.output
