"""The Jepsen Kafka anomaly taxonomy: what went wrong, named, with the ops that show it.

Linearizability (``kafka_log.check_log``) gives one verdict; a Kafka engineer also wants
to know *which* guarantee broke. These are the anomalies of Jepsen's Kafka workload
(``jepsen.tests.kafka``), each its own function returning a list of witnesses, each
witness the list of ops that shows one occurrence:

- ``inconsistent-offsets``: one offset of a partition holds two values (two writes
  claimed one offset: log divergence after an unclean election, pre-KIP-101 truncation);
- ``duplicate``: one value sits at two offsets (a producer retry without idempotence,
  ``enable.idempotence=false``, appended the record twice);
- ``lost-write``: an acknowledged send whose offset is below the highest offset any poll
  returned, yet no poll ever returned its value (acks=1 and a leader crash, or an unclean
  election, discarded an acknowledged record that consumers had already moved past);
- ``unseen``: an acknowledged send no poll ever returned, at or above the highest offset
  read. Every acknowledged, never-read send is exactly one of ``lost-write`` and
  ``unseen``. With a final phase that reads every partition back, ``unseen`` is a loss
  too; without one, it may only mean nobody read that far;
- ``poll-skip``: a consumer's successive polls of a partition jump over offsets that
  exist (some op observed them) without reading them;
- ``nonmonotonic-poll``: a consumer's poll returns an offset below the position its
  previous poll left it at (or records going backwards within one poll);
- ``nonmonotonic-send``: a producer's successive acknowledged sends to one partition get
  decreasing offsets (an acknowledged send was reordered behind a later one);
- ``aborted-read``: a poll returns a value whose send failed (a write reported as failed
  took effect: a ``fail`` must mean "did not happen").

A consumer's position (for ``poll-skip`` and ``nonmonotonic-poll``) is tracked per
(run, process, key): after an ``ok`` poll it is one past the last offset returned (or the
poll's start, if it returned nothing). A poll's start is its ``from`` when it has one,
else the position. Deliberate seeks are not anomalies: a poll with an explicit ``from``
*below* the position is a seek back (the consumer asked to re-read), and an ``assign`` or
``subscribe`` op by the process (a reassignment; a rebalance) forgets its positions. A
poll with an explicit ``from`` *above* the position skips the offsets in between: that is
``poll-skip`` when any of them is known to exist. Offsets with no known record (Kafka
offsets may have gaps: transaction markers, compaction) are never counted as skipped.
A new process (Jepsen's convention after an ``info``) starts with no position.

Values are taken per (run, key). Nemesis ops and ops of other ``f`` are ignored;
completions without a matching invocation are skipped (``check_log`` reports them).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

from jepsen_py.checker.kafka_log import LOG_FS, freeze
from jepsen_py.history.op import Op

ANOMALIES: tuple[str, ...] = (
    "inconsistent-offsets",
    "duplicate",
    "lost-write",
    "unseen",
    "poll-skip",
    "nonmonotonic-poll",
    "nonmonotonic-send",
    "aborted-read",
)

INFORMATIONAL = frozenset({"unseen"})
"""Anomalies that are not a violation by themselves: an acknowledged value above every
offset read may simply not have been read yet. Without a final phase that reads every
partition back, a verifier should report ``unseen`` and not fail on it; with one, it is a
loss. Every other anomaly breaks a Kafka guarantee."""


def has_final_read(ops: list[Op]) -> bool:
    """True when the history reads its partitions back in a final phase: a poll invoked
    with ``{"from": N, "final": true}``. The fault injector's last phase heals every fault
    and reads every key back from the beginning with such polls."""
    return any(
        op.type == "invoke"
        and op.f == "poll"
        and isinstance(op.value, dict)
        and op.value.get("final") is True
        for op in ops
    )


def violations(found: dict[str, Witnesses], ops: list[Op]) -> list[str]:
    """The anomaly types in ``found`` that break a guarantee for this history: every one
    found, except the ``INFORMATIONAL`` ones when the history has no final read-back."""
    final = has_final_read(ops)
    return sorted(
        name for name, groups in found.items() if groups and (final or name not in INFORMATIONAL)
    )


REASSIGN_FS = frozenset({"assign", "subscribe"})
"""Ops after which a consumer's position is forgotten (Kafka's assign/subscribe)."""

Witnesses = list[list[Op]]


class _Partition:
    """What the ops say about one (run, key): positions into ``ops``, values, offsets."""

    __slots__ = (
        "acked",
        "at",
        "at_pos",
        "failed",
        "known",
        "max_read",
        "max_read_pos",
        "more_at",
        "more_where",
        "nonmonotonic_sends",
        "read_pos",
        "sent",
        "where",
        "where_pos",
    )

    def __init__(self) -> None:
        self.sent: dict[Any, int] = {}  # value -> send invocation
        self.acked: dict[Any, int] = {}  # value -> send ok
        self.failed: dict[Any, int] = {}  # value -> send fail
        self.at: dict[int, Any] = {}  # offset -> first value seen there
        self.at_pos: dict[int, int] = {}  # offset -> op that first saw it
        self.where: dict[Any, int] = {}  # value -> first offset seen for it
        self.where_pos: dict[Any, int] = {}  # value -> op that first saw it
        self.more_at: dict[int, dict[Any, int]] = {}  # conflicting offsets: value -> op
        self.more_where: dict[Any, dict[int, int]] = {}  # conflicting values: offset -> op
        self.read_pos: dict[Any, int] = {}  # value -> first poll ok that returned it
        self.max_read = -1
        self.max_read_pos = -1
        self.nonmonotonic_sends: list[tuple[int, int]] = []
        self.known: list[int] | None = None  # sorted offsets known to exist, built lazily

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
            conflict = self.more_where.setdefault(value, {where: self.where_pos[value]})
            conflict.setdefault(offset, pos)

    def skips(self, start: int, stop: int) -> bool:
        """Whether some offset in ``[start, stop)`` is known to hold a record."""
        if self.known is None:
            self.known = sorted(self.at)
        i = bisect_left(self.known, start)
        return i < len(self.known) and self.known[i] < stop


class Observations:
    """One pass over a history, shared by all anomaly functions (``observe(ops)``)."""

    def __init__(self, ops: Sequence[Op]) -> None:
        self.ops = ops
        self.partitions: dict[tuple[Any, Any], _Partition] = {}
        self.events: list[tuple[int, int]] = []  # ok polls (inv, comp); reassigns (-1, pos)
        self._polls: tuple[Witnesses, Witnesses] | None = None

    def partition(self, op: Op) -> _Partition:
        ident = (op.run, op.key)
        part = self.partitions.get(ident)
        if part is None:
            part = self.partitions[ident] = _Partition()
        return part


def observe(ops: Sequence[Op]) -> Observations:
    """Read a history once into per-partition observations."""
    obs = Observations(ops)
    pending: dict[tuple[Any, Any], int] = {}
    last_send: dict[tuple[Any, Any, Any], tuple[int, int]] = {}  # (run, process, key) -> ...
    for pos, op in enumerate(ops):
        process = op.process
        if process == "nemesis":
            continue
        f = op.f
        if f in REASSIGN_FS:
            obs.events.append((-1, pos))
            continue
        if f not in LOG_FS:
            continue
        if op.type == "invoke":
            pending[(op.run, process)] = pos
            if f == "send":
                obs.partition(op).sent.setdefault(_hashable(op.value), pos)
            continue
        inv = pending.pop((op.run, process), None)
        if inv is None or ops[inv].f != f:
            continue
        iop = ops[inv]
        part = obs.partition(iop)
        out = op.value
        if f == "send":
            value = _hashable(iop.value)
            if op.type == "fail":
                part.failed.setdefault(value, pos)
            elif op.type == "ok":
                part.acked.setdefault(value, pos)
                offset = out.get("offset") if isinstance(out, dict) else None
                if type(offset) is int:
                    part.see(offset, value, pos)
                    track = (iop.run, process, iop.key)
                    previous = last_send.get(track)
                    if previous is not None and offset < previous[0]:
                        part.nonmonotonic_sends.append((previous[1], pos))
                    last_send[track] = (offset, pos)
        elif op.type == "ok" and isinstance(out, dict):
            for offset, value in _records(out):
                value = _hashable(value)
                part.see(offset, value, pos)
                part.read_pos.setdefault(value, pos)
                if offset > part.max_read:
                    part.max_read, part.max_read_pos = offset, pos
            obs.events.append((inv, pos))
    return obs


def _hashable(value: Any) -> Any:
    return value if type(value) is int else freeze(value)


def _records(out: dict[str, Any]) -> list[tuple[int, Any]]:
    """The well-formed ``[offset, value]`` records of a poll's ok value."""
    records = out.get("records")
    if not isinstance(records, list):
        return []
    return [
        (r[0], r[1])
        for r in records
        if isinstance(r, list | tuple) and len(r) == 2 and type(r[0]) is int
    ]


