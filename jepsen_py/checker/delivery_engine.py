"""``kmodel verify --delivery`` on the local engine: read a consumer group's history, refuse
its malformed lines, check its delivery (`delivery.check_delivery`) and give the results
the shape every engine gives (`records.InputResult`, one `records.KeyResult` per key).

Lines are read and validated as for every check (`jepsen_py.history`: one operation at a
time per process; a ``process`` line stands alone), and the nemesis's lines are kept: a
``kill-consumer`` explains duplicates. A group op whose value has not the shape of
docs/history-format.md (a commit that is not a map of key -> offset, a process op without
its records...) is rejected with its line and the reason (`delivery.split_op` says what is
wrong), as the readers reject other lines: its key (a keyless one: the whole input) is then
UNKNOWN at best.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from jepsen_py.checker.delivery import DeliveryKey, check_delivery, split_op
from jepsen_py.checker.records import InputResult, KeyResult, downgrade
from jepsen_py.checker.taxonomy import GROUP_FS
from jepsen_py.history import FORMATS, HistoryError, Rejection, Rejections, history_format
from jepsen_py.history.op import Op
from jepsen_py.history.validate import validate

DELIVERY_MODEL = "delivery"
"""The ``model`` of a delivery check's results."""

KEYED_FS = frozenset({"send", "process"})
"""Group ops whose rejection concerns their ``key`` only (the others: their run)."""


def load_delivery(
    path: str | os.PathLike[str], fmt: str | None = None
) -> tuple[list[Op], Rejections, str]:
    """The accepted ops of ``path`` (nemesis ops included), its rejected lines, its
    format. Raises `HistoryError` when the file cannot be read at all."""
    name = str(path)
    fmt = history_format(path, fmt)
    if not Path(path).is_file():
        raise HistoryError(f"{name}: no such file")
    rejections = Rejections(name)
    accepted: list[Op] = []
    for op in validate(FORMATS[fmt].read(path, rejections), rejections):
        problem = split_op(len(accepted), op).problem
        if problem is not None:
            key = op.key if op.f in KEYED_FS else None
            rejections.reject(op.line, problem, key=key, run=op.run)
            continue
        accepted.append(op)
    return accepted, rejections, fmt


def verify_delivery_path(
    path: str | os.PathLike[str], delivery: str, fmt: str | None = None
) -> InputResult:
    """Check one history's delivery under ``delivery``; never raises for a user's
    mistake: an input that cannot be checked comes back with ``error`` set, UNKNOWN."""
    started = time.perf_counter()
    name = str(path)
    try:
        ops, rejections, fmt = load_delivery(path, fmt)
    except HistoryError as exc:
        return InputResult.unchecked(name, str(exc), format=fmt, model=DELIVERY_MODEL)
    except OSError as exc:
        return InputResult.unchecked(
            name, f"{name}: cannot read: {exc.strerror or exc}", format=fmt, model=DELIVERY_MODEL
        )
    checked = check_delivery(ops, delivery)
    group_ops = sum(op.f in GROUP_FS for op in ops)
    return delivery_result(
        name,
        fmt,
        delivery,
        checked,
        ops.__getitem__,
        list(rejections),
        (len(ops), group_ops),
        started,
    )


def delivery_result(
    name: str,
    fmt: str | None,
    delivery: str,
    checked: list[DeliveryKey],
    op_at: Callable[[int], Op],
    rejected: list[Rejection],
    counted: tuple[int, int],
    started: float,
) -> InputResult:
    """The `InputResult` of one input's delivery check, on every engine: ``checked`` its
    keys (`delivery.check_delivery`, or the Spark job's), ``op_at`` the op at a position,
    ``rejected`` its rejected lines (a key with some is UNKNOWN; a keyless one makes the
    input UNKNOWN), ``counted`` the ops accepted and how many of them are a group's
    (`taxonomy.GROUP_FS`), ``started`` when its check began. An input without a group op
    is not a consumer group's history: nothing was checked, it is UNKNOWN."""
    ops, group_ops = counted
    if not checked or not group_ops:
        return InputResult.unchecked(
            name,
            f"{name}: nothing to check for --delivery: no process, commit or fetch-offsets op, "
            "so not a consumer group's history (docs/history-format.md, consumer groups)",
            format=fmt,
            model=DELIVERY_MODEL,
            rejected=rejected,
            seconds=time.perf_counter() - started,
            ops=ops,
        )
    share = (time.perf_counter() - started) / len(checked)
    keys = []
    for key in checked:
        verdict = key.verdict
        keys.append(
            KeyResult(
                run=key.run,
                key=key.key,
                ops=key.ops,
                verdict=verdict.verdict,
                seconds=share,
                explanation=verdict.explanation,
                witness=[op_at(p) for p in verdict.witness],
                consistency=delivery,
                violations=verdict.violations,
                counts={n: c for n, c in verdict.counts.items() if c},
                anomalies={
                    n: [[op_at(p) for p in w] for w in ws]
                    for n, ws in key.anomalies.witnesses.items()
                },
            )
        )
    keys = downgrade(keys, rejected)
    anomalies: dict[str, list[list[Op]]] = {}
    for result in keys:
        for n, groups in result.anomalies.items():
            anomalies.setdefault(n, []).extend(groups)
    return InputResult.checked(
        name,
        format=fmt,
        model=DELIVERY_MODEL,
        keys=keys,
        anomalies=anomalies,
        rejected=rejected,
        seconds=time.perf_counter() - started,
        ops=ops,
        consistency=delivery,
    )
