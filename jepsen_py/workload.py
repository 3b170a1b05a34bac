"""The Kafka client adapter: generator invocations become calls on the simulated cluster's
producers and consumers, and what those clients report becomes history completions.

Jepsen's Kafka client does the same against a real cluster: it owns one producer and one
consumer per worker, turns ``send``/``poll`` ops into client calls, and classifies every
outcome as ``ok``, ``fail`` (definitely not applied) or ``info`` (unknown).

Mapping
-------
- Keys are partitions: key ``t-3`` is partition 3 of topic ``t`` (the cluster's producers
  and consumers name them the same way).
- Client thread ``i`` owns producer ``p{i+1}`` and one consumer per partition
  (``c{i*P+p+1}`` reads partition ``p``: the cluster assigns consumer ``j`` to partition
  ``j mod P``). A thread runs one op at a time, so its clients have at most one op each.
- ``send`` of integer ``v`` to ``t-p`` is ``client_send(producer, K_p, b"v")`` where ``K_p``
  is a record key that the Java partitioner (murmur2) maps to partition ``p``: the smallest
  ``k<n>`` that does, found once. The producer retries on its own (retriable errors, request
  timeouts) until ``delivery.timeout.ms``; with ``enable.idempotence`` (Kafka's default with
  acks=all, KIP-98) a retry the leader already has is answered with the original offset
  instead of being appended again, so a value is never written twice by its own producer.
- ``poll`` of ``t-p`` from ``N`` seeks the thread's consumer of ``p`` to ``N`` and polls
  once; the consumer's fetch is bounded in size and reads up to the high watermark.

Outcomes
--------
- send ``ok``: ``{"offset": o, "value": v}``, the offset the leader assigned.
- send ``fail`` (definitely not applied): the producer gave up without ever sending it, or
  every attempt it sent was answered with an error the broker returns *before* appending
  (``NOT_ENOUGH_REPLICAS``: the ISR is below ``min.insync.replicas``;
  ``KAFKA_STORAGE_ERROR``: the append itself failed; with idempotence,
  ``OUT_OF_ORDER_SEQUENCE_NUMBER`` and ``INVALID_PRODUCER_EPOCH``: the sequence check
  refused the batch). ``NOT_LEADER_OR_FOLLOWER`` and
  ``REQUEST_TIMED_OUT`` do not count: a leader also answers them for records it appended
  and then could not commit (leadership moved mid-request, the purgatory expired).
- send ``info`` (unknown): anything else -- an attempt timed out, its connection dropped, or
  it was answered with an ambiguous error; the record may be in the log, now or later.
  The thread then goes on as a new process (the interpreter does that).
- poll ``ok``: ``{"records": [[offset, value], ...], "hw": h}``; ``fail``: any error (a
  read changes nothing, so a failed read is never ``info``). With retention on, both carry
  the leader's log start offset as ``"log_start"`` (docs/history-format.md).

The producer's per-attempt answers are not in its history: the adapter reads them from the
send's record (``impl.client.Send``, returned by ``Cluster.client_send``), whose
``attempts`` say how each Produce request ended and with which error. Consumers are driven
through their public calls only (``seek``, ``busy``, ``fetching``, ``give_up_polls``).
"""

from __future__ import annotations

from typing import Any

import attrs

from impl.client import AttemptEnd, Send
from impl.cluster import Cluster
from impl.partitioner import partition_for_key
from impl.protocol import Errors
from jepsen_py.generator import Invocation, Thread

DEFINITE_ERRORS = frozenset(
    {
        Errors.NOT_ENOUGH_REPLICAS,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
        Errors.INVALID_PRODUCER_EPOCH,
    }
)
"""Produce errors a broker only answers before appending anything."""


class WorkloadError(ValueError):
    """An op the adapter cannot perform (unknown key or f, a busy thread); names the op."""


def key_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def partition_keys(partitions: int, topic: str = "t") -> list[str]:
    """The history keys of a topic's partitions: ``t-0``, ``t-1``, ..."""
    return [key_name(topic, p) for p in range(partitions)]


def record_key_for(partition: int, partitions: int) -> bytes:
    """The smallest record key ``k<n>`` the default partitioner sends to ``partition``."""
    for n in range(100_000):
        key = f"k{n}".encode()
        if partition_for_key(key, partitions) == partition:
            return key
    raise WorkloadError(f"no record key maps to partition {partition} of {partitions}")


