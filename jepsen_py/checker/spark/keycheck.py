"""The per-(run, key) check that Spark's Python workers run: the local engine's own code.

Spark hands `check_group` one (run, key) of the history: the positions of its lines and
their text, in history order. It reads every line with the local readers' parser
(`op_from_record`: same accepted ops, same rejection messages), and checks the key with
the local engine's functions (`engine.check_groups_log`: the exact Kafka-log checker and
the anomaly taxonomy with its informational rule; `engine.check_groups_wgl`: the
Wing-Gong-Lowe search for register, cas-register and kv), so a verdict, explanation and
counterexample from Spark are the local engine's, by construction.

What a worker cannot see from one key, it reports for the driver to decide:

- **Process well-formedness crosses keys.** `validate` rejects, per (run, process), an
  invocation while another op of that process is pending, on any key. A worker emits, per
  process, its ops on this key as (invocation, completion) pairs; the driver sorts all
  pairs of a process (in `job`) and finds the processes whose ops interleave.
  Only those are re-validated exactly, and only keys that lose a line are checked again;
  every other key's result stands (removing lines of other keys changes nothing here).
- **The grouping is a guess.** Spark groups lines by a JVM extraction of ``run`` and
  ``key``; the worker re-derives both with the real parser and counts the ops that landed
  in the wrong group (``mismatches``). Any mismatch sends the job down the exact path.
- **The model is per history.** Without ``--model`` a worker picks the model from its own
  key's ``f`` (as `engine.choose_model` does per file) and reports the ``f`` it saw; the
  driver picks the job's model from all of them and re-checks any key that guessed another.
- **Rejected lines downgrade keys.** Rejections go back with their key and run; the driver
  downgrades every key with rejected lines to UNKNOWN, as the local engine does.
- **``txn`` ops are refused** (`engine.refusal`, with `engine.TXN_REFUSED`): a worker puts
  one in its process's pairs (the local validator sees it too), then rejects its line
  (stage `REFUSED`) and leaves it out of the key's ops, its ``f`` and its op count, as the
  local engine does; a line the exact validation rejects is not refused as well.
- **``assign``/``subscribe`` ops concern every key of their run.** The job hands a copy of
  each such line (its text prefixed with `COPY`) to every other key of its run, as the
  local engine hands the op to every key's group; a copy feeds the check and nothing
  else (no pair, no op count). A line the job did not recognize as one (its ``"f"`` spelled
  unlike `REASSIGN_PATTERN`) counts as a mismatch: the job then groups exactly.
- **Undecodable lines.** The job replaces a line that is not UTF-8 by `NOT_UTF8_LINE`,
  which the worker rejects with the local readers' reason.

Positions are ``file_id << 40 | line``: history order is file order (sorted paths), then
line order, and the line number is recovered for every message.

A key whose check outlasts ``timeout`` seconds is UNKNOWN (WGL: its deadline; the log
checker: an interval timer), not a failed task.
"""

from __future__ import annotations

import contextlib
import gc
import re
import signal
import threading
import time
import zlib
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any

import attrs
import orjson

from jepsen_py.checker import engine
from jepsen_py.checker.models import UNSET, model_named
from jepsen_py.checker.records import KeyResult
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.taxonomy import KAFKA, REASSIGN_FS, VIOLATIONS
from jepsen_py.history import ETCD, KNOSSOS, PORCUPINE_KV
from jepsen_py.history.jsonl import NOT_UTF8, RecordError, op_from_record, op_to_record
from jepsen_py.history.op import Op
from jepsen_py.history.validate import NATIVE, Conventions, Rejections, validate

FILE_SHIFT = 40
LINE_MASK = (1 << FILE_SHIFT) - 1
INF_POS = 1 << 62
"""The end of an op that never completed (``info`` or pending) in the pair table."""

PAIR_DONE, PAIR_INFO, PAIR_PENDING, PAIR_STRAY = 0, 1, 2, 3
"""Kinds of rows of the pair table: an invocation with its ``ok``/``fail``, with its
``info``, with no completion, and a completion that completes nothing on this key."""

FILE_RUN = "\x00"
"""Prefix of the run of a line whose op has no ``run`` field: the run is its file
(``FILE_RUN + file_id``), a string no ``run`` field is expected to hold."""

_WHITESPACE = " \t\n\r\x0b\x0c"  # what bytes.strip() strips: the JSONL reader's blank lines

COPY = "\x1e"
"""Prefix of a copy of an ``assign``/``subscribe`` line handed to another key's group."""

