"""The fault injector end to end: the regression suite against Kafka's known replication
bugs, run on the simulated cluster and judged by the history checkers.

Each configuration that must lose data is shown losing it (the checker can fail), and the
protocol Kafka runs today (acks=all, min.insync.replicas=2, clean election, leader-epoch
truncation, idempotent producers) is shown keeping every acknowledged write, once, under
every fault but whole-cluster loss of unflushed data. Counts of seeds are stated in each
test.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner

from jepsen_py.checker.anomalies import find_anomalies
from jepsen_py.checker.kafka_log import check_log
from jepsen_py.checker.result import Verdict
from jepsen_py.cli import main
from jepsen_py.cli.common import verdict_exit_code
from jepsen_py.generator import SECOND
from jepsen_py.history.op import Op
from jepsen_py.nemesis import ALL, TARGETED, ScheduleStep
from jepsen_py.runner import (
    RunOutcome,
    TestConfig,
    check_history,
    format_duration,
    history_file_hash,
    parse_duration,
    reproduce_command,
    run_test,
    swarm_config,
)
from jepsen_py.runner.config import SWARM_PACE, swarm_density
from jepsen_py.runner.drive import REPLICA_READS
from jepsen_py.scenarios import (
    ACKS_1_LEADER_KILLS,
    JEPSEN_2013,
    KAFKA_TODAY,
    PRE_KIP_101,
    jepsen_2013,
)
from jepsen_py.store import load_run

REPO = Path(__file__).resolve().parent.parent


def lost_or_inconsistent(outcome: RunOutcome) -> tuple[int, int]:
    return outcome.check.lost_acknowledged_writes, outcome.check.inconsistent_offsets


def assert_safe(outcome: RunOutcome) -> None:
    check = outcome.check
    assert check.final_reads.complete, f"seed {outcome.seed}: final reads gave up"
    assert lost_or_inconsistent(outcome) == (0, 0), (outcome.seed, check.lost_examples)
    for name in ("lost-write", "unseen", "inconsistent-offsets", "aborted-read"):
        assert name not in check.violations, (outcome.seed, name, outcome.command)


def stale_polls(history: list[Op]) -> list[tuple[Op, Op]]:
    """(invocation, completion) of the polls that reported a high watermark older than what
    the history had already shown when they were invoked: an offset at or above it
    acknowledged, or a higher high watermark returned. A deposed leader that has not heard
    of its successor (cut off from the controller, paused) still answers its consumers with
    its old HW: Kafka's reads have no leader lease, so they are not linearizable under
    partitions."""
    known: dict[object, int] = {}  # per key: the log length the history has shown
    invoked: dict[object, tuple[Op, int]] = {}
    stale = []
    for op in history:
        if not op.is_client:
            continue
        if op.type == "invoke":
            if op.f == "poll":
                invoked[op.process] = (op, known.get(op.key, 0))
            continue
        start, shown = invoked.pop(op.process, (None, 0))
        if op.type != "ok" or not isinstance(op.value, dict):
            continue
        if op.f == "send":
            known[op.key] = max(known.get(op.key, 0), op.value["offset"] + 1)
        elif op.f == "poll":
            if start is not None and op.value["hw"] < shown:
                stale.append((start, op))
            known[op.key] = max(known.get(op.key, 0), op.value["hw"])
    return stale


def linearizable_but_for_stale_reads(history: list[Op]) -> bool:
    """Whether the history without the stale polls (a read left out constrains nothing;
    their records are still checked by the anomaly taxonomy) is a linearizable log."""
    stale = {op.index for pair in stale_polls(history) for op in pair}
    return check_log([op for op in history if op.index not in stale]).verdict is Verdict.OK


# --- the protocol of today holds ------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_acks_all_min_isr_2_clean_kip320_keeps_every_acknowledged_write_once(seed: int) -> None:
    # 3 seeds x 30 s here; 50 seeds x 60 s in the slow suite below. Idempotent producers:
    # no duplicates, so the whole verdict is valid (linearizable, no anomaly at all).
    outcome = run_test(attrs.evolve(KAFKA_TODAY, time_limit_ns=30 * SECOND), seed)
    assert sum(outcome.faults.values()) >= 2
    assert_safe(outcome)
    assert outcome.check.anomaly_types == [], outcome.check.anomaly_counts
    assert outcome.verdict is Verdict.OK, outcome.check.linearizable


@pytest.mark.slow
def test_acks_all_min_isr_2_clean_kip320_keeps_every_acknowledged_write_once_50_seeds() -> None:
    # Seeds 1..50: no lost write, no duplicate, no violation in any seed: every one is valid
    # under Kafka's guarantees. The only anomaly allowed is the informational stale-read (a
    # consumer read a deposed leader's old high watermark, see stale_polls); a seed that is
    # not linearizable must be linearizable once its stale polls are left out.
    faults: dict[str, int] = {}
    linearizable, stale_only = [], []
    for seed in range(1, 51):
        outcome = run_test(KAFKA_TODAY, seed)
        assert_safe(outcome)
        assert outcome.verdict is Verdict.OK, (seed, outcome.check.violations)
        assert set(outcome.check.anomaly_types) <= {"stale-read"}, (
            seed,
            outcome.check.anomaly_counts,
        )
        if outcome.check.linearizable.verdict is Verdict.OK:
            linearizable.append(seed)
        else:
            assert stale_polls(outcome.history), (seed, outcome.check.linearizable)
            assert linearizable_but_for_stale_reads(outcome.history), seed
            assert "stale-read" in outcome.check.anomaly_types, seed
            stale_only.append(seed)
        for name, n in outcome.faults.items():
            faults[name] = faults.get(name, 0) + n
    assert set(faults) == set(ALL), f"every fault ran at least once: {faults}"
    # 44 seeds were linearizable while b1 led both partitions at the start; with the
    # preferred leaders spread over the brokers (Kafka's assignment) 40 are: stale reads of
    # a deposed leader only in seeds 17, 19, 22, 23, 25, 26, 27, 31, 36 and 49, each
    # linearizable once its stale polls are left out (checked above).
    assert len(linearizable) >= 40, f"stale reads only in seeds {stale_only}"


def test_a_stale_read_is_the_only_thing_the_stale_read_exemption_forgives() -> None:
    def op(index: int, process: int, type_: str, f: str, value: object) -> Op:
        return Op(index, index, process, type_, f, "t-0", value)

    stale = [
        op(0, 1, "invoke", "send", 1),
        op(1, 1, "ok", "send", {"offset": 0, "value": 1}),
        op(2, 2, "invoke", "poll", {"from": 0}),
        op(3, 2, "ok", "poll", {"records": [], "hw": 0}),  # a deposed leader's old HW
    ]
    assert check_log(stale).verdict is Verdict.ILLEGAL
    assert stale_polls(stale) == [(stale[2], stale[3])] and linearizable_but_for_stale_reads(stale)
    duplicate = [
        *stale[:2],
        op(2, 1, "invoke", "send", 1),
        op(3, 1, "ok", "send", {"offset": 1, "value": 1}),
    ]
    assert not stale_polls(duplicate) and not linearizable_but_for_stale_reads(duplicate)


def test_without_idempotence_retries_append_twice_and_the_check_says_so() -> None:
    # The network duplicates and drops requests: a producer's request lands twice, or its
    # answer is lost and it retries one that landed. Without idempotence (Kafka before
    # KIP-98, or enable.idempotence=false) those are appended again: `duplicate` anomalies.
    config = attrs.evolve(
        KAFKA_TODAY,
        nemesis=("duplicate", "loss"),
        partitions=1,
        interval_ns=2 * SECOND,
        time_limit_ns=15 * SECOND,
        recovery_ns=10 * SECOND,
    )
    plain = run_test(attrs.evolve(config, idempotence=False), 1)
    assert_safe(plain)
    assert plain.verdict is Verdict.ILLEGAL and "duplicate" in plain.check.violations
    assert plain.check.anomaly_counts["duplicate"] > 0
    idempotent = run_test(config, 1)
    assert_safe(idempotent)
    assert idempotent.verdict is Verdict.OK, idempotent.check.violations


def test_a_fault_free_run_is_valid_and_linearizable() -> None:
    outcome = run_test(TestConfig(nemesis=(), time_limit_ns=10 * SECOND, recovery_ns=5 * SECOND), 3)
    check = outcome.check
    assert check.verdict is Verdict.OK
    assert check.linearizable.verdict is Verdict.OK
    assert check.acknowledged_sends > 100 and check.final_reads.complete


# --- the known losses are found -------------------------------------------------------


def test_unclean_election_after_the_2013_partition_loses_acknowledged_writes() -> None:
    outcome = run_test(jepsen_2013(unclean=True), 1)
    lost, _ = lost_or_inconsistent(outcome)
    assert lost > 10, outcome.check.lost_examples
    assert outcome.verdict is Verdict.ILLEGAL
    assert "inconsistent-offsets" in outcome.check.violations


def test_clean_election_after_the_same_partition_loses_nothing() -> None:
    assert_safe(run_test(jepsen_2013(unclean=False), 1))


def test_acks_1_and_leader_kills_lose_acknowledged_writes_within_3_seeds() -> None:
    found = [s for s in range(1, 4) if any(lost_or_inconsistent(run_test(ACKS_1_LEADER_KILLS, s)))]
    assert found, "acks=1 lost nothing in 3 seeds"


def test_pre_kip_101_truncation_with_kills_loses_writes_within_10_seeds() -> None:
    # Seeds 1..20 at this configuration: 3, 5 and 8 lose writes (or offsets diverge).
    found = None
    for seed in range(1, 11):
        if any(lost_or_inconsistent(run_test(PRE_KIP_101, seed))):
            found = seed
            break
    assert found is not None, "truncation to the high watermark lost nothing in 10 seeds"


def test_the_same_kills_with_kip_320_lose_nothing_in_those_10_seeds() -> None:
    # KIP-101's fix (and KIP-279/320's): truncate by leader epoch, not to the HW.
    for seed in range(1, 11):
        outcome = run_test(attrs.evolve(PRE_KIP_101, truncation="kip320"), seed)
        assert lost_or_inconsistent(outcome) == (0, 0), (seed, outcome.check.lost_examples)


def test_whole_cluster_loss_of_unflushed_data_loses_acknowledged_writes() -> None:
    # Why kill-all is not in "all": acks=all writes live in page caches; a power loss of
    # every broker takes them (the case KIP-966 and fsync policies are about).
    config = attrs.evolve(
        KAFKA_TODAY, nemesis=("kill-all",), partitions=1, time_limit_ns=20 * SECOND
    )
    outcome = run_test(config, 1)
    assert outcome.check.lost_acknowledged_writes > 0


# --- the client adapter ---------------------------------------------------------------


def test_sends_refused_below_min_isr_fail_and_never_show_up() -> None:
    schedule = (
        ScheduleStep(2 * SECOND, "kill", {"node": "b3"}),
        ScheduleStep(25 * SECOND, "restart"),
    )
    config = TestConfig(
        min_isr=3,
        partitions=1,
        schedule=schedule,
        time_limit_ns=30 * SECOND,
        recovery_ns=10 * SECOND,
    )
    outcome = run_test(config, 1)
    fails = [op for op in outcome.history if op.f == "send" and op.type == "fail"]
    infos = [op for op in outcome.history if op.f == "send" and op.type == "info"]
    assert fails and all(op.value == {"error": "refused before append"} for op in fails)
    assert infos, "sends that timed out after the append are of unknown outcome"
    assert outcome.check.anomaly_counts["aborted-read"] == 0
    # The check is able to fail: call one of the unknown sends a failure, when it was read.
    read = {
        r[1]
        for op in outcome.history
        if op.f == "poll" and op.type == "ok"
        for r in op.value["records"]
    }
    applied = next(
        op for op in infos if op.value is not None and _invoked(outcome.history, op) in read
    )
    lie = [attrs.evolve(op, type="fail") if op is applied else op for op in outcome.history]
    assert find_anomalies(lie)["aborted-read"]


def _invoked(history: list[Op], completion: Op) -> object:
    for op in reversed(history[: completion.index]):
        if op.process == completion.process and op.type == "invoke":
            return op.value
    raise AssertionError(completion)


# --- determinism, the store, the checker's verdicts -----------------------------------


def test_the_same_seed_gives_the_same_history_bytes_and_another_seed_does_not() -> None:
    config = TestConfig(
        nemesis=ALL, time_limit_ns=10 * SECOND, recovery_ns=6 * SECOND, interval_ns=2 * SECOND
    )
    a, b, c = run_test(config, 5), run_test(config, 5), run_test(config, 6)
    assert a.history_hash == b.history_hash and a.history == b.history
    assert a.history_hash != c.history_hash


def test_the_history_does_not_depend_on_the_python_hash_seed(tmp_path: Path) -> None:
    hashes = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                "from jepsen_py.cli import main; main()",
                "test",
                "--seed",
                "9",
                "--time-limit",
                "8s",
                "--recovery",
                "5s",
                "--nemesis",
                "partition,kill,pause,loss",
                "--interval",
                "2s",
                "--no-reports",
                "--store",
                str(tmp_path),
                "--json",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            check=False,
        )
        assert out.returncode in (0, 1), out.stderr
        hashes.add(json.loads(out.stdout.strip().splitlines()[-1])["history_hash"])
    assert len(hashes) == 1


def test_a_run_writes_the_store_directory(tmp_path: Path) -> None:
    config = TestConfig(
        nemesis=("partition", "kill"),
        time_limit_ns=8 * SECOND,
        recovery_ns=5 * SECOND,
        interval_ns=2 * SECOND,
    )
    outcome = run_test(config, 2, store_root=tmp_path)
    assert outcome.run_dir is not None
    names = {p.name for p in outcome.run_dir.iterdir()}
    assert {
        "test.json",
        "history.jsonl",
        "results.json",
        "timeline.html",
        "latency.png",
        "rate.png",
    } <= names
    loaded = load_run(outcome.run_dir)
    assert loaded.test["seed"] == 2 and TestConfig.from_json(loaded.test["config"]) == config
    assert loaded.history == outcome.history
    assert history_file_hash(outcome.run_dir / "history.jsonl") == outcome.history_hash
    assert loaded.results is not None and loaded.results["verdict"] == outcome.verdict_name
    # results.json is the returned outcome, reports' timing included, and nothing else
    assert loaded.results == json.loads(json.dumps(outcome.to_json()))
    assert outcome.seconds.reports is not None and "reports" in loaded.results["seconds"]
    assert "seed 2" in (outcome.run_dir / "timeline.html").read_text()


def test_unfinished_final_reads_make_the_verdict_unknown_not_valid() -> None:
    outcome = run_test(TestConfig(nemesis=(), time_limit_ns=5 * SECOND, recovery_ns=2 * SECOND), 1)
    assert outcome.verdict is Verdict.OK
    # Drop the last final poll (and the replica reads after it): the read-back of that key
    # never reached its end.
    history = list(outcome.history)
    replicas = next(i for i, op in enumerate(history) if op.value == REPLICA_READS)
    history = history[:replicas]
    last = max(i for i, op in enumerate(history) if op.f == "poll" and op.type == "ok")
    cut = history[:last]
    result = check_history(cut)
    assert result.verdict is Verdict.UNKNOWN and not result.final_reads.complete


def test_durations_and_the_reproduce_command() -> None:
    assert parse_duration("60s") == 60 * SECOND and parse_duration("250ms") == 250_000_000
    assert parse_duration("2m") == 120 * SECOND and parse_duration("1.5") == 1_500_000_000
    for ns in (7_205_322_585, 60 * SECOND, 1_500_000):  # what format_duration writes, reads back
        assert parse_duration(format_duration(ns)) == ns
    command = reproduce_command(TestConfig(unclean=True), 42)
    assert (
        command.startswith("kmodel test ")
        and "--unclean" in command
        and command.endswith("--seed 42")
    )
    assert (
        reproduce_command(TestConfig(schedule=JEPSEN_2013), 1, "store/x/y")
        == "kmodel replay store/x/y"
    )


def test_swarm_configurations_are_drawn_from_the_seed() -> None:
    base = TestConfig(nemesis=ALL)
    drawn = [swarm_config(base, s) for s in range(8)]
    assert drawn[0] == swarm_config(base, 0)
    assert len({c.nemesis for c in drawn}) > 1
    assert all(c.nemesis and set(c.nemesis) <= set(ALL) | set(TARGETED) for c in drawn)
    assert any(set(c.nemesis) & set(TARGETED) for c in drawn), "targeted faults are drawn"
    kills = [swarm_config(TestConfig(nemesis=("kill",)), s).nemesis for s in range(8)]
    assert set().union(*kills) <= {"kill", "kill-last-isr", "kill-lagging", "kill-isolated"}
    assert all((c.acks, c.min_isr, c.truncation) == ("all", 2, "kip320") for c in drawn)


def test_swarm_runs_draw_targeted_faults_at_least_at_their_own_density() -> None:
    base = TestConfig(nemesis=ALL)
    sparse = [swarm_config(base, s) for s in range(200) if swarm_density(s) == 0.1]
    assert len(sparse) > 30, "some runs draw the sparsest subsets"
    targeted = sum(len(set(c.nemesis) & set(TARGETED)) for c in sparse) / len(sparse)
    others = sum(len(set(c.nemesis) - set(TARGETED)) for c in sparse) / len(sparse)
    # About three quarters of the 10 targeted faults (TARGETED_DENSITY), a tenth of the 28
    # others.
    assert 6.5 <= targeted <= 8.5 and others < 5, (targeted, others)


def test_swarm_runs_pace_faults_by_the_protocol_timers_and_overlap_only_when_asked() -> None:
    base = TestConfig(nemesis=ALL)
    drawn = [swarm_config(base, s) for s in range(40)]
    timer = min(base.session_timeout_ns, base.replica_lag_time_max_ns)
    assert {c.interval_ns for c in drawn} == {timer * n // d for n, d in SWARM_PACE}
    assert {c.max_faults for c in drawn} == {1}
    overlapping = [swarm_config(attrs.evolve(base, max_faults=3), s) for s in range(40)]
    assert {c.max_faults for c in overlapping} == {1, 2, 3}
    assert not any(c.compound for c in drawn), "nesting needs overlap"
    assert {c.compound for c in overlapping if c.max_faults > 1} == {True, False}
    nested = next(c for c in overlapping if c.compound)
    assert "--compound" in reproduce_command(nested, 1)
    # Half of the nested runs are quick: the inner faults follow at the run's pace, inside
    # replica.lag.time.max.ms; the others hold the partition for it (None: the lag time).
    holds = {c.compound_hold_ns for c in overlapping if c.compound}
    assert holds == {0, None}, holds
    quick = next(c for c in overlapping if c.compound_hold_ns == 0)
    assert "--compound-hold 0s" in reproduce_command(quick, 1)
    assert not any(c.compound_hold_ns is not None for c in drawn)
    assert "--max-faults" in reproduce_command(next(c for c in overlapping if c.max_faults > 1), 1)


# --- kmodel test ----------------------------------------------------------------------


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_kmodel_test_exit_codes_and_json(tmp_path: Path) -> None:
    short = ["--time-limit", "6s", "--recovery", "4s", "--no-reports", "--store", str(tmp_path)]
    code, out = cli("test", "--nemesis", "none", "--seed", "1", *short)
    assert code == 0, out
    assert "verdict: VALID" in out and "reproduce: kmodel test" in out
    code, out = cli(
        "test",
        "--acks",
        "1",
        "--min-isr",
        "1",
        "--nemesis",
        "none",
        "--seed",
        "1",
        "--json",
        *short,
    )
    # acks=1 acknowledges before the high watermark: polls read stale high watermarks, which
    # Kafka allows (no read lease) and linearizability does not
    assert code == 0, out
    payload = json.loads(out.strip().splitlines()[-1])
    assert payload["verdict"] == "valid" and payload["linearizable"] == "illegal"
    assert payload["violations"] == [] and payload["informational"].get("stale-read")
    assert payload["command"].endswith("--seed 1") and Path(payload["store"]).is_dir()
    code, out = cli(
        "test", "--acks", "1", "--min-isr", "1", "--nemesis", "none", "--seed", "1",
        "--consistency", "linearizable", "--json", *short,
    )  # fmt: skip
    assert code == 1, out
    payload = json.loads(out.strip().splitlines()[-1])
    assert payload["verdict"] == "invalid" and payload["violations"] == ["nonlinearizable"]
    assert payload["violation_lines"]["nonlinearizable"][0], payload
    assert payload["command"].endswith("--consistency linearizable")
    code, out = cli("test", "--nemesis", "clock,partiton")
    assert code == 2 and "unknown fault 'partiton'" in out
    code, out = cli("test", "--acks", "1", "--idempotence")
    assert code == 2 and "acks=all" in out
    code, out = cli("test", "--min-isr", "4")
    assert code == 2 and "min.insync.replicas" in out
    code, out = cli("test", "--time-limit", "soon")
    assert code == 2 and "--time-limit" in out


def test_kmodel_test_swarm_prints_a_table_of_runs(tmp_path: Path) -> None:
    code, out = cli(
        "test",
        "--runs",
        "3",
        "--seed",
        "10",
        "--time-limit",
        "5s",
        "--recovery",
        "4s",
        "--nemesis",
        "partition,pause,loss",
        "--no-reports",
        "--store",
        str(tmp_path),
    )
    assert code in (0, 1), out
    assert "3 of 3 runs" in out
    rows = [line for line in out.splitlines() if line.strip().split(" ")[0] in {"0", "1", "2"}]
    assert len(rows) == 3


def test_the_printed_command_reproduces_the_run(tmp_path: Path) -> None:
    config = TestConfig(
        partitions=1,
        nemesis=("pause", "loss"),
        interval_ns=1_500_000_000,
        time_limit_ns=6 * SECOND,
        recovery_ns=4 * SECOND,
        rate=40,
        concurrency=3,
    )
    outcome = run_test(config, 13)
    args = shlex.split(outcome.command)
    assert args[:2] == ["kmodel", "test"]
    code, out = cli(*args[1:], "--no-reports", "--store", str(tmp_path), "--json")
    assert code == verdict_exit_code(outcome.verdict), out
    assert json.loads(out.strip().splitlines()[-1])["history_hash"] == outcome.history_hash


def test_kmodel_test_lists_the_fault_catalogue() -> None:
    code, out = cli("test", "--list-faults")
    assert code == 0 and "partition-bridge" in out and "kill-all" in out and "clock" in out


def test_a_zombie_leaders_fetch_response_does_not_reach_its_successors_follower() -> None:
    # A swarm run of the safe configuration with BUGGIFY (benchmarks/bug_hunt.py's safe
    # seed 172, spelt out): b2, leader in epoch 1, is shut down cleanly while its session
    # expires; b3 leads in epoch 2, and b2 goes on taking writes a while. b1 follows b3;
    # a fetch response b2 sent it before carries the id and offset of b1's fetch to b3.
    # Applied, it put b2's epoch-1 record at offset 122 in b1's log while b3 has its own
    # there: an offset with two values and a lost write in the safe configuration. The
    # fetcher takes answers only from the leader it fetches from (impl.replica).
    config = TestConfig(
        nemesis=(
            "partition-bridge",
            "partition-ring",
            "controlled-shutdown",
            "add-partitions",
            "reassign",
            "disk-bitflip",
            "clock",
            "partition-one-follower",
            "partition-stale-follower",
            "kill-last-isr",
            "kill-lagging",
            "kill-isolated",
            "shutdown-last-isr",
            "reassign-lagging",
        ),
        interval_ns=2 * SECOND,
        rate=200,
        concurrency=7,
        buggify=True,
    )
    assert_safe(run_test(config, 172, reports=False))


@pytest.mark.slow
def test_the_default_swarm_finds_the_acks_1_loss_within_its_first_seeds() -> None:
    # benchmarks/bug_hunt.py's acks_1 entry (docs/fault-injection.md): generic faults, no
    # schedule; the same swarm draw with acks=all loses nothing. Every targeted fault added
    # to the catalogue, the layout of the topic and the targeted faults' density change
    # every swarm run (seed 2, then 3, then 1; seed 2 since targeted faults are drawn in
    # three runs of four).
    unsafe = run_test(
        swarm_config(TestConfig(nemesis=ALL, acks="1", min_isr=1), 2), 2, reports=False
    )
    assert unsafe.check.lost_acknowledged_writes > 0, unsafe.command
    assert "acks-leader-failure" in unsafe.check.loss_mechanisms, unsafe.check.loss_mechanisms
    safe = run_test(swarm_config(TestConfig(nemesis=ALL), 2), 2, reports=False)
    assert_safe(safe)


def _bug_hunt() -> Any:
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "bug_hunt.py"
    spec = importlib.util.spec_from_file_location("bug_hunt", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_value_at_two_offsets_is_a_loss_retried_unless_the_final_log_holds_both() -> None:
    # benchmarks/bug_hunt.py: value 7 read at offset 5, lost, and appended again at 8 by the
    # producer's retry (one copy left in the final read) is part of a loss; both copies
    # in the final read is the non-idempotent producer's duplicate.
    def poll(index: int, start: int, records: list[list[int]], final: bool) -> list[Op]:
        invoke = {"from": start, "final": True} if final else {"from": start}
        return [
            Op(index, index, 1, "invoke", "poll", "t-0", invoke),
            Op(index + 1, index + 1, 1, "ok", "poll", "t-0", {"records": records, "hw": 9}),
        ]

    read = poll(0, 5, [[5, 7]], final=False)
    retried = [*read, *poll(2, 0, [[4, 6], [8, 7]], final=True)]
    twice = [*read, *poll(2, 0, [[5, 7], [8, 7]], final=True)]
    one_copy_left = _bug_hunt().one_copy_left
    assert one_copy_left(retried) and not one_copy_left(twice)
