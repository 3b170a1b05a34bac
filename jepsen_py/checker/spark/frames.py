"""Small driver-side tables (file ids, chosen keys, positions) as Spark DataFrames.

``SparkSession.createDataFrame`` of a Python list is an RDD of pickled rows: every query
that reads it starts Python workers to unpickle it again, a second or more per use on a
busy machine. A small table is written into the plan instead, as literals (``inline`` of
an array of structs); a large one is materialized once (``localCheckpoint``) and read from
Spark's block store after that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

LITERAL_ROWS = 2000
"""Above this many rows a table is materialized instead of written into the plan."""


def local_frame(
    spark: SparkSession, rows: Sequence[Sequence[Any]], ddl: str, *, reused: bool = True
) -> DataFrame:
    """The table ``rows`` with the schema ``ddl`` (``"name type, ..."``); a large one read
    once (``reused=False``) is left as it is rather than materialized first."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType, _parse_datatype_string

    schema = _parse_datatype_string(ddl)
    assert isinstance(schema, StructType)
    fields = schema.fields
    if not rows:
        columns = [F.lit(None).cast(f.dataType).alias(f.name) for f in fields]
        return spark.range(0).select(*columns)
    if len(rows) > LITERAL_ROWS:
        frame = spark.createDataFrame([tuple(row) for row in rows], schema)
        return frame.localCheckpoint(eager=True) if reused else frame
    structs = [
        F.struct(
            *[
                F.lit(value).cast(field.dataType).alias(field.name)
                for value, field in zip(row, fields, strict=True)
            ]
        )
        for row in rows
    ]
    return spark.range(1).select(F.inline(F.array(*structs)))
