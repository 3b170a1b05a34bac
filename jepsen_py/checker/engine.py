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
the model has transactions.

A key with rejected lines cannot be vouched for: its verdict is UNKNOWN whatever the check
of its accepted ops found (the explanation says what that was). Rejected lines that name no
key (a line that is not JSON) make the input's verdict UNKNOWN at best; an ILLEGAL key
still makes it ILLEGAL. An input of which no op could be checked (an empty file, every
line rejected, a format that does not fit the file) is UNKNOWN, with the reason.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from jepsen_py.checker.anomalies import ANOMALIES, REASSIGN_FS, VIOLATIONS
from jepsen_py.checker.model import Model, Operation, operations
from jepsen_py.checker.models import MODELS, UNSET, model_named
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.verdict import KAFKA, check_keys
from jepsen_py.checker.wgl import PartitionResult, check_partitions
from jepsen_py.history import (
    FORMATS,
    HistoryError,
    Rejection,
    Rejections,
    detect_format,
    detect_format_by_content,
)
from jepsen_py.history.op import Op
from jepsen_py.history.validate import Conventions, validate

MODEL_NAMES = ("log", *MODELS)
"""Every ``--model``: the Kafka-log checker and the WGL models."""

NOT_CHECKED = "the check stopped at the first illegal key"
"""The explanation of a key left unchecked (its verdict is UNKNOWN)."""

GroupKey = tuple[str | None, Any]
"""(run, key) of a part of a history."""

TXN_REFUSED = (
    "txn ops (Kafka transactions) are not supported yet: this checker's model has no "
    "transactions; split the history into send and poll ops, or leave the txn ops out"
)
"""The rejection of a ``txn`` line (every engine)."""

WITNESSES_SHOWN = 3
"""Witnesses per violation listed in JSON and text (the counts are exact)."""


@attrs.frozen(eq=False)
class KeyResult:
    """The verdict on one (run, key) of a history."""

    run: str | None
    key: Any
    ops: int
    verdict: Verdict
    seconds: float
    explanation: str | None = None
    rejected: int = 0
    report: str | None = None
    checked: list[PartitionResult] = attrs.field(factory=list)
    """The WGL results of the key's partitions (empty for the log model)."""
    witness: list[Op] = attrs.field(factory=list)
    """The ops that witness the verdict (log model only): the first violation's, or the
    failure to linearize when linearizability decides."""
    consistency: str | None = None
    """What decided (log model only): ``kafka`` or ``linearizable``."""
    kafka: Verdict | None = None
    """Kafka's guarantees (log model only)."""
    linearizable: Verdict | None = None
    """Linearizability of the partition log (log model only)."""
    violations: tuple[str, ...] = ()
    """What makes the verdict ILLEGAL (`verdict.KeyVerdict.violations`)."""
    counts: dict[str, int] = attrs.field(factory=dict)
    """Every anomaly found, with its count (log model only)."""
    anomalies: dict[str, list[list[Op]]] = attrs.field(factory=dict)
    """This key's witnesses per anomaly found."""

    @property
    def informational(self) -> dict[str, int]:
        return {n: c for n, c in self.counts.items() if c and n not in VIOLATIONS}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "run": self.run,
            "key": self.key,
            "ops": self.ops,
            "verdict": self.verdict.value,
            "seconds": round(self.seconds, 6),
            "explanation": self.explanation,
            "rejected_lines": self.rejected,
            "report": self.report,
        }
        if self.consistency is not None:
            out.update(
                consistency=self.consistency,
                kafka=self.kafka.value if self.kafka else None,
                linearizable=self.linearizable.value if self.linearizable else None,
                violations=[self.violation_json(name) for name in self.violations],
                informational=self.informational,
            )
        if self.witness:
            out["witness"] = [_op_json(op) for op in self.witness]
        return out

    def violation_json(self, name: str) -> dict[str, Any]:
        """A violation as JSON: its name, count and first witnesses as history lines."""
        if name in self.anomalies:
            groups = self.anomalies[name]
            count = self.counts.get(name, len(groups))
        else:  # nonlinearizable: the log checker's witness
            groups, count = [self.witness], 1
        return {
            "name": name,
            "count": count,
            "lines": [[line_of(op) for op in group] for group in groups[:WITNESSES_SHOWN]],
        }


