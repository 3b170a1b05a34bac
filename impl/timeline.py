"""The world's record of what happened to each partition: leaders and epochs, ISR changes,
session expiries, crashes, recoveries and truncations, each stamped with global time.

No node can see this record; the simulated world keeps it (``World.timeline``) from the
notes its nodes hand back (``Timeline.observe`` reads ``impl.protocol``'s ``Acked``,
``Published``, ``IsrChanged``, ``SessionExpired``, ``BecameLeader``, ``Truncated``) and
from the faults it performs itself (a crash, with or without a power loss, and what the
restarted broker recovered). A history
shows what clients saw; this record shows why, so that a lost acknowledged write can be
explained step by step (``jepsen_py.explain``): which replica led, what the ISR was, who
lost the write to a power loss, who truncated it away. When a follower reconciles its log
with its leader's (``Reconciled``), the world compares the two logs and records a
`Divergence` if the follower kept a record the leader does not have: how an offset comes
to hold two values.

Events are frozen records with a ``kind`` and a JSON form (``to_json``); the store keeps them
as ``cluster.jsonl`` next to the history. Recording them costs nothing per message: only the
events above are recorded, the most frequent being one per acknowledged batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from impl.log.leader_epoch import LeaderEpochCache
from impl.messages import Message
from impl.protocol import Acked, BecameLeader, IsrChanged, Published, SessionExpired, Truncated

__all__ = [
    "Ack",
    "Crash",
    "Divergence",
    "Election",
    "Event",
    "IsrChange",
    "Leadership",
    "Logs",
    "Recovery",
    "SessionExpiry",
    "Timeline",
    "Truncation",
    "epoch_mismatches",
    "event_from_json",
    "event_to_json",
]


def _sorted_ints(value: Any) -> tuple[int, ...]:
    return tuple(sorted(int(v) for v in value))


Logs = tuple[tuple[str, int, int, int], ...]
"""A broker's replicas: (topic, partition, log end offset, high watermark) each."""


def _logs(value: Any) -> Logs:
    return tuple(sorted((str(t), int(p), int(end), int(hw)) for t, p, end, hw in value))


def _log_end(logs: Logs, topic: str, partition: int) -> int | None:
    for t, p, end, _ in logs:
        if (t, p) == (topic, partition):
            return end
    return None


@attrs.frozen
class Election:
    """The controller wrote a new leader and leader epoch for a partition (a LeaderAndIsr).
    ``previous_isr`` is the ISR the store held just before, with KIP-966's ELR added (the
    replicas eligible for a clean election; the ELR is empty with ELR off): a leader
    outside it was elected uncleanly (``unclean.leader.election.enable``)."""

    time: int
    topic: str
    partition: int
    leader_epoch: int
    leader: int
    """-1: the partition has no leader (every ISR member is gone)."""
    isr: tuple[int, ...] = attrs.field(converter=_sorted_ints)
    previous_isr: tuple[int, ...] = attrs.field(converter=_sorted_ints)

    kind = "elected"

    @property
    def clean(self) -> bool:
        return self.leader < 0 or self.leader in self.previous_isr


@attrs.frozen
class IsrChange:
    """The leader changed the ISR through the controller (AlterPartition, KIP-497)."""

    time: int
    topic: str
    partition: int
    leader_epoch: int
    leader: int
    isr: tuple[int, ...] = attrs.field(converter=_sorted_ints)
    previous_isr: tuple[int, ...] = attrs.field(converter=_sorted_ints)

    kind = "isr-changed"


@attrs.frozen
class SessionExpiry:
    """The controller let a broker's session expire: it is taken for dead."""

    time: int
    broker: int

    kind = "session-expired"


@attrs.frozen
class Leadership:
    """A replica became leader of a partition, holding a log of ``log_end_offset`` records."""

    time: int
    broker: int
    topic: str
    partition: int
    leader_epoch: int
    log_end_offset: int
    high_watermark: int

    kind = "became-leader"


