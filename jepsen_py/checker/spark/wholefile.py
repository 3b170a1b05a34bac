"""Spark's whole-file path: a JSONL history whose runs appear in no other file is checked
whole, in one task, by the local engine's own code, and the files are spread over the
executors as tasks.

A directory of independent runs (a Jepsen store: one file per run) needs none of the
per-key path's shuffle: everything a key's verdict depends on (its ops, the process rules
of its run, the model of its file) is in its file. Here a worker gets the file's bytes
(Spark's ``binaryFiles``: each file as one record of its path and bytes, from any file
system Spark reads, no temporary file; a DataFrame's ``binaryFile`` source through a
Python UDF would keep each input row, content and all, in the JVM until its result came
back) and does what `engine` does with a file: the JSONL reader
(`read_jsonl_lines`: the same accepted ops, line numbers and rejections), the validator
(`validate`: each process one op at a time, exactly), the refusal of ``txn`` ops
(`engine.client_ops`: each rejected with `engine.TXN_REFUSED`, its line, key and run, and
left out of the groups, the ``f`` and the op counts), the grouping by (run, key)
(`engine.group_ops`: ``assign``/``subscribe`` handed to every key of their run) and the
model of the file (`guess_model` over its ops' ``f``, as `engine.choose_model`). Each key
is then checked by `keycheck.check_ops`, the function the per-key path calls, so a
verdict, explanation, witness and anomaly table are the per-key path's, field for field.

What the per-key path learns afterwards on the driver, a whole file knows at once: no
op of it can be grouped by a wrong guess (its lines are parsed, not matched by a regular
expression), no process interleaves with another file's, its model is its own, and its
ops without an ``index`` are numbered as the local reader numbers them. So its groups
come back with no pairs, no mismatches and nothing to number again.

What a file cannot know is whether its runs (the ``run`` field) appear in another file:
it reports the runs it saw (`FileResult.runs`), and the job (`job`) sends every file that
shares a run with another file down the per-key path, where the run's lines meet.

Candidates (`is_candidate`): JSONL files (``.gz`` too, decompressed in the worker, as
Spark's text source reads them) of at most `MAX_BYTES` (`engine.SPILL_ABOVE_BYTES`: the
local engine holds about 5.6 bytes per byte of JSONL in memory, so a worker holds about
1.4 GB for a file of that size; a ``.gz`` counts `GZ_EXPANSION` times its size). Bigger
files, Parquet and the driver-read formats keep the per-key path.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable
from typing import Any

import attrs

from jepsen_py.checker import engine
from jepsen_py.checker.spark.keycheck import (
    REFUSED,
    JobSpec,
    check_ops,
    freeze_worker_heap,
    guess_model,
    position,
    run_of,
)
from jepsen_py.checker.spark.records import Group, Rejected
from jepsen_py.checker.taxonomy import REASSIGN_FS
from jepsen_py.history.jsonl import read_jsonl_lines
from jepsen_py.history.op import Op
from jepsen_py.history.validate import NATIVE, Rejections, validate

MAX_BYTES = engine.SPILL_ABOVE_BYTES
"""Files above this many bytes (of JSONL) keep the per-key path: one worker holds a whole
file's ops, about 5.6 bytes per byte of JSONL, as the local engine does below its own
spilling bound."""

GZ_EXPANSION = 10
"""A ``.gz`` file is taken as this many times its size once decompressed (JSON Lines
histories compress about 6 to 10 times): a conservative guess, as its real size is known
only once read."""

ENGINE = "whole-file"
"""The ``engine`` column of a key checked on this path."""


def is_candidate(uri: str, fmt: str | None, size: int, limit: int = MAX_BYTES) -> bool:
    """Whether a file may take the whole-file path: JSONL, at most ``limit`` bytes (a
    ``.gz`` file `GZ_EXPANSION` times its size), a name Hadoop takes as it is."""
    if fmt != "jsonl" or any(c in uri for c in _NOT_IN_A_PATH_LIST):
        return False
    expanded = size * GZ_EXPANSION if is_gzip(uri) else size
    return expanded <= limit


_NOT_IN_A_PATH_LIST = ",*?[{"
"""Characters that Hadoop reads as a separator or a pattern in ``binaryFiles``'s list of
paths: a file whose name holds one keeps the per-key path."""


def is_gzip(uri: str) -> bool:
    """A ``.gz`` file, read through as Spark's text source (Hadoop's codec by suffix) does."""
    return uri.endswith(".gz")


@attrs.frozen
class FileResult:
    """What the whole-file check of one file gives the driver."""

    file_id: int
    lines: int
    runs: frozenset[str]
    groups: list[Group]
    rejected: list[Rejected]
    """The reader's and the validator's rejections (stages ``parse`` and ``validate``),
    the refused ops (``refused``: `engine.refusal`, a ``txn`` op), then the model's
    (``model``), each group's in its order."""


