"""Clients: a producer and a consumer, as sans-I/O state machines (Kafka's Java clients,
reduced to what replication safety depends on).

**Producer** (``KafkaProducer``): each ``send`` picks a partition with the Java client's
default partitioner (``impl.partitioner``: murmur2 of the key, round-robin without one),
and goes to that partition's leader as its metadata says, one record per request, at most
``max_in_flight`` requests at a time. ``acks``: 0 (fire and forget: the op is *info*, its
outcome unknown), 1 (the leader appended) or all (-1: the ISR has it). A retriable error
(NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, a timeout, ...) refreshes the metadata and
retries after ``retry.backoff.ms`` until ``delivery.timeout.ms``; a request unanswered for
``request.timeout.ms`` is retried too. An op that exhausts its delivery timeout after having
been sent ends *info* (it may have been written); one never sent ends *fail*.

Without idempotence (``enable.idempotence=false``, or Kafka before KIP-98) a retry is a new
write: if the first attempt was appended too, the record lands twice. With
``enable_idempotence`` (KIP-98; Kafka's default since 3.0, which requires acks=all and
``max.in.flight.requests.per.connection`` <= 5) the producer first gets a producer id and
epoch from ``InitProducerId`` (``impl.controller``), numbers the records it sends to each
partition from 0 -- a sequence is assigned when a record is first sent and kept by every
retry -- and the partition leader answers a retry of a batch it already has with the
original offset instead of appending it again (``impl.producer_state``). Kafka's KIP-360
rules for unresolved sequences: when a send that was sent expires, or is refused with
OUT_OF_ORDER_SEQUENCE_NUMBER, the producer bumps its epoch (on its own, without a request)
once nothing is in flight, and each partition starts again at sequence 0 in the new epoch
(a sequence gap would otherwise be refused forever). A request of the old epoch still in
the network is then refused as INVALID_PRODUCER_EPOCH by a leader that saw the new one.

**Consumer**: reads one partition from a position, from the leader, up to its high
watermark (Kafka gives consumers only committed records), with KIP-320's current leader
epoch on each fetch; each poll is an op whose result is the records and the HW the leader
reported. A failed poll is *fail* (reads change nothing).

Both keep a history of ops in the project's history format (``docs/history-format.md``): ``invoke``
then ``ok``/``fail``/``info``, timed on the logical clock. A producer may have several
sends outstanding (queued behind the one in flight), so each send is its own process
(``"p1/7"``: producer p1's op 7), which keeps Jepsen's rule that a process runs one op at a
time; a consumer polls one at a time and is one process.

What a history cannot say, the clients record for whoever drives them (a workload that must
tell "definitely not written" from "unknown", as Jepsen's Kafka client does): ``send``
returns the op's ``Send`` record, which lists every ``SendAttempt`` -- each Produce request
the producer sent for it, and how that request ended (answered, and with which error; timed
out; its connection failed; or, with acks=0, never to be answered). A consumer's polls are
driven with ``seek``, ``poll``, ``busy`` and ``give_up_polls`` (a poll still waiting for a
leader it cannot find).
"""

from __future__ import annotations

import collections
import enum
import random
from typing import Any

import attrs

from impl.controller import CONTROLLER, broker_node
from impl.log import decode
from impl.log.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, batch_end
from impl.partitioner import RoundRobinPartitioner
from impl.producer_state import NUM_BATCHES_TO_RETAIN, increment_sequence
from impl.protocol import (
    ANY_EPOCH,
    CONSUMER_ID,
    NO_LEADER,
    Effects,
    Errors,
    Fetch,
    FetchResponse,
    InitProducerId,
    InitProducerIdResponse,
    MetadataRequest,
    MetadataResponse,
    Produce,
    ProduceResponse,
    RequestFailed,
)

__all__ = [
    "AttemptEnd",
    "Consumer",
    "ConsumerConfig",
    "Producer",
    "ProducerConfig",
    "Send",
    "SendAttempt",
    "acks_value",
    "decode_records",
]

_DECODED: dict[bytes, tuple[tuple[int, bytes | None], ...]] = {}
_DECODED_MAX = 65_536


