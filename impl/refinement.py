"""The simulated cluster driven by hand, for the refinement tests: one call, one event of the
implementation, each then matched against one step of the replication spec.

``RefinementCluster(config, seed)`` is the world of ``impl.world`` with
``ClusterConfig(refinement=True)``: atomic brokers (``impl.broker``: becoming a follower is
one step, taken once the OffsetsForLeaderEpoch exchange has completed), the HW checkpoint
written on every change, and no purgatory expiry (the spec has none). Nothing happens on its
own: no timers, no clock moving by itself. Each call is one event -- deliver or drop a chosen
in-flight message (``deliverable``, ``deliver``, ``drop``), redeliver an old LeaderAndIsr
(``redeliver``: a duplicate that was in flight), one replica fetch round trip
(``replica_fetch``), let time pass (``advance``), tick one node (``tick``), a
preferred-leader election (``elect_preferred``), a producer request or a consumer fetch
straight to a broker (``raw_produce``, ``raw_consumer_fetch``), an fsync (``flush``), and the
world's faults (crash with a chosen torn tail, restart, pause, partition, ...).

Replica fetches, OffsetsForLeaderEpoch, AlterPartition, broker registration and heartbeats
are *synchronous* round trips here: both ends running and both directions open, or the
request fails at once (``RequestFailed``) and nothing is handled -- the replication spec
treats each as one atomic action. A broker's answer to a LeaderAndIsr is handed to the
controller at once (or lost across a cut link): no spec step reads it. Everything else
(LeaderAndIsr, produce requests and their answers, consumer fetches) waits in the network
for a ``deliver``. A crash ends the broker's
session with the controller at once (``ClusterConfig.crash_closes_session``), because the
spec's controller elects only live brokers.

The controller is a broker's role (``impl.world``): ``tick`` of a broker runs the broker's
own periodic work only, and ``tick_controller`` is the controller's event -- the store's
session expiry, then the duties of the broker holding ``/controller`` (or, when none does,
the election by the first registered broker in id order that can reach the store; with
no broker registered at all, a stand-in, since the replication spec's controller outlives
every broker).
"""

from __future__ import annotations

import collections

from impl.client import acks_value
from impl.controller import Controller, broker_node
from impl.coordination import STORE
from impl.messages import Message
from impl.protocol import (
    AlterPartition,
    AlterPartitionResponse,
    BrokerHeartbeat,
    BrokerHeartbeatResponse,
    BrokerRegistration,
    BrokerRegistrationResponse,
    Effects,
    Fetch,
    FetchResponse,
    LeaderAndIsr,
    LeaderAndIsrResponse,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    Produce,
    RequestFailed,
)
from impl.sim.network import Envelope
from impl.world import ClusterConfig, World

__all__ = ["SYNC_REQUESTS", "SYNC_RESPONSES", "RefinementCluster"]

SYNC_REQUESTS = (
    Fetch,
    OffsetsForLeaderEpoch,
    AlterPartition,
    BrokerRegistration,
    BrokerHeartbeat,
)
"""Requests carried out as synchronous round trips (a consumer's fetch excepted)."""
SYNC_RESPONSES = (
    FetchResponse,
    OffsetsForLeaderEpochResponse,
    AlterPartitionResponse,
    BrokerRegistrationResponse,
    BrokerHeartbeatResponse,
)
"""Their answers, handed back within the same round trip."""

STANDBY = 0
"""The broker id of the stand-in controller of ``tick_controller`` (no broker has id 0)."""

RAW_REQUEST_IDS = 1_000_000
"""Request ids of ``raw_produce`` start above this, clear of the producers' own."""


