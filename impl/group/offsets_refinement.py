"""Refinement of the implementation's committed offsets against ``spec.offsets`` (issue 19):
an abstraction from the simulated cluster's group (the coordinator hosting it, its offsets
cache, its commits, the consumers) to ``spec.offsets.commits.State``, one per partition of
the consumed topic, and the spec's properties checked on it after every event of a run.

What the spec's state is made of (``abstract_partition``), for partition ``p``:

- ``group``: the loaded coordinator's group (state, generation, members, members whose
  JoinGroup is parked, the member the current generation assigned ``p`` to), the
  coordinator numbered by the loads so far, its offsets cache for ``p``. While no
  coordinator has loaded the group (a failover), the last group seen, ``loading``;
- ``stored.committed``: the committed offset of ``p`` as ``__consumer_offsets`` holds it,
  read from the loaded coordinator's cache: a coordinator takes an offset into its cache
  only once its record is committed (replicated to every in-sync replica, acks=-1), and a
  new coordinator fills the cache by reading the partition; during a failover the last
  value stands (the partition itself is not read here);
- ``consumers``: per consumer (a stopped or dead process as the spec's crashed consumer:
  nothing in memory), its member state, member id (numbered as ``impl.group.abstraction``
  does), generation, whether it is assigned ``p`` (``assignment()``) and its position: the
  furthest the application has got, ``max(position(p), processed)``. A seek back
  re-reads records the application already had; the spec has no seek, so the abstraction
  hides the re-read (a stutter) and keeps the furthest position; a seek *forward* moves it
  (and shows up as records below the committed offset nobody processed);
- ``processed``: the offsets of ``p`` in any consumer's ``process`` op (the history
  variable); ``commit_generation``: the generation of the last OffsetCommit of ``p`` the
  coordinator accepted (``CommitAccepted``).

Requests in flight, the record a consumer holds (``pending``) and what it last heard
(``acked``) are not read by the properties checked, and are left empty.

What is checked (``OffsetsRefinement.observe``), with the spec's own functions:

- ``CommittedWithinOwnerProgress`` (invariant) on every partition's state;
- ``AtLeastOnce`` (invariant), when the consumers commit after processing (the spec checks
  it with ``--commit after-process``; before-process breaks it by design);
- ``CommittedNeverRegresses`` (transition property) between successive states;
- ``StaleGenerationNeverCommits`` (transition property) for every OffsetCommit the
  implementation's coordinator accepted: the spec's coordinator, in the abstract state the
  commit was handled in, answers it ``NONE`` (``Offsets.commit_outcome``), and it comes from
  ``p``'s owner in the current generation, no older than the last accepted one. A commit
  accepted by a coordinator the partition's leadership has already left (a deposed one,
  whose append then fails with ``NOT_COORDINATOR``) is not the spec's ``handle_commit``:
  it is counted, and judged by what it changes (nothing stored).

This is a property-level refinement: each property of the spec holds of the abstraction of
every state the implementation reaches; it does not check that each implementation step is
one of the spec's actions (step-level matching). Each check is shown able to fail by an
implementation bug that mirrors a spec bug: ``no_generation_check`` (a late, stale commit
accepted: ``StaleGenerationNeverCommits``) and ``fetch_before_load``
(``CommittedWithinOwnerProgress`` and ``CommittedNeverRegresses``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from impl.group.abstraction import MemberIds
from impl.group.consumer import GroupConsumer
from impl.group.coordinator import Coordinator, GroupState
from impl.group.messages import CommitAccepted
from spec.framework import Step
from spec.group.classic import NOBODY, NONE_ERROR
from spec.group.lifecycle import DEAD
from spec.offsets.commits import Commit, Consumer, Group, Offsets, State, Stored
from spec.offsets.params import Params

__all__ = ["OffsetsRefinement", "OffsetsViolation", "abstract_partition"]


@attrs.frozen
class OffsetsViolation:
    """A property of ``spec.offsets`` the abstraction broke: which, on which partition,
    when (logical ns), and the abstract state's summary."""

    prop: str
    partition: int
    time: int
    detail: str

    def describe(self) -> str:
        return f"{self.prop} on partition {self.partition} at {self.time}: {self.detail}"


def _generation(g: int) -> int:
    return 0 if g < 0 else g


