"""``kmodel verify --engine spark``: the local engine's checks as a PySpark job.

Histories (JSONL or Parquet, from any path Spark reads; EDN and Porcupine logs through the
driver) are grouped by (run, key) and every group is checked in parallel by the local
engine's own per-key checkers, inside the executors (`keycheck`); keys too big for one
worker are checked by the log checker's SQL formulation (`logsql`, with `logfields` for
each line's columns, `logstream` for the anomaly pass and `logexplain` for the words), so
one enormous partition log is checked across the cluster too. `job` runs it, `session`
starts Spark, `inputs` reads the files, `output` writes the verdict table; `records` holds
what these modules hand each other.

Modules import downward: `keycheck` (the workers' code) <- `records`, `logfields`,
`logstream`, `logexplain` <- `logsql`, `output`, `inputs` <- `job`.

Importing this package does not import pyspark; `verify_spark` does. pyspark is a heavy,
optional dependency (the local engine and the workers' `keycheck` do without it), so every
module here imports it inside the functions that use it, and for type hints only under
``TYPE_CHECKING``; with pyarrow's (a fifth of a second to import, needed by few paths),
those are the only function-local imports of this package.
"""

from __future__ import annotations

from jepsen_py.checker.spark.job import SparkOptions, verify_spark
from jepsen_py.checker.spark.records import SparkReport
from jepsen_py.checker.spark.session import SessionOptions

__all__ = ["SessionOptions", "SparkOptions", "SparkReport", "verify_spark"]