def decode_records(data: bytes) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record of a fetch response's batches, each batch decoded
    and CRC-checked (``impl.log.decode``). Decoding is a pure function of a batch's bytes,
    and in a simulation every consumer reads the same batches: results are memoized per
    batch (bounded), which changes the speed of a run, never its outcome."""
    result: list[tuple[int, bytes | None]] = []
    position = 0
    while position < len(data):
        end = batch_end(data, position)
        chunk = data[position:end]
        records = _DECODED.get(chunk)
        if records is None:
            batch, _ = decode(chunk)
            records = tuple((o, r.value) for o, r in batch.offsets_and_records())
            if len(_DECODED) >= _DECODED_MAX:
                _DECODED.clear()
            _DECODED[chunk] = records
        result.extend(records)
        position = end
    return result


def acks_value(acks: str | int) -> int:
    """``"0"``, ``"1"``, ``"all"`` (or the ints) as the protocol's 0, 1, -1."""
    table = {"0": 0, "1": 1, "all": -1, "-1": -1}
    if str(acks) not in table:
        raise ValueError(f"acks must be 0, 1 or all, got {acks!r}")
    return table[str(acks)]


@attrs.frozen
class ProducerConfig:
    acks: int = -1
    request_timeout_ns: int = 30_000_000_000
    delivery_timeout_ns: int = 120_000_000_000
    retry_backoff_ns: int = 100_000_000
    max_in_flight: int = 1
    max_queued: int = 10_000
    enable_idempotence: bool = False
    """``enable.idempotence`` (KIP-98). Kafka's default is true since 3.0; this class leaves
    the default to its callers (``impl.world.ClusterConfig`` turns it on with acks=all)."""

    def __attrs_post_init__(self) -> None:
        if self.enable_idempotence and self.acks != -1:
            raise ValueError(
                f"enable_idempotence needs acks=all (-1), got acks={self.acks}: Kafka refuses "
                "it too ('Must set acks to all in order to use the idempotent producer'); "
                "turn idempotence off for acks 0 or 1"
            )
        if self.enable_idempotence and not 1 <= self.max_in_flight <= NUM_BATCHES_TO_RETAIN:
            raise ValueError(
                f"enable_idempotence needs max_in_flight in 1..{NUM_BATCHES_TO_RETAIN}, got "
                f"{self.max_in_flight}: a leader remembers a producer's last "
                f"{NUM_BATCHES_TO_RETAIN} batches only"
            )


class AttemptEnd(enum.Enum):
    """How one Produce request of a send ended, as the producer saw it."""

    IN_FLIGHT = "in-flight"
    """Sent; no answer yet."""
    ANSWERED = "answered"
    """The leader answered: ``SendAttempt.error`` says with what (``Errors.NONE``: written)."""
    TIMED_OUT = "timed-out"
    """No answer within ``request.timeout.ms``: the producer retried without waiting more."""
    DISCONNECTED = "disconnected"
    """The connection failed before an answer came (``RequestFailed``)."""
    NOT_AWAITED = "not-awaited"
    """acks=0: the leader answers nothing, and the producer waits for nothing."""


@attrs.define
class SendAttempt:
    """One Produce request a producer sent for a send: to which broker, when, and how it
    ended. Read-only for anyone but the producer."""

    request_id: int
    broker: str
    sent_at: int
    """The producer's clock when it went out."""
    end: AttemptEnd = AttemptEnd.IN_FLIGHT
    error: Errors | None = None
    """The error code of the answer (``end`` ANSWERED); None when no answer came."""


@attrs.define
class Send:
    """One send op of a producer: the record, where it goes, and every attempt so far.
    ``Producer.send`` returns it; only the producer changes it."""

    op: int
    process: str
    key: bytes | None
    value: bytes
    partition: int
    invoked_at: int
    attempts: list[SendAttempt] = attrs.Factory(list)
    """Each Produce request sent for this op, oldest first; at most the last is in flight."""
    next_try_at: int = 0
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    sequence: int = NO_SEQUENCE
    """Idempotence: the producer id, epoch and sequence of its first attempt, kept by
    every retry."""