def abstract_group(
    group: GroupState, topic: str, p: int, coordinator: int, cache: int | None, ids: MemberIds
) -> Group:
    """The spec's ``Group`` for a loaded coordinator's ``group`` and partition ``p``."""
    owners = sorted(mid for mid, m in group.members.items() if (topic, p) in m.partitions)
    return Group(
        state=group.state,
        generation=group.generation,
        members=frozenset(ids(mid) for mid in group.members),
        joined=frozenset(ids(mid) for mid, m in group.members.items() if m.awaiting_join),
        owner=ids(owners[0]) if owners else NOBODY,
        coordinator=coordinator,
        loading=False,
        cache=cache,
    )


def abstract_consumer(gc: GroupConsumer | None, tp: tuple[str, int], ids: MemberIds) -> Consumer:
    """The spec's ``Consumer`` for consumer ``gc`` (None: stopped or dead: nothing in
    memory) and partition ``tp``."""
    if gc is None:
        return Consumer()
    m = gc.member
    position = gc.position(tp)
    if position is not None:
        position = max(position, gc.processed.get(tp, position))
    return Consumer(
        state=m.state,
        member_id=ids(m.member_id),
        generation=_generation(m.generation),
        owns=tp in gc.assignment,
        position=position,
        acked=None,
        waiting=gc.busy,
    )


def abstract_partition(
    group: Group,
    committed: int | None,
    consumers: Sequence[Consumer],
    processed: frozenset[int],
    commit_generation: int,
    ids: MemberIds,
    failovers: int,
) -> State:
    """The spec's state of one partition from its abstracted parts (see the module
    docstring)."""
    return State(
        group=group,
        stored=Stored(committed, group.generation, group.members, group.owner),
        consumers=tuple(consumers),
        inflight=frozenset(),
        processed=processed,
        commit_generation=commit_generation,
        ids_issued=tuple(ids.issued.get(i + 1, 0) for i in range(len(consumers))),
        failovers=failovers,
    )


