"""The Spark verification job: list the inputs, read their lines, group them by (run, key),
check every group in the executors, and settle on the driver what no single group can.

First the whole-file path (`wholefile`): each JSONL file of at most
``whole_file_max_bytes`` is checked whole in one task, by the local engine's reader,
validator and grouping (Spark's ``binaryFiles`` hands a worker its bytes); the files
that share a run (the ``run`` field) with another go by key with the rest. For the rest
(Parquet, the driver-read formats, bigger files, shared runs; every file with
``whole_files`` off) the per-key path is one pass over the data after a cheap first one:

1. `inputs.read_lines`: the first pass counts each file split's lines (exact line numbers)
   and its ``assign``/``subscribe`` lines, and samples keys (their sizes); the lines
   DataFrame ``(pos, run_eff, key, text)``, and, only when there are such lines, a copy of
   each in the group of every other key of its run;
2. per-key path: ``groupBy(run_eff, key)``, each group's lines handed to a Python worker
   as Arrow arrays (a grouped-aggregate ``arrow_udf``; before PySpark 4.1 a row UDF over
   the sorted ``collect_list``) and checked by `keycheck.check_group` in history order
   (the local engine's checkers); keys estimated above ``max_key_ops`` ops go to the
   SQL path instead (`logsql`, the Kafka-log model);
3. on the driver, from small results: the processes whose ops interleave across keys
   (a window over the pair table), the model of each file (from the ``f`` every group
   saw), the rejected lines and which keys they downgrade.

Only when step 3 finds something does more work follow, each time on the keys concerned
alone: processes that interleave are validated exactly and their keys checked again
without the rejected lines; keys that guessed another model than their file's are checked
again with it; ops numbered by a guessed ordinal are numbered again; and if any op landed
in the wrong group (the grouping columns are a guess), the whole job runs again with
exact grouping; and if a file checked whole shares a run with the files read by key, it
joins them and their part is done again. Each of these is counted in the figures
(``reruns``). A file checked whole needs none of these steps: its worker saw all of it.

Results are sorted by (run, key), so the verdict table is the same on every run whatever
the partitioning; a task that fails is retried by Spark (see `session`).

The job returns a `records.SparkReport`; `verify_spark` writes it out (`output`) when asked.
pyspark is imported inside the functions that use it, here as in every module of this
package: it is a heavy, optional dependency (``kmodel verify --engine local`` and the
workers' imports of `keycheck` must not pay for it).
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from jepsen_py.checker.engine import MODEL_NAMES, nothing_to_check
from jepsen_py.checker.records import (
    InputResult,
    KeyResult,
    downgrade,
    group_order,
    order_key,
)
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.spark import logsql
from jepsen_py.checker.spark.frames import local_frame
from jepsen_py.checker.spark.inputs import (
    BLANK,
    DRIVER_FORMATS,
    InputFile,
    Lines,
    list_inputs,
    normalize,
    read_lines,
)
from jepsen_py.checker.spark.keycheck import (
    ARROW_RESULT_DDL,
    COPY,
    FILE_SHIFT,
    INF_POS,
    PAIR_DONE,
    PAIR_INFO,
    PAIR_PENDING,
    PAIR_STRAY,
    REASSIGN_PATTERN,
    RECHECKED_STAGES,
    RESULT_DDL,
    JobSpec,
    arrow_check,
    check_group,
    file_of,
    guess_model,
    line_of,
    validate_lines,
)
from jepsen_py.checker.spark.output import write_outputs
from jepsen_py.checker.spark.records import Group, Rejected, SparkReport
from jepsen_py.checker.spark.session import SessionOptions, ship_package, spark_reason, start
from jepsen_py.checker.spark.wholefile import MAX_BYTES as WHOLE_FILE_MAX_BYTES
from jepsen_py.checker.spark.wholefile import (
    FileResult,
    file_checker,
    file_groups,
    file_result,
    is_candidate,
)
from jepsen_py.checker.taxonomy import KAFKA
from jepsen_py.checker.totals import summary
from jepsen_py.history import FORMATS, Op, Rejection

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_MAX_KEY_OPS = 250_000
"""Keys estimated above this many ops are checked by the SQL formulation of the log
checker (`logsql`), across the cluster, instead of in one Python worker."""

BYTES_PER_PARTITION = 32 << 20
"""Default shuffle partitions: one per this much input (at least 2 per core), so that the
Python check of a partition stays a few seconds and the cluster stays busy."""

MAX_REJECTIONS = 100_000
"""Rejected lines brought to the driver (the counts are always exact)."""


@attrs.frozen
class SparkOptions:
    """Everything ``kmodel verify --engine spark`` can be told."""

    model: str | None = None
    initial: str | None = None
    """``--initial`` as JSON text."""
    fmt: str | None = None
    timeout: float | None = None
    partitions: int | None = None
    max_key_ops: int = DEFAULT_MAX_KEY_OPS
    output: str | None = None
    max_witnesses: int = 100
    consistency: str = KAFKA
    """``--consistency``: what decides a Kafka-log key's verdict."""
    exact_grouping: bool = False
    """Group by the Python parser from the start (slower; the fallback of a bad guess)."""
    whole_files: bool = True
    """Check each JSONL file whose runs are its own whole, in one task (`wholefile`);
    False: every file goes through the per-key path (``--no-whole-files``)."""
    whole_file_max_bytes: int = WHOLE_FILE_MAX_BYTES
    """Files above this size keep the per-key path (`wholefile.MAX_BYTES`)."""
    verbose: bool = False
    """On a failure, print Spark's traces to stderr."""
    session: SessionOptions = attrs.field(factory=SessionOptions)


