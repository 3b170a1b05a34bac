"""Kafka's guarantees for a partition, as named anomalies: Jepsen's Kafka taxonomy
(``jepsen.tests.kafka`` in jepsen-io/jepsen), each anomaly with a precise definition, the
ops that witness it, and a class: a *violation* (the history breaks a stated guarantee) or
*informational* (worth knowing, allowed by Kafka's guarantees). ``docs/checking.md`` states
the guarantees and every definition; they are written here once, as one pass over a
history (`Observer`), shared by ``kmodel test``, the local engine and the Spark engine.

What the pass reads, per (run, key) -- a partition -- and per consumer (run, process):

- **offsets known to exist**: an offset an ``ok`` send was acknowledged at, or a record an
  ``ok`` poll returned. Only these count as "skipped": Kafka offsets may have gaps
  (transaction markers, compaction), so an offset nobody saw proves nothing;
- **a consumer's position** on a key (Kafka's consumer position): after an ``ok`` poll that
  returned records, one past the last of them; after an ``ok`` poll that returned none,
  the poll's start. A poll *starts* at its ``from`` when it has one (a seek, either way:
  deliberate, never an anomaly), else at the position, when there is one. A consumer has
  no position on a key before its first poll of it (it may start anywhere: a committed
  offset, ``auto.offset.reset``), after a new process takes over (Jepsen's convention
  after an ``info``), or after an ``assign``/``subscribe`` whose keys leave the key out;
  one that keeps the key keeps its position (as Jepsen's checker does). A poll that
  failed or is indeterminate changes nothing;
- **a poll covers** the offsets from its start (or, with no position, its first record)
  to its highest record: a consumer that reads contiguously returns every record there;
- **the final read** of a key: polls invoked with ``{"final": true}`` (the fault
  injector's last phase, after every fault is healed). It is *complete* when the final
  polls, each covering the offsets from its ``from`` to one past its last record, cover
  every offset from 0 (or from the highest log start a final poll reported) up to some
  ``N``, and a final poll from ``N`` returned nothing with a high watermark at most ``N``:
  the final read then returned the whole log;
- **the log start** of a key: with retention on, polls (``ok`` or ``fail``) report the
  leader's log start offset as ``log_start`` (Kafka's FetchResponse ``log_start_offset``,
  KIP-107): every offset below the highest one reported was deleted on purpose. A poll
  whose start lies below the ``log_start`` it reports starts, for ``poll-skip`` and for
  what it covers, at that log start (the consumer's ``auto.offset.reset``).

Anomalies (`taxonomy.CLASSES` gives each its class):

- ``inconsistent-offsets`` (violation): one offset holds two values (two
  acknowledgements, or reads, disagree: log divergence after an unclean election);
- ``duplicate`` (violation): one value sits at two offsets (a producer retry appended it
  twice: ``enable.idempotence=false``);
- ``aborted-read`` (violation): a poll returned a value whose send failed (Jepsen's G1a);
- ``lost-write`` (violation): a send that must have taken effect -- acknowledged, or
  returned by a poll -- whose record a read should have returned and did not: either the
  key's final read is complete and did not return it, or (acknowledged at a known offset,
  never read by anyone) a poll covered that offset;
- ``unseen`` (informational): an acknowledged send that no poll returned and that is not a
  lost write: nobody read where it is (a consumer that fell behind, or never looked);
- ``deleted-by-retention`` (informational): a record (acknowledged, or read) at an offset
  below the key's log start (or acknowledged without an offset, once the log start is
  above 0) that the final read, or every poll, did not return: retention deleted it
  (``retention.ms``/``retention.bytes``). Below the log start, a lost write and a deleted
  one look the same, so no loss is claimed there;
- ``poll-skip`` (violation): a poll with a start (a ``from``, or the consumer's position)
  whose first record lies past an offset known to exist at or after that start;
- ``nonmonotonic-poll`` (violation): a poll with a start whose first record lies below it;
- ``int-poll-skip`` (violation): two successive records of one poll with an offset known to
  exist strictly between them;
- ``int-nonmonotonic-poll`` (violation): two successive records of one poll whose offsets
  do not increase;
- ``nonmonotonic-send`` (violation): a producer's successive acknowledged sends to a key
  whose offsets (from the acknowledgement, else from a read of the value) do not
  increase. As in Jepsen's checker, an ``assign``/``subscribe`` of that process that
  leaves the key out ends the comparison;
- ``stale-read`` (informational): a poll that reported a high watermark ``H`` although an
  op that completed before the poll was invoked had shown an offset at or above ``H``
  (acknowledged there, read there, or a high watermark above ``H``): a read served by a
  deposed leader or a lagging replica. Kafka gives no read lease, so consumers may read
  stale data; only linearizability forbids it.

Jepsen's ``int-send-skip`` and ``int-nonmonotonic-send`` need one op that sends several
records; a send here is one record, so successive sends of a producer are
``nonmonotonic-send``'s.

The pass also reports what keeps a key from being judged (`Problem`): a value sent twice to
a key (every definition above identifies a send by its value) and ops whose value has not
the shape of the history format (docs/history-format.md); an op with a malformed part
counts as if that part were unknown (a poll with malformed records leaves the consumer's
position unknown), so no anomaly rests on it.

Positions of ops are whatever the caller feeds (`Observer.feed`), increasing in history
order: list indices for the local engine, ``file << 40 | line`` on Spark. Witnesses are
tuples of positions, sorted; at most ``max_witnesses`` are kept per anomaly and key (the
counts are exact). Memory holds integers and values per offset and value, never ops, so a
key too big for a list of ops still streams through (the Spark engine's big keys).
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from jepsen_py.checker.taxonomy import ANOMALIES, LOG_FS, REASSIGN_FS, VIOLATIONS

# The taxonomy's names lived here before `taxonomy` held them; these stay importable from
# here for the modules that still take them from this one.
from jepsen_py.checker.taxonomy import AT_LEAST_ONCE as AT_LEAST_ONCE
from jepsen_py.checker.taxonomy import CLASSES as CLASSES
from jepsen_py.checker.taxonomy import DESCRIPTIONS as DESCRIPTIONS
from jepsen_py.history.op import freeze, is_final

Witness = tuple[int, ...]


@attrs.frozen
class Problem:
    """Something that keeps a key from being judged: what, and the positions of the ops.
    ``premise``: the definitions themselves do not apply (a value sent twice), so nothing
    found on the key can be trusted."""

    reason: str
    positions: tuple[int, ...]
    premise: bool = False


@attrs.frozen
class FinalRead:
    """The final read of a key: whether the history has one, whether it is complete (see
    the module docstring), where it ended, and the poll that ended it."""

    present: bool = False
    complete: bool = False
    end: int | None = None
    position: int | None = None

    @property
    def unfinished(self) -> bool:
        """The history has a final read of the key, and it never reached the end."""
        return self.present and not self.complete


@attrs.frozen
class KeyAnomalies:
    """What the pass found on one (run, key)."""

    run: Any
    key: Any
    counts: dict[str, int]
    """Every anomaly of `ANOMALIES` (of `DELIVERY_ANOMALIES` for a delivery check), with
    its exact count, in that order."""
    witnesses: dict[str, tuple[Witness, ...]]
    """Per anomaly found, its witnesses (at most ``max_witnesses``), sorted."""
    problems: tuple[Problem, ...] = ()
    final: FinalRead = attrs.field(factory=FinalRead)
    log_start: int = 0
    """The highest log start a poll of the key reported (0: none; retention off)."""

    def deleted(self, offset: int | None) -> bool:
        """Whether a record at ``offset`` (None: unknown) may have been deleted by
        retention: it lies below the log start (the ``deleted-by-retention`` rule)."""
        return self.deleted_below(self.log_start, offset)

    @staticmethod
    def deleted_below(log_start: int, offset: int | None) -> bool:
        return log_start > 0 and (offset is None or offset < log_start)

    def found(self) -> list[str]:
        """The anomalies found, in `ANOMALIES` order."""
        return [name for name, n in self.counts.items() if n]


class _Key:
    """One partition's observations: plain ints and frozen values in dicts."""

    __slots__ = (
        "acked",
        "at",
        "at_pos",
        "backs",
        "failed",
        "final_cover",
        "final_ends",
        "final_present",
        "final_start",
        "final_values",
        "ident",
        "known",
        "log_start",
        "more_at",
        "more_where",
        "nonmonotonic_sends",
        "problems",
        "proven",
        "read",
        "sent",
        "skips",
        "spans",
        "stale",
        "where",
        "where_pos",
    )

    def __init__(self, ident: tuple[Any, Any]) -> None:
        self.ident = ident
        self.sent: dict[Any, int] = {}  # value -> its send's invocation
        self.acked: dict[Any, tuple[int, int | None]] = {}  # value -> (ok, ack offset)
        self.failed: dict[Any, int] = {}  # value -> its send's fail
        self.at: dict[int, Any] = {}  # offset -> first value seen there
        self.at_pos: dict[int, int] = {}
        self.where: dict[Any, int] = {}  # value -> first offset seen for it
        self.where_pos: dict[Any, int] = {}
        self.more_at: dict[int, dict[Any, int]] = {}  # conflicts: value -> first observer
        self.more_where: dict[Any, dict[int, int]] = {}  # conflicts: offset -> observer
        self.read: dict[Any, int] = {}  # value -> first poll ok that returned it
        self.spans: list[tuple[int, int, int]] = []  # (start, highest offset, poll ok)
        self.skips: list[tuple[str, int, int, Witness]] = []  # (name, from, to, ops)
        self.backs: list[tuple[str, Witness]] = []  # nonmonotonic polls
        self.nonmonotonic_sends: list[tuple[Any, int, Any, int]] = []
        self.stale: list[Witness] = []
        self.proven = (0, -1)  # (offsets shown to exist, op that showed it)
        self.final_present = False
        self.final_cover: list[tuple[int, int]] = []
        self.final_ends: list[tuple[int, int]] = []  # (N, poll ok) of empty final polls
        self.final_values: set[Any] = set()
        self.log_start = 0  # the highest log start a poll reported
        self.final_start = 0  # the highest log start a final poll reported
        self.problems: list[Problem] = []
        self.known: list[int] | None = None

    def see(self, offset: int, value: Any, pos: int) -> None:
        first = self.at.setdefault(offset, value)
        if first == value:
            self.at_pos.setdefault(offset, pos)
        else:
            conflict = self.more_at.setdefault(offset, {first: self.at_pos[offset]})
            conflict.setdefault(value, pos)
        where = self.where.setdefault(value, offset)
        if where == offset:
            self.where_pos.setdefault(value, pos)
        else:
            conflict_ = self.more_where.setdefault(value, {where: self.where_pos[value]})
            conflict_.setdefault(offset, pos)

    def prove(self, length: int, pos: int) -> None:
        if length > self.proven[0]:
            self.proven = (length, pos)

    def first_known(self, start: int, stop: int) -> int | None:
        """The lowest offset in ``[start, stop)`` known to exist, or None."""
        if self.known is None:
            self.known = sorted(self.at)
        i = bisect_left(self.known, start)
        if i < len(self.known) and self.known[i] < stop:
            return self.known[i]
        return None


