"""The follower's side of replication: truncation on becoming a follower, then fetching
(Kafka's ``ReplicaFetcherThread`` / ``AbstractFetcherThread``, one partition at a time).

A replica that becomes a follower of a new leader (a LeaderAndIsr with a newer epoch) first
decides how much of its log to keep, by the truncation rule of the protocol variant
(``TRUNCATIONS``, the replication spec's variants):

``high_watermark`` (before KIP-101)
    truncate to its own high watermark. No exchange with the leader. Loses committed data
    (KIP-101's first scenario) and lets logs diverge below the HW (its second).
``kip101``
    ask the leader, with OffsetsForLeaderEpoch, where the follower's latest epoch ends in
    the leader's log, and truncate there (to the HW if the leader does not know the epoch).
    One round trip. Leadership moving twice quickly defeats it (KIP-279).
``kip279``
    the leader answers with the largest epoch it knows <= the one asked, and its end
    offset; a follower that does not know that epoch truncates to where *its* largest
    smaller epoch ends and asks again, until both sides name the same epoch
    (``AbstractFetcherThread.getOffsetTruncationState``).
``kip320``
    as ``kip279``, and every request carries the follower's *current* leader epoch: a
    leader in another epoch answers FENCED_LEADER_EPOCH (it is newer) or
    UNKNOWN_LEADER_EPOCH (it is older) and changes nothing, so a follower never truncates
    against a replica whose leadership is stale. Fetches carry it too (``fenced``).

``TruncationExchange`` runs the exchange on a *scratch copy* of the follower's leader-epoch
cache, so nothing in the follower's log changes until the final offset is known: where
Kafka truncates after each round, this truncates once, to the same offset (each round's
offset is at least the next one's). The broker applies the result.

Then the follower fetches from its log end offset (``FollowerFetcher``): one request in
flight at a time, a response accepted only if it answers that request, in the epoch it was
sent in, at the offset the log still ends at (a stale response after a truncation or an
epoch change is discarded, as Kafka's ``PartitionFetchState`` checks do).

A fetch carries no epoch of the follower's log (Kafka's Fetch before KIP-595's
``LastFetchedEpoch``): what the truncation rule left is what the follower appends to, so a
rule that keeps a record the leader lacks leaves the logs diverged (KIP-279).
"""

from __future__ import annotations

import enum

import attrs

from impl.log import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry, LeaderEpochCache
from impl.protocol import (
    ANY_EPOCH,
    Errors,
    Fetch,
    FetchResponse,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
)
from spec.replication import TRUNCATIONS, VARIANTS, TruncationRule

__all__ = [
    "TRUNCATIONS",  # the spec's: the implementation runs exactly the variants it models
    "ExchangeDone",
    "ExchangeFailed",
    "FetchPhase",
    "FetchSettings",
    "FollowerFetcher",
    "TruncationExchange",
    "check_truncation",
    "fenced",
]


def fenced(truncation: str) -> bool:
    """Whether variant ``truncation`` fences by leader epoch (KIP-320): every fetch and
    OffsetsForLeaderEpoch carries the requester's current leader epoch, and the leader
    refuses one from another epoch (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH).
    ``truncation`` is one of ``TRUNCATIONS`` (``check_truncation``). The spec's variant
    table says which variants do (``spec.replication.variants``)."""
    return VARIANTS[truncation].epoch_fencing


def check_truncation(truncation: str) -> None:
    """Refuse a truncation variant that is not one of ``TRUNCATIONS``."""
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation {truncation!r} is not one of {', '.join(TRUNCATIONS)}")


@attrs.frozen
class ExchangeDone:
    """The exchange is over: truncate the log to ``offset`` (at most the LEO)."""

    offset: int
    rounds: int


@attrs.frozen
class ExchangeFailed:
    """The leader could not answer (not leader, fenced or unknown epoch, unreachable)."""

    error: Errors