Say = Callable[[str], None]


def verify_spark(
    paths: Iterable[str],
    options: SparkOptions,
    *,
    spark: SparkSession | None = None,
    say: Say | None = None,
) -> SparkReport:
    """Check the histories under ``paths`` on Spark. Starts a session (and stops it) unless
    one is given. Never raises for a user's mistake in the inputs: those come back as
    inputs with ``error`` set. With ``options.output``, writes the verdict table and
    ``summary.json`` (`output`) before the session stops."""
    tell: Say = say or (lambda message: None)
    figures: dict[str, Any] = {"reruns": {}}
    started = time.perf_counter()
    if spark is None:
        # pyspark is imported when a job runs: importing this module must not need it
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()  # a session this process runs already
    own = spark is None
    if spark is None:
        tell(f"starting Spark ({options.session.master or 'local[*]'}) ...")
        spark = start(options.session)
        figures["startup_seconds"] = round(time.perf_counter() - started, 3)
        shipped = ship_package(spark)
        if shipped is not None:
            tell(f"shipped the checker to the executors ({shipped})")
    figures["master"] = spark.sparkContext.master
    figures["default_parallelism"] = spark.sparkContext.defaultParallelism
    try:
        try:
            report = _Job(spark, list(paths), options, tell, figures).run()
        except Exception as exc:
            report = _one_by_one(spark, list(paths), options, tell, figures, exc)
        if options.output is not None:
            write_outputs(spark, options.output, report, summary(report.inputs, "spark"))
    finally:
        if own:
            spark.stop()
    figures["seconds"] = round(time.perf_counter() - started, 3)
    return report


def _one_by_one(
    spark: SparkSession,
    paths: list[str],
    options: SparkOptions,
    tell: Say,
    figures: dict[str, Any],
    failure: Exception,
) -> SparkReport:
    """After a job over several inputs failed: each input in a job of its own, so that one
    bad input does not cost the others their verdicts; an input whose job fails too comes
    back UNKNOWN with Spark's reason. With a single input, the failure stands."""
    files = [f for f in list_inputs(paths, options.fmt, spark) if f.error is None]
    if options.verbose:
        traceback.print_exception(failure, file=sys.stderr)
    if len(files) <= 1:
        raise failure
    tell(f"the job failed ({spark_reason(failure)}); checking each input alone ...")
    figures["reruns"]["one_by_one"] = len(files)
    inputs: list[InputResult] = []
    verdicts: list[dict[str, Any]] = []
    for file in files:
        try:
            part = _Job(spark, [file.display], options, tell, dict(figures)).run()
        except Exception as exc:
            if options.verbose:
                traceback.print_exception(exc, file=sys.stderr)
            inputs.append(
                InputResult.unchecked(
                    file.display,
                    f"{file.display}: Spark failed on this input: {spark_reason(exc)}",
                    format=file.format,
                    model=options.model,
                )
            )
            continue
        for result in part.inputs:
            inputs.append(attrs.evolve(result, path=file.display))
        verdicts.extend(part.verdicts)
    figures["keys"] = sum(len(r.keys) for r in inputs)
    figures["ops"] = sum(r.ops for r in inputs)
    return SparkReport(inputs, verdicts, figures, files=tuple(f.display for f in files))


