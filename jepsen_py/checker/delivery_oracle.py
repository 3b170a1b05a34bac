"""A consumer group's delivery anomalies decided by brute force, for small histories: the
ground truth `delivery` is tested against, written apart from it, as directly as
docs/checking.md ("Delivery semantics") states each definition: a loop over the whole
history for every quantifier, no index, no event stream, no shared helper.

For a key ``K`` and a history ``H`` (a list of ops; "before" is a smaller index):

- an **acknowledged send** of ``K`` at ``o``: an ``ok`` send of ``K`` whose value carries
  ``"offset": o``;
- a **processing** of ``(K, o)``: an ``ok`` ``process`` op of ``K`` listing a record at
  ``o``;
- an **acknowledged commit** covering ``o``: an ``ok`` ``commit`` whose value maps ``K`` to
  more than ``o``; a fetch that **passed** ``o``: an ``ok`` ``fetch-offsets`` whose value
  maps ``K`` to more than ``o``;
- **lost**: an acknowledged send of ``(K, o)`` with no processing, and an acknowledged
  commit covering ``o`` or a fetch that passed it anywhere in ``H``;
- a **seek** of ``K`` to ``t``: an invoked ``seek`` whose ``key`` is ``K`` or whose value
  names ``K``; ``t`` is the value's offset for ``K`` (unknown when it has none);
- for two successive processings ``i < j`` of ``(K, o)`` (each later one counts once):
  **crash** when a ``kill-consumer`` of ``i``'s process lies strictly between them and no
  acknowledged commit covering ``o`` lies before that kill; else **seek** when a seek of
  ``K`` by ``j``'s process to a known ``t <= o`` lies strictly between them; else
  **rebalance** when an
  ``ok``/``info`` ``assign`` lies strictly between them that leaves ``K`` out of ``i``'s
  process's keys or puts it in another process's, and no acknowledged commit covering ``o``
  lies before ``s`` -- the invocation of the last fetch-offsets of ``K`` by ``j``'s process
  before ``j``, else ``j`` itself; else **unexplained**;
- **commit-regression**: an ``ok`` fetch-offsets by ``P`` returning ``c`` (or null) for
  ``K``, where an acknowledged commit of ``K`` with a value above ``c`` (any, for null)
  lies before the invocation that the fetch completes (``P``'s last invocation before
  it); undecidable, and not counted but counted as ``"seek"``, when a seek of ``K`` to
  ``t`` lies before the fetch's ``ok`` with ``t`` unknown, ``c`` null or ``t <= c``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from jepsen_py.history.op import Op


def _commit_of(op: Op, key: str) -> int | None:
    if op.f == "commit" and op.type == "ok" and isinstance(op.value, dict):
        value = op.value.get(key)
        return value if type(value) is int else None
    return None


def _covers(ops: Sequence[Op], key: str, offset: int, before: int) -> bool:
    return any((c := _commit_of(ops[i], key)) is not None and c > offset for i in range(before))


def _processed(op: Op, key: str) -> list[int]:
    if op.f == "process" and op.type == "ok" and op.key == key and op.process != "nemesis":
        return [r[0] for r in op.value]
    return []


def oracle(ops: Sequence[Op]) -> dict[str, dict[str, int]]:
    """Per key, the count of every delivery anomaly, and ``"seek"``: how many of the key's
    commit regressions are undecidable (a seek could explain them). Runs share no key
    here (one run per history)."""
    keys: set[str] = set()
    for op in ops:
        if op.f in ("send", "process", "seek") and op.key is not None:
            keys.add(op.key)
        if op.f in ("commit", "fetch-offsets") and isinstance(op.value, dict):
            keys.update(k for k in op.value if k != "error")
        if op.f == "fetch-offsets" and isinstance(op.value, list):
            keys.update(op.value)
    return {key: _one_key(ops, key) for key in sorted(keys)}


def _one_key(ops: Sequence[Op], key: str) -> dict[str, int]:
    out = dict.fromkeys(
        (
            "lost",
            "duplicated-rebalance",
            "duplicated-crash",
            "duplicated-seek",
            "duplicated-unexplained",
            "commit-regression",
            "seek",
        ),
        0,
    )
    n = len(ops)
    for op in ops:
        if op.f != "send" or op.type != "ok" or op.key != key or not isinstance(op.value, dict):
            continue
        o = op.value.get("offset")
        if type(o) is not int:
            continue
        if any(o in _processed(p, key) for p in ops):
            continue
        committed = _covers(ops, key, o, n)
        fetched = any(
            p.f == "fetch-offsets"
            and p.type == "ok"
            and isinstance(p.value, dict)
            and type(p.value.get(key)) is int
            and p.value[key] > o
            for p in ops
        )
        if committed or fetched:
            out["lost"] += 1
    offsets = sorted({o for p in ops for o in _processed(p, key)})
    for o in offsets:
        runs = [i for i in range(n) for x in _processed(ops[i], key) if x == o]
        for i, j in pairwise(runs):
            out[_why(ops, key, o, i, j)] += 1
    for j, op in enumerate(ops):
        if not (op.f == "fetch-offsets" and op.type == "ok" and isinstance(op.value, dict)):
            continue
        if key not in op.value:
            continue
        invoked = max(
            (i for i in range(j) if ops[i].process == op.process and ops[i].type == "invoke"),
            default=None,
        )
        if invoked is None or ops[invoked].f != "fetch-offsets":
            continue
        if not (isinstance(ops[invoked].value, list) and key in ops[invoked].value):
            continue
        c = op.value[key]
        if any(
            (v := _commit_of(ops[i], key)) is not None and (c is None or v > c)
            for i in range(invoked)
        ):
            excused = any(
                _is_seek(ops[i], key)
                and ((t := _target(ops[i], key)) is None or c is None or t <= c)
                for i in range(j)
            )
            out["seek" if excused else "commit-regression"] += 1
    return out


def _names(value: Any, key: str) -> bool:
    return isinstance(value, dict) and key in value


def _is_seek(op: Op, key: str) -> bool:
    return op.f == "seek" and op.type == "invoke" and (op.key == key or _names(op.value, key))


def _target(op: Op, key: str) -> int | None:
    t = op.value.get(key) if isinstance(op.value, dict) else None
    return t if type(t) is int and t >= 0 else None


def _why(ops: Sequence[Op], key: str, o: int, i: int, j: int) -> str:
    first, second = ops[i].process, ops[j].process
    for k in range(i + 1, j):
        op = ops[k]
        if (
            op.process == "nemesis"
            and op.f == "kill-consumer"
            and isinstance(op.value, dict)
            and op.value.get("process") == first
        ):
            if not _covers(ops, key, o, k):
                return "duplicated-crash"
            break
    for k in range(i + 1, j):
        if _is_seek(ops[k], key) and ops[k].process == second:
            t = _target(ops[k], key)
            if t is not None and t <= o:
                return "duplicated-seek"
    moved = False
    for k in range(i + 1, j):
        op = ops[k]
        if op.f in ("assign", "subscribe") and op.type in ("ok", "info"):
            owned = key in (op.value or [])
            if (op.process == first and not owned) or (op.process != first and owned):
                moved = True
                break
    if not moved:
        return "duplicated-unexplained"
    start = j
    for k in range(j - 1, -1, -1):
        op = ops[k]
        if (
            op.process == second
            and op.f == "fetch-offsets"
            and op.type == "invoke"
            and isinstance(op.value, list)
            and key in op.value
        ):
            start = k
            break
    return "duplicated-unexplained" if _covers(ops, key, o, start) else "duplicated-rebalance"
