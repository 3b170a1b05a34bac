"""What committing offsets guarantees, and what goes wrong without each fence, as
configurations of ``spec.offsets``.

Each outcome names a configuration and the property expected to fail in it (or ``None``
when every property must hold, with its pinned count of distinct states). The tests pin
each shortest trace as a scenario file under ``model_tests/scenarios/offsets/`` and its
length here (``trace_length``), so that a change in the model's semantics shows as a diff
to review.

The expectations are knowledge about Kafka, not about this code: committing after
processing is at least once, committing before processing is at most once (the
``KafkaConsumer`` Javadoc, "Manual Offset Control"), ``auto.offset.reset=latest`` skips the
records written before a group's first position, and a stale generation's commit or an
offset read before the coordinator has loaded breaks what the group has committed.
"""

from __future__ import annotations

import attrs

from spec.check_command import check_command, dashed
from spec.offsets.params import Params


@attrs.frozen
class OffsetsOutcome:
    name: str
    title: str
    params: Params
    invariants: tuple[str, ...]
    """The properties checked (empty: all of them)."""
    expect_violation: str | None
    """The property expected to fail first, or None."""
    trace_length: int | None
    """The pinned length (states) of the shortest counterexample, or None when it holds."""
    distinct_states: int | None
    """The pinned count of distinct states when it holds (None for a violation)."""
    reference: str
    slow: bool = False

    def command(self) -> str:
        """The ``kmodel check`` command line that reproduces this outcome."""
        flags = (
            ("commit", "commit"),
            ("reset", "offset-reset"),
            *dashed("members", "records", "max_generation"),
            ("max_expiries", "max-member-expiries"),
            *dashed("max_crashes", "max_failovers"),
        )
        return check_command("offsets", self.params, Params(), flags, self.invariants)


def _bug(name: str, **kwargs: object) -> Params:
    return Params(bugs=frozenset({name}), **kwargs)  # type: ignore[arg-type]


SAFETY = ("CommittedWithinOwnerProgress", "StaleGenerationNeverCommits", "CommittedNeverRegresses")
"""Every property but ``AtLeastOnce``: what the fences guarantee whatever the consumer does."""

OUTCOMES: tuple[OffsetsOutcome, ...] = (
    OffsetsOutcome(
        "after-process-holds",
        "Committing after processing, with expiries, crashes and a coordinator move: at least "
        "once, and every fence holds",
        Params(),
        (),
        None,
        None,
        96_232,
        "KafkaConsumer Javadoc: Manual Offset Control (at-least-once); OffsetCommit fencing",
    ),
    OffsetsOutcome(
        "after-process-no-failover-holds",
        "Committing after processing without a coordinator move: every property holds",
        Params(max_failovers=0),
        (),
        None,
        None,
        11_548,
        "KafkaConsumer Javadoc: Manual Offset Control",
    ),
    OffsetsOutcome(
        "before-process-loses-record",
        "Committing before processing: a consumer crash between the commit and the "
        "processing loses the record (at most once)",
        Params(commit="before-process"),
        (),
        "AtLeastOnce",
        9,
        None,
        "KafkaConsumer Javadoc: at-most-once by committing before processing",
    ),
    OffsetsOutcome(
        "before-process-fences-hold",
        "Committing before processing: the fences still hold (the loss is the consumer's "
        "choice of delivery, not a broken commit)",
        Params(commit="before-process"),
        SAFETY,
        None,
        None,
        28_049,
        "OffsetCommit fencing (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION)",
    ),
    OffsetsOutcome(
        "before-process-no-crash-holds",
        "Committing before processing, with no consumer crash: nothing is lost (a rebalance "
        "happens inside poll(), after the polled record is processed)",
        Params(commit="before-process", max_crashes=0),
        (),
        None,
        None,
        11_966,
        "KafkaConsumer Javadoc: rebalances happen inside poll()",
    ),
    OffsetsOutcome(
        "latest-skips-earlier-records",
        "auto.offset.reset=latest: a group without a committed offset starts at the log end "
        "and commits past the records written before it",
        Params(reset="latest"),
        (),
        "AtLeastOnce",
        7,
        None,
        "Kafka consumer configs: auto.offset.reset (latest, the default)",
    ),
    OffsetsOutcome(
        "stale-generation-commit",
        "Without the OffsetCommit fences: an expired member's commit is accepted",
        _bug("stale_generation_commit"),
        (),
        "StaleGenerationNeverCommits",
        10,
        None,
        "GroupCoordinator.handleCommitOffsets: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION",
    ),
    OffsetsOutcome(
        "stale-generation-commit-zombie-moves-offset",
        "Without the OffsetCommit fences: a commit from the previous generation, delivered "
        "late, moves the group's offset past records the new generation's owner has not "
        "processed (its position)",
        _bug("stale_generation_commit"),
        ("CommittedWithinOwnerProgress",),
        "CommittedWithinOwnerProgress",
        14,
        None,
        "GroupCoordinator.handleCommitOffsets: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION",
    ),
    OffsetsOutcome(
        "fetch-before-load",
        "OffsetFetch answered before the new coordinator loaded __consumer_offsets: the new "
        "owner sees no committed offset and starts behind the group's",
        _bug("fetch_before_load"),
        (),
        "CommittedWithinOwnerProgress",
        16,
        None,
        "GroupMetadataManager: COORDINATOR_LOAD_IN_PROGRESS while loading",
    ),
    OffsetsOutcome(
        "fetch-before-load-offset-regresses",
        "OffsetFetch answered before the load: the new owner's commit moves the group's "
        "committed offset backwards",
        _bug("fetch_before_load"),
        ("CommittedNeverRegresses",),
        "CommittedNeverRegresses",
        22,
        None,
        "GroupMetadataManager: COORDINATOR_LOAD_IN_PROGRESS while loading",
    ),
)


LIVENESS: tuple[tuple[str, str, Params, str | None, tuple[int, int] | None], ...] = (
    ("work-committed-holds", "WorkCommitted", Params(), None, None),
    (
        "commit-given-up",
        "WorkCommitted",
        _bug("commit_given_up"),
        "WorkCommitted",
        (11, 0),
    ),
)
"""(scenario name, property, configuration, expected violation, pinned lasso (prefix
states, cycle steps)): the liveness property holds under fairness; a consumer that gives up
a commit after a retriable error leaves processed records uncommitted forever."""


def by_name(name: str) -> OffsetsOutcome:
    for outcome in OUTCOMES:
        if outcome.name == name:
            return outcome
    known = ", ".join(o.name for o in OUTCOMES)
    raise KeyError(f"no outcome named {name!r}; known: {known}")