class TruncationExchange:
    """One follower's OffsetsForLeaderEpoch exchange with its new leader.

    ``start()`` returns the first request, or ``ExchangeDone`` when no exchange is needed;
    ``on_response()`` returns the next request, ``ExchangeDone`` or ``ExchangeFailed``.
    The number of rounds is bounded by the cache's length plus one (each intermediate round
    removes at least one epoch from the scratch cache).
    """

    def __init__(
        self,
        *,
        truncation: str,
        replica_id: int,
        topic: str,
        partition: int,
        entries: tuple[EpochEntry, ...],
        log_end_offset: int,
        high_watermark: int,
        current_leader_epoch: int,
        first_request_id: int,
    ) -> None:
        check_truncation(truncation)
        assert 0 <= high_watermark <= log_end_offset, (high_watermark, log_end_offset)
        self.truncation = truncation
        self.rule = VARIANTS[truncation].truncation
        """The variant's truncation rule (``spec.replication.variants``)."""
        self.replica_id = replica_id
        self.topic = topic
        self.partition = partition
        self.scratch = LeaderEpochCache(None, entries)
        self.leo = log_end_offset
        self.fetch_offset = high_watermark
        """Where the follower would truncate if the leader knew no epoch (Kafka's initial
        fetch offset: the HW; then each intermediate truncation point)."""
        self.current_leader_epoch = current_leader_epoch
        self.rounds = 0
        self.max_rounds = len(entries) + 2
        self._next_request_id = first_request_id
        self.outstanding: OffsetsForLeaderEpoch | None = None

    def start(self) -> OffsetsForLeaderEpoch | ExchangeDone:
        if self.rule is TruncationRule.HIGH_WATERMARK:
            return ExchangeDone(self.fetch_offset, 0)
        latest = self.scratch.latest_epoch
        if latest is None and not fenced(self.truncation):
            # Kafka: a partition without epochs truncates to its HW (its log is empty here:
            # every batch carries an epoch, and the cache is derived from them).
            return ExchangeDone(self.fetch_offset, 0)
        # kip320 asks even with an empty cache: the request validates the leader's epoch,
        # so the follower takes the new epoch only from a leader that holds it.
        return self._request(UNDEFINED_EPOCH if latest is None else latest)

    def _request(self, epoch: int) -> OffsetsForLeaderEpoch:
        self.rounds += 1
        assert self.rounds <= self.max_rounds, "the epoch exchange does not converge"
        current = self.current_leader_epoch if fenced(self.truncation) else ANY_EPOCH
        request = OffsetsForLeaderEpoch(
            replica_id=self.replica_id,
            topic=self.topic,
            partition=self.partition,
            current_leader_epoch=current,
            leader_epoch=epoch,
            request_id=self._next_request_id,
        )
        self._next_request_id += 1
        self.outstanding = request
        return request

    def on_response(
        self, response: OffsetsForLeaderEpochResponse
    ) -> OffsetsForLeaderEpoch | ExchangeDone | ExchangeFailed:
        assert self.outstanding is not None, "a response without a request"
        assert response.request_id == self.outstanding.request_id, (response, self.outstanding)
        self.outstanding = None
        if response.error is not Errors.NONE:
            return ExchangeFailed(response.error)
        leader_epoch, leader_end = response.leader_epoch, response.end_offset
        if leader_end == UNDEFINED_EPOCH_OFFSET:
            # The leader knows no epoch <= the one asked: fall back to the fetch offset.
            return ExchangeDone(min(self.fetch_offset, self.leo), self.rounds)
        if self.rule is TruncationRule.EPOCH_END or leader_epoch == UNDEFINED_EPOCH:
            # KIP-101: only the end offset counts.
            return ExchangeDone(min(leader_end, self.leo), self.rounds)
        # KIP-279: compare with where the follower's own largest epoch <= the leader's ends.
        mine = self.scratch.end_offset_for(leader_epoch, self.leo)
        if mine.leader_epoch == UNDEFINED_EPOCH:
            return ExchangeDone(min(leader_end, self.leo), self.rounds)
        if mine.leader_epoch != leader_epoch:
            # The follower does not know the leader's epoch: cut to where its largest
            # smaller epoch ends and ask again.
            cut = min(mine.end_offset, self.leo)
            self.scratch.truncate_from_end(cut)
            self.leo = cut
            self.fetch_offset = min(self.fetch_offset, cut)
            latest = self.scratch.latest_epoch
            if latest is None:
                return ExchangeDone(min(self.fetch_offset, self.leo), self.rounds)
            return self._request(latest)
        return ExchangeDone(min(mine.end_offset, leader_end, self.leo), self.rounds)

    def on_failure(self) -> ExchangeFailed:
        self.outstanding = None
        return ExchangeFailed(Errors.NETWORK_EXCEPTION)


@attrs.frozen
class FetchSettings:
    """How a broker's followers fetch. ``max_bytes``: ``replica.fetch.max.bytes`` (the first
    batch is returned whole anyway, KIP-74); ``max_wait_ns``: ``replica.fetch.wait.max.ms``,
    how long a leader may park a fetch with nothing new; ``backoff_ns``:
    ``replica.fetch.backoff.ms``, the pause after an error; ``pipelined``: the next fetch goes
    out as soon as a response is applied, as Kafka's fetcher thread loops (refinement mode
    turns it off: the world starts each round trip, one record at a time, no long poll)."""

    max_bytes: int = 1024 * 1024
    max_wait_ns: int = 500_000_000
    backoff_ns: int = 1_000_000_000
    pipelined: bool = True


class FetchPhase(enum.Enum):
    TRUNCATING = "truncating"
    """Waiting for the epoch exchange before fetching (asynchronous mode only)."""
    FETCHING = "fetching"


@attrs.define
class FollowerFetcher:
    """The fetch state of one follower partition: which leader, in which epoch, what is in
    flight, when to try again."""

    leader: int
    leader_epoch: int
    phase: FetchPhase
    exchange: TruncationExchange | None = None
    in_flight: Fetch | None = None
    in_flight_since: int = 0
    next_fetch_at: int = 0
    next_fetch_id: int = 0

    def build_fetch(
        self,
        *,
        replica_id: int,
        broker_epoch: int,
        topic: str,
        partition: int,
        fetch_offset: int,
        fenced: bool,
        max_bytes: int,
        max_wait_ns: int,
        now: int,
    ) -> Fetch | None:
        """The next fetch, or None while truncating or while one is in flight."""
        if self.phase is not FetchPhase.FETCHING or self.in_flight is not None:
            return None
        request = Fetch(
            replica_id=replica_id,
            broker_epoch=broker_epoch,
            topic=topic,
            partition=partition,
            fetch_offset=fetch_offset,
            current_leader_epoch=self.leader_epoch if fenced else ANY_EPOCH,
            max_bytes=max_bytes,
            fetch_id=self.next_fetch_id,
            max_wait_ns=max_wait_ns,
        )
        self.next_fetch_id += 1
        self.in_flight = request
        self.in_flight_since = now
        return request

    def accept(self, response: FetchResponse, log_end_offset: int) -> bool:
        """Whether ``response`` answers the fetch in flight, at the offset the log still
        ends at; clears the in-flight slot if it answers it at all."""
        request = self.in_flight
        if request is None or response.fetch_id != request.fetch_id:
            return False
        self.in_flight = None
        return response.fetch_offset == log_end_offset == request.fetch_offset

    def forget_in_flight(self) -> None:
        self.in_flight = None
