"""One replica of one partition on one broker (Kafka's ``Partition``): its role, log, high
watermark, ISR, what it knows of the other replicas, and its produce purgatory.

Its role (``offline``, ``leader``, ``follower``) moves by the table of ``impl.roles``:
LeaderAndIsr requests take an ``offline`` replica to ``leader`` or ``follower``, and never
back. ``SERVES`` (there too) says which messages each role acts on, and drives ``step``: a
request the role does not serve is answered NOT_LEADER_OR_FOLLOWER, a response it does not
serve (it answers a request of a role the replica has left) is dropped.

Every handler has one result shape: it writes what it wants sent, and notes for the world,
into the ``Effects`` passed in (``impl.protocol``), and returns nothing.

As **leader** (``Partition.makeLeader`` and the leader-side handlers):

- its high watermark is the smallest log end offset over the ISR (its own, and each
  follower's as its last fetch reported it), recomputed on every append, fetch and ISR
  change; it only moves forward (``maybeIncrementLeaderHW``). In asynchronous mode the ISR
  used is the *maximal* ISR (KIP-497): the committed ISR plus a pending addition;
- a fetch is answered in Kafka's order: the records at the fetch offset and the HW are read
  for the response *first*, then the follower's LEO is recorded and the HW recomputed. So
  a follower learns of an HW advance one fetch late (what KIP-101's data loss needs);
- produce: acks=0/1 answered at once, acks=all refused with NOT_ENOUGH_REPLICAS while the
  ISR is smaller than ``min.insync.replicas``, else parked in the purgatory until the HW
  passes the records (failed with NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
  ``min.insync.replicas`` meanwhile). A replica that stops leading fails its purgatory with
  NOT_LEADER_OR_FOLLOWER;
- becoming leader resets every remote replica state (LEO unknown) and records where the new
  epoch starts in the leader-epoch cache.

As **follower**: on a LeaderAndIsr naming another leader it truncates its log by the
variant's rule (``impl.fetcher``) and fetches from its LEO (``FetchSettings``; the broker
epoch from its broker, as Kafka's ``brokerEpochSupplier``); it appends what it gets, sets its
HW to min(the leader's HW in the response, its own LEO) and, pipelined, fetches again. It
serves a consumer's fetch up to that HW (KIP-392's fetch from a follower).

Idempotent producers (KIP-98, ``impl.producer_state``): every replica keeps each producer's
epoch and last five batches, from its own appends as leader and from the batches it
replicates as follower, rebuilt from the log after a truncation and when its broker opens
the log. As leader it checks an idempotent produce against that state before appending: a
duplicate is answered with the original's offsets (after the same acks=all wait), a stale
epoch or a sequence gap is refused (INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER).

Invariants asserted after every change (``check``): HW <= LEO; a leader is in its own ISR
and its ISR is within the replicas; the purgatory is bounded and holds only offsets below the
LEO, and only while leading, as does an ISR change in flight; a follower has a fetcher, a
leader none.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from impl.controller import CONTROLLER, broker_node
from impl.fetcher import (
    FetchPhase,
    FetchSettings,
    FollowerFetcher,
    TruncationExchange,
    check_truncation,
    fenced,
)
from impl.isr import RemoteReplica, caught_up_candidates, out_of_sync, record_fetch
from impl.log import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    Log,
    OffsetOutOfRangeError,
    RecordBatch,
    StorageError,
)
from impl.messages import Message
from impl.producer_state import Duplicate, ProducerBatch, ProducerStateManager
from impl.protocol import (
    ANY_EPOCH,
    CONSUMER_ID,
    NO_LEADER,
    Acked,
    AlterPartition,
    AlterPartitionResponse,
    Appended,
    BecameLeader,
    Effects,
    Errors,
    Fetch,
    FetchResponse,
    LeaderAndIsr,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    Produce,
    ProduceFailed,
    ProduceResponse,
    Reconciled,
    Truncated,
)
from impl.roles import REQUESTS, SERVES, Role, RoleEvent, next_role

__all__ = ["ParkedFetch", "PendingProduce", "Replica", "ReplicaConfig"]

NIL_EPOCH = -1


@attrs.frozen
class ReplicaConfig:
    truncation: str = attrs.field(default="kip320")
    min_insync_replicas: int = 1
    replica_lag_time_max_ns: int = 30_000_000_000
    """``replica.lag.time.max.ms``."""
    max_purgatory: int = 10_000
    produce_timeout_ns: int | None = 30_000_000_000
    """How long an acks=all write may wait (the producer's ``request.timeout.ms``, which the
    broker enforces on its purgatory). None: never (refinement mode: the spec has no such
    expiry)."""
    maximal_isr: bool = True
    """KIP-497: compute the HW over the ISR plus a pending addition."""
    strict_min_isr: bool = False
    """KIP-966: the HW advances only while the ISR has ``min.insync.replicas`` members, so
    a replica leaving the ISR below it holds every committed record (``impl.elr``)."""

    @truncation.validator
    def _check_truncation(self, _: attrs.Attribute[str], value: str) -> None:
        check_truncation(value)

    @property
    def fenced(self) -> bool:
        return fenced(self.truncation)


@attrs.define
class PendingProduce:
    """An acks=all write waiting in the purgatory for the HW to pass ``last_offset``."""

    client: str
    request_id: int
    leader_epoch: int
    base_offset: int
    last_offset: int
    deadline: int | None


@attrs.define
class ParkedFetch:
    src: str
    request: Fetch
    deadline: int


class Replica:
    """One partition replica on broker ``broker_id``. Handlers append what they want sent
    to the ``Effects`` passed in; ``hw_changed`` tells the broker to checkpoint."""

    def __init__(
        self,
        broker_id: int,
        topic: str,
        partition: int,
        log: Log,
        high_watermark: int,
        config: ReplicaConfig,
        *,
        fetch_settings: FetchSettings,
        broker_epoch: Callable[[], int | None],
    ) -> None:
        """``broker_epoch`` reads the broker's current registration epoch (None: not
        registered), which the replica's fetches and ISR changes carry (KIP-380)."""
        self.broker_id = broker_id
        self.topic = topic
        self.partition = partition
        self.name = f"{topic}-{partition}@{broker_id}"
        self.log = log
        self.config = config
        self.fetch_settings = fetch_settings
        self._broker_epoch = broker_epoch
        assert high_watermark >= 0
        self.hw = min(high_watermark, log.log_end_offset)
        self.role = Role.OFFLINE
        self.serves = SERVES[self.role]
        """What the current role acts on (``SERVES``), looked up once per role change."""
        self.fenced = config.fenced
        """KIP-320: requests carry, and are checked against, the current leader epoch."""
        self.leader = NO_LEADER
        self.leader_epoch = NIL_EPOCH
        self.isr: frozenset[int] = frozenset()
        self.partition_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.remotes: dict[int, RemoteReplica] = {}
        self.purgatory: list[PendingProduce] = []
        self.parked: list[ParkedFetch] = []
        self.fetcher: FollowerFetcher | None = None
        self.next_fetch_id = 0
        """The first fetch id of the next fetcher (the last one's next, kept while leading)."""
        self.pending_alter: AlterPartition | None = None
        self.pending_alter_since = 0
        self.hw_changed = False
        self.append_wall: int | None = None
        """The wall clock of the Produce being handled: its LogAppendTime (``step``)."""
        self.truncated = False
        """Records were truncated away since the broker last checkpointed recovery points."""
        self._next_request_id = 0
        self.producer_state = ProducerStateManager()
        """KIP-98: each idempotent producer's epoch and last batches, read from the log."""
        self.producer_state.rebuild(log)
        self.check()

    # ------------------------------------------------------------------ views

    @property
    def leo(self) -> int:
        return self.log.log_end_offset

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    def maximal_isr(self) -> frozenset[int]:
        if self.config.maximal_isr and self.pending_alter is not None:
            return self.isr | self.pending_alter.new_isr
        return self.isr

    def epoch_start_offset(self) -> int:
        """Where the current leader epoch starts in this replica's log (its LEO if nothing
        was written in it): the leader-epoch cache entry makeLeader added."""
        for entry in self.log.epoch_cache.entries:
            if entry.epoch == self.leader_epoch:
                return entry.start_offset
        return self.leo

    def latest_epoch(self) -> int:
        latest = self.log.latest_epoch
        return UNDEFINED_EPOCH if latest is None else latest

    def _transition(self, event: RoleEvent) -> None:
        self.role = next_role(self.name, self.role, event)
        self.serves = SERVES[self.role]

    def _set_hw(self, hw: int) -> None:
        assert 0 <= hw <= self.leo, (self.name, hw, self.leo)
        if hw != self.hw:
            self.hw = hw
            self.hw_changed = True

    def request_id(self) -> int:
        self._next_request_id += 1
        return self._next_request_id

    # ------------------------------------------------------------------ messages

    def step(self, src: str, msg: Message, now: int, out: Effects, wall: int | None = None) -> None:
        """Handle a message for this partition from ``src``. ``SERVES`` says whether the
        current role acts on it; if not, a request is answered NOT_LEADER_OR_FOLLOWER and a
        response dropped. ``now`` is the broker's monotonic clock, ``wall`` its wall clock
        (default ``now``), which only ``replica.lag.time.max.ms`` reads."""
        if type(msg) not in self.serves:
            if type(msg) in REQUESTS:
                self._refuse(src, msg, Errors.NOT_LEADER_OR_FOLLOWER, out)
            return
        if isinstance(msg, Produce):
            self.append_wall = wall
            self.handle_produce(src, msg, now, out)
        elif isinstance(msg, Fetch):
            self.handle_fetch(src, msg, now, out, wall)
        elif isinstance(msg, OffsetsForLeaderEpoch):
            self.handle_offsets_for_leader_epoch(src, msg, out)
        elif isinstance(msg, FetchResponse):
            self.on_fetch_response(msg, now, out, src)
        elif isinstance(msg, AlterPartitionResponse):
            self.on_alter_partition_response(msg, now, out)
        else:
            raise AssertionError(f"{self.name}: SERVES names {type(msg).__name__}, no handler")

    def _refuse(self, src: str, msg: Message, error: Errors, out: Effects) -> None:
        """Answer request ``msg`` with ``error``, changing nothing."""
        if isinstance(msg, Produce):
            out.send(src, ProduceResponse(msg.request_id, self.topic, self.partition, error))
        elif isinstance(msg, Fetch):
            out.send(src, self._fetch_response(msg, error))
        elif isinstance(msg, OffsetsForLeaderEpoch):
            out.send(src, self._offsets_response(msg, error))
        else:
            raise AssertionError(f"{self.name}: {type(msg).__name__} is no request")

    # ------------------------------------------------------------------ leadership

    def become_leader(
        self, request: LeaderAndIsr, now: int, out: Effects, wall: int | None = None
    ) -> None:
        """``Partition.makeLeader`` for a LeaderAndIsr naming this broker, with a newer epoch
        (the broker checked that). ``wall`` is the broker's wall clock (default ``now``): the
        ISR members count as caught up at that reading (``replica.lag.time.max.ms``)."""
        assert request.leader == self.broker_id and request.leader_epoch > self.leader_epoch
        self._fail_purgatory(Errors.NOT_LEADER_OR_FOLLOWER, out)
        self._complete_parked(out, now=now, force=True)  # fetches of the previous epoch
        self._transition(RoleEvent.BECOME_LEADER)
        self._take(request)
        # The log may already hold records of a newer epoch (fetched, without fencing, from
        # a leader ahead of this request). Kafka takes the epoch anyway (its cache drops
        # the newer entries) and writes older-epoch batches after newer ones; here the
        # epoch is not recorded, and the log refuses this leader's appends until a newer
        # epoch comes (handle_produce; docs/impl.md, finding F2).
        written = [e.epoch for e in self.log.epoch_cache.entries if e.start_offset < self.leo]
        if not written or written[-1] <= request.leader_epoch:
            self.log.maybe_assign_epoch_start_offset(request.leader_epoch, self.leo)
        self.remotes = {
            r: RemoteReplica.reset(now if wall is None else wall, r in request.isr)
            for r in request.replicas
            if r != self.broker_id
        }
        if self.fetcher is not None:
            self.next_fetch_id = self.fetcher.next_fetch_id
        self.fetcher = None
        self.pending_alter = None
        out.note(
            BecameLeader(
                self.broker_id,
                self.topic,
                self.partition,
                self.leader_epoch,
                self.leo,
                self.hw,
            )
        )
        self._maybe_advance_hw(out)
        self.check()

    def new_exchange(self, leader_epoch: int) -> TruncationExchange:
        """The truncation exchange for becoming a follower in ``leader_epoch``."""
        return TruncationExchange(
            truncation=self.config.truncation,
            replica_id=self.broker_id,
            topic=self.topic,
            partition=self.partition,
            entries=self.log.epoch_cache.entries,
            log_end_offset=self.leo,
            high_watermark=self.hw,
            current_leader_epoch=leader_epoch,
            first_request_id=self.request_id() * 1000,
        )

    def become_follower(
        self, request: LeaderAndIsr, truncate_to: int | None, now: int, out: Effects
    ) -> None:
        """``Partition.makeFollower``: take the new leader and epoch, fail the purgatory,
        and truncate to ``truncate_to`` (the exchange's result). With ``truncate_to`` None
        (asynchronous mode) the fetcher starts in the truncating phase and
        ``complete_truncation`` finishes the job when the exchange is over."""
        assert request.leader not in (NO_LEADER, self.broker_id)
        assert request.leader_epoch > self.leader_epoch
        self._fail_purgatory(Errors.NOT_LEADER_OR_FOLLOWER, out)
        self._transition(RoleEvent.BECOME_FOLLOWER)
        self._take(request)
        self.remotes = {}
        self.pending_alter = None
        self._complete_parked(out, force=True, now=now)
        # Fetch ids go on from the last fetcher's: a response to a fetch of an earlier
        # leadership (the same broker leading again) never matches the new one's.
        first_id = self.next_fetch_id if self.fetcher is None else self.fetcher.next_fetch_id
        if truncate_to is None:
            self.fetcher = FollowerFetcher(
                request.leader,
                request.leader_epoch,
                FetchPhase.TRUNCATING,
                next_fetch_id=first_id,
            )
        else:
            self._truncate(truncate_to, out)
            self.fetcher = FollowerFetcher(
                request.leader,
                request.leader_epoch,
                FetchPhase.FETCHING,
                next_fetch_id=first_id,
            )
        self.check()

    def complete_truncation(self, offset: int, out: Effects) -> None:
        assert self.role is Role.FOLLOWER and self.fetcher is not None
        assert self.fetcher.phase is FetchPhase.TRUNCATING
        self._truncate(offset, out)
        self.fetcher.phase = FetchPhase.FETCHING
        self.fetcher.exchange = None
        self.check()

    def _truncate(self, offset: int, out: Effects) -> None:
        # Always through truncate_to, even at the LEO: it also drops an epoch begun at the
        # LEO in which nothing was written (this replica led it and wrote nothing).
        before = self.leo
        target = min(offset, before)
        if target < before:
            out.note(
                Truncated(
                    self.broker_id,
                    self.topic,
                    self.partition,
                    self.leader_epoch,
                    self.leader,
                    before,
                    target,
                )
            )
        if self.log.truncate_to(target):
            self.truncated = True
            # ProducerStateManager.truncateAndReload: the removed batches take their
            # producers' sequences with them.
            self.producer_state.rebuild(self.log)
            self.producer_state.check_invariants(self.leo)
        assert self.leo <= target
        self._set_hw(min(self.hw, self.leo))
        out.note(
            Reconciled(
                self.broker_id,
                self.topic,
                self.partition,
                self.leader_epoch,
                self.leader,
                self.leo,
            )
        )

    def _take(self, request: LeaderAndIsr) -> None:
        self.leader = request.leader
        self.leader_epoch = request.leader_epoch
        self.isr = request.isr
        self.partition_epoch = request.partition_epoch
        self.replicas = request.replicas

    # ------------------------------------------------------------------ the leader's HW

    def _maybe_advance_hw(self, out: Effects) -> None:
        """``maybeIncrementLeaderHW``: the HW becomes the smallest LEO over the ISR, if
        that is higher; then complete the purgatory entries it passed."""
        assert self.role is Role.LEADER
        if self.config.strict_min_isr and len(self.isr) < self.config.min_insync_replicas:
            return  # KIP-966: "the High Watermark can only advance if the ISR size is >= min ISR"
        target = self.leo
        for member in self.maximal_isr():
            if member != self.broker_id:
                target = min(target, self.remotes[member].leo)
        if target > self.hw:
            self._set_hw(target)
            self._complete_purgatory(out)

    def _complete_purgatory(self, out: Effects) -> None:
        if not self.purgatory:
            return
        done = [p for p in self.purgatory if p.last_offset < self.hw]
        if not done:
            return
        self.purgatory = [p for p in self.purgatory if p.last_offset >= self.hw]
        enough = len(self.isr) >= self.config.min_insync_replicas
        for p in done:
            if not enough:
                # The write is in the log, below the HW: the answer says where it went.
                self._fail_parked(p, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, out, p.base_offset)
                continue
            count = p.last_offset - p.base_offset + 1
            out.note(
                Acked(
                    self.broker_id,
                    self.topic,
                    self.partition,
                    p.leader_epoch,
                    p.base_offset,
                    count,
                    -1,
                )
            )
            out.send(
                p.client,
                ProduceResponse(
                    p.request_id, self.topic, self.partition, Errors.NONE, p.base_offset
                ),
            )

    def _fail_purgatory(self, error: Errors, out: Effects) -> None:
        for p in self.purgatory:
            self._fail_parked(p, error, out)
        self.purgatory = []

    def _fail_parked(
        self, p: PendingProduce, error: Errors, out: Effects, base_offset: int = -1
    ) -> None:
        """A parked acks=all write ends in ``error``: the world notes it (``ProduceFailed``)
        and its producer is answered."""
        out.note(ProduceFailed(self.broker_id, self.topic, self.partition, p.base_offset, error))
        out.send(
            p.client, ProduceResponse(p.request_id, self.topic, self.partition, error, base_offset)
        )

    # ------------------------------------------------------------------ produce

    def handle_produce(self, src: str, msg: Produce, now: int, out: Effects) -> None:
        """A producer's write, at the leader (``step`` refuses it elsewhere). The batch's
        LogAppendTime, when its log keeps one (``retention.ms``), is the wall clock of the
        step (``append_wall``, default ``now``) in ms, as Kafka stamps
        ``time.milliseconds()``."""

        def reply(error: Errors, base_offset: int = -1) -> None:
            if msg.acks != 0 or error is not Errors.NONE:
                out.send(
                    src,
                    ProduceResponse(msg.request_id, self.topic, self.partition, error, base_offset),
                )

        assert self.role is Role.LEADER, self.name
        if msg.acks == -1 and len(self.isr) < self.config.min_insync_replicas:
            reply(Errors.NOT_ENOUGH_REPLICAS)
            return
        if msg.acks == -1 and len(self.purgatory) >= self.config.max_purgatory:
            reply(Errors.REQUEST_TIMED_OUT)
            return
        batch = RecordBatch.of_pairs(msg.records)
        if msg.idempotent:
            verdict = self.producer_state.check(
                msg.producer_id, msg.producer_epoch, msg.base_sequence, len(msg.records)
            )
            if isinstance(verdict, Duplicate):
                self._answer_duplicate(src, msg, verdict, now, out)
                return
            if verdict is not None:
                reply(verdict)
                return
            batch = batch.with_producer(msg.producer_id, msg.producer_epoch, msg.base_sequence)
        active = self.log.active_segment
        try:
            wall = self.append_wall
            append_ms = (now if wall is None else wall) // 1_000_000
            info = self.log.append_as_leader(batch, self.leader_epoch, append_ms)
        except StorageError:
            # EpochRegressionError: see become_leader.
            reply(Errors.KAFKA_STORAGE_ERROR)
            return
        if self.log.active_segment is not active:
            # The append rolled the log (Kafka's UnifiedLog.roll): snapshot the producer
            # state below the new segment, which does not hold this batch yet.
            self.producer_state.take_snapshot(self.log, info.first_offset)
        if msg.idempotent:
            self.producer_state.update(
                ProducerBatch(
                    msg.producer_id,
                    msg.producer_epoch,
                    msg.base_sequence,
                    info.first_offset,
                    info.last_offset,
                    self.leader_epoch,
                )
            )
        count = info.last_offset - info.first_offset + 1
        out.note(
            Appended(
                self.broker_id,
                self.topic,
                self.partition,
                self.leader_epoch,
                info.first_offset,
                count,
                msg.acks,
            )
        )
        if msg.acks == 1:
            out.note(
                Acked(
                    self.broker_id,
                    self.topic,
                    self.partition,
                    self.leader_epoch,
                    info.first_offset,
                    count,
                    1,
                )
            )
            reply(Errors.NONE, info.first_offset)
        elif msg.acks == -1:
            timeout = self.config.produce_timeout_ns
            self.purgatory.append(
                PendingProduce(
                    src,
                    msg.request_id,
                    self.leader_epoch,
                    info.first_offset,
                    info.last_offset,
                    None if timeout is None else now + timeout,
                )
            )
        self._maybe_advance_hw(out)
        self._complete_parked(out, now=now)
        self.check()

    def _answer_duplicate(
        self, src: str, msg: Produce, duplicate: Duplicate, now: int, out: Effects
    ) -> None:
        """A batch already in the log (a retry, a redelivered request): nothing is appended
        and the producer gets the original's offsets -- for acks=all once the HW has passed
        them, as for the original (Kafka's ``findDuplicateBatch``, then the delayed produce
        of the original's offsets)."""
        original = duplicate.original
        count = original.last_offset - original.first_offset + 1
        assert count == len(msg.records), (original, msg)
        if msg.acks == 0:
            return
        if msg.acks == 1:
            out.note(
                Acked(
                    self.broker_id,
                    self.topic,
                    self.partition,
                    original.leader_epoch,
                    original.first_offset,
                    count,
                    1,
                )
            )
            out.send(
                src,
                ProduceResponse(
                    msg.request_id, self.topic, self.partition, Errors.NONE, original.first_offset
                ),
            )
            return
        timeout = self.config.produce_timeout_ns
        self.purgatory.append(
            PendingProduce(
                src,
                msg.request_id,
                original.leader_epoch,
                original.first_offset,
                original.last_offset,
                None if timeout is None else now + timeout,
            )
        )
        self._complete_purgatory(out)
        self.check()

    # ------------------------------------------------------------------ fetch (leader side)

    def _epoch_error(self, current_leader_epoch: int) -> Errors | None:
        """KIP-320's check of the requester's current leader epoch."""
        if current_leader_epoch == ANY_EPOCH:
            return None
        if current_leader_epoch < self.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if current_leader_epoch > self.leader_epoch:
            return Errors.UNKNOWN_LEADER_EPOCH
        return None

    def _fetch_response(self, msg: Fetch, error: Errors, records: bytes = b"") -> FetchResponse:
        return FetchResponse(
            self.topic,
            self.partition,
            error,
            msg.fetch_id,
            msg.fetch_offset,
            self.hw,
            self.leo,
            records,
            self.log.log_start_offset,
        )

    def handle_fetch(
        self, src: str, msg: Fetch, now: int, out: Effects, wall: int | None = None
    ) -> None:
        """A follower's or a consumer's fetch, at the leader (a consumer's at a follower:
        `_serve_read_replica`; ``step`` refuses it offline). Nothing changes on an error.
        The follower's fetch is timed by the leader's wall clock ``wall`` (default
        ``now``), as Kafka times it with ``time.milliseconds()`` for
        ``replica.lag.time.max.ms``."""
        if self.role is not Role.LEADER:
            self._serve_read_replica(src, msg, out)
            return
        error = self._epoch_error(msg.current_leader_epoch)
        if error is not None:
            out.send(src, self._fetch_response(msg, error))
            return
        follower = msg.replica_id != CONSUMER_ID
        if follower and msg.replica_id not in self.remotes:
            out.send(src, self._fetch_response(msg, Errors.UNKNOWN_TOPIC_OR_PARTITION))
            return
        leo = self.leo
        if not self.log.log_start_offset <= msg.fetch_offset <= leo:
            out.send(src, self._fetch_response(msg, Errors.OFFSET_OUT_OF_RANGE))
            return
        if not follower:
            if msg.max_wait_ns and msg.fetch_offset >= self.hw:
                self.parked.append(ParkedFetch(src, msg, now + msg.max_wait_ns))
                return
            out.send(src, self._consumer_response(msg))
            return
        # Kafka's order: read the records and the HW for the response, then record the
        # follower's LEO and recompute the HW.
        response = self._follower_response(msg)
        record_fetch(
            self.remotes[msg.replica_id], msg.fetch_offset, leo, now if wall is None else wall
        )
        self._maybe_advance_hw(out)
        if not response.records and msg.max_wait_ns:
            self.parked.append(ParkedFetch(src, msg, now + msg.max_wait_ns))
        else:
            out.send(src, response)
        self._complete_parked(out, now=now)
        self.check()

    def _serve_read_replica(self, src: str, msg: Fetch, out: Effects) -> None:
        """A consumer's fetch at a follower (KIP-392, fetch from the closest replica:
        Kafka 2.4's ``replica.selector.class`` points a consumer with a ``client.rack`` at
        a follower): the records up to the follower's own high watermark, which trails
        the leader's by a fetch; its current leader epoch checked as at the leader
        (KIP-320): a consumer whose metadata still names this broker the leader of an
        older epoch gets FENCED_LEADER_EPOCH. A replica's fetch is the leader's to answer,
        and so is a fetch with no epoch (a client before Fetch v11, which Kafka serves from
        the leader only): NOT_LEADER_OR_FOLLOWER. Answered at once, never parked. Nothing
        changes."""
        if msg.replica_id != CONSUMER_ID or msg.current_leader_epoch == ANY_EPOCH:
            out.send(src, self._fetch_response(msg, Errors.NOT_LEADER_OR_FOLLOWER))
            return
        error = self._epoch_error(msg.current_leader_epoch)
        if error is None and not self.log.log_start_offset <= msg.fetch_offset <= self.leo:
            error = Errors.OFFSET_OUT_OF_RANGE
        out.send(
            src, self._consumer_response(msg) if error is None else self._fetch_response(msg, error)
        )

    def _consumer_response(self, msg: Fetch) -> FetchResponse:
        records = self.log.read(msg.fetch_offset, msg.max_bytes, upto=self.hw)
        return self._fetch_response(msg, Errors.NONE, records)

    def _follower_response(self, msg: Fetch) -> FetchResponse:
        """The records at a follower's fetch offset, whatever their leader epoch: Kafka's
        replication Fetch (versions 0-11, through 2.6) carries no epoch of the follower's
        log, so a leader cannot tell that the follower's log diverged from its own. A
        follower whose truncation left a record the leader lacks (KIP-279's fast failover,
        with ``kip101`` truncation) appends the leader's older-epoch batches after it, as
        Kafka did, and the logs stay diverged below the high watermark. KIP-595's
        ``LastFetchedEpoch`` and its diverging-epoch answer (Kafka 2.7, KAFKA-10554) are not
        modelled: with KIP-320's truncation no follower needs them (docs/impl.md, F2)."""
        records = self.log.read(msg.fetch_offset, msg.max_bytes)
        return self._fetch_response(msg, Errors.NONE, records)

    def _complete_parked(self, out: Effects, *, now: int, force: bool = False) -> None:
        """Answer parked fetches that now have something to return (or must go)."""
        if not self.parked:
            return
        if force or self.role is not Role.LEADER:
            for p in self.parked:
                out.send(p.src, self._fetch_response(p.request, Errors.NOT_LEADER_OR_FOLLOWER))
            self.parked = []
            return
        keep = []
        # Answering a parked fetch changes neither end of the log: read them once.
        log_start, leo = self.log.log_start_offset, self.leo
        for p in self.parked:
            msg = p.request
            consumer = msg.replica_id == CONSUMER_ID
            if not log_start <= msg.fetch_offset <= leo:
                # past the LEO after a truncation, or below a log start retention moved
                out.send(p.src, self._fetch_response(msg, Errors.OFFSET_OUT_OF_RANGE))
            elif consumer and (self.hw > msg.fetch_offset or now >= p.deadline):
                out.send(p.src, self._consumer_response(msg))
            elif not consumer and (leo > msg.fetch_offset or now >= p.deadline):
                out.send(p.src, self._follower_response(msg))
            else:
                keep.append(p)
        self.parked = keep

    # ------------------------------------------------------------------ OffsetsForLeaderEpoch

    def handle_offsets_for_leader_epoch(
        self, src: str, msg: OffsetsForLeaderEpoch, out: Effects
    ) -> None:
        """Where epoch ``msg.leader_epoch`` ends in the leader's log (KIP-101, KIP-279),
        checked against the asker's current leader epoch (KIP-320); at the leader only
        (``step`` refuses it elsewhere)."""
        assert self.role is Role.LEADER, self.name
        error = self._epoch_error(msg.current_leader_epoch)
        if error is not None:
            out.send(src, self._offsets_response(msg, error))
        elif msg.leader_epoch == UNDEFINED_EPOCH:
            out.send(src, self._offsets_response(msg, Errors.NONE))
        else:
            found = self.log.end_offset_for_epoch(msg.leader_epoch)
            out.send(
                src, self._offsets_response(msg, Errors.NONE, found.leader_epoch, found.end_offset)
            )

    def _offsets_response(
        self,
        msg: OffsetsForLeaderEpoch,
        error: Errors,
        epoch: int = UNDEFINED_EPOCH,
        end_offset: int = UNDEFINED_EPOCH_OFFSET,
    ) -> OffsetsForLeaderEpochResponse:
        return OffsetsForLeaderEpochResponse(
            self.topic, self.partition, error, msg.request_id, epoch, end_offset
        )

    # ------------------------------------------------------------------ ISR changes

    def propose_isr_change(self, now: int, out: Effects, wall: int | None = None) -> None:
        """Send the controller the next ISR change, if any (``AlterPartition``, KIP-497):
        every out-of-sync follower out at once, or else one caught-up follower in. At most
        one change in flight, and only from a registered broker. Lag is judged by the wall
        clock ``wall`` (default ``now``), as ``Partition.getOutOfSyncReplicas`` judges it by
        ``time.milliseconds()``."""
        broker_epoch = self._broker_epoch()
        if broker_epoch is None or self.role is not Role.LEADER or self.pending_alter is not None:
            return
        dropped = out_of_sync(
            leader=self.broker_id,
            isr=self.isr,
            remotes=self.remotes,
            leader_leo=self.leo,
            now=now if wall is None else wall,
            lag_time_max_ns=self.config.replica_lag_time_max_ns,
        )
        if dropped:
            new_isr = self.isr - dropped
        else:
            candidates = caught_up_candidates(
                leader=self.broker_id,
                isr=self.isr,
                replicas=self.remotes.keys(),
                remotes=self.remotes,
                high_watermark=self.hw,
                epoch_start_offset=self.epoch_start_offset() if self.fenced else None,
                fetched_since_ns=(
                    (now if wall is None else wall) - self.config.replica_lag_time_max_ns
                    if self.config.strict_min_isr
                    else None
                ),
            )
            if not candidates:
                return
            new_isr = self.isr | {candidates[0]}
        assert self.broker_id in new_isr
        self.pending_alter = AlterPartition(
            broker_id=self.broker_id,
            broker_epoch=broker_epoch,
            topic=self.topic,
            partition=self.partition,
            leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch,
            new_isr=new_isr,
            request_id=self.request_id(),
        )
        self.pending_alter_since = now
        out.send(CONTROLLER, self.pending_alter)

    def on_alter_partition_response(
        self, msg: AlterPartitionResponse, now: int, out: Effects
    ) -> None:
        """The controller's answer to the ISR change in flight: take the ISR it committed."""
        pending = self.pending_alter
        if pending is None or msg.request_id != pending.request_id:
            return
        self.pending_alter = None
        if msg.error is not Errors.NONE or self.role is not Role.LEADER:
            return
        if msg.leader != self.broker_id or msg.leader_epoch != self.leader_epoch:
            return
        self.isr = msg.isr
        self.partition_epoch = msg.partition_epoch
        self._maybe_advance_hw(out)
        self._complete_parked(out, now=now)
        self.check()

    def on_alter_partition_failed(self, request: AlterPartition) -> None:
        if self.pending_alter is not None and self.pending_alter.request_id == request.request_id:
            self.pending_alter = None

    # ------------------------------------------------------------------ fetch (follower side)

    def build_fetch(self, now: int) -> Fetch | None:
        """The next fetch of this follower, if it may send one now (registered, fetching,
        none in flight, not backing off); marks it in flight."""
        broker_epoch = self._broker_epoch()
        if broker_epoch is None or self.role is not Role.FOLLOWER or self.fetcher is None:
            return None
        if now < self.fetcher.next_fetch_at:
            return None
        settings = self.fetch_settings
        return self.fetcher.build_fetch(
            replica_id=self.broker_id,
            broker_epoch=broker_epoch,
            topic=self.topic,
            partition=self.partition,
            fetch_offset=self.leo,
            fenced=self.fenced,
            max_bytes=settings.max_bytes,
            max_wait_ns=settings.max_wait_ns,
            now=now,
        )

    def fetch_if_ready(self, now: int, out: Effects) -> None:
        """Send the next fetch to the leader, if ``build_fetch`` allows one now."""
        fetch = self.build_fetch(now)
        if fetch is not None:
            assert self.fetcher is not None
            out.send(broker_node(self.fetcher.leader), fetch)

    def on_fetch_response(
        self, msg: FetchResponse, now: int, out: Effects, src: str | None = None
    ) -> None:
        """Apply the answer to the fetch in flight (a stale one is discarded, an error backs
        off ``replica.fetch.backoff.ms``); once applied, a pipelined follower fetches
        again at once.

        Only the leader this follower fetches from answers its fetch: Kafka runs a fetcher
        thread per source broker (``ReplicaFetcherThread``), and a partition that moved to
        another leader left the old one's thread (``removeFetcherForPartitions``), which
        drops what that broker still sends for it. A response from ``src`` other than the
        fetcher's leader is such a leftover (an old leader, maybe a zombie still taking
        writes in its epoch), whatever its fetch id."""
        fetcher = self.fetcher
        assert self.role is Role.FOLLOWER and fetcher is not None, self.name
        if src is not None and src != broker_node(fetcher.leader):
            return
        if not fetcher.accept(msg, self.leo):
            return
        backoff_ns = self.fetch_settings.backoff_ns
        if msg.error is Errors.OFFSET_OUT_OF_RANGE and msg.log_start_offset > self.leo:
            # Kafka's ``handleOutOfRangeError``: the leader's retention deleted what this
            # follower still lacks; everything below the leader's log start was below its
            # high watermark, so the follower starts over, empty, there.
            self.log.truncate_fully_and_start_at(msg.log_start_offset)
            self.producer_state.rebuild(self.log)
            self._set_hw(self.leo)
            fetcher.next_fetch_at = now
            self.check()
            return
        if msg.error is not Errors.NONE:
            fetcher.next_fetch_at = now + backoff_ns
            return
        if msg.records:
            start, active = self.leo, self.log.active_segment
            try:
                self.log.append_as_follower(msg.records)
            except (StorageError, OffsetOutOfRangeError):
                fetcher.next_fetch_at = now + backoff_ns
                return
            rolled: list[int] = []
            if self.log.active_segment is not active:
                # Rolled (Kafka's UnifiedLog.roll): a producer-state snapshot at each new
                # segment's base offset, once the batches below it are loaded.
                old = active.base_offset
                rolled = [s.base_offset for s in self.log.segments if s.base_offset > old]
            self.producer_state.load(msg.records, start, rolled, self.log)
        self._set_hw(min(msg.high_watermark, self.leo))
        self.check()
        if self.fetch_settings.pipelined:
            self.fetch_if_ready(now, out)

    # ------------------------------------------------------------------ time

    def tick(self, now: int, out: Effects, request_timeout_ns: int | None = None) -> None:
        """Expire purgatory entries, parked fetches and an unanswered ISR change (after
        ``request_timeout_ns``; None: never)."""
        if (
            self.pending_alter is not None
            and request_timeout_ns is not None
            and now - self.pending_alter_since > request_timeout_ns
        ):
            self.pending_alter = None
        if self.purgatory:
            expired = [p for p in self.purgatory if p.deadline is not None and p.deadline <= now]
            if expired:
                self.purgatory = [p for p in self.purgatory if p not in expired]
                for p in expired:
                    self._fail_parked(p, Errors.REQUEST_TIMED_OUT, out)
        self._complete_parked(out, now=now)

    # ------------------------------------------------------------------ checks

    def check(self) -> None:
        leo = self.leo
        assert 0 <= self.hw <= leo, (self.name, self.hw, leo)
        assert len(self.purgatory) <= self.config.max_purgatory, self.name
        if self.role is Role.LEADER:
            assert self.leader == self.broker_id, self.name
            assert self.broker_id in self.isr, f"{self.name}: a leader is in its own ISR"
            assert self.isr <= frozenset(self.replicas), (self.name, self.isr, self.replicas)
            assert self.fetcher is None, self.name
            for p in self.purgatory:
                assert p.last_offset < leo, (self.name, p)
        else:
            assert not self.purgatory, f"{self.name}: only a leader has a purgatory"
            assert not self.remotes, self.name
            assert self.pending_alter is None, f"{self.name}: only a leader changes its ISR"
        if self.role is Role.FOLLOWER:
            assert self.fetcher is not None and self.leader not in (NO_LEADER, self.broker_id)
        if self.role is Role.OFFLINE:
            assert self.leader == NO_LEADER and self.leader_epoch == NIL_EPOCH

    def describe(self) -> str:
        return (
            f"{self.name} {self.role.value} epoch={self.leader_epoch} leader={self.leader} "
            f"isr={sorted(self.isr)} hw={self.hw} leo={self.leo}"
        )
