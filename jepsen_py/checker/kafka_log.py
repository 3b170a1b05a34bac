"""The exact checker for Kafka partition logs: linearizability by a sort and a scan.

Checking linearizability is NP-complete in general (Gibbons and Korach), and the
Wing-Gong-Lowe search in ``wgl.py`` is exponential in the worst case. A Kafka partition is
special: every record carries its offset, and values sent to one key are unique, so a
history *tells* us where every observed value sits in the log. What is left to decide is
whether the moments at which things happened can be chosen, and that is a scan.

The abstract object (``kafka_log_model.py`` is the same object as a Porcupine model)
----------------------------------------------------------------------------------------
A partition is a sequence of values, initially empty. ``send(v)`` appends ``v`` and
returns its offset, the length of the log before it. ``poll(from)`` returns
``records = [[from, log[from]], ..., [from+k-1, log[from+k-1]]]`` for some
``k >= 0`` with ``from + k <= len(log)`` (a fetch may return less than is there: its size
is bounded), and ``hw = len(log)``: in a linearizable log everything written is committed,
so the high watermark is the log length at the poll's linearization point. A poll without
``from`` (a subscribed consumer) returns such a run starting wherever it likes. An empty
poll says nothing about records, whatever its ``from`` (Kafka answers a fetch beyond the
log end with OFFSET_OUT_OF_RANGE, which a client records as a fail).

Time is the position of an event in the history (``ops`` in history order), not its
``time`` field: Jepsen and Porcupine order events by index, so two events with equal
clocks are still ordered. An op's window is the open interval (invoke, completion); an
``info`` op, or one never completed, has window (invoke, +inf) and may or may not take
effect; a ``fail`` op never took effect; failed, ``info`` and pending polls are dropped
(a read that returned nothing changes nothing).

The reduction
-------------
Per key, collect the *observations*: each ``ok`` send says "value v is at offset o", each
record a poll returned says the same. Let ``L`` be one more than the highest observed
offset, or the highest ``hw`` returned, whichever is larger. The history is linearizable
if and only if all of the following hold:

1. every offset holds at most one value and every value sits at most at one offset
   (inconsistent offsets; duplicates);
2. every observed value was sent by a send that did not fail (a read of a never-sent
   value; an aborted read); an ``ok`` send echoing a value is echoing its own value;
3. every poll's records are contiguous, start at its ``from`` (when it has one), and lie
   below its ``hw``; no offset is negative;
4. the ``m`` offsets of ``[0, L)`` nobody observed (gaps) can be given to ``m`` distinct
   sends with unknown outcome whose values nobody observed (an ``info`` or pending send
   that landed there unseen);
5. effect points ``e_0 < e_1 < ... < e_{L-1}`` exist with ``e_k`` inside the window of the
   send at offset ``k``, and every poll that returned ``hw = H`` fits between: a point
   ``p`` in its window with ``e_{H-1} < p < e_H`` (for the offsets that exist).

Condition 5 is a scan. A poll with ``hw = H`` adds exactly two constraints: ``e_H`` is
later than the poll's invocation and ``e_{H-1}`` is earlier than its completion (for reals,
``max(a, b) < min(c, d)`` iff each of ``a, b`` is below each of ``c, d``, and
``e_{H-1} < e_H`` and invoke < completion hold already). So fold each poll into the
windows of the two sends around it: ``start_k`` is the latest invocation among the send
at ``k`` and the polls with ``hw = k``; ``end_k`` the earliest completion among the send at
``k`` and the polls with ``hw = k + 1``. Strictly increasing points in open windows
exist iff ``max(start_0..start_k) < end_k`` for every ``k``. Necessity: ``start_j < e_j
<= e_k < end_k`` for ``j <= k``. Sufficiency: positions are distinct integers, so
``M_k = max(start_0..start_k) <= end_k - 1`` and ``e_k = M_k + (k + 1) / (L + 2)`` is
strictly increasing and inside every window (the greedy "each effect as early as
allowed"). The polls then fit, because every pairwise constraint between two polls, or a
poll and a send, is implied by the folded ones (a poll with ``hw = H`` before one with
``hw = H' > H`` needs invoke(p) <= start_H < end_{H'-1} <= completion(q)); polls with the
same ``hw`` are unordered among themselves.

For condition 4, the filler of a gap only raises that gap's ``start`` (its window is
(invoke, +inf)). Giving the ``m`` fillers with the earliest invocations to the gaps in
offset order is optimal: swapping two fillers so the earlier invocation sits at the lower
offset only lowers prefix maxima, and replacing a filler by an unused earlier one too.

Soundness (OK => linearizable): build the log from the observations and the fillers, take
the points above, let every other ``info``/pending send never take effect. Replayed in
point order, each send appends at the offset it reported, each poll sees exactly the
first ``H`` records, so its ``hw`` is right and its records (checked by 1-3) are the log's.
Completeness (linearizable => OK): in any linearization the final log ``F`` only grows,
so every ``ok`` send's offset and every record read agree with ``F`` (1, 3), every value
in ``F`` came from one non-failed send (2), gap offsets of ``F`` hold unobserved sends of
unknown outcome (4), and the effect points of ``F[0..L)`` satisfy 5.

A send acknowledged without an offset that no poll observed breaks the reduction (it
must occupy some offset we cannot name): that key is UNKNOWN, and the WGL search
(``--model log`` with the search) decides it. Values sent twice to one key break the
premise; that key is UNKNOWN too. Malformed ops make the whole result UNKNOWN, naming the
line.

Cost: one pass over the ops with dict lookups per record, a sort of the unobserved
unknown-outcome sends, and a scan over ``L`` offsets: O(n log n) time, memory linear in the
number of distinct values and offsets (plain ints in dicts and lists, no per-op objects).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Any

import attrs

from jepsen_py.checker.result import Verdict
from jepsen_py.history.op import Op, freeze
from jepsen_py.history.validate import show as _clipped

INF = sys.maxsize
"""The completion position of an op that never completed (``info`` or pending)."""

LOG_FS = frozenset({"send", "poll"})


@attrs.frozen
class LogResult:
    """The verdict on a Kafka-log history, the ops that witness a violation, and figures.

    ``key`` names the partition at fault (the first illegal or unknown one); ``log_length``
    is the sum over keys of the offsets the history proves exist; ``unknown_sends_applied``
    counts sends of unknown outcome (``info`` or pending) that must have taken effect:
    observed by someone, or needed to fill an offset nobody observed.
    """

    verdict: Verdict
    explanation: str | None = None
    witness: list[Op] = attrs.field(factory=list)
    key: str | None = None
    keys: int = 0
    ops: int = 0
    log_length: int = 0
    unknown_sends_applied: int = 0

    def to_json(self) -> dict[str, Any]:
        """The figures a script needs: verdict, explanation, witness indices, counts."""
        return {
            "verdict": self.verdict.value,
            "explanation": self.explanation,
            "witness": [op.index for op in self.witness],
            "key": self.key,
            "keys": self.keys,
            "ops": self.ops,
            "log_length": self.log_length,
            "unknown_sends_applied": self.unknown_sends_applied,
        }


class _Problem(Exception):
    """A violation (ILLEGAL) or an input the reduction cannot decide (UNKNOWN)."""

    def __init__(self, verdict: Verdict, explanation: str, witness: Sequence[int] = ()):
        super().__init__(explanation)
        self.verdict = verdict
        self.explanation = explanation
        self.witness = tuple(witness)


def _illegal(explanation: str, *positions: int) -> _Problem:
    return _Problem(Verdict.ILLEGAL, explanation, positions)


def _unknown(explanation: str, *positions: int) -> _Problem:
    return _Problem(Verdict.UNKNOWN, explanation, positions)


def where(op: Op) -> str:
    """How an error message names an op: its index, and its line when read from a file."""
    line = f", line {op.line}" if op.line is not None else ""
    return f"index {op.index}{line}"


def show(op: Op | Any) -> str:
    """One op in words, for explanations; any other value as a clipped ``repr``."""
    if not isinstance(op, Op):
        return _clipped(op)
    return f"{op.type} {op.f} {_clipped(op.value)} by process {op.process} ({where(op)})"


class _KeyLog:
    """What one partition's ops say, as plain ints and values in dicts.

    Positions are indices into the ``ops`` list, i.e. real-time order.
    """

    __slots__ = (
        "acked",
        "failed",
        "ident",
        "max_hw",
        "max_hw_pos",
        "n_ops",
        "no_offset",
        "offset_of",
        "poll_hi",
        "poll_lo",
        "sent",
        "value_at",
    )

    def __init__(self, ident: tuple[Any, Any]) -> None:
        self.ident = ident  # (run, key)
        self.sent: dict[Any, int] = {}  # value -> invoke position of its send
        self.acked: dict[Any, int] = {}  # value -> position of the send's ok
        self.failed: dict[Any, int] = {}  # value -> position of the send's fail
        self.no_offset: dict[Any, int] = {}  # value -> ok position, ok carried no offset
        self.value_at: dict[int, Any] = {}  # offset -> value
        self.offset_of: dict[Any, int] = {}  # value -> offset
        self.poll_lo: dict[int, int] = {}  # hw -> latest invocation of an ok poll with it
        self.poll_hi: dict[int, int] = {}  # hw -> earliest completion of an ok poll with it
        self.max_hw = 0
        self.max_hw_pos = -1
        self.n_ops = 0


def check_log(ops: Sequence[Op]) -> LogResult:
    """Decide linearizability of a Kafka-log history exactly, per (run, key).

    ``ops`` is a history in order (send/poll client ops; nemesis and other ops are
    ignored). Returns ILLEGAL with the witnessing ops for the first partition that is not
    linearizable, UNKNOWN when the input breaks the reduction's premises (malformed ops,
    a value sent twice, an acknowledged send without offset nobody observed), else OK.
    """
    logs: dict[Any, _KeyLog] = {}  # by key, or by (run, key) when ops carry a run
    try:
        _read(ops, logs)
    except _Problem as problem:
        return _result(ops, problem, None, logs)
    unknown: tuple[_Problem, Any] | None = None
    length = applied = 0
    for log in logs.values():
        key = log.ident[1]
        try:
            n, a = _check_key(ops, log)
        except _Problem as problem:
            if problem.verdict is Verdict.ILLEGAL:
                return _result(ops, problem, key, logs)
            unknown = unknown or (problem, key)
            continue
        length += n
        applied += a
    if unknown is not None:
        return _result(ops, unknown[0], unknown[1], logs)
    return LogResult(
        Verdict.OK,
        keys=len(logs),
        ops=sum(log.n_ops for log in logs.values()),
        log_length=length,
        unknown_sends_applied=applied,
    )


def _result(ops: Sequence[Op], problem: _Problem, key: Any, logs: dict[Any, _KeyLog]) -> LogResult:
    witness = sorted({p for p in problem.witness if p >= 0})
    return LogResult(
        problem.verdict,
        problem.explanation,
        [ops[p] for p in witness],
        key=key,
        keys=len(logs),
        ops=sum(log.n_ops for log in logs.values()),
    )


def _read(ops: Sequence[Op], logs: dict[Any, _KeyLog]) -> None:
    """One pass: pair invocations with completions (by process) and record observations."""
    pending: dict[Any, int] = {}
    for pos, op in enumerate(ops):
        f = op.f
        if f != "send" and f != "poll":
            continue
        process = op.process
        if process == "nemesis":
            continue
        # (run, process), as a scalar when there is no run: no tuple per op to allocate
        who = process if op.run is None else (op.run, process)
        if op.type == "invoke":
            if who in pending:
                raise _unknown(
                    f"malformed history: process {process} invoked at {where(op)} while its "
                    f"op at {where(ops[pending[who]])} had not completed; a process "
                    "runs one op at a time (after an info it must not invoke again)",
                    pending[who],
                    pos,
                )
            pending[who] = pos
            ident = op.key if op.run is None else (op.run, op.key)
            log = logs.get(ident)
            if log is None:
                log = logs[ident] = _KeyLog((op.run, op.key))
            log.n_ops += 1
            if f == "send":
                value = op.value
                if type(value) is not int:
                    value = freeze(value)
                if log.sent.setdefault(value, pos) != pos:
                    raise _unknown(
                        f"value {show(value)} sent twice to key {op.key!r} (at "
                        f"{where(ops[log.sent[value]])} and {where(op)}): the exact log "
                        "checker needs values unique per key",
                        log.sent[value],
                        pos,
                    )
            continue
        inv = pending.pop(who, None)
        if inv is None:
            raise _unknown(
                f"malformed history: {op.type} {f} by process {process} at {where(op)} has "
                "no invocation before it",
                pos,
            )
        iop = ops[inv]
        if iop.f != f:
            raise _unknown(
                f"malformed history: {op.type} {f} at {where(op)} completes a {iop.f} "
                f"invoked at {where(iop)}",
                inv,
                pos,
            )
        log = logs[iop.key if iop.run is None else (iop.run, iop.key)]
        log.n_ops += 1
        if f == "send":
            _complete_send(ops, log, inv, pos)
        elif op.type == "ok":
            _complete_poll(ops, log, inv, pos)


def _conflict(ops: Sequence[Op], log: _KeyLog, offset: int, value: Any, pos: int) -> _Problem:
    """The ILLEGAL result for an observation (by the op at ``pos``) of ``value`` at
    ``offset`` that contradicts an earlier one."""
    if log.value_at[offset] != value:
        other = _observer(ops, log, offset=offset)
        return _illegal(
            f"inconsistent offsets: offset {offset} holds {show(log.value_at[offset])} (seen at "
            f"{where(ops[other])}) and {show(value)} (seen at {where(ops[pos])})",
            other,
            pos,
        )
    other = _observer(ops, log, value=value)
    return _illegal(
        f"duplicate: value {show(value)} sits at offset {log.offset_of[value]} (seen at "
        f"{where(ops[other])}) and at offset {offset} (seen at {where(ops[pos])})",
        other,
        pos,
    )


def _complete_send(ops: Sequence[Op], log: _KeyLog, inv: int, pos: int) -> None:
    op = ops[pos]
    value = ops[inv].value
    if type(value) is not int:
        value = freeze(value)
    if op.type == "fail":
        log.failed[value] = pos
        return
    if op.type != "ok":
        return  # info: the outcome is unknown, its window stays open
    out = op.value
    if not isinstance(out, dict):
        raise _unknown(
            f"malformed send ok at {where(op)}: value must be {{'offset': o, 'value': v}}, "
            f"got {show(out)}",
            pos,
        )
    echo = out.get("value", value)
    if echo != value and freeze(echo) != value:
        raise _illegal(
            f"the send of {show(value)} invoked at {where(ops[inv])} was acknowledged at "
            f"{where(op)} as a send of {show(out['value'])}",
            inv,
            pos,
        )
    log.acked[value] = pos
    offset = out.get("offset")
    if offset is None:
        log.no_offset[value] = pos
        return
    if type(offset) is not int:
        raise _unknown(f"malformed send ok at {where(op)}: offset {show(offset)} is not an integer")
    if offset < 0:
        raise _illegal(f"send acknowledged at {where(op)} with negative offset {offset}", pos)
    if log.value_at.setdefault(offset, value) != value or (
        log.offset_of.setdefault(value, offset) != offset
    ):
        raise _conflict(ops, log, offset, value, pos)


def _complete_poll(ops: Sequence[Op], log: _KeyLog, inv: int, pos: int) -> None:
    op = ops[pos]
    out = op.value
    records = out.get("records") if isinstance(out, dict) else None
    hw = out.get("hw") if isinstance(out, dict) else None
    if isinstance(records, list) and hw is None:
        raise _unknown(
            f"the poll ok at {where(op)} reports no high watermark ('hw'): linearizability "
            "is decided only when every poll reports the high watermark of its fetch "
            "(Kafka's guarantees do not need it)",
            pos,
        )
    if not isinstance(records, list) or type(hw) is not int:
        raise _unknown(
            f"malformed poll ok at {where(op)}: value must be "
            f"{{'records': [[offset, value], ...], 'hw': H}}, got {show(out)}",
            pos,
        )
    if hw < 0:
        raise _illegal(f"poll at {where(op)} returned a negative high watermark {hw}", pos)
    arg = ops[inv].value
    start = arg.get("from") if isinstance(arg, dict) else None
    expect = start
    value_at, offset_of = log.value_at, log.offset_of
    for record in records:
        try:
            offset, value = record
        except (TypeError, ValueError):
            raise _unknown(
                f"malformed poll ok at {where(op)}: record {show(record)} is not [offset, value]",
                pos,
            ) from None
        if type(offset) is not int:
            raise _unknown(
                f"malformed poll ok at {where(op)}: offset {show(offset)} not an integer"
            )
        if expect is not None and offset != expect:
            raise _illegal(
                f"poll invoked at {where(ops[inv])} from {show(start)} returned offset {offset} "
                f"where {expect} was due: a fetch returns a contiguous run from its position",
                inv,
                pos,
            )
        if offset < 0:
            raise _illegal(f"poll at {where(op)} returned negative offset {offset}", pos)
        if offset >= hw:
            raise _illegal(
                f"poll at {where(op)} returned offset {offset} at or above its high "
                f"watermark {hw}: a consumer only sees records below the high watermark",
                pos,
            )
        if type(value) is not int:
            value = freeze(value)
        if value_at.setdefault(offset, value) != value or (
            offset_of.setdefault(value, offset) != offset
        ):
            raise _conflict(ops, log, offset, value, pos)
        expect = offset + 1
    if log.poll_lo.get(hw, -1) < inv:
        log.poll_lo[hw] = inv
    if log.poll_hi.get(hw, INF) > pos:
        log.poll_hi[hw] = pos
    if hw > log.max_hw:
        log.max_hw = hw
        log.max_hw_pos = pos


def _check_key(ops: Sequence[Op], log: _KeyLog) -> tuple[int, int]:
    """Conditions 2, 4 and 5 for one partition; returns (log length, unknown sends applied)."""
    sent, failed, acked, value_at = log.sent, log.failed, log.acked, log.value_at
    for value, offset in log.offset_of.items():
        if value not in sent:
            seen = _observer(ops, log, value=value)
            raise _illegal(
                f"read of a never-sent value: {show(value)} at offset {offset} (seen at "
                f"{where(ops[seen])}) was never sent to this key",
                seen,
            )
        if value in failed:
            seen = _observer(ops, log, value=value)
            raise _illegal(
                f"aborted read: {show(value)} at offset {offset} (seen at {where(ops[seen])}) "
                f"comes from a send that failed at {where(ops[failed[value]])}",
                sent[value],
                failed[value],
                seen,
            )
    for value, pos in log.no_offset.items():
        if value not in log.offset_of:
            raise _unknown(
                f"the send of {show(value)} acknowledged at {where(ops[pos])} carries no offset "
                "and no poll read it: the exact checker needs offsets; use the WGL search",
                pos,
            )
    length = max(max(value_at) + 1 if value_at else 0, log.max_hw)
    gaps = length - len(value_at)
    fillers: list[int] = []
    if gaps:
        # Unobserved sends that did not fail: info or pending (an unobserved ok send has no
        # offset, and those made the key UNKNOWN above). Counted before any list of
        # ``length`` entries exists, so an absurd hw cannot exhaust memory.
        fillers = sorted(s for v, s in sent.items() if v not in log.offset_of and v not in failed)
        if len(fillers) < gaps:
            if length > log.max_hw:
                proof = _observer(ops, log, offset=length - 1)
                why = f"offset {length - 1} was observed at {where(ops[proof])}"
            else:
                proof = log.max_hw_pos
                why = f"a poll saw high watermark {length} at {where(ops[proof])}"
            raise _illegal(
                f"{why}, so offsets 0..{length - 1} exist, but {gaps} of them were never "
                f"observed and only {len(fillers)} sends of unknown outcome could fill them",
                proof,
            )
        del fillers[gaps:]
    start = [-1] * length
    end = [INF] * length
    for offset, value in value_at.items():
        start[offset] = sent[value]
        end[offset] = acked.get(value, INF)
    if fillers:
        gap = iter(fillers)
        for offset in range(length):
            if start[offset] < 0:
                start[offset] = next(gap)
    for hw, s in log.poll_lo.items():
        if 0 <= hw < length and start[hw] < s:
            start[hw] = s
    for hw, c in log.poll_hi.items():
        if hw > 0 and end[hw - 1] > c:
            end[hw - 1] = c
    for offset, (latest, deadline) in enumerate(zip(accumulate(start, max), end, strict=True)):
        if latest >= deadline:
            _explain_order(ops, log, offset, latest, deadline)
    observed_unknown = sum(1 for v in value_at.values() if v not in acked)
    return length, observed_unknown + len(fillers)


def _explain_order(
    ops: Sequence[Op], log: _KeyLog, offset: int, latest: int, deadline: int
) -> None:
    """Raise the ILLEGAL result of the scan at ``offset``: the invocation at ``latest`` comes
    after the completion at ``deadline``, yet the first bounds the record at ``offset`` from
    below and the second from above."""
    late, due = ops[latest], ops[deadline]
    late_done, due_call = _partner(ops, latest), _partner(ops, deadline)
    if due.f == "send":
        before = f"its send was acknowledged at {where(due)}"
    else:
        before = (
            f"a poll that completed at {where(due)} saw high watermark {offset + 1}, so the "
            "record was there"
        )
    if late.f == "poll":
        hw = ops[late_done].value["hw"] if late_done >= 0 else "?"
        after = (
            f"a poll invoked only at {where(late)} saw high watermark {hw}, so offset {hw} "
            f"<= {offset} was not written yet"
        )
    else:
        value = late.value if type(late.value) is int else freeze(late.value)
        at = log.offset_of.get(value)
        if at is None:
            after = (
                f"the send of {show(late.value)}, the earliest unobserved send of unknown outcome "
                f"that can fill an unobserved offset up to {offset}, was invoked only at "
                f"{where(late)}"
            )
        else:
            after = (
                f"the send of {show(late.value)} at offset {at} was invoked only at {where(late)}"
            )
    value = log.value_at.get(offset)
    what = f"offset {offset}" + (f" ({show(value)})" if value is not None else " (unobserved)")
    raise _illegal(
        f"no linearization: {what} must be written before {before}, and after {after}; "
        "offsets are written in order, and that invocation came after that completion",
        latest,
        late_done,
        due_call,
        deadline,
    )


def explain_order(
    ops: Sequence[Op],
    offset: int,
    latest: int,
    deadline: int,
    *,
    value_at: Mapping[int, Any] | None = None,
    offset_of: Mapping[Any, int] | None = None,
) -> tuple[Verdict, str, tuple[int, ...]]:
    """`check_log`'s verdict, words and witness (positions into ``ops``) for the order
    violation the scan finds at ``offset``: the invocation at ``latest`` comes after the
    completion at ``deadline``. For a caller that found it another way (the Spark SQL
    checker) and holds only the ops it names: ``value_at`` and ``offset_of`` are the two
    facts of the key's log the words mention (the value at ``offset``; the offset of the
    late send's value), frozen as `freeze` makes them."""
    log = _KeyLog((ops[0].run, ops[0].key))
    log.value_at.update(value_at or {})
    log.offset_of.update(offset_of or {})
    try:
        _explain_order(ops, log, offset, latest, deadline)
    except _Problem as problem:
        return problem.verdict, problem.explanation, problem.witness
    raise AssertionError("_explain_order always raises")