@attrs.frozen
class Completion:
    """A client op ended: at ``time``, on ``thread``, as ``type`` with ``value``."""

    time: int
    thread: Thread
    type: str
    value: Any


def refused_before_append(send: Send) -> bool:
    """Every attempt of ``send`` was answered with an error a broker only returns before
    appending anything (``DEFINITE_ERRORS``): the record is in no log. False for a send
    never sent (its history says ``fail`` anyway)."""
    return bool(send.attempts) and all(
        a.end is AttemptEnd.ANSWERED and a.error in DEFINITE_ERRORS for a in send.attempts
    )


@attrs.define
class _Running:
    """The op a thread has in flight."""

    f: str
    key: str
    client: str
    cursor: int
    """Where the client's history stood when the op was invoked: its completion comes after."""
    invoked_at: int
    value: Any
    send: Send | None = None
    """A send's record, whose attempts say whether it may have been written."""


class KafkaClients:
    """The adapter between the `Interpreter`'s client threads and the cluster's clients.

    ``invoke(invocation)`` starts a ``send`` or ``poll``; after the cluster has run,
    ``collect()`` returns the ops that completed, in (time, thread) order. A poll whose
    consumer cannot even find a leader for ``poll_timeout_ns`` (no fetch in flight: the
    controller is down or unreachable) is given up: ``fail``. A send needs no such timeout:
    the producer's own ``delivery.timeout.ms`` ends every send.
    """

    def __init__(self, cluster: Cluster, threads: int, *, poll_timeout_ns: int) -> None:
        config = cluster.config
        if len(cluster.producers) < threads:
            raise WorkloadError(
                f"the cluster has {len(cluster.producers)} producers for {threads} client "
                "threads: build it with ClusterConfig(producers=threads)"
            )
        if len(cluster.consumers) < threads * config.partitions:
            raise WorkloadError(
                f"the cluster has {len(cluster.consumers)} consumers; {threads} threads need "
                f"{threads * config.partitions} (one per thread and partition)"
            )
        self.cluster = cluster
        self.threads = threads
        self.topic = config.topic
        self.partitions = config.partitions
        self.poll_timeout_ns = poll_timeout_ns
        self.record_keys = [record_key_for(p, config.partitions) for p in range(config.partitions)]
        self.running: dict[Thread, _Running] = {}

    # ------------------------------------------------------------------ names

    def producer_of(self, thread: Thread) -> str:
        assert isinstance(thread, int), thread
        return self.cluster.producer_names[thread]

    def consumer_of(self, thread: Thread, partition: int) -> str:
        assert isinstance(thread, int), thread
        return self.cluster.consumer_names[thread * self.partitions + partition]

    def partition_of(self, key: str | None) -> int:
        prefix = f"{self.topic}-"
        if key is None or not key.startswith(prefix) or not key[len(prefix) :].isdigit():
            raise WorkloadError(
                f"key {key!r} names no partition: use {prefix}0..{prefix}{self.partitions - 1}"
            )
        partition = int(key[len(prefix) :])
        if partition >= self.partitions:
            raise WorkloadError(f"key {key!r}: topic {self.topic} has {self.partitions} partitions")
        return partition

    # ------------------------------------------------------------------ ops

    def invoke(self, inv: Invocation) -> None:
        """Start ``inv`` (a ``send`` or ``poll`` on a client thread) on the cluster now."""
        thread = inv.thread
        if thread is None or not isinstance(thread, int) or not 0 <= thread < self.threads:
            raise WorkloadError(f"{inv}: not one of the {self.threads} client threads")
        if thread in self.running:
            raise WorkloadError(f"{inv}: thread {thread} already has an op running")
        partition = self.partition_of(inv.key)
        assert inv.key is not None
        now = self.cluster.clock.now
        if inv.f == "send":
            if isinstance(inv.value, bool) or not isinstance(inv.value, int):
                raise WorkloadError(f"{inv}: a send's value must be an int (values are unique)")
            name = self.producer_of(thread)
            cursor = len(self.cluster.producers[name].history)
            send = self.cluster.client_send(
                name, self.record_keys[partition], str(inv.value).encode()
            )
            self.running[thread] = _Running("send", inv.key, name, cursor, now, inv.value, send)
        elif inv.f == "poll":
            start = inv.value.get("from") if isinstance(inv.value, dict) else None
            if isinstance(start, bool) or not isinstance(start, int) or start < 0:
                raise WorkloadError(f"{inv}: a poll's value must be {{'from': offset >= 0}}")
            name = self.consumer_of(thread, partition)
            consumer = self.cluster.consumers[name]
            if consumer.busy:
                raise WorkloadError(f"{inv}: consumer {name} is still busy")
            consumer.seek(start)
            replica = inv.value.get("replica")
            if replica is not None and (isinstance(replica, bool) or not isinstance(replica, int)):
                raise WorkloadError(f"{inv}: a poll's replica must be a broker id")
            consumer.read_replica = replica  # KIP-392: this poll reads from that replica
            cursor = len(consumer.history)
            self.cluster.client_poll(name)
            self.running[thread] = _Running("poll", inv.key, name, cursor, now, inv.value)
        else:
            raise WorkloadError(f"{inv}: the Kafka workload performs send and poll only")

    def busy(self) -> bool:
        return bool(self.running)

    def next_deadline(self) -> int | None:
        """When a poll still looking for a leader will be given up (None: none will). A
        poll whose fetch is in flight has no deadline here: the consumer's own
        ``request.timeout.ms`` ends it."""
        now = self.cluster.clock.now
        times = [
            deadline
            for r in self.running.values()
            if r.f == "poll" and (deadline := r.invoked_at + self.poll_timeout_ns) > now
        ]
        return min(times) if times else None

    def collect(self) -> list[Completion]:
        """The client ops that completed since the last call, by (time, thread)."""
        done: list[Completion] = []
        now = self.cluster.clock.now
        for thread in sorted(self.running, key=str):
            running = self.running[thread]
            completion = (
                self._send_done(thread, running)
                if running.f == "send"
                else self._poll_done(thread, running, now)
            )
            if completion is not None:
                done.append(completion)
        for completion in done:
            del self.running[completion.thread]
        done.sort(key=lambda c: (c.time, str(c.thread)))
        return done

    def _send_done(self, thread: Thread, running: _Running) -> Completion | None:
        producer = self.cluster.producers[running.client]
        for entry in producer.history[running.cursor :]:
            if entry["type"] == "invoke":
                continue
            value = entry["value"]
            echoed = value.get("value") if isinstance(value, dict) else value
            if echoed != str(running.value):
                raise AssertionError(
                    f"{running.client} completed {echoed!r} while thread {thread} awaited "
                    f"{running.value!r}: a producer runs one op at a time here"
                )
            if entry["type"] == "ok":
                out = {"offset": value["offset"], "value": running.value}
                return Completion(entry["time"], thread, "ok", out)
            assert running.send is not None
            if entry["type"] == "fail" or refused_before_append(running.send):
                reason = "never sent" if entry["type"] == "fail" else "refused before append"
                return Completion(entry["time"], thread, "fail", {"error": reason})
            return Completion(entry["time"], thread, "info", {"error": "outcome unknown"})
        return None

    def _poll_done(self, thread: Thread, running: _Running, now: int) -> Completion | None:
        consumer = self.cluster.consumers[running.client]
        for entry in consumer.history[running.cursor :]:
            if entry["type"] == "invoke":
                continue
            value = entry["value"]
            if entry["type"] == "ok":
                records = [[o, _int_or_text(v)] for o, v in value["records"]]
                out = {"records": records, "hw": value["hw"]}
                if "log_start" in value:
                    out["log_start"] = value["log_start"]
                return Completion(entry["time"], thread, "ok", out)
            failed = {"error": value.get("error")}
            if "log_start" in value:
                failed["log_start"] = value["log_start"]
            return Completion(entry["time"], thread, "fail", failed)
        if not consumer.fetching and now >= running.invoked_at + self.poll_timeout_ns:
            # Still looking for a leader (no fetch ever sent): give the poll up.
            consumer.give_up_polls()
            return Completion(now, thread, "fail", {"error": "no leader found"})
        return None


def _int_or_text(value: str) -> int | str:
    """A record's value as the int the workload sent; anything else stays text (it can only
    come from a corrupt record, and the checker will say so)."""
    try:
        return int(value)
    except ValueError:
        return value
