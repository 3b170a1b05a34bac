"""The verdict table and its companions, written to ``--output DIR``:

- ``verdicts.parquet`` and ``verdicts.json``: one row per (run, key): ``run`` (the ``run``
  field, or the file the ops came from), ``key``, ``model``, ``verdict``, ``ops``,
  ``anomalies`` (name -> count), ``time`` (seconds of checking), ``file``,
  ``explanation`` (the counterexample in words), ``rejected_lines``, ``engine``
  (``whole-file``, ``per-key`` or ``sql``: the path that checked the key), ``witness``
  (the witnessing ops, JSON) and, for Kafka logs,
  ``consistency`` (what decided), ``kafka`` and ``linearizable`` (the two properties'
  verdicts) and ``violations`` (what made the key illegal);
- ``anomalies.json``: one row per (run, key, anomaly) with its count, whether it is a
  violation, and the witnessing ops of the first occurrences;
- ``rejected.json``: every rejected line brought back (file, line, reason, key, run);
- ``summary.json``: the totals and the job's figures.

Spark writes them (directories of part files, readable by any Spark or pandas/pyarrow
reader), so ``DIR`` may be ``hdfs://`` or ``s3a://``; rows are sorted by (run, key). The
local engine writes the same tables as single files with pyarrow (`write_local`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from jepsen_py.checker.records import InputResult, order_key
from jepsen_py.checker.spark.keycheck import file_of, line_of
from jepsen_py.checker.spark.records import SparkReport

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

VERDICT_DDL = (
    "run string, key string, model string, verdict string, ops long, "
    "anomalies map<string, long>, time double, file string, explanation string, "
    "rejected_lines long, engine string, witness string, consistency string, kafka string, "
    "linearizable string, violations array<string>"
)
VERDICT_COLUMNS = (
    "run",
    "key",
    "model",
    "verdict",
    "ops",
    "anomalies",
    "time",
    "file",
    "explanation",
    "rejected_lines",
    "engine",
    "witness",
    "consistency",
    "kafka",
    "linearizable",
    "violations",
)


def write_outputs(
    spark: SparkSession,
    folder: str,
    report: SparkReport,
    summary: dict[str, Any],
) -> None:
    """Write the tables of the module docstring under ``folder`` (any Hadoop path);
    ``summary`` (`totals.summary`) goes to ``summary.json`` with the job's figures."""
    root = folder.rstrip("/")
    verdicts = spark.createDataFrame(
        [tuple(row[c] for c in VERDICT_COLUMNS) for row in report.verdicts], VERDICT_DDL
    ).coalesce(1)
    verdicts.write.mode("overwrite").parquet(f"{root}/verdicts.parquet")
    verdicts.write.mode("overwrite").json(f"{root}/verdicts.json")
    anomalies = anomaly_rows(report.verdicts)
    spark.createDataFrame(
        anomalies,
        "run string, key string, anomaly string, count long, violation boolean, witnesses string",
    ).coalesce(1).write.mode("overwrite").json(f"{root}/anomalies.json")
    rows = [
        (report.files[file_of(r.pos)], line_of(r.pos), r.reason, r.key, r.run)
        for r in sorted(report.rejected, key=lambda r: r.pos)
    ]
    spark.createDataFrame(
        rows, "file string, line long, reason string, key string, run string"
    ).coalesce(1).write.mode("overwrite").json(f"{root}/rejected.json")
    payload = {**summary, "figures": report.figures}
    _write_text(spark, f"{root}/summary.json", orjson.dumps(payload, option=orjson.OPT_SORT_KEYS))


def anomaly_rows(verdicts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(run, key, anomaly, count, violation, witnesses as JSON) of every anomaly found."""
    out = []
    for row in verdicts:
        detail = orjson.loads(row["anomaly_detail"]) if row.get("anomaly_detail") else {}
        for name, entry in sorted(detail.items()):
            witnesses = orjson.dumps(entry["witnesses"]).decode()
            out.append(
                (row["run"], row["key"], name, entry["count"], entry["violation"], witnesses)
            )
    return out


def _write_text(spark: SparkSession, path: str, data: bytes) -> None:
    """One file at ``path`` on any Hadoop file system."""
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    target = jvm.org.apache.hadoop.fs.Path(path)
    stream = target.getFileSystem(conf).create(target, True)
    try:
        stream.write(bytearray(data))
    finally:
        stream.close()


def rows_from_inputs(results: list[InputResult]) -> list[dict[str, Any]]:
    """The verdict table of the local engine's results (same columns as Spark's)."""
    rows = []
    for result in results:
        for key in result.keys:
            counts = {name: n for name, n in key.counts.items() if n}
            rows.append(
                {
                    "run": key.run if key.run is not None else result.path,
                    "key": None if key.key is None else str(key.key),
                    "model": result.model,
                    "verdict": key.verdict.value,
                    "ops": key.ops,
                    "anomalies": counts,
                    "time": round(key.seconds, 6),
                    "file": result.path,
                    "explanation": key.explanation,
                    "rejected_lines": key.rejected,
                    "engine": "local",
                    "witness": orjson.dumps(
                        [
                            {"line": op.line, "index": op.index, "type": op.type, "f": op.f}
                            for op in key.witness
                        ]
                    ).decode()
                    if key.witness
                    else None,
                    "consistency": key.consistency,
                    "kafka": key.kafka.value if key.kafka else None,
                    "linearizable": key.linearizable.value if key.linearizable else None,
                    "violations": list(key.violations),
                }
            )
    rows.sort(key=lambda row: order_key(row["run"], row["key"]))
    return rows


def write_local(folder: str, rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    """The local engine's ``--output``: ``verdicts.parquet``, ``verdicts.json`` (JSON
    lines) and ``summary.json`` as single files."""
    # pyarrow takes a fifth of a second to import: only a run with --output pays for it
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    schema = pa.schema(
        [
            ("run", pa.string()),
            ("key", pa.string()),
            ("model", pa.string()),
            ("verdict", pa.string()),
            ("ops", pa.int64()),
            ("anomalies", pa.map_(pa.string(), pa.int64())),
            ("time", pa.float64()),
            ("file", pa.string()),
            ("explanation", pa.string()),
            ("rejected_lines", pa.int64()),
            ("engine", pa.string()),
            ("witness", pa.string()),
            ("consistency", pa.string()),
            ("kafka", pa.string()),
            ("linearizable", pa.string()),
            ("violations", pa.list_(pa.string())),
        ]
    )
    table = pa.Table.from_pylist(
        [{**row, "anomalies": list(row["anomalies"].items())} for row in rows], schema=schema
    )
    pq.write_table(table, root / "verdicts.parquet")
    with open(root / "verdicts.json", "wb") as handle:
        for row in rows:
            handle.write(orjson.dumps(row) + b"\n")
    (root / "summary.json").write_bytes(
        orjson.dumps(summary, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
    )
