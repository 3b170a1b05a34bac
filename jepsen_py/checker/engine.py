"""The local verification engine behind ``kmodel verify``: read a history, split it by
(run, key), check each part, and gather the results.

The steps are separate functions so that another engine (Spark) can reuse the per-key
check as is:

1. `load` streams a file through its reader and the validator (`jepsen_py.history`), and
   groups the accepted ops by (run, key), with the rejected lines set aside;
2. `choose_model` picks the model from the ops' ``f`` when none was named;
3. `check_groups` checks each group: with the Wing-Gong-Lowe search (`wgl`) for register,
   cas-register and kv; for ``log``, with `verdict.check_keys` (the exact Kafka-log
   checker and the anomaly taxonomy, one verdict per key under ``--consistency``: the
   function ``kmodel test`` and the Spark engine call too);
4. `verify_path` does it all for one path and writes the HTML reports when asked.

``assign`` and ``subscribe`` ops set what a consumer reads on every key of their run (the
keys they list keep their positions, the others lose them): each is handed to the group
of every key of its run. ``txn`` ops (Kafka transactions) are refused, line by line, until
the model has transactions (`refusal`, which the Spark engine's paths call too).

A key with rejected lines cannot be vouched for: its verdict is UNKNOWN whatever the check
of its accepted ops found (the explanation says what that was). Rejected lines that name no
key (a line that is not JSON) make the input's verdict UNKNOWN at best; an ILLEGAL key
still makes it ILLEGAL. An input of which no op could be checked (an empty file, every
line rejected, a format that does not fit the file) is UNKNOWN, with the reason.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from jepsen_py.checker.model import Model, Operation, operations
from jepsen_py.checker.models import MODELS, UNSET, model_named
from jepsen_py.checker.records import (
    WITNESSES_SHOWN,
    GroupKey,
    InputResult,
    KeyResult,
    downgrade,
    group_order,
    line_of,
)
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.taxonomy import ANOMALIES, GROUP_FS, KAFKA, LOG_FS, REASSIGN_FS
from jepsen_py.checker.wgl import PartitionResult, check_partitions
from jepsen_py.history import (
    FORMATS,
    Format,
    HistoryError,
    Rejection,
    Rejections,
    detect_format_by_content,
    history_format,
)
from jepsen_py.history.op import Op
from jepsen_py.history.validate import Conventions, validate

__all__ = [  # the records are `records`'; the CLI, replay and the demo take them from here too
    "MODEL_NAMES",
    "NOT_CHECKED",
    "TXN_REFUSED",
    "WITNESSES_SHOWN",
    "GroupKey",
    "InputResult",
    "KeyResult",
    "Loaded",
    "check_groups_log",
    "check_groups_wgl",
    "choose_model",
    "client_ops",
    "group_ops",
    "line_of",
    "load",
    "model_of",
    "nothing_to_check",
    "refusal",
    "verify_path",
]

MODEL_NAMES = ("log", *MODELS)
"""Every ``--model``: the Kafka-log checker and the WGL models."""

NOT_CHECKED = "the check stopped at the first illegal key"
"""The explanation of a key left unchecked (its verdict is UNKNOWN)."""

TXN_REFUSED = (
    "txn ops (Kafka transactions) are not supported yet: this checker's model has no "
    "transactions; split the history into send and poll ops, or leave the txn ops out"
)
"""The rejection of a ``txn`` line (every engine)."""


@attrs.frozen(eq=False)
class Loaded:
    """A history read and validated: the accepted ops by (run, key), in order."""

    path: str
    format: str
    conventions: Conventions
    groups: dict[GroupKey, list[Op]]
    rejections: Rejections
    ops: int
    fs: frozenset[str]


def load(path: str | os.PathLike[str], fmt: str | None = None) -> Loaded:
    """Read and validate ``path`` (format detected when None). Raises `HistoryError` when
    the file cannot be read at all; malformed lines are collected, not raised."""
    name = str(path)
    fmt = history_format(path, fmt)
    if not Path(path).is_file():
        raise HistoryError(f"{name}: no such file")
    spec = FORMATS[fmt]
    rejections = Rejections(name)
    with collector_paused():
        accepted = list(_client_ops(path, spec, rejections))
        groups = group_ops(accepted)
    fs = frozenset(op.f for op in accepted)
    return Loaded(name, fmt, spec.conventions, groups, rejections, len(accepted), fs)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with Python's cycle collector off (and back on after, if it was on).

    Reading a history and checking its Kafka-log keys make millions of objects that stay
    alive (the ops, each with its value; a key's offsets and anomaly tables) and no
    reference cycles: every collection then walks them again, for nothing. On 10^6 ops of
    a Kafka log that was a third of the local engine's CPU time (12.7 s against 8.6 s,
    ``benchmarks/spark_verify.py --sizes 1000000 --configs local``), with the same peak
    memory. Reference counting still frees whatever is dropped; the WGL search of
    register and key-value keys does not run under it."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _client_ops(path: str | os.PathLike[str], spec: Format, rejections: Rejections) -> Iterator[Op]:
    """The ops of ``path`` a check takes: validated, client ops only, transactions refused
    (`TXN_REFUSED`, into ``rejections``)."""
    return client_ops(validate(spec.read(path, rejections), rejections), rejections)


def client_ops(validated: Iterable[Op], rejections: Rejections) -> Iterator[Op]:
    """The ops of ``validated`` (`validate`'s output, in history order) that a check takes:
    client ops only, each op `refusal` refuses rejected into ``rejections`` (its line, key
    and run) in its place among the reader's and the validator's rejections. The local
    engine and Spark's whole-file path read a file through it."""
    for op in validated:
        if not op.is_client:
            continue
        reason = refusal(op)
        if reason is not None:
            rejections.reject(op.line, reason, key=op.key, run=op.run)
            continue
        yield op


def refusal(op: Op) -> str | None:
    """Why a check refuses a validated client op (`TXN_REFUSED` for a ``txn`` op: Kafka
    transactions, KIP-98, are not modelled), or None when it takes it. A refused op is
    validated first (it counts in its process's invoke/complete order), then left out: of
    its key's group, of the ``f`` the model is chosen from, and of the op counts. Every
    engine asks this one function: the local engine (`client_ops`) and both Spark paths."""
    return TXN_REFUSED if op.f == "txn" else None


def group_ops(ops: list[Op]) -> dict[GroupKey, list[Op]]:
    """Client ops by (run, key), in history order; an ``assign``/``subscribe`` op goes to
    every group of its run with other ops (it changes a consumer's position on each), and
    makes no group of its own."""
    groups: dict[GroupKey, list[Op]] = {}
    if not any(op.f in REASSIGN_FS for op in ops):  # the common case: one pass
        for op in ops:
            group = groups.get((op.run, op.key))
            if group is None:
                groups[(op.run, op.key)] = group = []
            group.append(op)
        return groups
    keyed: dict[Any, set[Any]] = {}
    for op in ops:
        if op.f not in REASSIGN_FS:
            keyed.setdefault(op.run, set()).add(op.key)
    for op in ops:
        if op.f in REASSIGN_FS:
            for key in sorted(keyed.get(op.run, ()), key=lambda k: (k is None, str(k))):
                groups.setdefault((op.run, key), []).append(op)
            continue
        group = groups.get((op.run, op.key))
        if group is None:
            groups[(op.run, op.key)] = group = []
        group.append(op)
    return groups


_FS_OF_MODEL = {
    "log": frozenset({"send", "poll", *REASSIGN_FS, *GROUP_FS}),
    "kv": frozenset({"get", "put", "append"}),
    "cas-register": frozenset({"read", "write", "cas"}),
}


def choose_model(loaded: Loaded) -> str:
    """The model whose operations the history uses (cas-register for read/write/cas, kv for
    get/put/append, log for send/poll); raises `HistoryError` when none fits."""
    if loaded.format == "porcupine-etcd":
        return "cas-register"
    if loaded.format == "porcupine-kv":
        return "kv"
    if loaded.fs and loaded.fs <= REASSIGN_FS:
        raise HistoryError(
            f"{loaded.path}: nothing to check: only assign/subscribe ops, no send or poll"
        )
    found = model_of(loaded.fs)
    if found is not None:
        return found
    seen = ", ".join(sorted(loaded.fs)) or "none"
    raise HistoryError(
        f"{loaded.path}: cannot tell the model from the ops' f ({seen}); pass --model "
        f"({', '.join(MODEL_NAMES)})"
    )


def model_of(fs: frozenset[str] | set[str]) -> str | None:
    """The model whose operations cover ``fs`` (the ``f`` of a history's client ops), or
    None when none does (or when they are only ``assign``/``subscribe``)."""
    for name, model_fs in _FS_OF_MODEL.items():
        if fs and fs <= model_fs and not fs <= REASSIGN_FS:
            if name == "log" and not fs & LOG_FS:
                continue  # a consumer group's ops alone: nothing of a log to check
            return name
    return None


def check_groups_wgl(
    model: Model,
    groups: dict[GroupKey, list[Op]],
    conventions: Conventions,
    rejections: Rejections,
    *,
    timeout: float | None = None,
    parallel: bool | None = None,
) -> list[KeyResult]:
    """Check each (run, key) with the WGL search; all keys' partitions go to one
    `check_partitions` call so they share the workers and the deadline."""
    order = group_order(groups)
    parts: list[list[Operation]] = []
    owner: list[int] = []
    counts: list[int] = []
    for g, group_key in enumerate(order):
        ops = operations(groups[group_key], model, conventions, rejections)
        counts.append(len(ops))
        for part in model.partition(ops):
            parts.append(part)
            owner.append(g)
    checked = check_partitions(model, parts, timeout=timeout, parallel=parallel)
    by_group: list[list[PartitionResult | None]] = [[] for _ in order]
    for p, result in enumerate(checked.results):  # one pass: a history may have many keys
        by_group[owner[p]].append(result)
    results: list[KeyResult] = []
    for g, (run, key) in enumerate(order):
        mine = by_group[g]
        done = [r for r in mine if r is not None]
        verdicts = [r.verdict for r in done] + [Verdict.UNKNOWN] * (len(mine) - len(done))
        verdict = Verdict.combine(verdicts)
        explanation = None
        failing = next((r for r in done if r.verdict is Verdict.ILLEGAL), None)
        unknown = next((r for r in done if r.verdict is Verdict.UNKNOWN), None)
        if failing is not None:
            explanation = failing.describe(model)
        elif len(done) < len(mine):
            explanation = NOT_CHECKED
        elif unknown is not None:
            explanation = unknown.explanation
        results.append(
            KeyResult(
                run=run,
                key=key,
                ops=counts[g],
                verdict=verdict,
                seconds=sum(r.seconds for r in done),
                explanation=explanation,
                checked=done,
            )
        )
    return results


@collector_paused()
def check_groups_log(
    groups: dict[GroupKey, list[Op]],
    consistency: str = KAFKA,
    max_witnesses: int | None = None,
) -> tuple[list[KeyResult], dict[str, list[list[Op]]]]:
    """Check each (run, key) with `verdict.check_keys` (the exact Kafka-log checker and the
    anomaly taxonomy, decided under ``consistency``); returns the key results and the
    anomalies (name -> witnessing op groups, all keys). ``max_witnesses`` caps the
    witnesses kept per anomaly and key (the counts stay exact)."""
    # here: the Kafka-log checker and the anomaly pass (verdict, kafka_log, anomalies) load
    # only for Kafka logs, never for a register or key-value history
    from jepsen_py.checker.verdict import check_keys

    results: list[KeyResult] = []
    anomalies: dict[str, list[list[Op]]] = {}
    for run, key in group_order(groups):
        ops = groups[(run, key)]
        for checked in check_keys(ops, consistency, max_witnesses=max_witnesses):
            verdict = checked.verdict
            mine = {
                name: [[ops[p] for p in w] for w in witnesses]
                for name, witnesses in checked.anomalies.witnesses.items()
            }
            for name in ANOMALIES:
                if name in mine:
                    anomalies.setdefault(name, []).extend(mine[name])
            results.append(
                KeyResult(
                    run=checked.run,
                    key=checked.key,
                    ops=checked.ops,
                    verdict=verdict.verdict,
                    seconds=checked.seconds,
                    explanation=verdict.explanation,
                    witness=[ops[p] for p in verdict.witness],
                    consistency=verdict.consistency,
                    kafka=verdict.kafka,
                    linearizable=verdict.linearizable,
                    violations=verdict.violations,
                    counts={n: c for n, c in verdict.counts.items() if c},
                    anomalies=mine,
                )
            )
    return results, anomalies


SPILL_ABOVE_BYTES = 256 << 20
"""Files bigger than this are checked bucket by bucket (`spill`): in memory whole, the
local engine holds about 5.6 bytes per byte of JSONL; spilled, about `spill.BUCKET_BYTES`
times that, whatever the file's size."""


def verify_path(
    path: str | os.PathLike[str],
    *,
    model: str | None = None,
    fmt: str | None = None,
    initial: Any = UNSET,
    timeout: float | None = None,
    report_dir: str | os.PathLike[str] | None = None,
    parallel: bool | None = None,
    consistency: str = KAFKA,
    spill_above: int | None = SPILL_ABOVE_BYTES,
) -> InputResult:
    """Check one history file; never raises for a user's mistake: an input that cannot be
    checked comes back with ``error`` set and verdict UNKNOWN. A file of more than
    ``spill_above`` bytes (None: never) is checked bucket by bucket (`spill`), so that it
    is never in memory whole."""
    started = time.perf_counter()
    name = str(path)
    loaded: Loaded | None = None
    try:
        if spill_above is not None and _size(path) > spill_above:
            return _verify_spilled(
                path,
                model=model,
                fmt=fmt,
                initial=initial,
                timeout=timeout,
                report_dir=report_dir,
                parallel=parallel,
                consistency=consistency,
                started=started,
            )
        loaded = load(path, fmt)
        if loaded.ops == 0:
            raise HistoryError(nothing_to_check(name, loaded.format, list(loaded.rejections)))
        model_name = model or choose_model(loaded)
        if model_name == "log":
            keys, anomalies = check_groups_log(loaded.groups, consistency)
            wgl_model: Model | None = None
        else:
            wgl_model = model_named(model_name, initial)
            keys = check_groups_wgl(
                wgl_model,
                loaded.groups,
                loaded.conventions,
                loaded.rejections,
                timeout=timeout,
                parallel=parallel,
            )
            anomalies = {}
    except (HistoryError, ValueError) as exc:
        return InputResult.unchecked(
            name,
            str(exc),
            format=loaded.format if loaded else fmt,
            model=model,
            rejected=loaded.rejections if loaded else (),
            seconds=time.perf_counter() - started,
            ops=loaded.ops if loaded else 0,
        )
    except OSError as exc:  # a file that vanished or cannot be read midway
        return InputResult.unchecked(
            name,
            f"{name}: cannot read: {exc.strerror or exc}",
            format=fmt,
            model=model,
            seconds=time.perf_counter() - started,
        )
    rejected = list(loaded.rejections)
    keys = downgrade(keys, rejected)
    if report_dir is not None:
        keys = _write_reports(Path(report_dir), loaded, keys, wgl_model)
    return InputResult.checked(
        name,
        format=loaded.format,
        model=model_name,
        keys=keys,
        anomalies=anomalies,
        rejected=rejected,
        seconds=time.perf_counter() - started,
        ops=loaded.ops,
        consistency=consistency if model_name == "log" else None,
    )


def _size(path: str | os.PathLike[str]) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # load says why


def _verify_spilled(
    path: str | os.PathLike[str],
    *,
    model: str | None,
    fmt: str | None,
    initial: Any,
    timeout: float | None,
    report_dir: str | os.PathLike[str] | None,
    parallel: bool | None,
    consistency: str,
    started: float,
) -> InputResult:
    """`verify_path` of a big file: one streaming pass spills the accepted ops into
    buckets by (run, key) (`spill`), then each bucket is grouped and checked alone, in
    `SPILL_WORKERS` processes unless ``parallel`` is False. The results are those of the
    in-memory path, listed in the same order; one difference: a WGL check stops at the
    first illegal partition of a bucket, not of the file."""
    from jepsen_py.checker.spill import Spilled, buckets_for, spill_dir

    name = str(path)
    fmt = history_format(path, fmt)
    spec = FORMATS[fmt]
    rejections = Rejections(name)
    deadline = time.monotonic() + timeout if timeout is not None else None
    with Spilled.create(buckets_for(_size(path)), spill_dir()) as spilled:
        try:
            for op in _client_ops(path, spec, rejections):
                spilled.add(op)
            spilled.finish()
            meta = Loaded(
                name, fmt, spec.conventions, {}, rejections, spilled.ops, frozenset(spilled.fs)
            )
            if spilled.ops == 0:
                raise HistoryError(nothing_to_check(name, fmt, list(rejections)))
            model_name = model or choose_model(meta)
            job = _BucketJob(
                spilled, meta, model_name, initial, consistency, deadline, report_dir, parallel
            )
            keys: list[KeyResult] = []
            found: list[Rejection] = []  # the model's rejections, by bucket
            workers = min(SPILL_WORKERS, spilled.buckets, os.cpu_count() or 1)
            if parallel is False or workers < 2 or not _can_fork():
                outcomes: Any = map(job.check, range(spilled.buckets))
            else:
                outcomes = _in_workers(job, spilled.buckets, workers)
            for mine, new in outcomes:
                keys.extend(mine)
                found.extend(new)
        except (HistoryError, ValueError) as exc:
            return InputResult.unchecked(
                name,
                str(exc),
                format=fmt,
                model=model,
                rejected=rejections,
                seconds=time.perf_counter() - started,
                ops=spilled.ops,
            )
    order = {g: i for i, g in enumerate(group_order({(k.run, k.key) for k in keys}))}
    keys.sort(key=lambda k: order[(k.run, k.key)])  # stable: a group's results keep their order
    found.sort(key=lambda r: order.get((r.run, r.key), len(order)))  # as check_groups_wgl adds them
    anomalies: dict[str, list[list[Op]]] = {}
    for k in keys:
        for anomaly in ANOMALIES:
            if anomaly in k.anomalies:
                anomalies.setdefault(anomaly, []).extend(k.anomalies[anomaly])
    rejected = [*rejections, *found]
    keys = downgrade(keys, rejected)
    return InputResult.checked(
        name,
        format=fmt,
        model=model_name,
        keys=keys,
        anomalies=anomalies,
        rejected=rejected,
        seconds=time.perf_counter() - started,
        ops=spilled.ops,
        consistency=consistency if model_name == "log" else None,
    )


SPILL_WORKERS = 2
"""Processes that check the buckets of a spilled file at once (each holds one bucket)."""


@attrs.frozen
class _BucketJob:
    """What checking one bucket of a spilled file needs; `check` runs in this process or,
    forked, in a worker (it then returns its results and rejections, pickled)."""

    spilled: Any
    meta: Loaded
    model_name: str
    initial: Any
    consistency: str
    deadline: float | None
    report_dir: str | os.PathLike[str] | None
    parallel: bool | None

    def check(self, i: int) -> tuple[list[KeyResult], list[Rejection]]:
        with collector_paused():
            groups = group_ops(list(self.spilled.bucket_ops(i)))
        if not groups:
            return [], []
        sink = Rejections(self.meta.path)
        wgl_model = None
        if self.model_name == "log":
            mine, _ = check_groups_log(groups, self.consistency)
        else:
            wgl_model = model_named(self.model_name, self.initial)
            left = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
            mine = check_groups_wgl(
                wgl_model, groups, self.meta.conventions, sink, timeout=left, parallel=self.parallel
            )
            mine = [_without_ok_operations(k) for k in mine]
        if self.report_dir is not None:
            here = attrs.evolve(self.meta, groups=groups)
            known = [*self.meta.rejections, *sink]
            mine = _write_reports(Path(self.report_dir), here, downgrade(mine, known), wgl_model)
        return mine, list(sink)


PARALLEL_FILES_ABOVE_BYTES = 64 << 20
"""Two files or more of more than this many bytes in all are checked `SPILL_WORKERS` files
at a time, each in a forked process (`verify_paths`): each file is checked alone, so they
run side by side as a Spark job's tasks do, and a directory of runs uses every core."""


def verify_paths(paths: Sequence[str], **options: Any) -> Iterator[InputResult]:
    """`verify_path` (with ``options``) of each of ``paths``, in their order. When they are
    more than `PARALLEL_FILES_ABOVE_BYTES` in all and the machine has cores to spare,
    `SPILL_WORKERS` forked processes check one file each at a time; a worker returns its
    file's result without the operations of its linearizable partitions (as a spilled
    check does), the rest unchanged."""
    workers = min(SPILL_WORKERS, len(paths), os.cpu_count() or 1)
    if (
        workers < 2
        or options.get("parallel") is False
        or sum(_size(p) for p in paths) <= PARALLEL_FILES_ABOVE_BYTES
        or not _can_fork()  # last: it imports multiprocessing, which small inputs never need
    ):
        for path in paths:
            yield verify_path(path, **options)
        return
    import multiprocessing

    global _FILES_JOB
    _FILES_JOB = {**options, "parallel": False}  # a worker cannot start workers of its own
    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(workers) as pool:
            yield from pool.imap(_run_file, paths)
    finally:
        _FILES_JOB = None


_FILES_JOB: dict[str, Any] | None = None
"""The options a forked file worker checks with (set before the fork: nothing is pickled)."""


def _run_file(path: str) -> InputResult:
    assert _FILES_JOB is not None
    result = verify_path(path, **_FILES_JOB)
    return attrs.evolve(result, keys=[_without_ok_operations(k) for k in result.keys])


def _can_fork() -> bool:
    import multiprocessing  # here: only inputs checked in forked workers need it (5 ms)

    return "fork" in multiprocessing.get_all_start_methods()


_JOB: _BucketJob | None = None
"""The job a forked bucket worker runs (set before the fork: nothing is pickled to it)."""


def _run_bucket(i: int) -> tuple[list[KeyResult], list[Rejection]]:
    assert _JOB is not None
    return _JOB.check(i)


def _in_workers(
    job: _BucketJob, buckets: int, workers: int
) -> Iterator[tuple[list[KeyResult], list[Rejection]]]:
    """The buckets checked in ``workers`` forked processes, results in bucket order."""
    import multiprocessing

    global _JOB
    _JOB = attrs.evolve(job, parallel=False)  # a worker cannot start workers of its own
    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(workers) as pool:
            yield from pool.imap(_run_bucket, range(buckets))
    finally:
        _JOB = None


def _without_ok_operations(key: KeyResult) -> KeyResult:
    """A key's result without the operations of its linearizable partitions (kept for the
    report of a failing one only): a spilled check keeps no bucket's ops."""
    return attrs.evolve(
        key,
        checked=[
            r if r.verdict is not Verdict.OK else attrs.evolve(r, operations=[], linearization=[])
            for r in key.checked
        ],
    )


def nothing_to_check(path: str, fmt: str, rejected: list[Rejection]) -> str:
    """Why an input of which no op was read is UNKNOWN: every line rejected, an empty
    file, or a format that fits no line (with the format the file looks like)."""
    hint = ""
    try:
        looks = detect_format_by_content(path)
    except (HistoryError, OSError):
        looks = None
    if looks is not None and looks != fmt:
        hint = f"; the file looks like {looks}, not {fmt}: check --format"
    if rejected:
        return (
            f"{path}: nothing to check: all {len(rejected)} line(s) with content were "
            f"rejected (the first: {rejected[0]}){hint}"
        )
    try:
        with open(path, "rb") as handle:
            empty = not any(line.strip() for line in handle)
    except OSError:
        empty = False
    if empty:
        return f"{path}: nothing to check: the file holds no op"
    return f"{path}: nothing to check: no line of it is a {fmt} op{hint}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "_"


def _write_reports(
    root: Path, loaded: Loaded, keys: list[KeyResult], model: Model | None
) -> list[KeyResult]:
    from jepsen_py.checker.report_html import render_key_report  # only with --report

    folder = root / _slug(Path(loaded.path).name)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for result in keys:
        if result.explanation == NOT_CHECKED:
            out.append(result)
            continue
        label = "key" if result.key is None else str(result.key)
        if result.run is not None:
            label = f"{result.run}-{label}"
        target = folder / f"{_slug(label)}.html"
        page = render_key_report(
            loaded.path, result, model, loaded.groups[(result.run, result.key)]
        )
        target.write_text(page, encoding="utf-8")
        out.append(attrs.evolve(result, report=str(target)))
    return out
