"""The abstraction function from the simulated cluster to ``spec.controller``'s states, and
the spec's properties checked on it (the refinement machine calls ``ControllerCheck`` after
every event, ``impl.refinement_machine``).

What maps to what (``spec.controller.State``):

``store``
    ``sessions``: the live registrations (``/brokers/ids``); ``controller``,
    ``controller_epoch``, ``epoch_version``: ``/controller`` and ``/controller_epoch``;
    ``partitions``: each partition's state as last *published* (the LeaderAndIsr a
    controller wrote; a leader's own ISR changes, AlterPartition, are the replication
    spec's business), or the created state before the first write.
``brokers[b]``
    ``controller_epoch``: the broker's (``Broker.controller_epoch``); ``replicas[p]``: the
    leader epoch and leader its replica took from LeaderAndIsr (offline: none);
    ``active_epoch``, ``epoch_version``, ``context``: the controller role it holds, zombie
    or not (its epoch, the ``/controller_epoch`` version its writes expect, the partition
    states it published or read when elected).
``requests``
    Every LeaderAndIsr any controller sent (the refinement driver keeps them), and one
    UpdateMetadata per controller epoch elected: the election's resend of the published
    state is ``onControllerFailover``'s UpdateMetadata + LeaderAndIsr.
``writes``, ``expiries``
    Ghost: the world's record of who wrote in which controller epoch, and of expiries.

What is checked is the spec's invariants on every abstract state and its transition
properties between consecutive ones (broker restarts excepted: the spec has none, so a
restarted broker's state is compared with nothing). Matching each implementation event to
one spec step, as ``impl.abstraction`` does for the replication spec, is not done here:
the implementation's elections choose ISRs by its own rules (``impl.controller``), which
the spec abstracts differently.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

import attrs

from impl.coordination import PartitionState as StoredPartition
from impl.roles import Role
from spec.controller import (
    LEADER_AND_ISR,
    NIL,
    NO_EPOCH,
    NONE,
    UPDATE_METADATA,
    Broker,
    Controller,
    LocalReplica,
    Params,
    PartitionState,
    Request,
    State,
    Store,
)
from spec.framework import Step

if TYPE_CHECKING:
    from impl.refinement import RefinementCluster

__all__ = ["SEEN", "ControllerCheck", "abstract_controller", "controller_spec"]

SEEN: collections.Counter[str] = collections.Counter()
"""The spec's state "sometimes" properties (``BrainSplit``) witnessed on the abstraction,
over every check in this process: the refinement runs are not vacuous."""


def controller_spec(brokers: int, partitions: int) -> Controller:
    """The spec with the implementation's shape and no exploration bounds."""
    return Controller(
        Params(
            brokers=brokers,
            partitions=partitions,
            max_controller_epoch=1 << 30,
            max_leader_epoch=1 << 30,
            max_expiries=None,
        )
    )


def _partition(state: StoredPartition) -> PartitionState:
    return PartitionState(state.leader, state.leader_epoch, frozenset(state.isr))


