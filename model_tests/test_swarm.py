"""The swarm (``kmodel test --runs N``): coverage of each run, steering, ``swarm.parquet``,
and the Spark engine giving the local engine's answers seed for seed."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from impl.abstraction import spec_params
from impl.cluster import ClusterConfig
from impl.timeline import Ack, Crash, Election, IsrChange, Recovery, Truncation
from jepsen_py.cli import main
from jepsen_py.generator import SECOND
from jepsen_py.history.op import Op
from jepsen_py.runner.config import TestConfig, swarm_config, swarm_offered
from jepsen_py.runner.coverage import (
    ACTION_EVENTS,
    SITUATIONS,
    Coverage,
    coverage_of,
    coverage_table,
    possible,
)
from jepsen_py.runner.swarm import (
    P_MAX,
    P_MIN,
    PARQUET_FIELDS,
    Steering,
    SwarmPlan,
    pace_intervals,
    rounds,
    run_member,
)
from spec.replication import Replication

SHORT = TestConfig(
    nemesis=("partition", "kill", "pause", "partition-leader", "kill-leader"),
    time_limit_ns=4 * SECOND,
    recovery_ns=4 * SECOND,
)


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def situations(config: TestConfig, events, history=(), controller=None) -> set[str]:
    return set(coverage_of(config, events, list(history), controller or {}).situations)


def test_an_unclean_election_to_an_isr_of_one_is_reported_with_its_spec_action() -> None:
    events = [
        Election(0, "t", 0, 0, 1, (1, 2, 3), (1, 2, 3)),
        Election(5, "t", 0, 1, 3, (3,), (1,)),
    ]
    cov = coverage_of(TestConfig(unclean=True), events, [], {})
    assert {"unclean-election", "elected-alone", "isr=1", "isr=3", "leader-change"} <= set(
        cov.situations
    )
    assert "unclean_elect" in cov.actions and "controller_elect" in cov.actions
    assert "leaderless" not in cov.situations


def test_a_clean_run_reaches_no_unclean_situation() -> None:
    events = [Election(0, "t", 0, 0, 1, (1, 2, 3), (1, 2, 3))]
    assert situations(TestConfig(), events) == {"isr=3"}


def test_acks_are_judged_against_the_isr_of_their_moment() -> None:
    events = [
        Election(0, "t", 0, 0, 1, (1, 2, 3), (1, 2, 3)),
        Ack(1, 1, "t", 0, 0, 0, 1),
        IsrChange(2, "t", 0, 0, 1, (1, 2), (1, 2, 3)),
        Ack(3, 1, "t", 0, 0, 1, 1),
    ]
    found = situations(TestConfig(min_isr=2), events)
    assert "ack-at-min-isr" in found and "isr-shrink" in found
    assert "ack-below-min-isr" not in found and "ack-isr=1" not in found
    one = [*events[:3], IsrChange(4, "t", 0, 0, 1, (1,), (1, 2)), Ack(5, 1, "t", 0, 0, 2, 1)]
    assert {"ack-below-min-isr", "ack-isr=1"} <= situations(TestConfig(min_isr=2), one)


def test_truncating_an_acknowledged_offset_of_an_older_epoch_is_its_own_situation() -> None:
    acked = [Ack(1, 1, "t", 0, 0, 0, 4)]
    below = [*acked, Truncation(9, 2, "t", 0, 1, 3, 4, 2)]
    above = [*acked, Truncation(9, 2, "t", 0, 1, 3, 6, 4)]
    assert "acked-truncated" in situations(TestConfig(), below)
    found = situations(TestConfig(), above)
    assert "truncation" in found and "acked-truncated" not in found


def test_a_crash_that_lost_unflushed_records_shows_in_the_recovered_log() -> None:
    events = [
        Crash(1, 2, True, 100, (("t", 0, 10, 8),)),
        Recovery(2, 2, (("t", 0, 7, 7),)),
    ]
    found = coverage_of(TestConfig(), events, [], {})
    assert {"crash", "power-loss", "log-shrunk-by-crash"} <= set(found.situations)
    assert {"crash", "restart"} <= set(found.actions)
    kept = [Crash(1, 2, False, 0, (("t", 0, 10, 8),)), Recovery(2, 2, (("t", 0, 10, 8),))]
    assert not {"power-loss", "log-shrunk-by-crash"} & situations(TestConfig(), kept)


def test_fenced_requests_come_from_the_controllers_figures_and_the_history() -> None:
    history = [
        Op(index=0, time=0, process=0, type="invoke", f="poll", key="t-0", value={}),
        Op(
            index=1, time=1, process=0, type="fail", f="poll", key="t-0",
            value={"error": "FENCED_LEADER_EPOCH"},
        ),
    ]  # fmt: skip
    figures = {"controller_elections": 2, "brain_splits": 1, "stale_controller_rejected": 3}
    found = situations(TestConfig(), [], history, figures)
    assert {"client-fenced-epoch", "controller-failover", "brain-split"} <= found
    assert "stale-controller-fenced" in found and "stale-controller-applied" not in found


def test_the_actions_named_are_the_replication_specs() -> None:
    names = set()
    for truncation in ("high_watermark", "kip101", "kip320"):
        spec = Replication(spec_params(ClusterConfig(unclean=True, truncation=truncation)))
        names |= {d.name for d in spec.actions()}
    assert set(ACTION_EVENTS) - {"become_follower"} <= names
    assert any(n.startswith("become_follower") for n in names)


def test_a_real_run_with_kills_reaches_crashes_and_the_table_counts_runs() -> None:
    plan = SwarmPlan(attrs.evolve(SHORT, nemesis=("kill",)), None, reports=False)
    # The first seed whose drawn run kills a broker (the swarm may draw the targeted kills
    # and a sparse pace: not every short run injects one).
    for seed in range(1, 11):
        _, row = run_member(plan, seed)
        if any(f.startswith("kill") for f in row.faults):
            break
    else:
        raise AssertionError("no run of seeds 1..10 killed a broker")
    assert "crash" in row.coverage.situations and "restart" in row.coverage.actions
    table = dict(coverage_table([row.coverage, Coverage((), ())]))
    assert table["crash"] == 1 and table["unclean-election"] == 0
    assert len(table) == len(SITUATIONS) + len(ACTION_EVENTS)


def test_the_table_leaves_out_what_the_configuration_cannot_reach_unless_reached() -> None:
    safe = possible(TestConfig(brokers=3))
    assert "isr=3" in safe and "isr=4" not in safe and "unclean-election" not in safe
    assert "unclean-election" in possible(TestConfig(unclean=True))
    assert len(possible()) == len(SITUATIONS) + len(ACTION_EVENTS)
    odd = Coverage(("unclean-election",), ("unclean_elect",))
    table = dict(coverage_table([odd], TestConfig()))
    assert table["unclean-election"] == 1 and table["action:unclean_elect"] == 1
    assert "isr=5" not in table


def test_steering_keeps_the_swarm_draw_but_for_the_faults_and_learns_from_novelty() -> None:
    base = TestConfig(nemesis=("partition", "kill", "pause", "loss"))
    flat = Steering.start(base)
    for seed in range(6):
        assert flat.draw(base, seed) == swarm_config(base, seed), "equal weights: plain"
        tilted = Steering({"partition": 9.0, "kill": 0.1, "pause": 0.1, "loss": 0.1})
        plain, steered = swarm_config(base, seed), tilted.draw(base, seed)
        assert attrs.evolve(steered, nemesis=plain.nemesis) == plain, "equal pace weights"
        assert steered.nemesis and set(steered.nemesis) <= set(swarm_offered(base))
        # partition at 0.9: kept whenever the plain draw kept it; the rest at 0.1: only
        # ever kept among what the plain draw kept
        assert "partition" in steered.nemesis or "partition" not in plain.nemesis
        assert set(steered.nemesis) - {"partition"} <= set(plain.nemesis)
        assert steered == tilted.draw(base, seed), "the draw is the seed's"
    assert all(flat.probability(k) == 0.5 for k in base.nemesis)
    assert all(flat.probability(k, 0.1) == pytest.approx(0.1) for k in base.nemesis)
    slow = Steering(flat.weights, paces=(0.0, 0.0, 0.0, 0.0, 1.0))
    assert slow.pace_probabilities()[-1] == pytest.approx(0.6)
    paces = [slow.draw(base, seed).interval_ns for seed in range(40)]
    assert paces.count(max(pace_intervals(base))) > 40 * 0.4
    for seed in range(40):
        plain = swarm_config(base, seed)
        if plain.interval_ns == max(pace_intervals(base)):
            assert slow.draw(base, seed).interval_ns == plain.interval_ns, "kept: weight up"
    plan = SwarmPlan(attrs.evolve(SHORT, nemesis=("kill", "loss")), None, reports=False)
    rows = [run_member(plan, seed)[1] for seed in (1, 2)]
    learnt = Steering.start(plan.base).learn(rows)
    assert sum(learnt.reached.values()) == sum(len(r.coverage.reached) for r in rows)
    credited = {k for r in rows for k, n in r.faults.items() if n}
    assert credited and all(learnt.weights[k] > 0.8 for k in credited)
    assert sum(learnt.paces) > 0.8 * len(learnt.paces), "the runs' paces are credited"
    assert all(P_MIN <= learnt.probability(k) <= P_MAX for k in learnt.weights)
    assert rounds(1, 25, True) == [list(range(1, 11)), list(range(11, 21)), list(range(21, 26))]
    assert rounds(1, 3, False) == [[1, 2, 3]]


def test_kmodel_test_swarm_writes_the_parquet_table_and_the_coverage_table(
    tmp_path: Path,
) -> None:
    args = ["test", "--runs", "2", "--seed", "5", "--time-limit", "3s", "--recovery", "3s"]
    args += ["--nemesis", "kill,pause", "--no-reports", "--store", str(tmp_path), "--steer"]
    code, out = cli(*args)
    assert code in (0, 1), out
    assert "coverage:" in out and "action:become_leader" in out and "2 of 2 runs" in out
    table = pq.read_table(tmp_path / "kafka" / "swarm.parquet")
    assert table.schema.names == list(PARQUET_FIELDS)
    rows = table.to_pylist()
    assert [r["seed"] for r in rows] == [5, 6] and {r["round"] for r in rows} == {0}
    assert all(r["command"].startswith("kmodel test ") for r in rows)
    assert json.loads(rows[0]["config_json"])["time_limit_ns"] == 3 * SECOND
    code, out = cli(*args, "--json")
    payload = json.loads(out.strip().splitlines()[-1])
    assert payload["coverage"]["possible"] == len(possible(TestConfig()))
    assert [r["history_hash"] for r in payload["runs"]] == [r["history_hash"] for r in rows]


def test_swarm_flags_that_cannot_run_are_refused() -> None:
    code, out = cli("test", "--engine", "spark")
    assert code == 2 and "--runs" in out
    code, out = cli("test", "--runs", "2", "--master", "local[2]")
    assert code == 2 and "--engine spark" in out
    code, out = cli("test", "--runs", "2", "--engine", "spark", "--master", "nowhere")
    assert code == 2 and "not a Spark master URL" in out
    code, out = cli("test", "--runs", "2", "--engine", "spark", "--stop-on-failure")
    assert code == 2 and "--stop-on-failure" in out
    code, out = cli("test", "--runs", "2", "--store", "hdfs://nn/x")
    assert code == 2 and "Hadoop URI" in out
    code, out = cli("test", "--runs", "2", "--store", "/proc/not-a-store")
    assert code == 2 and "--store /proc/not-a-store" in out


@pytest.mark.spark
def test_spark_runs_each_seed_as_the_local_engine_does_and_stores_through_hadoop(
    spark, tmp_path: Path
) -> None:
    from jepsen_py.runner.swarm_spark import run_swarm_spark, write_swarm_table

    base = attrs.evolve(SHORT, acks="1", min_isr=1, unclean=True)
    seeds = [[1, 2]]
    local = [run_member(SwarmPlan(base, None, reports=False), s)[1] for s in seeds[0]]
    uri = (tmp_path / "remote").as_uri()
    plan = SwarmPlan(base, uri, reports=False)
    rows = run_swarm_spark(spark, plan, seeds, steer=False)
    assert [r.seed for r in rows] == [1, 2]
    for mine, theirs in zip(local, rows, strict=True):
        assert theirs.history_hash == mine.history_hash
        assert (theirs.verdict, theirs.coverage, theirs.command) == (
            mine.verdict,
            mine.coverage,
            mine.command,
        )
        assert theirs.store is not None and theirs.store.startswith(uri)
        stored = Path(theirs.store.removeprefix("file://"))
        assert (stored / "history.jsonl").is_file() and (stored / "results.json").is_file()
    table = write_swarm_table(spark, rows, uri, "kafka")
    assert pq.read_table(tmp_path / "remote" / "kafka" / "swarm.parquet").num_rows == 2
    assert table.endswith("kafka/swarm.parquet")


@pytest.mark.slow
@pytest.mark.spark
def test_kmodel_test_engine_spark_gives_the_local_engines_verdicts(tmp_path: Path) -> None:
    """Whole processes, as a user runs them: an unsafe configuration (acks=1, unclean
    election), so that invalid verdicts are compared too."""
    common = ["test", "--runs", "4", "--seed", "1", "--time-limit", "8s", "--acks", "1"]
    common += ["--min-isr", "1", "--unclean", "--nemesis", "all", "--no-reports", "--json"]
    verdicts = {}
    for engine in ("local", "spark"):
        code, out = cli(*common, "--engine", engine, "--store", str(tmp_path / engine))
        payload = json.loads(out.strip().splitlines()[-1])
        runs = payload["runs"]
        seen = [(r["seed"], r["verdict"], r["history_hash"], r["situations"]) for r in runs]
        verdicts[engine] = (code, seen)
    assert verdicts["local"] == verdicts["spark"]