class _Job:
    """One job over a set of paths: `run` lists, reads, checks and settles them."""

    def __init__(
        self,
        spark: SparkSession,
        paths: list[str],
        options: SparkOptions,
        say: Say,
        figures: dict[str, Any],
    ) -> None:
        self.sql_keys: set[tuple[str, str | None]] = set()
        self.fs_of: dict[int, set[str]] = {}
        self.lines: Lines | None = None
        self.whole: dict[int, FileResult] = {}
        """Files checked whole, by file id (a file's result depends on it alone: kept
        when the job is done again)."""
        self.per_key_only: set[int] = set()
        """Files that share a run with another file: the per-key path's."""
        self.spark = spark
        self.paths = paths
        self.options = options
        self.say = say
        self.figures = figures

    # --- the steps ---------------------------------------------------------------------

    def run(self) -> SparkReport:
        """The job's report. The grouping columns are a guess (`inputs`); when a worker
        finds an op grouped by a wrong guess of its run or key, every group is suspect,
        and the job is done once more with exact grouping (at most once: exact grouping
        cannot be wrong). Files checked whole whose runs the per-key path's files share
        go to the per-key path, and its part is done again (at most once: the runs of
        the files it then takes were known; the other whole files' results stand)."""
        for _ in range(4):  # at most: the first, exact grouping, files gone by key, spare
            report = self._attempt()
            if report is not None:
                return report
        raise AssertionError("the job was done four times and still had to regroup")

    def _attempt(self) -> SparkReport | None:
        """One pass of the steps of the module docstring: the report, or None when an op
        was grouped by a wrong guess (and grouping was not exact)."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        started = time.perf_counter()
        files = list_inputs(self.paths, self.options.fmt, self.spark)
        self.bad = [f for f in files if f.error is not None or f.format is None]
        good = sorted(
            (f for f in files if f.error is None and f.format is not None),
            key=lambda f: normalize(f.uri),
        )
        self.good = good
        ids = {normalize(f.uri): i for i, f in enumerate(good)}
        models: list[str | None] = [None] * len(good)
        spec = JobSpec(
            files=tuple(f.display for f in good),
            formats=tuple("op" if f.format in DRIVER_FORMATS else str(f.format) for f in good),
            conventions=tuple(FORMATS[str(f.format)].conventions.name for f in good),
            models=tuple(models),
            model=self.options.model,
            initial=self.options.initial,
            timeout=self.options.timeout,
            max_witnesses=self.options.max_witnesses,
            consistency=self.options.consistency,
        )
        total_bytes = sum(f.size for f in good)
        whole = self._check_whole(spec, good)
        whole_groups = [g for result in whole.values() for g in result.groups]
        whole_rejected = [r for result in whole.values() for r in result.rejected]
        rest = [f for i, f in enumerate(good) if i not in whole]
        rest_bytes = sum(f.size for f in rest)
        partitions = self.options.partitions or self._default_partitions(rest_bytes)
        self.spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
        self.spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
        self.figures.update({"files": len(files), "bytes": total_bytes, "partitions": partitions})
        self.figures["whole_files"] = len(whole)
        self.lines = None
        if not rest:
            groups, file_models = self._settle_models(spec, whole_groups, whole_rejected)
            self.figures["lines"] = sum(r.lines for r in whole.values())
            self.figures["check_seconds"] = round(time.perf_counter() - started, 3)
            return self._assemble(spec, groups, _capped(whole_rejected), file_models, None)
        self.say(f"reading {len(rest)} file(s), {_size(rest_bytes)} ...")
        exact = spec if self.options.exact_grouping else None
        lines = read_lines(self.spark, rest, ids, models, exact=exact)
        spec = attrs.evolve(spec, models=tuple(models))
        self.lines = lines
        self.figures["first_pass_seconds"] = round(time.perf_counter() - started, 3)
        self.figures["lines"] = sum(lines.stats.lines.values()) + sum(
            r.lines for r in whole.values()
        )
        self.figures["reassign_lines"] = lines.stats.reassigns
        frame = lines.frame
        if frame is None:
            groups, file_models = self._settle_models(spec, whole_groups, whole_rejected)
            return self._assemble(spec, groups, _capped(whole_rejected), file_models, lines)
        if lines.stats.reassigns:
            frame = _with_reassign_copies(frame)
        self.frame = frame

        huge = self._huge_keys(lines.stats.estimates, frame)
        self.sql_keys = huge
        checking = time.perf_counter()
        per_key_frame = frame
        if huge:
            huge_frame = local_frame(self.spark, group_order(huge), "run_eff string, key string")
            per_key_frame = frame.join(
                F.broadcast(huge_frame),
                (frame.run_eff == huge_frame.run_eff) & frame.key.eqNullSafe(huge_frame.key),
                "left_anti",
            )
        self.say(
            f"checking the keys in {partitions} partitions"
            + (f" ({len(huge)} big key(s) by Spark SQL)" if huge else "")
            + " ..."
        )
        checked = _check_frame(per_key_frame, spec)
        checked.persist(StorageLevel.MEMORY_AND_DISK)
        release: Callable[[], None] | None = None
        try:
            with self.step("check"):
                groups = [_group(row) for row in checked.select(*_RESULT_COLUMNS).collect()]
            with self.step("rejections"):
                rejected = _rejections(checked)
            pairs = _pairs(checked)
            if huge:
                with self.step("sql"):
                    sql = logsql.check_keys(self.spark, frame, huge, spec)
                groups.extend(sql.groups)
                rejected.extend(sql.rejected)
                release = sql.release
                pairs = pairs.unionByName(sql.pairs)
            mismatches = sum(g.mismatches for g in groups)
            if mismatches and not self.options.exact_grouping:
                self.figures["reruns"]["exact_grouping"] = mismatches
                self.say(
                    f"{mismatches} op(s) were grouped by a wrong guess of their run or key; "
                    "checking again with exact grouping ..."
                )
                self.options = attrs.evolve(self.options, exact_grouping=True)
                return None
            if self._shared_runs(whole, groups, rejected):
                return None
            groups.extend(whole_groups)
            rejected = _capped(rejected + whole_rejected)
            with self.step("processes"):
                dirty = _dirty_processes(pairs)
            if dirty:
                groups, rejected = self._revalidate(spec, pairs, dirty, groups, rejected)
        finally:
            checked.unpersist()
            if release is not None:
                release()
        groups, file_models = self._settle_models(spec, groups, rejected)
        groups = self._renumber(spec, groups, rejected)
        self.figures["check_seconds"] = round(time.perf_counter() - checking, 3)
        return self._assemble(spec, groups, rejected, file_models, lines)

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time a step into ``figures["steps"]`` (seconds, summed over repeats)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            steps = self.figures.setdefault("steps", {})
            steps[name] = round(steps.get(name, 0.0) + time.perf_counter() - started, 3)

    def _check_whole(self, spec: JobSpec, good: list[InputFile]) -> dict[int, FileResult]:
        """The whole-file path (`wholefile`): the files it may take, each checked whole by
        a worker that Spark's ``binaryFiles`` hands its bytes; those that share a run with
        another of them are left to the per-key path (`per_key_only`)."""
        options = self.options
        if not options.whole_files or options.max_key_ops == 0:
            return {}  # --max-key-ops 0: every log key by the SQL path, as asked
        wanted = [
            i
            for i, f in enumerate(good)
            if i not in self.per_key_only
            and is_candidate(f.uri, f.format, f.size, options.whole_file_max_bytes)
        ]
        todo = [i for i in wanted if i not in self.whole]
        if todo:
            self.say(f"checking {len(todo)} file(s) whole ...")
            ids = {normalize(good[i].uri): i for i in todo}
            context = self.spark.sparkContext
            groups = file_groups(
                [(good[i].uri, good[i].size) for i in todo], context.defaultParallelism
            )
            # one input per group, so that Hadoop does not pack big files into one task
            files = context.union([context.binaryFiles(",".join(g)) for g in groups])
            with self.step("whole"):
                rows = files.map(file_checker(spec, ids)).collect()
            for row in rows:
                result = file_result(row)
                self.whole[result.file_id] = result
        files_of: dict[str, list[int]] = {}
        for i in wanted:
            for run in self.whole[i].runs:
                files_of.setdefault(run, []).append(i)
        shared = {i for ids in files_of.values() if len(ids) > 1 for i in ids}
        if shared:
            self._to_per_key(shared)
        return {i: self.whole[i] for i in wanted if i not in shared}

    def _shared_runs(
        self, whole: dict[int, FileResult], groups: list[Group], rejected: list[Rejected]
    ) -> bool:
        """Whether a file checked whole shares a run with the per-key path's files: it
        then goes to the per-key path too, and the job is done again."""
        runs = {g.run_eff for g in groups} | {r.group[0] for r in rejected}
        shared = {i for i, result in whole.items() if result.runs & runs}
        if shared:
            self._to_per_key(shared)
        return bool(shared)

    def _to_per_key(self, files: set[int]) -> None:
        self.per_key_only |= files
        reruns = self.figures["reruns"]
        reruns["shared_runs"] = reruns.get("shared_runs", 0) + len(files)
        self.say(f"{len(files)} file(s) share runs with other files: checking them by key ...")

    def _default_partitions(self, total_bytes: int) -> int:
        cores = self.spark.sparkContext.defaultParallelism
        return max(2 * cores, min(4000, math.ceil(total_bytes / BYTES_PER_PARTITION)))

    def _huge_keys(
        self, estimates: dict[tuple[str, str | None], int], frame: DataFrame
    ) -> set[Any]:
        """The keys for the SQL path: estimated above ``max_key_ops`` ops (every key when
        it is 0: the SQL path alone, as the tests and ``--max-key-ops 0`` ask)."""
        from pyspark.sql import functions as F

        if self.options.model not in (None, "log"):
            return set()
        limit = self.options.max_key_ops
        if limit == 0:
            rows = frame.where(~F.col("text").startswith(COPY)).select("run_eff", "key")
            return {(r["run_eff"], r["key"]) for r in rows.distinct().collect()}
        return {group for group, n in estimates.items() if n > limit}

    def _recheck(
        self,
        spec: JobSpec,
        targets: dict[tuple[str, str | None], tuple[list[int], str | None]],
    ) -> tuple[list[Group], list[Rejected]]:
        """Check ``targets`` again: (run, key) -> (positions to leave out, model). Keys of
        the SQL path stay on it while their model is the log's."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        sql = {
            ident: excluded
            for ident, (excluded, model) in targets.items()
            if ident in self.sql_keys and model in (None, "log")
        }
        groups: list[Group] = []
        rejected: list[Rejected] = []
        if sql:
            result = logsql.check_keys(self.spark, self.frame, set(sql), spec, exclude=sql)
            result.release()
            groups.extend(result.groups)
            rejected.extend(result.rejected)
        rows = [
            (run, key, sorted(ex), model)
            for (run, key), (ex, model) in targets.items()
            if (run, key) not in sql
        ]
        if not rows:
            return groups, rejected
        extra = local_frame(
            self.spark, rows, "run_eff string, key string, exclude array<long>, override string"
        )
        frame = self.frame
        chosen = frame.join(
            F.broadcast(extra),
            (frame.run_eff == extra.run_eff) & frame.key.eqNullSafe(extra.key),
            "left_semi",
        )
        checked = _check_frame(chosen, spec, extra)
        checked.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            groups.extend(_group(row) for row in checked.select(*_RESULT_COLUMNS).collect())
            rejected.extend(_rejections(checked))
        finally:
            checked.unpersist()
        return groups, rejected

    def _revalidate(
        self,
        spec: JobSpec,
        pairs: DataFrame,
        dirty: list[tuple[str, int]],
        groups: list[Group],
        rejected: list[Rejected],
    ) -> tuple[list[Group], list[Rejected]]:
        """Validate the interleaving processes exactly, and check the keys that lose lines
        again without them."""
        from pyspark.sql import functions as F

        self.figures["reruns"]["interleaving_processes"] = len(dirty)
        self.say(f"{len(dirty)} process(es) run ops that overlap; validating them exactly ...")
        wanted = local_frame(self.spark, dirty, "run_eff string, proc long")
        where = (
            pairs.join(F.broadcast(wanted), ["run_eff", "proc"])
            .select("run_eff", "proc", F.explode(F.array("inv", "comp")).alias("pos"))
            .where((F.col("pos") >= 0) & (F.col("pos") < INF_POS))
        )
        frame = self.frame.select("pos", "text")
        streams = (
            where.join(frame, "pos")
            .groupBy("run_eff", "proc")
            .agg(F.sort_array(F.collect_list(F.struct("pos", "text"))).alias("l"))
        )
        validate = F.udf(
            functools.partial(validate_lines, spec),
            "array<struct<pos:long, reason:string, key:string, run:string>>",
            useArrow=False,
        )
        found = (
            streams.select(F.explode(validate(F.col("l.pos"), F.col("l.text"))).alias("x"))
            .select("x.*")
            .collect()
        )
        fresh = [
            Rejected(pos=r["pos"], reason=r["reason"], key=r["key"], run=r["run"], stage="validate")
            for r in found
        ]
        if not fresh:
            return groups, rejected
        targets: dict[tuple[str, str | None], tuple[list[int], str | None]] = {}
        for r in fresh:
            targets.setdefault(r.group, ([], None))[0].append(r.pos)
        known = {g.ident: g for g in groups}
        for ident in list(targets):
            if ident not in known:
                del targets[ident]
            else:
                targets[ident] = (targets[ident][0], known[ident].model)
        if targets:
            again, again_rejected = self._recheck(spec, targets)
            groups = _replace(groups, again)
            # the lines left out take their model rejections (and refusals: a txn line the
            # validator rejects is not refused too) with them: the check again of the rest
            # has the ones that still hold
            rejected = [
                r for r in rejected if not (r.group in targets and r.stage in RECHECKED_STAGES)
            ]
            rejected.extend(r for r in again_rejected if r.stage in RECHECKED_STAGES)
        return groups, rejected + fresh

    def _settle_models(
        self, spec: JobSpec, groups: list[Group], rejected: list[Rejected]
    ) -> tuple[list[Group], dict[int, str | None]]:
        """The model of each file (``--model``, its format's, or `guess_model` over every
        ``f`` its keys saw, as `engine.choose_model` decides per file), and the keys that
        guessed another model checked again with it."""
        fs_of: dict[int, set[str]] = {}
        for g in groups:
            for file_id in g.files:
                fs_of.setdefault(file_id, set()).update(g.fs)
        file_models: dict[int, str | None] = {}
        for file_id in range(len(spec.files)):
            if spec.model is not None:
                file_models[file_id] = spec.model
            elif spec.models[file_id] is not None:
                file_models[file_id] = spec.models[file_id]
            else:
                file_models[file_id] = guess_model(fs_of.get(file_id, set()))
        self.fs_of = fs_of
        targets: dict[tuple[str, str | None], tuple[list[int], str | None]] = {}
        excluded: dict[tuple[str, str | None], list[int]] = {}
        for r in rejected:
            if r.stage == "validate":
                excluded.setdefault(r.group, []).append(r.pos)
        for g in groups:
            wanted = {file_models[f] for f in g.files}
            if len(wanted) != 1 or None in wanted or g.client_ops == 0 or not g.is_key:
                continue
            (model,) = wanted
            if model != g.model:
                targets[g.ident] = (excluded.get(g.ident, []), model)
        if targets:
            self.figures["reruns"]["model"] = len(targets)
            self.say(f"{len(targets)} key(s) guessed another model than their file's ...")
            again, again_rejected = self._recheck(spec, targets)
            groups = _replace(groups, again)
            rejected[:] = [
                r for r in rejected if not (r.group in targets and r.stage in RECHECKED_STAGES)
            ]
            rejected.extend(r for r in again_rejected if r.stage in RECHECKED_STAGES)
        return groups, file_models

    def _renumber(
        self, spec: JobSpec, groups: list[Group], rejected: list[Rejected]
    ) -> list[Group]:
        """Ops without an ``index`` took their line as their number; where blank or
        rejected lines come before them, the local reader numbers them lower: check those
        keys again with the holes known (explanations change, verdicts cannot)."""
        from pyspark.sql import functions as F

        needy = {f for g in groups if g.needs_ordinal for f in g.files}
        if not needy:
            return groups
        assert self.lines is not None, "a key to number again, but no file read by key"
        parse_holes: dict[int, set[int]] = {}
        for r in rejected:
            if r.stage == "parse":
                parse_holes.setdefault(file_of(r.pos), set()).add(line_of(r.pos))
        blanks = self.lines.stats.blanks
        files = {f for f in needy if blanks.get(f) or parse_holes.get(f)}
        if not files:
            return groups
        holes = {f: set(parse_holes.get(f, ())) for f in files}
        blank_files = [f for f in files if blanks.get(f)]
        if blank_files:
            frame = self.frame
            found = (
                frame.where(F.shiftright(F.col("pos"), FILE_SHIFT).isin(blank_files))
                .where(F.col("text").rlike(BLANK))
                .select("pos")
                .collect()
            )
            for row in found:
                holes[file_of(row["pos"])].add(line_of(row["pos"]))
        spec = attrs.evolve(spec, holes={f: tuple(sorted(h)) for f, h in holes.items()})
        excluded: dict[tuple[str, str | None], list[int]] = {}
        for r in rejected:
            if r.stage == "validate":
                excluded.setdefault(r.group, []).append(r.pos)
        targets = {
            g.ident: (excluded.get(g.ident, []), g.model)
            for g in groups
            if g.needs_ordinal and files.intersection(g.files)
        }
        self.figures["reruns"]["ordinals"] = len(targets)
        self.say(f"numbering the ops of {len(targets)} key(s) without an index field ...")
        again, _ = self._recheck(spec, targets)
        return _replace(groups, again)

    # --- the results -------------------------------------------------------------------

    def _assemble(
        self,
        spec: JobSpec,
        groups: list[Group],
        rejected: list[Rejected],
        file_models: dict[int, str | None],
        lines: Lines | None,
    ) -> SparkReport:
        self.figures["keys"] = len([g for g in groups if g.client_ops and g.is_key])
        self.figures["ops"] = sum(g.client_ops for g in groups)
        self.figures["sql_keys"] = sum(1 for g in groups if g.engine == "sql")
        self.figures["timed_out_keys"] = sum(1 for g in groups if g.timed_out)
        self.figures["rejected_lines"] = len(rejected)
        results: list[InputResult] = []
        for bad in self.bad:
            results.append(
                InputResult.unchecked(
                    bad.display,
                    bad.error or f"{bad.display}: unknown format",
                    format=bad.format,
                    model=self.options.model,
                )
            )
        per_file: dict[int, list[Group]] = {}
        for g in groups:
            if g.client_ops and g.files:
                per_file.setdefault(min(g.files), []).append(g)
        rejections_of: dict[int, list[Rejected]] = {}
        for r in rejected:
            rejections_of.setdefault(file_of(r.pos), []).append(r)
        by_group: dict[tuple[str, str | None], list[Rejected]] = {}
        for r in rejected:
            by_group.setdefault(r.group, []).append(r)
        driver_rejections: dict[int, list[Rejection]] = {}
        driver_errors: dict[int, str] = {}
        if lines is not None:
            for file_id, rejection in lines.driver_rejections:
                driver_rejections.setdefault(file_id, []).append(rejection)
            driver_errors = lines.driver_errors
        verdict_rows: list[dict[str, Any]] = []
        for file_id, file in enumerate(self.good):
            mine = per_file.get(file_id, [])
            fmt = file.format
            model = file_models.get(file_id)
            display = file.display
            if file_id in driver_errors:
                results.append(
                    InputResult.unchecked(display, driver_errors[file_id], format=fmt, model=None)
                )
                continue
            # the local engine's order: lines rejected while reading, in line order, then
            # ops the model could not read, key after key (as `engine` checks the keys)
            lines_out = rejections_of.get(file_id, [])
            reading = [r for r in lines_out if r.stage != "model"]
            modeled = sorted(
                (r for r in lines_out if r.stage == "model"),
                key=lambda r: (*order_key(r.run, r.key), r.order),
            )
            file_rejections = sorted(
                [*driver_rejections.get(file_id, []), *(_rejection(display, r) for r in reading)],
                key=lambda r: r.line or 0,
            ) + [_rejection(display, r) for r in modeled]
            if not mine and file_rejections:
                # every line with an op rejected or refused (txn ops alone): the local
                # engine's words, whatever the model
                results.append(
                    InputResult.unchecked(
                        display,
                        nothing_to_check(display, str(fmt), file_rejections),
                        format=fmt,
                        model=self.options.model,
                        rejected=file_rejections,
                        ops=0,
                    )
                )
                continue
            if model is None:
                seen = ", ".join(sorted(self.fs_of.get(file_id, set()))) if groups else ""
                error = (
                    f"{display}: cannot tell the model from the ops' f ({seen or 'none'}); "
                    f"pass --model ({', '.join(MODEL_NAMES)})"
                )
                results.append(
                    InputResult.unchecked(
                        display,
                        error,
                        format=fmt,
                        model=None,
                        rejected=file_rejections,
                        ops=sum(g.client_ops for g in mine),
                    )
                )
                continue
            keys: list[KeyResult] = []
            anomalies: dict[str, list[list[Op]]] = {}
            # in the local engine's order of keys (its anomalies' witnesses follow it), not
            # in the order the groups were collected in
            mine = sorted(mine, key=lambda g: order_key(g.run, g.key))
            for g in mine:
                if not g.is_key:
                    continue
                key_result = _key_result(g, spec)
                group_rejections = [
                    Rejection(display, line_of(r.pos), r.reason, r.key, key_result.run)
                    for r in by_group.get(g.ident, [])
                ]
                (key_result,) = downgrade([key_result], group_rejections)
                keys.append(key_result)
                for name, witnesses in key_result.anomalies.items():
                    anomalies.setdefault(name, []).extend(witnesses)
                verdict_rows.append(_verdict_row(g, key_result, file.display, key_result.counts))
            order = {(k.run, k.key): k for k in keys}
            keys = [order[g] for g in group_order(order)]
            results.append(
                InputResult.checked(
                    display,
                    format=fmt,
                    model=model,
                    keys=keys,
                    anomalies=anomalies,
                    rejected=file_rejections,
                    seconds=sum(k.seconds for k in keys),
                    ops=sum(g.client_ops for g in mine),
                    consistency=self.options.consistency if model == "log" else None,
                )
            )
        verdict_rows.sort(key=lambda row: order_key(row["run"], row["key"]))
        return SparkReport(results, verdict_rows, self.figures, rejected, spec.files)