def paired(ops: Sequence[Op]) -> list[tuple[int, int]]:
    """Positions ``(invoke, completion)`` of every client send and poll, in completion
    order, then the pending ones (completion ``-1``) in invocation order.

    Completions are matched to the previous invocation of the same process (a process runs
    one op at a time); a completion with no open invocation, or of another ``f``, is
    skipped (``check_log`` reports those as malformed; the anomaly finders look past them).
    """
    pending: dict[tuple[Any, Any], int] = {}
    out: list[tuple[int, int]] = []
    for pos, op in enumerate(ops):
        if op.f not in LOG_FS or op.process == "nemesis":
            continue
        if op.type == "invoke":
            pending[(op.run, op.process)] = pos
            continue
        inv = pending.pop((op.run, op.process), None)
        if inv is not None and ops[inv].f == op.f:
            out.append((inv, pos))
    out.extend((inv, -1) for inv in sorted(pending.values()))
    return out


def _partner(ops: Sequence[Op], pos: int) -> int:
    """The completion of the invocation at ``pos``, or the invocation of the completion at
    ``pos`` (-1 if none). Only used to build witnesses, so a linear search is fine."""
    op = ops[pos]
    step = 1 if op.type == "invoke" else -1
    i = pos + step
    while 0 <= i < len(ops):
        other = ops[i]
        if other.process == op.process and other.run == op.run and other.f in LOG_FS:
            return i
        i += step
    return -1


