"""The classic group protocol's requests and responses (KIP-62 era JoinGroup v1+), as frozen
message values, and the notes a coordinator leaves for the world's records.

Partitions travel as ``(topic, partition)`` tuples, sorted; an assignment as a tuple of
``(member_id, partitions)`` pairs sorted by member id, so every value describes the same in
every process. Error codes are Kafka's names (``Errors``). A request carries the correlation
id of its request header, which its response echoes (the coordinator keeps it with a parked
JoinGroup or SyncGroup): the client matches each response to its request by it.
"""

from __future__ import annotations

import attrs

from impl.messages import Message, int_at_least, message, non_empty_str

__all__ = [
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "ERRORS",
    "ILLEGAL_GENERATION",
    "NONE",
    "NOT_COORDINATOR",
    "NO_OFFSET",
    "REBALANCE_IN_PROGRESS",
    "REQUEST_TIMED_OUT",
    "UNKNOWN_MEMBER_ID",
    "CommitAccepted",
    "FindCoordinator",
    "FindCoordinatorResponse",
    "GenerationCompleted",
    "Heartbeat",
    "HeartbeatResponse",
    "JoinGroup",
    "JoinGroupResponse",
    "LeaveGroup",
    "LeaveGroupResponse",
    "MemberRemoved",
    "OffsetCommit",
    "OffsetCommitResponse",
    "OffsetFetch",
    "OffsetFetchResponse",
    "Partitions",
    "SyncGroup",
    "SyncGroupResponse",
]

NONE = "NONE"
NOT_COORDINATOR = "NOT_COORDINATOR"
COORDINATOR_NOT_AVAILABLE = "COORDINATOR_NOT_AVAILABLE"
UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
ILLEGAL_GENERATION = "ILLEGAL_GENERATION"
REBALANCE_IN_PROGRESS = "REBALANCE_IN_PROGRESS"
COORDINATOR_LOAD_IN_PROGRESS = "COORDINATOR_LOAD_IN_PROGRESS"
"""The coordinator is still reading the group's ``__consumer_offsets`` partition."""
REQUEST_TIMED_OUT = "REQUEST_TIMED_OUT"
"""The commit's append to ``__consumer_offsets`` was not replicated in time (the delayed
produce expired); it may still be in the log."""
ERRORS = frozenset(
    {
        NONE,
        NOT_COORDINATOR,
        COORDINATOR_NOT_AVAILABLE,
        COORDINATOR_LOAD_IN_PROGRESS,
        UNKNOWN_MEMBER_ID,
        ILLEGAL_GENERATION,
        REBALANCE_IN_PROGRESS,
        REQUEST_TIMED_OUT,
    }
)
NO_OFFSET = -1
"""OffsetFetch's answer for a partition the group committed nothing for (Kafka's -1)."""

Partitions = tuple[tuple[str, int], ...]


