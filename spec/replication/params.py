"""The replication spec's parameters: bounds, the model, the protocol variant, the extended
model's settings (``acks``, ``min.insync.replicas``, unclean election, crashes), and the
deliberately broken variants.

``ModelChoices`` derives what a configuration's fields choose (the model, the variant,
whether KIP-320 fencing is on, whether truncation clamps): it is shared by ``Params`` and by
the z3 encoding's own configuration record, so the two cannot disagree.
"""

from __future__ import annotations

import attrs

from spec.framework import SpecError
from spec.replication.variants import TRUNCATIONS, VARIANTS, Variant

MODELS = ("published-2018", "extended")
ACKS = ("0", "1", "all")
BUGS = {
    "follower_hw_unclamped": "a follower takes the leader's HW without capping it at its own LEO",
    "elect_outside_isr": "the controller may elect a replica outside the ISR, keeping the ISR",
    "reuse_epoch": "the controller elects a new leader without bumping the leader epoch",
    "accept_stale_epoch": "a replica accepts a LeaderAndIsr with an epoch older than its own",
    "ack_before_hw": "acks=all writes are acknowledged on append, before the HW passes them",
    "follower_stops_fetching": "a follower may stop fetching for good (no fairness for the "
    "fetch step): the leader's HW, and acks=all producers, wait forever",
}
"""The deliberately broken variants (``--bug``), each named after the mistake it makes, so
that every invariant is shown able to fail."""


class ModelChoices:
    """What a configuration's ``model``, ``truncation``, ``clamp_truncation`` and
    ``replicas`` fields choose."""

    __slots__ = ()
    model: str
    truncation: str
    clamp_truncation: bool | None
    replicas: int

    @property
    def extended(self) -> bool:
        """The extended model (acks, crashes, unclean election), not the published one."""
        return self.model == "extended"

    @property
    def variant(self) -> Variant:
        return VARIANTS[self.truncation]

    @property
    def fenced(self) -> bool:
        """KIP-320's leader-epoch fencing is on (see ``spec.replication.fencing``)."""
        return VARIANTS[self.truncation].epoch_fencing

    @property
    def clamps(self) -> bool:
        """Truncation past the log's end keeps the log (Kafka's ``Log.truncateTo``) instead
        of disabling the step (the published model's rule)."""
        return self.extended if self.clamp_truncation is None else self.clamp_truncation

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.replicas + 1))


@attrs.frozen
class Params(ModelChoices):
    """Bounds and protocol variants. Defaults are the published model's small configuration."""

    replicas: int = attrs.field(default=2)
    log_size: int = 2
    max_records: int = 2
    max_epoch: int = 2
    truncation: str = "kip320"
    model: str = "published-2018"
    acks: str = "all"
    min_isr: int = 1
    unclean: bool = False
    max_crashes: int = 0
    clamp_truncation: bool | None = None
    """Truncate to min(offset, LEO) as Kafka's ``Log.truncateTo`` does, instead of disabling
    the step (the published model's rule). Default: off in ``published-2018``, on in
    ``extended``."""
    leader_view: bool | None = None
    """The leader knows a follower's LEO only from that follower's last fetch, and
    recomputes its HW as the minimum over the ISR of what it knows (Kafka's
    ``Partition.maybeIncrementLeaderHW``), instead of reading followers' logs directly as
    the published model does. Default: on in ``extended``; the published model has no
    such state."""
    bugs: frozenset[str] = frozenset()

    def __attrs_post_init__(self) -> None:
        problems = []
        if self.model not in MODELS:
            problems.append(f"model {self.model!r} is not one of {', '.join(MODELS)}")
        if self.truncation not in TRUNCATIONS:
            problems.append(
                f"truncation {self.truncation!r} is not one of {', '.join(TRUNCATIONS)}"
            )
        if not 1 <= self.replicas <= 4:
            problems.append(f"replicas must be 1..4, got {self.replicas}")
        for name in ("log_size", "max_records"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_epoch < 0:
            problems.append(f"max_epoch must be >= 0, got {self.max_epoch}")
        if self.acks not in ACKS:
            problems.append(f"acks {self.acks!r} is not one of 0, 1, all")
        if not 1 <= self.min_isr <= self.replicas:
            problems.append(f"min_isr must be 1..replicas ({self.replicas}), got {self.min_isr}")
        if self.max_crashes < 0:
            problems.append(f"max_crashes must be >= 0, got {self.max_crashes}")
        unknown = sorted(set(self.bugs) - set(BUGS))
        if unknown:
            problems.append(f"unknown bug flag(s) {unknown}; known: {', '.join(sorted(BUGS))}")
        if self.model == "published-2018":
            extras = []
            if self.acks != "all":
                extras.append("acks")
            if self.min_isr != 1:
                extras.append("min_isr")
            if self.unclean:
                extras.append("unclean")
            if self.max_crashes:
                extras.append("max_crashes")
            if self.leader_view:
                extras.append("leader_view")
            if extras:
                problems.append(
                    f"{', '.join(extras)}: only in --model extended "
                    "(the published 2018 model has no acks, crashes or unclean election)"
                )
        if problems:
            raise SpecError("; ".join(problems))

    @property
    def views(self) -> bool:
        """The leader view is on (see ``leader_view``)."""
        return self.extended if self.leader_view is None else self.leader_view
