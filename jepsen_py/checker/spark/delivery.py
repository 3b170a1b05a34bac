"""``kmodel verify --delivery ... --engine spark``: a consumer group's delivery check
(`jepsen_py.checker.delivery`) as a PySpark job, giving the local engine's results
(`delivery_engine.delivery_result` builds both, `verdict.delivery_verdict` decides both).

The job, over JSON Lines histories (``*.jsonl``, ``.gz`` too):

1. every line with its exact number (``zipWithIndex`` per file), parsed in the executors
   (`jsonl.op_from_record`, the local reader's rules and messages);
2. grouped by (file, run, process) and validated there (`history.validate` keeps state per
   process only, so a process's ops alone give the verdict the whole file gives), with the
   group ops' shapes (`delivery.split_op`); rejected lines go to the driver;
3. `delivery.split_op` turns each accepted op into its run's facts (assignments, kills:
   few) and its keys' events; the facts are collected and broadcast, the events grouped by
   (file, run, key) and each key judged by `delivery.check_key` in an executor;
4. the driver fetches the ops the witnesses name and settles every file's results.

Positions are ``file << 40 | line``, increasing in history order within a file, as in the
Kafka-log job (`keycheck`). A local file in another format (EDN, Porcupine, Parquet) is read
on the driver by the local engine's reader (`history.FORMATS`, the importers'
conventions), as the Kafka-log job reads EDN: its ops and the lines the reader rejected
join the job at step 2 (they are small test formats). Such a file on a remote file system
is left to the local engine (the input says so).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import orjson

from jepsen_py.checker.delivery import RunFacts, check_key, judge, key_order, split_op
from jepsen_py.checker.delivery_engine import DELIVERY_MODEL, KEYED_FS, delivery_result
from jepsen_py.checker.records import InputResult
from jepsen_py.checker.spark.inputs import InputFile, list_inputs
from jepsen_py.checker.spark.session import SessionOptions, start
from jepsen_py.checker.taxonomy import GROUP_FS
from jepsen_py.history import FORMATS, HistoryError, Rejections
from jepsen_py.history.jsonl import RecordError, op_from_record
from jepsen_py.history.op import Op
from jepsen_py.history.validate import validate

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SHIFT = 40
LINE_MASK = (1 << SHIFT) - 1
REJECTED = "rejected"
ACCEPTED = "op"
FACT = "fact"
COUNT = "count"


def _parse(item: tuple[int, int, str]) -> list[tuple[Any, Any]]:
    """One line: ((file, run, process), op), or a rejection, or nothing (blank)."""
    fid, line, text = item
    if not text.strip():
        return []
    try:
        record = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        reason = f"not valid JSON ({exc.args[0]}); one object per line"
        return [(REJECTED, (fid, line, reason, None, None))]
    try:
        op = op_from_record(record, line - 1, line)
    except RecordError as exc:
        key = record.get("key") if isinstance(record, dict) else None
        return [(REJECTED, (fid, line, str(exc), key if isinstance(key, str) else None, None))]
    return [((fid, op.run, op.process), op)]


def _imported(fid: int, file: InputFile) -> tuple[list[tuple[Any, Any]], str | None]:
    """A local file in another format than JSON Lines, read on the driver by the local
    engine's reader: the items `_parse` would give for its lines (ops keyed for step 2,
    and the lines the reader rejected), or why it cannot be read."""
    parsed = urlparse(file.uri)
    if parsed.scheme != "file" or file.format not in FORMATS:
        return [], (
            f"{file.display}: the Spark delivery check reads {file.format} histories from a "
            "local file only: copy it here, or check it with --engine local"
        )
    sink = Rejections(file.display)
    try:
        ops = list(FORMATS[file.format].read(unquote(parsed.path), sink))
    except HistoryError as exc:
        return [], str(exc)
    except OSError as exc:
        return [], f"{file.display}: cannot read: {exc.strerror or exc}"
    items: list[tuple[Any, Any]] = [((fid, op.run, op.process), op) for op in ops]
    items += [(REJECTED, (fid, r.line, r.reason, r.key, r.run)) for r in sink]
    return items, None


def _validate(group: tuple[Any, Iterable[Op]]) -> list[tuple[str, Any]]:
    """One process's ops, validated in line order, then shaped as group ops."""
    (fid, _, _), ops = group
    sink = Rejections("")
    out: list[tuple[str, Any]] = []
    for op in validate(sorted(ops, key=lambda o: o.line or 0), sink):
        problem = split_op(0, op).problem
        if problem is not None:
            key = op.key if op.f in KEYED_FS else None
            out.append((REJECTED, (fid, op.line, problem, key, op.run)))
        else:
            out.append((ACCEPTED, (fid, op)))
    out += [(REJECTED, (fid, r.line, r.reason, r.key, r.run)) for r in sink]
    return out


