"""``kmodel verify --engine spark``: the local engine's checks as a PySpark job.

Histories (JSONL or Parquet, from any path Spark reads; EDN and Porcupine logs through the
driver) are grouped by (run, key) and every group is checked in parallel by the local
engine's own per-key checkers, inside the executors (`keycheck`); keys too big for one
worker are checked by the log checker's SQL formulation (`logsql`, with `logfields` for
each line's columns, `logstream` for the anomaly pass and `logexplain` for the words), so
one enormous partition log is checked across the cluster too. A JSONL file whose runs are
its own is checked whole instead, in one task, with no grouping across the cluster
(`wholefile`). `job` runs it, `session`
starts Spark (`flags` checks its flags first), `inputs` reads the files, `output` writes
the verdict table; `records` holds what these modules hand each other.

Modules import downward: `keycheck` (the workers' code) <- `records`, `logfields`,
`logstream`, `logexplain` <- `logsql`, `output`, `inputs`, `wholefile` <- `job`.

Importing this package imports none of its modules (the names below load on first use), so
``kmodel verify`` can check ``--master`` with `flags` alone; pyspark is imported by
`verify_spark`. pyspark is a heavy,
optional dependency (the local engine and the workers' `keycheck` do without it), so every
module here imports it inside the functions that use it, and for type hints only under
``TYPE_CHECKING``; with pyarrow's (a fifth of a second to import, needed by few paths),
those are the only function-local imports of this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jepsen_py.checker.spark.job import SparkOptions, verify_spark
    from jepsen_py.checker.spark.records import SparkReport
    from jepsen_py.checker.spark.session import SessionOptions

__all__ = ["SessionOptions", "SparkOptions", "SparkReport", "verify_spark"]

_HOMES = {
    "SparkOptions": "jepsen_py.checker.spark.job",
    "verify_spark": "jepsen_py.checker.spark.job",
    "SparkReport": "jepsen_py.checker.spark.records",
    "SessionOptions": "jepsen_py.checker.spark.session",
}
"""Where each name of `__all__` lives. They are imported on first use (PEP 562), so that
``kmodel verify`` validating its Spark flags with `flags` alone does not import `job`
and the SQL formulation (a thirtieth of a second) when the local engine does the work."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