def _observer(ops: Sequence[Op], log: _KeyLog, *, offset: int = -1, value: Any = None) -> int:
    """The position of the first op that observed ``offset`` (holding whatever the log
    records there) or ``value``; a linear search, only on the way to a verdict."""
    if offset >= 0:
        want_offset, want_value = offset, log.value_at.get(offset)
    else:
        want_offset, want_value = log.offset_of.get(value, -1), value
    pending: dict[tuple[Any, Any], int] = {}
    for pos, op in enumerate(ops):
        if op.f not in LOG_FS or op.process == "nemesis":
            continue
        if op.type == "invoke":
            pending[(op.run, op.process)] = pos
            continue
        inv = pending.pop((op.run, op.process), None)
        if op.type != "ok" or inv is None or ops[inv].f != op.f:
            continue
        if (ops[inv].run, ops[inv].key) != log.ident:
            continue
        if op.f == "send":
            out = op.value if isinstance(op.value, dict) else {}
            v = freeze(ops[inv].value)
            if out.get("offset") == want_offset and v == want_value:
                return pos
        elif isinstance(op.value, dict):
            for record in op.value.get("records") or ():
                if (
                    isinstance(record, list | tuple)
                    and len(record) == 2
                    and record[0] == want_offset
                    and freeze(record[1]) == want_value
                ):
                    return pos
    return -1