class _Consumer:
    """One (run, process): its positions per key, its pending op, its last sends."""

    __slots__ = ("last_send", "pending", "positions")

    def __init__(self) -> None:
        self.positions: dict[Any, tuple[int, int]] = {}  # key -> (position, set by)
        self.pending: tuple[int, Any, Any, Any, Any] | None = None
        # (position, f, key, value, extra): extra is a poll's start and proven length
        self.last_send: dict[Any, tuple[Any, int]] = {}  # key -> (value, ok position)


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _value(value: Any) -> Any:
    return value if type(value) is int else freeze(value)


def _records(value: Any) -> list[tuple[int, Any]] | None:
    """The ``[offset, value]`` records of a poll's ok value; None when malformed (not a
    list of pairs whose offsets are non-negative integers)."""
    records = value.get("records") if isinstance(value, dict) else None
    if not isinstance(records, list):
        return None
    out = []
    for record in records:
        if not (isinstance(record, list | tuple) and len(record) == 2 and type(record[0]) is int):
            return None
        if record[0] < 0:
            return None
        out.append((record[0], _value(record[1])))
    return out


def _keys_of(value: Any) -> frozenset[str] | None:
    """The keys an assign/subscribe leaves assigned (None: malformed)."""
    if value is None:
        return frozenset()
    if isinstance(value, list | tuple) and all(
        isinstance(k, str | int) and not isinstance(k, bool) for k in value
    ):
        return frozenset(str(k) for k in value)
    return None


