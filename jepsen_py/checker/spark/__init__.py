"""``kmodel verify --engine spark``: the local engine's checks as a PySpark job.

Histories (JSONL or Parquet, from any path Spark reads; EDN and Porcupine logs through the
driver) are grouped by (run, key) and every group is checked in parallel by the local
engine's own per-key checkers, inside the executors (`keycheck`); keys too big for one
worker are checked by the log checker's SQL formulation (`logsql`), so one enormous
partition log is checked across the cluster too. `job` runs it, `session` starts Spark,
`inputs` reads the files, `output` writes the verdict table.

Importing this package does not import pyspark; `verify_spark` does.
"""

from __future__ import annotations

from jepsen_py.checker.spark.job import SparkOptions, SparkReport, verify_spark
from jepsen_py.checker.spark.session import SessionOptions

__all__ = ["SessionOptions", "SparkOptions", "SparkReport", "verify_spark"]