@attrs.frozen
class Truncation:
    """A follower cut its log from ``from_offset`` to ``to_offset`` records, following
    ``leader`` in ``leader_epoch``."""

    time: int
    broker: int
    topic: str
    partition: int
    leader_epoch: int
    leader: int
    from_offset: int
    to_offset: int

    kind = "truncated"


@attrs.frozen
class Ack:
    """A leader acknowledged ``count`` records from ``base_offset`` written in
    ``leader_epoch`` (acks=1: on append; acks=all: when the HW passed them)."""

    time: int
    broker: int
    topic: str
    partition: int
    leader_epoch: int
    base_offset: int
    count: int

    kind = "acked"

    def covers(self, offset: int) -> bool:
        return self.base_offset <= offset < self.base_offset + self.count


@attrs.frozen
class Crash:
    """A broker died. With ``power_loss`` its machine lost power too: its disk kept only
    what was fsynced or written back (``unflushed_bytes`` were lost). ``logs`` holds, per
    partition ``(topic, partition, log end offset, high watermark)``, the broker's replicas
    as they stood just before."""

    time: int
    broker: int
    power_loss: bool
    unflushed_bytes: int
    logs: Logs = attrs.field(converter=_logs)

    kind = "crashed"

    def log_end(self, topic: str, partition: int) -> int | None:
        return _log_end(self.logs, topic, partition)


@attrs.frozen
class Recovery:
    """A broker started again and recovered its logs from disk: per partition
    ``(topic, partition, log end offset, high watermark)``."""

    time: int
    broker: int
    logs: Logs = attrs.field(converter=_logs)

    kind = "recovered"

    def log_end(self, topic: str, partition: int) -> int | None:
        return _log_end(self.logs, topic, partition)


@attrs.frozen
class Divergence:
    """A follower reconciled its log with its leader's (``Reconciled``) and kept a record
    its leader does not have: at ``offset`` its log holds a batch of leader epoch
    ``epoch`` where the leader's holds one of ``leader_record_epoch`` (the two logs agree
    below it). The follower then fetches on top of it, so the replicas hold different
    records at the same offset: the divergence KIP-279 (fast leader failover) and KIP-320
    (a follower fenced from a stale leader) close, and truncating to the high watermark
    (before KIP-101) does not prevent. No node sees this; the simulated world compares
    the two logs when the note comes (`epoch_mismatches` says where to look)."""

    time: int
    broker: int
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    """The epoch the follower reconciled in."""
    offset: int
    epoch: int
    """The leader epoch of the follower's batch at ``offset``."""
    leader_record_epoch: int
    """The leader epoch of the leader's batch at ``offset``."""
    log_end_offset: int
    """The follower's log end after reconciling."""

    kind = "diverged"


def epoch_mismatches(
    ours: LeaderEpochCache, our_end: int, theirs: LeaderEpochCache, their_end: int
) -> Iterator[tuple[int, int, int]]:
    """The offsets below both log ends where two replicas' leader-epoch caches (Kafka's
    ``leader-epoch-checkpoint``) give their records different epochs, in order, with the
    two epochs: where the logs may hold different records. A record's epoch changes only
    where an entry starts, so only the entries' starts need looking at. A cache is no
    proof (Kafka's cache drops the entries above an older epoch appended after them), so
    the caller compares the records themselves."""
    end = min(our_end, their_end)
    starts = {e.start_offset for e in (*ours.entries, *theirs.entries) if e.start_offset < end}
    for offset in sorted(starts):
        a, b = ours.epoch_for(offset), theirs.epoch_for(offset)
        if a is not None and b is not None and a != b:
            yield offset, a, b


Event = (
    Ack
    | Election
    | IsrChange
    | SessionExpiry
    | Leadership
    | Truncation
    | Crash
    | Recovery
    | Divergence
)

_KINDS: dict[str, type[Any]] = {
    cls.kind: cls
    for cls in (
        Ack,
        Election,
        IsrChange,
        SessionExpiry,
        Leadership,
        Truncation,
        Crash,
        Recovery,
        Divergence,
    )
}


