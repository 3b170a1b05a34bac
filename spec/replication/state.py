"""The replication spec's state: one partition's replicas, the controller's quorum state and
the LeaderAndIsr requests it has sent, plus the extended model's ghost of producer writes.

Every record here is frozen and hashable (the model checker stores states in sets), and
``slots``/``cache_hash`` because the explorer builds millions of them: ``evolve`` and
``with_replica`` are the hot path's cheap copies, faster than ``attrs.evolve``.

- ``Quorum``: the partition state the controller keeps (ZooKeeper's
  ``/brokers/topics/T/partitions/P/state``, or KRaft's partition record): leader epoch,
  leader, ISR. It is also the payload of a LeaderAndIsr request.
- ``Replica``: what one broker holds for the partition: its log of records, its high
  watermark (HW), and its own view of the partition (the leader epoch it last accepted, the
  replica it believes leads, the ISR it believes in).
- ``Write`` / ``Pending``: ghost variables, not Kafka state: every acknowledged write, and
  every acks=all write waiting in the leader's produce purgatory, so that loss of an
  acknowledged write can be stated directly.
"""

from __future__ import annotations

from typing import Any

import attrs

NONE = -1
"""No replica: the leader field of a quorum state with no leader (Kafka writes -1)."""
NIL = -1
"""No epoch: smaller than every leader epoch."""

Record = tuple[int, int]
"""A record: (leader epoch it was written in, unique id). Every record batch carries its
leader epoch since KIP-101; the id makes two records equal only if they are the same write."""


def describe_ids(ids: frozenset[int]) -> str:
    """A set of replica ids as ``{1,2}``."""
    return "{" + ",".join(str(i) for i in sorted(ids)) + "}"


@attrs.frozen(slots=True, cache_hash=True)
class Quorum:
    """The controller's partition state, and the payload of a LeaderAndIsr request."""

    epoch: int
    """The leader epoch: bumped by the controller on every leadership change (NIL: no leader
    was ever elected)."""
    leader: int
    """The replica the controller elected leader, NONE while the partition has none."""
    isr: frozenset[int]
    """The in-sync replicas as the controller recorded them: the replicas a clean election
    may choose from."""

    def describe(self) -> str:
        leader = "-" if self.leader == NONE else str(self.leader)
        epoch = "-" if self.epoch == NIL else str(self.epoch)
        return f"(e{epoch},L{leader},{describe_ids(self.isr)})"

    def key(self) -> tuple[Any, ...]:
        return (self.epoch, self.leader, tuple(sorted(self.isr)))


@attrs.frozen(slots=True, cache_hash=True)
class Replica:
    """What one broker holds for the partition: its log and its own view of the partition.

    ``flushed`` (the prefix of the log that is on disk), ``alive`` and ``fence`` are the
    extended model's; in ``published-2018`` they stay at their initial values.
    """

    log: tuple[Record, ...]
    """The replica's log: record ``i`` is at offset ``i``; its length is the LEO."""
    hw: int
    """Its high watermark: records below it are committed, as far as it knows."""
    epoch: int
    """The leader epoch of the last LeaderAndIsr request it accepted."""
    leader: int
    """The replica it believes leads (itself: it presumes it leads; NONE: no leader)."""
    isr: frozenset[int]
    """The ISR it believes in (a leader's own ISR changes as followers lag and catch up)."""
    flushed: int = 0
    """How many records of the log are on disk (``flush.messages``/``flush.ms``); a crash
    may lose the rest."""
    alive: bool = True
    """False between a crash and the restart."""
    fence: int = NIL
    """After a restart: the quorum epoch when the broker re-registered. Requests older than
    that were addressed to its previous incarnation and are rejected (KIP-380 broker
    epochs)."""
    remote: tuple[int, ...] = ()
    """Leader view only, while this replica leads: for each replica, the LEO it reported in
    its last fetch in this leader epoch (-1: not fetched yet). Empty otherwise."""

    @property
    def leo(self) -> int:
        return len(self.log)

    def evolve(
        self,
        *,
        log: tuple[Record, ...] | None = None,
        hw: int | None = None,
        epoch: int | None = None,
        leader: int | None = None,
        isr: frozenset[int] | None = None,
        flushed: int | None = None,
        remote: tuple[int, ...] | None = None,
    ) -> Replica:
        """This replica with some fields replaced. ``alive`` and ``fence`` are not among
        them: only a crash or a restart changes those, and each builds a new ``Replica``."""
        return Replica(
            self.log if log is None else log,
            self.hw if hw is None else hw,
            self.epoch if epoch is None else epoch,
            self.leader if leader is None else leader,
            self.isr if isr is None else isr,
            self.flushed if flushed is None else flushed,
            self.alive,
            self.fence,
            self.remote if remote is None else remote,
        )

    def key(self) -> tuple[Any, ...]:
        return (
            self.log,
            self.hw,
            self.epoch,
            self.leader,
            tuple(sorted(self.isr)),
            self.flushed,
            self.alive,
            self.fence,
            self.remote,
        )