def _obs(history: Sequence[Op] | Observations) -> Observations:
    return history if isinstance(history, Observations) else observe(history)


def inconsistent_offsets(history: Sequence[Op] | Observations) -> Witnesses:
    """Offsets holding two or more values: per offset, the first op that saw each value."""
    obs = _obs(history)
    return [
        [obs.ops[p] for p in sorted(seen.values())]
        for part in obs.partitions.values()
        for seen in part.more_at.values()
    ]


def duplicate(history: Sequence[Op] | Observations) -> Witnesses:
    """Values at two or more offsets: per value, the first op that saw it at each offset."""
    obs = _obs(history)
    return [
        [obs.ops[p] for p in sorted(seen.values())]
        for part in obs.partitions.values()
        for seen in part.more_where.values()
    ]


def _unread_acked(obs: Observations, lost: bool) -> Witnesses:
    out = []
    for part in obs.partitions.values():
        for value, pos in part.acked.items():
            if value in part.read_pos:
                continue
            ack = obs.ops[pos].value
            offset = ack.get("offset") if isinstance(ack, dict) else None
            below = type(offset) is int and offset < part.max_read
            if below and lost:
                out.append([obs.ops[part.sent[value]], obs.ops[pos], obs.ops[part.max_read_pos]])
            elif not below and not lost:
                out.append([obs.ops[part.sent[value]], obs.ops[pos]])
    return out


