"""The demo's verification stage: the fault-injection runs' histories checked by the Spark
engine (``kmodel verify --engine spark``, on ``local[*]`` unless a master is given) and by
the local engine, which must agree input for input and key for key. The Spark job's
verdict table is written as Parquet and JSON under the demo's ``spark/``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jepsen_py.checker.engine import InputResult, verify_path


def _keys(result: InputResult) -> dict[str, str]:
    return {f"{k.run}/{k.key}": k.verdict.value for k in result.keys}


def _anomaly_counts(result: InputResult) -> dict[str, int]:
    return dict(sorted(result.anomaly_counts.items()))


def verify_rows(
    histories: Sequence[str],
    output: Path,
    *,
    master: str | None,
    say: Callable[[str], None],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Check ``histories`` on Spark and locally; one row per history, and Spark's figures
    (master, start-up and job seconds)."""
    from jepsen_py.checker.spark import SessionOptions, SparkOptions, verify_spark

    options = SparkOptions(output=str(output), session=SessionOptions(master=master))
    report = verify_spark(list(histories), options, say=lambda m: say(f"  spark: {m}"))
    by_path = {Path(r.path).resolve(): r for r in report.inputs}
    rows = []
    for history in histories:
        local = verify_path(history)
        spark = by_path.get(Path(history).resolve())
        if spark is None:
            raise RuntimeError(f"the Spark job returned no result for {history}")
        agree = (
            spark.verdict == local.verdict
            and _keys(spark) == _keys(local)
            and _anomaly_counts(spark) == _anomaly_counts(local)
        )
        rows.append(
            {
                "history": history,
                "ops": spark.ops,
                "model": spark.model,
                "spark": spark.verdict.value,
                "local": local.verdict.value,
                "keys": _keys(spark),
                "anomalies": _anomaly_counts(spark),
                "agree": agree,
                "local_seconds": round(local.seconds, 3),
            }
        )
    figures = {
        key: report.figures.get(key)
        for key in ("master", "default_parallelism", "startup_seconds", "seconds")
    }
    figures["verdicts"] = str(output / "verdicts.parquet")
    return rows, figures
