"""A consumer group member: the Java consumer's ``ConsumerCoordinator`` (classic, eager
protocol) as a sans-I/O state machine.

``subscribe(topics, now)`` starts it; the application's ``poll(now)`` drives it (it finds the
coordinator with FindCoordinator, joins, syncs, and is where rebalance listener callbacks
run: ``onPartitionsRevoked`` before a rejoin, ``onPartitionsAssigned`` after a SyncGroup);
``tick(now)`` is the background heartbeat thread (heartbeats every
``heartbeat.interval.ms``; a request unanswered after ``request.timeout.ms`` closes its
connection, failing every request in flight on it, and a join, sync or heartbeat failing so
marks the coordinator unknown; a poll loop silent for longer than ``max.poll.interval.ms``
makes the member send LeaveGroup, as ``AbstractCoordinator.HeartbeatThread`` does);
``step(src, msg, now)`` takes a response. Each request carries a correlation id and its
response echoes it: ``step`` drops a response that does not answer the request of its kind
in flight, as ``NetworkClient`` never reads the answers of a connection it closed (a
JoinGroup answer for an earlier member id, a SyncGroup answer for an earlier generation).
``commit(now)`` sends an OffsetCommit for the owned partitions with the member id and
generation (Kafka's fence against a zombie). ``now`` is the consumer's clock: the world
hands it in.

Errors, as ``AbstractCoordinator`` handles them: ``REBALANCE_IN_PROGRESS`` and
``ILLEGAL_GENERATION`` mean rejoin (keeping the member id for the first, resetting the
generation for the second), ``UNKNOWN_MEMBER_ID`` rejoin as a new member,
``NOT_COORDINATOR`` (or a join, sync or heartbeat timing out) look the coordinator up again
(``markCoordinatorUnknown``): a join or sync in progress starts again there, while a
stable member keeps its generation and partitions and heartbeats the new coordinator,
which loaded the group from ``__consumer_offsets``. Eager protocol: every rejoin revokes
every owned partition first.

The member's life cycle is ``spec.group.lifecycle``'s member table (every move through
``member_transition``). Its history (``history``) records ``subscribe`` and, for each
assignment change, an ``assign`` op whose value is the new keys (``"t-0"``) and which also
carries the ``member`` id and ``generation`` (``docs/history-format.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from impl.assignors import range_assign, round_robin_assign
from impl.group.messages import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    ILLEGAL_GENERATION,
    NONE,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    REQUEST_TIMED_OUT,
    FindCoordinator,
    FindCoordinatorResponse,
    Heartbeat,
    HeartbeatResponse,
    JoinGroup,
    JoinGroupResponse,
    LeaveGroup,
    LeaveGroupResponse,
    OffsetCommit,
    OffsetCommitResponse,
    Partitions,
    SyncGroup,
    SyncGroupResponse,
)
from impl.group.sticky import cooperative_assign, sticky_assign
from impl.messages import Message
from impl.protocol import Effects
from impl.sim.clock import ms
from spec.group.lifecycle import (
    AWAITING_SYNC,
    JOINING,
    MEMBER_STABLE,
    UNJOINED,
    member_transition,
)

__all__ = ["ASSIGNORS", "Member", "MemberConfig", "Request"]

ASSIGNORS: dict[str, Callable[[Mapping[str, int], Mapping[str, Any]], Any]] = {
    "range": range_assign,
    "roundrobin": round_robin_assign,
}
"""``partition.assignment.strategy``: ``impl.assignors``' classic assignors."""
STICKY_ASSIGNORS = {"sticky": sticky_assign, "cooperative-sticky": cooperative_assign}
"""The sticky ones (``impl.group.sticky``), which read what each member reported owning;
``cooperative-sticky`` also makes the member follow KIP-429's incremental protocol."""
RESPONSES: dict[type[Message], str] = {
    FindCoordinatorResponse: "find",
    JoinGroupResponse: "join",
    SyncGroupResponse: "sync",
    HeartbeatResponse: "heartbeat",
    OffsetCommitResponse: "commit",
}
"""Each response the member takes -> the kind of request it answers."""


