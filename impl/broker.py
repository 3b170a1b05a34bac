"""A broker: the partitions it hosts, its requests, its registration with the controller,
and what it recovers from disk when it starts (Kafka's ``KafkaServer`` + ``ReplicaManager``).

A ``Broker`` object is one *process*: constructing it is starting the broker on its disk.
It opens every partition directory it finds (log recovery, ``impl.log.recovery``; the log is
then flushed, so its recovery point is its log end), reads its high watermarks from
``replication-offset-checkpoint`` (each clamped to its log's end, as Kafka does) and knows no
leader: every replica starts ``offline``. It then registers with the coordination store
(``impl.coordination``: its session and ephemeral ``/brokers/ids/N``) and gets a broker epoch
(KIP-380), keeping the session alive with heartbeats; it accepts only LeaderAndIsr requests
carrying that epoch, and none from a controller older than the newest it has seen
(STALE_CONTROLLER_EPOCH, ``ReplicaManager.becomeLeaderOrFollower``; the testing knob
``BrokerConfig.fence_stale_controller_epoch`` turns this fence off). LeaderAndIsr requests
that arrive while it is registering wait until it is (Kafka starts processing requests only
once startup, registration included, is done). Whether this broker is also the controller
is the world's business (``impl.controller``: a role any broker can take).

A crash is the end of the object: the world drops it and its disk loses what was not
flushed. Nothing of it survives but the disk.

Sans-I/O: ``step(src, message, now)`` and ``tick(now)`` return ``Effects`` (messages to
send, notes for the world). The only I/O is through the disk object handed in.

Two modes (``BrokerConfig.atomic``):

- **asynchronous** (Kafka's): on a LeaderAndIsr naming another leader the replica takes the
  new epoch at once and its fetcher first runs the OffsetsForLeaderEpoch exchange, then
  fetches, all as messages over the network; fetches are sent on ticks and long-polled.
- **atomic** (refinement): becoming a follower is one step -- the replica's visible state
  changes only when the exchange has completed (the world routes the exchange's requests
  synchronously); if it cannot complete, nothing changes and the request may be redelivered
  later. Replica fetches are started by the world (``build_fetch``), one round trip at a
  time. The HW checkpoint is written and flushed on every HW change, so a restart restores
  exactly min(HW, recovered log end).
"""

from __future__ import annotations

import attrs

from impl.controlled_shutdown import ShutdownState
from impl.controller import CONTROLLER, broker_node
from impl.coordination import STORE
from impl.fetcher import (
    ExchangeDone,
    ExchangeFailed,
    FetchPhase,
    FetchSettings,
    TruncationExchange,
)
from impl.log import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    Log,
    LogConfig,
    OffsetCheckpointFile,
    RecoveryReport,
    TopicPartition,
)
from impl.log.fs import FileSystem
from impl.log_cleanup import LogCleanup
from impl.protocol import (
    CONSUMER_ID,
    EPOCH_DURING_DELETE,
    NO_LEADER,
    AlterPartition,
    AlterPartitionResponse,
    BrokerHeartbeat,
    BrokerHeartbeatResponse,
    BrokerRegistration,
    BrokerRegistrationResponse,
    ControlledShutdownResponse,
    Effects,
    Errors,
    Fetch,
    FetchResponse,
    LeaderAndIsr,
    LeaderAndIsrResponse,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    Produce,
    ProduceResponse,
    RequestFailed,
    StaleControllerRequest,
    StopReplica,
    StopReplicaResponse,
)
from impl.replica import Replica, ReplicaConfig
from impl.roles import Role

__all__ = ["PARTITION_MESSAGES", "Broker", "BrokerConfig", "partition_dir"]

PARTITION_MESSAGES = (Produce, Fetch, OffsetsForLeaderEpoch, FetchResponse, AlterPartitionResponse)
"""The messages a broker hands to the replica of their partition (``Replica.step``)."""
PartitionMessage = Produce | Fetch | OffsetsForLeaderEpoch | FetchResponse | AlterPartitionResponse