def line_of(op: Op) -> int | None:
    """The history line of an op (its index + 1 when it was not read from a file)."""
    return op.line if op.line is not None else op.index + 1


@attrs.frozen(eq=False)
class InputResult:
    """The verdict on one history file."""

    path: str
    format: str | None
    model: str | None
    verdict: Verdict
    keys: list[KeyResult]
    anomalies: dict[str, list[list[Op]]]
    rejected: list[Rejection]
    seconds: float
    ops: int = 0
    error: str | None = None
    """Why the input could not be checked at all (unreadable, unknown format, nothing to
    check)."""
    consistency: str | None = None

    @property
    def anomaly_counts(self) -> dict[str, int]:
        """Every anomaly found, with its exact count over the keys (``anomalies`` may keep
        fewer witnesses than that: the Spark engine keeps 100 per key and anomaly)."""
        out: dict[str, int] = {}
        for key in self.keys:
            for name, n in key.counts.items():
                if n:
                    out[name] = out.get(name, 0) + n
        return {name: out[name] for name in ANOMALIES if name in out}

    @property
    def violations(self) -> dict[str, int]:
        """The violations that decided a key ILLEGAL, with their counts over the keys."""
        out: dict[str, int] = {}
        for key in self.keys:
            if key.verdict is not Verdict.ILLEGAL:
                continue
            for name in key.violations:
                out[name] = out.get(name, 0) + key.violation_json(name)["count"]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "model": self.model,
            "consistency": self.consistency,
            "verdict": self.verdict.value,
            "violations": self.violations,
            "seconds": round(self.seconds, 6),
            "ops": self.ops,
            "keys": [k.to_json() for k in self.keys],
            "anomalies": {
                name: [[_op_json(op) for op in group] for group in groups]
                for name, groups in sorted(self.anomalies.items())
                if groups
            },
            "rejected_lines": [r.to_json() for r in self.rejected],
            "error": self.error,
        }


def _op_json(op: Op) -> dict[str, Any]:
    return {
        "index": op.index,
        "line": op.line,
        "process": op.process,
        "type": op.type,
        "f": op.f,
        "key": op.key,
        "value": op.value,
    }


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
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise HistoryError(f"unknown history format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if not Path(path).is_file():
        raise HistoryError(f"{name}: no such file")
    spec = FORMATS[fmt]
    rejections = Rejections(name)
    accepted: list[Op] = []
    for op in validate(spec.read(path, rejections), rejections):
        if not op.is_client:
            continue
        if op.f == "txn":
            rejections.reject(op.line, TXN_REFUSED, key=op.key, run=op.run)
            continue
        accepted.append(op)
    groups = group_ops(accepted)
    fs = frozenset(op.f for op in accepted)
    return Loaded(name, fmt, spec.conventions, groups, rejections, len(accepted), fs)


def group_ops(ops: list[Op]) -> dict[GroupKey, list[Op]]:
    """Client ops by (run, key), in history order; an ``assign``/``subscribe`` op goes to
    every group of its run with other ops (it changes a consumer's position on each), and
    makes no group of its own."""
    keyed: dict[Any, set[Any]] = {}
    for op in ops:
        if op.f not in REASSIGN_FS:
            keyed.setdefault(op.run, set()).add(op.key)
    groups: dict[GroupKey, list[Op]] = {}
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
    "log": frozenset({"send", "poll", *REASSIGN_FS}),
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
    for name, fs in _FS_OF_MODEL.items():
        if loaded.fs and loaded.fs <= fs and not loaded.fs <= REASSIGN_FS:
            return name
    seen = ", ".join(sorted(loaded.fs)) or "none"
    raise HistoryError(
        f"{loaded.path}: cannot tell the model from the ops' f ({seen}); pass --model "
        f"({', '.join(MODEL_NAMES)})"
    )


def _sorted_groups(groups: dict[GroupKey, list[Op]]) -> list[GroupKey]:
    return sorted(groups, key=lambda g: (str(g[0]), g[1] is None, str(g[1])))


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
    order = _sorted_groups(groups)
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
    results: list[KeyResult] = []
    for g, (run, key) in enumerate(order):
        mine = [checked.results[p] for p in range(len(parts)) if owner[p] == g]
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
                run,
                key,
                counts[g],
                verdict,
                sum(r.seconds for r in done),
                explanation,
                checked=done,
            )
        )
    return results