@attrs.frozen
class MemberConfig:
    group: str = "g"
    session_timeout_ns: int = ms(10_000)
    """``session.timeout.ms``."""
    max_poll_interval_ns: int = ms(30_000)
    """``max.poll.interval.ms`` (also the rebalance timeout sent in JoinGroup, KIP-62)."""
    heartbeat_interval_ns: int = ms(3_000)
    request_timeout_ns: int = ms(5_000)
    assignor: str = "range"

    def __attrs_post_init__(self) -> None:
        if self.assignor not in ASSIGNORS and self.assignor not in STICKY_ASSIGNORS:
            raise ValueError(
                f"unknown partition.assignment.strategy {self.assignor!r}; choose one of "
                f"{', '.join(sorted([*ASSIGNORS, *STICKY_ASSIGNORS]))}"
            )
        if self.heartbeat_interval_ns >= self.session_timeout_ns:
            raise ValueError("heartbeat.interval.ms must be lower than session.timeout.ms")


MARK_COORDINATOR_UNKNOWN = frozenset({"join", "sync", "heartbeat"})
"""The requests whose failure on a closed connection marks the coordinator unknown
(``AbstractCoordinator.CoordinatorResponseHandler.onFailure``). Kafka's OffsetCommit handler
does so too; ``GroupConsumer``'s commits do, this member's own ``commit`` (the harness's
periodic one) does not."""


CORRELATIONS_PER_PROCESS = 1 << 32
"""Process ``p``'s correlation ids are ``p * CORRELATIONS_PER_PROCESS + 1, + 2, ...``: no two
processes of a consumer share one. Kafka needs no such rule (a response travels on its
request's connection, which dies with the process); the simulated networks deliver to the
node, so an answer to a request of a killed process (a parked JoinGroup answered after the
restart) reaches the new process, which must not take it for its own."""


@attrs.frozen
class Request:
    """A request in flight: the node it went to, when, and its correlation id (the request
    header's: ``NetworkClient`` matches each response to its request by it)."""

    node: str
    sent_at: int
    correlation: int