# --- the per-key path ------------------------------------------------------------------

_RESULT_COLUMNS = (
    "run_eff",
    "key",
    "files",
    "r.model",
    "r.verdict",
    "r.ops",
    "r.seconds",
    "r.explanation",
    "r.witness",
    "r.anomalies",
    "r.kafka",
    "r.linearizable",
    "r.consistency",
    "r.violations",
    "r.fs",
    "r.mismatches",
    "r.client_ops",
    "r.needs_ordinal",
    "r.timed_out",
)


def _check_frame(frame: DataFrame, spec: JobSpec, extra: DataFrame | None = None) -> DataFrame:
    """``frame``'s lines grouped by (run, key), each group checked by `check_group`;
    ``extra`` adds per group the positions to leave out and the model to use. Where
    PySpark has ``arrow_udf`` (4.1+) each group reaches its worker as Arrow arrays
    (`keycheck.arrow_check`); else through a row UDF over the group's sorted
    ``collect_list``. Both give the same rows: ``(run_eff, key, files, r)``."""
    from pyspark.sql import functions as F

    joined = (F.col("run_eff") == F.col("x_run")) & F.col("key").eqNullSafe(F.col("x_key"))
    if extra is not None:
        extra = extra.withColumnRenamed("run_eff", "x_run").withColumnRenamed("key", "x_key")
    if _arrow_udf() is not None:
        return _check_frame_arrow(frame, spec, extra, joined)
    grouped = frame.groupBy("run_eff", "key").agg(
        F.sort_array(F.collect_list(F.struct("pos", "text"))).alias("l")
    )
    udf = F.udf(functools.partial(check_group, spec), RESULT_DDL, useArrow=False)
    arguments = [F.col("run_eff"), F.col("key"), F.col("l.pos"), F.col("l.text")]
    if extra is not None:
        grouped = grouped.join(extra, joined)
        arguments += [F.col("exclude"), F.col("override")]
    files = F.expr(f"array_distinct(transform(l.pos, p -> shiftright(p, {FILE_SHIFT})))")
    return grouped.select("run_eff", "key", files.alias("files"), udf(*arguments).alias("r"))


