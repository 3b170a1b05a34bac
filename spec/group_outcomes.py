"""The consumer group's fences, and what goes wrong without each, as configurations of
``spec.group``.

Each outcome names a configuration and the property expected to fail in it (or ``None``
when every property must hold). The tests pin each shortest trace as a scenario file under
``model_tests/scenarios/group/`` and its length here (``trace_length``), so that a change
in the model's semantics shows as a diff to review.

The expectations are knowledge about Kafka, not about this code: a fence that stops
mattering (or a broken variant that stops failing) is a change to be found and explained.
"""

from __future__ import annotations

import attrs

from spec.check_command import check_command, dashed
from spec.group.params import Params


@attrs.frozen
class GroupOutcome:
    name: str
    title: str
    params: Params
    invariants: tuple[str, ...]
    """The properties checked (empty: all of them)."""
    expect_violation: str | None
    """The property expected to fail first, or None."""
    trace_length: int | None
    """The pinned length (states) of the shortest counterexample, or None when it holds."""
    reference: str
    slow: bool = False

    def command(self) -> str:
        """The ``kmodel check`` command line that reproduces this outcome."""
        flags = (
            *dashed("protocol", "members"),
            ("partitions", "topic-partitions"),
            ("max_generation", "max-generation"),
            ("max_expiries", "max-member-expiries"),
            *dashed("max_timeouts", "max_failovers", "network"),
        )
        return check_command("group", self.params, Params(), flags, self.invariants)


def _bug(name: str, **kwargs: object) -> Params:
    return Params(bugs=frozenset({name}), **kwargs)  # type: ignore[arg-type]


OUTCOMES: tuple[GroupOutcome, ...] = (
    GroupOutcome(
        "classic-holds",
        "The eager protocol with every fence on: every property holds",
        Params(),
        (),
        None,
        None,
        "Kafka protocol guide: the group membership API; KIP-62",
        slow=True,
    ),
    GroupOutcome(
        "classic-no-failover-holds",
        "The eager protocol without coordinator failover: every property holds",
        Params(max_failovers=0),
        (),
        None,
        None,
        "Kafka protocol guide: the group membership API; KIP-62",
    ),
    GroupOutcome(
        "cooperative-holds",
        "KIP-429's cooperative protocol with every fence on: every property holds",
        Params(protocol="cooperative"),
        (),
        None,
        None,
        "KIP-429",
        slow=True,
    ),
    GroupOutcome(
        "no-generation-check-stale-commit",
        "Without generation checks, a generation lost in a coordinator failover is handed out "
        "again and a member's commit from the lost one is accepted",
        _bug("no_generation_check"),
        (),
        "StaleGenerationChangesNothing",
        14,
        "GroupCoordinator: ILLEGAL_GENERATION; GroupMetadataManager (generations stored with "
        "the assignment only)",
    ),
    GroupOutcome(
        "sync-without-generation-check",
        "A leader's SyncGroup overtaken by its own rejoin is applied as the next generation's "
        "assignment",
        _bug("sync_without_generation_check", network="reordering", max_failovers=0),
        (),
        "StaleGenerationChangesNothing",
        8,
        "GroupCoordinator.doSyncGroup: ILLEGAL_GENERATION",
    ),
    GroupOutcome(
        "no-revocation-first-two-owners",
        "Cooperative without revoke-then-reassign: the new owner starts reading a partition "
        "its old owner, in the same generation, has not yet given up",
        _bug("no_revocation_first", protocol="cooperative"),
        (),
        "OneOwnerPerPartition",
        14,
        "KIP-429",
    ),
    GroupOutcome(
        "consumer-holds",
        "KIP-848 with member-epoch fencing and revocation before reassignment: every property "
        "holds",
        Params(protocol="consumer"),
        (),
        None,
        None,
        "KIP-848",
    ),
    GroupOutcome(
        "consumer-no-member-epoch-fencing",
        "KIP-848 without member-epoch fencing: an expired member's heartbeat is taken as a "
        "join and bumps the group epoch",
        _bug("no_member_epoch_fencing", protocol="consumer"),
        (),
        "StaleGenerationChangesNothing",
        4,
        "KIP-848: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH",
    ),
    GroupOutcome(
        "consumer-assign-before-revoked",
        "KIP-848 handing out a partition before its previous owner revoked it: two members' "
        "current assignments overlap",
        _bug("assign_before_revoked", protocol="consumer"),
        (),
        "AssignmentPartitionsSubscribedPartitions",
        5,
        "KIP-848: reconciliation (revoke, then assign once free)",
    ),
    GroupOutcome(
        "consumer-assign-before-revoked-two-owners",
        "KIP-848 handing out a partition before its previous owner revoked it: the old owner "
        "has not heard it must revoke, and the new owner already reads it",
        _bug("assign_before_revoked", protocol="consumer"),
        ("OneOwnerPerPartition",),
        "OneOwnerPerPartition",
        5,
        "KIP-848: reconciliation (revoke, then assign once free)",
    ),
    GroupOutcome(
        "generation-reused-after-failover",
        "A finding: on a network that lets a request overtake its sender's later ones, a "
        "generation id lost in a coordinator failover is handed out again, and a SyncGroup "
        "from the lost generation passes the generation check",
        Params(network="reordering"),
        (),
        "AssignmentPartitionsSubscribedPartitions",
        17,
        "GroupMetadataManager: the group's generation is stored with the assignment, so a "
        "failover before SyncGroup makes the previous generation active again",
    ),
)

WITNESSES: tuple[tuple[str, str, Params], ...] = (
    ("zombie-fenced", "ZombieFenced", Params(max_failovers=0)),
    (
        "coordinator-moves",
        "CoordinatorMovesAndGroupResumes",
        Params(max_expiries=0, max_timeouts=0),
    ),
)
"""(scenario name, "sometimes" property, configuration): shortest witnesses of a zombie
fenced and of the coordinator moving (the depth is the same as with the default bounds:
breadth-first search finds them before the other faults could shorten them)."""


def by_name(name: str) -> GroupOutcome:
    for outcome in OUTCOMES:
        if outcome.name == name:
            return outcome
    known = ", ".join(o.name for o in OUTCOMES)
    raise KeyError(f"no outcome named {name!r}; known: {known}")