class RefinementCluster(World):
    """The world driven by hand (see the module docstring)."""

    def __init__(self, config: ClusterConfig, seed: int) -> None:
        if not config.refinement:
            raise ValueError(
                "a RefinementCluster runs atomic brokers: build it with "
                "ClusterConfig(refinement=True), or use impl.cluster.Cluster to run by time"
            )
        self._sync: collections.deque[tuple[str, str, Message]] = collections.deque()
        self.sent_leader_and_isr: list[tuple[str, str, LeaderAndIsr]] = []
        """Every LeaderAndIsr ever sent, with its sender and destination (``redeliver``
        replays one)."""
        self._raw_request_id = 0
        super().__init__(config, seed)

    # ------------------------------------------------------------------ synchronous round trips

    def _dispatch(self, src: str, effects: Effects) -> None:
        """Node ``src``'s effects: notes recorded; replication round trips queued and
        carried out at once (``_run_sync``), every other message into the network."""
        self._record_notes(src, effects)
        for to, msg in effects.sends:
            dst = self._route(to)
            if dst is None:
                continue
            if isinstance(msg, LeaderAndIsr):
                self.sent_leader_and_isr.append((src, dst, msg))
            if isinstance(msg, LeaderAndIsrResponse):
                # No spec step reads it (a stutter): handed over at once when the link is
                # open, else lost, so that the events chosen by hand are the spec's.
                if self.reachable(src, dst):
                    self._sync.append((src, dst, msg))
            elif isinstance(msg, SYNC_REQUESTS + SYNC_RESPONSES) and not (
                isinstance(msg, Fetch) and msg.replica_id < 0
            ):
                self._sync.append((src, dst, msg))
            else:
                self.network.send(src, dst, msg)
        self._run_sync()

    def _run_sync(self) -> None:
        """Carry out the synchronous round trips, in order."""
        while self._sync:
            src, dst, msg = self._sync.popleft()
            if isinstance(msg, (*SYNC_RESPONSES, LeaderAndIsrResponse)):
                # Both directions were checked when the request (or this answer) went out.
                if self.running(dst):
                    self._deliver(dst, src, msg)
                continue
            if self.reachable(src, dst):
                self.stats[f"sync_{type(msg).__name__}"] += 1
                self._deliver(dst, src, msg)
            elif self.running(src):
                self._deliver(src, src, RequestFailed(msg))

    def reachable(self, a: str, b: str) -> bool:
        """Both running and both directions open: a round trip can complete."""
        return (
            self.running(a)
            and self.running(b)
            and not self.network.is_blocked(a, b)
            and not self.network.is_blocked(b, a)
        )

    # ------------------------------------------------------------------ events by hand

    def deliverable(self) -> tuple[Envelope, ...]:
        return self.network.deliverable()

    def deliver(self, seq: int) -> Envelope:
        """Deliver in-flight message ``seq`` now and handle it."""
        envelope = self.network.deliver(seq)
        self._deliver(envelope.dst, envelope.src, envelope.message)
        return envelope

    def drop(self, seq: int) -> Envelope:
        return self.network.drop(seq)

    def redeliver(self, index: int) -> bool:
        """Deliver again the ``index``-th LeaderAndIsr ever sent (a duplicate that was in
        flight), if its destination is running and reachable from the controller."""
        src, dst, msg = self.sent_leader_and_isr[index]
        if not self.running(dst) or self.network.is_blocked(src, dst):
            return False
        self.stats["redelivered"] += 1
        self._deliver(dst, src, msg)
        return True

    def replica_fetch(self, broker_id: int, partition: int = 0) -> bool:
        """One replica fetch round trip of follower ``broker_id``."""
        name = self.broker_names[broker_id]
        broker = self.brokers.get(broker_id)
        if broker is None or not self.running(name):
            return False
        replica = broker.replica(self.config.topic, partition)
        if replica is None or replica.fetcher is None:
            return False
        leader = broker_node(replica.fetcher.leader)
        if not self.reachable(name, leader):
            return False
        fetch = broker.build_fetch(self.config.topic, partition, self.clock.monotonic_now(name))
        if fetch is None:
            return False
        out = Effects()
        out.send(leader, fetch)
        self._dispatch(name, out)
        return True

    def advance(self, delta_ns: int) -> None:
        """Let ``delta_ns`` of logical time pass (nothing happens meanwhile)."""
        self.clock.advance_by(delta_ns)

    def tick(self, name: str) -> bool:
        """Run node ``name``'s periodic work now (if it is running); a broker's controller
        duties are ``tick_controller``'s."""
        if not self.running(name):
            return False
        self._dispatch(name, self._step_node(name))
        return True

    def tick_controller(self) -> bool:
        """The controller's event: the store expires sessions, then the broker holding
        ``/controller`` does its duties, or the first broker able to wins the election."""
        self._dispatch(STORE, self._step_node(STORE))
        holder = self.store.controller
        if holder in self.controllers:
            return self._role_tick(holder)
        if any(self._role_tick(b) for b in self.config.broker_ids):
            return True
        if self.store.registrations:
            return False
        # No broker is registered, so none can be elected. spec.replication's controller
        # outlives every broker (as KRaft's dedicated controller quorum does): its failure
        # handling goes on. A stand-in reads the store and makes the one decision, in the
        # current controller epoch (conditional as any write); it tells nobody (no broker
        # is registered) and is gone after this event.
        standby = Controller(
            self.store, self.controller_config, STANDBY, -1, self.store.controller_epoch
        )
        effects = standby.tick(self.clock.monotonic_now(STORE))
        self._dispatch(STORE, effects)
        return bool(effects)

    def tick_role(self, broker_id: int) -> bool:
        """Broker ``broker_id``'s controller duties alone (a zombie's too)."""
        return self._role_tick(broker_id)

    def elect_preferred(self) -> bool:
        """The controller's preferred-leader election now; whether it changed a leader."""
        controller = self.controller
        if controller is None:
            return False
        name = broker_node(controller.broker_id)
        if not self.running(name):
            return False
        effects = controller.elect_preferred(self.clock.monotonic_now(name), self.connected(name))
        self._forget_resigned(controller.broker_id)
        self._dispatch(name, effects)
        return bool(effects.notes)

    def raw_produce(self, broker_id: int, value: bytes | None = None, client: str = "p1") -> None:
        """A producer request straight to broker ``broker_id`` (whatever the metadata says),
        with the configured acks: the refinement tests' produce."""
        self._raw_request_id += 1
        value = value if value is not None else f"v{self._raw_request_id}".encode()
        msg = Produce(
            client,
            RAW_REQUEST_IDS + self._raw_request_id,
            self.config.topic,
            0,
            acks_value(self.config.acks),
            ((None, value),),
        )
        if self.running(client):
            self.network.send(client, self.broker_names[broker_id], msg)

    def raw_consumer_fetch(self, broker_id: int, offset: int = 0, client: str = "p1") -> None:
        """A consumer's fetch from ``offset``, straight to broker ``broker_id``."""
        self._raw_request_id += 1
        msg = Fetch(-1, -1, self.config.topic, 0, offset, -1, 1 << 20, self._raw_request_id)
        if self.running(client):
            self.network.send(client, self.broker_names[broker_id], msg)

    def flush(self, broker_id: int) -> bool:
        """fsync every partition log of the broker (``flush.messages`` reached, say)."""
        broker = self.brokers.get(broker_id)
        if broker is None or not self.nodes.state(self.broker_names[broker_id]).alive:
            return False
        for key in sorted(broker.replicas):
            broker.replicas[key].log.flush()
        return True