def check_groups_log(
    groups: dict[GroupKey, list[Op]],
    consistency: str = KAFKA,
    max_witnesses: int | None = None,
) -> tuple[list[KeyResult], dict[str, list[list[Op]]]]:
    """Check each (run, key) with `verdict.check_keys` (the exact Kafka-log checker and the
    anomaly taxonomy, decided under ``consistency``); returns the key results and the
    anomalies (name -> witnessing op groups, all keys). ``max_witnesses`` caps the
    witnesses kept per anomaly and key (the counts stay exact)."""
    results: list[KeyResult] = []
    anomalies: dict[str, list[list[Op]]] = {}
    for run, key in _sorted_groups(groups):
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
                    checked.run,
                    checked.key,
                    checked.ops,
                    verdict.verdict,
                    checked.seconds,
                    verdict.explanation,
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


def _downgrade(results: list[KeyResult], rejected: Iterable[Rejection]) -> list[KeyResult]:
    per_key: dict[GroupKey, int] = {}
    for r in rejected:
        if r.key is not None:
            per_key[(r.run, r.key)] = per_key.get((r.run, r.key), 0) + 1
    out = []
    for result in results:
        n = per_key.get((result.run, result.key), 0)
        if n:
            found = result.explanation or f"the accepted ops are {result.verdict.value}"
            result = attrs.evolve(
                result,
                verdict=Verdict.UNKNOWN,
                rejected=n,
                explanation=f"{n} line(s) of this key were rejected (see rejected_lines); "
                f"fix them and check again. Check of the accepted ops: {found}",
            )
        out.append(result)
    return out


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
) -> InputResult:
    """Check one history file; never raises for a user's mistake: an input that cannot be
    checked comes back with ``error`` set and verdict UNKNOWN."""
    started = time.perf_counter()
    name = str(path)
    loaded: Loaded | None = None
    try:
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
        return InputResult(
            name,
            loaded.format if loaded else fmt,
            model,
            Verdict.UNKNOWN,
            [],
            {},
            list(loaded.rejections) if loaded else [],
            time.perf_counter() - started,
            loaded.ops if loaded else 0,
            str(exc),
        )
    except OSError as exc:  # a file that vanished or cannot be read midway
        return InputResult(
            name, fmt, model, Verdict.UNKNOWN, [], {}, [], time.perf_counter() - started, 0,
            f"{name}: cannot read: {exc.strerror or exc}",
        )  # fmt: skip
    rejected = list(loaded.rejections)
    keys = _downgrade(keys, rejected)
    if report_dir is not None:
        keys = _write_reports(Path(report_dir), loaded, keys, wgl_model)
    verdicts = [k.verdict for k in keys]
    if any(r.key is None for r in rejected):
        verdicts.append(Verdict.UNKNOWN)
    return InputResult(
        name,
        loaded.format,
        model_name,
        Verdict.combine(verdicts),
        keys,
        anomalies,
        rejected,
        time.perf_counter() - started,
        loaded.ops,
        consistency=consistency if model_name == "log" else None,
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
    from jepsen_py.checker.report_html import render_key_report

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
