"""Histories as Parquet files, the columnar twin of the JSONL format, for Spark.

Columns: ``index`` and ``time`` (int64), ``process``, ``type``, ``f``, ``key``, ``run``
(string; ``key`` and ``run`` nullable) and ``value`` (the op's JSON-shaped value as JSON
text, because a value may be a number, a string, a list or an object). A process id is
stored as text: digits read back as an integer process, anything else as a name
("nemesis").

Read in record batches and written in row groups, so neither side holds the history in
memory. The "line" of an op read from Parquet is its 1-based row number.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from jepsen_py.history.jsonl import RecordError, op_from_record
from jepsen_py.history.op import Op
from jepsen_py.history.validate import HistoryError, Rejections
from jepsen_py.history.writer import HistoryWriter

SCHEMA = pa.schema(
    [
        ("index", pa.int64()),
        ("time", pa.int64()),
        ("process", pa.string()),
        ("type", pa.string()),
        ("f", pa.string()),
        ("key", pa.string()),
        ("value", pa.string()),
        ("run", pa.string()),
    ]
)

ROW_GROUP_SIZE = 65_536
"""Ops buffered per row group: large enough for Parquet's compression to pay, small enough
to keep the writer's memory flat."""


def _process_from_text(text: str | None) -> int | str | None:
    if text is None:
        return None
    return int(text) if text.isdigit() else text


def read_parquet(
    path: str | os.PathLike[str],
    rejections: Rejections | None = None,
    *,
    batch_size: int = ROW_GROUP_SIZE,
) -> Iterator[Op]:
    """Stream the ops of a Parquet history, one record batch at a time. Missing optional
    columns (``key``, ``value``, ``run``, ``index``, ``time``) are allowed."""
    name = str(path)
    sink = rejections if rejections is not None else Rejections(name, strict=True)
    try:
        source = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise HistoryError(f"{name}: not a readable Parquet file: {exc}") from exc
    columns = set(source.schema_arrow.names)
    missing = {"process", "type", "f"} - columns
    if missing:
        raise HistoryError(
            f"{name}: Parquet history lacks column(s) {', '.join(sorted(missing))}; "
            f"expected the columns {', '.join(SCHEMA.names)}"
        )
    row = 0
    ordinal = 0
    for batch in source.iter_batches(batch_size=batch_size):
        data = batch.to_pydict()
        size = batch.num_rows
        values = data.get("value", [None] * size)
        for i in range(size):
            row += 1
            record = {column: data[column][i] for column in data if column != "value"}
            record["process"] = _process_from_text(record.get("process"))
            for optional in ("index", "time"):
                if record.get(optional) is None:
                    record.pop(optional, None)
            text = values[i]
            try:
                record["value"] = orjson.loads(text) if text is not None else None
                op = op_from_record(record, ordinal, row)
            except orjson.JSONDecodeError as exc:
                sink.reject(row, f"column 'value' is not JSON text ({exc.args[0]})")
                continue
            except RecordError as exc:
                sink.reject(row, str(exc), key=record.get("key"))
                continue
            ordinal += 1
            yield op


class ParquetHistoryWriter(HistoryWriter):
    """Write ops to a Parquet history incrementally, one row group per `ROW_GROUP_SIZE`."""

    def __init__(self, path: str | os.PathLike[str], *, row_group_size: int = ROW_GROUP_SIZE):
        self._writer = pq.ParquetWriter(str(path), SCHEMA)
        self._rows: dict[str, list[object]] = {name: [] for name in SCHEMA.names}
        self._size = row_group_size
        self.count = 0

    def write(self, op: Op) -> None:
        rows = self._rows
        rows["index"].append(op.index)
        rows["time"].append(op.time)
        rows["process"].append(str(op.process))
        rows["type"].append(op.type)
        rows["f"].append(op.f)
        rows["key"].append(op.key)
        rows["value"].append(orjson.dumps(op.value).decode())
        rows["run"].append(op.run)
        self.count += 1
        if len(rows["index"]) >= self._size:
            self._flush()

    def _flush(self) -> None:
        if self._rows["index"]:
            self._writer.write_table(pa.Table.from_pydict(self._rows, schema=SCHEMA))
            self._rows = {name: [] for name in SCHEMA.names}

    def close(self) -> None:
        self._flush()
        self._writer.close()


def write_parquet(
    path: str | os.PathLike[str], ops: Iterable[Op], *, row_group_size: int = ROW_GROUP_SIZE
) -> int:
    """Write ``ops`` to ``path``; returns how many were written."""
    with ParquetHistoryWriter(path, row_group_size=row_group_size) as writer:
        for op in ops:
            writer.write(op)
        return writer.count
