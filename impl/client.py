"""Clients: a producer and a consumer, as sans-I/O state machines (Kafka's Java clients,
reduced to what replication safety depends on).

**Producer** (``KafkaProducer``): each ``send`` picks a partition with the Java client's
default partitioner (``impl.partitioner``: murmur2 of the key, round-robin without one),
and goes to that partition's leader as its metadata says, one record per request, at most
``max_in_flight`` requests at a time. ``acks``: 0 (fire and forget: the op is *info*, its
outcome unknown), 1 (the leader appended) or all (-1: the ISR has it). A retriable error
(NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, a timeout, ...) refreshes the metadata and
retries after ``retry.backoff.ms`` until ``delivery.timeout.ms``; a request unanswered for
``request.timeout.ms`` is retried too, so a write may land twice (this producer is not
idempotent, as Kafka's before KIP-98's idempotence, or with it disabled). An op that
exhausts its delivery timeout after having been sent ends *info* (it may have been written);
one never sent ends *fail*.

**Consumer**: reads one partition from a position, from the leader, up to its high
watermark (Kafka gives consumers only committed records), with KIP-320's current leader
epoch on each fetch; each poll is an op whose result is the records and the HW the leader
reported. A failed poll is *fail* (reads change nothing).

Both keep a history of ops in the project's history format (``DESIGN.md``): ``invoke``
then ``ok``/``fail``/``info``, timed on the logical clock. A producer may have several
sends outstanding (queued behind the one in flight), so each send is its own process
(``"p1/7"``: producer p1's op 7), which keeps Jepsen's rule that a process runs one op at a
time; a consumer polls one at a time and is one process.
"""

from __future__ import annotations

import collections
import random
from typing import Any

import attrs

from impl.controller import CONTROLLER, broker_node
from impl.log import decode
from impl.log.batch import read_header
from impl.partitioner import RoundRobinPartitioner
from impl.protocol import (
    ANY_EPOCH,
    CONSUMER_ID,
    NO_LEADER,
    Effects,
    Errors,
    Fetch,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    Produce,
    ProduceResponse,
    RequestFailed,
)

