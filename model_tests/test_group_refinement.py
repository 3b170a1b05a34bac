"""Refinement (a first version) of the implementation's group coordinator and members against
``spec.group.classic``: a Hypothesis state machine drives ``impl.group`` (two brokers that
take turns as coordinator, consumers that poll, heartbeat, commit, leave and time out, an
ordered network per connection, logical time, and the ``pause-consumer`` fault: a consumer
stopped while the others go on, which resumes as a zombie) and after every step maps the
implementation
to the spec's state (``impl.group.abstraction``) and checks

- the spec's invariants ``AssignmentPartitionsSubscribedPartitions`` and
  ``OneOwnerPerPartition`` on the abstract state;
- the spec's transition property ``StaleGenerationChangesNothing`` on every request the
  coordinator handles: a Heartbeat, SyncGroup or OffsetCommit whose generation is not the
  group's leaves the abstract group, its stored metadata and the committed offsets as they
  were;
- every group and member move against the spec's life-cycle tables (the implementation
  moves through ``group_transition`` / ``member_transition``, which raise on any other).

Not yet checked: that each implementation step *is* one of the spec's actions (the
step-by-step simulation the replication refinement does); requests in flight are not
abstracted. With the ``no_generation_check`` bug the same checks fail on
``zombie_commit``, a run of the machine's rules (a stale OffsetCommit changes the offsets);
Hypothesis's random search does not reach that run (not within 1,000 examples, with or
without the pause rule: the zombie's member id must survive, so its session must not
expire, while a rebalance moves the generation on).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from impl.group.abstraction import MemberIds, abstract
from impl.group.coordinator import Coordinator, CoordinatorConfig, StoredGroup
from impl.group.member import Member, MemberConfig
from impl.group.messages import (
    NONE,
    CommitAccepted,
    FindCoordinator,
    FindCoordinatorResponse,
    Heartbeat,
    OffsetCommit,
    SyncGroup,
)
from impl.protocol import Effects
from impl.sim.clock import ms
from spec.group.classic import ClassicGroup, State
from spec.group.params import Params

CONSUMERS = 2
PARTITIONS = 2
BROKERS = ("b1", "b2")
SESSION = ms(6_000)
MAX_POLL = ms(20_000)


def make_machine(check_generation: bool) -> type[RuleBasedStateMachine]:
    bugs = frozenset() if check_generation else frozenset({"no_generation_check"})

    class GroupMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.now = 0
            self.spec = ClassicGroup(Params(members=CONSUMERS, partitions=PARTITIONS, bugs=bugs))
            config = CoordinatorConfig(check_generation=check_generation)
            self.coordinators = {b: Coordinator(b, config) for b in BROKERS}
            self.leader = BROKERS[0]
            self.coordinators[self.leader].load("g", None, 0)
            self.stored: StoredGroup | None = None
            self.failovers = 0
            self.offsets: dict[int, int] = {}
            self.ids = MemberIds()
            self.links: dict[tuple[str, str, int], list[Any]] = {}
            member_config = MemberConfig(
                session_timeout_ns=SESSION,
                max_poll_interval_ns=MAX_POLL,
                heartbeat_interval_ns=ms(1_000),
                request_timeout_ns=ms(3_000),
            )
            self.members = [
                Member(
                    f"c{i}",
                    member_config,
                    bootstrap=lambda: BROKERS[0],
                    metadata=lambda: {"t": PARTITIONS},
                    process=i,
                )
                for i in range(1, CONSUMERS + 1)
            ]
            for m in self.members:
                m.subscribe(("t",), 0)
            self.paused: int | None = None
            """A consumer stopped (SIGSTOP) while the ``pause_member`` rule runs."""

        # -------------------------------------------------------------- plumbing

        def abstract(self) -> State:
            c = self.coordinators[self.leader]
            return abstract(
                c.groups.get("g"),
                self.stored,
                self.members,
                self.offsets,
                PARTITIONS,
                self.failovers,
                self.ids,
            )

        def send(self, src: str, effects: Effects) -> None:
            for note in effects.notes:
                if isinstance(note, CommitAccepted):
                    for _, p in note.partitions:
                        self.offsets[p] = note.generation
            conn = self.connection_of(src) if src.startswith("c") else 0
            for dst, msg in effects.sends:
                self.links.setdefault((src, dst, conn), []).append(msg)
            c = self.coordinators[self.leader]
            if "g" in c.stored:
                self.stored = c.stored["g"]

        # -------------------------------------------------------------- rules

        @rule(slot=st.integers(0, CONSUMERS - 1))
        def poll(self, slot: int) -> None:
            m = self.members[slot]
            self.send(m.name, m.poll(self.now))

        @rule(slot=st.integers(0, CONSUMERS - 1))
        def heartbeat_thread(self, slot: int) -> None:
            m = self.members[slot]
            self.send(m.name, m.tick(self.now))

        @rule(slot=st.integers(0, CONSUMERS - 1))
        def commit(self, slot: int) -> None:
            m = self.members[slot]
            self.send(m.name, m.commit(self.now, lambda tp: 0))

        @rule(slot=st.integers(0, CONSUMERS - 1))
        def leave_or_subscribe(self, slot: int) -> None:
            m = self.members[slot]
            if m.topics:
                self.send(m.name, m.close(self.now))
            else:
                m.subscribe(("t",), self.now)

        @rule(step=st.sampled_from([ms(100), ms(1_000), ms(4_000), ms(7_000), ms(21_000)]))
        def time_passes(self, step: int) -> None:
            self.now += step
            self.send(self.leader, self.coordinators[self.leader].tick(self.now))

        @rule()
        def coordinator_moves(self) -> None:
            old = self.leader
            self.leader = BROKERS[(BROKERS.index(old) + 1) % len(BROKERS)]
            self.failovers += 1
            self.send(old, self.coordinators[old].unload("g"))
            self.coordinators[self.leader].load("g", self.stored, self.now)

        @rule(rounds=st.integers(1, 8), newest_first=st.booleans(), commit=st.booleans())
        def progress(self, rounds: int, newest_first: bool, commit: bool) -> None:
            """Every consumer polls (and commits) and every message in flight is delivered,
            ``rounds`` times (what lets a rebalance complete between the finer-grained
            rules); with ``newest_first`` a request left on a connection its sender gave up
            on stays in the network (``deliver`` hands it over later)."""
            for _ in range(rounds):
                for slot in range(CONSUMERS):
                    if slot == self.paused:
                        continue
                    self.poll(slot)
                    if commit:
                        self.commit(slot)
                for _ in range(1_000):
                    busy = sorted(link for link, q in self.links.items() if q)
                    busy = [link for link in busy if not self.stopped(link)]
                    if newest_first:
                        busy = [link for link in busy if self.current(link)]
                    if not busy:
                        break
                    self.deliver_on(busy[0])

        @rule(
            slot=st.integers(0, CONSUMERS - 1),
            pause=st.sampled_from([ms(4_000), ms(7_000), ms(21_000)]),
            rounds=st.integers(1, 4),
        )
        def pause_member(self, slot: int, pause: int, rounds: int) -> None:
            """The ``pause-consumer`` fault: consumer ``slot`` is stopped (SIGSTOP: no
            poll, no heartbeat, nothing it sent or is sent is handled) for ``pause`` while
            the others go on (``progress``); its session may expire and the group move on
            without it. It resumes as a zombie: whatever it had in flight (a commit of its
            old generation) is delivered by the later rules."""
            self.paused = slot
            try:
                self.time_passes(pause)
                self.progress(rounds, newest_first=False, commit=False)
            finally:
                self.paused = None

        def stopped(self, link: tuple[str, str, int]) -> bool:
            """A message from or to the paused consumer: it waits until the pause ends."""
            if self.paused is None:
                return False
            name = self.members[self.paused].name
            return name in (link[0], link[1])

        def current(self, link: tuple[str, str, int]) -> bool:
            src, _, conn = link
            return not src.startswith("c") or conn == self.connection_of(src)

        def connection_of(self, name: str) -> int:
            return self.members[int(name.removeprefix("c")) - 1].connection

        @rule(pick=st.integers(-3, 10))
        def deliver(self, pick: int) -> None:
            busy = sorted(link for link, q in self.links.items() if q)
            if busy:
                self.deliver_on(busy[pick % len(busy)])

        def deliver_on(self, link: tuple[str, str, int]) -> None:
            src, dst, _ = link
            msg = self.links[link].pop(0)
            if dst in self.coordinators:
                if isinstance(msg, FindCoordinator):
                    response = Effects()
                    response.send(
                        src, FindCoordinatorResponse("g", NONE, self.leader, msg.correlation)
                    )
                    self.send(dst, response)
                    return
                before = self.abstract()
                group = self.coordinators[self.leader].groups.get("g")
                stale = (
                    dst == self.leader
                    and group is not None
                    and isinstance(msg, Heartbeat | SyncGroup | OffsetCommit)
                    and msg.generation != group.generation
                )
                self.send(dst, self.coordinators[dst].step(src, msg, self.now))
                if stale:
                    after = self.abstract()
                    assert (after.group, after.stored, after.offsets) == (
                        before.group,
                        before.stored,
                        before.offsets,
                    ), f"StaleGenerationChangesNothing: {msg.describe()} changed the group"
            else:
                m = self.members[int(dst.removeprefix("c")) - 1]
                self.send(dst, m.step(src, msg, self.now))

        # -------------------------------------------------------------- the spec's invariants

        @invariant()
        def spec_invariants_hold(self) -> None:
            s = self.abstract()
            assert self.spec.assignment_partitions_subscribed_partitions(s), s.group
            assert self.spec.one_owner_per_partition(s), (s.group, s.members)

    return GroupMachine


SETTINGS = settings(
    max_examples=150,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)


def test_the_implementation_refines_the_spec_invariants() -> None:
    run_state_machine_as_test(make_machine(check_generation=True), settings=SETTINGS)


def zombie_commit(machine: Any) -> None:
    """A run of the machine's rules: consumer 1's OffsetCommit of generation 1 goes
    unanswered, it gives up on the connection, a rebalance moves the group on, and then
    the old commit arrives."""
    machine.progress(3, newest_first=False, commit=False)
    machine.commit(0)
    machine.time_passes(ms(4_000))
    machine.heartbeat_thread(0)  # request.timeout.ms: a new connection
    machine.leave_or_subscribe(1)
    machine.progress(3, newest_first=True, commit=False)
    assert machine.coordinators[machine.leader].groups["g"].generation == 2
    assert [len(q) for q in machine.links.values() if q] == [1]  # the old commit
    machine.deliver(0)


def test_a_stale_commit_is_fenced_and_without_the_check_the_machine_fails() -> None:
    zombie_commit(make_machine(check_generation=True)())
    with pytest.raises(AssertionError, match="StaleGenerationChangesNothing"):
        zombie_commit(make_machine(check_generation=False)())
