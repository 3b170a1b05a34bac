"""Kafka's guarantees decided by brute force, for small histories: the ground truth that the
anomaly taxonomy (`anomalies`) is tested against, written apart from it and as directly
as the guarantees read (docs/checking.md, "Kafka's guarantees").

A history (per run and key: a partition) keeps Kafka's guarantees when some log ``F``
explains it. ``F`` maps offsets to values, one value per offset and one offset per value
(a partition is a totally ordered log; with ``enable.idempotence`` a record is written
once); offsets may have gaps (transaction markers, compaction). ``F`` explains the
history when:

- **O1** every ``ok`` send acknowledged at offset ``o`` has ``F[o]`` = its value;
- **O2** every record ``[o, v]`` an ``ok`` poll returned has ``F[o] = v``;
- **O3** every ``ok`` send's value is in ``F`` (an acknowledged write is durable);
- **O4** every value in ``F`` was sent to the key by a send that did not fail;
- **O5** consumers read in order: replaying each consumer (run, process) with its
  position per key -- a poll starts at its ``from``, else at the position if there is
  one; an ``ok`` poll that returned records leaves the position one past the last, one
  that returned none at its start; a failed or indeterminate poll changes nothing; an
  ``ok``/``info`` ``assign``/``subscribe`` keeps the positions of the keys it lists
  and forgets the others -- every ``ok`` poll with a start returns first the lowest
  offset of ``F`` at or after its start (when it returns anything), and each record
  after the first is the next offset of ``F`` after the one before;
- **O6** a producer's successive ``ok`` sends to a key get increasing offsets in ``F``
  (an ``assign``/``subscribe`` of the process that leaves the key out restarts the
  sequence, as in Jepsen's checker);
- **O7** when the key's final read is complete (polls invoked with ``"final": true``
  whose ``[from, last + 1)`` spans cover ``[0, N)``, and a final poll from ``N`` returned
  nothing with a high watermark at most ``N``), every value of ``F`` is one the final
  polls returned.

Retention: polls (``ok`` or ``fail``) may report the partition's log start offset
(``log_start``, KIP-107); let ``S`` be the highest reported for the key. Records below
``S`` were deleted on purpose: O7 then asks only for the values of ``F`` at or above
``S``, and the final read's spans need only cover ``[S', N)`` for the highest ``S'`` a
final poll reported; in O5 a poll whose start is below the log start it reports starts
at that log start (``auto.offset.reset``).

No real-time order and no high watermark constrains ``F``: Kafka promises neither a
read lease (reads may be stale) nor that a consumer sees a write as soon as it is
acknowledged. Linearizability, which does, is `kafka_log.check_log`'s.

The search: O1 and O2 fix ``F`` on every offset some op names; those must not conflict
and, by O4, must hold sent values of sends that did not fail. What is left free is where
the acknowledged sends nobody placed (an ack without offset, never read) sit; every
placement among the free offsets up to past everything the history mentions is tried.
Nothing else needs choosing: a record of an indeterminate send that nobody read may as
well be absent from ``F``, since every condition is easier to meet with fewer records
(O5 and O7 only forbid records, O3 and O6 only concern acknowledged sends). Exponential
in the acknowledged sends without an offset: for small histories only.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

import attrs

from jepsen_py.history.op import Op, freeze, is_final

_REASSIGN = ("assign", "subscribe")


@attrs.frozen
class OracleResult:
    """Whether every partition is explained; when not, the first that is not, and why."""

    ok: bool
    key: Any = None
    reason: str | None = None


def _v(value: Any) -> Any:
    return value if type(value) is int else freeze(value)


@attrs.define
class _Event:
    """One completed op, as the replay sees it (completion order)."""

    kind: str  # "send", "poll", "reassign"
    type: str
    run: Any
    process: Any
    key: Any
    arg: Any
    out: Any


def _events(ops: Sequence[Op]) -> tuple[list[_Event], list[Op]]:
    """Completed ops in completion order, and every invocation."""
    pending: dict[tuple[Any, Any], Op] = {}
    done: list[_Event] = []
    invokes: list[Op] = []
    for op in ops:
        if op.process == "nemesis" or op.f not in ("send", "poll", *_REASSIGN):
            continue
        who = (op.run, op.process)
        if op.type == "invoke":
            pending[who] = op
            invokes.append(op)
            continue
        inv = pending.pop(who, None)
        if inv is None or inv.f != op.f:
            continue
        kind = "reassign" if op.f in _REASSIGN else op.f
        done.append(_Event(kind, op.type, op.run, op.process, inv.key, inv.value, op.value))
    return done, invokes


def _records(out: Any) -> list[tuple[int, Any]]:
    records = out.get("records") if isinstance(out, dict) else None
    return [(r[0], _v(r[1])) for r in records or ()]


def _start(arg: Any) -> int | None:
    start = arg.get("from") if isinstance(arg, dict) else None
    return start if type(start) is int else None


def _kept(arg: Any) -> frozenset[str]:
    if isinstance(arg, list | tuple):
        return frozenset(str(k) for k in arg)
    return frozenset()


def _log_start(out: Any) -> int:
    start = out.get("log_start") if isinstance(out, dict) else None
    return start if type(start) is int and start >= 0 else 0


def _final(events: list[_Event], ident: tuple[Any, Any]) -> tuple[bool, set[Any]]:
    """(complete, values returned) of the final read of ``ident`` (O7)."""
    cover: list[tuple[int, int]] = []
    ends: list[int] = []
    values: set[Any] = set()
    reach = 0
    for e in events:
        if e.kind != "poll" or (e.run, e.key) != ident or e.type not in ("ok", "fail"):
            continue
        if not is_final(e.arg):
            continue
        reach = max(reach, _log_start(e.out))
        if e.type != "ok":
            continue
        start = _start(e.arg)
        records = _records(e.out)
        values.update(v for _, v in records)
        hw = e.out.get("hw") if isinstance(e.out, dict) else None
        if start is None:
            continue
        if records:
            cover.append((start, records[-1][0] + 1))
        elif type(hw) is int and start >= hw:
            ends.append(start)
    for a, b in sorted(cover):
        if a > reach:
            break
        reach = max(reach, b)
    return any(n <= reach for n in ends), values


def kafka_consistent(ops: Sequence[Op]) -> OracleResult:
    """Decide Kafka's guarantees for ``ops`` (see the module docstring)."""
    events, invokes = _events(ops)
    idents = sorted(
        {(op.run, op.key) for op in invokes if op.f in ("send", "poll")},
        key=lambda g: (str(g[0]), str(g[1])),
    )
    for ident in idents:
        why = _partition(events, invokes, ident)
        if why is not None:
            return OracleResult(False, ident[1], why)
    return OracleResult(True)


