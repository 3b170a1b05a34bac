"""The cluster seen as ``spec.rebalance``'s state, and that spec's properties checked on it.

``RebalanceCheck`` maps the simulated world onto a ``spec.rebalance.RState``: the
replication core is ``impl.abstraction.abstract`` (logs, HW, epochs, quorum, requests,
ghosts), and the partition metadata ``Meta`` comes from the store's partition record:

=====================  ====================================================================
spec (``Meta``)        implementation
=====================  ====================================================================
``assignment``         ``PartitionState.replicas`` (the target first, then the removed
                       ones, while a KIP-455 reassignment runs)
``adding/removing``    ``PartitionState.adding`` / ``.removing``
``elr``                ``PartitionState.elr`` (KIP-966; empty with ELR off)
``shutting``           brokers the controller granted a controlled shutdown
                       (``Controller.shutting_down``), kept until they register again
                       with a new broker epoch (the spec's ``restart``); the controller
                       itself forgets a broker once it stopped
``reassignments``      reassignments started so far (counted by the check)
``shutdowns``          controlled shutdowns granted so far (counted by the check)
=====================  ====================================================================

A broker outside the assignment holds nothing, in the spec's eyes: the spec drops a
removed replica's copy in the step that removes it (``drop_replica``), while the
implementation's broker deletes it when its StopReplica arrives. The abstraction shows
such a replica as the spec does (an empty log, no view of the partition), and the
leader's view of it as unknown.

What is checked, after every implementation event (``check``): ``spec.rebalance``'s
invariants (``LeaderAndIsrWellFormed``, ``NoAckedAllWriteLost``) on the abstract state,
and its transition property ``ReassignmentKeepsMinIsr`` on the event that completes a
reassignment. This is a *property-level* refinement: the events are not matched to
``spec.rebalance`` steps one by one, because the implementation's controller follows
ZooKeeper-era Kafka where the spec follows KRaft's records: it starts and cancels a
reassignment with a new leader epoch (``updateLeaderEpochAndSendRequest``, so the
followers learn the replicas by LeaderAndIsr), where the spec changes the metadata alone;
and it hands a failed leader's partition over in one write, where the spec takes the
leader out (``controller_shrink_isr``) and elects (``elect_leader``) in two steps. The data
plane's events stay matched step by step against ``spec.replication`` by the refinement
machine (``impl.refinement_machine``).
"""

from __future__ import annotations

from collections.abc import Callable

from impl.abstraction import BOUND
from impl.world import ClusterConfig, World
from spec.framework import Step
from spec.rebalance import Meta, Params, Rebalance, RState
from spec.replication import NIL, NONE, Replica, State

__all__ = ["RebalanceCheck", "rebalance_params"]

SPEC_BUGS = ("drop_before_isr_join", "shutdown_to_non_isr", "stale_elr")
"""The implementation's ``--bug`` knobs that are ``spec.rebalance`` variants too."""


def rebalance_params(config: ClusterConfig) -> Params:
    """The ``spec.rebalance`` parameters the cluster with ``config`` is checked against:
    every mechanism, bounds never reached, the cluster's ``min.insync.replicas``, and ELR
    as configured (off: the spec's ``no_elr`` variant, Kafka before 4.0)."""
    bugs = {b for b in config.bugs if b in SPEC_BUGS}
    if not config.elr:
        bugs.add("no_elr")
    return Params(
        mechanism="all",
        brokers=config.brokers,
        replication_factor=config.brokers,
        min_isr=config.min_insync_replicas,
        max_records=BOUND,
        max_epoch=BOUND,
        max_crashes=BOUND,
        max_reassignments=BOUND,
        max_shutdowns=BOUND,
        auto_rebalance=config.auto_leader_rebalance,
        bugs=frozenset(bugs),
    )