class Producer:
    """One producer client (node ``name``), writing to ``topic``."""

    def __init__(
        self,
        name: str,
        topic: str,
        num_partitions: int,
        config: ProducerConfig,
        rng: random.Random,
    ) -> None:
        self.name = name
        self.topic = topic
        self.num_partitions = num_partitions
        self.config = config
        self.partitioner = RoundRobinPartitioner(rng)
        self.leaders: dict[int, int] = {}
        self.queue: collections.deque[Send] = collections.deque()
        """Sends waiting to go out (a retry goes back to the front)."""
        self.in_flight: dict[int, Send] = {}
        """Request id -> the send whose last attempt that request is."""
        self.next_request_id = 0
        self.next_op = 0
        self.metadata_in_flight_since: int | None = None
        self.metadata_request_id = -1
        """The request id of the one metadata request in flight (``NetworkClient`` sends
        one at a time and matches responses by correlation id): a duplicated or late
        response does not end it, else each copy would start another request, and under
        message duplication the requests would multiply without end."""
        self.history: list[dict[str, Any]] = []
        self.stats = collections.Counter[str]()
        # Idempotence (KIP-98, KIP-360):
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.init_request_id = -1
        self.next_init_at = 0
        """When InitProducerId may be sent (again)."""
        self.sequences: dict[int, tuple[int, int]] = {}
        """partition -> (producer epoch, next sequence) of the records sent to it."""
        self.epoch_bump_required = False
        """A sent record's outcome is unresolved: bump the epoch once nothing is in flight."""

    # ------------------------------------------------------------------ API

    def send(self, key: bytes | None, value: bytes, now: int) -> Send:
        """Queue a record; returns its op's record, whose ``attempts`` the producer fills in
        as it sends. Raises if the queue is full (``buffer.memory`` exhausted)."""
        if len(self.queue) + len(self.in_flight) >= self.config.max_queued:
            raise OverflowError(f"{self.name}: {self.config.max_queued} sends pending")
        op = self.next_op
        self.next_op += 1
        partition = self.partitioner.partition(self.topic, key, self.num_partitions)
        send = Send(op, f"{self.name}/{op}", key, value, partition, now)
        self.queue.append(send)
        self.history.append(
            {
                "time": now,
                "process": send.process,
                "type": "invoke",
                "f": "send",
                "key": f"{self.topic}-{partition}",
                "value": value.decode(errors="replace"),
            }
        )
        return send

    @property
    def pending(self) -> int:
        return len(self.queue) + len(self.in_flight)

    # ------------------------------------------------------------------ internals

    def _complete(self, send: Send, kind: str, now: int, value: Any) -> None:
        self.history.append(
            {
                "time": now,
                "process": send.process,
                "type": kind,
                "f": "send",
                "key": f"{self.topic}-{send.partition}",
                "value": value,
            }
        )
        self.stats[kind] += 1

    def _request_metadata(self, now: int, out: Effects) -> None:
        if self.metadata_in_flight_since is not None and (
            now - self.metadata_in_flight_since < self.config.request_timeout_ns
        ):
            return
        self.metadata_in_flight_since = now
        self.next_request_id += 1
        self.metadata_request_id = self.next_request_id
        out.send(CONTROLLER, MetadataRequest(self.topic, self.next_request_id))

    def step(self, src: str, msg: object, now: int) -> Effects:
        out = Effects()
        if isinstance(msg, MetadataResponse):
            if msg.request_id == self.metadata_request_id:
                # Only the answer to the request in flight lets another one go; a duplicate
                # or late copy still tells where the leaders are.
                self.metadata_in_flight_since = None
                self.metadata_request_id = -1
            self.leaders = {p.partition: p.leader for p in msg.partitions}
        elif isinstance(msg, ProduceResponse):
            send = self.in_flight.pop(msg.request_id, None)
            if send is not None:
                self._ended(send, msg.request_id, AttemptEnd.ANSWERED, msg.error)
                if msg.error is Errors.NONE:
                    self._complete(
                        send,
                        "ok",
                        now,
                        {"offset": msg.base_offset, "value": send.value.decode(errors="replace")},
                    )
                elif msg.error.retriable:
                    self._retry(send, now, out)
                elif msg.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER and self._follows(send):
                    # An earlier sequence of the partition is still pending: this one can
                    # only be appended after it (Kafka's TransactionManager.canRetry).
                    self._retry(send, now, out)
                else:
                    if msg.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER:
                        self.epoch_bump_required = True
                    self._complete(send, "info", now, send.value.decode(errors="replace"))
        elif isinstance(msg, InitProducerIdResponse):
            if msg.request_id == self.init_request_id and self.producer_id == NO_PRODUCER_ID:
                if msg.error is Errors.NONE:
                    self.producer_id, self.producer_epoch = msg.producer_id, msg.producer_epoch
                    self.sequences.clear()
                    self.epoch_bump_required = False
                else:
                    self.next_init_at = now + self.config.retry_backoff_ns
        elif isinstance(msg, RequestFailed) and isinstance(msg.request, Produce):
            send = self.in_flight.pop(msg.request.request_id, None)
            if send is not None:
                self._ended(send, msg.request.request_id, AttemptEnd.DISCONNECTED)
                self._retry(send, now, out)
        elif (
            isinstance(msg, RequestFailed)
            and isinstance(msg.request, InitProducerId)
            and msg.request.request_id == self.init_request_id
        ):
            self.next_init_at = now + self.config.retry_backoff_ns
        return self.pump(now, out)

    @staticmethod
    def _ended(send: Send, request_id: int, end: AttemptEnd, error: Errors | None = None) -> None:
        """Record how the attempt in flight (request ``request_id``) ended."""
        attempt = send.attempts[-1]
        assert attempt.request_id == request_id and attempt.end is AttemptEnd.IN_FLIGHT, (
            attempt,
            request_id,
        )
        attempt.end, attempt.error = end, error

    # ------------------------------------------------------------------ idempotence

    def _follows(self, send: Send) -> bool:
        """Whether another pending send of the same partition and epoch has an earlier
        sequence (so ``send``'s OUT_OF_ORDER_SEQUENCE_NUMBER is only a matter of order)."""
        pending = [*self.queue, *self.in_flight.values()]
        return any(
            s is not send
            and s.partition == send.partition
            and (s.producer_id, s.producer_epoch) == (send.producer_id, send.producer_epoch)
            and 0 <= s.sequence < send.sequence
            for s in pending
        )

    def _idempotence_ready(self, now: int, out: Effects) -> bool:
        """Whether sends may go: a producer id is known, and an epoch bump that was due has
        been made (KIP-360: the producer bumps its own epoch once nothing is in flight)."""
        if self.producer_id == NO_PRODUCER_ID:
            if now >= self.next_init_at:
                self.next_request_id += 1
                self.init_request_id = self.next_request_id
                self.next_init_at = now + self.config.request_timeout_ns
                out.send(CONTROLLER, InitProducerId(self.name, self.init_request_id))
            return False
        if self.epoch_bump_required:
            if self.in_flight:
                return False
            self.epoch_bump_required = False
            self.stats["epoch_bumps"] += 1
            if self.producer_epoch == 2**15 - 1:
                # The epoch is an int16: start over with a new producer id.
                self.producer_id = self.producer_epoch = NO_PRODUCER_ID
                return self._idempotence_ready(now, out)
            self.producer_epoch += 1
        return True

    def _assign_sequence(self, send: Send) -> bool:
        """Give a record sent for the first time the next sequence of its partition; False
        when the partition must first drain requests of an older epoch
        (``TransactionManager.maybeUpdateProducerIdAndEpoch``)."""
        epoch, sequence = self.sequences.get(send.partition, (self.producer_epoch, 0))
        if epoch != self.producer_epoch:
            if any(s.partition == send.partition for s in self.in_flight.values()):
                return False
            epoch, sequence = self.producer_epoch, 0
        send.producer_id, send.producer_epoch, send.sequence = self.producer_id, epoch, sequence
        self.sequences[send.partition] = (epoch, increment_sequence(sequence, 1))
        return True

    def _retry(self, send: Send, now: int, out: Effects) -> None:
        self.stats["retries"] += 1
        self.leaders.pop(send.partition, None)
        send.next_try_at = now + self.config.retry_backoff_ns
        self.queue.appendleft(send)
        self._request_metadata(now, out)

    def tick(self, now: int) -> Effects:
        out = Effects()
        for request_id in sorted(self.in_flight):
            send = self.in_flight[request_id]
            if now - send.attempts[-1].sent_at > self.config.request_timeout_ns:
                del self.in_flight[request_id]
                self._ended(send, request_id, AttemptEnd.TIMED_OUT)
                self._retry(send, now, out)
        return self.pump(now, out)

    def pump(self, now: int, out: Effects | None = None) -> Effects:
        """Send what may be sent: the queue's head, while in-flight slots are free. Added
        to ``out`` (the effects of the step calling it), or to new effects."""
        out = Effects() if out is None else out
        while self.queue and len(self.in_flight) < self.config.max_in_flight:
            send = self.queue[0]
            if now - send.invoked_at > self.config.delivery_timeout_ns:
                self.queue.popleft()
                kind = "info" if send.attempts else "fail"
                if send.attempts and self.config.enable_idempotence:
                    # Its sequence may or may not be in the log: unresolved (KIP-360).
                    self.epoch_bump_required = True
                self._complete(send, kind, now, send.value.decode(errors="replace"))
                continue
            if now < send.next_try_at:
                break
            idempotent = self.config.enable_idempotence
            if idempotent and not self._idempotence_ready(now, out):
                break
            leader = self.leaders.get(send.partition, NO_LEADER)
            if leader == NO_LEADER:
                self._request_metadata(now, out)
                break
            if idempotent and send.sequence == NO_SEQUENCE and not self._assign_sequence(send):
                break
            self.queue.popleft()
            self.next_request_id += 1
            request = Produce(
                self.name,
                self.next_request_id,
                self.topic,
                send.partition,
                self.config.acks,
                ((send.key, send.value),),
                send.producer_id,
                send.producer_epoch,
                send.sequence,
            )
            dst = broker_node(leader)
            out.send(dst, request)
            attempt = SendAttempt(request.request_id, dst, now)
            send.attempts.append(attempt)
            if self.config.acks == 0:
                attempt.end = AttemptEnd.NOT_AWAITED
                self._complete(send, "info", now, send.value.decode(errors="replace"))
            else:
                self.in_flight[request.request_id] = send
        return out


