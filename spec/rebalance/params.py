"""The rebalance spec's parameters: which mechanism runs, the cluster's size and the
bounds, the configs that matter (``min.insync.replicas``, ``auto.leader.rebalance.enable``,
``leader.imbalance.per.broker.percentage``), and the deliberately broken variants.

Each mechanism has its own default bounds (``MECHANISM_DEFAULTS``), chosen so that its
exhaustive check finishes in seconds and every one of its ``--bug`` variants is violated
within them; ``Params.of`` fills the fields a caller leaves unset from that table.
"""

from __future__ import annotations

from typing import Any

import attrs

from spec.framework import SpecError

MECHANISMS = ("preferred", "shutdown", "reassignment", "elr")
"""One module each (``spec.rebalance.preferred`` ...), each checked on its own."""
CHOICES = (*MECHANISMS, "all")
"""``--mechanism``: one mechanism, or ``all`` of them composed in one state space."""

BUGS = {
    "drop_before_isr_join": "a reassignment completes (the removed replicas are dropped) "
    "before every target replica has joined the ISR",
    "shutdown_to_non_isr": "a controlled shutdown hands leadership to a replica outside the ISR",
    "stale_elr": "a broker that restarts after an unclean shutdown stays in the ELR",
    "no_elr": "before KIP-966: no ELR, the HW advances with any ISR, and the last ISR member "
    "keeps its place through a crash (last replica standing)",
    "assignment_not_sent": "the controller records a reassignment but the leader never learns "
    "the new replicas: it refuses their fetches, so they never catch up (a liveness bug)",
}
"""The deliberately broken variants (``--bug``), each named after the mistake it makes."""

BUG_MECHANISM = {
    "drop_before_isr_join": "reassignment",
    "shutdown_to_non_isr": "shutdown",
    "stale_elr": "elr",
    "no_elr": "elr",
    "assignment_not_sent": "reassignment",
}
"""The mechanism each bug belongs to: ``--bug`` without ``--mechanism`` checks that one."""

MECHANISM_DEFAULTS: dict[str, dict[str, Any]] = {
    "preferred": {"brokers": 2, "replication_factor": 2, "max_records": 2, "max_epoch": 3},
    "shutdown": {"brokers": 3, "replication_factor": 3, "min_isr": 2, "max_epoch": 2},
    "reassignment": {
        "brokers": 3,
        "replication_factor": 2,
        "min_isr": 2,
        "max_records": 2,
        "max_epoch": 2,
    },
    "elr": {
        "brokers": 2,
        "replication_factor": 2,
        "min_isr": 2,
        "max_epoch": 3,
        "max_crashes": 1,
    },
    "all": {"brokers": 2, "replication_factor": 2, "min_isr": 2, "max_epoch": 2},
}
"""Default bounds per mechanism (fields not listed keep ``Params``' defaults)."""


@attrs.frozen
class Params:
    """Bounds, configs and bugs. Build with ``Params.of(mechanism, ...)`` to get that
    mechanism's default bounds."""

    mechanism: str = "all"
    brokers: int = 2
    replication_factor: int = 2
    """The initial assignment is brokers ``1..replication_factor``, broker 1 preferred."""
    min_isr: int = 1
    """``min.insync.replicas``: acks=all writes need this many in-sync replicas; with
    KIP-966 the HW does not advance below it and the ELR is kept below it."""
    max_records: int = 1
    max_epoch: int = 2
    """Leader epochs the controller may hand out (0..max_epoch): the bound on elections,
    ISR changes through the controller, and leadership moves."""
    max_crashes: int = 0
    max_reassignments: int = 1
    max_shutdowns: int = 1
    auto_rebalance: bool = True
    """``auto.leader.rebalance.enable`` (default true)."""
    imbalance_pct: int = 10
    """``leader.imbalance.per.broker.percentage`` (default 10)."""
    bugs: frozenset[str] = frozenset()

    @classmethod
    def of(cls, mechanism: str | None = None, **given: Any) -> Params:
        """``mechanism``'s default bounds, overridden by ``given`` (None values ignored).
        Without a mechanism: the one the bugs belong to, else ``all``."""
        bugs = frozenset(given.pop("bugs", None) or ())
        if mechanism is None:
            owners = sorted({BUG_MECHANISM[b] for b in bugs if b in BUG_MECHANISM})
            mechanism = owners[0] if len(owners) == 1 else "all"
        fields = dict(MECHANISM_DEFAULTS.get(mechanism, {}))
        fields.update({k: v for k, v in given.items() if v is not None})
        return cls(mechanism=mechanism, bugs=bugs, **fields)

    def __attrs_post_init__(self) -> None:
        problems = []
        if self.mechanism not in CHOICES:
            problems.append(f"mechanism {self.mechanism!r} is not one of {', '.join(CHOICES)}")
        if not 2 <= self.brokers <= 4:
            problems.append(f"brokers must be 2..4, got {self.brokers}")
        if not 1 <= self.replication_factor <= self.brokers:
            problems.append(
                f"replication_factor must be 1..brokers ({self.brokers}), "
                f"got {self.replication_factor}"
            )
        if not 1 <= self.min_isr <= self.replication_factor:
            problems.append(
                f"min_isr must be 1..replication_factor ({self.replication_factor}), "
                f"got {self.min_isr}"
            )
        for name in ("max_records", "max_epoch"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_crashes", "max_reassignments", "max_shutdowns"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.imbalance_pct <= 100:
            problems.append(f"imbalance_pct must be 0..100, got {self.imbalance_pct}")
        unknown = sorted(set(self.bugs) - set(BUGS))
        if unknown:
            problems.append(f"unknown bug flag(s) {unknown}; known: {', '.join(sorted(BUGS))}")
        for bug in sorted(self.bugs & set(BUGS)):
            owner = BUG_MECHANISM[bug]
            if self.mechanism not in (owner, "all"):
                problems.append(
                    f"--bug {bug} belongs to mechanism {owner}; use --mechanism {owner} or all"
                )
        if problems:
            raise SpecError("; ".join(problems))

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.brokers + 1))

    @property
    def elr(self) -> bool:
        """KIP-966's Eligible Leader Replicas and strict min ISR are on (Kafka 4.1's default
        for new clusters), unless the ``no_elr`` variant shows the behaviour before it."""
        return "no_elr" not in self.bugs

    def runs(self, mechanism: str) -> bool:
        """Whether ``mechanism``'s actions are part of this configuration."""
        return self.mechanism in (mechanism, "all")
