"""A consumer in a group, with its application: the Java ``KafkaConsumer`` subscribed to a
topic, reading the partitions the group assigns it, and the loop of an application that
processes what it polls and commits (issues 18 and 19).

``GroupConsumer`` composes the group member (``impl.group.member``: FindCoordinator,
JoinGroup/SyncGroup, heartbeats, the rebalance listener) with one fetcher per assigned
partition (``impl.client.Consumer``: metadata, Fetch from the partition's leader, up to the
HW). It is sans-I/O like them: ``poll(now)`` is one turn of the application's loop,
``step(src, msg, now)`` takes a response, ``tick(now)`` runs the timers.

- **Where to start**: when the member is assigned partitions it asks the coordinator for the
  group's committed offsets (OffsetFetch, retried on ``COORDINATOR_LOAD_IN_PROGRESS`` and
  ``NOT_COORDINATOR``) and starts each partition there, or where ``auto.offset.reset`` says
  when the group has none: ``earliest`` (the log start, 0 here: nothing is deleted),
  ``latest`` (the HW: ListOffsets is not modelled, so a first fetch from the start finds the
  HW and its records are dropped unprocessed), ``none`` (Kafka's
  ``NoOffsetForPartitionException``: a failed poll with ``OFFSET_OUT_OF_RANGE``, and the
  partition is not read in this assignment).
- **Processing and committing** (``commit``): ``after-process`` processes every polled batch
  and then commits the positions with ``commitSync`` (at least once), ``before-process``
  commits first and processes only once the commit is acknowledged (at most once), ``auto``
  (``enable.auto.commit``) processes at once and commits the processed positions inside a
  later ``poll`` every ``auto.commit.interval.ms`` (``commitAsync``, no retry). ``commitSync``
  blocks the loop (no fetch while it runs) and retries a retriable error
  (``COORDINATOR_LOAD_IN_PROGRESS``, ``NOT_COORDINATOR``, ``COORDINATOR_NOT_AVAILABLE``,
  ``REQUEST_TIMED_OUT``) until ``commit_timeout_ns`` (``default.api.timeout.ms``).
- **onPartitionsRevoked**: before the member gives partitions up it commits what it processed
  of them (as the ``ConsumerRebalanceListener`` docs advise for at-least-once; auto commit
  does the same in ``onJoinPrepare``). Records fetched for a revoked partition are dropped.
- **seek, pause, resume** (``KafkaConsumer`` Javadoc, "Manual Offset Control" and
  "Consumption Flow Control"): ``seek(tp, offset)`` sets the fetch position of an assigned
  partition (the next fetch reads from there; records fetched and not yet returned are
  discarded, and a fetch in flight from the old position is discarded when it answers);
  ``pause(tps)`` stops fetching those partitions without leaving the group (``poll`` goes
  on: heartbeats, rejoins; records already fetched wait), ``resume(tps)`` restarts them. Each
  refuses a partition not assigned (Kafka's ``IllegalStateException`` "No current
  assignment for partition"). A rebalance that revokes a paused partition drops the pause;
  a partition assigned anew starts unpaused.
- **A processing failure** (``fail_processing``, the harness's ``fail-processing`` fault): the
  record handler throws part way through a batch (the records before it had their side
  effect); the application catches it and seeks the partition back to the offset of its
  last acknowledged commit, the usual at-least-once recovery, and reads on from there: the
  records processed since that commit are processed again (the history's ``seek`` explains
  them: ``duplicated-seek``).

History (``docs/history-format.md``, "consumer groups"): the member's ``subscribe`` and
``assign``; each fetch's ``poll`` (with ``member`` and ``generation``); ``process`` (the
records the application finished); ``commit`` (invoke with ``mode``; ``ok``, ``fail`` when no
attempt can have been appended, else ``info``: the process then goes on as a new one, as
Jepsen's do); ``fetch-offsets``; ``seek`` (``invoke`` and ``ok``, value ``{"t-0": offset}``);
``pause`` and ``resume`` (``ok``, value the keys).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from impl.client import Consumer, ConsumerConfig
from impl.group.member import Member
from impl.group.messages import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    NO_OFFSET,
    NONE,
    NOT_COORDINATOR,
    REQUEST_TIMED_OUT,
    OffsetCommit,
    OffsetCommitResponse,
    OffsetFetch,
    OffsetFetchResponse,
    Partitions,
)
from impl.messages import Message
from impl.protocol import Effects, FetchResponse, MetadataResponse, RequestFailed
from impl.sim.clock import ms
from spec.group.lifecycle import MEMBER_STABLE

__all__ = [
    "COMMIT_MODES",
    "OFFSET_RESETS",
    "ConsumerApp",
    "GroupConsumer",
    "NoCurrentAssignmentError",
]

COMMIT_MODES = ("after-process", "after-process-async", "before-process", "auto")
"""When the application commits: ``commitSync`` after processing each batch (at least
once), ``commitAsync`` after processing (at least once; no retry, the loop goes on while it
runs), ``commitSync`` before processing (at most once), or ``enable.auto.commit``."""
NON_BLOCKING = frozenset({"auto", "async"})
"""Commit modes of the history's ``commit`` ops that do not block the poll loop and are not
retried: auto commit and ``commitAsync`` (``KafkaConsumer`` Javadoc: "commitAsync ... will
not retry", since a retry could overwrite a later commit)."""
OFFSET_RESETS = ("earliest", "latest", "none")
RETRIABLE = frozenset(
    {COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT}
)
"""Commit errors ``commitSync`` retries (Kafka's ``RetriableException`` s)."""
MAYBE_APPENDED = frozenset({NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT})
"""Commit errors after which the record may still be in the log (the append happened and
was not yet committed when the leader moved or the purgatory expired)."""


class NoCurrentAssignmentError(RuntimeError):
    """``seek``, ``pause`` or ``resume`` of a partition the consumer is not assigned (Kafka's
    ``IllegalStateException``: "No current assignment for partition")."""


@attrs.frozen
class ConsumerApp:
    """The application's choices and the consumer's configs for them."""

    commit: str = "after-process"
    auto_offset_reset: str = "earliest"
    """``auto.offset.reset`` (Kafka's default is ``latest``; ``earliest`` puts every record
    in play)."""
    auto_commit_interval_ns: int = ms(5_000)
    """``auto.commit.interval.ms``."""
    processing_ns: int = ms(100)
    """How long the application takes to process a polled batch: its side effect (the
    ``process`` op) is done at the first turn of the loop after that; a consumer killed
    meanwhile never finishes it."""
    fail_every: int = 5
    """While ``fail_processing`` is on, the handler throws on one batch in this many."""
    commit_timeout_ns: int = ms(15_000)
    """How long ``commitSync`` retries (``default.api.timeout.ms``, 60 s in Kafka)."""
    request_timeout_ns: int = ms(5_000)
    fetch: ConsumerConfig = attrs.field(factory=ConsumerConfig)

    def __attrs_post_init__(self) -> None:
        if self.commit not in COMMIT_MODES:
            raise ValueError(
                f"unknown commit mode {self.commit!r}; choose one of {', '.join(COMMIT_MODES)}"
            )
        if self.auto_offset_reset not in OFFSET_RESETS:
            raise ValueError(
                f"unknown auto.offset.reset {self.auto_offset_reset!r}; choose one of "
                f"{', '.join(OFFSET_RESETS)}"
            )


@attrs.define
class _Commit:
    offsets: dict[str, int]
    mode: str
    invoked_at: int
    member_id: str
    generation: int
    sent_at: int | None = None
    ambiguous: bool = False
    """An attempt may have been appended (no answer, or an append-stage error)."""
    error: str = ""
    then_process: list[tuple[tuple[str, int], list[tuple[int, str]]]] = attrs.Factory(list)
    """before-process: the batches processed once the commit is acknowledged."""


class GroupConsumer:
    """Consumer node ``name``: its group ``member`` and the application (see above)."""

    def __init__(
        self,
        name: str,
        member: Member,
        topic: str,
        app: ConsumerApp,
        process: int,
        fresh_process: Callable[[], int],
    ) -> None:
        self.name = name
        self.member = member
        self.topic = topic
        self.app = app
        self.process = process
        self._fresh_process = fresh_process
        self.history: list[dict[str, Any]] = []
        self.fetchers: dict[tuple[str, int], Consumer] = {}
        """Partitions assigned whose start position is known -> their fetcher."""
        self._seen: dict[tuple[str, int], int] = {}
        self._owned: Partitions = ()
        self._generation = -1
        self._need_offsets: list[tuple[str, int]] = []
        self._fetching_offsets: tuple[Partitions, int, int] | None = None
        """The OffsetFetch in flight: (partitions, when sent, correlation id)."""
        self._resetting: set[tuple[str, int]] = set()
        """``latest``: partitions whose first fetch only finds the HW."""
        self._polled: list[tuple[tuple[str, int], list[tuple[int, str]]]] = []
        """Batches fetched and not yet handed to processing."""
        self._positions: dict[tuple[str, int], int] = {}
        """Kafka's ``position()`` per partition (see ``position``)."""
        self.processed: dict[tuple[str, int], int] = {}
        """Per partition the offset after the last record processed (what to commit)."""
        self.committed: dict[tuple[str, int], int] = {}
        """Per partition what this consumer last had acknowledged."""
        self._commit: _Commit | None = None
        self._processing: list[tuple[int, tuple[str, int], list[tuple[int, str]]]] = []
        self._fetcher_names: dict[tuple[str, int], str] = {}
        """Each fetcher's history process, fixed when it started (``_fetcher_process``)."""
        """Batches being processed: (done at, partition, records)."""
        self.paused: set[tuple[str, int]] = set()
        """Partitions ``pause`` d: not fetched, their fetched records held, until resumed."""
        self._seek_pending: dict[tuple[str, int], int] = {}
        """Partitions sought while a fetch from the old position was in flight -> where the
        next fetch starts, once that fetch has answered (its records are discarded)."""
        self._failing = False
        """``fail_processing`` on: the handler throws on one batch in ``fail_every``."""
        self._batches = 0
        self._next_auto_commit = 0
        self._offsets_retry_at = 0
        self._correlation = 0
        """The correlation id of the last OffsetCommit sent (the member's ids: one client)."""
        self.stats: dict[str, int] = {}

    # ------------------------------------------------------------------ world API

    @property
    def busy(self) -> bool:
        return self._commit is not None

    @property
    def assignment(self) -> Partitions:
        """``KafkaConsumer.assignment()``: the partitions this consumer reads now (empty
        while it rejoins: the eager protocol revokes everything first)."""
        return self._owned

    def position(self, tp: tuple[str, int]) -> int | None:
        """``KafkaConsumer.position(tp)``: the offset after the last record of ``tp`` a poll
        handed to the application, or where reading starts (the committed offset,
        ``auto.offset.reset``, a seek); None while the start is still being asked for."""
        return self._positions.get(tp)

    def subscribe(self, topics: tuple[str, ...], now: int) -> None:
        """``KafkaConsumer.subscribe``: the group decides what it reads (the next poll
        joins)."""
        self.member.subscribe(topics, now)
        self._collect(now)

    def poll(self, now: int) -> Effects:
        """One turn of the application's loop: the member's poll (joins, rebalance
        callbacks), then fetch every assigned partition. While a ``commitSync`` runs the
        application thread is inside it: no poll, so no rejoin either (Kafka rejoins only in
        ``poll``), and the commit's retries carry the generation it was invoked in, which
        cannot change meanwhile."""
        if self._commit is not None and self._commit.mode == "sync":
            return Effects()
        effects = Effects()
        if self._processing:
            if not self._finish_processing(now, effects):
                return effects  # still processing: the loop has not come back to poll
            if self._commit is not None and self._commit.mode == "sync":
                return effects  # after-process: the commitSync that follows
        effects.extend(self.member.poll(now))
        self._after(now, effects)
        if self.app.commit == "auto" and now >= self._next_auto_commit and self._commit is None:
            self._next_auto_commit = now + self.app.auto_commit_interval_ns
            self._start_commit(self._ahead(self._owned), "auto", now, effects)
        if self._commit is None or self._commit.mode in NON_BLOCKING:
            for tp in sorted(self.fetchers):
                fetcher = self.fetchers[tp]
                if not fetcher.busy and tp not in self.paused:
                    effects.extend(fetcher.poll(now))
        self._collect(now)
        return effects

    def step(self, src: str, msg: Message, now: int) -> Effects:
        effects = Effects()
        if isinstance(msg, OffsetFetchResponse):
            self._on_offsets(msg, now)
        elif isinstance(msg, OffsetCommitResponse):
            # The answer to an attempt of the commit running; any other (a request of a
            # connection given up on) is dropped, as a closed connection's would be.
            if self._on_commit_response(msg, now, effects):
                self.member.commit_answered(msg.error, now)
        elif isinstance(msg, FetchResponse | MetadataResponse | RequestFailed):
            request = getattr(msg, "request", None)
            if isinstance(msg, MetadataResponse):
                for tp in sorted(self.fetchers):
                    effects.extend(self.fetchers[tp].step(src, msg, now))
            else:
                tp = (
                    (msg.topic, msg.partition)
                    if isinstance(msg, FetchResponse)
                    else (getattr(request, "topic", ""), getattr(request, "partition", -1))
                )
                fetcher = self.fetchers.get(tp)
                if fetcher is not None:
                    effects.extend(fetcher.step(src, msg, now))
        else:
            effects.extend(self.member.step(src, msg, now))
        self._after(now, effects)
        self._collect(now)
        return effects

    def tick(self, now: int) -> Effects:
        effects = self.member.tick(now)
        for tp in sorted(self.fetchers):
            effects.extend(self.fetchers[tp].tick(now))
        c = self._commit
        timeout = self.app.request_timeout_ns
        if c is not None and c.sent_at is not None and now - c.sent_at >= timeout:
            c.sent_at, c.ambiguous, c.error = None, True, REQUEST_TIMED_OUT
            # NetworkClient disconnects: a coordinator request failing so marks it unknown.
            self.member.coordinator_unknown(now)
        if c is not None and c.sent_at is None:
            if now - c.invoked_at >= self.app.commit_timeout_ns or c.mode in NON_BLOCKING:
                self._end_commit(now)
            else:
                # commitSync finds the coordinator again itself (ensureCoordinatorReady).
                effects.extend(self.member.find_coordinator(now))
                self._send_commit(now, effects)
        asking = self._fetching_offsets
        if asking is not None and now - asking[1] >= self.app.request_timeout_ns:
            keys = [_key(tp) for tp in asking[0]]
            self._op("fail", "fetch-offsets", keys, now, error=REQUEST_TIMED_OUT)
            self._fetching_offsets = None
            self.member.coordinator_unknown(now)
        self._after(now, effects)
        self._collect(now)
        return effects

    def seek(self, tp: tuple[str, int], offset: int, now: int) -> None:
        """``KafkaConsumer.seek(tp, offset)``: the next fetch of ``tp`` reads from
        ``offset``. Records of ``tp`` fetched and not yet returned to the application are
        discarded; a fetch in flight from the old position is discarded when it answers
        (Kafka drops a fetched batch whose offset is not the position). Seeking a
        partition whose start is still being asked for (OffsetFetch) sets it: the answer
        no longer matters for it."""
        self._assigned(tp, "seek")
        if offset < 0:
            raise ValueError(f"cannot seek {_key(tp)} to {offset}: offsets start at 0")
        self._op("invoke", "seek", {_key(tp): offset}, now, key=_key(tp))
        self._polled = [(t, rs) for t, rs in self._polled if t != tp]
        self._resetting.discard(tp)
        self._positions[tp] = offset
        fetcher = self.fetchers.get(tp)
        if fetcher is None:
            if tp in self._need_offsets:
                self._need_offsets.remove(tp)
            self._start_fetcher(tp, offset)
        elif fetcher.fetching:
            self._seek_pending[tp] = offset
        else:
            self._seek_pending.pop(tp, None)
            fetcher.position = offset  # the polls queued (no leader yet) start there
        self._op("ok", "seek", {_key(tp): offset}, now, key=_key(tp))
        self._bump("seeks")

    def pause(self, tps: Partitions, now: int) -> None:
        """``KafkaConsumer.pause``: stop fetching ``tps`` (the member stays in the group:
        ``poll`` goes on heartbeating and rejoining); records already fetched wait."""
        for tp in tps:
            self._assigned(tp, "pause")
        self.paused.update(tps)
        self._op("ok", "pause", [_key(tp) for tp in sorted(tps)], now)

    def resume(self, tps: Partitions, now: int) -> None:
        """``KafkaConsumer.resume``: fetch ``tps`` again from their positions."""
        for tp in tps:
            self._assigned(tp, "resume")
        self.paused.difference_update(tps)
        self._op("ok", "resume", [_key(tp) for tp in sorted(tps)], now)

    def fail_processing(self, on: bool) -> None:
        """The record handler throws on one batch in ``fail_every`` while ``on`` (a flaky
        downstream system): see the module docstring."""
        self._failing = on

    def _assigned(self, tp: tuple[str, int], what: str) -> None:
        if tp not in self._owned:
            raise NoCurrentAssignmentError(
                f"{self.name}: No current assignment for partition {_key(tp)}: {what} only "
                f"a partition this consumer is assigned (it owns {sorted(map(_key, self._owned))})"
            )

    def close(self, now: int) -> Effects:
        """``KafkaConsumer.close``: the rebalance listener's ``onPartitionsRevoked`` (commit
        what was processed of the owned partitions, as on any revocation), then LeaveGroup;
        batches still being processed are abandoned, and the consumer is out of the group
        until it subscribes again."""
        effects = Effects()
        self._processing = []
        self._polled = []
        self.paused.clear()
        if self._owned:
            self._on_revoked(list(self._owned), now, effects)
            self._owned = ()
        if self._fetching_offsets is not None:
            keys = [_key(tp) for tp in self._fetching_offsets[0]]
            self._op("fail", "fetch-offsets", keys, now, error="closed")
            self._fetching_offsets = None
        self._need_offsets.clear()
        effects.extend(self.member.close(now))
        self._collect(now)
        return effects

    def killed(self, now: int) -> None:
        """The process died: what it was waiting for ends unknown (a commit) or failed (a
        read changes nothing). Rebalance callbacks held back by a ``commitSync`` in flight
        never ran: the process died inside it."""
        c = self._commit
        if c is not None:
            self.member.history.clear()
            self._op("info", "commit", dict(c.offsets), now, error="killed", mode=c.mode)
            self._commit = None
        if self._fetching_offsets is not None:
            keys = [_key(tp) for tp in self._fetching_offsets[0]]
            self._op("fail", "fetch-offsets", keys, now, error="killed")
            self._fetching_offsets = None
        for tp in sorted(self.fetchers):
            self._drop_fetcher(tp, now, "killed")
        self._processing = []  # unfinished: its side effect never happened
        self._collect(now)

    # ------------------------------------------------------------------ assignment

    def _after(self, now: int, effects: Effects) -> None:
        """Follow the member's assignment, ask where new partitions start, hand fetched
        batches to processing."""
        self._collect(now)
        owned = self.member.owned if self.member.state == MEMBER_STABLE else ()
        revoked = [tp for tp in self._owned if tp not in owned]
        if revoked:
            self._on_revoked(revoked, now, effects)
        added = [tp for tp in owned if tp not in self._owned]
        self._owned = tuple(owned)
        self._generation = self.member.generation
        for tp in added:
            if tp not in self._need_offsets:
                self._need_offsets.append(tp)
        if (
            self._need_offsets
            and self._fetching_offsets is None
            and self.member.state == MEMBER_STABLE
            and self.member.coordinator
            and now >= self._offsets_retry_at
        ):
            asked = tuple(sorted(self._need_offsets))
            correlation = self.member.next_correlation()
            self._fetching_offsets = (asked, now, correlation)
            self._op("invoke", "fetch-offsets", [_key(tp) for tp in asked], now)
            group = self.member.config.group
            effects.send(self.member.coordinator, OffsetFetch(group, asked, correlation))
        self._handle_polled(now, effects)

    def _on_revoked(self, revoked: list[tuple[str, int]], now: int, effects: Effects) -> None:
        """``onPartitionsRevoked``: commit what was processed of them (with the generation
        they were owned in), then forget them. Their batches still being processed are
        abandoned (the listener stops the processing of partitions it gives up, as the
        ``ConsumerRebalanceListener`` Javadoc advises before committing): a record of a
        partition the consumer no longer owns is never processed by it."""
        self._polled = [(tp, rs) for tp, rs in self._polled if tp not in revoked]
        self._processing = [b for b in self._processing if b[1] not in revoked]
        self.paused.difference_update(revoked)  # a revoked partition's pause is dropped
        if (
            self.app.commit != "before-process"
            and self._commit is None
            and self.member.member_id
            and self.member.generation >= 0
            and self.member.coordinator
        ):
            mode = "auto" if self.app.commit == "auto" else "sync"
            self._start_commit(self._ahead(tuple(revoked)), mode, now, effects)
        for tp in revoked:
            self._drop_fetcher(tp, now, "revoked")
            self.processed.pop(tp, None)
            self._resetting.discard(tp)
            if tp in self._need_offsets:
                self._need_offsets.remove(tp)

    def _drop_fetcher(self, tp: tuple[str, int], now: int, why: str) -> None:
        fetcher = self.fetchers.pop(tp, None)
        if fetcher is None:
            return
        self._collect_fetcher(tp, fetcher)
        if fetcher.fetching:
            self._op(
                "fail",
                "poll",
                {"from": fetcher.position, "error": why},
                now,
                key=_key(tp),
                process=self._fetcher_process(tp),
            )
        self._seen.pop(tp, None)
        self._fetcher_names.pop(tp, None)
        self._seek_pending.pop(tp, None)
        self._positions.pop(tp, None)

    def _on_offsets(self, msg: OffsetFetchResponse, now: int) -> None:
        if self._fetching_offsets is None or msg.correlation != self._fetching_offsets[2]:
            return  # the answer to a fetch given up on (timed out, or a rebalance)
        asked, _, _ = self._fetching_offsets
        self._fetching_offsets = None
        keys = [_key(tp) for tp in asked]
        if msg.error != NONE:
            self._op("fail", "fetch-offsets", keys, now, error=msg.error)
            self._offsets_retry_at = now + self.app.fetch.retry_backoff_ns  # retry.backoff.ms
            if msg.error in (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE):
                self.member.coordinator_unknown(now)  # asked again where it moved
            return
        answer = dict(msg.offsets)
        self._op("ok", "fetch-offsets", {_key(tp): _null(answer.get(tp)) for tp in asked}, now)
        for tp in asked:
            if tp not in self._owned or tp not in self._need_offsets:
                continue
            self._need_offsets.remove(tp)
            committed = answer.get(tp, NO_OFFSET)
            reset = self.app.auto_offset_reset
            if committed == NO_OFFSET and reset == "none":
                self._op("invoke", "poll", {"from": None}, now, key=_key(tp))
                error = {"from": None, "error": "OFFSET_OUT_OF_RANGE"}
                self._op("fail", "poll", error, now, key=_key(tp))
                continue
            self._start_fetcher(tp, committed if committed != NO_OFFSET else 0)
            if committed == NO_OFFSET and reset == "latest":
                self._resetting.add(tp)

    def _start_fetcher(self, tp: tuple[str, int], position: int) -> None:
        """Partition ``tp``'s start is known: its fetcher reads from ``position``."""
        fetcher = Consumer(self.name, tp[0], tp[1], self.app.fetch, process=self.process)
        fetcher.position = position
        self.paused.discard(tp)  # a partition assigned anew is not paused
        self.fetchers[tp] = fetcher
        self._positions[tp] = position
        self._fetcher_names[tp] = f"{self.process}/{_key(tp)}"
        self._seen[tp] = 0
        self.processed[tp] = fetcher.position
        self.committed[tp] = fetcher.position

    # ------------------------------------------------------------------ processing

    def _collect(self, now: int) -> None:
        """Move the member's and the fetchers' new events into this consumer's history. The
        member's (its assignment changes, which the rebalance listener reports) wait while a
        commit is in flight: the listener runs on the poll thread, which ``commitSync``
        blocks, and the history process does one operation at a time."""
        if self._commit is None:
            if self.member.history and self._fetching_offsets is not None:
                # The member moves on (a rebalance) while its OffsetFetch is unanswered:
                # that fetch is given up (its answer, if any, is dropped; the partitions
                # the new assignment keeps are asked for again), so that the history
                # process does one operation at a time.
                keys = [_key(tp) for tp in self._fetching_offsets[0]]
                self._op("fail", "fetch-offsets", keys, now, error="rebalance")
                self._fetching_offsets = None
            for op in self.member.history:
                self.history.append({**op, "process": self.process})
            self.member.history.clear()
        for tp in sorted(self.fetchers):
            self._collect_fetcher(tp, self.fetchers[tp])

    def _fetcher_process(self, tp: tuple[str, int]) -> str:
        """Each partition's fetcher is a history process of its own (``"200/t-4"``, named
        after the consumer's process when the fetcher started): the fetchers poll
        concurrently, and a history process does one operation at a time."""
        return self._fetcher_names[tp]

    def _collect_fetcher(self, tp: tuple[str, int], fetcher: Consumer) -> None:
        """Move fetcher ``tp``'s new polls into the history, as its own process, with the
        member id and generation, and the values as the producer sent them (integers)."""
        for op in fetcher.history[self._seen[tp] :]:
            op = {
                **op,
                "process": self._fetcher_process(tp),
                "member": self.member.member_id,
                "generation": self._generation,
            }
            if op["type"] == "ok" and isinstance(op.get("value"), dict):
                records = op["value"].get("records")
                if records:
                    op["value"] = {**op["value"], "records": [[o, _int(v)] for o, v in records]}
            if tp in self._seek_pending and op["type"] in ("ok", "fail") and not fetcher.fetching:
                # the fetch sent before a seek answered: its records are discarded, and
                # the next fetch starts where the seek said.
                fetcher.position = self._seek_pending.pop(tp)
                if op["type"] == "ok":
                    op["value"] = {**op["value"], "records": []}
            elif tp in self._resetting and op["type"] == "ok":
                # latest: this fetch only found the HW; its records are not handed on.
                self._resetting.discard(tp)
                fetcher.seek(op["value"]["hw"])
                self.processed[tp] = self.committed[tp] = fetcher.position
                self._positions[tp] = fetcher.position
                op["value"] = {"records": [], "hw": op["value"]["hw"]}
            elif op["type"] == "ok" and op["value"]["records"]:
                self._polled.append((tp, [(o, v) for o, v in op["value"]["records"]]))
            self.history.append(op)
        self._seen[tp] = len(fetcher.history)

    def _handle_polled(self, now: int, effects: Effects) -> None:
        if not self._polled or (self._commit is not None and self._commit.mode == "sync"):
            return
        batches = [(tp, rs) for tp, rs in self._polled if tp not in self.paused]
        self._polled = [(tp, rs) for tp, rs in self._polled if tp in self.paused]
        if not batches:
            return
        for tp, records in batches:
            self._positions[tp] = records[-1][0] + 1
        if self.app.commit == "before-process":
            offsets = {_key(tp): rs[-1][0] + 1 for tp, rs in batches}
            self._start_commit(offsets, "sync", now, effects, then_process=batches)
            return
        for tp, records in batches:
            self._process(tp, records, now)

    def _process(self, tp: tuple[str, int], records: list[tuple[int, str]], now: int) -> None:
        """Hand a batch to the application's processing (done ``processing_ns`` later)."""
        self._processing.append((now + self.app.processing_ns, tp, records))

    def _finish_processing(self, now: int, effects: Effects) -> bool:
        """The loop comes back: whether every batch handed to processing is done (each
        done one is a ``process`` op); after-process then commits what was processed."""
        if any(done_at > now for done_at, _, _ in self._processing):
            return False
        batches, self._processing = self._processing, []
        rewound: set[tuple[str, int]] = set()
        for _, tp, records in batches:
            if tp in rewound:
                continue  # after the seek back: read again from the committed offset
            self._batches += 1
            if self._failing and self._batches % self.app.fail_every == 0:
                self._fail_batch(tp, records, now)
                rewound.add(tp)
                continue
            self._processed(tp, records, now)
        if self.app.commit == "after-process":
            self._start_commit(self._ahead(self._owned), "sync", now, effects)
        elif self.app.commit == "after-process-async":
            # commitAsync: one in flight at a time here; a later one covers what it skipped
            self._start_commit(self._ahead(self._owned), "async", now, effects)
        return True

    def _fail_batch(self, tp: tuple[str, int], records: list[tuple[int, str]], now: int) -> None:
        """The handler threw after the first half of ``records`` (their side effect is
        done, logged as a ``process`` op; the position the application commits does not
        move: the batch did not complete); the application seeks ``tp`` back to its last
        acknowledged commit."""
        done = records[: (len(records) + 1) // 2]
        if done:
            self._op("ok", "process", [[o, _int(v)] for o, v in done], now, key=_key(tp))
            self.stats["processed"] = self.stats.get("processed", 0) + len(done)
        self._bump("processing_failures")
        if tp in self._owned:  # (before-process may finish a batch of a partition revoked since)
            self.seek(tp, self.committed.get(tp, 0), now)

    def _processed(self, tp: tuple[str, int], records: list[tuple[int, str]], now: int) -> None:
        self._op("ok", "process", [[o, _int(v)] for o, v in records], now, key=_key(tp))
        self.processed[tp] = max(self.processed.get(tp, 0), records[-1][0] + 1)
        self.stats["processed"] = self.stats.get("processed", 0) + len(records)

    def _ahead(self, partitions: Partitions) -> dict[str, int]:
        return {
            _key(tp): self.processed[tp]
            for tp in sorted(partitions)
            if tp in self.processed and self.processed[tp] > self.committed.get(tp, 0)
        }

    # ------------------------------------------------------------------ commits

    def _start_commit(
        self,
        offsets: dict[str, int],
        mode: str,
        now: int,
        effects: Effects,
        then_process: list[tuple[tuple[str, int], list[tuple[int, str]]]] | None = None,
    ) -> None:
        if not offsets or self._commit is not None:
            return
        self._commit = _Commit(
            offsets,
            mode,
            now,
            self.member.member_id,
            self.member.generation,
            then_process=then_process or [],
        )
        self._op("invoke", "commit", dict(offsets), now, mode=mode)
        self._send_commit(now, effects)

    def _send_commit(self, now: int, effects: Effects) -> None:
        c = self._commit
        assert c is not None
        if not self.member.coordinator:
            return  # retried on a later tick, once the coordinator is known again
        c.sent_at = now
        self._correlation = self.member.next_correlation()
        offsets = tuple(sorted((_tp(k), o) for k, o in c.offsets.items()))
        group = self.member.config.group
        effects.send(
            self.member.coordinator,
            OffsetCommit(group, c.member_id, c.generation, offsets, self._correlation),
        )

    def _on_commit_response(self, msg: OffsetCommitResponse, now: int, effects: Effects) -> bool:
        """Whether ``msg`` answers the running commit's attempt in flight (then handled)."""
        c = self._commit
        if c is None or c.sent_at is None or msg.correlation != self._correlation:
            return False  # e.g. the answer to an attempt this commit already gave up on
        c.sent_at = None
        if msg.error == NONE:
            self._commit = None
            for k, o in c.offsets.items():
                self.committed[_tp(k)] = max(self.committed.get(_tp(k), 0), o)
            self._op("ok", "commit", dict(c.offsets), now, mode=c.mode)
            self._bump("commit_ok")
            for tp, records in c.then_process:
                # commitSync returned: the application processes what poll() gave it,
                # whatever rebalance the member has noticed since.
                self._process(tp, records, now)
            self._handle_polled(now, effects)
            return True
        c.error = msg.error
        c.ambiguous = c.ambiguous or msg.error in MAYBE_APPENDED
        if msg.error not in RETRIABLE or c.mode in NON_BLOCKING:
            self._end_commit(now)
        return True

    def _end_commit(self, now: int) -> None:
        """The commit gave up: ``fail`` if no attempt can have been appended, else ``info``
        (the consumer then goes on as a new process)."""
        c = self._commit
        assert c is not None
        self._commit = None
        kind = "info" if c.ambiguous else "fail"
        self._op(kind, "commit", dict(c.offsets), now, error=c.error, mode=c.mode)
        self._bump(f"commit_{kind}")
        if kind == "info":
            self.process = self._fresh_process()
            for fetcher in self.fetchers.values():
                fetcher.process = self.process

    # ------------------------------------------------------------------ history

    def _bump(self, key: str) -> None:
        self.stats[key] = self.stats.get(key, 0) + 1

    def _op(
        self,
        type_: str,
        f: str,
        value: Any,
        now: int,
        *,
        key: str | None = None,
        error: str | None = None,
        mode: str | None = None,
        process: str | int | None = None,
    ) -> None:
        if error is not None:
            value = {**value, "error": error} if isinstance(value, dict) else value
        who = self.process if process is None else process
        op: dict[str, Any] = {"process": who, "type": type_, "f": f}
        if key is not None:
            op["key"] = key
        op["value"] = value
        if error is not None and not isinstance(value, dict):
            op["error"] = error
        op["member"] = self.member.member_id
        op["generation"] = self.member.generation
        if mode is not None:
            op["mode"] = mode
        op["time"] = now
        self.history.append(op)


def _key(tp: tuple[str, int]) -> str:
    return f"{tp[0]}-{tp[1]}"


def _tp(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition("-")
    return topic, int(partition)


def _null(offset: int | None) -> int | None:
    return None if offset is None or offset == NO_OFFSET else offset


def _int(value: str) -> int | str:
    try:
        return int(value)
    except ValueError:
        return value