def partition_dir(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


@attrs.frozen
class BrokerConfig:
    replica: ReplicaConfig = attrs.field(factory=ReplicaConfig)
    log: LogConfig = attrs.field(factory=LogConfig)
    heartbeat_interval_ns: int = 2_000_000_000
    """``broker.heartbeat.interval.ms``."""
    replica_fetch_max_bytes: int = 1024 * 1024
    """``replica.fetch.max.bytes`` (the first batch is returned whole anyway, KIP-74)."""
    replica_fetch_wait_max_ns: int = 500_000_000
    """``replica.fetch.wait.max.ms``: how long a leader parks a fetch with nothing new."""
    replica_fetch_backoff_ns: int = 1_000_000_000
    """``replica.fetch.backoff.ms``: after an error."""
    request_timeout_ns: int = 30_000_000_000
    """``request.timeout.ms``: a fetch, epoch exchange, ISR change or registration unanswered
    this long is forgotten (asynchronous mode: the network loses messages silently)."""
    hw_checkpoint_interval_ns: int | None = 5_000_000_000
    """``replica.high.watermark.checkpoint.interval.ms``; None: on every HW change."""
    log_flush_interval_ns: int | None = None
    """``log.flush.interval.ms``: fsync a log whose last fsync by this rule is older than
    this, by the wall clock (``LogManager.flushDirtyLogs`` compares ``time.milliseconds()``
    with the log's last flush time), checked on every tick (Kafka checks every
    ``log.flush.scheduler.interval.ms``). None: never, Kafka's default."""
    atomic: bool = False
    """Refinement mode, see the module docstring."""
    fence_stale_controller_epoch: bool = True
    """Testing knob (off: ``--bug accept_stale_controller_epoch``): reject a LeaderAndIsr
    from a controller epoch older than the newest applied (STALE_CONTROLLER_EPOCH)."""
    topic_logs: tuple[tuple[str, LogConfig], ...] = ()
    """Per-topic log configs (Kafka's topic-level overrides, e.g. ``cleanup.policy=compact``
    for ``__consumer_offsets``); every other topic's log uses ``log``."""
    log_retention_check_interval_ns: int = 300_000_000_000
    """``log.retention.check.interval.ms``: how often retention runs (``impl.log_cleanup``)."""
    log_cleaner_backoff_ns: int = 15_000_000_000
    """``log.cleaner.backoff.ms``: how often the cleaner looks for a dirty compacted log."""

    def log_config(self, topic: str) -> LogConfig:
        """The log config of ``topic``'s partitions."""
        for name, config in self.topic_logs:
            if name == topic:
                return config
        return self.log


PENDING_CONTROLLER_REQUESTS = 64
"""At most this many LeaderAndIsr requests wait for the broker's registration (the oldest
go first: a later one of the same controller supersedes it)."""


class Broker:
    """One broker process (id ``broker_id``) on ``disk``."""

    replica_class: type[Replica] = Replica
    """What hosts a partition (a test may plug in a deliberately broken one)."""

    def __init__(
        self,
        broker_id: int,
        disk: FileSystem,
        config: BrokerConfig,
        now: int,
        incarnation: int = 0,
    ) -> None:
        self.id = broker_id
        self.node = broker_node(broker_id)
        self.disk = disk
        self.config = config
        self.incarnation = incarnation
        self.broker_epoch: int | None = None
        self.register_retry_at: int | None = None
        """While registering: when to try again if no answer came."""
        self.controller_epoch = 0
        self.pending: list[tuple[str, LeaderAndIsr]] = []
        """LeaderAndIsr requests that arrived while registering (see the module docstring)."""
        self.next_heartbeat_at = now
        self.next_checkpoint_at = now
        self.last_flush_wall: dict[tuple[str, int], int] = {}
        """Per partition, the wall-clock time of its last ``log.flush.interval.ms`` flush."""
        self.fetch_settings = FetchSettings(
            max_bytes=1 if config.atomic else config.replica_fetch_max_bytes,
            max_wait_ns=0 if config.atomic else config.replica_fetch_wait_max_ns,
            backoff_ns=config.replica_fetch_backoff_ns,
            pipelined=not config.atomic,
        )
        """Refinement (atomic): one record per fetch, no long poll, one round trip at a time."""
        self.replicas: dict[tuple[str, int], Replica] = {}
        self._exchanges: dict[tuple[str, int], tuple[LeaderAndIsr, TruncationExchange]] = {}
        """Atomic mode: a follower transition waiting for its epoch exchange to complete."""
        self._checkpoint = OffsetCheckpointFile(disk, "", REPLICATION_OFFSET_CHECKPOINT)
        self._recovery_points = OffsetCheckpointFile(disk, "", RECOVERY_POINT_CHECKPOINT)
        self._log_starts = OffsetCheckpointFile(disk, "", LOG_START_OFFSET_CHECKPOINT)
        self._log_starts_written: dict[TopicPartition, int] = {}
        """What ``log-start-offset-checkpoint`` holds (written only when it changes)."""
        self.recovered: dict[tuple[str, int], RecoveryReport] = {}
        self.shutdown: ShutdownState | None = None
        """A controlled shutdown in progress (``impl.controlled_shutdown``)."""
        self.log_cleanup = LogCleanup(
            config.log_retention_check_interval_ns,
            config.log_cleaner_backoff_ns,
            now,
            now,
            checkpoint=OffsetCheckpointFile(disk, "", CLEANER_OFFSET_CHECKPOINT),
        )
        """Retention and compaction of the hosted logs (``impl.log_cleanup``)."""
        self._load(now)
        self.log_cleanup.load_checkpoint(self.replicas)

    # ------------------------------------------------------------------ start-up

    def _load(self, now: int) -> None:
        """Open every partition directory on the disk: recovery from the checkpointed
        recovery point (segments below it are trusted), HW from the checkpoint."""
        hws = self._checkpoint.read()
        points = self._recovery_points.read()
        starts = self._log_starts.read()
        self._log_starts_written = dict(starts)
        # FileSystem has no directory listing; SimDisk's paths() stands in (see docs/impl.md).
        paths: list[str] = self.disk.paths()  # type: ignore[attr-defined]
        directories = sorted({path.split("/", 1)[0] for path in paths if "/" in path})
        for directory in directories:
            topic, _, number = directory.rpartition("-")
            if not topic or not number.isdigit():
                continue
            partition = int(number)
            point = points.get(TopicPartition(topic, partition), 0)
            log = Log.open(
                self.disk,
                directory,
                config=self.config.log_config(topic),
                recovery_point=point,
                log_start_offset=starts.get(TopicPartition(topic, partition), 0),
            )
            # Everything that survived is on disk: recovery re-validated it all.
            log.flush()
            self.recovered[(topic, partition)] = log.recovery
            hw = hws.get(TopicPartition(topic, partition), 0)
            self.replicas[(topic, partition)] = self._new_replica(
                topic, partition, log, min(hw, log.log_end_offset)
            )

    def start(self, now: int) -> Effects:
        """Register with the coordination store."""
        out = Effects()
        self._register(now, out)
        return out

    def _register(self, now: int, out: Effects) -> None:
        self.register_retry_at = now + self.config.heartbeat_interval_ns
        out.send(STORE, BrokerRegistration(self.id, self.incarnation))

    # ------------------------------------------------------------------ helpers

    def replica(self, topic: str, partition: int) -> Replica | None:
        return self.replicas.get((topic, partition))

    def _replica_for(self, topic: str, partition: int) -> Replica:
        key = (topic, partition)
        replica = self.replicas.get(key)
        if replica is None:
            log = Log.open(
                self.disk, partition_dir(topic, partition), config=self.config.log_config(topic)
            )
            replica = self._new_replica(topic, partition, log, 0)
            self.replicas[key] = replica
        return replica

    def _new_replica(self, topic: str, partition: int, log: Log, high_watermark: int) -> Replica:
        return self.replica_class(
            self.id,
            topic,
            partition,
            log,
            high_watermark,
            self.config.replica,
            fetch_settings=self.fetch_settings,
            broker_epoch=self._current_broker_epoch,
        )

    def _current_broker_epoch(self) -> int | None:
        """The epoch of this broker's registration (None: not registered), read by its
        replicas for their fetches and ISR changes (Kafka's ``brokerEpochSupplier``)."""
        return self.broker_epoch

    def _after(self, now: int, out: Effects) -> Effects:
        """After every step: checkpoint HWs when configured to on every change; after a
        truncation, the recovery points (a stale one could make recovery trust a segment
        written after the truncation)."""
        if self.config.hw_checkpoint_interval_ns is None:
            if any(r.hw_changed for r in self.replicas.values()):
                self.checkpoint_hws()
        else:
            for r in self.replicas.values():  # (a loop, not any(): this runs every step)
                if r.truncated:
                    self.checkpoint_recovery_points()
                    break
        return out

    def checkpoint_hws(self) -> None:
        """Write ``replication-offset-checkpoint`` (write temp, fsync, rename)."""
        self._checkpoint.write(
            {TopicPartition(t, p): r.hw for (t, p), r in sorted(self.replicas.items())}
        )
        for r in self.replicas.values():
            r.hw_changed = False

    def checkpoint_recovery_points(self) -> None:
        """Write ``recovery-point-offset-checkpoint``: a restart re-validates only what is
        at or after it (``log.flush.offset.checkpoint.interval.ms``)."""
        self._recovery_points.write(
            {
                TopicPartition(t, p): r.log.recovery_point
                for (t, p), r in sorted(self.replicas.items())
            }
        )
        for r in self.replicas.values():
            r.truncated = False
        self.checkpoint_log_starts()

    def checkpoint_log_starts(self) -> None:
        """Write ``log-start-offset-checkpoint`` (``log.flush.start.offset.checkpoint
        .interval.ms``; with the recovery points here): the log start of every log whose
        start lies inside its first segment (a follower that followed its leader's log
        start, DeleteRecords: KIP-107). A restart's recovery takes the log start from
        there, else from the first segment's base offset, which is the log start of every
        other log: without the file, records below such a log start would be readable
        again after a restart. Written only when it changes (Kafka rewrites it on every
        interval; the content is what matters)."""
        starts = {
            TopicPartition(t, p): r.log.log_start_offset
            for (t, p), r in sorted(self.replicas.items())
            if r.log.log_start_offset > r.log.segments[0].base_offset
        }
        if starts != self._log_starts_written:
            self._log_starts.write(starts)
            self._log_starts_written = starts

    # ------------------------------------------------------------------ messages

    def step(self, src: str, msg: object, now: int, wall: int | None = None) -> Effects:
        """Handle ``msg`` from ``src``. ``now`` is the broker's monotonic clock, which every
        timer reads; ``wall`` its wall clock (default ``now``), which only the ISR's
        ``replica.lag.time.max.ms`` reads, as in Kafka (``impl.sim.clock``)."""
        out = Effects()
        if isinstance(msg, LeaderAndIsr):
            if self.broker_epoch is None and self.register_retry_at is not None:
                self.pending = [*self.pending, (src, msg)][-PENDING_CONTROLLER_REQUESTS:]
            else:
                self._on_leader_and_isr(src, msg, now, out, wall)
        elif isinstance(msg, StopReplica):
            self._on_stop_replica(src, msg, out)
        elif isinstance(msg, PARTITION_MESSAGES):
            self._on_partition_message(src, msg, now, out, wall)
        elif isinstance(msg, OffsetsForLeaderEpochResponse):
            self._on_exchange_response(msg, now, out)
        elif isinstance(msg, BrokerRegistrationResponse):
            self._on_registration_response(msg, now)
            if self.broker_epoch is not None and self.pending:
                pending, self.pending = self.pending, []
                for controller, request in pending:
                    self._on_leader_and_isr(controller, request, now, out, wall)
        elif isinstance(msg, BrokerHeartbeatResponse):
            if msg.error is Errors.STALE_BROKER_EPOCH and msg.broker_epoch == self.broker_epoch:
                # The store let the session expire (we were paused or cut off): register
                # again, as a broker whose ZooKeeper session expired does.
                self.broker_epoch = None
                self._register(now, out)
        elif isinstance(msg, RequestFailed):
            self._on_request_failed(msg.request, now, out)
        elif isinstance(msg, ControlledShutdownResponse) and self.shutdown is not None:
            self.shutdown.on_response(msg, now, out)
        return self._after(now, out)

    def begin_controlled_shutdown(self, now: int) -> None:
        """``controlled.shutdown.enable``: ask the controller to move leaderships off, then
        stop (``impl.controlled_shutdown``)."""
        if self.shutdown is None:
            self.shutdown = ShutdownState(self.id, next_try_at=now)

    def _on_partition_message(
        self, src: str, msg: PartitionMessage, now: int, out: Effects, wall: int | None
    ) -> None:
        """A message for one partition goes to its replica (``Replica.step``). A request for
        a partition this broker hosts no replica of is answered NOT_LEADER_OR_FOLLOWER; a
        response for one is dropped."""
        replica = self.replicas.get((msg.topic, msg.partition))
        if replica is None:
            self._refuse_unhosted(src, msg, out)
            return
        if isinstance(msg, Fetch) and self.config.atomic and msg.replica_id != CONSUMER_ID:
            # Refinement: one record per round trip, and no long poll.
            msg = Fetch(
                replica_id=msg.replica_id,
                broker_epoch=msg.broker_epoch,
                topic=msg.topic,
                partition=msg.partition,
                fetch_offset=msg.fetch_offset,
                current_leader_epoch=msg.current_leader_epoch,
                max_bytes=1,
                fetch_id=msg.fetch_id,
                max_wait_ns=0,
            )
        replica.step(src, msg, now, out, wall)

    @staticmethod
    def _refuse_unhosted(src: str, msg: PartitionMessage, out: Effects) -> None:
        error = Errors.NOT_LEADER_OR_FOLLOWER
        if isinstance(msg, Produce):
            out.send(src, ProduceResponse(msg.request_id, msg.topic, msg.partition, error))
        elif isinstance(msg, Fetch):
            out.send(
                src,
                FetchResponse(
                    msg.topic, msg.partition, error, msg.fetch_id, msg.fetch_offset, -1, -1
                ),
            )
        elif isinstance(msg, OffsetsForLeaderEpoch):
            out.send(
                src,
                OffsetsForLeaderEpochResponse(
                    msg.topic, msg.partition, error, msg.request_id, -1, -1
                ),
            )

    def _on_registration_response(self, msg: BrokerRegistrationResponse, now: int) -> None:
        if self.register_retry_at is None:
            return  # not registering (a duplicate answer)
        if msg.error is Errors.NONE:
            self.register_retry_at = None
            self.broker_epoch = msg.broker_epoch
            self.controller_epoch = max(self.controller_epoch, msg.controller_epoch)
            self.next_heartbeat_at = now + self.config.heartbeat_interval_ns

    def _on_request_failed(self, request: object, now: int, out: Effects) -> None:
        if isinstance(request, BrokerRegistration):
            if self.register_retry_at is not None:
                self.register_retry_at = now
        elif isinstance(request, AlterPartition):
            replica = self.replicas.get((request.topic, request.partition))
            if replica is not None:
                replica.on_alter_partition_failed(request)
        elif isinstance(request, Fetch):
            replica = self.replicas.get((request.topic, request.partition))
            if replica is not None and replica.fetcher is not None:
                in_flight = replica.fetcher.in_flight
                if in_flight is not None and in_flight.fetch_id == request.fetch_id:
                    replica.fetcher.forget_in_flight()
                    replica.fetcher.next_fetch_at = now + self.config.replica_fetch_backoff_ns
        elif isinstance(request, OffsetsForLeaderEpoch):
            self._exchange_failed((request.topic, request.partition), request, now)

    # ------------------------------------------------------------------ LeaderAndIsr

    def _controller_request_error(self, msg: LeaderAndIsr | StopReplica, out: Effects) -> Errors:
        """Why a controller request may not be applied, or ``NONE``: it must be meant for
        this registration (KIP-380's broker epoch, else ``STALE_BROKER_EPOCH``) and not come
        from a controller epoch older than the newest this broker has seen
        (``STALE_CONTROLLER_EPOCH``, unless the fence is off). Records the request's
        controller epoch as the broker's, as ``ReplicaManager`` does after the check."""
        if self.broker_epoch is None or msg.broker_epoch != self.broker_epoch:
            return Errors.STALE_BROKER_EPOCH  # meant for another incarnation (KIP-380)
        if msg.controller_epoch < self.controller_epoch:
            fenced = self.config.fence_stale_controller_epoch
            out.note(
                StaleControllerRequest(
                    self.id, msg.controller_epoch, self.controller_epoch, applied=not fenced
                )
            )
            if fenced:
                return Errors.STALE_CONTROLLER_EPOCH
        self.controller_epoch = msg.controller_epoch  # (with the fence off, even an older one)
        return Errors.NONE

    def _on_stop_replica(self, src: str, msg: StopReplica, out: Effects) -> None:
        """``ReplicaManager.stopReplicas``: the replica stops (its fetcher with it) and, with
        ``delete``, its log is deleted from disk. A replica in a newer leader epoch than the
        request's is left alone (KIP-570), unless the request deletes a topic
        (``EPOCH_DURING_DELETE``). Answered so the controller stops asking."""
        if self._controller_request_error(msg, out) is not Errors.NONE:
            return  # fenced: unanswered (the controller asks again, ``stop_replica_retry_ns``)
        key = (msg.topic, msg.partition)
        replica = self.replicas.get(key)
        error = Errors.NONE
        stale = replica is not None and replica.leader_epoch > msg.leader_epoch
        if stale and msg.leader_epoch != EPOCH_DURING_DELETE:
            error = Errors.FENCED_LEADER_EPOCH
        if error is Errors.NONE:
            self.replicas.pop(key, None)
            self._exchanges.pop(key, None)
            if msg.delete:
                directory = partition_dir(msg.topic, msg.partition)
                for name in self.disk.list_dir(directory):
                    self.disk.delete(f"{directory}/{name}")
        out.send(src, StopReplicaResponse(self.id, msg.topic, msg.partition, error))

    def _on_leader_and_isr(
        self, src: str, msg: LeaderAndIsr, now: int, out: Effects, wall: int | None = None
    ) -> None:
        """Apply ``msg`` if it is for this registration, from a current controller and in a
        newer leader epoch; answer it in every case, so the controller stops resending."""
        error = self._controller_request_error(msg, out)
        out.send(
            src,
            LeaderAndIsrResponse(
                self.id, msg.controller_epoch, msg.topic, msg.partition, msg.leader_epoch, error
            ),
        )
        if error is not Errors.NONE:
            return
        if msg.leader == NO_LEADER or self.id not in msg.replicas:
            return  # an offline partition: nothing to lead or follow
        replica = self._replica_for(msg.topic, msg.partition)
        if msg.leader_epoch <= replica.leader_epoch:
            return  # stale or duplicate: Partition.makeLeader/makeFollower skip it
        key = (msg.topic, msg.partition)
        if msg.leader == self.id:
            self._exchanges.pop(key, None)
            replica.become_leader(msg, now, out, wall)
            return
        exchange = replica.new_exchange(msg.leader_epoch)
        first = exchange.start()
        if self.config.atomic:
            if isinstance(first, ExchangeDone):
                self._exchanges.pop(key, None)
                replica.become_follower(msg, first.offset, now, out)
            else:
                self._exchanges[key] = (msg, exchange)
                out.send(broker_node(msg.leader), first)
            return
        replica.become_follower(msg, None, now, out)
        assert replica.fetcher is not None
        replica.fetcher.exchange = exchange
        if isinstance(first, ExchangeDone):
            replica.complete_truncation(first.offset, out)
        else:
            replica.fetcher.in_flight_since = now
            out.send(broker_node(msg.leader), first)

    def _on_exchange_response(
        self, msg: OffsetsForLeaderEpochResponse, now: int, out: Effects
    ) -> None:
        key = (msg.topic, msg.partition)
        replica = self.replicas.get(key)
        if replica is None:
            return
        if self.config.atomic:
            pending = self._exchanges.get(key)
            if pending is None:
                return
            request, exchange = pending
            if exchange.outstanding is None or exchange.outstanding.request_id != msg.request_id:
                return
            result = exchange.on_response(msg)
            if isinstance(result, ExchangeDone):
                del self._exchanges[key]
                replica.become_follower(request, result.offset, now, out)
            elif isinstance(result, ExchangeFailed):
                del self._exchanges[key]
            else:
                out.send(broker_node(request.leader), result)
            return
        fetcher = replica.fetcher
        if (
            fetcher is None
            or fetcher.phase is not FetchPhase.TRUNCATING
            or fetcher.exchange is None
        ):
            return
        exchange = fetcher.exchange
        if exchange.outstanding is None or exchange.outstanding.request_id != msg.request_id:
            return
        result = exchange.on_response(msg)
        if isinstance(result, ExchangeDone):
            replica.complete_truncation(result.offset, out)
        elif isinstance(result, ExchangeFailed):
            fetcher.exchange = None  # restarted from scratch on a later tick
            fetcher.next_fetch_at = now + self.config.replica_fetch_backoff_ns
        else:
            fetcher.in_flight_since = now
            out.send(broker_node(fetcher.leader), result)

    def _exchange_failed(
        self, key: tuple[str, int], request: OffsetsForLeaderEpoch, now: int
    ) -> None:
        if self.config.atomic:
            pending = self._exchanges.get(key)
            if pending is not None and pending[1].outstanding == request:
                del self._exchanges[key]
            return
        replica = self.replicas.get(key)
        if replica is None or replica.fetcher is None or replica.fetcher.exchange is None:
            return
        if replica.fetcher.exchange.outstanding == request:
            replica.fetcher.exchange = None
            replica.fetcher.next_fetch_at = now + self.config.replica_fetch_backoff_ns

    # ------------------------------------------------------------------ fetch

    def build_fetch(self, topic: str, partition: int, now: int) -> Fetch | None:
        """The next replica fetch of this follower, if it may send one now."""
        replica = self.replicas.get((topic, partition))
        return None if replica is None else replica.build_fetch(now)

    # ------------------------------------------------------------------ time

    def tick(self, now: int, wall: int | None = None) -> Effects:
        """Heartbeat or register, expire purgatory and parked fetches, propose one ISR
        change per partition, and (asynchronous mode) drive fetchers and checkpoints.
        ``now`` and ``wall`` as for ``step``."""
        out = Effects()
        if self.broker_epoch is None:
            if self.register_retry_at is None or now >= self.register_retry_at:
                self._register(now, out)
        elif now >= self.next_heartbeat_at:
            self.next_heartbeat_at = now + self.config.heartbeat_interval_ns
            out.send(STORE, BrokerHeartbeat(self.id, self.broker_epoch))
        for key in sorted(self.replicas):
            replica = self.replicas[key]
            replica.tick(now, out, self.config.request_timeout_ns)
            replica.propose_isr_change(now, out, wall)
            if not self.config.atomic:
                self._drive_fetcher(replica, now, out)
        if self.shutdown is not None:
            self.shutdown.tick(now, self.broker_epoch, CONTROLLER, out)
        if self.config.log_flush_interval_ns is not None:
            self._flush_old_logs(now if wall is None else wall)
        self.log_cleanup.tick(self.replicas, now, now if wall is None else wall)
        interval = self.config.hw_checkpoint_interval_ns
        if interval is not None and now >= self.next_checkpoint_at:
            self.checkpoint_hws()
            self.checkpoint_recovery_points()
            self.next_checkpoint_at = now + interval
        return self._after(now, out)

    def flush_all(self) -> None:
        """Fsync every log (a clean shutdown's ``LogManager.shutdown``)."""
        for key in sorted(self.replicas):
            self.replicas[key].log.flush()

    def _flush_old_logs(self, wall: int) -> None:
        """``log.flush.interval.ms``: fsync each log whose last such flush is that old."""
        interval = self.config.log_flush_interval_ns
        assert interval is not None
        for key in sorted(self.replicas):
            last = self.last_flush_wall.setdefault(key, wall)
            if wall - last >= interval:
                self.replicas[key].log.flush()
                self.last_flush_wall[key] = wall

    def _drive_fetcher(self, replica: Replica, now: int, out: Effects) -> None:
        fetcher = replica.fetcher
        if replica.role is not Role.FOLLOWER or fetcher is None:
            return
        timeout = self.config.request_timeout_ns
        if fetcher.phase is FetchPhase.TRUNCATING:
            exchange = fetcher.exchange
            if exchange is not None and exchange.outstanding is not None:
                if now - fetcher.in_flight_since > timeout:
                    fetcher.exchange = None
                return
            if exchange is None and now >= fetcher.next_fetch_at:
                exchange = replica.new_exchange(fetcher.leader_epoch)
                fetcher.exchange = exchange
                first = exchange.start()
                if isinstance(first, ExchangeDone):
                    replica.complete_truncation(first.offset, out)
                else:
                    fetcher.in_flight_since = now
                    out.send(broker_node(fetcher.leader), first)
            return
        if fetcher.in_flight is not None and now - fetcher.in_flight_since > timeout:
            fetcher.forget_in_flight()
        replica.fetch_if_ready(now, out)

    # ------------------------------------------------------------------ views

    def describe(self) -> str:
        parts = [f"broker {self.id} epoch={self.broker_epoch}"]
        parts += [r.describe() for _, r in sorted(self.replicas.items())]
        return "; ".join(parts)
