"""What a Spark verification reads: the files behind each PATH, their formats, and all their
lines as one DataFrame ``(pos, run_eff, key, text)``.

Paths are files, directories or globs, on any file system Spark reads: local here,
``hdfs://`` or ``s3a://`` when the cluster has them (listed through Hadoop's
``FileSystem``, so a URI works wherever Spark works). In a local directory only history
files count, each once (`jepsen_py.history.files`: the rule both engines follow); in a
remote one, the files with a history extension. A file's format is ``--format``, else
its extension (``.jsonl``, ``.ndjson``, ``.json``, ``.parquet``, ``.edn``; a ``.gz``
suffix is read through), else, for a local file, its first line
(`jepsen_py.history.detect_format`). A line that is not UTF-8 is handed to the workers as
`keycheck.NOT_UTF8_LINE`, rejected there like the local readers reject it.

JSONL and Parquet are read by Spark, with an explicit schema (no inference pass):

- JSONL as text, one row per line (``lineSep`` is ``\\n``, as Python reads it). Line numbers
  are exact: ``_metadata.file_block_start`` names the split a row came from and
  ``monotonically_increasing_id`` counts rows within its partition, where a split's rows
  are consecutive; one aggregation counts each split's rows, and the line of a row is the
  rows of earlier splits of its file plus its place in its split. The same pass samples
  ``run``/``key`` to estimate each key's size, and counts the ``assign``/``subscribe``
  lines, whose copies the job makes only when there are any (`LineStats`).
- Parquet with this project's columns (`jepsen_py.history.parquet.SCHEMA`); the "line" is
  the row number (``_metadata.row_index + 1``), as the local reader numbers rows.

The grouping columns come from a regular expression over the text (``"key": ...``,
``"run": ...``), a guess the workers check against the real parser (`keycheck`); the exact
alternative (`exact_grouping`) parses every line in Python first.

EDN and Porcupine logs are read on the driver by the local importers (they are small test
formats, and their meaning is the importer's `Conventions`), validated there, and handed
to Spark as op records.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import attrs

from jepsen_py.checker.engine import Loaded, choose_model
from jepsen_py.checker.spark.frames import local_frame
from jepsen_py.checker.spark.keycheck import (
    FILE_RUN,
    FILE_SHIFT,
    NOT_UTF8_LINE,
    REASSIGN_PATTERN,
    JobSpec,
    exact_group,
    op_record_text,
    position,
    run_of,
)
from jepsen_py.checker.taxonomy import REASSIGN_FS
from jepsen_py.history import FORMATS, HistoryError, Rejection, Rejections, detect_format, validate
from jepsen_py.history.files import (
    format_by_name,
    is_hidden,
    is_remote_history_name,
    list_histories,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SPARK_FORMATS = frozenset({"jsonl", "parquet"})
DRIVER_FORMATS = frozenset(FORMATS) - SPARK_FORMATS

PARQUET_DDL = (
    "index long, time long, process string, type string, f string, key string, "
    "value string, run string"
)

KEY_PATTERN = r'"key"\s*:\s*(null|-?[0-9]+|"[^"\\]*")'
RUN_PATTERN = r'"run"\s*:\s*(null|"[^"\\]*")'
STRING_KEY_PATTERN = r'"key":"([^"]*)"'

BLANK = "^[ \\t\\r\\x0b\\f]*$"
"""A line the JSONL reader skips as blank (what ``bytes.strip`` strips, ``\\n`` aside)."""

SAMPLE_FRACTION = 0.02
"""Share of lines whose key the first pass samples, to find the keys too big for one task."""


@attrs.frozen
class InputFile:
    """One file to check: the URI Spark reads, the name messages use, its format."""

    uri: str
    display: str
    format: str | None
    size: int
    error: str | None = None


def is_remote(path: str) -> bool:
    """A URI with a scheme other than ``file`` (``hdfs://``, ``s3a://``, ...)."""
    scheme = urlparse(path).scheme
    return len(scheme) > 1 and scheme != "file"


def normalize(uri: str) -> str:
    """One spelling per file, to match Spark's ``_metadata.file_path`` to our listing."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return "file:" + os.path.abspath(unquote(parsed.path))
    return unquote(uri)


def format_of(path: str, fmt: str | None, *, local: bool) -> tuple[str | None, str | None]:
    """(format, error) of one file."""
    if fmt is not None:
        return fmt, None
    by_name = format_by_name(path)
    if by_name is not None:
        return by_name, None
    if not local:
        return None, f"{path}: cannot tell the history format from its name; pass --format"
    try:
        return detect_format(path), None
    except HistoryError as exc:
        return None, str(exc)


def list_local(path: str, fmt: str | None) -> list[InputFile]:
    """The history files of a local PATH (file, directory or glob; see
    `jepsen_py.history.files`), and an entry with ``error`` set when it names none."""
    listing = list_histories([path])
    found = [_local_file(name, fmt) for name in listing.files]
    found += [InputFile(name, name, None, 0, f"{name}: {why}") for name, why in listing.missing]
    return found


def _local_file(path: str, fmt: str | None) -> InputFile:
    found, error = format_of(path, fmt, local=True)
    uri = "file://" + os.path.abspath(path)
    return InputFile(uri, path, found, os.path.getsize(path), error)


def list_remote(spark: SparkSession, path: str, fmt: str | None) -> list[InputFile]:
    """The files of a PATH on a Hadoop file system (hdfs://, s3a://, ...), sorted."""
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    fs = hpath.getFileSystem(conf)
    statuses = fs.globStatus(hpath)
    if not statuses:
        return [InputFile(path, path, None, 0, f"{path}: no such file or directory")]
    found: list[InputFile] = []
    for status in statuses:
        if status.isDirectory():
            listing = fs.listFiles(status.getPath(), True)
            while listing.hasNext():
                item = listing.next()
                name = str(item.getPath().toString())
                relative = name[len(str(status.getPath().toString())) :]
                if any(is_hidden(part) for part in relative.split("/") if part):
                    continue
                if not is_remote_history_name(name):
                    continue  # not a history (a store's results.json, a report)
                found.append(_remote_file(name, int(item.getLen()), fmt))
        else:
            found.append(_remote_file(str(status.getPath().toString()), int(status.getLen()), fmt))
    return sorted(found, key=lambda f: f.uri)


def _remote_file(uri: str, size: int, fmt: str | None) -> InputFile:
    found, error = format_of(uri, fmt, local=False)
    if found is not None and found in DRIVER_FORMATS:
        error = f"{uri}: {found} histories are read on the driver: copy the file here"
    return InputFile(uri, uri, found, size, error)


def list_inputs(
    paths: Iterable[str], fmt: str | None, spark: SparkSession | None = None
) -> list[InputFile]:
    """Every file of ``paths``, each once, in the order of the paths given."""
    out: list[InputFile] = []
    seen: set[str] = set()
    for path in paths:
        if is_remote(path):
            if spark is None:
                raise ValueError("listing a remote path needs the Spark session")
            files = list_remote(spark, path, fmt)
        else:
            files = list_local(path, fmt)
        for file in files:
            key = normalize(file.uri) if file.error is None else f"error:{file.uri}"
            if key not in seen:
                seen.add(key)
                out.append(file)
    return out


@attrs.frozen
class LineStats:
    """What the first pass learned: per file id (lines, blank lines), and per (run, key)
    an estimate of its ops from a sample."""

    lines: dict[int, int]
    blanks: dict[int, int]
    estimates: dict[tuple[str, str | None], int]
    reassigns: int = 0
    """Lines that may be ``assign``/``subscribe`` ops (`keycheck.REASSIGN_PATTERN`): when
    there are none, the job hands no copies between keys and skips looking for them."""


@attrs.define
class Lines:
    """All lines of the Spark-read and driver-read inputs, and what the driver learned."""

    frame: DataFrame | None
    stats: LineStats
    driver_rejections: list[tuple[int, Rejection]] = attrs.field(factory=list)
    """(file id, rejection) of the driver-side imports."""
    driver_errors: dict[int, str] = attrs.field(factory=dict)
    driver_ops: dict[int, int] = attrs.field(factory=dict)


def _valid_utf8(column: Any) -> Any:
    """Whether a text column's bytes are UTF-8 (Spark reads text lines as raw bytes)."""
    from pyspark.sql import functions as F

    if hasattr(F, "is_valid_utf8"):  # Spark 4
        return F.is_valid_utf8(column)
    raw = column.cast("binary")
    return F.encode(F.decode(raw, "UTF-8"), "UTF-8") == raw


def _string_field(column: Any, pattern: str) -> Any:
    """The string (or null) a JSON field holds, by `pattern`; null when not found."""
    from pyspark.sql import functions as F

    raw = F.regexp_extract(column, pattern, 1)
    inner = F.substring_index(F.substring_index(raw, '"', 2), '"', -1)
    return F.when(raw.startswith('"'), inner).otherwise(F.lit(None).cast("string"))


def _run_expr(column: Any) -> Any:
    """The ``run`` of a line: null at once for the usual line, which has no ``"run"`` (a
    byte search: ``instr`` would count characters), else the regular expression."""
    from pyspark.sql import functions as F

    return F.when(column.contains('"run"'), _string_field(column, RUN_PATTERN)).otherwise(
        F.lit(None).cast("string")
    )


def _key_expr(column: Any) -> Any:
    """The ``key`` of a line: the text after the first ``"key":"`` up to the next quote
    when the line has that literal (this project's writers'), else the general regular
    expression. Either may guess wrong (escaped quotes, a ``"key"`` inside a value): the
    workers check every op's key against the real parser. (Byte searches and a regular
    expression: `substr`/`instr` count characters, which costs as much as the rest.)"""
    from pyspark.sql import functions as F

    fast = F.regexp_extract(column, STRING_KEY_PATTERN, 1)
    raw = F.regexp_extract(column, KEY_PATTERN, 1)
    inner = F.substring_index(F.substring_index(raw, '"', 2), '"', -1)
    slow = (
        F.when(raw.startswith('"'), inner)
        .when((raw == "") | (raw == "null"), F.lit(None).cast("string"))
        .otherwise(raw)
    )
    return F.when(column.contains('"key":"'), fast).otherwise(slow)


def _reassign_flag(column: Any) -> Any:
    """1 for a line `keycheck.REASSIGN_PATTERN` matches, else 0: the pattern only for the
    lines that hold ``"assign"`` or ``"subscribe"`` (byte searches), which it needs."""
    from pyspark.sql import functions as F

    maybe = column.contains('"assign"') | column.contains('"subscribe"')
    return F.when(maybe, column.rlike(REASSIGN_PATTERN).cast("int")).otherwise(F.lit(0))


def read_lines(
    spark: SparkSession,
    files: list[InputFile],
    ids: dict[str, int],
    spec_models: list[str | None],
    *,
    sample: float = SAMPLE_FRACTION,
    exact: JobSpec | None = None,
) -> Lines:
    """The lines DataFrame of ``files`` (file ids by `normalize`d URI in ``ids``), and the
    first pass's figures. ``exact``: group by the Python parser instead of the guess.
    ``spec_models`` receives the model of each driver-read file."""
    from pyspark.sql import functions as F

    frames: list[DataFrame] = []
    line_counts: dict[int, int] = {}
    blanks: dict[int, int] = {}
    estimates: dict[tuple[str, str | None], int] = {}
    reassigns = 0
    jsonl = [f for f in files if f.format == "jsonl"]
    parquet = [f for f in files if f.format == "parquet"]
    driver = [f for f in files if f.format in DRIVER_FORMATS]
    scale = 1.0 / sample

    if jsonl:
        raw = (
            spark.read.option("lineSep", "\n")
            .text([f.uri for f in jsonl])
            .select(
                F.col("_metadata.file_path").alias("path"),
                F.col("_metadata.file_block_start").alias("block"),
                F.monotonically_increasing_id().alias("mid"),
                F.col("value").alias("text"),
            )
        )
        sampled = F.rand(17) < sample
        stats = (
            raw.select(
                "path",
                "block",
                "mid",
                # an op's line starts with "{": the regular expression for the others
                F.when(F.col("text").startswith("{"), 0)
                .when(F.col("text").rlike(BLANK), 1)
                .otherwise(0)
                .alias("blank"),
                sampled.alias("sampled"),
                F.when(sampled, _run_expr(F.col("text"))).alias("srun"),
                F.when(sampled, _key_expr(F.col("text"))).alias("skey"),
                _reassign_flag(F.col("text")).alias("reassign"),
            )
            .groupBy("path", "block", "sampled", "srun", "skey")
            .agg(
                F.count(F.lit(1)).alias("n"),
                F.min("mid").alias("mid0"),
                F.sum("blank"),
                F.sum("reassign").alias("reassigns"),
            )
            .collect()
        )
        splits: dict[tuple[str, int], list[int]] = {}  # (path, block) -> [rows, mid0]
        for row in stats:
            path, block = row["path"], row["block"]
            file_id = ids[normalize(path)]
            split = splits.setdefault((path, block), [0, row["mid0"]])
            split[0] += row["n"]
            split[1] = min(split[1], row["mid0"])
            blanks[file_id] = blanks.get(file_id, 0) + int(row["sum(blank)"] or 0)
            reassigns += int(row["reassigns"] or 0)
            if row["sampled"]:
                group = (run_of(file_id, row["srun"]), row["skey"])
                estimates[group] = estimates.get(group, 0) + round(row["n"] * scale)
        bases = []
        offsets: dict[str, int] = {}
        for (path, block), (rows, mid0) in sorted(splits.items()):
            file_id = ids[normalize(path)]
            before = offsets.get(path, 0)
            bases.append((path, block, file_id, before - mid0))
            offsets[path] = before + rows
            line_counts[file_id] = before + rows
        base_frame = local_frame(spark, bases, "path string, block long, file_id int, base long")
        lines = raw.join(F.broadcast(base_frame), ["path", "block"]).select(
            (
                F.shiftleft(F.col("file_id").cast("long"), FILE_SHIFT)
                + F.col("mid")
                + F.col("base")
                + F.lit(1)
            ).alias("pos"),
            F.col("file_id"),
            F.when(_valid_utf8(F.col("text")), F.col("text"))
            .otherwise(F.lit(NOT_UTF8_LINE))
            .alias("text"),
        )
        if exact is None:
            lines = lines.select(
                "pos",
                F.coalesce(
                    _run_expr(F.col("text")),
                    F.concat(F.lit(FILE_RUN), F.col("file_id").cast("string")),
                ).alias("run_eff"),
                _key_expr(F.col("text")).alias("key"),
                "text",
            )
        else:
            lines = _exact(lines, exact)
        frames.append(lines)

    if parquet:
        table = (
            spark.read.schema(PARQUET_DDL)
            .parquet(*[f.uri for f in parquet])
            .withColumn("path", F.col("_metadata.file_path"))
            .withColumn("row", F.col("_metadata.row_index"))
        )
        # one pass: the paths as Spark spells them, the rows per file, a sample of keys
        sampled = F.rand(19) < sample
        stats = (
            table.select(
                "path",
                sampled.alias("sampled"),
                F.when(sampled, F.col("run")).alias("srun"),
                F.when(sampled, F.col("key")).alias("skey"),
                F.col("f").isin(*REASSIGN_FS).cast("int").alias("reassign"),
            )
            .groupBy("path", "sampled", "srun", "skey")
            .agg(F.count(F.lit(1)).alias("count"), F.sum("reassign").alias("reassigns"))
            .collect()
        )
        for row in stats:
            file_id = ids[normalize(row["path"])]
            line_counts[file_id] = line_counts.get(file_id, 0) + row["count"]
            reassigns += int(row["reassigns"] or 0)
            if row["sampled"]:
                group = (run_of(file_id, row["srun"]), row["skey"])
                estimates[group] = estimates.get(group, 0) + round(row["count"] * scale)
        paths = sorted({row["path"] for row in stats})
        path_ids = local_frame(
            spark, [(p, ids[normalize(p)]) for p in paths], "path string, file_id int"
        )
        table_rows = table.join(F.broadcast(path_ids), "path")
        run_eff = F.coalesce(
            F.col("run"), F.concat(F.lit(FILE_RUN), F.col("file_id").cast("string"))
        )
        text = F.to_json(F.struct("index", "time", "process", "type", "f", "key", "value", "run"))
        lines = table_rows.select(
            (
                F.shiftleft(F.col("file_id").cast("long"), FILE_SHIFT) + F.col("row") + F.lit(1)
            ).alias("pos"),
            F.col("file_id"),
            run_eff.alias("run_eff"),
            F.col("key"),
            text.alias("text"),
        )
        if exact is None:
            lines = lines.select("pos", "run_eff", "key", "text")
        else:
            lines = _exact(lines.select("pos", "file_id", "text"), exact)
        frames.append(lines)

    out = Lines(None, LineStats(line_counts, blanks, estimates, reassigns))
    if driver:
        driver_rows = _driver_rows(files, ids, driver, out, spec_models)
        if driver_rows:
            frames.append(
                local_frame(
                    spark,
                    driver_rows,
                    "pos long, run_eff string, key string, text string",
                    reused=False,
                )
            )
    if frames:
        frame = frames[0]
        for other in frames[1:]:
            frame = frame.unionByName(other)
        out.frame = frame
    return out


def _exact(lines: DataFrame, spec: JobSpec) -> DataFrame:
    """Group columns from the Python parser itself (slow: a Python call per line)."""
    from pyspark.sql import functions as F

    udf = F.udf(functools.partial(exact_group, spec), "run_eff string, key string", useArrow=False)
    return lines.select("pos", udf(F.col("pos"), F.col("text")).alias("g"), "text").select(
        "pos", "g.run_eff", "g.key", "text"
    )


def _driver_rows(
    files: list[InputFile],
    ids: dict[str, int],
    driver: list[InputFile],
    out: Lines,
    spec_models: list[str | None],
) -> list[tuple[int, str, str | None, str]]:
    """Read, validate and number the ops of the driver-side formats, as `engine.load` does,
    keeping their order in the file (positions are that order: the real line travels in
    the record)."""
    rows: list[tuple[int, str, str | None, str]] = []
    reassigns = 0
    for file in driver:
        file_id = ids[normalize(file.uri)]
        assert file.format is not None
        spec = FORMATS[file.format]
        rejections = Rejections(file.display)
        groups: dict[tuple[str | None, Any], list[Any]] = {}
        fs: set[str] = set()
        mine: list[tuple[int, str, str | None, str]] = []
        try:
            for op in validate(spec.read(file.display, rejections), rejections):
                if not op.is_client:
                    continue
                fs.add(op.f)
                groups.setdefault((op.run, op.key), []).append(op)
                key = None if op.key is None else str(op.key)
                pos = position(file_id, len(mine) + 1)
                mine.append((pos, run_of(file_id, op.run), key, op_record_text(op)))
                reassigns += op.f in REASSIGN_FS
            loaded = Loaded(
                file.display,
                file.format,
                spec.conventions,
                groups,
                rejections,
                len(mine),
                frozenset(fs),
            )
            model = choose_model(loaded)
        except (HistoryError, ValueError) as exc:
            out.driver_errors[file_id] = str(exc)
            continue
        spec_models[file_id] = model
        out.driver_ops[file_id] = len(mine)
        out.stats.lines[file_id] = len(mine)
        out.driver_rejections.extend((file_id, r) for r in rejections)
        for (run, key), ops in groups.items():
            group = (run_of(file_id, run), None if key is None else str(key))
            out.stats.estimates[group] = out.stats.estimates.get(group, 0) + len(ops)
        rows.extend(mine)
    out.stats = attrs.evolve(out.stats, reassigns=out.stats.reassigns + reassigns)
    return rows
