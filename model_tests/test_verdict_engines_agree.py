"""One verdict function, three callers: ``kmodel test``'s checker (`runner.check_history`),
the local engine (`engine.verify_path`) and the Spark engine (its per-key path, and its
SQL path for keys too big for one worker) give the same histories the same verdicts and
the same anomaly counts, key by key.

The histories: runs of the fault injector (valid ones, and runs with ``acks=1`` and
unclean elections, which lose writes), small generated histories with consumers that
assign, subscribe, seek and continue (`kafkagen`, with a misbehaving cluster), generated
histories with each anomaly injected (`histgen`), and the Jepsen corpus.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from jepsen_py.checker.engine import InputResult, verify_path
from jepsen_py.checker.histgen import INJECTORS, LogWorkload, generate
from jepsen_py.checker.kafkagen import SmallWorkload, generate_small
from jepsen_py.history import read_history, write_jsonl
from jepsen_py.runner import TestConfig, check_history, simulate_run

JEPSEN = Path(__file__).resolve().parent / "corpora" / "jepsen-kafka"


def histories(folder: Path) -> list[Path]:
    folder.mkdir()
    paths = []
    configs = [
        TestConfig(time_limit_ns=4_000_000_000, recovery_ns=3_000_000_000, nemesis=("kill",)),
        TestConfig(
            time_limit_ns=6_000_000_000, recovery_ns=3_000_000_000, acks="1", min_isr=1,
            unclean=True, nemesis=("partition", "kill"), interval_ns=1_000_000_000,
        ),
    ]  # fmt: skip
    for i, config in enumerate(configs):
        for seed in (1, 2):
            ops = simulate_run(config, seed).history
            write_jsonl(folder / f"run-{i}-{seed}.jsonl", ops)
            paths.append(folder / f"run-{i}-{seed}.jsonl")
    for seed in range(8):
        rng = random.Random(seed)
        w = SmallWorkload(keys=2, steps=60, p_fault=0.1, p_reassign=0.2, p_final=0.5)
        write_jsonl(folder / f"small-{seed}.jsonl", generate_small(rng, w))
        paths.append(folder / f"small-{seed}.jsonl")
    # consumers that assign and subscribe on keys big enough for the SQL path
    for seed in (8, 9):
        rng = random.Random(seed)
        w = SmallWorkload(keys=2, steps=2000, p_fault=0.01, p_reassign=0.1, p_final=1.0)
        write_jsonl(folder / f"big-{seed}.jsonl", generate_small(rng, w))
        paths.append(folder / f"big-{seed}.jsonl")
    rng = random.Random(3)
    for i, name in enumerate(sorted(INJECTORS)):
        ops = generate(random.Random(i), LogWorkload(ops=200, keys=2, p_implicit=0.2))
        write_jsonl(folder / f"injected-{name}.jsonl", INJECTORS[name](ops, rng) or ops)
        paths.append(folder / f"injected-{name}.jsonl")
    return paths + sorted(JEPSEN.glob("*.jsonl"))


def summary(result: InputResult) -> tuple[str, dict[Any, str], dict[str, int]]:
    counts: dict[str, int] = {}
    for key in result.keys:
        for name, n in key.counts.items():
            counts[name] = counts.get(name, 0) + n
    keys = {str(k.key): k.verdict.value for k in result.keys}
    return result.verdict.value, keys, counts


def runner_summary(path: Path) -> tuple[str, dict[Any, str], dict[str, int]]:
    check = check_history(list(read_history(path)))
    counts = {n: c for n, c in check.anomaly_counts.items() if c}
    return check.verdict.value, {k: v.value for k, v in check.keys.items()}, counts


@pytest.mark.spark
def test_runner_local_and_spark_give_the_same_verdicts_and_anomaly_counts(
    spark: Any, tmp_path: Path
) -> None:
    from jepsen_py.checker.spark import SparkOptions, verify_spark

    paths = histories(tmp_path / "h")
    local = {str(p): summary(verify_path(p)) for p in paths}
    checkable = [p for p in paths if not verify_path(p).error]
    for path in checkable:
        assert runner_summary(path) == local[str(path)], path
    # one job, both paths: keys estimated above 300 ops (the runs', the big ones) go to
    # the SQL path, the others to the per-key path (no file whole: the whole-file path
    # has its own comparison, test_spark_whole_files.py)
    options = SparkOptions(partitions=2, max_key_ops=300, whole_files=False)
    report = verify_spark([str(p) for p in paths], options, spark=spark)
    assert len(report.inputs) == len(paths)
    engines = {(row["file"], row["key"]): row["engine"] for row in report.verdicts}
    assert "per-key" in engines.values()
    assert any(e == "sql" and "big-" in file for (file, _), e in engines.items())
    for result in report.inputs:
        assert summary(result) == local[result.path], result.path
    verdicts = [v for v, _, _ in local.values()]
    assert {"ok", "illegal", "unknown"} <= set(verdicts)  # the comparison is not vacuous
    assert sum(v == "illegal" for v in verdicts) >= 10
