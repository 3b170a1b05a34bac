"""The abstraction function from the implementation's group (``impl.group.coordinator`` and
``impl.group.member``) to the state of ``spec.group.classic``, for the refinement test.

The spec names a member id ``(consumer slot, n)``: the n-th id the coordinator handed to
consumer ``slot``; the implementation's ids are strings (``c1-b2-3``), numbered here in the
order they are first seen per consumer (``MemberIds``). Partitions of the one topic map to
their numbers; ``-1`` (the consumer's "no generation") to the spec's ``NO_GENERATION``; the
coordinator to the number of failovers so far. Requests in flight are not abstracted (the
spec's invariants and ``StaleGenerationChangesNothing`` do not read them); ``offsets`` is
per partition the generation of the last accepted OffsetCommit, as in the spec.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from impl.group.coordinator import GroupState, StoredGroup
from impl.group.member import Member
from impl.group.messages import Partitions
from spec.group.classic import NO_GENERATION, NOBODY, Group, MemberId, MemberMeta, State, Stored
from spec.group.classic import Member as SpecMember

__all__ = ["MemberIds", "abstract"]


class MemberIds:
    """Implementation member id -> the spec's ``(slot, n)``, numbered as first seen."""

    def __init__(self) -> None:
        self.ids: dict[str, MemberId] = {}
        self.issued: dict[int, int] = {}

    def __call__(self, member_id: str) -> MemberId:
        if not member_id:
            return NOBODY
        if member_id not in self.ids:
            slot = int(member_id.split("-", 1)[0].removeprefix("c"))
            self.issued[slot] = self.issued.get(slot, 0) + 1
            self.ids[member_id] = (slot, self.issued[slot])
        return self.ids[member_id]


def _parts(partitions: Partitions) -> frozenset[int]:
    return frozenset(p for _, p in partitions)


def _generation(g: int) -> int:
    return NO_GENERATION if g < 0 else g


def abstract(
    group: GroupState | None,
    stored: StoredGroup | None,
    members: Sequence[Member],
    offsets: Mapping[int, int],
    partitions: int,
    failovers: int,
    ids: MemberIds,
) -> State:
    """The spec's state for the coordinator's ``group`` (None while it is unloaded: the
    spec's Dead group), its last ``stored`` metadata, the consumers ``members`` (slot order)
    and the accepted commits' ``offsets``."""
    if group is None:
        spec_group = Group("Dead", 0, NOBODY, (), failovers)
    else:
        metas = [
            MemberMeta(
                ids(mid),
                joined=m.awaiting_join,
                assignment=_parts(m.partitions),
                sync_parked=m.awaiting_sync,
            )
            for mid, m in group.members.items()
        ]
        spec_group = Group(
            group.state,
            group.generation,
            ids(group.leader),
            tuple(sorted(metas, key=lambda m: m.member_id)),
            failovers,
        )
    if stored is None:
        spec_stored = Stored(NO_GENERATION, NOBODY, ())
    else:
        spec_stored = Stored(
            stored.generation,
            ids(stored.leader),
            tuple(
                sorted(
                    (MemberMeta(ids(row[0]), assignment=_parts(row[5])) for row in stored.members),
                    key=lambda m: m.member_id,
                )
            ),
        )
    spec_members = tuple(
        SpecMember(
            state=m.state,
            member_id=ids(m.member_id),
            generation=_generation(m.generation),
            owned=_parts(m.owned),
        )
        for m in members
    )
    return State(
        group=spec_group,
        stored=spec_stored,
        members=spec_members,
        inflight=frozenset(),
        offsets=tuple(offsets.get(p, 0) for p in range(partitions)),
        ids_issued=tuple(ids.issued.get(i + 1, 0) for i in range(len(members))),
    )