def lost_write(history: Sequence[Op] | Observations) -> Witnesses:
    """Acknowledged sends below the highest offset read that no poll returned: the send's
    invocation and ok, and the poll that read the highest offset."""
    return _unread_acked(_obs(history), lost=True)


def unseen(history: Sequence[Op] | Observations) -> Witnesses:
    """Acknowledged sends never returned by a poll, at or above the highest offset read
    (or without an offset): the send's invocation and ok."""
    return _unread_acked(_obs(history), lost=False)


def aborted_read(history: Sequence[Op] | Observations) -> Witnesses:
    """Values returned by a poll whose send failed: the send, its fail, the first poll."""
    obs = _obs(history)
    return [
        [obs.ops[part.sent[value]], obs.ops[pos], obs.ops[part.read_pos[value]]]
        for part in obs.partitions.values()
        for value, pos in part.failed.items()
        if value in part.read_pos and value in part.sent
    ]


def nonmonotonic_send(history: Sequence[Op] | Observations) -> Witnesses:
    """A process's successive acknowledged sends to a key with decreasing offsets: the two
    oks (each carries its offset)."""
    obs = _obs(history)
    return [
        [obs.ops[a], obs.ops[b]]
        for part in obs.partitions.values()
        for a, b in part.nonmonotonic_sends
    ]


def poll_skip(history: Sequence[Op] | Observations) -> Witnesses:
    """Polls that jump over existing offsets: the previous poll's ok (when the skip is
    relative to it), and the poll's invocation and ok."""
    return _poll_order(_obs(history))[0]


def nonmonotonic_poll(history: Sequence[Op] | Observations) -> Witnesses:
    """Polls returning an offset below the consumer's position: the previous poll's ok
    (when the regression is relative to it), and the poll's invocation and ok."""
    return _poll_order(_obs(history))[1]


def _poll_order(obs: Observations) -> tuple[Witnesses, Witnesses]:
    """Replay each consumer's positions (see the module docstring) once for both."""
    if obs._polls is not None:
        return obs._polls
    ops = obs.ops
    skips: Witnesses = []
    backs: Witnesses = []
    # (run, process) -> {(run, key): (position or None, ok of the poll that set it or -1)}
    tracks: dict[tuple[Any, Any], dict[tuple[Any, Any], tuple[int | None, int]]] = {}
    for inv, comp in obs.events:
        if inv < 0:
            op = ops[comp]
            tracks.pop((op.run, op.process), None)
            continue
        iop, cop = ops[inv], ops[comp]
        ident = (iop.run, iop.key)
        part = obs.partitions[ident]
        track = tracks.setdefault((iop.run, iop.process), {})
        position, previous = track.get(ident, (None, -1))
        arg = iop.value
        start = arg.get("from") if isinstance(arg, dict) else None
        skipped = back = False
        if type(start) is int:
            if position is None or start < position:
                previous = -1  # a first poll, or a deliberate seek back
            elif start > position and part.skips(position, start):
                skipped = True
            position = start
        for offset, _ in _records(cop.value):
            if position is not None:
                if offset < position:
                    back = True
                elif offset > position and part.skips(position, offset):
                    skipped = True
            position = offset + 1
        witness = ([ops[previous]] if previous >= 0 else []) + [iop, cop]
        if skipped:
            skips.append(witness)
        if back:
            backs.append(witness)
        track[ident] = (position, comp)
    obs._polls = (skips, backs)
    return obs._polls


FINDERS = {
    "inconsistent-offsets": inconsistent_offsets,
    "duplicate": duplicate,
    "lost-write": lost_write,
    "unseen": unseen,
    "poll-skip": poll_skip,
    "nonmonotonic-poll": nonmonotonic_poll,
    "nonmonotonic-send": nonmonotonic_send,
    "aborted-read": aborted_read,
}


def find_anomalies(history: Sequence[Op] | Observations) -> dict[str, Witnesses]:
    """Every anomaly of the taxonomy, by name (all names present, empty when none)."""
    obs = _obs(history)
    return {name: FINDERS[name](obs) for name in ANOMALIES}


def summarize(found: dict[str, Witnesses], examples: int = 3) -> dict[str, Any]:
    """Counts per anomaly and up to ``examples`` witnesses each (as op indices), JSON-ready:
    ``{"counts": {name: n}, "examples": {name: [[index, ...], ...]}, "total": n,
    "violations": n}`` (``violations`` leaves out the ``INFORMATIONAL`` ones)."""
    counts = {name: len(found.get(name, [])) for name in ANOMALIES}
    return {
        "counts": counts,
        "examples": {
            name: [[op.index for op in w] for w in found.get(name, [])[:examples]]
            for name in ANOMALIES
            if counts[name]
        },
        "total": sum(counts.values()),
        "violations": sum(n for name, n in counts.items() if name not in INFORMATIONAL),
    }
