"""Bounds, consumer variants and deliberately broken variants of the offsets spec.

``Params.commit`` picks when the consumer commits (the delivery guarantee it gets):

- ``after-process``: process a record, then commit the offset after it (``commitSync`` after
  the records of a ``poll``, or ``enable.auto.commit=true``, whose commit of the positions
  happens inside the *next* ``poll`` every ``auto.commit.interval.ms``): a crash after
  processing and before committing re-delivers the record to the next owner; *at least
  once*;
- ``before-process``: commit the offset after a record, then process it: a crash between the
  commit and the processing loses the record (the next owner starts after it); *at most
  once*.

``Params.reset`` is the consumer's ``auto.offset.reset``: where a consumer starts when its
group has no committed offset for the partition (``earliest``: the log start; ``latest``:
the log end, Kafka's default).
"""

from __future__ import annotations

import attrs

from spec.framework import SpecError

COMMITS = ("after-process", "before-process")
RESETS = ("earliest", "latest")

BUGS = {
    "stale_generation_commit": (
        "the coordinator accepts an OffsetCommit whatever its member id and generation (no "
        "UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION / REBALANCE_IN_PROGRESS): a zombie's commit "
        "moves the group's offset"
    ),
    "fetch_before_load": (
        "a new coordinator answers OffsetFetch before it has loaded the offsets from "
        "__consumer_offsets (no COORDINATOR_LOAD_IN_PROGRESS): the consumer sees no "
        "committed offset and starts from auto.offset.reset"
    ),
    "commit_given_up": (
        "a consumer whose OffsetCommit failed with a retriable error (NOT_COORDINATOR, "
        "COORDINATOR_LOAD_IN_PROGRESS) takes the offset as committed and never commits it "
        "again (commitAsync without a later commit): processed records stay uncommitted"
    ),
}

BUG_SETTINGS: dict[str, dict[str, object]] = {}
"""Where a bug shows, for settings the user leaves unset: every bug shows with the default
bounds (each needs a fault the defaults allow: an expiry, a coordinator move)."""


@attrs.frozen
class Params:
    """Bounds and consumer variants. Faults are bounded by budgets; healing (loading the
    offsets, rejoining) never is."""

    commit: str = "after-process"
    reset: str = "earliest"
    members: int = 2
    """Consumer processes (slots 1..members) in one group, subscribed to one partition."""
    records: int = 2
    """Records in the consumed partition (offsets 0..records-1), produced before the group
    starts."""
    max_generation: int = 2
    """Rebalances stop once the generation id reaches this."""
    max_expiries: int = 1
    """Fault budget: members whose session (or ``max.poll.interval.ms``) may expire while
    the consumer goes on (a zombie)."""
    max_crashes: int = 1
    """Fault budget: consumer processes that crash and restart, losing what they held in
    memory (position, the record being processed)."""
    max_failovers: int = 1
    """Fault budget: how often the group coordinator moves."""
    max_member_ids: int = 2
    """Member ids the coordinator may hand out per consumer."""
    bugs: frozenset[str] = frozenset()

    def __attrs_post_init__(self) -> None:
        problems = []
        if self.commit not in COMMITS:
            problems.append(f"commit {self.commit!r} is not one of {', '.join(COMMITS)}")
        if self.reset not in RESETS:
            problems.append(f"reset {self.reset!r} is not one of {', '.join(RESETS)}")
        if not 1 <= self.members <= 3:
            problems.append(f"members must be 1..3, got {self.members}")
        if not 1 <= self.records <= 4:
            problems.append(f"records must be 1..4, got {self.records}")
        if self.max_generation < 1:
            problems.append(f"max_generation must be >= 1, got {self.max_generation}")
        for name in ("max_expiries", "max_crashes", "max_failovers"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.max_member_ids < 1:
            problems.append(f"max_member_ids must be >= 1, got {self.max_member_ids}")
        unknown = sorted(set(self.bugs) - set(BUGS))
        if unknown:
            problems.append(f"unknown bug flag(s) {unknown}; known: {', '.join(sorted(BUGS))}")
        if problems:
            raise SpecError("; ".join(problems))

    @property
    def slots(self) -> tuple[int, ...]:
        return tuple(range(1, self.members + 1))