class RebalanceCheck:
    """``spec.rebalance``'s properties on the abstraction of ``world``'s partition 0,
    event after event (see the module docstring). ``expect_violated`` names properties not
    checked (the configuration's spec variant violates them too)."""

    def __init__(
        self, world: World, core: State, expect_violated: frozenset[str] = frozenset()
    ) -> None:
        self.spec = Rebalance(rebalance_params(world.config))
        self.key = (world.config.topic, 0)
        self.invariants = [d for d in self.spec.invariants() if d.name not in expect_violated]
        self.transitions = [
            d for d in self.spec.transition_properties() if d.name not in expect_violated
        ]
        self.reassignments = 0
        self.completed = 0
        self.shutdowns = 0
        self.preferred_regained = 0
        """Events after which the preferred replica leads again, another having led
        (``spec.rebalance``'s "sometimes" ``PreferredLeaderRegains``)."""
        self.shutting: dict[int, int] = {}
        """Brokers in the spec's ``shutting`` set -> the broker epoch they were granted
        their controlled shutdown with."""
        self.prev = self.abstract(world, core)

    def abstract(self, world: World, core: State) -> RState:
        """The rebalance state of the world whose replication abstraction is ``core``."""
        record = world.store.partitions[self.key]
        meta = Meta(
            assignment=record.replicas,
            adding=record.adding,
            removing=record.removing,
            elr=record.elr,
            shutting=frozenset(b for b in self.shutting if b in record.replicas),
            reassignments=self.reassignments,
            shutdowns=self.shutdowns,
        )
        assigned = frozenset(record.replicas)
        replicas = []
        for r, rep in enumerate(core.replicas, start=1):
            if r not in assigned:
                rep = Replica((), 0, NIL, NONE, frozenset(), 0, rep.alive, NIL, ())
            elif rep.remote:
                remote = tuple(-1 if i not in assigned else v for i, v in enumerate(rep.remote, 1))
                rep = rep.evolve(remote=remote)
            replicas.append(rep)
        pending = frozenset(w for w in core.pending if w.leader in assigned)
        masked = State(
            replicas=tuple(replicas),
            quorum=core.quorum,
            requests=core.requests,
            next_record_id=core.next_record_id,
            next_epoch=core.next_epoch,
            crashes=core.crashes,
            acked=core.acked,
            pending=pending,
        )
        return RState(masked, meta)

    def check(self, world: World, core: State, described: Callable[[], str]) -> list[str]:
        """Check the event that led to ``world`` (its replication abstraction ``core``):
        the names of the properties it breaks, each with the reason, or nothing."""
        before = self.prev
        if not before.meta.ongoing and self._ongoing(world):
            self.reassignments += 1
        self._track_shutdowns(world)
        now = self.abstract(world, core)
        self.prev = now
        leader = now.core.quorum.leader
        if leader == now.meta.preferred and before.core.quorum.leader not in (NONE, leader):
            self.preferred_regained += 1
        broken = []
        if (
            before.meta.ongoing
            and not now.meta.ongoing
            and now.meta.assignment == (before.meta.target)
        ):
            self.completed += 1
            step = Step("complete_reassignment")
            for decl in self.transitions:
                if not getattr(self.spec, decl.method)(before, step, now):
                    broken.append(f"{decl.name} on {described()!r}: {decl.doc}")
        for decl in self.invariants:
            if not getattr(self.spec, decl.method)(now):
                broken.append(f"{decl.name} after {described()!r}: {decl.doc}")
        return broken

    def _track_shutdowns(self, world: World) -> None:
        """A broker joins ``shutting`` when the controller grants its controlled shutdown,
        and leaves it when it registers again with another broker epoch (it restarted)."""
        controller = world.controller
        granted = controller.shutting_down if controller is not None else {}
        for broker, epoch in granted.items():
            if broker not in self.shutting:
                self.shutting[broker] = epoch
                self.shutdowns += 1
        for broker, epoch in list(self.shutting.items()):
            registered = world.store.registrations.get(broker)
            if registered is not None and registered != epoch:
                del self.shutting[broker]

    def _ongoing(self, world: World) -> bool:
        return world.store.partitions[self.key].reassigning