def _error(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in ERRORS:
        raise ValueError(
            f"{type(instance).__name__}.{attribute.name} must be one of {sorted(ERRORS)}, "
            f"got {value!r}"
        )


@message
class FindCoordinator(Message):
    """``FindCoordinator`` (key type GROUP): which broker coordinates ``group``?"""

    group: str = attrs.field(validator=non_empty_str)
    correlation: int = 0
    """The request header's correlation id, echoed by its response (0: none)."""


@message
class FindCoordinatorResponse(Message):
    group: str = attrs.field(validator=non_empty_str)
    error: str = attrs.field(validator=_error)
    coordinator: str = ""
    correlation: int = 0
    """The correlation id of the request answered."""


@message
class JoinGroup(Message):
    """``JoinGroup``: ``member_id`` empty for a new member; ``topics`` its subscription (the
    consumer protocol's metadata); the two timeouts are ``session.timeout.ms`` and
    ``max.poll.interval.ms`` (the rebalance timeout, KIP-62)."""

    group: str = attrs.field(validator=non_empty_str)
    member_id: str
    client_id: str = attrs.field(validator=non_empty_str)
    topics: tuple[str, ...]
    session_timeout_ns: int = attrs.field(validator=int_at_least(1))
    rebalance_timeout_ns: int = attrs.field(validator=int_at_least(1))
    owned: Partitions = ()
    """What the member owns (cooperative, KIP-429's ``ownedPartitions``) or owned before it
    revoked (the eager ``StickyAssignor``'s user data); empty for the other assignors."""
    correlation: int = 0
    """The request header's correlation id, echoed by its response (0: none)."""


@message
class JoinGroupResponse(Message):
    """The join phase is over: ``generation``, the member's id, the leader's id, and for the
    leader only every member's subscription (``members``)."""

    group: str
    error: str = attrs.field(validator=_error)
    generation: int = -1
    member_id: str = ""
    leader: str = ""
    members: tuple[tuple[str, tuple[str, ...]], ...] = ()
    owned: tuple[tuple[str, Partitions], ...] = ()
    """For the leader: what each member reported owning in its JoinGroup."""
    correlation: int = 0
    """The correlation id of the request answered."""


@message
class SyncGroup(Message):
    """``SyncGroup``: the leader carries the assignment; followers send it empty."""

    group: str
    member_id: str
    generation: int
    assignment: tuple[tuple[str, Partitions], ...] = ()
    correlation: int = 0
    """The request header's correlation id, echoed by its response (0: none)."""


@message
class SyncGroupResponse(Message):
    group: str
    error: str = attrs.field(validator=_error)
    generation: int = -1
    partitions: Partitions = ()
    correlation: int = 0
    """The correlation id of the request answered."""


@message
class Heartbeat(Message):
    group: str
    member_id: str
    generation: int
    correlation: int = 0
    """The request header's correlation id, echoed by its response (0: none)."""


@message
class HeartbeatResponse(Message):
    group: str
    error: str = attrs.field(validator=_error)
    generation: int = -1
    correlation: int = 0
    """The correlation id of the request answered."""


@message
class LeaveGroup(Message):
    group: str
    member_id: str


@message
class LeaveGroupResponse(Message):
    group: str
    error: str = attrs.field(validator=_error)


@message
class OffsetCommit(Message):
    """``OffsetCommit`` with the member's id and generation (the consumer's fence against a
    zombie: Kafka refuses a commit from a member or generation the group no longer has)."""

    group: str
    member_id: str
    generation: int
    offsets: tuple[tuple[tuple[str, int], int], ...]
    correlation: int = 0
    """The request's correlation id, echoed by its response (0: none)."""


@message
class OffsetCommitResponse(Message):
    group: str
    error: str = attrs.field(validator=_error)
    generation: int = -1
    offsets: tuple[tuple[tuple[str, int], int], ...] = ()
    """The offsets the request carried (Kafka answers per partition; one error for all here)."""
    correlation: int = 0


@message
class OffsetFetch(Message):
    """``OffsetFetch``: the group's committed offsets of ``partitions`` (answered from the
    coordinator's cache, ``GroupMetadataManager.getOffsets``)."""

    group: str
    partitions: Partitions
    correlation: int = 0
    """The request header's correlation id, echoed by its response (0: none)."""


@message
class OffsetFetchResponse(Message):
    group: str
    error: str = attrs.field(validator=_error)
    offsets: tuple[tuple[tuple[str, int], int], ...] = ()
    """Per partition the committed offset (the next to read), ``NO_OFFSET`` when none."""
    correlation: int = 0
    """The correlation id of the request answered."""


# Notes: what the coordinator tells the world's records (not sent on the network) ------------


@message
class GenerationCompleted(Message):
    """The leader's SyncGroup was accepted: ``assignment`` is generation ``generation``'s."""

    coordinator: str
    group: str
    generation: int
    assignment: tuple[tuple[str, Partitions], ...]
    time: int


@message
class CommitAccepted(Message):
    """An OffsetCommit was accepted from ``member_id`` claiming ``generation``, while the
    group was in ``group_generation`` and gave the member ``owned``."""

    coordinator: str
    group: str
    member_id: str
    generation: int
    group_generation: int
    partitions: Partitions
    owned: Partitions
    time: int


@message
class MemberRemoved(Message):
    """The coordinator removed a member: ``why`` is ``session`` (``session.timeout.ms``),
    ``rebalance`` (did not rejoin within the rebalance timeout) or ``leave``."""

    coordinator: str
    group: str
    member_id: str
    why: str
    time: int
