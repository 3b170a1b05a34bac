"""``impl.group.run``: seeded runs of one consumer group under consumer and coordinator faults.

Outcomes (issue 18): in every generation each partition has exactly one owner once the
rebalance completes, and no zombie's action (an OffsetCommit from a generation the group no
longer has, or for a partition the member no longer owns) is accepted; with the coordinator's
generation check off (``no_generation_check``) the run finds a zombie's commit accepted and
a partition committed by two members in one generation within a few seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from impl.group.run import GroupRun, GroupRunConfig

BUG = GroupRunConfig(bugs={"no_generation_check"})


def test_same_seed_same_history() -> None:
    a, b = GroupRun(GroupRunConfig(), 7), GroupRun(GroupRunConfig(), 7)
    assert a.run().to_json() == b.run().to_json()
    assert a.history == b.history and len(a.history) > 20
    assert GroupRun(GroupRunConfig(), 8).run().to_json() != a.outcome.to_json()


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_one_owner_per_partition_and_no_zombie_commit(seed: int) -> None:
    outcome = GroupRun(GroupRunConfig(), seed).run()
    assert outcome.ok, outcome.violations
    assert outcome.generations >= 5 and outcome.accepted_commits > 0
    # the fences were exercised, not idle
    assert outcome.errors.get("REBALANCE_IN_PROGRESS", 0) > 0


def test_the_bug_is_found_within_a_few_seeds() -> None:
    found = [s for s in range(1, 11) if not GroupRun(BUG, s).run().ok]
    assert found[:2] == [2, 8], found
    violations = GroupRun(BUG, 2).run().violations  # both consequences
    assert any(v.startswith("zombie commit accepted") for v in violations)
    assert any(v.startswith("double ownership") for v in violations)


def test_a_restarted_consumer_never_reads_what_was_sent_to_its_previous_process() -> None:
    """Answers on their way to a consumer that is killed and restarted before they arrive
    went to the old process's connections: the new one never reads them."""
    runs = [GroupRun(GroupRunConfig(faults=("kill-consumer",)), s) for s in (1, 2, 3)]
    assert all(run.run().ok for run in runs)
    assert [run.lost_with_process for run in runs] == [1, 0, 1]


def test_without_faults_the_group_settles_into_one_generation() -> None:
    run = GroupRun(GroupRunConfig(faults=(), slow_probability=0.0), 1)
    outcome = run.run()
    assert outcome.ok and outcome.generations in (1, 2, 3)
    owned = sorted(tp for m in run.members.values() for tp in m.owned)
    assert owned == [("t", p) for p in range(6)]


def test_the_history_records_subscribe_and_assignment_changes() -> None:
    run = GroupRun(GroupRunConfig(), 2)
    run.run()
    fs = {op["f"] for op in run.history if op["process"] != "nemesis"}
    assert fs == {"subscribe", "assign"}
    assigns = [op for op in run.history if op["f"] == "assign" and op["type"] == "ok"]
    assert all("generation" in op and "member" in op for op in assigns)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 51))
def test_fifty_seeds_under_all_group_faults(seed: int) -> None:
    outcome = GroupRun(GroupRunConfig(), seed).run()
    assert outcome.ok, (seed, outcome.violations)


def test_the_checkers_reader_takes_the_group_history_without_a_rejection(tmp_path: Path) -> None:
    import json

    from jepsen_py.history.jsonl import read_jsonl
    from jepsen_py.history.validate import Rejections, validate

    run = GroupRun(GroupRunConfig(), 2)
    run.run()
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(op) + "\n" for op in run.history))
    rejections = Rejections(str(path))
    ops = list(validate(read_jsonl(path, rejections), rejections))
    assert len(ops) == len(run.history) and not list(rejections)