def _arrow_udf() -> Any:
    """PySpark's ``arrow_udf`` (4.1+), or None."""
    try:
        from pyspark.sql.functions import arrow_udf
    except ImportError:
        return None
    return arrow_udf


def _check_frame_arrow(
    frame: DataFrame, spec: JobSpec, extra: DataFrame | None, joined: Any
) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.functions import ArrowUDFType
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import _parse_datatype_string

    result = _parse_datatype_string(ARROW_RESULT_DDL)
    arguments = [F.col("run_eff"), F.col("key"), F.col("pos"), F.col("text")]
    if extra is not None:
        frame = frame.join(F.broadcast(extra), joined)
        arguments += [F.col("exclude"), F.col("override")]
    with warnings.catch_warnings():
        # it asks for type hints; the type is given (the function takes 4 or 6 arrays)
        warnings.simplefilter("ignore", UserWarning)
        udf = _arrow_udf()(
            arrow_check(spec, to_arrow_type(result)), result, ArrowUDFType.GROUPED_AGG
        )
    # (key, run) rather than (run, key): Spark sorts each partition by the grouping
    # columns, on a prefix of the first, and a run is often the same for every line
    grouped = frame.groupBy("key", "run_eff").agg(udf(*arguments).alias("r"))
    return grouped.select("run_eff", "key", F.col("r.files").alias("files"), "r")