class OffsetsRefinement:
    """The check of one run (see the module docstring): ``observe`` after every event."""

    def __init__(
        self, group: str, topic: str, partitions: int, *, at_least_once: bool, limit: int = 20
    ) -> None:
        self.group = group
        self.topic = topic
        self.partitions = partitions
        self.at_least_once = at_least_once
        self.spec = Offsets(Params(bugs=frozenset()))
        self.ids = MemberIds()
        self.violations: list[OffsetsViolation] = []
        self.limit = limit
        """Violations kept (the first ones; ``count`` has them all)."""
        self.count = 0
        self.observations = 0
        self.commits_checked = 0
        self.deposed_commits = 0
        """Commits accepted by a coordinator that no longer leads the group's partition
        (it learns so from its append, which fails: ``NOT_COORDINATOR``); the spec's
        coordinator answers them ``NOT_COORDINATOR``, and they change nothing stored: the
        state properties judge them."""
        self._groups: dict[int, Group] = {}
        self._committed: dict[int, int | None] = {}
        self._commit_generation: dict[int, int] = {}
        self._processed: dict[int, set[int]] = {p: set() for p in range(partitions)}
        self._seen_ops: dict[int, tuple[GroupConsumer, int]] = {}
        """Per consumer slot: the consumer object last seen there and how many of its
        history ops were read (a restarted consumer is a new object)."""
        self._notes_seen = 0
        self._before: dict[int, State] = {}

    # ------------------------------------------------------------------ observing

    def observe(
        self,
        coordinator: Coordinator | None,
        loads: int,
        consumers: Mapping[str, GroupConsumer],
        running: Mapping[str, bool],
        notes: Sequence[Any],
        now: int,
    ) -> None:
        """Abstract the world now and check the properties: ``coordinator`` the one that
        leads the group's partition (None: none), ``loads`` how many loads completed so far,
        ``consumers`` by node name with whether each is ``running`` (not stopped or dead),
        ``notes`` every note the coordinators made so far (``CommitAccepted``)."""
        self.observations += 1
        names = sorted(consumers)
        self._read_processed(names, consumers)
        loaded = (
            coordinator is not None
            and self.group in coordinator.hosted
            and self.group not in coordinator.loading
            and self.group in coordinator.groups
        )
        cache = coordinator.offsets.get(self.group, {}) if loaded and coordinator else {}
        accepted = [n for n in notes[self._notes_seen :] if isinstance(n, CommitAccepted)]
        self._notes_seen = len(notes)
        if not loaded or coordinator is None:
            deposed, accepted = accepted, []
        else:
            deposed = [n for n in accepted if n.coordinator != coordinator.name]
            accepted = [n for n in accepted if n.coordinator == coordinator.name]
        self.deposed_commits += len(deposed)
        for p in range(self.partitions):
            tp = (self.topic, p)
            if loaded and coordinator is not None:
                group = abstract_group(
                    coordinator.groups[self.group], self.topic, p, loads, cache.get(tp), self.ids
                )
                self._groups[p] = group
                self._committed[p] = cache.get(tp)
            else:
                last = self._groups.get(p)
                group = (
                    Group(DEAD, 0, frozenset(), frozenset(), NOBODY, loads, True, None)
                    if last is None
                    else attrs.evolve(last, loading=True, cache=None, coordinator=loads)
                )
            cs = [
                abstract_consumer(consumers[n] if running.get(n) else None, tp, self.ids)
                for n in names
            ]
            before = self._before.get(p)
            commit_generation = self._commit_generation.get(p, 0)
            state = abstract_partition(
                group,
                self._committed.get(p),
                cs,
                frozenset(self._processed[p]),
                commit_generation,
                self.ids,
                loads,
            )
            for note in accepted:
                if tp in note.partitions:
                    self._check_commit(note, p, state, now)
                    self._commit_generation[p] = max(commit_generation, note.generation)
            state = attrs.evolve(state, commit_generation=self._commit_generation.get(p, 0))
            self._check_state(before, state, p, now)
            self._before[p] = state

    def _read_processed(self, names: list[str], consumers: Mapping[str, GroupConsumer]) -> None:
        for slot, name in enumerate(names):
            gc = consumers[name]
            last, seen = self._seen_ops.get(slot, (gc, 0))
            if last is not gc:
                seen = 0
            for op in gc.history[seen:]:
                if op.get("f") == "process" and op.get("type") == "ok":
                    topic, _, part = str(op["key"]).rpartition("-")
                    if topic == self.topic:
                        self._processed[int(part)].update(o for o, _ in op["value"])
            self._seen_ops[slot] = (gc, len(gc.history))

    # ------------------------------------------------------------------ checking

    def _violated(self, prop: str, p: int, now: int, detail: str) -> None:
        self.count += 1
        if len(self.violations) < self.limit:
            self.violations.append(OffsetsViolation(prop, p, now, detail))

    def _check_state(self, before: State | None, after: State, p: int, now: int) -> None:
        spec = self.spec
        if not spec.committed_within_owner_progress(after):
            owner = after.group.owner
            positions = [c.position for c in after.consumers if c.member_id == owner]
            self._violated(
                "CommittedWithinOwnerProgress",
                p,
                now,
                f"committed {after.stored.committed} is past the position {positions} of the "
                f"owner {owner} of generation {after.group.generation}",
            )
        if self.at_least_once and not spec.at_least_once(after):
            missing = [o for o in range(after.stored.committed or 0) if o not in after.processed][
                :5
            ]
            self._violated(
                "AtLeastOnce",
                p,
                now,
                f"committed {after.stored.committed}, never processed: {missing}...",
            )
        if before is not None and not spec.committed_never_regresses(
            before, Step("observe"), after
        ):
            self._violated(
                "CommittedNeverRegresses",
                p,
                now,
                f"committed {before.stored.committed} -> {after.stored.committed}",
            )

    def _check_commit(self, note: CommitAccepted, p: int, at: State, now: int) -> None:
        """An OffsetCommit of ``p`` the coordinator accepted, against the spec's
        ``handle_commit`` in the abstract state it was handled in."""
        self.commits_checked += 1
        mid = self.ids(note.member_id)
        slot = mid[0] if mid != NOBODY else 0
        r = Commit(slot, mid, note.generation, at.group.coordinator, 0)
        outcome = self.spec.commit_outcome(at, r)
        step = Step("handle_commit", (("r", r),))
        if outcome != NONE_ERROR:
            self._violated(
                "StaleGenerationNeverCommits",
                p,
                now,
                f"accepted {note.member_id}'s commit of generation {note.generation}; the "
                f"spec's coordinator answers {outcome} (group generation "
                f"{at.group.generation}, members {sorted(at.group.members)})",
            )
        elif not self.spec.stale_generation_never_commits(at, step, at):
            self._violated(
                "StaleGenerationNeverCommits",
                p,
                now,
                f"accepted {note.member_id}'s commit of generation {note.generation} from "
                f"a member that is not the owner {at.group.owner} of the current generation "
                f"{at.group.generation}, or older than the last accepted "
                f"({at.commit_generation})",
            )
