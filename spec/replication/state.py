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
    leader: int
    isr: frozenset[int]

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
    hw: int
    epoch: int
    leader: int
    isr: frozenset[int]
    flushed: int = 0
    alive: bool = True
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
    id: int
    acks: str


@attrs.frozen(slots=True, cache_hash=True)
class Pending:
    """Ghost: an acks=all write waiting in the leader's produce purgatory for the HW."""

    leader: int
    offset: int
    id: int


@attrs.frozen(slots=True, cache_hash=True)
class State:
    replicas: tuple[Replica, ...]
    """``replicas[i]`` is replica ``i + 1``."""
    quorum: Quorum
    requests: frozenset[Quorum]
    next_record_id: int
    next_epoch: int
    crashes: int = 0
    acked: frozenset[Write] = frozenset()
    pending: frozenset[Pending] = frozenset()

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