def check_file(spec: JobSpec, file_id: int, content: bytes) -> dict[str, Any]:
    """The whole-file check of one JSONL file's bytes: its lines, the runs it saw, its
    checked groups (the per-key path's result fields that a whole file can have: no
    pairs, mismatches or ordinals, see the module docstring), and the lines the reader
    or the validator rejected. Plain values: the worker hands them back pickled."""
    freeze_worker_heap()
    if is_gzip(spec.files[file_id]):
        content = gzip.decompress(content)
    lines = content.count(b"\n") + (1 if content and not content.endswith(b"\n") else 0)
    read = Rejections("", strict=False)
    checked = Rejections("", strict=False)
    refused = Rejections("", strict=False)
    with engine.collector_paused():
        accepted = list(
            engine.client_ops(
                validate(read_jsonl_lines(io.BytesIO(content), read), checked), refused
            )
        )
        del content
        groups = engine.group_ops(accepted)
    rejections: list[dict[str, Any]] = [
        _rejection(file_id, r.line, r.reason, r.key, r.run, stage, 0)
        for sink, stage in ((read, "parse"), (checked, "validate"), (refused, REFUSED))
        for r in sink
    ]
    runs = {run_of(file_id, op.run) for op in accepted}
    runs.update(r["run"] or run_of(file_id, None) for r in rejections)
    fs = {op.f for op in accepted}
    reassigns = bool(fs & REASSIGN_FS)
    if reassigns:
        # keys with only assign/subscribe ops of their own: the per-key path gives them a
        # group of their own (no model: the ops were handed to the other keys)
        own: dict[tuple[str | None, str | None], list[Op]] = {}
        for op in accepted:
            if op.f in REASSIGN_FS and (op.run, op.key) not in groups:
                own.setdefault((op.run, op.key), []).append(op)
        groups.update(own)
    model = spec.model or spec.models[file_id] or guess_model(fs)
    rows = [
        _check_group(spec, file_id, model, run, key, ops, reassigns)
        for (run, key), ops in groups.items()
    ]
    return {
        "file_id": file_id,
        "lines": lines,
        "runs": sorted(runs),
        "groups": rows,
        "rejections": rejections,
    }


def _check_group(
    spec: JobSpec,
    file_id: int,
    model: str | None,
    run: str | None,
    key: str | None,
    ops: list[Op],
    reassigns: bool,
) -> dict[str, Any]:
    """One (run, key) of the file, checked as `keycheck.check_group` checks it."""
    own = [op for op in ops if op.key == key or op.f not in REASSIGN_FS] if reassigns else ops
    fs = {op.f for op in own}
    base = position(file_id, 0)
    where = [base | op.line for op in ops]  # type: ignore[operator]  # a JSONL op has a line
    found: list[tuple[int, str, str | None, str | None, str]] = []
    out = check_ops(spec, model, NATIVE, ops, where, fs, found)
    return {
        **out,
        "run_eff": run_of(file_id, run),
        "key": key,
        "violations": out["violations"],
        "fs": sorted(fs),
        "rejections": [
            {"pos": p, "reason": why, "key": k, "run": r, "stage": stage, "order": i}
            for i, (p, why, k, r, stage) in enumerate(found)
        ],
        "client_ops": len(own),
    }


def _rejection(
    file_id: int, line: int | None, reason: str, key: Any, run: str | None, stage: str, order: int
) -> dict[str, Any]:
    return {
        "pos": position(file_id, line or 0),
        "reason": reason,
        "key": key if isinstance(key, str) or key is None else str(key),
        "run": run,
        "stage": stage,
        "order": order,
    }


def file_checker(spec: JobSpec, ids: dict[str, int]) -> Callable[[Any], dict[str, Any]]:
    """The function a worker maps over Spark's ``binaryFiles`` records ``(path,
    content)``: `check_file` of each. ``ids`` maps each file's `inputs.normalize`d URI to
    its id."""
    from jepsen_py.checker.spark.inputs import normalize

    def check(record: tuple[str, bytes]) -> dict[str, Any]:
        path, content = record
        return check_file(spec, ids[normalize(path)], content)

    return check


def file_groups(sizes: list[tuple[str, int]], cores: int) -> list[list[str]]:
    """The files (URI, size) in groups to read as one input each: a group closes before
    it would pass a quarter of a core's share of the bytes (at least `SMALL_GROUP_BYTES`),
    so that big files are tasks of their own and the cores finish together, while small
    files share a task (a task costs some milliseconds of its own)."""
    total = sum(size for _, size in sizes)
    target = max(SMALL_GROUP_BYTES, total // max(1, 4 * cores))
    groups: list[list[str]] = []
    current: list[str] = []
    held = 0
    for uri, size in sizes:
        if current and held + size > target:
            groups.append(current)
            current, held = [], 0
        current.append(uri)
        held += size
    if current:
        groups.append(current)
    return groups


SMALL_GROUP_BYTES = 8 << 20
"""Small files are read together up to this many bytes (`file_groups`)."""


def file_result(row: dict[str, Any]) -> FileResult:
    """A collected `check_file` result as the driver's records."""
    file_id = int(row["file_id"])
    groups: list[Group] = []
    rejected = [_rejected(r) for r in row["rejections"] or ()]
    for g in row["groups"] or ():
        groups.append(
            Group.from_row(g, files=(file_id,), engine=ENGINE, mismatches=0, needs_ordinal=False)
        )
        rejected.extend(_rejected(r) for r in g["rejections"] or ())
    return FileResult(file_id, int(row["lines"]), frozenset(row["runs"] or ()), groups, rejected)


def _rejected(r: Any) -> Rejected:
    return Rejected(
        pos=int(r["pos"]),
        reason=r["reason"],
        key=r["key"],
        run=r["run"],
        stage=r["stage"],
        order=int(r["order"]),
    )