def _group(row: Any) -> Group:
    """A row of `_RESULT_COLUMNS` as the driver's `Group`."""
    files = tuple(sorted(int(f) for f in row["files"] or ()))
    return Group.from_row(row, files=files, engine="per-key")


def _rejections(checked: DataFrame) -> list[Rejected]:
    from pyspark.sql import functions as F

    rows = (
        checked.select(F.posexplode("r.rejections").alias("i", "x"))
        .select("i", "x.*")
        .orderBy("pos", "i")
        .limit(MAX_REJECTIONS)
        .collect()
    )
    return [
        Rejected(
            pos=r["pos"],
            reason=r["reason"],
            key=r["key"],
            run=r["run"],
            stage=r["stage"],
            order=r["i"],
        )
        for r in rows
    ]


def _pairs(checked: DataFrame) -> DataFrame:
    """The pair table: (run, process, invocation, completion, kind) of every client op,
    from the per-key results (`keycheck.pair_code`)."""
    from pyspark.sql import functions as F

    zipped = F.arrays_zip(
        F.col("r.pair_proc").alias("proc"),
        F.col("r.pair_inv").alias("inv"),
        F.col("r.pair_code").alias("code"),
    )
    code = F.col("p.code")
    comp = (
        F.when(code >= 0, code)
        .when(code <= -10, -code - 10)
        .when(code == -2, F.lit(INF_POS))
        .otherwise(F.lit(-1))
    )
    kind = (
        F.when(code >= 0, F.lit(PAIR_DONE))
        .when(code <= -10, F.lit(PAIR_INFO))
        .when(code == -2, F.lit(PAIR_PENDING))
        .otherwise(F.lit(PAIR_STRAY))
    )
    return checked.select("run_eff", F.explode(zipped).alias("p")).select(
        "run_eff",
        F.col("p.proc").alias("proc"),
        F.col("p.inv").alias("inv"),
        comp.alias("comp"),
        kind.alias("kind"),
    )