def _partition(events: list[_Event], invokes: list[Op], ident: tuple[Any, Any]) -> str | None:
    sent = {_v(op.value) for op in invokes if op.f == "send" and (op.run, op.key) == ident}
    mine = [e for e in events if e.kind != "reassign" and (e.run, e.key) == ident]
    failed = {_v(e.arg) for e in mine if e.kind == "send" and e.type == "fail"}
    acked = [_v(e.arg) for e in mine if e.kind == "send" and e.type == "ok"]
    fixed: dict[int, Any] = {}
    offset_of: dict[Any, int] = {}

    def place(offset: int, value: Any) -> str | None:
        if fixed.setdefault(offset, value) != value:
            return f"offset {offset} holds {fixed[offset]!r} and {value!r}"
        if offset_of.setdefault(value, offset) != offset:
            return f"{value!r} sits at offsets {offset_of[value]} and {offset}"
        return None

    mentioned = [0]
    for e in mine:
        if e.kind == "send" and e.type == "ok" and isinstance(e.out, dict):
            offset = e.out.get("offset")
            if type(offset) is int:
                why = place(offset, _v(e.arg))
                if why:
                    return "O1/O2: " + why
        if e.kind == "poll" and e.type == "ok":
            for offset, value in _records(e.out):
                why = place(offset, value)
                if why:
                    return "O1/O2: " + why
            hw = e.out.get("hw") if isinstance(e.out, dict) else None
            mentioned += [hw if type(hw) is int else 0, _start(e.arg) or 0]
    for value in offset_of:
        if value not in sent or value in failed:
            return f"O4: {value!r} is in the log but was not sent, or its send failed"
    loose = sorted({v for v in acked if v not in offset_of}, key=repr)
    complete, final_values = _final(events, ident)
    deleted_below = max(
        (_log_start(e.out) for e in mine if e.kind == "poll" and e.type in ("ok", "fail")),
        default=0,
    )
    if complete and any(v not in final_values for v, o in offset_of.items() if o >= deleted_below):
        return "O7/O3: a record the log must hold is not in the complete final read"
    top = max([*fixed, *mentioned]) + 1
    free = [o for o in range(top + len(loose)) if o not in fixed]
    why = "no placement of the acknowledged sends without an offset"
    for chosen in itertools.permutations(free, len(loose)):
        log = dict(fixed)
        log.update(zip(chosen, loose, strict=True))
        if complete and any(
            v not in final_values for o, v in zip(chosen, loose, strict=True) if o >= deleted_below
        ):
            why = "O7/O3: an acknowledged record is not in the complete final read"
            continue
        failed_because = _explains(events, ident, log)
        if failed_because is None:
            return None
        why = failed_because
    return why


def _explains(events: list[_Event], ident: tuple[Any, Any], log: dict[int, Any]) -> str | None:
    """None when ``log`` meets O5 and O6 for ``ident``, else which fails."""
    offsets = sorted(log)
    where = {v: o for o, v in log.items()}

    def next_at_or_after(x: int) -> int | None:
        i = bisect_left(offsets, x)
        return offsets[i] if i < len(offsets) else None

    positions: dict[tuple[Any, Any], int] = {}
    chains: dict[tuple[Any, Any], Any] = {}
    run, key = ident
    for e in events:
        who = (e.run, e.process)
        if e.kind == "reassign":
            kept = _kept(e.arg)
            if e.type in ("ok", "info") and e.run == run and str(key) not in kept:
                positions.pop(who, None)
                chains.pop(who, None)
            continue
        if (e.run, e.key) != ident or e.type != "ok":
            continue
        if e.kind == "send":
            value = _v(e.arg)
            previous = chains.get(who)
            if previous is not None and where[value] <= where[previous]:
                return f"O6: {previous!r} then {value!r} by process {e.process}"
            chains[who] = value
            continue
        start = _start(e.arg)
        if start is None:
            start = positions.get(who)
        log_start = _log_start(e.out)
        if start is not None and start < log_start:
            start = log_start  # below it, retention deleted everything
        records = _records(e.out)
        if records:
            if start is not None and records[0][0] != next_at_or_after(start):
                return f"O5: a poll by {e.process} from {start} began at {records[0][0]}"
            for (a, _), (b, _) in itertools.pairwise(records):
                if b != next_at_or_after(a + 1):
                    return f"O5: a poll by {e.process} read {b} after {a}"
            positions[who] = records[-1][0] + 1
        elif start is not None:
            positions[who] = start
    return None
