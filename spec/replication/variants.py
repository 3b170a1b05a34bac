"""The protocol variants of replication, as named rule choices: one table says what each is.

Kafka changed how a replica becoming a follower repairs its log three times, each time
because the previous rule could lose committed data (``Params.truncation``,
``--truncation``):

    variant          truncation rule    epoch fencing   Kafka
    high_watermark   HIGH_WATERMARK     no              before 0.11
    kip101           EPOCH_END          no              0.11 (KIP-101)
    kip279           COMMON_PREFIX      no              2.0 (KIP-279)
    kip320           COMMON_PREFIX      yes             2.1 (KIP-320)

A variant is two choices, and nothing else tells the variants apart:

- its **truncation rule** (``TruncationRule``, computed by ``Variant.truncation_offset``):
  where a replica becoming a follower truncates its log to;
- **leader-epoch fencing** (KIP-320), on or off: every rule it changes is in
  ``spec.replication.fencing``. Code asks ``Params.fenced`` (or ``Variant.epoch_fencing``),
  never the variant's name.

The 2018 TLA+ model (github.com/hachikuji/kafka-specification) states the same four rules.
"""

from __future__ import annotations

import enum

import attrs

from spec.replication.state import Replica


class TruncationRule(enum.Enum):
    """Where a replica becoming a follower truncates its log to (``Log.truncateTo``)."""

    HIGH_WATERMARK = "high_watermark"
    """Its own high watermark: what it knows is committed. Before KIP-101; a lagging HW
    makes it drop committed records, and then its log can diverge from the leader's."""
    EPOCH_END = "epoch_end"
    """KIP-101: the end offset, on the leader, of the epoch of its last record (one
    OffsetsForLeaderEpoch request), falling back to its HW when the leader cannot answer."""
    COMMON_PREFIX = "common_prefix"
    """KIP-279: the offset after the last record both logs share (the follower repeats the
    epoch exchange until the logs agree)."""


@attrs.frozen
class Variant:
    """One protocol variant: a truncation rule, and whether KIP-320 fencing is on."""

    name: str
    truncation: TruncationRule
    epoch_fencing: bool
    """KIP-320: fetches, HW advances, ISR changes and truncation are fenced by the current
    leader epoch (``spec.replication.fencing`` holds every rule this turns on)."""
    kafka: str
    """The Kafka release that shipped it, and the KIP."""

    def truncation_offset(self, follower: Replica, leader: Replica) -> int:
        """Where ``follower`` truncates its log to when it starts following ``leader``.

        - ``HIGH_WATERMARK``: its own high watermark;
        - ``EPOCH_END``: the leader's end offset for the epoch of the follower's last record
          (the leader's LEO if its last record has that epoch, else the offset of its first
          record of a later epoch), the follower's HW when the leader has no answer;
        - ``COMMON_PREFIX``: one past the last offset where both logs hold the same record.
        """
        rule = self.truncation
        if rule is TruncationRule.HIGH_WATERMARK:
            return follower.hw
        rlog = follower.log
        llog = leader.log
        if rule is TruncationRule.EPOCH_END:
            if not rlog:
                return 0
            last_epoch = rlog[-1][0]
            if not llog:
                return follower.hw
            if llog[-1][0] == last_epoch:
                return len(llog)
            for offset, record in enumerate(llog):
                if record[0] > last_epoch:
                    return offset
            return follower.hw
        if not rlog or not llog:
            return 0
        for offset in range(min(len(rlog), len(llog)) - 1, -1, -1):
            if rlog[offset] == llog[offset]:
                return offset + 1
        return 0


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("high_watermark", TruncationRule.HIGH_WATERMARK, False, "before 0.11"),
        Variant("kip101", TruncationRule.EPOCH_END, False, "0.11, KIP-101"),
        Variant("kip279", TruncationRule.COMMON_PREFIX, False, "2.0, KIP-279"),
        Variant("kip320", TruncationRule.COMMON_PREFIX, True, "2.1, KIP-320"),
    )
}
"""Every variant by name, oldest first."""

TRUNCATIONS = tuple(VARIANTS)
"""The variants' names: the choices of ``Params.truncation`` and ``--truncation``."""
