"""One delivery verdict function, two engines: ``kmodel verify --delivery`` on the local
engine (`delivery_engine.verify_delivery_path`) and on Spark (`spark.delivery`) gives the
same histories the same verdicts, key by key, the same anomaly counts and the same
rejected lines, under both modes. The histories: the delivery corpus, generated group
histories (`deliverygen`, with every anomaly) as runs of one file, and malformed lines."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from jepsen_py.checker.delivery_engine import verify_delivery_path
from jepsen_py.checker.deliverygen import GroupWorkload, generate_group
from jepsen_py.checker.records import InputResult
from jepsen_py.checker.taxonomy import DELIVERIES
from jepsen_py.history.jsonl import op_to_record

CORPUS = Path(__file__).resolve().parent / "corpora" / "delivery"


def histories(folder: Path) -> list[Path]:
    folder.mkdir()
    paths = []
    for case in sorted(CORPUS.glob("*.jsonl")):
        shutil.copy(case, folder / case.name)
        paths.append(folder / case.name)
    runs = folder / "group-runs.jsonl"  # generated histories, one run each, in one file
    with runs.open("w") as out:
        for seed in range(12):
            w = GroupWorkload(keys=2, members=3, steps=120, p_fault=0.1)
            for op in generate_group(random.Random(seed), w):
                out.write(json.dumps({**op_to_record(op), "run": f"r{seed}"}) + "\n")
    paths.append(runs)
    plain = folder / "plain-kafka.jsonl"  # no group op: not judged, on either engine
    plain.write_text(
        '{"process": 0, "type": "invoke", "f": "send", "key": "t-0", "value": 1}\n'
        '{"process": 0, "type": "ok", "f": "send", "key": "t-0", "value": {"offset": 0}}\n'
    )
    paths.append(plain)
    bad = folder / "malformed.jsonl"
    good = (CORPUS / "duplicate-crash.jsonl").read_text().splitlines()
    good.insert(5, '{"process": 1, "type": "ok", "f": "commit", "value": [1]}')
    good.insert(3, "not json")
    good.insert(8, '{"process": 3, "type": "ok", "f": "process", "key": "t-0", "value": 7}')
    bad.write_text("\n".join(good) + "\n")
    paths.append(bad)
    return paths


def summary(result: InputResult) -> tuple[Any, ...]:
    keys = {(k.run, k.key): (k.verdict.value, k.ops, dict(k.counts)) for k in result.keys}
    rejected = [(r.line, r.key) for r in result.rejected]
    return result.verdict.value, keys, result.anomaly_counts, sorted(rejected), result.error


@pytest.mark.spark
def test_local_and_spark_give_the_same_delivery_verdicts_and_counts(
    spark: Any, tmp_path: Path
) -> None:
    from jepsen_py.checker.spark.delivery import verify_delivery_spark_modes

    paths = histories(tmp_path / "h")
    spark_results, figures = verify_delivery_spark_modes(
        [str(p) for p in paths], DELIVERIES, spark=spark
    )
    seen = set()
    for delivery in DELIVERIES:
        local = {str(p): summary(verify_delivery_path(p, delivery)) for p in paths}
        results = spark_results[delivery]
        assert len(results) == len(paths)
        for result in results:
            assert summary(result) == local[result.path], result.path
        assert figures["ops"] == sum(r.ops for r in results)
        seen |= {v for v, *_ in local.values()}
        assert any(s[3] for s in local.values())  # rejected lines compared too
    assert seen == {"ok", "illegal", "unknown"}  # the comparison is not vacuous


def log_summary(result: InputResult) -> tuple[Any, ...]:
    keys = {(k.run, k.key): (k.verdict.value, k.ops, dict(k.counts)) for k in result.keys}
    return result.verdict.value, result.model, keys, result.error


@pytest.mark.spark
def test_the_kafka_log_check_of_group_histories_leaves_the_group_ops_aside_on_both_engines(
    spark: Any, tmp_path: Path
) -> None:
    """``kmodel verify`` without ``--delivery`` takes a group history as a Kafka log (its
    sends and polls), on both engines alike: the keyless commits and fetches make no key."""
    from jepsen_py.checker.engine import verify_path
    from jepsen_py.checker.spark import SparkOptions, verify_spark

    paths = histories(tmp_path / "h")[:-1]  # the malformed lines are the delivery check's
    local = {str(p): log_summary(verify_path(p)) for p in paths}
    report = verify_spark([str(p) for p in paths], SparkOptions(partitions=2), spark=spark)
    for result in report.inputs:
        assert log_summary(result) == local[result.path], result.path
    assert all(
        model == "log" and None not in {k for _, k in keys} for _, model, keys, _ in local.values()
    )


def _edn(value: Any, top: bool = False) -> str:
    """JSON-shaped ``value`` as EDN: an op map's keys, ``type`` and ``f`` as keywords (as
    Jepsen writes them), nested maps with string keys."""
    if isinstance(value, dict):
        inner = (
            ", ".join(
                f":{k} " + (f":{v}" if top and k in ("type", "f") else _edn(v))
                for k, v in value.items()
            )
            if top
            else ", ".join(f"{_edn(k)} {_edn(v)}" for k, v in value.items())
        )
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + " ".join(_edn(v) for v in value) + "]"
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


@pytest.mark.spark
def test_spark_checks_an_edn_group_history_as_the_local_engine_does(
    spark: Any, tmp_path: Path
) -> None:
    """An EDN history (Jepsen's format) is read on the driver by the local reader and
    checked by the Spark job: the same verdicts, counts and rejected lines as local."""
    from jepsen_py.checker.spark.delivery import verify_delivery_spark_modes

    paths = []
    for case in ("duplicate-crash", "lost-commit-before-process", "seek-regression-undecided"):
        edn = tmp_path / f"{case}.edn"
        lines = (CORPUS / f"{case}.jsonl").read_text().splitlines()
        forms = [_edn(json.loads(line), top=True) for line in lines if line.strip()]
        forms.insert(2, "{:process 1, :type :ok, :f :commit, :value [1]}")  # rejected
        edn.write_text("\n".join(forms) + "\n")
        paths.append(edn)
    results, _ = verify_delivery_spark_modes([str(p) for p in paths], DELIVERIES, spark=spark)
    verdicts = set()
    for delivery in DELIVERIES:
        local = {str(p): summary(verify_delivery_path(p, delivery)) for p in paths}
        for result in results[delivery]:
            assert result.format == "edn"
            assert summary(result) == local[result.path], result.path
            verdicts.add(result.verdict.value)
        assert all(s[3] for s in local.values())  # the rejected line, on both engines
    assert len(verdicts) > 1