NOT_UTF8_LINE = "\x1f"
"""What the job puts in place of a line that is not UTF-8 (no JSON line is this)."""

REASSIGN_PATTERN = r'"f"[ \t\r\n]*:[ \t\r\n]*"(assign|subscribe)"'
"""How the job spots ``assign``/``subscribe`` lines (a Java and a Python regex alike)."""

_REASSIGN = re.compile(REASSIGN_PATTERN)

REFUSED = "refused"
"""The stage of a rejected line whose op every engine refuses (`engine.refusal`: a ``txn``
op). Like the validator's rejections it is in the local engine's reading order (by line);
unlike them it is found by the check of the op's key, after the op took its place in its
process's pairs (the validator sees it), so a check again of the key derives it again."""

RECHECKED_STAGES = frozenset({"model", REFUSED})
"""The stages of the rejections a check of a key makes itself, which depend on the lines
left out: a check again of the key replaces its rejections of these stages (`job`). A
line the exact validation rejects later is left out of that check, and so never refused
as well: the local engine's validator rejects it first, and only once."""

RESULT_DDL = (
    "model string, verdict string, ops long, seconds double, explanation string, "
    "witness string, anomalies string, kafka string, linearizable string, "
    "consistency string, violations array<string>, fs array<string>, "
    "rejections array<struct<pos:long, reason:string, key:string, run:string, stage:string>>, "
    "pair_proc array<long>, pair_inv array<long>, pair_code array<long>, "
    "mismatches long, client_ops long, needs_ordinal boolean, "
    "timed_out boolean"
)
"""What `check_group` returns to Spark (the UDF's return type)."""

ARROW_RESULT_DDL = RESULT_DDL + ", files array<long>"
"""What `arrow_check`'s function returns: `RESULT_DDL`, and the files of the group's lines."""


def conventions_named(name: str) -> Conventions:
    """The `Conventions` a file's format follows, by name (shipped in `JobSpec`)."""
    table = {c.name: c for c in (NATIVE, KNOSSOS, ETCD, PORCUPINE_KV)}
    return table[name]


@attrs.frozen
class JobSpec:
    """What every worker needs to know about the job: shipped with the UDF (small)."""

    files: tuple[str, ...]
    """The path of each file id, as the user named it."""
    formats: tuple[str, ...]
    """Per file id: ``jsonl``, ``parquet`` (a row as JSON, the value as JSON text) or
    ``op`` (an op record of a driver-side import)."""
    conventions: tuple[str, ...]
    """Per file id: the name of its `Conventions`."""
    models: tuple[str | None, ...]
    """Per file id: the model its format implies (porcupine-etcd, porcupine-kv), else None."""
    model: str | None = None
    """``--model``, or the job's model once chosen; None: each key guesses (see above)."""
    initial: str | None = None
    """``--initial`` as JSON text; None: the model's default."""
    timeout: float | None = None
    max_witnesses: int = 100
    """Witnesses kept per anomaly per key (the counts are always exact)."""
    consistency: str = KAFKA
    """``--consistency``: what decides a Kafka-log key's verdict."""
    holes: dict[int, tuple[int, ...]] = attrs.field(factory=dict)
    """Per file id, the sorted lines that are not ops (blank or rejected): an op without an
    ``index`` field is numbered by its ordinal among the file's ops, as the local readers
    number it, so its number is its line minus the holes before it."""

    def ordinal(self, file_id: int, line: int) -> int:
        holes = self.holes.get(file_id)
        return line - 1 - (bisect_left(holes, line) if holes else 0)


def position(file_id: int, line: int) -> int:
    return (file_id << FILE_SHIFT) | line


def file_of(pos: int) -> int:
    return pos >> FILE_SHIFT


def line_of(pos: int) -> int:
    return pos & LINE_MASK


def run_of(file_id: int, run: str | None) -> str:
    """The run a line belongs to: its ``run`` field, else its file."""
    return run if run is not None else f"{FILE_RUN}{file_id}"


def process_repr(process: int | str) -> str:
    """A process as text that keeps 3 and "3" apart (they are different processes)."""
    return f"i:{process}" if type(process) is int else f"s:{process}"


_INT_PROCESSES = 1 << 60
"""Integer processes below this (in magnitude) are their own number in the pair table."""