def event_to_json(event: Event) -> dict[str, Any]:
    data = attrs.asdict(event, recurse=False)
    for name, value in data.items():
        if isinstance(value, tuple):
            data[name] = [list(v) if isinstance(v, tuple) else v for v in value]
    return {"event": event.kind, **data}


def event_from_json(data: dict[str, Any]) -> Event:
    """The event a ``cluster.jsonl`` line holds; ValueError names what is wrong."""
    kind = data.get("event")
    cls = _KINDS.get(str(kind))
    if cls is None:
        raise ValueError(f"unknown cluster event {kind!r}; known: {', '.join(sorted(_KINDS))}")
    fields = {f.name for f in attrs.fields(cls)}
    values = {k: v for k, v in data.items() if k != "event"}
    if set(values) != fields:
        raise ValueError(f"a {kind} event has the fields {sorted(fields)}, got {sorted(values)}")
    event: Event = cls(**values)
    return event


class Timeline:
    """The events of a run, in the order they happened (see the module docstring), and the
    partitions' ISR as the store holds it (to tell a clean election from an unclean one)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._isr: dict[tuple[str, int], tuple[int, ...]] = {}
        self._elr: dict[tuple[str, int], tuple[int, ...]] = {}
        """KIP-966's ELR as the controller last reported it (empty with ELR off)."""

    def start(self, topic: str, partition: int, isr: tuple[int, ...]) -> None:
        """A partition created with ``isr`` (every replica) and no leader."""
        self._isr[(topic, partition)] = tuple(sorted(isr))

    def elected(
        self,
        time: int,
        topic: str,
        partition: int,
        epoch: int,
        leader: int,
        isr: frozenset[int],
        elr: frozenset[int] = frozenset(),
    ) -> None:
        key = (topic, partition)
        previous = tuple(sorted({*self._isr.get(key, ()), *self._elr.get(key, ())}))
        self._isr[key], self._elr[key] = tuple(sorted(isr)), tuple(sorted(elr))
        self.events.append(Election(time, topic, partition, epoch, leader, isr, previous))

    def isr_changed(
        self,
        time: int,
        topic: str,
        partition: int,
        epoch: int,
        leader: int,
        isr: frozenset[int],
        elr: frozenset[int] = frozenset(),
    ) -> None:
        previous = self._isr.get((topic, partition), ())
        self._isr[(topic, partition)] = tuple(sorted(isr))
        self._elr[(topic, partition)] = tuple(sorted(elr))
        self.events.append(IsrChange(time, topic, partition, epoch, leader, isr, previous))

    def add(self, event: Event) -> None:
        self.events.append(event)

    def observe(self, now: int, note: Message) -> None:
        """Record what a node's note at global time ``now`` says, if it is one of the notes
        this record keeps (see the module docstring); any other note is not its business."""
        if isinstance(note, Published):
            self.elected(
                now, note.topic, note.partition, note.leader_epoch, note.leader, note.isr, note.elr
            )
        elif isinstance(note, IsrChanged):
            self.isr_changed(
                now, note.topic, note.partition, note.leader_epoch, note.leader, note.isr, note.elr
            )
        elif isinstance(note, Acked):
            self.add(
                Ack(
                    now,
                    note.broker,
                    note.topic,
                    note.partition,
                    note.leader_epoch,
                    note.base_offset,
                    note.count,
                )
            )
        elif isinstance(note, SessionExpired):
            self.add(SessionExpiry(now, note.broker))
        elif isinstance(note, BecameLeader):
            self.add(
                Leadership(
                    now,
                    note.broker,
                    note.topic,
                    note.partition,
                    note.leader_epoch,
                    note.log_end_offset,
                    note.high_watermark,
                )
            )
        elif isinstance(note, Truncated):
            self.add(
                Truncation(
                    now,
                    note.broker,
                    note.topic,
                    note.partition,
                    note.leader_epoch,
                    note.leader,
                    note.from_offset,
                    note.to_offset,
                )
            )

    def to_json(self) -> list[dict[str, Any]]:
        return [event_to_json(e) for e in self.events]