class Member:
    """Consumer ``name`` (its node) as a member of ``config.group``; ``bootstrap`` is the
    broker it asks for the coordinator; ``metadata`` answers topic -> partition count."""

    def __init__(
        self,
        name: str,
        config: MemberConfig,
        bootstrap: Callable[[], str],
        metadata: Callable[[], Mapping[str, int]],
        process: int,
    ) -> None:
        self.name = name
        self.config = config
        self._bootstrap = bootstrap
        self._metadata = metadata
        self.process = process
        self.topics: tuple[str, ...] = ()
        self.state = UNJOINED
        self.coordinator = ""
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.owned: Partitions = ()
        self.last_poll = 0
        self.last_heartbeat_sent = 0
        self.in_flight: dict[str, Request] = {}
        """Request kind -> the request of that kind in flight (one of each at a time)."""
        self.correlation = process * CORRELATIONS_PER_PROCESS
        """The correlation id of the last request sent (``NetworkClient``'s counter; see
        ``CORRELATIONS_PER_PROCESS``)."""
        self.history: list[dict[str, Any]] = []
        self.listener: list[tuple[str, Partitions]] = []
        """The rebalance listener's calls, in order: ("revoked" | "assigned", partitions)."""
        self.rebalances = 0
        self.cooperative = config.assignor == "cooperative-sticky"
        self.previous: Partitions = ()
        """The last assignment received (the eager sticky assignor's user data)."""
        self.connection = 0
        """Bumped when a request times out: ``NetworkClient`` closes the connection, and the
        next requests go on a new one (the old one's requests may still be handled later)."""

    # ------------------------------------------------------------------ application API

    def subscribe(self, topics: tuple[str, ...], now: int) -> None:
        self.topics = tuple(sorted(topics))
        self.last_poll = now
        # No keys yet: the group decides which partitions it reads (the assign ops after).
        self._op("invoke", "subscribe", None, now)
        self._op("ok", "subscribe", None, now)

    def poll(self, now: int) -> Effects:
        """The application's ``poll``: resets the poll-interval clock and drives the join."""
        self.last_poll = now
        effects = Effects()
        if not self.topics:
            return effects
        if not self.coordinator:
            return self.find_coordinator(now)
        if self.state == UNJOINED and "join" not in self.in_flight:
            if not self.cooperative:
                self._revoke(now)  # eager: onPartitionsRevoked in onJoinPrepare
            reported = self.owned if self.cooperative else ()
            if self.config.assignor == "sticky":
                reported = self.previous
            self.state = member_transition(self.state, JOINING)
            effects.send(
                self.coordinator,
                JoinGroup(
                    self.config.group,
                    self.member_id,
                    self.name,
                    self.topics,
                    self.config.session_timeout_ns,
                    self.config.max_poll_interval_ns,
                    reported,
                    self._request("join", self.coordinator, now),
                ),
            )
        return effects

    def find_coordinator(self, now: int) -> Effects:
        """Look the coordinator up (``ensureCoordinatorReady``) if it is unknown and no
        FindCoordinator is in flight; ``poll`` does it, and so does a ``commitSync`` that
        waits for one outside ``poll``."""
        effects = Effects()
        if not self.coordinator and "find" not in self.in_flight:
            node = self._bootstrap()
            effects.send(node, FindCoordinator(self.config.group, self._request("find", node, now)))
        return effects

    def commit(self, now: int, position: Callable[[tuple[str, int]], int]) -> Effects:
        """Commit the positions of the owned partitions (if stable and it owns any)."""
        effects = Effects()
        if self.state != MEMBER_STABLE or not self.owned or "commit" in self.in_flight:
            return effects
        if not self.coordinator:
            return self.find_coordinator(now)  # committed once it is known again
        offsets = tuple((tp, position(tp)) for tp in self.owned)
        correlation = self._request("commit", self.coordinator, now)
        effects.send(
            self.coordinator,
            OffsetCommit(self.config.group, self.member_id, self.generation, offsets, correlation),
        )
        return effects

    def close(self, now: int) -> Effects:
        """``Consumer.close``: revoke and LeaveGroup."""
        effects = Effects()
        if self.member_id and self.coordinator:
            effects.send(self.coordinator, LeaveGroup(self.config.group, self.member_id))
        self._reset(now, keep_member_id=False)
        self.topics = ()
        return effects

    # ------------------------------------------------------------------ background thread

    def timeout_ns(self, kind: str) -> int:
        """How long a request of ``kind`` may stay unanswered before its connection is
        given up: ``request.timeout.ms``, but a JoinGroup waits for the whole rebalance
        (the coordinator holds it until every member joined or the rebalance timeout
        passed), so Kafka's consumer gives it the rebalance timeout plus 5 s
        (``AbstractCoordinator``'s ``JOIN_GROUP_TIMEOUT_LAPSE``)."""
        if kind == "join":
            return max(self.config.request_timeout_ns, self.config.max_poll_interval_ns + ms(5_000))
        return self.config.request_timeout_ns

    def tick(self, now: int) -> Effects:
        effects = Effects()
        for kind in sorted(self.in_flight):
            request = self.in_flight.get(kind)
            if request is not None and now - request.sent_at >= self.timeout_ns(kind):
                self._disconnect(request.node, now)
        if self.member_id and now - self.last_poll > self.config.max_poll_interval_ns:
            # KIP-62: the heartbeat thread leaves the group for a poll loop that stalls.
            if self.coordinator:
                effects.send(self.coordinator, LeaveGroup(self.config.group, self.member_id))
            self._reset(now, keep_member_id=False)
            return effects
        due = now - self.last_heartbeat_sent >= self.config.heartbeat_interval_ns
        if (
            self.state in (AWAITING_SYNC, MEMBER_STABLE)
            and self.coordinator
            and due
            and "heartbeat" not in self.in_flight
        ):
            self.last_heartbeat_sent = now
            correlation = self._request("heartbeat", self.coordinator, now)
            effects.send(
                self.coordinator,
                Heartbeat(self.config.group, self.member_id, self.generation, correlation),
            )
        return effects

    # ------------------------------------------------------------------ responses

    def step(self, src: str, msg: Message, now: int) -> Effects:
        """Take a response. One that does not answer the request of its kind in flight (by
        correlation id) is dropped: its request was given up on, and its connection closed
        with it (Kafka's client never reads it), so it describes another member id or
        generation than the one this member now asks about."""
        effects = Effects()
        if isinstance(msg, LeaveGroupResponse):
            return effects  # nothing waits for it (close does not)
        kind = RESPONSES.get(type(msg))
        if kind is None:
            raise TypeError(f"a group member takes group responses, not {msg.describe()}")
        if not self._answered(kind, getattr(msg, "correlation", 0)):
            return effects
        if isinstance(msg, FindCoordinatorResponse):
            if msg.error == NONE and msg.coordinator:
                self.coordinator = msg.coordinator
        elif isinstance(msg, JoinGroupResponse):
            if self.state != JOINING:
                return effects
            if msg.error != NONE:
                self._error(msg.error, now)
                return effects
            self.member_id, self.generation, self.leader = (
                msg.member_id,
                msg.generation,
                msg.leader,
            )
            self.state = member_transition(self.state, AWAITING_SYNC)
            assignment: tuple[tuple[str, Partitions], ...] = ()
            if msg.leader == msg.member_id:
                assignment = self._assign(dict(msg.members), dict(msg.owned))
            correlation = self._request("sync", self.coordinator, now)
            effects.send(
                self.coordinator,
                SyncGroup(
                    self.config.group, self.member_id, self.generation, assignment, correlation
                ),
            )
        elif isinstance(msg, SyncGroupResponse):
            if self.state != AWAITING_SYNC:
                return effects
            if msg.error != NONE:
                self._error(msg.error, now)
                return effects
            self.state = member_transition(self.state, MEMBER_STABLE)
            self.rebalances += 1
            revoked = tuple(tp for tp in self.owned if tp not in msg.partitions)
            added = tuple(tp for tp in msg.partitions if tp not in self.owned)
            if revoked:  # cooperative only: the eager member owns nothing here
                self.listener.append(("revoked", revoked))
            self.owned = self.previous = msg.partitions
            self.listener.append(("assigned", added if self.cooperative else self.owned))
            self._op("invoke", "assign", self._keys(), now)
            self._op("ok", "assign", self._keys(), now)
            if revoked:
                # KIP-429: what was revoked is handed over by the next rebalance.
                self._reset(now, keep_member_id=True)
        elif isinstance(msg, HeartbeatResponse):
            if msg.error != NONE and self.state != UNJOINED:
                self._error(msg.error, now)
        else:
            self.commit_answered(msg.error, now)
        return effects

    def commit_answered(self, error: str, now: int) -> None:
        """An OffsetCommit of this member was answered with ``error``: a stable member
        handles a fencing or coordinator error as any group response's
        (``OffsetCommitResponseHandler``)."""
        if error != NONE and self.state == MEMBER_STABLE:
            self._error(error, now)

    # ------------------------------------------------------------------ requests in flight

    def next_correlation(self) -> int:
        """A new correlation id of this client (``GroupConsumer``'s OffsetCommit and
        OffsetFetch, which it matches to their answers itself, take theirs here too)."""
        self.correlation += 1
        assert self.correlation % CORRELATIONS_PER_PROCESS, f"{self.name}: correlation ids ran out"
        return self.correlation

    def _request(self, kind: str, node: str, now: int) -> int:
        """Record a request of ``kind`` to ``node`` as in flight; return its correlation id."""
        assert kind not in self.in_flight, f"{self.name}: a {kind} request is already in flight"
        correlation = self.next_correlation()
        self.in_flight[kind] = Request(node, now, correlation)
        return correlation

    def _answered(self, kind: str, correlation: int) -> bool:
        """Whether a response with ``correlation`` answers the ``kind`` request in flight
        (then no longer in flight)."""
        request = self.in_flight.get(kind)
        if request is None or request.correlation != correlation:
            return False
        del self.in_flight[kind]
        return True

    def _disconnect(self, node: str, now: int) -> None:
        """A request to ``node`` timed out (``request.timeout.ms``): ``NetworkClient``
        closes the connection and fails every request in flight on it
        (``cancelInFlightRequests``); the next requests go on a new connection, and the
        closed one's answers are never read (``step`` drops them)."""
        self.connection += 1
        failed = sorted(kind for kind, r in self.in_flight.items() if r.node == node)
        for kind in failed:
            del self.in_flight[kind]
        if MARK_COORDINATOR_UNKNOWN.intersection(failed):
            self.coordinator_unknown(now)

    # ------------------------------------------------------------------ internals

    def _assign(
        self, subscriptions: dict[str, tuple[str, ...]], owned: dict[str, Partitions]
    ) -> tuple[tuple[str, Partitions], ...]:
        """The leader runs ``partition.assignment.strategy`` on every member's subscription
        (and for the sticky ones on what each reported owning) with its own metadata."""
        metadata = self._metadata()
        sticky = STICKY_ASSIGNORS.get(self.config.assignor)
        if sticky is not None:
            chosen = sticky(metadata, subscriptions, owned)
            return tuple((mid, tuple(sorted(chosen[mid]))) for mid in sorted(chosen))
        result = ASSIGNORS[self.config.assignor](metadata, subscriptions)
        return tuple(
            (mid, tuple(sorted((tp.topic, tp.partition) for tp in result[mid])))
            for mid in sorted(result)
        )

    def _error(self, error: str, now: int) -> None:
        if error == REBALANCE_IN_PROGRESS:
            self._reset(now, keep_member_id=True)
        elif error == ILLEGAL_GENERATION:
            self._reset(now, keep_member_id=True, lost=True)
            self.generation = -1
        elif error in (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE):
            self.coordinator_unknown(now)
        elif error in (COORDINATOR_LOAD_IN_PROGRESS, REQUEST_TIMED_OUT):
            # Retriable (``RetriableException``): a join or sync in progress is tried again
            # with the same member id; a stable member keeps its partitions.
            if self.state in (JOINING, AWAITING_SYNC):
                self._reset(now, keep_member_id=True)
        else:  # UNKNOWN_MEMBER_ID (and anything else): rejoin as a new member
            self._reset(now, keep_member_id=False)

    def coordinator_unknown(self, now: int) -> None:
        """``markCoordinatorUnknown``: the next poll looks the coordinator up again. Only a
        join or sync in progress is started again; a stable member keeps its member id,
        generation and partitions (``AbstractCoordinator`` does not rejoin for this), and
        its next heartbeat goes to the new coordinator."""
        self.coordinator = ""
        self.in_flight.pop("heartbeat", None)
        if self.state in (JOINING, AWAITING_SYNC):
            self._reset(now, keep_member_id=True)

    def _reset(self, now: int, keep_member_id: bool, lost: bool = False) -> None:
        """Back to unjoined: revoke (eager; cooperatively only when the partitions are
        ``lost``: fenced or gone, KIP-429's ``onPartitionsLost``), forget the generation
        (and the member id)."""
        if not self.cooperative or lost or not keep_member_id:
            self._revoke(now)
        if self.state != UNJOINED:
            self.state = member_transition(self.state, UNJOINED)
        for kind in ("join", "sync", "heartbeat", "commit"):
            self.in_flight.pop(kind, None)
        if not keep_member_id:
            self.member_id = ""
            self.generation = -1

    def _revoke(self, now: int) -> None:
        if self.owned:
            self.listener.append(("revoked", self.owned))
            self.owned = ()
            self._op("invoke", "assign", None, now)
            self._op("ok", "assign", None, now)

    def _keys(self) -> list[str] | None:
        return [f"{t}-{p}" for t, p in self.owned] or None

    def _op(self, type_: str, f: str, value: Any, now: int) -> None:
        op: dict[str, Any] = {"process": self.process, "type": type_, "f": f, "value": value}
        if f == "subscribe":
            op["topics"] = list(self.topics)
        if f == "assign":
            op["member"] = self.member_id
            op["generation"] = self.generation
        op["time"] = now
        self.history.append(op)