def process_id(process: int | str) -> int:
    """A process as a number for the pair table: an integer process itself (doubled), a
    named one a hash (odd). Two processes that share a number only look as if their ops
    could interleave, which sends them to the exact validation: never a wrong verdict."""
    if type(process) is int and -_INT_PROCESSES < process < _INT_PROCESSES:
        return process * 2
    return (zlib.crc32(str(process).encode()) << 1) | 1


class LineError(ValueError):
    """A line the reader rejects; ``key`` is the key it names, when it names one."""

    def __init__(self, reason: str, key: Any = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.key = key


def _process_from_text(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    return int(text) if text.isdigit() else text


def decode(fmt: str, text: str, ordinal: int, line: int) -> Op | None:
    """The op of one line, exactly as the local reader of ``fmt`` reads it; None for a
    blank JSONL line; `LineError` with the local reader's reason for a malformed one."""
    return decode_record(fmt, text, ordinal, line)[0]


def decode_record(fmt: str, text: str, ordinal: int, line: int) -> tuple[Op | None, bool]:
    """`decode`, and whether the op took its index from ``ordinal`` (no ``index`` field)."""
    if text == NOT_UTF8_LINE:
        raise LineError(NOT_UTF8)
    if fmt == "jsonl":
        if text[:1] != "{" and not text.strip(_WHITESPACE):  # "{": an op, not blank
            return None, False
        try:
            record = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise LineError(f"not valid JSON ({exc.args[0]}); one object per line") from None
        try:
            return op_from_record(record, ordinal, line), "index" not in record
        except RecordError as exc:
            key = record.get("key") if isinstance(record, dict) else None
            raise LineError(str(exc), key if isinstance(key, str) else None) from None
    if fmt == "parquet":
        # the row as Spark's to_json wrote it (null columns left out), value as JSON text
        record = orjson.loads(text)
        record["process"] = _process_from_text(record.get("process"))
        for optional in ("index", "time"):
            if record.get(optional) is None:
                record.pop(optional, None)
        value = record.get("value")
        try:
            record["value"] = orjson.loads(value) if value is not None else None
            return op_from_record(record, ordinal, line), "index" not in record
        except orjson.JSONDecodeError as exc:
            raise LineError(f"column 'value' is not JSON text ({exc.args[0]})") from None
        except RecordError as exc:
            raise LineError(str(exc), record.get("key")) from None
    # "op": a record written by `op_record_text` on the driver (already validated); its
    # position is its place in the file, its line the importer's
    try:
        record = orjson.loads(text)
        return op_from_record(record, ordinal, record.get("line")), False
    except (orjson.JSONDecodeError, RecordError) as exc:
        raise LineError(str(exc)) from None


def op_record_text(op: Op) -> str:
    """The line that carries a driver-side imported op to the workers."""
    return orjson.dumps({**op_to_record(op), "line": op.line}).decode()


def exact_group(spec: JobSpec, pos: int, text: str) -> tuple[str, str | None]:
    """(run, key) of a line by the real parser: the exact grouping (a rejected line goes
    with its file's run and no key; where it goes does not matter)."""
    file_id, line = file_of(pos), line_of(pos)
    try:
        op = decode(spec.formats[file_id], text, line - 1, line)
    except LineError:
        return run_of(file_id, None), None
    if op is None:
        return run_of(file_id, None), None
    return run_of(file_id, op.run), op.key


def op_json(op: Op, file: str | None) -> dict[str, Any]:
    """An op in a witness or a counterexample: where it is and what it was."""
    return {
        "file": file,
        "line": op.line,
        "index": op.index,
        "process": op.process,
        "type": op.type,
        "f": op.f,
        "key": op.key,
        "value": op.value,
    }


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise `_Timeout` inside the block after ``seconds`` (an interval timer; only in the
    main thread, where Spark's Python worker runs a UDF)."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@attrs.define
class _Pairs:
    """Per process, this key's ops as (`process_id`, invocation, code) rows; the code is
    the completion of an ``ok``/``fail``, ``-10 - completion`` for an ``info``, -2 for an
    invocation never completed here, -3 for a completion that completes nothing here
    (its own position is then the "invocation")."""

    proc: list[int] = attrs.field(factory=list)
    inv: list[int] = attrs.field(factory=list)
    code: list[int] = attrs.field(factory=list)
    pending: dict[int, tuple[int, str]] = attrs.field(factory=dict)

    def see(self, op: Op, pos: int) -> None:
        # called once per op of the job: `process_id` of an ordinary process inlined
        process = op.process
        if type(process) is int and -_INT_PROCESSES < process < _INT_PROCESSES:
            proc = process * 2
        else:
            proc = process_id(process)
        pending = self.pending
        open_ = pending.get(proc)
        kind = op.type
        if kind == "invoke":
            if open_ is not None:
                self._add(proc, open_[0], -2)
            pending[proc] = (pos, op.f)
            return
        if open_ is None or open_[1] != op.f:
            self._add(proc, pos, -3)
            return
        del pending[proc]
        self.proc.append(proc)
        self.inv.append(open_[0])
        self.code.append(-10 - pos if kind == "info" else pos)

    def _add(self, proc: int, inv: int, code: int) -> None:
        self.proc.append(proc)
        self.inv.append(inv)
        self.code.append(code)

    def close(self) -> None:
        for proc, (pos, _) in sorted(self.pending.items(), key=lambda item: item[1][0]):
            self._add(proc, pos, -2)
        self.pending.clear()


_FROZEN: list[bool] = []


def freeze_worker_heap() -> None:
    """Once per process, move what is alive (the worker's imports: PySpark, pyarrow, the
    checkers) out of the garbage collector's sight (`gc.freeze`): a check makes and drops
    millions of ops, and each full collection would otherwise walk that heap again
    (about a sixth of a Kafka-log key's check). The CLI's process does the same."""
    if not _FROZEN:
        _FROZEN.append(True)
        gc.collect()
        gc.freeze()


def check_group(
    spec: JobSpec,
    run_eff: str,
    key: str | None,
    positions: Sequence[int],
    texts: Sequence[str],
    exclude: Sequence[int] | None = None,
    model_override: str | None = None,
) -> tuple[Any, ...]:
    """Check one (run, key): see the module docstring. ``exclude`` are positions of lines
    the exact validation rejected (left out, as the local engine leaves them out)."""
    freeze_worker_heap()
    excluded = set(exclude or ())
    rejections: list[tuple[int, str, str | None, str | None, str]] = []
    ops: list[Op] = []
    where: list[int] = []  # the position of each op of ``ops``
    pairs = _Pairs()
    mismatches = 0
    copies = 0
    needs_ordinal = False
    fs: set[str] = set()
    file_models: set[str] = set()
    group_files: set[int] = set()
    conventions = NATIVE
    formats = spec.formats
    ordinal = spec.ordinal if spec.holes else None  # else an op's ordinal is its line - 1
    # the run of an op without a ``run`` field, by file (`run_of`, made once per file)
    file_runs: dict[int, str] = {}
    for pos, text in zip(positions, texts, strict=True):
        file_id, line = pos >> FILE_SHIFT, pos & LINE_MASK  # `file_of`, `line_of`
        fmt = formats[file_id]
        number = line - 1 if ordinal is None else ordinal(file_id, line)
        copy = text[:1] == COPY
        if copy:
            text = text[1:]
        try:
            op, defaulted = decode_record(fmt, text, number, line)
        except LineError as exc:
            if not copy:
                rejections.append((pos, exc.reason, _text_or_none(exc.key), None, "parse"))
            continue
        if op is None:
            continue
        if copy:
            # another key's assign/subscribe: it moves this key's consumers too
            if op.is_client and op.f in REASSIGN_FS and pos not in excluded:
                ops.append(op)
                where.append(pos)
                copies += 1
            continue
        needs_ordinal = needs_ordinal or defaulted
        if not op.is_client:
            continue
        run = op.run
        if run is None:
            run = file_runs.get(file_id) or file_runs.setdefault(file_id, run_of(file_id, None))
        if run != run_eff or op.key != key:
            mismatches += 1
            continue
        if op.f in REASSIGN_FS and not _REASSIGN.search(text):
            mismatches += 1  # the job did not hand it to the other keys: group exactly
        pairs.see(op, pos)
        if pos in excluded:
            continue
        refused = engine.refusal(op)
        if refused is not None:  # validated (in the pairs), then left out: a txn op
            rejections.append((pos, refused, _text_or_none(op.key), op.run, REFUSED))
            continue
        ops.append(op)
        where.append(pos)
        fs.add(op.f)
        group_files.add(file_id)
    pairs.close()
    for file_id in sorted(group_files):
        conventions = conventions_named(spec.conventions[file_id])
        if spec.models[file_id] is not None:
            file_models.add(str(spec.models[file_id]))
    model_name = model_override or spec.model
    if model_name is None and file_models:
        model_name = sorted(file_models)[0]
    out = check_ops(spec, model_name, conventions, ops, where, fs, rejections)
    return (
        out["model"],
        out["verdict"],
        out["ops"],
        out["seconds"],
        out["explanation"],
        out["witness"],
        out["anomalies"],
        out["kafka"],
        out["linearizable"],
        out["consistency"],
        out["violations"],
        sorted(fs),
        rejections,
        pairs.proc,
        pairs.inv,
        pairs.code,
        mismatches,
        len(ops) - copies,
        needs_ordinal,
        out["timed_out"],
    )


def check_ops(
    spec: JobSpec,
    model_name: str | None,
    conventions: Conventions,
    ops: list[Op],
    where: list[int],
    fs: set[str],
    rejections: list[tuple[int, str, str | None, str | None, str]],
) -> dict[str, Any]:
    """The check of one (run, key) whose ops are read and validated: ``ops`` in history
    order (another key's ``assign``/``subscribe`` ops among them), ``where`` the position
    of each, ``fs`` the ``f`` of the key's own ops. ``model_name`` None: the model ``fs``
    implies (`guess_model`). Returns the result fields of `RESULT_DDL` from ``model`` to
    ``violations`` and ``timed_out``; the lines the model cannot read go to
    ``rejections`` (stage ``model``). Both Spark paths call it: the per-key path
    (`check_group`) and the whole-file path (`wholefile`)."""
    if model_name is None and fs:
        model_name = guess_model(fs)
    out: dict[str, Any] = {
        "model": model_name,
        "verdict": None,
        "ops": 0,
        "seconds": 0.0,
        "explanation": None,
        "witness": None,
        "anomalies": None,
        "kafka": None,
        "linearizable": None,
        "consistency": None,
        "violations": None,
        "timed_out": False,
    }
    if not fs or fs <= REASSIGN_FS:
        out["model"] = None  # only assign/subscribe ops: they were handed to the keys
    elif ops and model_name is not None:
        sink = Rejections("", strict=False)
        out.update(_check(spec, model_name, conventions, ops, sink, spec.files, where))
        if len(sink):
            # a model-encoding rejection names its line: find the line's position
            by_line = {op.line: p for op, p in zip(reversed(ops), reversed(where), strict=True)}
            for rejection in sink:
                pos = by_line.get(rejection.line or 0, rejection.line or 0)
                reason, rkey = rejection.reason, _text_or_none(rejection.key)
                rejections.append((pos, reason, rkey, rejection.run, "model"))
    elif ops:
        out["explanation"] = "no model fits the ops' f: " + ", ".join(sorted(fs))
    return out


def arrow_check(spec: JobSpec, result_type: Any) -> Callable[..., Any]:
    """`check_group` as the function of a grouped-aggregate Arrow UDF (``arrow_udf``, Spark
    4.1+). Spark hands it one group's columns as Arrow arrays, ``(run_eff, key, pos, text)``
    and optionally ``(exclude, override)`` (the same on every row of the group), in no
    particular order; it sorts them by position and returns one struct of
    `ARROW_RESULT_DDL` (``result_type``: its Arrow type, made on the driver, where Spark
    parses DDL). Beside a row UDF over ``collect_list``, the JVM is spared building and
    sorting an array per group and pickling every line: Arrow hands the lines over."""
    names = [field.name for field in result_type]

    def check(
        run_eff: Any, key: Any, pos: Any, text: Any, exclude: Any = None, override: Any = None
    ) -> Any:
        # in the worker, at call time: pyarrow takes a fifth of a second to import, and
        # only the Arrow UDF path (PySpark 4.1+) needs it
        import pyarrow as pa
        import pyarrow.compute as pc

        order = pc.sort_indices(pos)
        positions = pos.take(order).to_pylist()
        files = sorted(pc.unique(pc.shift_right(pos, FILE_SHIFT)).to_pylist())
        result = check_group(
            spec,
            run_eff[0].as_py(),
            key[0].as_py(),
            positions,
            text.take(order).to_pylist(),
            None if exclude is None else exclude[0].as_py(),
            None if override is None else override[0].as_py(),
        )
        return pa.scalar(dict(zip(names, (*result, files), strict=True)), type=result_type)

    return check


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) or value is None else str(value)


def guess_model(fs: set[str] | frozenset[str]) -> str | None:
    """`engine.choose_model`'s rule for JSONL/Parquet: the model whose ops cover ``fs``."""
    return engine.model_of(fs)


def _check(
    spec: JobSpec,
    model_name: str,
    conventions: Conventions,
    ops: list[Op],
    sink: Rejections,
    files: tuple[str, ...],
    where: list[int],
) -> dict[str, Any]:
    group = {(ops[0].run, ops[0].key): ops}
    position_of: dict[int, int] = {}  # made at the first witness: most keys have none

    def file_name(op: Op) -> str | None:
        if not position_of:
            position_of.update((id(o), p) for o, p in zip(ops, where, strict=True))
        pos = position_of.get(id(op))
        return files[file_of(pos)] if pos is not None else None

    started = time.perf_counter()
    if model_name == "log":
        try:
            with deadline(spec.timeout):
                results, _ = engine.check_groups_log(group, spec.consistency, spec.max_witnesses)
        except _Timeout:
            return _timed_out(spec, time.perf_counter() - started, len(ops))
        if not results:
            return {"model": None}  # no send or poll: nothing of the log model to check
        (result,) = results
        return log_fields(result, file_name)
    initial = UNSET if spec.initial is None else orjson.loads(spec.initial)
    model = model_named(model_name, initial)
    (result,) = engine.check_groups_wgl(
        model, group, conventions, sink, timeout=spec.timeout, parallel=False
    )
    witness: list[dict[str, Any]] = []
    failing = next((r for r in result.checked if r.verdict is Verdict.ILLEGAL), None)
    if failing is not None and failing.blocked is not None:
        blocked = failing.operations[failing.blocked]
        witness = [op_json(op, file_name(op)) for op in (blocked.invoke, blocked.complete) if op]
    timed_out = result.verdict is Verdict.UNKNOWN and "timed out" in (result.explanation or "")
    return {
        "verdict": result.verdict.value,
        "ops": result.ops,
        "seconds": result.seconds,
        "explanation": result.explanation,
        "witness": _dumps(witness),
        "anomalies": None,
        "timed_out": timed_out,
    }


def log_fields(result: KeyResult, file_name: Callable[[Op], str | None]) -> dict[str, Any]:
    """The result columns of a Kafka-log key (a `records.KeyResult`), as both Spark paths
    return them: the verdict, the two properties and the anomalies (per name: count, class,
    witnesses)."""
    table = {
        name: {
            "count": count,
            "violation": name in VIOLATIONS,
            "witnesses": [
                [op_json(op, file_name(op)) for op in w] for w in result.anomalies.get(name, [])
            ],
        }
        for name, count in sorted(result.counts.items())
        if count
    }
    return {
        "verdict": result.verdict.value,
        "ops": result.ops,
        "seconds": result.seconds,
        "explanation": result.explanation,
        "witness": _dumps([op_json(op, file_name(op)) for op in result.witness]),
        "anomalies": _dumps(table) if table else None,
        "kafka": result.kafka.value if result.kafka else None,
        "linearizable": result.linearizable.value if result.linearizable else None,
        "consistency": result.consistency,
        "violations": list(result.violations),
    }


def _timed_out(spec: JobSpec, seconds: float, n: int) -> dict[str, Any]:
    return {
        "verdict": Verdict.UNKNOWN.value,
        "ops": n,
        "seconds": seconds,
        "explanation": f"timed out after {seconds:.1f} s (--timeout {spec.timeout} per key) "
        f"on {n} ops; raise --timeout to check this key",
        "witness": None,
        "anomalies": None,
        "timed_out": True,
    }


def _dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def validate_lines(
    spec: JobSpec, positions: Sequence[int], texts: Sequence[str]
) -> list[tuple[int, str, str | None, str | None]]:
    """The exact `validate` over the lines of one or more processes (in history order):
    the rejected lines as (position, reason, key, run)."""
    sink = Rejections("", strict=False)
    decoded: list[Op] = []
    for pos, text in zip(positions, texts, strict=True):
        file_id, line = file_of(pos), line_of(pos)
        try:
            op = decode(spec.formats[file_id], text, spec.ordinal(file_id, line), line)
        except LineError:
            continue
        if op is None:
            continue
        # validate names lines by op.line: make it unique across files for the lookup
        decoded.append(attrs.evolve(op, line=pos))
    for _ in validate(iter(decoded), sink):
        pass
    out = []
    for rejection in sink:
        pos = rejection.line or 0
        reason = _relabel(rejection.reason)
        out.append((pos, reason, _text_or_none(rejection.key), rejection.run))
    return out


def _relabel(reason: str) -> str:
    """`validate_lines` numbered ops by position; name them by line again."""

    def line(match: re.Match[str]) -> str:
        return f"line {line_of(int(match.group(1)))}"

    return re.sub(r"line (\d+)", line, reason)
