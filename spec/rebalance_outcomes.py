"""The rebalance mechanisms, what each promises, and what goes wrong without each rule, as
configurations of ``spec.rebalance``.

Each outcome names a configuration and the property expected to fail in it (or ``None``
when every property must hold); ``WITNESSES`` names the "sometimes" properties whose
shortest witness is worth reading (the preferred leader regaining leadership, a controlled
shutdown moving a leader, a reassignment completing, a leader elected from the ELR). The
tests pin each trace as a scenario file under ``model_tests/scenarios/rebalance/``.

KIP-966's "last replica standing" is shown twice within the same bounds: without the ELR
(``no_elr``) one unclean shutdown of the last ISR member loses an acknowledged write; with
it, every property holds.

The expectations are knowledge about Kafka, not about this code: a rule that stops
mattering (or a broken variant that stops failing) is a change in the model's semantics, to
be found and explained.
"""

from __future__ import annotations

from typing import Any

import attrs

from spec.check_command import check_command, dashed
from spec.rebalance.params import Params

FLAGS = (
    "brokers",
    "replication_factor",
    "min_isr",
    "max_records",
    "max_epoch",
    "max_crashes",
    "max_reassignments",
    "max_shutdowns",
    "imbalance_pct",
)
"""The ``kmodel check rebalance`` flags a configuration may set (``--replication-factor``
...), besides ``--mechanism``, ``--no-auto-rebalance`` and ``--bug``."""


@attrs.frozen
class RebalanceOutcome:
    name: str
    title: str
    params: Params
    invariants: tuple[str, ...]
    """The properties checked (empty: all of them)."""
    expect_violation: str | None
    reference: str
    slow: bool = False

    def command(self) -> str:
        """The ``kmodel check`` command line that reproduces this outcome."""
        p = self.params
        return check_command(
            "rebalance",
            p,
            Params.of(p.mechanism),
            dashed(*FLAGS),
            self.invariants,
            lead=(f"--mechanism {p.mechanism}",),
            switches=() if p.auto_rebalance else ("--no-auto-rebalance",),
        )


def _of(mechanism: str, *bugs: str, **kwargs: Any) -> Params:
    return Params.of(mechanism, bugs=frozenset(bugs), **kwargs)


OUTCOMES: tuple[RebalanceOutcome, ...] = (
    RebalanceOutcome(
        "preferred-holds",
        "Preferred-leader election and the auto rebalance: every property holds, and the "
        "preferred replica regains leadership",
        _of("preferred"),
        (),
        None,
        "Kafka docs: auto.leader.rebalance.enable, leader.imbalance.per.broker.percentage",
    ),
    RebalanceOutcome(
        "shutdown-holds",
        "Controlled shutdown, three replicas, min.insync.replicas=2: every property holds, "
        "and a shutdown moves a leader",
        _of("shutdown"),
        (),
        None,
        "Kafka docs: controlled.shutdown.enable",
    ),
    RebalanceOutcome(
        "shutdown-to-non-isr",
        "A controlled shutdown that hands leadership to a replica outside the ISR: the "
        "partition state is malformed at once",
        _of("shutdown", "shutdown_to_non_isr"),
        (),
        "LeaderAndIsrWellFormed",
        "Kafka docs: controlled.shutdown.enable (ControlledShutdownLeaderElection)",
    ),
    RebalanceOutcome(
        "shutdown-to-non-isr-acked-write-lost",
        "A controlled shutdown that hands leadership to a replica outside the ISR: the new "
        "leader lacks an acknowledged write",
        _of("shutdown", "shutdown_to_non_isr"),
        ("NoAckedAllWriteLost",),
        "NoAckedAllWriteLost",
        "Kafka docs: controlled.shutdown.enable (ControlledShutdownLeaderElection)",
    ),
    RebalanceOutcome(
        "reassignment-holds",
        "KIP-455 reassignment (moves, replication-factor increase and decrease, "
        "cancellation), min.insync.replicas=2: every property holds",
        _of("reassignment"),
        (),
        None,
        "KIP-455",
    ),
    RebalanceOutcome(
        "drop-before-isr-join",
        "A reassignment that completes before the target replicas joined the ISR: it "
        "completes with too few in-sync target replicas",
        _of("reassignment", "drop_before_isr_join"),
        (),
        "ReassignmentKeepsMinIsr",
        "KIP-455",
    ),
    RebalanceOutcome(
        "drop-before-isr-join-acked-write-lost",
        "A reassignment that completes before the target replicas joined the ISR: the "
        "removed replicas held the only copy of an acknowledged write",
        _of("reassignment", "drop_before_isr_join"),
        ("NoAckedAllWriteLost",),
        "NoAckedAllWriteLost",
        "KIP-455",
    ),
    RebalanceOutcome(
        "no-elr-last-replica-standing",
        "Before KIP-966, min.insync.replicas=2: the last ISR member crashes, loses its "
        "unflushed tail, comes back as the ISR's only member and is elected: an "
        "acknowledged write is lost",
        _of("elr", "no_elr"),
        (),
        "NoAckedAllWriteLost",
        "KIP-966 (the last replica standing)",
    ),
    RebalanceOutcome(
        "elr-holds",
        "KIP-966 within the same bounds: the HW waits for min.insync.replicas, the last "
        "ISR member leaves the ISR for the ELR, an unclean restart leaves the ELR, and the "
        "clean election takes an ELR member: no acknowledged write is lost",
        _of("elr"),
        (),
        None,
        "KIP-966",
    ),
    RebalanceOutcome(
        "stale-elr",
        "An ELR that keeps a broker after its unclean restart: the broker that lost the "
        "write is elected from the ELR",
        _of("elr", "stale_elr"),
        (),
        "NoAckedAllWriteLost",
        "KIP-966 (unclean shutdown removes a replica from the ELR)",
    ),
    RebalanceOutcome(
        "all-holds",
        "Every mechanism in one state space (two brokers, min.insync.replicas=2): every "
        "property holds",
        _of("all"),
        (),
        None,
        "KIP-455, KIP-966; Kafka docs",
    ),
    RebalanceOutcome(
        "no-elr-three-replicas",
        "Before KIP-966 with three replicas, as in the replication spec's "
        "min-isr-2-last-replica-standing: an acknowledged write is lost",
        _of("elr", "no_elr", brokers=3, replication_factor=3, max_epoch=2),
        (),
        "NoAckedAllWriteLost",
        "KIP-966",
    ),
    RebalanceOutcome(
        "elr-three-replicas-holds",
        "KIP-966 with three replicas, within the same bounds: no acknowledged write is lost",
        _of("elr", brokers=3, replication_factor=3, max_epoch=2),
        (),
        None,
        "KIP-966",
        slow=True,
    ),
)

WITNESSES: tuple[tuple[str, str, str], ...] = (
    ("preferred-leader-regains", "preferred", "PreferredLeaderRegains"),
    ("shutdown-moves-leader", "shutdown", "ShutdownMovesLeader"),
    ("reassignment-completes", "reassignment", "ReassignmentCompletes"),
    ("reassignment-moves-leader", "reassignment", "ReassignmentMovesLeader"),
    ("leader-elected-from-elr", "elr", "LeaderElectedFromElr"),
)
"""(scenario name, mechanism, "sometimes" property): the shortest witness in that
mechanism's default configuration."""


def by_name(name: str) -> RebalanceOutcome:
    for outcome in OUTCOMES:
        if outcome.name == name:
            return outcome
    known = ", ".join(o.name for o in OUTCOMES)
    raise KeyError(f"no outcome named {name!r}; known: {known}")
