"""Kafka's request and response values, and the effects a state machine hands back.

Every request a broker, the controller or a client sends is a frozen ``@message`` value
(``impl.messages``): immutable once sent, equal by content, described the same way in every
process. The names follow Kafka's protocol (``LeaderAndIsr``, ``Fetch``,
``OffsetsForLeaderEpoch``, ``AlterPartition``, ``Produce``, ``Metadata``) and broker
registration and heartbeats as KRaft has them (``BrokerRegistration``,
``BrokerHeartbeat``); fields are those the replication protocol uses, nothing more.

Error codes are Kafka's (``Errors``), and mean what Kafka's mean:

- ``NOT_LEADER_OR_FOLLOWER``: the broker does not lead the partition (produce, fetch,
  OffsetsForLeaderEpoch) -- the client refreshes its metadata and retries;
- ``FENCED_LEADER_EPOCH`` / ``UNKNOWN_LEADER_EPOCH`` (KIP-320): the request carries a leader
  epoch older / newer than the broker's; nothing is changed;
- ``OFFSET_OUT_OF_RANGE``: a fetch offset past the leader's log end;
- ``NOT_ENOUGH_REPLICAS`` (before the append) and ``NOT_ENOUGH_REPLICAS_AFTER_APPEND`` (the
  ISR shrank below ``min.insync.replicas`` while an acks=all write waited);
- ``STALE_BROKER_EPOCH`` (KIP-380), ``STALE_CONTROLLER_EPOCH``: fencing of requests meant for
  an earlier incarnation of a broker, or sent by an earlier controller;
- ``OUT_OF_ORDER_SEQUENCE_NUMBER`` / ``INVALID_PRODUCER_EPOCH`` (KIP-98, idempotent
  producer): a batch whose sequence does not follow the producer's last one on the leader,
  or whose producer epoch is older than the newest the leader has seen; nothing is
  appended. A *duplicate* batch (the same producer, epoch and sequences as one of the last
  five) is answered NONE with the offset of the original (the DUPLICATE_SEQUENCE semantics
  of Kafka >= 1.0), see ``impl.producer_state``;
- ``INVALID_UPDATE_VERSION`` / ``FENCED_LEADER_EPOCH`` on AlterPartition (KIP-497): the ISR
  change is conditional on the partition epoch and the leader epoch.

``Effects`` is what ``step``/``tick`` of a state machine return: messages to send and
*notes*, observations the simulated world records (a record appended, a write
acknowledged). The machine never performs I/O itself, except through the log's file system
object it was handed.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from impl.messages import Message, message

__all__ = [
    "ANY_EPOCH",
    "CONSUMER_ID",
    "EPOCH_DURING_DELETE",
    "NO_LEADER",
    "Acked",
    "AlterPartition",
    "AlterPartitionResponse",
    "Appended",
    "BecameLeader",
    "BrokerHeartbeat",
    "BrokerHeartbeatResponse",
    "BrokerRegistration",
    "BrokerRegistrationResponse",
    "ControlledShutdown",
    "ControlledShutdownResponse",
    "ControllerElected",
    "ControllerResigned",
    "Effects",
    "Errors",
    "Fetch",
    "FetchResponse",
    "InitProducerId",
    "InitProducerIdResponse",
    "IsrChanged",
    "LeaderAndIsr",
    "LeaderAndIsrResponse",
    "MetadataRequest",
    "MetadataResponse",
    "OffsetsForLeaderEpoch",
    "OffsetsForLeaderEpochResponse",
    "PartitionMetadata",
    "Produce",
    "ProduceFailed",
    "ProduceResponse",
    "Published",
    "RequestFailed",
    "SessionExpired",
    "ShutdownReady",
    "StaleControllerRequest",
    "StopReplica",
    "StopReplicaResponse",
    "Truncated",
]

NO_LEADER = -1
"""The leader field of a partition without a leader (Kafka writes -1)."""
ANY_EPOCH = -1
"""``current_leader_epoch`` of a request that asks for no epoch check (before KIP-320)."""
CONSUMER_ID = -1
"""``replica_id`` of a consumer's fetch (Kafka's ``CONSUMER_REPLICA_ID``)."""
EPOCH_DURING_DELETE = -2
"""The leader epoch of a StopReplica that deletes a topic's replica whatever epoch it is in
(KIP-570's ``LeaderAndIsr.EpochDuringDelete``)."""


class Errors(enum.Enum):
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    UNKNOWN_TOPIC_OR_PARTITION = 3
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    STALE_CONTROLLER_EPOCH = 11
    NOT_CONTROLLER = 41
    NETWORK_EXCEPTION = 13
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_PRODUCER_EPOCH = 47
    KAFKA_STORAGE_ERROR = 56
    REASSIGNMENT_IN_PROGRESS = 60
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    STALE_BROKER_EPOCH = 77
    NO_REASSIGNMENT_IN_PROGRESS = 85
    INVALID_UPDATE_VERSION = 95
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INELIGIBLE_REPLICA = 107
    TOPIC_ALREADY_EXISTS = 36
    TOPIC_DELETION_DISABLED = 73

    @property
    def retriable(self) -> bool:
        return self in _RETRIABLE


_RETRIABLE = frozenset(
    {
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.REQUEST_TIMED_OUT,
        Errors.NETWORK_EXCEPTION,
        Errors.NOT_ENOUGH_REPLICAS,
        Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.OFFSET_OUT_OF_RANGE,
    }
)


def _int_list(value: Any) -> tuple[int, ...]:
    return tuple(value)


def _int_set(value: Any) -> frozenset[int]:
    return frozenset(value)


# --- controller -> broker --------------------------------------------------------------


@message
class LeaderAndIsr(Message):
    """The controller's decision for one partition, sent to each of its live replicas:
    who leads in which leader epoch, with which ISR. ``broker_epoch`` is the recipient's
    registration as the controller knew it (KIP-380): a restarted broker rejects requests
    meant for its previous incarnation."""

    controller_epoch: int
    broker_epoch: int
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: frozenset[int] = attrs.field(converter=_int_set)
    partition_epoch: int
    replicas: tuple[int, ...] = attrs.field(converter=_int_list)

    def __attrs_post_init__(self) -> None:
        if self.leader != NO_LEADER and self.leader not in self.isr:
            raise ValueError(f"LeaderAndIsr: leader {self.leader} is not in ISR {self.isr}")
        if not self.isr <= frozenset(self.replicas):
            raise ValueError(f"LeaderAndIsr: ISR {self.isr} outside replicas {self.replicas}")

    @property
    def quorum_key(self) -> tuple[int, int, frozenset[int]]:
        """What the replication spec calls the request: (leader epoch, leader, ISR)."""
        return (self.leader_epoch, self.leader, self.isr)


@message
class LeaderAndIsrResponse(Message):
    """A broker's answer to a LeaderAndIsr: ``NONE`` once applied (or found already
    applied), ``STALE_BROKER_EPOCH`` when meant for an earlier registration (KIP-380),
    ``STALE_CONTROLLER_EPOCH`` when from an older controller. Any answer ends the
    controller's retries of that request (``RequestSendThread`` retries a request until it
    is answered or the broker leaves the live set)."""

    broker_id: int
    controller_epoch: int
    topic: str
    partition: int
    leader_epoch: int
    error: Errors


# --- replication between brokers ---------------------------------------------------------


@message
class Fetch(Message):
    """A fetch from ``fetch_offset`` by a follower (``replica_id``) or a consumer
    (``CONSUMER_ID``). ``current_leader_epoch`` is KIP-320's (``ANY_EPOCH``: not checked);
    ``max_bytes`` bounds the response (the first batch is always returned whole, KIP-74)."""

    replica_id: int
    broker_epoch: int
    topic: str
    partition: int
    fetch_offset: int
    current_leader_epoch: int
    max_bytes: int
    fetch_id: int
    max_wait_ns: int = 0


@message
class FetchResponse(Message):
    topic: str
    partition: int
    error: Errors
    fetch_id: int
    fetch_offset: int
    high_watermark: int
    log_end_offset: int
    records: bytes = b""
    log_start_offset: int = 0
    """The leader's log start offset (KIP-107's ``log_start_offset``): a fetch below it is
    OFFSET_OUT_OF_RANGE, and the fetcher restarts there (retention deleted the rest)."""


@message
class OffsetsForLeaderEpoch(Message):
    """KIP-101/279: "where does ``leader_epoch`` end in your log?". With KIP-320 it carries
    the requester's ``current_leader_epoch`` and the leader validates it first."""

    replica_id: int
    topic: str
    partition: int
    current_leader_epoch: int
    leader_epoch: int
    request_id: int


@message
class OffsetsForLeaderEpochResponse(Message):
    topic: str
    partition: int
    error: Errors
    request_id: int
    leader_epoch: int
    end_offset: int


# --- broker -> controller ----------------------------------------------------------------


@message
class AlterPartition(Message):
    """KIP-497: the leader asks the controller to change the ISR, conditionally on the
    leader epoch and the partition epoch (ZooKeeper's znode version)."""

    broker_id: int
    broker_epoch: int
    topic: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: frozenset[int] = attrs.field(converter=_int_set)
    request_id: int


@message
class AlterPartitionResponse(Message):
    topic: str
    partition: int
    error: Errors
    request_id: int
    leader: int
    leader_epoch: int
    isr: frozenset[int] = attrs.field(converter=_int_set)
    partition_epoch: int


@message
class BrokerRegistration(Message):
    broker_id: int
    incarnation: int


@message
class BrokerRegistrationResponse(Message):
    error: Errors
    broker_epoch: int
    controller_epoch: int


@message
class BrokerHeartbeat(Message):
    broker_id: int
    broker_epoch: int


@message
class BrokerHeartbeatResponse(Message):
    error: Errors
    broker_epoch: int


# --- clients -------------------------------------------------------------------------------


@message
class InitProducerId(Message):
    """An idempotent producer asks for its producer id and epoch (KIP-98's
    ``InitProducerIdRequest``; no ``transactional.id``)."""

    client: str
    request_id: int


@message
class InitProducerIdResponse(Message):
    error: Errors
    request_id: int
    producer_id: int
    producer_epoch: int


@message
class ControlledShutdown(Message):
    """A broker shutting down asks the controller to move its leaderships off first
    (``ControlledShutdownRequest``, ``controlled.shutdown.enable``)."""

    broker_id: int
    broker_epoch: int
    request_id: int


@message
class ControlledShutdownResponse(Message):
    """``remaining``: how many partitions the broker still leads or is in the ISR of; 0
    means it may stop."""

    error: Errors
    request_id: int
    remaining: int


@message
class ShutdownReady(Message):
    """Note: broker ``broker_id`` finished its controlled shutdown (or gave up after
    ``controlled.shutdown.max.retries``); the world flushes its logs and stops it."""

    broker_id: int
    moved: bool


@message
class StopReplica(Message):
    """The controller tells a broker to stop being a replica of a partition, and with
    ``delete`` to delete its log (``StopReplicaRequest``): sent to the replicas a KIP-455
    reassignment removed and to every replica of a deleted topic. ``leader_epoch`` is the
    partition's leader epoch when the controller decided (KIP-570): a replica already in a
    newer epoch ignores it; ``EPOCH_DURING_DELETE`` stops it whatever its epoch."""

    controller_epoch: int
    broker_epoch: int
    topic: str
    partition: int
    leader_epoch: int
    delete: bool


@message
class StopReplicaResponse(Message):
    """A broker's answer to StopReplica: ``NONE`` once the replica is gone (and its log
    deleted, when asked), ``FENCED_LEADER_EPOCH`` when the replica is in a newer epoch."""

    broker_id: int
    topic: str
    partition: int
    error: Errors


@message
class Produce(Message):
    """A producer's batch for one partition. ``acks``: 0, 1 or -1 (all).

    An idempotent producer (KIP-98) also sends its ``producer_id``, ``producer_epoch`` and
    the ``base_sequence`` of the batch's first record in this partition; Kafka carries them
    in the record batch's header, and so does the leader's log here (``impl.log.batch``,
    inside what the CRC-32C covers). -1 everywhere: not idempotent."""

    client: str
    request_id: int
    topic: str
    partition: int
    acks: int
    records: tuple[tuple[bytes | None, bytes | None], ...]
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1

    def __attrs_post_init__(self) -> None:
        if self.acks not in (0, 1, -1):
            raise ValueError(f"Produce.acks must be 0, 1 or -1 (all), got {self.acks}")
        if not self.records:
            raise ValueError("Produce carries at least one record")
        idempotent = (self.producer_id >= 0, self.producer_epoch >= 0, self.base_sequence >= 0)
        if any(idempotent) and not all(idempotent):
            raise ValueError(
                "Produce: an idempotent batch carries a producer id, a producer epoch and a "
                f"base sequence, all >= 0; got {self.producer_id}, {self.producer_epoch}, "
                f"{self.base_sequence}"
            )

    @property
    def idempotent(self) -> bool:
        return self.producer_id >= 0


@message
class ProduceResponse(Message):
    request_id: int
    topic: str
    partition: int
    error: Errors
    base_offset: int = -1


@message
class MetadataRequest(Message):
    topic: str
    request_id: int


@message
class PartitionMetadata(Message):
    partition: int
    leader: int
    leader_epoch: int
    isr: frozenset[int] = attrs.field(converter=_int_set)


@message
class MetadataResponse(Message):
    topic: str
    request_id: int
    partitions: tuple[PartitionMetadata, ...]


@message
class RequestFailed(Message):
    """Handed to a node by its own network layer: the request it sent could not be
    delivered, or its connection was lost before the response (a ``NetworkException``)."""

    request: Any


# --- notes: observations for the world -------------------------------------------------


@message
class Appended(Message):
    """A leader appended a producer's records at ``base_offset..`` in ``leader_epoch``."""

    broker: int
    topic: str
    partition: int
    leader_epoch: int
    base_offset: int
    count: int
    acks: int


@message
class Acked(Message):
    """A leader acknowledged a write (acks=1 on append, acks=all when the HW passed it)."""

    broker: int
    topic: str
    partition: int
    leader_epoch: int
    base_offset: int
    count: int
    acks: int


@message
class Published(Message):
    """The controller wrote a new leader and epoch for a partition and sent it as
    LeaderAndIsr to the live replicas (the replication spec's ``requests``)."""

    topic: str
    partition: int
    leader_epoch: int
    leader: int
    isr: frozenset[int] = attrs.field(converter=_int_set)
    elr: frozenset[int] = attrs.field(default=frozenset(), converter=_int_set)
    """KIP-966's Eligible Leader Replicas after the change (empty with ELR off)."""


@message
class IsrChanged(Message):
    """The controller accepted a leader's ISR change (AlterPartition, KIP-497): no new leader
    epoch, no LeaderAndIsr."""

    topic: str
    partition: int
    leader_epoch: int
    leader: int
    isr: frozenset[int] = attrs.field(converter=_int_set)
    elr: frozenset[int] = attrs.field(default=frozenset(), converter=_int_set)
    """KIP-966's Eligible Leader Replicas after the change (empty with ELR off)."""


@message
class SessionExpired(Message):
    """The coordination store let a broker's session expire (``zookeeper.session.timeout.ms``
    without a heartbeat, on the store's monotonic clock: a dead, paused or cut-off broker,
    or a false suspicion). Its ephemeral ``/brokers/ids/N`` goes, and ``/controller`` with
    it if the broker held it."""

    broker: int


@message
class ControllerElected(Message):
    """Broker ``broker`` created ``/controller`` and set ``/controller_epoch`` to ``epoch``
    (``KafkaZkClient.registerControllerAndIncrementControllerEpoch``)."""

    broker: int
    epoch: int


@message
class ControllerResigned(Message):
    """A controller learnt it no longer is one (``onControllerResignation``): its write was
    refused (``moved``: BADVERSION on ``/controller_epoch``, ``ControllerMovedException``)
    or it found its session expired when it reconnected (``session``)."""

    broker: int
    epoch: int
    reason: str


@message
class StaleControllerRequest(Message):
    """Broker ``broker`` got a LeaderAndIsr from controller epoch ``controller_epoch``, older
    than the ``seen`` one it had applied: rejected with STALE_CONTROLLER_EPOCH, or, with
    the broker-side fence off (``accept_stale_controller_epoch``), ``applied``."""

    broker: int
    controller_epoch: int
    seen: int
    applied: bool


@message
class BecameLeader(Message):
    """A replica took the leadership of a partition (``Partition.makeLeader``), with the log
    it had then."""

    broker: int
    topic: str
    partition: int
    leader_epoch: int
    log_end_offset: int
    high_watermark: int


@message
class Truncated(Message):
    """A follower cut its log (by the truncation rule, to match its leader)."""

    broker: int
    topic: str
    partition: int
    leader_epoch: int
    leader: int
    from_offset: int
    """The log end offset before the cut."""
    to_offset: int
    """The log end offset after it."""


@message
class Reconciled(Message):
    """A follower finished reconciling its log with its leader's (the truncation phase of
    ``makeFollower``, by the truncation rule: KIP-101, KIP-279 or KIP-320), cut or not;
    it fetches from ``log_end_offset`` on. Every record below it is meant to be the
    leader's: the simulated world checks that (``impl.timeline.Divergence``)."""

    broker: int
    topic: str
    partition: int
    leader_epoch: int
    leader: int
    log_end_offset: int


@message
class ProduceFailed(Message):
    """A leader failed a parked acks=all write (it stopped leading, or the ISR shrank below
    ``min.insync.replicas``)."""

    broker: int
    topic: str
    partition: int
    base_offset: int
    error: Errors


@attrs.define
class Effects:
    """What one ``step`` or ``tick`` of a state machine asks the world to do."""

    sends: list[tuple[str, Message]] = attrs.Factory(list)
    notes: list[Message] = attrs.Factory(list)

    def send(self, dst: str, msg: Message) -> None:
        self.sends.append((dst, msg))

    def note(self, msg: Message) -> None:
        self.notes.append(msg)

    def extend(self, other: Effects) -> Effects:
        self.sends.extend(other.sends)
        self.notes.extend(other.notes)
        return self

    def __bool__(self) -> bool:
        return bool(self.sends or self.notes)