def _dirty_processes(pairs: DataFrame) -> list[tuple[str, int]]:
    """The (run, process) whose ops interleave across keys, or have a completion that
    completes nothing: sorted by invocation, each op must complete (``ok``/``fail``)
    before the next is invoked; an ``info`` or a pending op ends the process."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    end = F.when(F.col("kind") == PAIR_DONE, F.col("comp")).otherwise(F.lit(INF_POS))
    # the process first: Spark sorts on a prefix of the first column, and the run is
    # often the same on every row
    order = Window.partitionBy("proc", "run_eff").orderBy("inv")
    overlapping = (
        pairs.where(F.col("kind") != PAIR_STRAY)
        .select("run_eff", "proc", "inv", F.lag(end).over(order).alias("previous_end"))
        .where(F.col("previous_end") >= F.col("inv"))
        .select("run_eff", "proc")
    )
    strays = pairs.where(F.col("kind") == PAIR_STRAY).select("run_eff", "proc")
    rows = overlapping.union(strays).distinct().collect()
    return sorted((r["run_eff"], r["proc"]) for r in rows)


def _with_reassign_copies(frame: DataFrame) -> DataFrame:
    """``frame`` and, for every ``assign``/``subscribe`` line, a copy (text prefixed with
    `COPY`) in the group of every other key of its run: the op concerns them all."""
    from pyspark.sql import functions as F

    reassign = F.col("text").rlike(REASSIGN_PATTERN)
    lines = frame.where(reassign).select("pos", "run_eff", F.col("key").alias("home"), "text")
    keys = frame.where(~reassign).select("run_eff", F.col("key").alias("k")).distinct()
    copies = lines.join(keys, "run_eff").where(~F.col("k").eqNullSafe(F.col("home")))
    return frame.unionByName(
        copies.select(
            "pos", "run_eff", F.col("k").alias("key"), F.concat(F.lit(COPY), "text").alias("text")
        )
    )


def _capped(rejected: list[Rejected]) -> list[Rejected]:
    """The rejections in history order, at most `MAX_REJECTIONS` (as `_rejections`)."""
    return sorted(rejected, key=lambda r: (r.pos, r.order))[:MAX_REJECTIONS]


def _replace(groups: list[Group], again: list[Group]) -> list[Group]:
    fresh = {g.ident: g for g in again}
    return [fresh.get(g.ident, g) for g in groups]


def _rejection(display: str, r: Rejected) -> Rejection:
    return Rejection(display, line_of(r.pos), r.reason, r.key, r.run)


def _op(record: dict[str, Any]) -> Op:
    process = record.get("process")
    return Op(
        int(record.get("index") or 0),
        0,
        process if isinstance(process, int | str) else str(process),
        record.get("type") or "info",
        record.get("f") or "?",
        record.get("key"),
        record.get("value"),
        None,
        record.get("line"),
    )


def _key_result(g: Group, spec: JobSpec) -> KeyResult:
    verdict = Verdict(g.verdict) if g.verdict else Verdict.UNKNOWN
    witness = [_op(o) for o in orjson.loads(g.witness)] if g.witness else []
    table = orjson.loads(g.anomalies) if g.anomalies else {}
    return KeyResult(
        run=g.run,
        key=g.key,
        ops=g.ops,
        verdict=verdict,
        seconds=g.seconds,
        explanation=g.explanation,
        witness=witness,
        consistency=g.consistency,
        kafka=Verdict(g.kafka) if g.kafka else None,
        linearizable=Verdict(g.linearizable) if g.linearizable else None,
        violations=g.violations,
        counts={name: int(entry["count"]) for name, entry in table.items()},
        anomalies={
            name: [[_op(o) for o in w] for w in entry["witnesses"]] for name, entry in table.items()
        },
    )


def _verdict_row(g: Group, key: KeyResult, file: str, anomalies: dict[str, int]) -> dict[str, Any]:
    return {
        "run": g.run if g.run is not None else file,
        "key": g.key,
        "model": g.model,
        "verdict": key.verdict.value,
        "ops": key.ops,
        "anomalies": anomalies,
        "time": round(key.seconds, 6),
        "file": file,
        "explanation": key.explanation,
        "rejected_lines": key.rejected,
        "engine": g.engine,
        "consistency": key.consistency,
        "kafka": key.kafka.value if key.kafka else None,
        "linearizable": key.linearizable.value if key.linearizable else None,
        "violations": list(key.violations),
        "witness": g.witness,
        "anomaly_detail": g.anomalies,
    }


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
