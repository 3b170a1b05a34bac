"""The group invariants a run checks as it goes, shared by the harness (``impl.group.run``)
and the cluster run (``jepsen_py.group_cluster``), in Kafka's words (``spec/group``'s
``AssignmentPartitionsSubscribedPartitions``, ``OneOwnerPerPartition``,
``StaleGenerationChangesNothing``):

- every completed generation's assignment (``GenerationCompleted``) gives each subscribed
  partition exactly one owner (cooperative, KIP-429: or none, while it moves);
- among the members stable in the coordinator's current, completed generation no partition
  has two owners (``check_beliefs``);
- no zombie's action is accepted: every accepted OffsetCommit (``CommitAccepted``) names the
  group's generation and only partitions the member owns in it, and no partition is
  committed by two members in one generation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from impl.group.coordinator import GroupState
from impl.group.member import Member
from impl.group.messages import CommitAccepted, GenerationCompleted, MemberRemoved
from impl.messages import Message
from spec.group.lifecycle import MEMBER_STABLE, STABLE

__all__ = ["GroupInvariants", "Outcome"]


@attrs.define
class Outcome:
    generations: int = 0
    rebalance_durations_ns: list[int] = attrs.Factory(list)
    accepted_commits: int = 0
    fenced: dict[str, int] = attrs.Factory(dict)
    errors: dict[str, int] = attrs.Factory(dict)
    reused: int = 0
    """Generations whose id completed a second time (an older group record was loaded)."""
    withheld: int = 0
    """Cooperative: partitions left out of a generation's assignment (moving)."""
    faults: dict[str, int] = attrs.Factory(dict)
    violations: list[str] = attrs.Factory(list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_json(self) -> dict[str, Any]:
        d = sorted(self.rebalance_durations_ns)
        return {
            "ok": self.ok,
            "generations": self.generations,
            "rebalances": len(d),
            "rebalance_ms": {
                "min": d[0] // 1_000_000 if d else None,
                "median": d[len(d) // 2] // 1_000_000 if d else None,
                "max": d[-1] // 1_000_000 if d else None,
            },
            "accepted_commits": self.accepted_commits,
            "withheld": self.withheld,
            "generations_reused": self.reused,
            "removed": dict(sorted(self.fenced.items())),
            "errors": dict(sorted(self.errors.items())),
            "faults": dict(sorted(self.faults.items())),
            "violations": self.violations[:10],
        }


class GroupInvariants:
    """The checks above over one group's notes and members; ``outcome`` collects counts and
    violations."""

    def __init__(self, topic: str, partitions: int, cooperative: bool) -> None:
        self.topic = topic
        self.partitions = partitions
        self.cooperative = cooperative
        self.outcome = Outcome()
        self._owners: dict[tuple[int, tuple[str, int]], str] = {}
        self._completed: set[int] = set()

    def observe(self, note: Message, rebalance_started: int | None = None) -> None:
        """A coordinator's note; ``rebalance_started`` is when the completed generation's
        rebalance began (for its duration)."""
        out = self.outcome
        if isinstance(note, GenerationCompleted):
            out.generations += 1
            if note.generation in self._completed:
                # The generation id is handed out again: the coordinator loaded an older
                # group record (the newer one was lost with __consumer_offsets' data, e.g.
                # to an unclean election; docs/groups.md, "generation ids reused"). Its
                # commits are a new generation's.
                out.reused += 1
                self._owners = {k: v for k, v in self._owners.items() if k[0] != note.generation}
            self._completed.add(note.generation)
            if rebalance_started is not None:
                out.rebalance_durations_ns.append(note.time - rebalance_started)
            owners: dict[tuple[str, int], list[str]] = {}
            for mid, parts in note.assignment:
                for tp in parts:
                    owners.setdefault(tp, []).append(mid)
            for p in range(self.partitions):
                tp = (self.topic, p)
                if self.cooperative and not owners.get(tp):
                    # KIP-429: withheld while its old owner revokes it; the next one moves it.
                    out.withheld += 1
                    continue
                if len(owners.get(tp, [])) != 1:
                    out.violations.append(
                        f"generation {note.generation}: {tp} owned by {owners.get(tp, [])} "
                        f"(exactly one owner expected) at {note.time}"
                    )
        elif isinstance(note, CommitAccepted):
            out.accepted_commits += 1
            if note.generation != note.group_generation or not set(note.partitions) <= set(
                note.owned
            ):
                out.violations.append(
                    f"zombie commit accepted: {note.member_id} claimed generation "
                    f"{note.generation} for {list(note.partitions)} while the group is in "
                    f"generation {note.group_generation} and gives it {list(note.owned)} "
                    f"at {note.time}"
                )
            for tp in note.partitions:
                key = (note.group_generation, tp)
                previous = self._owners.setdefault(key, note.member_id)
                if previous != note.member_id:
                    out.violations.append(
                        f"double ownership: {tp} committed by {previous} and "
                        f"{note.member_id} in generation {note.group_generation} at {note.time}"
                    )
        elif isinstance(note, MemberRemoved):
            out.fenced[note.why] = out.fenced.get(note.why, 0) + 1

    def check_beliefs(self, g: GroupState | None, members: Iterable[Member], now: int) -> None:
        """Among ``members`` (the live ones) stable in the coordinator's current, completed
        generation ``g``, no partition has two owners."""
        if g is None or g.state != STABLE:
            return
        seen: dict[tuple[str, int], str] = {}
        for m in members:
            if m.state != MEMBER_STABLE or m.generation != g.generation:
                continue
            if m.member_id not in g.members:
                continue
            for tp in m.owned:
                if tp in seen and seen[tp] != m.member_id:
                    self.outcome.violations.append(
                        f"double ownership in generation {g.generation}: {tp} owned by "
                        f"{seen[tp]} and {m.member_id} at {now}"
                    )
                seen[tp] = m.member_id
