"""The exact Kafka-log checker and the anomaly taxonomy as Spark SQL: sorts, joins and
window functions, for keys too big for one Python worker.

`kafka_log.check_log` reads a key's ops once into dicts and scans its offsets; here every
step of that reading is a relational one, so the work of one enormous partition log is
spread over the cluster. Only the parse of each line is Python (`logfields.line_fields`,
a UDF: the same parser as the local readers, each line alone, no per-key state). The
semantics are `check_log`'s exactly (the conditions 1-5 of its docstring), in its order:

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
streamed through one `anomalies.Observer` (`logstream.stream_anomalies`), which holds
integers and values per offset and value, never the key's ops; the ``assign`` and
``subscribe`` lines of the key's run come with them. The key's verdict is then
`verdict.key_verdict`, the one every engine calls.

The linearizability result is `check_log`'s: the explanation of a problem found by SQL
is written by running `check_log` on the handful of ops that witness it (their index and
line are in every message), or, for a gap or the scan, with `kafka_log.explain_order`
(`logexplain`). ``test_spark_verify`` checks verdicts, explanations and anomaly counts
against the local checkers on hundreds of generated histories.

A ``txn`` op (`engine.refusal`) is in its process's pairs and nowhere else: its line is
rejected (stage ``refused``), and neither the checker nor the anomaly pass sees it.

Offsets and high watermarks must fit in 62 bits; an op with a larger one makes the key
UNKNOWN here (the local engine decides it).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from jepsen_py.checker.anomalies import KeyAnomalies
from jepsen_py.checker.records import group_order
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.spark.frames import local_frame
from jepsen_py.checker.spark.keycheck import (
    COPY,
    FILE_RUN,
    FILE_SHIFT,
    INF_POS,
    PAIR_DONE,
    PAIR_INFO,
    PAIR_PENDING,
    PAIR_STRAY,
    REFUSED,
    JobSpec,
    decode_record,
    file_of,
    line_of,
)
from jepsen_py.checker.spark.logexplain import (
    explain_bad_read,
    explain_fillers,
    explain_scan,
    key_fields,
    replay,
)
from jepsen_py.checker.spark.logfields import (
    ACK_HUGE,
    ACK_NEGATIVE,
    ACK_NO_OFFSET,
    ACK_NOT_DICT,
    ACK_NOT_INT,
    ACK_OK,
    FROM_INT,
    FROM_NONE,
    LINE_DDL,
    POLL_HUGE,
    POLL_MALFORMED,
    POLL_NEGATIVE_HW,
    POLL_OK,
    REC_ABOVE_HW,
    REC_HUGE,
    REC_NEGATIVE,
    REC_NOT_INT,
    REC_OK,
    REC_UNPACK,
    line_fields,
)
from jepsen_py.checker.spark.logstream import stream_anomalies
from jepsen_py.checker.spark.records import Group, Rejected
from jepsen_py.checker.taxonomy import REASSIGN_FS
from jepsen_py.history.op import Op

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

BUCKET = 1 << 16
"""Offsets per bucket of the distributed prefix scans."""

# What a row of the fact table says about a value (``fact``; `_Checker._facts`).
FACT_SEND, FACT_ACK, FACT_FAIL, FACT_RECORD = range(4)
# The rows of the ordering scan (``bound``; `_Checker._scan`): a lower bound on when an
# offset is written (an invocation: it makes the prefix maximum), an upper bound (a
# completion: it reads the prefix maximum, so it sorts after the lower bounds it ties with).
LOWER_BOUND, UPPER_BOUND = 0, 1


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
    idents = group_order(keys)
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
        file_run = F.concat(F.lit(FILE_RUN), F.shiftright(F.col("pos"), FILE_SHIFT).cast("string"))
        fits = (F.coalesce(F.col("run"), file_run) == F.col("g_run")) & F.col("op_key").eqNullSafe(
            F.col("g_key")
        )
        client = F.col("accepted") & F.col("client")
        # a refused op (a txn op, `engine.refusal`) is in its process's pairs, and nowhere else
        taken = client & fits & F.col("refused").isNull()
        refused = client & fits & F.col("refused").isNotNull()
        rows = (
            parsed.groupBy("gid")
            .agg(
                F.sum(F.when(client & ~fits, 1).otherwise(0)).alias("mismatches"),
                F.sum(F.when(taken, 1).otherwise(0)).alias("ops"),
                F.sum(F.when(taken & F.col("f").isin("send", "poll"), 1).otherwise(0)).alias(
                    "log_ops"
                ),
                F.array_sort(F.collect_set(F.when(taken, F.col("f")))).alias("fs"),
                F.max(F.when(client & fits, F.col("no_index"))).alias("no_index"),
                F.array_distinct(F.collect_list(F.shiftright(F.col("pos"), FILE_SHIFT))).alias(
                    "files"
                ),
                F.slice(
                    F.array_sort(
                        F.collect_list(
                            F.when(
                                F.col("reason").isNotNull(),
                                F.struct("pos", "reason", "rejected_key"),
                            )
                        )
                    ),
                    1,
                    100_000,
                ).alias("rejected"),
                F.slice(
                    F.array_sort(
                        F.collect_list(F.when(refused, F.struct("pos", "refused", "op_key", "run")))
                    ),
                    1,
                    100_000,
                ).alias("refused"),
            )
            .collect()
        )
        stats = {r["gid"]: r for r in rows}
        rejected = [
            Rejected(
                pos=x["pos"], reason=x["reason"], key=x["rejected_key"], run=None, stage="parse"
            )
            for r in rows
            for x in r["rejected"] or ()
        ]
        rejected.extend(
            Rejected(
                pos=x["pos"], reason=x["refused"], key=x["op_key"], run=x["run"], stage=REFUSED
            )
            for r in rows
            for x in r["refused"] or ()
        )
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
            taken_stream = stream.where(F.col("refused").isNull())
            checked = _Checker(spark, taken_stream, texts, spec, len(idents)).run(found)
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
                needs_ordinal=bool(row["no_index"]) if row else False,
                timed_out=False,
                engine="sql",
            )
        )
    return SqlResult(groups, rejected, pairs, release)


def _stream(ops: DataFrame) -> DataFrame:
    """Every op with what its process did around it, from one window over (key, process)
    by position: the invocation a completion completes (``inv_*``) and the op after it
    (``next_*``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = Window.partitionBy("gid", "process").orderBy("pos")
    previous = [
        F.lag(c).over(order).alias(f"inv_{c}")
        for c in ("type", "f", "pos", "value", "from_kind", "from_offset", "from_int")
    ]
    following = [F.lead(c).over(order).alias(f"next_{c}") for c in ("type", "f", "pos")]
    first = ops.select("*", *previous, *following)
    matched = (
        (F.col("type") != "invoke")
        & (F.col("inv_type") == "invoke")
        & (F.col("inv_f") == F.col("f"))
    )
    return first.select("*", matched.alias("matched"))


def _pair_table(stream: DataFrame) -> DataFrame:
    """(gid, proc, inv, comp, kind) rows, as `keycheck._Pairs` makes them per key."""
    from pyspark.sql import functions as F

    invoke = F.col("type") == "invoke"
    completes = (F.col("next_type") != "invoke") & (F.col("next_f") == F.col("f"))
    invokes = stream.where(invoke).select(
        "gid",
        F.col("process_id").alias("proc"),
        F.col("pos").alias("inv"),
        F.when(completes, F.col("next_pos")).otherwise(F.lit(INF_POS)).alias("comp"),
        F.when(~F.coalesce(completes, F.lit(False)), F.lit(PAIR_PENDING))
        .when(F.col("next_type") == "info", F.lit(PAIR_INFO))
        .otherwise(F.lit(PAIR_DONE))
        .alias("kind"),
    )
    strays = stream.where(~invoke & ~F.col("matched")).select(
        "gid",
        F.col("process_id").alias("proc"),
        F.col("pos").alias("inv"),
        F.lit(-1).cast("long").alias("comp"),
        F.lit(PAIR_STRAY).alias("kind"),
    )
    return invokes.unionByName(strays)


def prefix_scan(events: DataFrame, value: str, count: str, bucket: int = BUCKET) -> DataFrame:
    """Each row of ``events`` (``gid``, ``at_offset``, ``bound``, ...) with ``prefix_max``,
    the maximum of ``value`` over the rows of its gid at or before it in (at_offset, bound)
    order, and ``prefix_count``, the sum of ``count`` over them: a prefix scan by buckets of
    ``bucket`` offsets, each bucket a window of its own (in parallel), the buckets' totals
    carried by a window over the buckets. Rows tied on (at_offset, bound) see each other in
    some order: give the rows that read the prefix a ``bound`` after those that make it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    with_bucket = events.withColumn(
        "_bucket", F.floor(F.col("at_offset") / F.lit(bucket)).cast("long")
    )
    totals = with_bucket.groupBy("gid", "_bucket").agg(
        F.max(value).alias("bucket_max"), F.sum(count).alias("bucket_sum")
    )
    before = Window.partitionBy("gid").orderBy("_bucket").rowsBetween(Window.unboundedPreceding, -1)
    carried = totals.select(
        "gid",
        "_bucket",
        F.max("bucket_max").over(before).alias("carried_max"),
        F.sum("bucket_sum").over(before).alias("carried_sum"),
    )
    within = (
        Window.partitionBy("gid", "_bucket")
        .orderBy("at_offset", "bound")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    scanned = with_bucket.withColumn("inner_max", F.max(value).over(within)).withColumn(
        "inner_sum", F.sum(count).over(within)
    )
    return (
        scanned.join(carried, ["gid", "_bucket"])
        .withColumn("prefix_max", F.greatest(F.col("inner_max"), F.col("carried_max")))
        .withColumn("prefix_count", F.coalesce(F.col("carried_sum"), F.lit(0)) + F.col("inner_sum"))
        .drop("inner_max", "inner_sum", "carried_max", "carried_sum", "_bucket")
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
                verdict, explanation, witness = replay(
                    detail["refs"], ops_at, Verdict(detail["verdict"])
                )
            else:
                verdict, explanation, witness = self._explain_key(keyed.get(gid), ops_at)
            if gid in found:
                results[gid] = key_fields(
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
            x = row["first_problem"]
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
            polls = self._polls().where(F.col("poll_kind") == POLL_OK)
            self._scan(values, polls, scan, length, gaps, keyed)
        return first, keyed

    # -- the tables --

    def _polls(self) -> DataFrame:
        from pyspark.sql import functions as F

        s = self.stream
        return s.where(F.col("matched") & (F.col("f") == "poll") & (F.col("type") == "ok"))

    def _facts(self) -> DataFrame:
        """One row per fact about a value (``fact``: `FACT_SEND`, `FACT_ACK` (its first
        ack), `FACT_FAIL`, `FACT_RECORD` (a record a poll returned)), with whether
        `check_log` observes it before it stops (``seen_by_log``, at ``log_offset``) and
        whether the anomaly finders see it (``seen_by_anomalies``, at
        ``anomaly_offset``)."""
        from pyspark.sql import functions as F

        s = self.stream
        no_offset = F.lit(None).cast("long")
        no_ack = F.lit(None).cast("int").alias("ack_kind")
        unseen = F.lit(False)
        sends = s.where((F.col("type") == "invoke") & (F.col("f") == "send")).select(
            "gid",
            "value",
            F.lit(FACT_SEND).alias("fact"),
            "pos",
            F.lit(0).alias("index"),
            no_offset.alias("log_offset"),
            no_offset.alias("anomaly_offset"),
            no_ack,
            unseen.alias("seen_by_log"),
            unseen.alias("seen_by_anomalies"),
        )
        completions = s.where(F.col("matched") & (F.col("f") == "send"))
        echo_bad = F.col("echoed_value").isNotNull() & (F.col("echoed_value") != F.col("inv_value"))
        acks = completions.where(F.col("type") == "ok").select(
            "gid",
            F.col("inv_value").alias("value"),
            F.lit(FACT_ACK).alias("fact"),
            "pos",
            F.lit(0).alias("index"),
            F.col("offset").alias("log_offset"),
            "anomaly_offset",
            "ack_kind",
            ((F.col("ack_kind") == ACK_OK) & ~echo_bad).alias("seen_by_log"),
            F.col("anomaly_offset").isNotNull().alias("seen_by_anomalies"),
        )
        fails = completions.where(F.col("type") == "fail").select(
            "gid",
            F.col("inv_value").alias("value"),
            F.lit(FACT_FAIL).alias("fact"),
            "pos",
            F.lit(0).alias("index"),
            no_offset.alias("log_offset"),
            no_offset.alias("anomaly_offset"),
            no_ack,
            unseen.alias("seen_by_log"),
            unseen.alias("seen_by_anomalies"),
        )
        record0 = _at("records", 0)
        contiguous0 = (F.col("inv_from_kind") == FROM_NONE) | (
            (F.col("inv_from_kind") == FROM_INT) & (record0["offset"] == F.col("inv_from_offset"))
        )
        stop = (
            F.when(F.col("poll_kind") != POLL_OK, 0)
            .when(record0["problem"] != REC_OK, 0)
            .when(~contiguous0, 0)
            .when(F.col("first_problem") > 0, F.col("first_problem"))
            .otherwise(F.size("records"))
        )
        records = (
            self._polls()
            .where(F.size("records") > 0)
            .select(
                "gid", "pos", "poll_is_dict", stop.alias("stop"), F.explode("records").alias("r")
            )
            .select(
                "gid",
                F.col("r.value").alias("value"),
                F.lit(FACT_RECORD).alias("fact"),
                "pos",
                F.col("r.index").alias("index"),
                F.col("r.offset").alias("log_offset"),
                F.col("r.offset").alias("anomaly_offset"),
                no_ack,
                (F.col("r.index") < F.col("stop")).alias("seen_by_log"),
                (F.col("poll_is_dict") & F.col("r.well_formed")).alias("seen_by_anomalies"),
            )
        )
        return sends.unionByName(acks).unionByName(fails).unionByName(records)

    def _value_table(self, facts: DataFrame) -> DataFrame:
        """Per (gid, value): its sends' invocations (sorted), its first ack (position,
        kind, anomaly offset), its first fail, `check_log`'s sightings of it (sorted by
        position and record), the anomaly finders' (by offset), its first read."""
        from pyspark.sql import functions as F

        fact = F.col("fact")
        by_log = F.struct("pos", "index", "log_offset")
        by_anomalies = F.struct("anomaly_offset", "pos", "index")
        return (
            facts.where(F.col("value").isNotNull())
            .groupBy("gid", "value")
            .agg(
                F.array_sort(F.collect_list(F.when(fact == FACT_SEND, F.col("pos")))).alias(
                    "sends"
                ),
                F.min(
                    F.when(fact == FACT_ACK, F.struct("pos", "ack_kind", "anomaly_offset"))
                ).alias("first_ack"),
                F.min(F.when(fact == FACT_FAIL, F.col("pos"))).alias("first_fail"),
                F.array_sort(F.collect_list(F.when(F.col("seen_by_log"), by_log))).alias(
                    "log_sightings"
                ),
                F.array_sort(
                    F.collect_list(F.when(F.col("seen_by_anomalies"), by_anomalies))
                ).alias("anomaly_sightings"),
                F.min(
                    F.when((fact == FACT_RECORD) & F.col("seen_by_anomalies"), F.col("pos"))
                ).alias("first_read"),
            )
        )

    def _offset_table(self, facts: DataFrame) -> DataFrame:
        """Per (gid, offset): `check_log`'s sightings there (sorted by position and
        record), the anomaly finders' (by value), the first read."""
        from pyspark.sql import functions as F

        def sightings(offset: str, *, by_log: bool, is_read: Any) -> DataFrame:
            seen = "seen_by_log" if by_log else "seen_by_anomalies"
            return facts.where(F.col(seen)).select(
                "gid",
                F.col(offset).alias("offset"),
                "value",
                "pos",
                "index",
                F.lit(by_log).alias("by_log"),
                F.lit(not by_log).alias("by_anomalies"),
                is_read.alias("is_read"),
            )

        seen = sightings("log_offset", by_log=True, is_read=F.lit(False)).unionByName(
            sightings("anomaly_offset", by_log=False, is_read=F.col("fact") == FACT_RECORD)
        )
        return seen.groupBy("gid", "offset").agg(
            F.array_sort(
                F.collect_list(F.when(F.col("by_log"), F.struct("pos", "index", "value")))
            ).alias("log_sightings"),
            F.array_sort(
                F.collect_list(F.when(F.col("by_anomalies"), F.struct("value", "pos", "index")))
            ).alias("anomaly_sightings"),
            F.min(F.when(F.col("is_read"), F.col("pos"))).alias("first_read"),
        )

    # -- the reading pass --

    def _first_read_problems(self, values: DataFrame, offsets: DataFrame) -> DataFrame:
        """(gid, first_problem): the first problem of `check_log`'s reading pass, a struct
        (pos, index, verdict, refs), refs the ops whose replay in `check_log` reproduces
        it."""
        from pyspark.sql import functions as F

        s = self.stream
        refs = F.array(F.col("inv_pos"), F.col("pos"))
        ack = F.col("ack_kind")
        echo_bad = F.col("echoed_value").isNotNull() & (F.col("echoed_value") != F.col("inv_value"))
        verdict = (
            F.when(ack == ACK_NOT_DICT, "unknown")
            .when(echo_bad, "illegal")
            .when(ack.isin(ACK_NOT_INT, ACK_HUGE), "unknown")
            .when(ack == ACK_NEGATIVE, "illegal")
        )
        sends = s.where(F.col("matched") & (F.col("f") == "send") & (F.col("type") == "ok"))
        send_problems = sends.select(
            "gid", "pos", F.lit(0).alias("index"), verdict.alias("verdict"), refs.alias("refs")
        )
        poll_level = F.when(F.col("poll_kind").isin(POLL_MALFORMED, POLL_HUGE), "unknown").when(
            F.col("poll_kind") == POLL_NEGATIVE_HW, "illegal"
        )
        record0 = _at("records", 0)
        contiguous0 = (F.col("inv_from_kind") == FROM_NONE) | (
            (F.col("inv_from_kind") == FROM_INT) & (record0["offset"] == F.col("inv_from_offset"))
        )
        first_record = (
            F.when(record0["problem"].isin(REC_UNPACK, REC_NOT_INT, REC_HUGE), "unknown")
            .when(~contiguous0, "illegal")
            .when(record0["problem"].isin(REC_NEGATIVE, REC_ABOVE_HW), "illegal")
        )
        later = _at("records", F.col("first_problem"))["problem"]
        later_record = F.when(later.isin(REC_UNPACK, REC_NOT_INT, REC_HUGE), "unknown").otherwise(
            "illegal"
        )
        problem = (
            F.when(
                poll_level.isNotNull(),
                F.struct(F.lit(-1).alias("index"), poll_level.alias("verdict")),
            )
            .when(F.size("records") == 0, F.lit(None))
            .when(
                first_record.isNotNull(),
                F.struct(F.lit(0).alias("index"), first_record.alias("verdict")),
            )
            .when(
                F.col("first_problem") > 0,
                F.struct(F.col("first_problem").alias("index"), later_record.alias("verdict")),
            )
        )
        polls = (
            self._polls()
            .select("gid", "pos", problem.alias("found"), refs.alias("refs"))
            .select("gid", "pos", "found.index", "found.verdict", "refs")
        )
        twice = values.where(F.size("sends") > 1).select(
            "gid",
            _at("sends", 1).alias("pos"),
            F.lit(0).alias("index"),
            F.lit("unknown").alias("verdict"),
            F.slice("sends", 1, 2).alias("refs"),
        )
        # a conflicting observation: its value differs from the first at its offset, or its
        # offset from its value's first; the replay names both first observers
        by_value = (
            values.select(
                "gid",
                "value",
                _at("log_sightings", 0).alias("first"),
                F.get(
                    F.filter(
                        "log_sightings",
                        lambda x: x["log_offset"] != _at("log_sightings", 0)["log_offset"],
                    ),
                    0,
                ).alias("clash"),
            )
            .where(F.col("clash").isNotNull())
            .select(
                "gid",
                F.col("clash.pos").alias("pos"),
                F.col("clash.index").alias("index"),
                F.col("clash.log_offset").alias("offset"),
                "value",
            )
        )
        by_offset = (
            offsets.select(
                "gid",
                "offset",
                F.get(
                    F.filter(
                        "log_sightings", lambda x: x["value"] != _at("log_sightings", 0)["value"]
                    ),
                    0,
                ).alias("clash"),
            )
            .where(F.col("clash").isNotNull())
            .select(
                "gid",
                F.col("clash.pos").alias("pos"),
                F.col("clash.index").alias("index"),
                "offset",
                F.col("clash.value").alias("value"),
            )
        )
        first_at_offset = offsets.select(
            "gid", "offset", _at("log_sightings", 0)["pos"].alias("first_at_offset")
        )
        first_of_value = values.select(
            "gid", "value", _at("log_sightings", 0)["pos"].alias("first_of_value")
        )
        clashes = (
            F.broadcast(by_value.unionByName(by_offset))
            .join(first_at_offset, ["gid", "offset"], "left")
            .join(first_of_value, ["gid", "value"], "left")
            .select(
                "gid",
                "pos",
                "index",
                F.lit("illegal").alias("verdict"),
                F.array("first_at_offset", "first_of_value", "pos").alias("refs"),
            )
        )
        candidates = (
            send_problems.where(F.col("verdict").isNotNull())
            .unionByName(polls.where(F.col("verdict").isNotNull()))
            .unionByName(twice)
            .unionByName(clashes)
        )
        return candidates.groupBy("gid").agg(
            F.min(F.struct("pos", "index", "verdict", "refs")).alias("first_problem")
        )

    # -- the conditions on the whole key --

    def _key_figures(self, values: DataFrame) -> DataFrame:
        """Per gid, what conditions 2 and 4 of `check_log` need: the first value read that
        was never sent or whose send failed (in the order values were first observed), the
        first send acknowledged without offset nobody read, the highest offset observed,
        the observed and the filler counts, the highest high watermark (first poll)."""
        from pyspark.sql import functions as F

        observed = F.size("log_sightings") > 0
        sent = F.size("sends") > 0
        filler = sent & ~observed & F.col("first_fail").isNull()
        bad = observed & (~sent | F.col("first_fail").isNotNull())
        no_offset = ~observed & (F.col("first_ack.ack_kind") == ACK_NO_OFFSET)
        per_value = values.groupBy("gid").agg(
            F.min(
                F.when(
                    bad,
                    F.struct(
                        _at("log_sightings", 0).alias("seen"),
                        _at("log_sightings", 0)["log_offset"].alias("offset"),
                        _at("sends", 0).alias("inv"),
                        F.col("first_fail").alias("fail"),
                    ),
                )
            ).alias("bad_read"),
            F.min(
                F.when(
                    no_offset,
                    F.struct(F.col("first_ack.pos").alias("pos"), _at("sends", 0).alias("inv")),
                )
            ).alias("no_offset"),
            F.max(F.when(observed, _at("log_sightings", 0)["log_offset"])).alias("max_offset"),
            F.sum(F.when(observed, 1).otherwise(0)).alias("observed_offsets"),
            F.sum(F.when(filler, 1).otherwise(0)).alias("fillers"),
        )
        polls = self._polls().where(F.col("poll_kind") == POLL_OK)
        top = polls.groupBy("gid").agg(
            F.max(F.struct("hw", (-F.col("pos")).alias("neg_pos"))).alias("top_poll")
        )
        return per_value.join(top, "gid", "full")

    def _offset_proofs(
        self, values: DataFrame, proofs: list[tuple[int, int]], out: dict[int, dict[str, Any]]
    ) -> None:
        """The first op that observed each (gid, offset) of ``proofs``."""
        from pyspark.sql import functions as F

        wanted = local_frame(self.spark, proofs, "gid long, offset long")
        rows = (
            values.where(F.size("log_sightings") > 0)
            .select("gid", _at("log_sightings", 0).alias("first"))
            .join(F.broadcast(wanted), ["gid"])
            .where(F.col("first.log_offset") == F.col("offset"))
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
        observed = values.where(keep & (F.size("log_sightings") > 0)).select(
            "gid",
            "value",
            _at("log_sightings", 0)["log_offset"].alias("at_offset"),
            _at("sends", 0).alias("inv"),
            F.col("first_ack.pos").alias("ack_pos"),
        )
        none_long = F.lit(None).cast("long")
        starts = observed.select(
            "gid",
            "at_offset",
            F.lit(LOWER_BOUND).alias("bound"),
            F.col("inv").alias("start_pos"),
            F.lit(1).alias("counted"),
            none_long.alias("end_pos"),
        )
        lows = (
            polls.join(F.broadcast(lengths), "gid")
            .where(F.col("hw") < F.col("length"))
            .select(
                "gid",
                F.col("hw").alias("at_offset"),
                F.lit(LOWER_BOUND).alias("bound"),
                F.col("inv_pos").alias("start_pos"),
                F.lit(0).alias("counted"),
                none_long.alias("end_pos"),
            )
        )
        ack_ends = observed.where(F.col("ack_pos").isNotNull()).select(
            "gid",
            "at_offset",
            F.lit(UPPER_BOUND).alias("bound"),
            none_long.alias("start_pos"),
            F.lit(0).alias("counted"),
            F.col("ack_pos").alias("end_pos"),
        )
        poll_ends = polls.where(F.col("hw") > 0).select(
            "gid",
            (F.col("hw") - 1).alias("at_offset"),
            F.lit(UPPER_BOUND).alias("bound"),
            none_long.alias("start_pos"),
            F.lit(0).alias("counted"),
            F.col("pos").alias("end_pos"),
        )
        scanned = prefix_scan(
            starts.unionByName(lows).unionByName(ack_ends).unionByName(poll_ends),
            "start_pos",
            "counted",
        )
        fillers = values.where(
            keep
            & (F.size("sends") > 0)
            & (F.size("log_sightings") == 0)
            & F.col("first_fail").isNull()
        ).select("gid", _at("sends", 0).alias("inv"))
        rank = Window.partitionBy("gid").orderBy("inv")
        ranked = (
            fillers.join(F.broadcast(lengths), "gid")
            .where(F.col("gaps") > 0)
            .select("gid", "inv", "gaps", F.row_number().over(rank).alias("rank"))
            .where(F.col("rank") <= F.col("gaps"))
            .select("gid", "rank", F.col("inv").alias("filler"))
        )
        queries = scanned.where(F.col("bound") == UPPER_BOUND).withColumn(
            "rank", F.col("at_offset") + 1 - F.col("prefix_count")
        )
        latest = F.greatest(F.col("prefix_max"), F.col("filler"))
        rows = (
            queries.join(ranked, ["gid", "rank"], "left")
            .withColumn("latest", latest)
            .where(F.col("latest") >= F.col("end_pos"))
            .groupBy("gid")
            .agg(F.min(F.struct("at_offset", "end_pos", "latest")).alias("violation"))
            .collect()
        )
        found: dict[int, dict[str, Any]] = {}
        for row in rows:
            violation = row["violation"]
            found[row["gid"]] = {
                "kind": "scan",
                "offset": int(violation["at_offset"]),
                "latest": int(violation["latest"]),
                "deadline": int(violation["end_pos"]),
            }
        if not found:
            return
        wanted = local_frame(
            self.spark,
            [(g, d["offset"], d["latest"], d["deadline"]) for g, d in found.items()],
            "gid long, at_offset long, latest long, deadline long",
        )
        # one query: the send of the value at the offset, the offset of the late send's
        # value (``fact`` rows: a = an offset, b = the invocation of its value's send), and
        # the partners of the two ops the explanation names (``partner`` rows: a = the op,
        # b = its partner)
        facts = (
            values.where(F.size("log_sightings") > 0)
            .select(
                "gid", _at("log_sightings", 0)["log_offset"].alias("a"), _at("sends", 0).alias("b")
            )
            .join(F.broadcast(wanted), ["gid"])
            .where((F.col("a") == F.col("at_offset")) | (F.col("b") == F.col("latest")))
            .select("gid", F.lit("fact").alias("tag"), "a", "b")
        )
        partner = F.when(F.col("type") == "invoke", F.col("next_pos")).otherwise(F.col("inv_pos"))
        partners = (
            self.stream.select("gid", "pos", partner.alias("partner"))
            .join(F.broadcast(wanted), ["gid"])
            .where((F.col("pos") == F.col("latest")) | (F.col("pos") == F.col("deadline")))
            .select(
                "gid",
                F.lit("partner").alias("tag"),
                F.col("pos").alias("a"),
                F.col("partner").alias("b"),
            )
        )
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
        partner = F.when(F.col("type") == "invoke", F.col("next_pos")).otherwise(F.col("inv_pos"))
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
            return replay(detail["refs"], ops_at, Verdict(detail["verdict"]))
        if kind == "read":
            return explain_bad_read(detail, ops_at)
        if kind == "fillers":
            return explain_fillers(detail, ops_at)
        return explain_scan(detail, ops_at)


def _whole_key(
    row: Any, length: dict[int, int], gaps: dict[int, int], gid: int
) -> dict[str, Any] | None:
    """Conditions 2 and 4 of `check_log` from `_Checker._key_figures`: the first problem
    (None: on to the scan, whose length and gap count this records)."""
    if row is not None and row["bad_read"] is not None:
        x = row["bad_read"]
        seen = int(x["seen"]["pos"])
        return {
            "kind": "read",
            "seen": seen,
            "index": int(x["seen"]["index"]),
            "offset": int(x["offset"]),
            "inv": x["inv"],
            "fail": x["fail"],
            "refs": [p for p in (seen, x["inv"], x["fail"]) if p is not None],
        }
    if row is not None and row["no_offset"] is not None:
        x = row["no_offset"]
        refs = [p for p in (x["inv"], x["pos"]) if p is not None]
        return {"kind": "replay", "verdict": "unknown", "refs": refs}
    max_off = row["max_offset"] if row is not None else None
    n_obs = int(row["observed_offsets"] or 0) if row is not None else 0
    fillers = int(row["fillers"] or 0) if row is not None else 0
    best = row["top_poll"] if row is not None else None
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
        detail["proof"] = -int(best["neg_pos"]) if best is not None else -1
    return detail


def _at(column: str, index: Any) -> Any:
    """Element ``index`` of the array ``column``, null beyond its end (under ANSI SQL too)."""
    from pyspark.sql import functions as F

    return F.get(F.col(column), index)