def _show(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Observer:
    """The pass: `feed` every op of a history in order, then `finish`.

    ``max_witnesses`` caps the witnesses kept per anomaly and key (None: all)."""

    def __init__(
        self, max_witnesses: int | None = None, label: Callable[[int], str] | None = None
    ) -> None:
        self.max_witnesses = max_witnesses
        self.label: Callable[[int], str] = label or str
        """How a problem message names the op at a position that `feed` was given no
        ``where`` for (made only for the few ops that have a problem: a string per op
        fed costs a few percent of the pass)."""
        self.keys: dict[tuple[Any, Any], _Key] = {}
        self.consumers: dict[tuple[Any, Any], _Consumer] = {}

    def _key(self, run: Any, key: Any) -> _Key:
        ident = (run, key)
        part = self.keys.get(ident)
        if part is None:
            part = self.keys[ident] = _Key(ident)
        return part

    def feed(self, pos: int, run: Any, process: Any, type_: str, f: str, key: Any, value: Any,
             *, where: str = "") -> None:  # fmt: skip
        """One op: its position, run, process, type, f, key and value. ``where`` names
        the op in problem messages (e.g. "line 12"; when empty, ``label(pos)``)."""
        if process == "nemesis":
            return
        reassign = f in REASSIGN_FS
        if f not in LOG_FS and not reassign:
            return
        who = (run, process)
        consumer = self.consumers.get(who)
        if consumer is None:
            consumer = self.consumers[who] = _Consumer()
        if type_ == "invoke":
            extra: Any = None
            if f == "send":
                part = self._key(run, key)
                v = _value(value)
                first = part.sent.setdefault(v, pos)
                if first != pos:
                    part.problems.append(
                        Problem(
                            f"value {_show(v)} sent twice to key {key!r}: every anomaly "
                            "identifies a send by its value, so values sent to a key must "
                            "be unique",
                            (first, pos),
                            premise=True,
                        )
                    )
            elif f == "poll":
                part = self._key(run, key)
                extra = part.proven
                if is_final(value):
                    part.final_present = True
            consumer.pending = (pos, f, key, value, extra)
            return
        pending = consumer.pending
        if pending is None or pending[1] != f:
            return  # completes nothing (the validator rejects such lines)
        consumer.pending = None
        inv, _, ikey, arg, extra = pending
        if reassign:
            if type_ in ("ok", "info"):
                self._reassign(consumer, arg, inv, pos, run, where)
            return
        part = self._key(run, ikey)
        if f == "send":
            self._send(part, consumer, ikey, arg, inv, pos, type_, value, where)
        elif type_ == "ok":
            self._poll(part, consumer, ikey, arg, inv, pos, value, extra, where)
        elif type_ == "fail":
            self._log_start(part, arg, value)

    @staticmethod
    def _log_start(part: _Key, arg: Any, value: Any) -> int | None:
        """Note the log start a poll's answer reports (retention on); return it."""
        log_start = _int(value.get("log_start")) if isinstance(value, dict) else None
        if log_start is None or log_start < 0:
            return None
        part.log_start = max(part.log_start, log_start)
        if is_final(arg):
            part.final_start = max(part.final_start, log_start)
        return log_start

    def _reassign(
        self, consumer: _Consumer, arg: Any, inv: int, pos: int, run: Any, where: str
    ) -> None:
        keys = _keys_of(arg)
        if keys is None:
            keys = frozenset()
            for part in self.keys.values():
                if part.ident[0] == run:
                    part.problems.append(
                        Problem(
                            f"assign/subscribe at {where or self.label(pos)} has value "
                            f"{_show(arg)}: expected a list of keys; positions forgotten",
                            (inv, pos),
                        )
                    )
        for held in list(consumer.positions):
            if str(held) not in keys:
                del consumer.positions[held]
        for held in list(consumer.last_send):
            if str(held) not in keys:
                del consumer.last_send[held]

    def _send(
        self,
        part: _Key,
        consumer: _Consumer,
        key: Any,
        arg: Any,
        inv: int,
        pos: int,
        type_: str,
        value: Any,
        where: str,
    ) -> None:
        v = _value(arg)
        if type_ == "fail":
            part.failed.setdefault(v, pos)
            return
        if type_ != "ok":
            return  # info: the outcome is unknown
        offset: int | None = None
        if isinstance(value, dict):
            raw = value.get("offset")
            offset = _int(raw)
            if (raw is not None and offset is None) or (offset is not None and offset < 0):
                part.problems.append(
                    Problem(f"send ok at {where or self.label(pos)}: offset {_show(raw)} is not an "
                            "offset (a non-negative integer)", (pos,))
                )  # fmt: skip
                offset = None
            if "value" in value and _value(value["value"]) != v:
                part.problems.append(
                    Problem(f"send ok at {where or self.label(pos)} echoes "
                            f"{_show(value['value'])}, not the value sent ({_show(arg)})",
                            (inv, pos))
                )  # fmt: skip
        elif value is not None:
            part.problems.append(
                Problem(f"send ok at {where or self.label(pos)}: value {_show(value)} is not "
                        '{"offset": o, "value": v}', (pos,))
            )  # fmt: skip
        part.acked.setdefault(v, (pos, offset))
        if offset is not None:
            part.see(offset, v, pos)
            part.prove(offset + 1, pos)
        previous = consumer.last_send.get(key)
        if previous is not None:
            part.nonmonotonic_sends.append((previous[0], previous[1], v, pos))
        consumer.last_send[key] = (v, pos)

    def _poll(
        self,
        part: _Key,
        consumer: _Consumer,
        key: Any,
        arg: Any,
        inv: int,
        pos: int,
        value: Any,
        proven: tuple[int, int],
        where: str,
    ) -> None:
        records = _records(value)
        raw_hw = value.get("hw") if isinstance(value, dict) else None
        hw = _int(raw_hw)
        start_arg = arg.get("from") if isinstance(arg, dict) else None
        final = is_final(arg)
        if (
            records is None
            or (raw_hw is not None and (hw is None or hw < 0))
            or (start_arg is not None and (_int(start_arg) is None or start_arg < 0))
        ):
            part.problems.append(
                Problem(f"poll at {where or self.label(pos)}: {_show(arg)} -> {_show(value)} "
                        'is not {"from": N} -> {"records": [[offset, value], ...], "hw": H}',
                        (inv, pos))
            )  # fmt: skip
            consumer.positions.pop(key, None)
            return
        held = consumer.positions.get(key)
        setter = -1
        if type(start_arg) is int:
            start: int | None = start_arg  # a seek: deliberate, whichever way
        elif held is not None:
            start, setter = held
        else:
            start = None
        before = (setter,) if setter >= 0 else ()
        log_start = self._log_start(part, arg, value)
        # a start below the log start this poll reports begins at the log start: nothing
        # below it can be read any more (retention; auto.offset.reset)
        begins = start if start is None or log_start is None else max(start, log_start)
        if records:
            first = records[0][0]
            if start is not None and begins is not None:
                if first < start:
                    part.backs.append(("nonmonotonic-poll", (*before, inv, pos)))
                elif first > begins:
                    part.skips.append(("poll-skip", begins, first, (*before, inv, pos)))
            previous: int | None = None
            highest = first
            for offset, v in records:
                part.see(offset, v, pos)
                part.read.setdefault(v, pos)
                if previous is not None:
                    if offset <= previous:
                        part.backs.append(("int-nonmonotonic-poll", (inv, pos)))
                    elif offset > previous + 1:
                        part.skips.append(("int-poll-skip", previous + 1, offset, (inv, pos)))
                previous = offset
                highest = max(highest, offset)
            last = records[-1][0]
            lowest = first if begins is None else min(begins, first)
            part.spans.append((lowest, highest, pos))
            part.prove(highest + 1, pos)
            consumer.positions[key] = (last + 1, pos)
            if final:
                part.final_values.update(v for _, v in records)
                if type(start_arg) is int:
                    part.final_cover.append((start_arg, last + 1))
        else:
            if begins is not None:
                consumer.positions[key] = (begins, pos)
            if final and type(start_arg) is int and hw is not None and start_arg >= hw:
                part.final_ends.append((start_arg, pos))
        if hw is not None:
            if hw < proven[0]:
                part.stale.append(tuple(sorted((proven[1], inv, pos))))
            part.prove(hw, pos)

    # --- the end ------------------------------------------------------------------------

    def finish(self) -> list[KeyAnomalies]:
        """Every key's anomalies, keys in the order they were first seen."""
        return [self._finish(part) for part in self.keys.values()]

    def _finish(self, part: _Key) -> KeyAnomalies:
        found: dict[str, list[Witness]] = {name: [] for name in ANOMALIES}
        for seen in part.more_at.values():
            found["inconsistent-offsets"].append(tuple(sorted(seen.values())))
        for seen_ in part.more_where.values():
            found["duplicate"].append(tuple(sorted(seen_.values())))
        for v, fail in part.failed.items():
            if v in part.read and v in part.sent:
                found["aborted-read"].append(tuple(sorted((part.sent[v], fail, part.read[v]))))
        final = self._final(part)
        self._lost(part, final, found)
        for name, start, stop, witness in part.skips:
            known = part.first_known(start, stop)
            if known is not None:
                found[name].append(tuple(sorted({*witness, part.at_pos[known]})))
        for name, witness in part.backs:
            found[name].append(witness)
        for v1, ok1, v2, ok2 in part.nonmonotonic_sends:
            o1 = self._offset_of(part, v1)
            o2 = self._offset_of(part, v2)
            if o1 is not None and o2 is not None and o2 <= o1:
                found["nonmonotonic-send"].append((ok1, ok2))
        found["stale-read"] = part.stale
        cap = self.max_witnesses
        witnesses = {
            name: tuple(sorted(ws)[:cap] if cap is not None else sorted(ws))
            for name, ws in found.items()
            if ws
        }
        return KeyAnomalies(
            part.ident[0],
            part.ident[1],
            {name: len(found[name]) for name in ANOMALIES},
            witnesses,
            tuple(part.problems),
            final,
            part.log_start,
        )

    @staticmethod
    def _offset_of(part: _Key, value: Any) -> int | None:
        ack = part.acked.get(value)
        if ack is not None and ack[1] is not None:
            return ack[1]
        return part.where.get(value)

    @staticmethod
    def _final(part: _Key) -> FinalRead:
        if not part.final_present:
            return FinalRead()
        covered = part.final_start
        for start, stop in sorted(part.final_cover):
            if start > covered:
                break
            covered = max(covered, stop)
        ends = [(end, pos) for end, pos in part.final_ends if end <= covered]
        if not ends:
            return FinalRead(True, False)
        end, pos = min(ends, key=lambda e: e[1])
        return FinalRead(True, True, end, pos)

    @staticmethod
    def _lost(part: _Key, final: FinalRead, found: dict[str, list[Witness]]) -> None:
        spans = sorted(part.spans)
        starts = [s for s, _, _ in spans]
        reach: list[tuple[int, int]] = []  # per span: (highest offset so far, its poll)
        best = (-1, -1)
        for _, highest, pos in spans:
            if highest > best[0]:
                best = (highest, pos)
            reach.append(best)

        def covering(offset: int) -> int | None:
            i = bisect_left(starts, offset + 1) - 1
            if i >= 0 and reach[i][0] >= offset:
                return reach[i][1]
            return None

        def deleted(offset: int | None) -> bool:
            """Below the log start (an acknowledgement without an offset may be too):
            `KeyAnomalies.deleted`'s rule, on the pass's state."""
            return KeyAnomalies.deleted_below(part.log_start, offset)

        for v, (ok, offset) in part.acked.items():
            sent = part.sent.get(v, ok)
            if final.complete:
                if v not in part.final_values:
                    assert final.position is not None
                    name = "deleted-by-retention" if deleted(offset) else "lost-write"
                    found[name].append(tuple(sorted({sent, ok, final.position})))
                continue
            if v in part.read:
                continue
            cover = covering(offset) if offset is not None else None
            if cover is not None:
                found["lost-write"].append(tuple(sorted({sent, ok, cover})))
            elif deleted(offset):
                found["deleted-by-retention"].append(tuple(sorted({sent, ok})))
            else:
                found["unseen"].append(tuple(sorted({sent, ok})))
        if final.complete:
            assert final.position is not None
            for v, first_read in part.read.items():
                if v in part.acked or v in part.final_values or v not in part.sent:
                    continue
                if v in part.failed:
                    continue  # an aborted read: its own anomaly
                name = "deleted-by-retention" if deleted(part.where.get(v)) else "lost-write"
                found[name].append(tuple(sorted({part.sent[v], first_read, final.position})))


def observe(ops: Iterable[Any], max_witnesses: int | None = None) -> list[KeyAnomalies]:
    """Run the pass over ``ops`` (`Op`s, positions = their place in ``ops``)."""
    ops = ops if isinstance(ops, Sequence) else list(ops)
    observer = Observer(max_witnesses, label=functools.partial(op_label, ops))
    feed = observer.feed
    for pos, op in enumerate(ops):
        feed(pos, op.run, op.process, op.type, op.f, op.key, op.value)
    return observer.finish()


def op_label(ops: Sequence[Any], pos: int) -> str:
    """How a problem message names ``ops[pos]``: its line, else its index."""
    op = ops[pos]
    return f"line {op.line}" if op.line is not None else f"index {op.index}"


Witnesses = list[list[Any]]


def find_anomalies(ops: Sequence[Any]) -> dict[str, Witnesses]:
    """Every anomaly of `ANOMALIES` over all keys of ``ops``, as lists of witnessing ops
    (all names present, empty when none)."""
    out: dict[str, Witnesses] = {name: [] for name in ANOMALIES}
    for key in observe(ops):
        for name, witnesses in key.witnesses.items():
            out[name].extend([ops[p] for p in w] for w in witnesses)
    return out


def summarize(found: dict[str, Witnesses], examples: int = 3) -> dict[str, Any]:
    """Counts per anomaly and up to ``examples`` witnesses each (as op indices), JSON-ready:
    ``{"counts": {name: n}, "examples": {name: [[index, ...], ...]}, "total": n,
    "violations": n}`` (``violations`` counts the anomalies classed as violations)."""
    counts = {name: len(found.get(name, [])) for name in ANOMALIES}
    return {
        "counts": counts,
        "examples": {
            name: [[op.index for op in w] for w in found.get(name, [])[:examples]]
            for name in ANOMALIES
            if counts[name]
        },
        "total": sum(counts.values()),
        "violations": sum(n for name, n in counts.items() if name in VIOLATIONS),
    }