def abstract_controller(cluster: RefinementCluster) -> State:
    """The cluster as a ``spec.controller.State`` (see the module docstring)."""
    config = cluster.config
    store = cluster.store
    keys = [(config.topic, p) for p in range(config.partitions)]
    published = tuple(_partition(store.published.get(k, store.partitions[k])) for k in keys)
    brokers = []
    for b in config.broker_ids:
        broker = cluster.brokers.get(b)
        replicas = []
        for key in keys:
            replica = broker.replicas.get(key) if broker is not None else None
            if replica is None or replica.role is Role.OFFLINE:
                replicas.append(LocalReplica(NIL, NONE))
            else:
                replicas.append(LocalReplica(replica.leader_epoch, replica.leader))
        role = cluster.controllers.get(b)
        if role is None or role.resigned:
            brokers.append(Broker(broker.controller_epoch if broker else NO_EPOCH, tuple(replicas)))
            continue
        context = tuple(_partition(role.published.get(k, role.context[k])) for k in keys)
        brokers.append(
            Broker(
                broker.controller_epoch if broker else NO_EPOCH,
                tuple(replicas),
                role.epoch,
                role.epoch_version,
                context,
            )
        )
    requests = {Request(UPDATE_METADATA, epoch) for epoch in cluster.ghost.controller_epochs}
    for _, _, msg in cluster.sent_leader_and_isr:
        requests.add(
            Request(
                LEADER_AND_ISR, msg.controller_epoch, msg.partition, msg.leader, msg.leader_epoch
            )
        )
    return State(
        Store(
            frozenset(store.registrations),
            store.controller,
            store.controller_epoch,
            store.epoch_version,
            published,
        ),
        tuple(brokers),
        frozenset(requests),
        frozenset(cluster.ghost.controller_writes),
        cluster.ghost.expiries,
    )


class ControllerCheck:
    """The controller spec's properties on the cluster, event after event: ``check``
    returns the names of the properties an event broke (empty: none)."""

    def __init__(self, cluster: RefinementCluster) -> None:
        self.spec = controller_spec(cluster.config.brokers, cluster.config.partitions)
        self.prev = abstract_controller(cluster)
        self.incarnations = self._incarnations(cluster)
        self.copies = self._copies(cluster)

    @staticmethod
    def _copies(cluster: RefinementCluster) -> tuple[frozenset[int], ...]:
        """Per broker, the partitions (by index) it holds a replica object of."""
        keys = [(cluster.config.topic, p) for p in range(cluster.config.partitions)]
        return tuple(
            frozenset(
                i
                for i, k in enumerate(keys)
                if (broker := cluster.brokers.get(b)) is not None and k in broker.replicas
            )
            for b in cluster.config.broker_ids
        )

    @staticmethod
    def _incarnations(cluster: RefinementCluster) -> tuple[int, ...]:
        """Per broker, its incarnation, or -1 while it is down (crashed)."""
        return tuple(
            cluster.nodes.incarnation(cluster.broker_names[b]) if cluster.brokers.get(b) else -1
            for b in cluster.config.broker_ids
        )

    def check(self, cluster: RefinementCluster) -> list[str]:
        now = abstract_controller(cluster)
        incarnations = self._incarnations(cluster)
        before = self.prev
        if incarnations != self.incarnations:
            # A crash or a restart: the spec has neither; a broker whose process changed is
            # compared with itself.
            brokers = tuple(
                new if old_i != new_i else old
                for old, new, old_i, new_i in zip(
                    before.brokers, now.brokers, self.incarnations, incarnations, strict=True
                )
            )
            before = State(before.store, brokers, before.requests, before.writes, before.expiries)
        copies = self._copies(cluster)
        if copies != self.copies:
            # A copy deleted (StopReplica after a reassignment, or a topic deletion): the
            # spec has no deletion; that replica is compared with itself.
            brokers = tuple(
                attrs.evolve(
                    old,
                    replicas=tuple(
                        n if (k in had and k not in has) else o
                        for k, (o, n) in enumerate(zip(old.replicas, new.replicas, strict=True))
                    ),
                )
                for old, new, had, has in zip(
                    before.brokers, now.brokers, self.copies, copies, strict=True
                )
            )
            before = State(before.store, brokers, before.requests, before.writes, before.expiries)
        self.copies = copies
        for d in self.spec.applicable_sometimes():
            if not d.on_transition and getattr(self.spec, d.method)(now):
                SEEN[d.name] += 1
        broken = [d.name for d in self.spec.invariants() if not getattr(self.spec, d.method)(now)]
        step = Step("event", ())
        broken += [
            d.name
            for d in self.spec.transition_properties()
            if not getattr(self.spec, d.method)(before, step, now)
        ]
        self.prev, self.incarnations = now, incarnations
        return broken