@attrs.frozen(slots=True, cache_hash=True)
class Write:
    """Ghost: an acknowledged write, and the acks setting it was acknowledged under."""

    offset: int
    """The offset the producer was told the record went to."""
    id: int
    """The record's unique id."""
    acks: str
    """The producer's ``acks`` setting: ``"1"`` or ``"all"``."""


@attrs.frozen(slots=True, cache_hash=True)
class Pending:
    """Ghost: an acks=all write waiting in the leader's produce purgatory for the HW."""

    leader: int
    """The leader that appended the record and holds the producer's request."""
    offset: int
    """The offset it was appended at; acknowledged once the leader's HW passes it."""
    id: int
    """The record's unique id."""


@attrs.frozen(slots=True, cache_hash=True)
class State:
    """One partition: every replica's log and view, the controller's quorum state, and the
    LeaderAndIsr requests sent so far."""

    replicas: tuple[Replica, ...]
    """``replicas[i]`` is replica ``i + 1``."""
    quorum: Quorum
    """The controller's partition state (ZooKeeper's partition znode, KRaft's record)."""
    requests: frozenset[Quorum]
    """Every LeaderAndIsr request the controller sent; any may be delivered at any time,
    again or never."""
    next_record_id: int
    """The id the next produced record gets (bounded by ``Params.max_records``)."""
    next_epoch: int
    """The leader epoch the controller hands out next (bounded by ``Params.max_epoch``)."""
    crashes: int = 0
    """Crashes so far (the fault budget ``Params.max_crashes``)."""
    acked: frozenset[Write] = frozenset()
    """Ghost: every write acknowledged to a producer."""
    pending: frozenset[Pending] = frozenset()
    """Ghost: every acks=all write waiting in a leader's produce purgatory."""

    def rep(self, r: int) -> Replica:
        return self.replicas[r - 1]

    def evolve(self, **changes: Any) -> State:
        """This state with some fields replaced (a fast ``attrs.evolve`` for the hot path)."""
        return State(
            changes.get("replicas", self.replicas),
            changes.get("quorum", self.quorum),
            changes.get("requests", self.requests),
            changes.get("next_record_id", self.next_record_id),
            changes.get("next_epoch", self.next_epoch),
            changes.get("crashes", self.crashes),
            changes.get("acked", self.acked),
            changes.get("pending", self.pending),
        )

    def with_replica(self, r: int, new: Replica, **changes: Any) -> State:
        """This state with replica ``r`` replaced (and maybe other fields). The hottest
        copy of all: it builds the state itself rather than calling ``evolve``."""
        reps = list(self.replicas)
        reps[r - 1] = new
        return State(
            tuple(reps),
            changes.get("quorum", self.quorum),
            changes.get("requests", self.requests),
            changes.get("next_record_id", self.next_record_id),
            changes.get("next_epoch", self.next_epoch),
            changes.get("crashes", self.crashes),
            changes.get("acked", self.acked),
            changes.get("pending", self.pending),
        )
