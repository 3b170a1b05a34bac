"""The exact Kafka-log checker and the anomaly taxonomy as Spark SQL: sorts, joins and
window functions, for keys too big for one Python worker.

`kafka_log.check_log` reads a key's ops once into dicts and scans its offsets; here every
step of that reading is a relational one, so the work of one enormous partition log is
spread over the cluster. Only the parse of each line is Python (`line_fields`, a UDF: the
same parser as the local readers, each line alone, no per-key state). The semantics are
`check_log`'s exactly (the conditions 1-5 of its docstring), in its order:

- **pairing**: a completion's invocation is the previous op of its process on this key
  (``lag`` over (key, process) by position); processes whose ops interleave across keys
  are found and settled by the job as for every other key;
- **the first problem of the reading pass** (`check_log` stops at it, and whether it is
  ILLEGAL or UNKNOWN depends on which comes first): each op's own problems (a malformed
  ack or poll, an echo of another value, a negative offset, a record out of order or at
  or above the high watermark) are found by the UDF per op, except a poll's first record
  against its invocation's ``from`` (a join of the pair); conflicting observations
  (one offset, two values: inconsistent offsets; one value, two offsets: duplicate) are
  an aggregation: an observation conflicts iff its value differs from the first value
  seen at its offset, or its offset from the first offset its value was seen at; a value
  sent twice is a ``row_number`` over (key, value). The first of all of them, by
  (position, record), decides;
- **reads of values never sent or whose send failed**, sends acknowledged without offset
  nobody read: anti-joins;
- **gaps** (offsets of ``[0, L)`` nobody observed): ``L`` and the number of observed
  offsets are aggregates; the ``m`` earliest-invoked unobserved sends of unknown outcome
  are ranked (``row_number`` over the unknown-outcome sends alone, a small share);
- **the scan** ``max(start_0..start_k) < end_k``: start contributions (the invocation of
  the send at each observed offset, and of every poll with ``hw = k``) and end
  constraints (the ack of the send at ``k``, the completion of every poll with
  ``hw = k + 1``) are rows on the offset axis; the prefix maximum is computed per bucket
  of `BUCKET` offsets (a window per bucket, in parallel), the buckets' maxima carried
  by a window over the (few) buckets, joined back. The filler of the ``i``-th gap is the
  ``i``-th ranked send, so the fillers' prefix maximum at ``k`` is the ranked send number
  ``k + 1 - (observed offsets <= k)`` (a prefix count, the same bucketed scan). The first
  offset where the maximum reaches the end constraint is the violation.

The anomaly taxonomy (Kafka's guarantees) is the shared pass of `anomalies` itself, not a
second formulation: each big key's lines are sorted by position within a partition and
streamed through one `anomalies.Observer` (`stream_anomalies`, a ``mapInArrow``), which
holds integers and values per offset and value, never the key's ops; the ``assign`` and
``subscribe`` lines of the key's run come with them. The key's verdict is then
`verdict.key_verdict`, the one every engine calls.

The linearizability result is `check_log`'s: the explanation of a problem found by SQL
is written by running `check_log` on the handful of ops that witness it (their index and
line are in every message), or, for a gap or the scan, with `check_log`'s own
`explain_order`. ``test_spark_verify`` checks verdicts, explanations and anomaly counts
against the local checkers on hundreds of generated histories.

Offsets and high watermarks must fit in 62 bits; an op with a larger one makes the key
UNKNOWN here (the local engine decides it).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from jepsen_py.checker.anomalies import (
    ANOMALIES,
    REASSIGN_FS,
    FinalRead,
    KeyAnomalies,
    Observer,
    Problem,
)
from jepsen_py.checker.kafka_log import check_log, explain_order, freeze, show, where
from jepsen_py.checker.records import KeyResult
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.spark.frames import local_frame
from jepsen_py.checker.spark.keycheck import (
    COPY,
    FILE_RUN,
    INF_POS,
    PAIR_DONE,
    PAIR_INFO,
    PAIR_PENDING,
    PAIR_STRAY,
    JobSpec,
    LineError,
    decode_record,
    file_of,
    line_of,
    log_fields,
    process_id,
    process_repr,
)
from jepsen_py.checker.spark.records import Group, Rejected
from jepsen_py.checker.verdict import key_verdict
from jepsen_py.history.op import Op

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

BUCKET = 1 << 16
"""Offsets per bucket of the distributed prefix scans."""

LIMIT = 1 << 62
"""Offsets, high watermarks and ``from`` must stay below this (in a long, with room)."""


# A send ok (``ack``): how `check_log` reads it.
ACK_OK, ACK_NOT_DICT, ACK_NO_OFFSET, ACK_NOT_INT, ACK_NEGATIVE, ACK_HUGE = range(6)
# A poll ok (``pkind``).
POLL_OK, POLL_MALFORMED, POLL_NEGATIVE_HW, POLL_HUGE = range(4)
# A record of a poll (``bad``): the first check it fails.
REC_OK, REC_UNPACK, REC_NOT_INT, REC_GAP, REC_NEGATIVE, REC_ABOVE_HW, REC_HUGE = range(7)
# A poll's ``from`` (``fkind``).
FROM_NONE, FROM_INT, FROM_OTHER = range(3)

LINE_DDL = (
    "acc boolean, reason string, rkey string, run string, okey string, proc string, pid long, "
    "client boolean, type string, f string, defaulted boolean, "
    "val string, ack int, off long, echo string, aoff long, "
    "fkind int, fnum long, fstrict long, final boolean, "
    "pkind int, pdict boolean, hw long, "
    "recs array<struct<k:int, off:long, val:string, bad:int, wf:boolean>>, "
    "first_bad int, intra_back boolean, gaps array<struct<a:long, b:long>>, "
    "first_wf long, last_wf long"
)
"""What `line_fields` makes of a line (see there)."""


def canon(value: Any) -> str:
    """A text that two JSON values share iff `kafka_log.freeze` makes them equal (Python
    equality: 1 == 1.0 == True; a dict equals its sorted item pairs)."""
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is bool:
        return "1" if value else "0"
    if kind is float:
        return str(int(value)) if value.is_integer() else repr(value)
    if kind is str:
        return orjson.dumps(value).decode()
    if value is None:
        return "null"
    if kind is list or kind is tuple:
        return "[" + ",".join(canon(v) for v in value) + "]"
    if kind is dict:
        items = sorted(value.items(), key=lambda item: item[0])
        return "[" + ",".join(f"[{canon(k)},{canon(v)}]" for k, v in items) + "]"
    return "?" + repr(value)


def _int(value: Any) -> int | None:
    """``value`` as an int when `check_log` compares it equal to one, else None."""
    if type(value) is int or type(value) is bool:
        return int(value)
    if type(value) is float and value.is_integer():
        return int(value)
    return None


def line_fields(spec: JobSpec, pos: int, text: str) -> tuple[Any, ...]:
    """One line as the SQL checker's columns (`LINE_DDL`): what `check_log` and the
    anomaly finders would read from this op, each line alone."""
    file_id, line = file_of(pos), line_of(pos)
    out: dict[str, Any] = {"acc": False}
    try:
        op, defaulted = decode_record(
            spec.formats[file_id], text, spec.ordinal(file_id, line), line
        )
    except LineError as exc:
        out["reason"] = exc.reason
        out["rkey"] = exc.key if isinstance(exc.key, str) or exc.key is None else str(exc.key)
        return _row(out)
    if op is None:
        return _row(out)
    out.update(
        acc=True,
        run=op.run,
        okey=op.key,
        proc=process_repr(op.process),
        pid=process_id(op.process),
        client=op.is_client,
        type=op.type,
        f=op.f,
        defaulted=defaulted,
    )
    if op.f == "send":
        if op.type == "invoke":
            out["val"] = canon(op.value)
        elif op.type == "ok":
            _send_ok(op.value, out)
    elif op.f == "poll":
        if op.type == "invoke":
            _poll_invoke(op.value, out)
        elif op.type == "ok":
            _poll_ok(op.value, out)
    return _row(out)


_FIELDS = [
    "acc", "reason", "rkey", "run", "okey", "proc", "pid", "client", "type", "f", "defaulted",
    "val", "ack", "off", "echo", "aoff", "fkind", "fnum", "fstrict", "final",
    "pkind", "pdict", "hw", "recs", "first_bad", "intra_back", "gaps", "first_wf", "last_wf",
]  # fmt: skip


def _row(out: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(out.get(name) for name in _FIELDS)


def _send_ok(value: Any, out: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        out["ack"] = ACK_NOT_DICT
        return
    if "value" in value:
        out["echo"] = canon(value["value"])
    offset = value.get("offset")
    if type(offset) is int and -LIMIT < offset < LIMIT:
        out["aoff"] = offset
    if offset is None:
        out["ack"] = ACK_NO_OFFSET
    elif type(offset) is not int:
        out["ack"] = ACK_NOT_INT
    elif offset < 0:
        out["ack"] = ACK_NEGATIVE
    elif offset >= LIMIT:
        out["ack"] = ACK_HUGE
    else:
        out["ack"], out["off"] = ACK_OK, offset


def _poll_invoke(value: Any, out: dict[str, Any]) -> None:
    start = value.get("from") if isinstance(value, dict) else None
    out["final"] = isinstance(value, dict) and value.get("final") is True
    if type(start) is int and -LIMIT < start < LIMIT:
        out["fstrict"] = start
    if start is None:
        out["fkind"] = FROM_NONE
        return
    number = _int(start)
    if number is not None and -LIMIT < number < LIMIT:
        out["fkind"], out["fnum"] = FROM_INT, number
    else:
        out["fkind"] = FROM_OTHER


def _poll_ok(value: Any, out: dict[str, Any]) -> None:
    out["pdict"] = isinstance(value, dict)
    records = value.get("records") if isinstance(value, dict) else None
    hw = value.get("hw") if isinstance(value, dict) else None
    if not isinstance(records, list) or type(hw) is not int:
        out["pkind"] = POLL_MALFORMED
    elif hw < 0:
        out["pkind"] = POLL_NEGATIVE_HW
    elif hw >= LIMIT:
        out["pkind"] = POLL_HUGE
    else:
        out["pkind"], out["hw"] = POLL_OK, hw
    if not isinstance(records, list):
        return
    recs: list[tuple[Any, ...]] = []
    first_bad = -1
    previous: int | None = None
    wf_previous: int | None = None
    gaps: list[tuple[int, int]] = []
    back = False
    first_wf: int | None = None
    for k, record in enumerate(records):
        wf = isinstance(record, list | tuple) and len(record) == 2 and type(record[0]) is int
        try:
            offset, item = record
        except (TypeError, ValueError):
            recs.append((k, None, None, REC_UNPACK, False))
            first_bad = k if first_bad < 0 else first_bad
            continue
        fits = type(offset) is int and -LIMIT < offset < LIMIT
        val = canon(item)
        bad = REC_OK
        if type(offset) is not int:
            bad = REC_NOT_INT
        elif not fits:
            bad = REC_HUGE
        elif k > 0 and previous is not None and offset != previous + 1:
            bad = REC_GAP
        elif offset < 0:
            bad = REC_NEGATIVE
        elif out.get("hw") is not None and offset >= out["hw"]:
            bad = REC_ABOVE_HW
        recs.append((k, offset if fits else None, val, bad, wf and fits))
        if bad != REC_OK and first_bad < 0:
            first_bad = k
        previous = offset if fits and bad in (REC_OK, REC_NEGATIVE, REC_ABOVE_HW) else None
        if wf and fits:
            if wf_previous is not None:
                if offset < wf_previous + 1:
                    back = True
                elif offset > wf_previous + 1:
                    gaps.append((wf_previous + 1, offset))
            else:
                first_wf = offset
            wf_previous = offset
    out.update(
        recs=recs,
        first_bad=first_bad,
        intra_back=back,
        gaps=gaps,
        first_wf=first_wf,
        last_wf=wf_previous,
    )


# --- the SQL ---------------------------------------------------------------------------


@attrs.frozen
class SqlResult:
    """What the SQL path found for its keys: results, rejected lines, and the pair table,
    read from cached data that `release` frees once the processes are settled."""

    groups: list[Group]
    rejected: list[Rejected]
    pairs: DataFrame
    release: Callable[[], None]


def check_keys(
    spark: SparkSession,
    frame: DataFrame,
    keys: set[tuple[str, str | None]],
    spec: JobSpec,
    exclude: Mapping[tuple[str, str | None], Sequence[int]] | None = None,
) -> SqlResult:
    """Check the (run, key) groups ``keys`` of ``frame`` by Spark SQL."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    started = time.perf_counter()
    idents = sorted(keys, key=lambda g: (g[0], g[1] is None, str(g[1])))
    table = local_frame(
        spark,
        [(run, key, gid) for gid, (run, key) in enumerate(idents)],
        "g_run string, g_key string, gid long",
    )
    chosen = frame.join(
        F.broadcast(table),
        (frame.run_eff == table.g_run) & frame.key.eqNullSafe(table.g_key),
    )
    if exclude:
        positions = [(pos,) for excluded in exclude.values() for pos in excluded]
        left_out = local_frame(spark, positions, "x_pos long")
        chosen = chosen.join(F.broadcast(left_out), chosen.pos == left_out.x_pos, "left_anti")
    # the anomaly pass reads the copies of other keys' assign/subscribe lines; SQL does not
    with_copies = chosen
    chosen = chosen.where(~F.col("text").startswith(COPY))
    udf = F.udf(functools.partial(line_fields, spec), LINE_DDL, useArrow=False)
    parsed = (
        chosen.select("gid", "g_run", "g_key", "pos", udf("pos", "text").alias("p"))
        .select("gid", "g_run", "g_key", "pos", "p.*")
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    stream: DataFrame | None = None
    try:
        file_run = F.concat(F.lit(FILE_RUN), F.shiftright(F.col("pos"), 40).cast("string"))
        fits = (F.coalesce(F.col("run"), file_run) == F.col("g_run")) & F.col("okey").eqNullSafe(
            F.col("g_key")
        )
        client = F.col("acc") & F.col("client")
        rows = (
            parsed.groupBy("gid")
            .agg(
                F.sum(F.when(client & ~fits, 1).otherwise(0)).alias("mismatches"),
                F.sum(F.when(client & fits, 1).otherwise(0)).alias("ops"),
                F.sum(F.when(client & fits & F.col("f").isin("send", "poll"), 1).otherwise(0))
                .alias("log_ops"),
                F.array_sort(F.collect_set(F.when(client & fits, F.col("f")))).alias("fs"),
                F.max(F.when(client & fits, F.col("defaulted"))).alias("defaulted"),
                F.array_distinct(F.collect_list(F.shiftright(F.col("pos"), 40))).alias("files"),
                F.slice(
                    F.array_sort(F.collect_list(F.when(
                        F.col("reason").isNotNull(), F.struct("pos", "reason", "rkey")
                    ))),
                    1,
                    100_000,
                ).alias("rejected"),
            )
            .collect()
        )  # fmt: skip
        stats = {r["gid"]: r for r in rows}
        rejected = [
            Rejected(x["pos"], x["reason"], x["rkey"], None, "parse")
            for r in rows
            for x in r["rejected"] or ()
        ]
        rejected.sort(key=lambda r: r.pos)
        # materialized with its lineage cut: every query below starts from it, and plans
        # that carry the whole lineage take longer to plan than small inputs take to run
        stream = _stream(parsed.where(client & fits)).localCheckpoint(eager=True)
        pairs = (
            _pair_table(stream)
            .join(F.broadcast(table), "gid")
            .select(F.col("g_run").alias("run_eff"), "proc", "inv", "comp", "kind")
        )
        checked: dict[int, dict[str, Any]] = {}
        if not any(int(r["mismatches"] or 0) for r in stats.values()):
            # (a mismatch sends the whole job down the exact path: no use checking now)
            texts = chosen.select("pos", "text")
            found = stream_anomalies(spark, with_copies, spec, len(idents))
            checked = _Checker(spark, stream, texts, spec, len(idents)).run(found)
    except BaseException:
        if stream is not None:
            stream.unpersist()
        parsed.unpersist()
        raise
    held = [stream, parsed]

    def release() -> None:
        for frame_ in held:
            frame_.unpersist()

    seconds = time.perf_counter() - started
    groups = []
    for gid, (run, key) in enumerate(idents):
        row = stats.get(gid)
        result = checked.get(gid, {})
        fs = tuple(row["fs"] or ()) if row else ()
        ops = int(row["ops"] or 0) if row else 0
        log_ops = int(row["log_ops"] or 0) if row else 0
        if fs and set(fs) <= REASSIGN_FS:
            result = {}  # assign/subscribe alone: handed to the keys, no key of its own
        groups.append(
            Group(
                run_eff=run,
                key=key,
                files=tuple(sorted(int(f) for f in (row["files"] or ()))) if row else (),
                model="log" if result else None,
                verdict=result.get("verdict"),
                ops=log_ops,
                seconds=seconds / max(1, len(idents)),
                explanation=result.get("explanation"),
                witness=result.get("witness"),
                anomalies=result.get("anomalies"),
                kafka=result.get("kafka"),
                linearizable=result.get("linearizable"),
                consistency=result.get("consistency"),
                violations=tuple(result.get("violations") or ()),
                fs=fs,
                mismatches=int(row["mismatches"] or 0) if row else 0,
                client_ops=ops,
                needs_ordinal=bool(row["defaulted"]) if row else False,
                timed_out=False,
                engine="sql",
            )
        )
    return SqlResult(groups, rejected, pairs, release)


def _stream(ops: DataFrame) -> DataFrame:
    """Every op with what its process did around it, from one window over (key, process)
    by position: the invocation a completion completes (``i_*``) and the op after it
    (``n_*``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = Window.partitionBy("gid", "proc").orderBy("pos")
    previous = [
        F.lag(c).over(order).alias(f"i_{c}")
        for c in ("type", "f", "pos", "val", "fkind", "fnum", "fstrict")
    ]
    following = [F.lead(c).over(order).alias(f"n_{c}") for c in ("type", "f", "pos")]
    first = ops.select("*", *previous, *following)
    matched = (
        (F.col("type") != "invoke") & (F.col("i_type") == "invoke") & (F.col("i_f") == F.col("f"))
    )
    return first.select("*", matched.alias("matched"))


def _pair_table(stream: DataFrame) -> DataFrame:
    """(gid, proc, inv, comp, kind) rows, as `keycheck._Pairs` makes them per key."""
    from pyspark.sql import functions as F

    invoke = F.col("type") == "invoke"
    completes = (F.col("n_type") != "invoke") & (F.col("n_f") == F.col("f"))
    invokes = stream.where(invoke).select(
        "gid",
        F.col("pid").alias("proc"),
        F.col("pos").alias("inv"),
        F.when(completes, F.col("n_pos")).otherwise(F.lit(INF_POS)).alias("comp"),
        F.when(~F.coalesce(completes, F.lit(False)), F.lit(PAIR_PENDING))
        .when(F.col("n_type") == "info", F.lit(PAIR_INFO))
        .otherwise(F.lit(PAIR_DONE))
        .alias("kind"),
    )
    strays = stream.where(~invoke & ~F.col("matched")).select(
        "gid", F.col("pid").alias("proc"), F.col("pos").alias("inv"),
        F.lit(-1).cast("long").alias("comp"), F.lit(PAIR_STRAY).alias("kind"),
    )  # fmt: skip
    return invokes.unionByName(strays)


def prefix_scan(events: DataFrame, value: str, count: str, bucket: int = BUCKET) -> DataFrame:
    """Each row of ``events`` (``gid``, ``x``, ``ord``, ...) with ``pmax``, the maximum of
    ``value`` over the rows of its gid at or before it in (x, ord) order, and ``pcnt``,
    the sum of ``count`` over them: a prefix scan by buckets of ``bucket`` values of
    ``x``, each bucket a window of its own (in parallel), the buckets' totals carried by a
    window over the buckets. Rows tied on (x, ord) see each other in some order: give
    the rows that read the prefix an ``ord`` after those that make it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    with_bucket = events.withColumn("_bucket", F.floor(F.col("x") / F.lit(bucket)).cast("long"))
    totals = with_bucket.groupBy("gid", "_bucket").agg(
        F.max(value).alias("bmax"), F.sum(count).alias("bsum")
    )
    before = Window.partitionBy("gid").orderBy("_bucket").rowsBetween(Window.unboundedPreceding, -1)
    carried = totals.select(
        "gid",
        "_bucket",
        F.max("bmax").over(before).alias("cmax"),
        F.sum("bsum").over(before).alias("csum"),
    )
    within = (
        Window.partitionBy("gid", "_bucket")
        .orderBy("x", "ord")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    scanned = with_bucket.withColumn("imax", F.max(value).over(within)).withColumn(
        "isum", F.sum(count).over(within)
    )
    return (
        scanned.join(carried, ["gid", "_bucket"])
        .withColumn("pmax", F.greatest(F.col("imax"), F.col("cmax")))
        .withColumn("pcnt", F.coalesce(F.col("csum"), F.lit(0)) + F.col("isum"))
        .drop("imax", "isum", "cmax", "csum", "_bucket")
    )


class _Checker:
    """The SQL of the module docstring for a set of keys (``gid``) at once, on `_stream`.

    Three tables carry it: the stream itself (per op), the value table (per key and value:
    its sends, first ack, first fail, observations, reads) and the offset table (per key
    and offset: its observations); each is one shuffle, everything else reads them."""

    def __init__(
        self, spark: SparkSession, stream: DataFrame, texts: DataFrame, spec: JobSpec, n: int
    ) -> None:
        self.spark = spark
        self.stream = stream
        self.texts = texts
        self.spec = spec
        self.n = n

    def run(self, found: dict[int, KeyAnomalies]) -> dict[int, dict[str, Any]]:
        """Per gid, the key's result columns (`keycheck.log_fields`): linearizability
        from the SQL, Kafka's guarantees from ``found``, the verdict from
        `verdict.key_verdict`."""
        facts = self._facts()
        values = self._value_table(facts).localCheckpoint(eager=True)
        offsets = self._offset_table(facts).localCheckpoint(eager=True)
        try:
            first, keyed = self._problems(values, offsets)
        finally:
            values.unpersist()
            offsets.unpersist()
        positions: set[int] = set()
        for detail in [*first.values(), *keyed.values()]:
            positions.update(p for p in detail.get("refs", ()) if p is not None and p >= 0)
        for anomalies in found.values():
            for witnesses in anomalies.witnesses.values():
                for group in witnesses:
                    positions.update(group)
            for problem in anomalies.problems:
                positions.update(problem.positions)
        ops_at = self._ops_at(positions)
        results: dict[int, dict[str, Any]] = {}
        for gid in range(self.n):
            if gid in first:
                detail = first[gid]
                verdict, explanation, witness = _replay(
                    detail["refs"], ops_at, Verdict(detail["verdict"])
                )
            else:
                verdict, explanation, witness = self._explain_key(keyed.get(gid), ops_at)
            if gid in found:
                results[gid] = _key_fields(
                    verdict, explanation, witness, found[gid], ops_at, self.spec
                )
        return results

    def _problems(
        self, values: DataFrame, offsets: DataFrame
    ) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]]]:
        """One job: per gid the first problem of the reading pass, and the figures of the
        conditions on the whole key; then the scan for the keys that need it."""
        from pyspark.sql import functions as F

        reading = self._first_read_problems(values, offsets)
        whole = self._key_figures(values)
        rows = reading.join(whole, "gid", "full").collect()
        first: dict[int, dict[str, Any]] = {}
        figures: dict[int, Any] = {}
        for row in rows:
            x = row["x"]
            if x is not None:
                refs = sorted({int(p) for p in x["refs"] if p is not None})
                first[row["gid"]] = {"verdict": x["verdict"], "refs": refs}
            else:
                figures[row["gid"]] = row
        keyed: dict[int, dict[str, Any]] = {}
        scan: list[int] = []
        length: dict[int, int] = {}
        gaps: dict[int, int] = {}
        proofs: list[tuple[int, int]] = []
        for gid in range(self.n):
            if gid in first:
                continue
            detail = _whole_key(figures.get(gid), length, gaps, gid)
            if detail is None:
                if length.get(gid, 0) > 0:
                    scan.append(gid)
                continue
            keyed[gid] = detail
            if "proof_offset" in detail:
                proofs.append((gid, detail["proof_offset"]))
        if proofs:
            self._offset_proofs(values, proofs, keyed)
        for detail in keyed.values():
            if detail["kind"] == "fillers":
                detail["refs"] = [detail["proof"]]
        if scan:
            polls = self._polls().where(F.col("pkind") == POLL_OK)
            self._scan(values, polls, scan, length, gaps, keyed)
        return first, keyed

    # -- the tables --

    def _polls(self) -> DataFrame:
        from pyspark.sql import functions as F

        s = self.stream
        return s.where(F.col("matched") & (F.col("f") == "poll") & (F.col("type") == "ok"))

    def _facts(self) -> DataFrame:
        """One row per fact about a value: a send (``SEND``), its first ack (``ACK``), its
        fail (``FAIL``), a record a poll returned (``REC``); with whether `check_log`
        observes it before stopping (``cobs``, at ``coff``) and whether the anomaly
        finders see it (``aobs``, at ``aoff``)."""
        from pyspark.sql import functions as F

        s = self.stream
        none_long = F.lit(None).cast("long")
        no = F.lit(False)
        sends = s.where((F.col("type") == "invoke") & (F.col("f") == "send")).select(
            "gid", "val", F.lit(0).alias("kind"), "pos", F.lit(0).alias("k"),
            none_long.alias("coff"), none_long.alias("aoff"), F.lit(None).cast("int").alias("ack"),
            no.alias("cobs"), no.alias("aobs"),
        )  # fmt: skip
        completions = s.where(F.col("matched") & (F.col("f") == "send"))
        echo_bad = F.col("echo").isNotNull() & (F.col("echo") != F.col("i_val"))
        acks = completions.where(F.col("type") == "ok").select(
            "gid", F.col("i_val").alias("val"), F.lit(1).alias("kind"), "pos", F.lit(0).alias("k"),
            F.col("off").alias("coff"), "aoff", "ack",
            ((F.col("ack") == ACK_OK) & ~echo_bad).alias("cobs"), F.col("aoff").isNotNull().alias(
                "aobs"),
        )  # fmt: skip
        fails = completions.where(F.col("type") == "fail").select(
            "gid", F.col("i_val").alias("val"), F.lit(2).alias("kind"), "pos", F.lit(0).alias("k"),
            none_long.alias("coff"), none_long.alias("aoff"), F.lit(None).cast("int").alias("ack"),
            no.alias("cobs"), no.alias("aobs"),
        )  # fmt: skip
        record0 = _at("recs", 0)
        contiguous0 = (F.col("i_fkind") == FROM_NONE) | (
            (F.col("i_fkind") == FROM_INT) & (record0["off"] == F.col("i_fnum"))
        )
        stop = (
            F.when(F.col("pkind") != POLL_OK, 0)
            .when(record0["bad"] != REC_OK, 0)
            .when(~contiguous0, 0)
            .when(F.col("first_bad") > 0, F.col("first_bad"))
            .otherwise(F.size("recs"))
        )
        records = (
            self._polls()
            .where(F.size("recs") > 0)
            .select("gid", "pos", "pdict", stop.alias("stop"), F.explode("recs").alias("r"))
            .select(
                "gid", F.col("r.val").alias("val"), F.lit(3).alias("kind"), "pos",
                F.col("r.k").alias("k"), F.col("r.off").alias("coff"),
                F.col("r.off").alias("aoff"), F.lit(None).cast("int").alias("ack"),
                (F.col("r.k") < F.col("stop")).alias("cobs"),
                (F.col("pdict") & F.col("r.wf")).alias("aobs"),
            )
        )  # fmt: skip
        return sends.unionByName(acks).unionByName(fails).unionByName(records)

    def _value_table(self, facts: DataFrame) -> DataFrame:
        """Per (gid, value): its sends' invocations (sorted), its first ack (position,
        kind, anomaly offset), its first fail, `check_log`'s observations of it (sorted by
        position and record), the anomaly finders' (by offset), its first read."""
        from pyspark.sql import functions as F

        kind = F.col("kind")
        return facts.where(F.col("val").isNotNull()).groupBy("gid", "val").agg(
            F.array_sort(F.collect_list(F.when(kind == 0, F.col("pos")))).alias("sends"),
            F.min(F.when(kind == 1, F.struct("pos", "ack", "aoff"))).alias("ack"),
            F.min(F.when(kind == 2, F.col("pos"))).alias("fail"),
            F.array_sort(F.collect_list(F.when(F.col("cobs"), F.struct("pos", "k", "coff"))))
            .alias("cobs"),
            F.array_sort(F.collect_list(F.when(F.col("aobs"), F.struct("aoff", "pos", "k"))))
            .alias("aobs"),
            F.min(F.when((kind == 3) & F.col("aobs"), F.col("pos"))).alias("read"),
        )  # fmt: skip

    def _offset_table(self, facts: DataFrame) -> DataFrame:
        """Per (gid, offset): `check_log`'s observations there (sorted by position and
        record), the anomaly finders' (by value), the first read."""
        from pyspark.sql import functions as F

        seen = facts.where(F.col("cobs")).select(
            "gid", F.col("coff").alias("off"), "val", "pos", "k", F.lit(True).alias("c"),
            F.lit(False).alias("a"), F.lit(False).alias("r"),
        ).unionByName(facts.where(F.col("aobs")).select(
            "gid", F.col("aoff").alias("off"), "val", "pos", "k", F.lit(False).alias("c"),
            F.lit(True).alias("a"), (F.col("kind") == 3).alias("r"),
        ))  # fmt: skip
        return seen.groupBy("gid", "off").agg(
            F.array_sort(F.collect_list(F.when(F.col("c"), F.struct("pos", "k", "val"))))
            .alias("cobs"),
            F.array_sort(F.collect_list(F.when(F.col("a"), F.struct("val", "pos", "k"))))
            .alias("aobs"),
            F.min(F.when(F.col("r"), F.col("pos"))).alias("read"),
        )  # fmt: skip

    # -- the reading pass --

    def _first_read_problems(self, values: DataFrame, offsets: DataFrame) -> DataFrame:
        """(gid, x): the first problem of `check_log`'s reading pass, x = (pos, k,
        verdict, refs), refs the ops whose replay in `check_log` reproduces it."""
        from pyspark.sql import functions as F

        s = self.stream
        refs = F.array(F.col("i_pos"), F.col("pos"))
        ack = F.col("ack")
        echo_bad = F.col("echo").isNotNull() & (F.col("echo") != F.col("i_val"))
        verdict = (
            F.when(ack == ACK_NOT_DICT, "unknown")
            .when(echo_bad, "illegal")
            .when(ack.isin(ACK_NOT_INT, ACK_HUGE), "unknown")
            .when(ack == ACK_NEGATIVE, "illegal")
        )
        sends = s.where(F.col("matched") & (F.col("f") == "send") & (F.col("type") == "ok"))
        send_problems = sends.select(
            "gid", "pos", F.lit(0).alias("k"), verdict.alias("verdict"), refs.alias("refs")
        )
        poll_level = (
            F.when(F.col("pkind").isin(POLL_MALFORMED, POLL_HUGE), "unknown")
            .when(F.col("pkind") == POLL_NEGATIVE_HW, "illegal")
        )  # fmt: skip
        record0 = _at("recs", 0)
        contiguous0 = (F.col("i_fkind") == FROM_NONE) | (
            (F.col("i_fkind") == FROM_INT) & (record0["off"] == F.col("i_fnum"))
        )
        k0 = (
            F.when(record0["bad"].isin(REC_UNPACK, REC_NOT_INT, REC_HUGE), "unknown")
            .when(~contiguous0, "illegal")
            .when(record0["bad"].isin(REC_NEGATIVE, REC_ABOVE_HW), "illegal")
        )
        later = _at("recs", F.col("first_bad"))["bad"]
        kn = F.when(later.isin(REC_UNPACK, REC_NOT_INT, REC_HUGE), "unknown").otherwise("illegal")
        problem = (
            F.when(poll_level.isNotNull(), F.struct(F.lit(-1).alias("k"), poll_level.alias("v")))
            .when(F.size("recs") == 0, F.lit(None))
            .when(k0.isNotNull(), F.struct(F.lit(0).alias("k"), k0.alias("v")))
            .when(F.col("first_bad") > 0, F.struct(F.col("first_bad").alias("k"), kn.alias("v")))
        )  # fmt: skip
        polls = (
            self._polls()
            .select("gid", "pos", problem.alias("x"), refs.alias("refs"))
            .select("gid", "pos", F.col("x.k").alias("k"), F.col("x.v").alias("verdict"), "refs")
        )
        twice = values.where(F.size("sends") > 1).select(
            "gid", _at("sends", 1).alias("pos"), F.lit(0).alias("k"),
            F.lit("unknown").alias("verdict"), F.slice("sends", 1, 2).alias("refs"),
        )  # fmt: skip
        # a conflicting observation: its value differs from the first at its offset, or its
        # offset from its value's first; the replay names both first observers
        by_value = values.select(
            "gid", "val", _at("cobs", 0).alias("first"),
            F.get(F.filter("cobs", lambda x: x["coff"] != _at("cobs", 0)["coff"]), 0)
            .alias("clash"),
        ).where(F.col("clash").isNotNull()).select(
            "gid", F.col("clash.pos").alias("pos"), F.col("clash.k").alias("k"),
            F.col("clash.coff").alias("off"), "val",
        )  # fmt: skip
        by_offset = offsets.select(
            "gid", "off",
            F.get(F.filter("cobs", lambda x: x["val"] != _at("cobs", 0)["val"]), 0).alias("clash"),
        ).where(F.col("clash").isNotNull()).select(
            "gid", F.col("clash.pos").alias("pos"), F.col("clash.k").alias("k"), "off",
            F.col("clash.val").alias("val"),
        )  # fmt: skip
        clashes = by_value.unionByName(by_offset).select(
            "gid", "pos", "k", F.lit("illegal").alias("verdict"),
            F.array(F.col("off"), F.lit(None).cast("long")).alias("refs"), "val", "off",
        )  # fmt: skip
        first_at_offset = offsets.select("gid", "off", _at("cobs", 0)["pos"].alias("o_pos"))
        first_of_value = values.select("gid", "val", _at("cobs", 0)["pos"].alias("v_pos"))
        clashes = (
            F.broadcast(by_value.unionByName(by_offset))
            .join(first_at_offset, ["gid", "off"], "left")
            .join(first_of_value, ["gid", "val"], "left")
            .select(
                "gid", "pos", "k", F.lit("illegal").alias("verdict"),
                F.array("o_pos", "v_pos", "pos").alias("refs"),
            )
        )  # fmt: skip
        candidates = (
            send_problems.where(F.col("verdict").isNotNull())
            .unionByName(polls.where(F.col("verdict").isNotNull()))
            .unionByName(twice)
            .unionByName(clashes)
        )
        return candidates.groupBy("gid").agg(
            F.min(F.struct("pos", "k", "verdict", "refs")).alias("x")
        )

    # -- the conditions on the whole key --

    def _key_figures(self, values: DataFrame) -> DataFrame:
        """Per gid, what conditions 2 and 4 of `check_log` need: the first value read that
        was never sent or whose send failed (in the order values were first observed), the
        first send acknowledged without offset nobody read, the highest offset observed,
        the observed and the filler counts, the highest high watermark (first poll)."""
        from pyspark.sql import functions as F

        observed = F.size("cobs") > 0
        sent = F.size("sends") > 0
        filler = sent & ~observed & F.col("fail").isNull()
        bad = observed & (~sent | F.col("fail").isNotNull())
        no_offset = ~observed & (F.col("ack.ack") == ACK_NO_OFFSET)
        per_value = values.groupBy("gid").agg(
            F.min(F.when(bad, F.struct(
                _at("cobs", 0).alias("seen"), _at("cobs", 0)["coff"].alias("off"),
                _at("sends", 0).alias("inv"), F.col("fail").alias("fail"),
            ))).alias("bad"),
            F.min(F.when(no_offset, F.struct(
                F.col("ack.pos").alias("pos"), _at("sends", 0).alias("inv")
            ))).alias("no_offset"),
            F.max(F.when(observed, _at("cobs", 0)["coff"])).alias("max_off"),
            F.sum(F.when(observed, 1).otherwise(0)).alias("n"),
            F.sum(F.when(filler, 1).otherwise(0)).alias("fillers"),
        )  # fmt: skip
        polls = self._polls().where(F.col("pkind") == POLL_OK)
        top = polls.groupBy("gid").agg(
            F.max(F.struct("hw", (-F.col("pos")).alias("npos"))).alias("top")
        )
        return per_value.join(top, "gid", "full")

    def _offset_proofs(
        self, values: DataFrame, proofs: list[tuple[int, int]], out: dict[int, dict[str, Any]]
    ) -> None:
        """The first op that observed each (gid, offset) of ``proofs``."""
        from pyspark.sql import functions as F

        wanted = local_frame(self.spark, proofs, "gid long, off long")
        rows = (
            values.where(F.size("cobs") > 0)
            .select("gid", _at("cobs", 0).alias("first"))
            .join(F.broadcast(wanted), ["gid"])
            .where(F.col("first.coff") == F.col("off"))
            .select("gid", F.col("first.pos").alias("pos"))
            .collect()
        )
        for row in rows:
            out[row["gid"]]["proof"] = int(row["pos"])

    def _scan(
        self,
        values: DataFrame,
        polls: DataFrame,
        gids: list[int],
        length: dict[int, int],
        gaps: dict[int, int],
        out: dict[int, dict[str, Any]],
    ) -> None:
        """Condition 5: the first offset where the latest invocation that bounds it from
        below comes after the earliest completion that bounds it from above."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        keep = F.col("gid").isin(gids)
        lengths = local_frame(
            self.spark, [(g, length[g], gaps[g]) for g in gids], "gid long, length long, gaps long"
        )
        observed = values.where(keep & (F.size("cobs") > 0)).select(
            "gid", "val", _at("cobs", 0)["coff"].alias("x"), _at("sends", 0).alias("inv"),
            F.col("ack.pos").alias("ack"),
        )  # fmt: skip
        none_long = F.lit(None).cast("long")
        starts = observed.select(
            "gid", "x", F.lit(0).alias("ord"), F.col("inv").alias("s"), F.lit(1).alias("c"),
            none_long.alias("e"),
        )  # fmt: skip
        lows = (
            polls.join(F.broadcast(lengths), "gid")
            .where(F.col("hw") < F.col("length"))
            .select(
                "gid", F.col("hw").alias("x"), F.lit(0).alias("ord"), F.col("i_pos").alias("s"),
                F.lit(0).alias("c"), none_long.alias("e"),
            )
        )  # fmt: skip
        ack_ends = observed.where(F.col("ack").isNotNull()).select(
            "gid", "x", F.lit(1).alias("ord"), none_long.alias("s"), F.lit(0).alias("c"),
            F.col("ack").alias("e"),
        )  # fmt: skip
        poll_ends = polls.where(F.col("hw") > 0).select(
            "gid", (F.col("hw") - 1).alias("x"), F.lit(1).alias("ord"), none_long.alias("s"),
            F.lit(0).alias("c"), F.col("pos").alias("e"),
        )  # fmt: skip
        scanned = prefix_scan(
            starts.unionByName(lows).unionByName(ack_ends).unionByName(poll_ends), "s", "c"
        )
        fillers = values.where(
            keep & (F.size("sends") > 0) & (F.size("cobs") == 0) & F.col("fail").isNull()
        ).select("gid", _at("sends", 0).alias("inv"))
        rank = Window.partitionBy("gid").orderBy("inv")
        ranked = (
            fillers.join(F.broadcast(lengths), "gid")
            .where(F.col("gaps") > 0)
            .select("gid", "inv", "gaps", F.row_number().over(rank).alias("rank"))
            .where(F.col("rank") <= F.col("gaps"))
            .select("gid", "rank", F.col("inv").alias("filler"))
        )
        queries = scanned.where(F.col("ord") == 1).withColumn(
            "rank", F.col("x") + 1 - F.col("pcnt")
        )
        latest = F.greatest(F.col("pmax"), F.col("filler"))
        rows = (
            queries.join(ranked, ["gid", "rank"], "left")
            .withColumn("latest", latest)
            .where(F.col("latest") >= F.col("e"))
            .groupBy("gid")
            .agg(F.min(F.struct("x", "e", "latest")).alias("v"))
            .collect()
        )
        found: dict[int, dict[str, Any]] = {}
        for row in rows:
            v = row["v"]
            found[row["gid"]] = {
                "kind": "scan",
                "offset": int(v["x"]),
                "latest": int(v["latest"]),
                "deadline": int(v["e"]),
            }
        if not found:
            return
        wanted = local_frame(
            self.spark,
            [(g, d["offset"], d["latest"], d["deadline"]) for g, d in found.items()],
            "gid long, x long, latest long, deadline long",
        )
        # one query: the send of the value at the offset, the offset of the late send's
        # value, and the partners of the two ops the explanation names
        facts = (
            values.where(F.size("cobs") > 0)
            .select("gid", _at("cobs", 0)["coff"].alias("a"), _at("sends", 0).alias("b"))
            .join(F.broadcast(wanted), ["gid"])
            .where((F.col("a") == F.col("x")) | (F.col("b") == F.col("latest")))
            .select("gid", F.lit("fact").alias("tag"), "a", "b")
        )
        partner = F.when(F.col("type") == "invoke", F.col("n_pos")).otherwise(F.col("i_pos"))
        partners = (
            self.stream.select("gid", "pos", partner.alias("partner"))
            .join(F.broadcast(wanted), ["gid"])
            .where((F.col("pos") == F.col("latest")) | (F.col("pos") == F.col("deadline")))
            .select("gid", F.lit("partner").alias("tag"), F.col("pos").alias("a"),
                    F.col("partner").alias("b"))
        )  # fmt: skip
        partner_of: dict[tuple[int, int], int] = {}
        for row in facts.unionByName(partners).collect():
            detail = found[row["gid"]]
            if row["tag"] == "partner":
                partner_of[(row["gid"], row["a"])] = int(row["b"]) if row["b"] is not None else -1
                continue
            if row["a"] == detail["offset"] and row["b"] is not None:
                detail["value_send"] = int(row["b"])
            if row["b"] == detail["latest"]:
                detail["late_offset"] = int(row["a"])
        for gid, detail in found.items():
            detail["late_done"] = partner_of.get((gid, detail["latest"]), -1)
            detail["due_call"] = partner_of.get((gid, detail["deadline"]), -1)
            refs = [detail["latest"], detail["late_done"], detail["due_call"], detail["deadline"]]
            refs.append(detail.get("value_send", -1))
            detail["refs"] = [p for p in refs if p >= 0]
            out[gid] = detail

    # -- explanations, from the local checker --

    def _ops_at(self, positions: set[int]) -> dict[int, Op]:
        """The ops at ``positions`` and their partners, decoded by the local parser:
        explanations and witnesses are written from them."""
        from pyspark.sql import functions as F

        if not positions:
            return {}
        chosen = local_frame(self.spark, [(p,) for p in sorted(positions)], "pos long")
        partner = F.when(F.col("type") == "invoke", F.col("n_pos")).otherwise(F.col("i_pos"))
        partners = (
            self.stream.select("pos", partner.alias("partner"))
            .join(F.broadcast(chosen), "pos")
            .select(F.col("partner").alias("pos"))
        )
        every = chosen.unionByName(partners).where(F.col("pos").isNotNull()).distinct()
        texts = self.texts.join(F.broadcast(every), "pos").collect()
        out: dict[int, Op] = {}
        for row in texts:
            pos = int(row["pos"])
            file_id, line = file_of(pos), line_of(pos)
            fmt = self.spec.formats[file_id]
            op, _ = decode_record(fmt, row["text"], self.spec.ordinal(file_id, line), line)
            if op is not None:
                out[pos] = op
        return out

    def _explain_key(
        self, detail: dict[str, Any] | None, ops_at: dict[int, Op]
    ) -> tuple[Verdict, str | None, list[int]]:
        if detail is None:
            return Verdict.OK, None, []
        kind = detail["kind"]
        if kind == "replay":
            return _replay(detail["refs"], ops_at, Verdict(detail["verdict"]))
        if kind == "read":
            return _explain_bad_read(detail, ops_at)
        if kind == "fillers":
            return _explain_fillers(detail, ops_at)
        return _explain_scan(detail, ops_at)


def _whole_key(
    row: Any, length: dict[int, int], gaps: dict[int, int], gid: int
) -> dict[str, Any] | None:
    """Conditions 2 and 4 of `check_log` from `_Checker._key_figures`: the first problem
    (None: on to the scan, whose length and gap count this records)."""
    if row is not None and row["bad"] is not None:
        x = row["bad"]
        seen = int(x["seen"]["pos"])
        return {
            "kind": "read",
            "seen": seen,
            "k": int(x["seen"]["k"]),
            "offset": int(x["off"]),
            "inv": x["inv"],
            "fail": x["fail"],
            "refs": [p for p in (seen, x["inv"], x["fail"]) if p is not None],
        }
    if row is not None and row["no_offset"] is not None:
        x = row["no_offset"]
        refs = [p for p in (x["inv"], x["pos"]) if p is not None]
        return {"kind": "replay", "verdict": "unknown", "refs": refs}
    max_off = row["max_off"] if row is not None else None
    n_obs = int(row["n"] or 0) if row is not None else 0
    fillers = int(row["fillers"] or 0) if row is not None else 0
    best = row["top"] if row is not None else None
    max_hw = int(best["hw"]) if best is not None else 0
    total = max(int(max_off) + 1 if max_off is not None else 0, max_hw)
    length[gid], gaps[gid] = total, total - n_obs
    if gaps[gid] <= fillers:
        return None
    detail: dict[str, Any] = {
        "kind": "fillers",
        "length": total,
        "gaps": gaps[gid],
        "fillers": fillers,
        "observed": total > max_hw,
    }
    if total > max_hw:
        detail["proof_offset"] = total - 1
    else:
        detail["proof"] = -int(best["npos"]) if best is not None else -1
    return detail


def _explain_bad_read(
    detail: dict[str, Any], ops_at: dict[int, Op]
) -> tuple[Verdict, str | None, list[int]]:
    """`check_log`'s words for a read of a value never sent, or of a failed send."""
    seen = ops_at[detail["seen"]]
    if seen.f == "poll":
        value = seen.value["records"][detail["k"]][1]
    else:
        value = ops_at[detail["inv"]].value if detail["inv"] is not None else seen.value
    value = value if type(value) is int else freeze(value)
    offset = detail["offset"]
    if detail["inv"] is None:
        text = (
            f"read of a never-sent value: {show(value)} at offset {offset} (seen at "
            f"{where(seen)}) was never sent to this key"
        )
        return Verdict.ILLEGAL, text, [detail["seen"]]
    text = (
        f"aborted read: {show(value)} at offset {offset} (seen at {where(seen)}) comes from "
        f"a send that failed at {where(ops_at[detail['fail']])}"
    )
    return Verdict.ILLEGAL, text, sorted({detail["inv"], detail["fail"], detail["seen"]})