@attrs.frozen
class ConsumerConfig:
    fetch_max_bytes: int = 1024 * 1024
    """``max.partition.fetch.bytes``."""
    fetch_max_wait_ns: int = 500_000_000
    """``fetch.max.wait.ms``: the leader holds a fetch at the HW this long."""
    request_timeout_ns: int = 30_000_000_000
    retry_backoff_ns: int = 100_000_000
    log_start_aware: bool = False
    """For a topic with retention: report the leader's log start offset (the fetch
    response's ``log_start_offset``, KIP-107) in every poll as ``"log_start"``, and after
    OFFSET_OUT_OF_RANGE below it move the position there (``auto.offset.reset=earliest``).
    Off: the history format without retention, unchanged."""


class Consumer:
    """Reads ``topic``'s ``partition`` from ``position`` (no group: an assigned consumer)."""

    def __init__(
        self, name: str, topic: str, partition: int, config: ConsumerConfig, process: int = 0
    ) -> None:
        self.name = name
        self.topic = topic
        self.partition = partition
        self.config = config
        self.process = process
        self.position = 0
        self.leader = NO_LEADER
        self.leader_epoch = ANY_EPOCH
        self.in_flight: tuple[Fetch, int] | None = None
        self.read_replica: int | None = None
        """The broker the next polls fetch from, when not the leader (KIP-392's preferred
        read replica: Kafka's leader names it from the consumer's ``client.rack``; here the
        caller does). A follower answers up to its own high watermark."""
        self.next_request_id = 0
        self.metadata_in_flight_since: int | None = None
        self.metadata_request_id = -1
        """The request id of the one metadata request in flight (``NetworkClient`` sends
        one at a time and matches responses by correlation id): a duplicated or late
        response does not end it, else each copy would start another request, and under
        message duplication the requests would multiply without end."""
        self.next_poll_at = 0
        self.wants_poll = 0
        self.history: list[dict[str, Any]] = []
        self.records: list[tuple[int, bytes | None]] = []
        self.stats = collections.Counter[str]()

    def poll(self, now: int) -> Effects:
        """Invoke one poll (queued if one is already running)."""
        self.wants_poll += 1
        return self.pump(now)

    def seek(self, offset: int) -> None:
        """Read from ``offset`` on (``KafkaConsumer.seek``): the next poll's fetch starts
        there. Only between polls: a fetch in flight was sent from the old position."""
        if offset < 0:
            raise ValueError(f"{self.name}: cannot seek to offset {offset}; offsets start at 0")
        if self.busy:
            raise ValueError(f"{self.name}: a poll is running; seek once it has completed")
        self.position = offset

    @property
    def busy(self) -> bool:
        """A poll is running: its fetch is in flight, or it waits to be sent."""
        return self.in_flight is not None or self.wants_poll > 0

    @property
    def fetching(self) -> bool:
        """A fetch is in flight (a poll whose outcome the leader or a timeout will give)."""
        return self.in_flight is not None

    def give_up_polls(self) -> int:
        """Drop the polls that wait to be sent because no leader is known (the controller is
        down or unreachable, so metadata never comes), as a caller's own poll timeout does;
        nothing was fetched for them, so nothing enters the history. A fetch in flight is
        not touched: ``request.timeout.ms`` ends it. Returns how many were dropped."""
        dropped, self.wants_poll = self.wants_poll, 0
        return dropped

    def _key(self) -> str:
        return f"{self.topic}-{self.partition}"

    def pump(self, now: int) -> Effects:
        out = Effects()
        if self.in_flight is not None or not self.wants_poll or now < self.next_poll_at:
            return out
        if self.leader == NO_LEADER:
            if self.metadata_in_flight_since is None or (
                now - self.metadata_in_flight_since > self.config.request_timeout_ns
            ):
                self.metadata_in_flight_since = now
                self.next_request_id += 1
                self.metadata_request_id = self.next_request_id
                out.send(CONTROLLER, MetadataRequest(self.topic, self.next_request_id))
            return out
        self.wants_poll -= 1
        self.next_request_id += 1
        fetch = Fetch(
            replica_id=CONSUMER_ID,
            broker_epoch=-1,
            topic=self.topic,
            partition=self.partition,
            fetch_offset=self.position,
            current_leader_epoch=self.leader_epoch,
            max_bytes=self.config.fetch_max_bytes,
            fetch_id=self.next_request_id,
            max_wait_ns=self.config.fetch_max_wait_ns,
        )
        self.in_flight = (fetch, now)
        self.history.append(
            {
                "time": now,
                "process": self.process,
                "type": "invoke",
                "f": "poll",
                "key": self._key(),
                "value": {"from": self.position},
            }
        )
        source = self.leader if self.read_replica is None else self.read_replica
        out.send(broker_node(source), fetch)
        return out

    def _fail(self, now: int, error: str, log_start: int | None = None) -> None:
        value: dict[str, Any] = {"from": self.position, "error": error}
        if log_start is not None:
            value["log_start"] = log_start
        self.history.append(
            {
                "time": now,
                "process": self.process,
                "type": "fail",
                "f": "poll",
                "key": self._key(),
                "value": value,
            }
        )
        self.stats["fail"] += 1
        self.in_flight = None
        self.leader = NO_LEADER
        self.next_poll_at = now + self.config.retry_backoff_ns

    def step(self, src: str, msg: object, now: int) -> Effects:
        if isinstance(msg, MetadataResponse):
            if msg.request_id == self.metadata_request_id:
                # Only the answer to the request in flight lets another one go; a duplicate
                # or late copy still tells where the leaders are.
                self.metadata_in_flight_since = None
                self.metadata_request_id = -1
            for p in msg.partitions:
                if p.partition == self.partition:
                    self.leader, self.leader_epoch = p.leader, p.leader_epoch
        elif isinstance(msg, FetchResponse):
            if self.in_flight is not None and msg.fetch_id == self.in_flight[0].fetch_id:
                if msg.error is not Errors.NONE:
                    aware = self.config.log_start_aware
                    self._fail(now, msg.error.name, msg.log_start_offset if aware else None)
                    if (
                        aware
                        and msg.error is Errors.OFFSET_OUT_OF_RANGE
                        and msg.log_start_offset > self.position
                    ):
                        self.position = msg.log_start_offset  # auto.offset.reset=earliest
                else:
                    position = self.position
                    got = [r for r in decode_records(msg.records) if r[0] >= position]
                    self.in_flight = None
                    self.history.append(
                        {
                            "time": now,
                            "process": self.process,
                            "type": "ok",
                            "f": "poll",
                            "key": self._key(),
                            "value": {
                                "records": [
                                    [o, (v or b"").decode(errors="replace")] for o, v in got
                                ],
                                "hw": msg.high_watermark,
                            },
                        }
                    )
                    if self.config.log_start_aware:
                        self.history[-1]["value"]["log_start"] = msg.log_start_offset
                    self.stats["ok"] += 1
                    self.records.extend(got)
                    if got:
                        self.position = got[-1][0] + 1
        elif (
            isinstance(msg, RequestFailed)
            and isinstance(msg.request, Fetch)
            and self.in_flight is not None
            and msg.request.fetch_id == self.in_flight[0].fetch_id
        ):
            self._fail(now, "NETWORK_EXCEPTION")
        return self.pump(now)

    def tick(self, now: int) -> Effects:
        if self.in_flight is not None and now - self.in_flight[1] > self.config.request_timeout_ns:
            self._fail(now, "REQUEST_TIMED_OUT")
        return self.pump(now)