__all__ = [
    "Consumer",
    "ConsumerConfig",
    "Producer",
    "ProducerConfig",
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
        header = read_header(data, position)
        end = len(data) if header is None else min(len(data), position + header.size)
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


@attrs.define
class _Send:
    op: int
    process: str
    key: bytes | None
    value: bytes
    partition: int
    invoked_at: int
    attempts: int = 0
    next_try_at: int = 0


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
        self.queue: collections.deque[_Send] = collections.deque()
        self.in_flight: dict[int, tuple[_Send, int, str]] = {}
        self.next_request_id = 0
        self.next_op = 0
        self.metadata_in_flight_since: int | None = None
        self.history: list[dict[str, Any]] = []
        self.stats = collections.Counter[str]()

    # ------------------------------------------------------------------ API

    def send(self, key: bytes | None, value: bytes, now: int) -> int:
        """Queue a record; returns the op number. Raises if the queue is full
        (``buffer.memory`` exhausted)."""
        if len(self.queue) + len(self.in_flight) >= self.config.max_queued:
            raise OverflowError(f"{self.name}: {self.config.max_queued} sends pending")
        op = self.next_op
        self.next_op += 1
        partition = self.partitioner.partition(self.topic, key, self.num_partitions)
        send = _Send(op, f"{self.name}/{op}", key, value, partition, now)
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
        return op

    @property
    def pending(self) -> int:
        return len(self.queue) + len(self.in_flight)

    # ------------------------------------------------------------------ internals

    def _complete(self, send: _Send, kind: str, now: int, value: Any) -> None:
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
        out.send(CONTROLLER, MetadataRequest(self.topic, self.next_request_id))

    def step(self, src: str, msg: object, now: int) -> Effects:
        out = Effects()
        if isinstance(msg, MetadataResponse):
            self.metadata_in_flight_since = None
            self.leaders = {p.partition: p.leader for p in msg.partitions}
        elif isinstance(msg, ProduceResponse):
            entry = self.in_flight.pop(msg.request_id, None)
            if entry is not None:
                send, _, _ = entry
                if msg.error is Errors.NONE:
                    self._complete(
                        send,
                        "ok",
                        now,
                        {"offset": msg.base_offset, "value": send.value.decode(errors="replace")},
                    )
                elif msg.error.retriable:
                    self._retry(send, now, out)
                else:
                    self._complete(send, "info", now, send.value.decode(errors="replace"))
        elif isinstance(msg, RequestFailed) and isinstance(msg.request, Produce):
            entry = self.in_flight.pop(msg.request.request_id, None)
            if entry is not None:
                self._retry(entry[0], now, out)
        out.extend(self.pump(now))
        return out

    def _retry(self, send: _Send, now: int, out: Effects) -> None:
        self.stats["retries"] += 1
        self.leaders.pop(send.partition, None)
        send.next_try_at = now + self.config.retry_backoff_ns
        self.queue.appendleft(send)
        self._request_metadata(now, out)

    def tick(self, now: int) -> Effects:
        out = Effects()
        for request_id in sorted(self.in_flight):
            send, sent_at, _ = self.in_flight[request_id]
            if now - sent_at > self.config.request_timeout_ns:
                del self.in_flight[request_id]
                self._retry(send, now, out)
        out.extend(self.pump(now))
        return out

    def pump(self, now: int) -> Effects:
        """Send what may be sent: the queue's head, while in-flight slots are free."""
        out = Effects()
        while self.queue and len(self.in_flight) < self.config.max_in_flight:
            send = self.queue[0]
            if now - send.invoked_at > self.config.delivery_timeout_ns:
                self.queue.popleft()
                kind = "info" if send.attempts else "fail"
                self._complete(send, kind, now, send.value.decode(errors="replace"))
                continue
            if now < send.next_try_at:
                break
            leader = self.leaders.get(send.partition, NO_LEADER)
            if leader == NO_LEADER:
                self._request_metadata(now, out)
                break
            self.queue.popleft()
            send.attempts += 1
            self.next_request_id += 1
            request = Produce(
                self.name,
                self.next_request_id,
                self.topic,
                send.partition,
                self.config.acks,
                ((send.key, send.value),),
            )
            dst = broker_node(leader)
            out.send(dst, request)
            if self.config.acks == 0:
                self._complete(send, "info", now, send.value.decode(errors="replace"))
            else:
                self.in_flight[request.request_id] = (send, now, dst)
        return out


@attrs.frozen
class ConsumerConfig:
    fetch_max_bytes: int = 1024 * 1024
    """``max.partition.fetch.bytes``."""
    fetch_max_wait_ns: int = 500_000_000
    """``fetch.max.wait.ms``: the leader holds a fetch at the HW this long."""
    request_timeout_ns: int = 30_000_000_000
    retry_backoff_ns: int = 100_000_000


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
        self.next_request_id = 0
        self.metadata_in_flight_since: int | None = None
        self.next_poll_at = 0
        self.wants_poll = 0
        self.history: list[dict[str, Any]] = []
        self.records: list[tuple[int, bytes | None]] = []
        self.stats = collections.Counter[str]()

    def poll(self, now: int) -> Effects:
        """Invoke one poll (queued if one is already running)."""
        self.wants_poll += 1
        return self.pump(now)

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
            last_fetched_epoch=-1,
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
        out.send(broker_node(self.leader), fetch)
        return out

    def _fail(self, now: int, error: str) -> None:
        self.history.append(
            {
                "time": now,
                "process": self.process,
                "type": "fail",
                "f": "poll",
                "key": self._key(),
                "value": {"from": self.position, "error": error},
            }
        )
        self.stats["fail"] += 1
        self.in_flight = None
        self.leader = NO_LEADER
        self.next_poll_at = now + self.config.retry_backoff_ns

    def step(self, src: str, msg: object, now: int) -> Effects:
        if isinstance(msg, MetadataResponse):
            self.metadata_in_flight_since = None
            for p in msg.partitions:
                if p.partition == self.partition:
                    self.leader, self.leader_epoch = p.leader, p.leader_epoch
        elif isinstance(msg, FetchResponse):
            if self.in_flight is not None and msg.fetch_id == self.in_flight[0].fetch_id:
                if msg.error is not Errors.NONE:
                    self._fail(now, msg.error.name)
                else:
                    got = [(o, v) for o, v in decode_records(msg.records) if o >= self.position]
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