def _with_partners(refs: Sequence[int], ops_at: dict[int, Op]) -> list[int]:
    """``refs`` and the invocation of each completion among them (sorted positions)."""
    chosen = set(refs)
    by_process: dict[Any, list[int]] = {}
    for pos in sorted(ops_at):
        known = ops_at[pos]
        by_process.setdefault((known.run, known.process), []).append(pos)
    for pos in list(chosen):
        op = ops_at.get(pos)
        if op is None:
            continue
        stream = by_process[(op.run, op.process)]
        i = stream.index(pos)
        if op.type != "invoke" and i > 0 and ops_at[stream[i - 1]].type == "invoke":
            chosen.add(stream[i - 1])
        if op.type == "invoke" and i + 1 < len(stream) and ops_at[stream[i + 1]].type != "invoke":
            chosen.add(stream[i + 1])
    return sorted(p for p in chosen if p in ops_at)


def _replay(
    refs: Sequence[int], ops_at: dict[int, Op], expected: Verdict
) -> tuple[Verdict, str | None, list[int]]:
    positions = _with_partners(refs, ops_at)
    last = max(refs) if refs else -1
    positions = [p for p in positions if p <= last]
    sub = [ops_at[p] for p in positions]
    result = check_log(sub)
    where = {id(op): p for p, op in zip(positions, sub, strict=True)}
    witness = [where[id(op)] for op in result.witness if id(op) in where]
    if result.verdict is not expected:
        # never expected: the problem did not reproduce; say what SQL found, plainly
        return expected, f"{result.explanation or 'see the witness'}", sorted(refs)
    return result.verdict, result.explanation, witness