def _numbered(fid: int) -> Callable[[tuple[str, int]], tuple[int, int, str]]:
    """(text, index) of a file's line -> (file, line number, text)."""
    return lambda t: (fid, t[1] + 1, t[0])


def _summary(items: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """What the driver needs of a partition of validated lines: its rejections, its run
    facts, and how many ops (and group ops) of each file it accepted."""
    accepted: dict[int, list[int]] = {}
    for tag, payload in items:
        if tag == REJECTED:
            yield tag, payload
            continue
        fid, op = payload
        counts = accepted.setdefault(fid, [0, 0])
        counts[0] += 1
        counts[1] += op.f in GROUP_FS
        fact = split_op(_pos(fid, op), op).fact
        if fact is not None:
            yield FACT, (fid, op.run, fact)
    for fid, (n, g) in accepted.items():
        yield COUNT, (fid, n, g)


def _pos(fid: int, op: Op) -> int:
    return fid << SHIFT | (op.line or 0)


def verify_delivery_spark(
    paths: Iterable[str],
    delivery: str,
    *,
    fmt: str | None = None,
    session: SessionOptions | None = None,
    spark: SparkSession | None = None,
    say: Callable[[str], None] | None = None,
    max_witnesses: int = 100,
) -> tuple[list[InputResult], dict[str, Any]]:
    """Check the delivery of the histories under ``paths`` on Spark (see the module
    docstring); returns one `InputResult` per file and figures about the job. Starts a
    session (and stops it) unless one is given or active."""
    results, figures = verify_delivery_spark_modes(
        paths,
        (delivery,),
        fmt=fmt,
        session=session,
        spark=spark,
        say=say,
        max_witnesses=max_witnesses,
    )
    return results[delivery], figures


def verify_delivery_spark_modes(
    paths: Iterable[str],
    deliveries: Sequence[str],
    *,
    fmt: str | None = None,
    session: SessionOptions | None = None,
    spark: SparkSession | None = None,
    say: Callable[[str], None] | None = None,
    max_witnesses: int = 100,
) -> tuple[dict[str, list[InputResult]], dict[str, Any]]:
    """`verify_delivery_spark` under several modes from one job: the anomalies do not
    depend on the mode, only their classes do, so each mode's verdicts are settled on the
    driver from the same findings."""
    tell = say or (lambda message: None)
    started = time.perf_counter()
    figures: dict[str, Any] = {}
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
    own = spark is None
    if spark is None:
        tell(f"starting Spark ({(session or SessionOptions()).master or 'local[*]'}) ...")
        spark = start(session or SessionOptions())
        figures["startup_seconds"] = round(time.perf_counter() - started, 3)
    try:
        results = _job(spark, list(paths), tuple(deliveries), fmt, max_witnesses, figures)
    finally:
        if own:
            spark.stop()
    first = results[deliveries[0]]
    figures["seconds"] = round(time.perf_counter() - started, 3)
    figures["ops"] = sum(r.ops for r in first)
    figures["keys"] = sum(len(r.keys) for r in first)
    return results, figures


def _job(
    spark: SparkSession,
    paths: list[str],
    deliveries: tuple[str, ...],
    fmt: str | None,
    max_witnesses: int,
    figures: dict[str, Any],
) -> dict[str, list[InputResult]]:
    sc = spark.sparkContext
    figures["master"] = sc.master
    began = time.perf_counter()
    files = list_inputs(paths, fmt, spark)
    out: dict[Any, InputResult] = {}  # file -> unchecked, (mode, file) -> checked
    readable = []
    jsonl = []
    imported: list[tuple[Any, Any]] = []
    for i, file in enumerate(files):
        error = file.error
        if error is None and file.format != "jsonl":
            items, error = _imported(i, file)
            imported += items
        elif error is None:
            jsonl.append(i)
        if error is not None:
            out[i] = InputResult.unchecked(
                file.display, error, format=file.format, model=DELIVERY_MODEL
            )
        else:
            readable.append(i)
    if readable:
        texts = [sc.textFile(files[i].uri).zipWithIndex().map(_numbered(i)) for i in jsonl]
        parsed = sc.union([*(t.flatMap(_parse) for t in texts), sc.parallelize(imported)]).cache()
        checked = (
            parsed.filter(lambda t: t[0] != REJECTED)
            .groupByKey()
            .flatMap(_validate)
            .union(parsed.filter(lambda t: t[0] == REJECTED))
            .cache()
        )
        accepted = checked.filter(lambda t: t[0] == ACCEPTED).map(lambda t: t[1])
        rejected: list[tuple[Any, ...]] = []
        counts: dict[int, tuple[int, int]] = {}
        facts: dict[tuple[int, Any], list[Any]] = {}
        for tag, payload in checked.mapPartitions(_summary).collect():  # small: one job
            if tag == REJECTED:
                rejected.append(payload)
            elif tag == COUNT:
                n, g = counts.get(payload[0], (0, 0))
                counts[payload[0]] = (n + payload[1], g + payload[2])
            else:
                facts.setdefault((payload[0], payload[1]), []).append(payload[2])
        splits = accepted.map(lambda t: (t[0], t[1], split_op(_pos(t[0], t[1]), t[1])))
        shared = sc.broadcast({ident: RunFacts(fs) for ident, fs in facts.items()})

        def judge_key(item: tuple[Any, Iterable[Any]]) -> tuple[int, int, Any]:
            (fid, run, key), events = item
            ordered = sorted(events)
            run_facts = shared.value.get((fid, run)) or RunFacts()
            return fid, len(ordered), check_key(run, key, ordered, run_facts, max_witnesses)

        found = (
            splits.flatMap(lambda s: [((s[0], s[1].run, key), event) for key, event in s[2].events])
            .groupByKey()
            .map(judge_key)
            .collect()
        )
        wanted = sc.broadcast(
            {p for _, _, f in found for ws in f.witnesses.values() for w in ws for p in w}
            | {p for _, _, f in found for problem in f.problems for p in problem.positions}
        )
        ops_at = dict(
            accepted.filter(lambda t: _pos(t[0], t[1]) in wanted.value)
            .map(lambda t: (_pos(t[0], t[1]), t[1]))
            .collect()
        )
        figures["spark_seconds"] = round(time.perf_counter() - began, 3)
        for i in readable:
            sink = Rejections(files[i].display)
            for _, line, reason, key, run in sorted(
                (r for r in rejected if r[0] == i), key=lambda r: r[1] or 0
            ):
                sink.reject(line, reason, key=key, run=run)
            mine = sorted(
                ((n, f) for fid, n, f in found if fid == i),
                key=lambda nf: key_order((nf[1].run, nf[1].key)),
            )
            for delivery in deliveries:
                keys = [judge(f, n, delivery, _line) for n, f in mine]
                out[(delivery, i)] = delivery_result(
                    files[i].display,
                    files[i].format,
                    delivery,
                    keys,
                    ops_at.__getitem__,
                    list(sink),
                    counts.get(i, (0, 0)),
                    began,
                )
    return {d: [out.get((d, i)) or out[i] for i in range(len(files))] for d in deliveries}


def _line(pos: int) -> int:
    return pos & LINE_MASK
