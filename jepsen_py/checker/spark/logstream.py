"""The anomaly pass over a big key on Spark: the shared `anomalies.Observer`, streamed.

The SQL log checker (`logsql`) does not formulate the anomaly taxonomy a second time: each
big key's lines (with the ``assign`` and ``subscribe`` lines of its run, handed to it as
copies) are sorted by position within one partition and fed to one `anomalies.Observer`
(``mapPartitions``), which holds integers and values per offset and per value, never the
key's ops. What it found travels back to the driver as JSON.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from jepsen_py.checker.anomalies import FinalRead, KeyAnomalies, Observer, Problem
from jepsen_py.checker.engine import refusal
from jepsen_py.checker.spark.keycheck import (
    COPY,
    JobSpec,
    LineError,
    decode_record,
    file_of,
    line_of,
)
from jepsen_py.checker.taxonomy import ANOMALIES, REASSIGN_FS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def stream_anomalies(
    spark: SparkSession, lines: DataFrame, spec: JobSpec, n: int
) -> dict[int, KeyAnomalies]:
    """Run the anomaly pass (`anomalies.Observer`) over each gid of ``lines`` (``gid``,
    ``pos``, ``text``; copies of other keys' assign/subscribe lines included): the lines
    of a gid are sorted by position within one partition and streamed through one
    observer (``mapPartitions`` over the sorted rows), which keeps per offset and value,
    never the ops."""
    partitions = max(1, min(n, spark.sparkContext.defaultParallelism * 2))
    rows = (
        lines.select("gid", "pos", "text")
        .repartition(partitions, "gid")
        .sortWithinPartitions("gid", "pos")
        .rdd.mapPartitions(functools.partial(_observe_rows, spec))
        .collect()
    )
    return {int(gid): _found_from_json(found) for gid, found in rows}


def _observe_rows(spec: JobSpec, rows: Any) -> Any:
    """The function of `stream_anomalies` (runs in a Python worker): (gid, found JSON) of
    every gid of a partition whose rows come sorted by (gid, pos)."""
    gid: int | None = None
    observer: Observer | None = None

    def done() -> tuple[int, str | None]:
        assert observer is not None and gid is not None
        keys = observer.finish()
        return gid, _found_to_json(keys[0] if keys else None)

    for g, pos, text in rows:
        if g != gid:
            if observer is not None:
                yield done()
            gid, observer = g, Observer(spec.max_witnesses)
        assert observer is not None
        copy = text[:1] == COPY
        if copy:
            text = text[1:]
        file_id, line = file_of(pos), line_of(pos)
        try:
            op, _ = decode_record(spec.formats[file_id], text, spec.ordinal(file_id, line), line)
        except LineError:
            continue
        if op is None or not op.is_client or (copy and op.f not in REASSIGN_FS):
            continue
        if refusal(op) is not None:
            continue  # a txn op: refused (`logsql`), the local engine's observer never sees it
        where = f"line {op.line}" if op.line is not None else f"index {op.index}"
        observer.feed(pos, op.run, op.process, op.type, op.f, op.key, op.value, where=where)
    if observer is not None:
        yield done()


def _found_to_json(found: KeyAnomalies | None) -> str | None:
    if found is None:
        return None
    return orjson.dumps(
        {
            "counts": found.counts,
            "witnesses": {n: [list(w) for w in ws] for n, ws in found.witnesses.items()},
            "problems": [[p.reason, list(p.positions), p.premise] for p in found.problems],
            "final": attrs.astuple(found.final),
            "run": found.run,
            "key": found.key,
        }
    ).decode()


def _found_from_json(text: str | None) -> KeyAnomalies:
    if text is None:
        return KeyAnomalies(None, None, dict.fromkeys(ANOMALIES, 0), {})
    data = orjson.loads(text)
    return KeyAnomalies(
        data["run"],
        data["key"],
        data["counts"],
        {n: tuple(tuple(w) for w in ws) for n, ws in data["witnesses"].items()},
        tuple(Problem(r, tuple(p), premise) for r, p, premise in data["problems"]),
        FinalRead(*data["final"]),
    )