def _explain_fillers(
    detail: dict[str, Any], ops_at: dict[int, Op]
) -> tuple[Verdict, str | None, list[int]]:
    length, gaps, fillers = detail["length"], detail["gaps"], detail["fillers"]
    proof = ops_at[detail["proof"]]  # the first observer of the last offset, or the poll
    if detail["observed"]:
        why = f"offset {length - 1} was observed at {where(proof)}"
    else:
        why = f"a poll saw high watermark {length} at {where(proof)}"
    text = (
        f"{why}, so offsets 0..{length - 1} exist, but {gaps} of them were never "
        f"observed and only {fillers} sends of unknown outcome could fill them"
    )
    return Verdict.ILLEGAL, text, [detail["proof"]]


def _explain_scan(
    detail: dict[str, Any], ops_at: dict[int, Op]
) -> tuple[Verdict, str | None, list[int]]:
    """`kafka_log.explain_order` itself, on the four ops it names and the two facts of the
    log it looks up (the value at the offset, the offset of the late value)."""
    positions = sorted(
        p
        for p in {detail["latest"], detail["late_done"], detail["due_call"], detail["deadline"]}
        if p >= 0
    )
    sub = [ops_at[p] for p in positions]
    index = {p: i for i, p in enumerate(positions)}
    offset = detail["offset"]
    value_at: dict[int, Any] = {}
    offset_of: dict[Any, int] = {}
    if "value_send" in detail:
        value = ops_at[detail["value_send"]].value
        value_at[offset] = value if type(value) is int else freeze(value)
    late = ops_at[detail["latest"]]
    if late.f == "send" and "late_offset" in detail:
        value = late.value if type(late.value) is int else freeze(late.value)
        offset_of[value] = detail["late_offset"]
    verdict, explanation, found = explain_order(
        sub,
        offset,
        index[detail["latest"]],
        index[detail["deadline"]],
        value_at=value_at,
        offset_of=offset_of,
    )
    witness = [positions[i] for i in sorted({i for i in found if i >= 0})]
    return verdict, explanation, witness


def _key_fields(
    linearizable: Verdict,
    explanation: str | None,
    witness: list[int],
    found: KeyAnomalies,
    ops_at: dict[int, Op],
    spec: JobSpec,
) -> dict[str, Any]:
    """A big key's result columns, as the per-key path makes them (`keycheck.log_fields`
    of a `records.KeyResult`): the same verdict function, the same shapes."""

    def line(pos: int) -> int | None:
        op = ops_at.get(pos)
        return op.line if op is not None else line_of(pos)

    verdict = key_verdict(linearizable, explanation, witness, found, spec.consistency, line)
    result = KeyResult(
        found.run,
        found.key,
        0,
        verdict.verdict,
        0.0,
        verdict.explanation,
        witness=[ops_at[p] for p in verdict.witness if p in ops_at],
        consistency=verdict.consistency,
        kafka=verdict.kafka,
        linearizable=verdict.linearizable,
        violations=verdict.violations,
        counts={n: c for n, c in verdict.counts.items() if c},
        anomalies={
            name: [[ops_at[p] for p in w if p in ops_at] for w in witnesses]
            for name, witnesses in found.witnesses.items()
        },
    )
    where = {id(op): pos for pos, op in ops_at.items()}

    def file_name(op: Op) -> str | None:
        pos = where.get(id(op))
        return spec.files[file_of(pos)] if pos is not None else None

    fields = log_fields(result, file_name)
    del fields["ops"], fields["seconds"]
    return fields


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


def _at(column: str, index: Any) -> Any:
    """Element ``index`` of the array ``column``, null beyond its end (under ANSI SQL too)."""
    from pyspark.sql import functions as F

    return F.get(F.col(column), index)
