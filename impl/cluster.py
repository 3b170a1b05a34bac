"""The simulated cluster driven by time: Kafka's asynchronous world, where every message
crosses the network and every node acts on its own timers.

``Cluster(config, seed)`` is the world of ``impl.world`` (brokers, controller, clients,
network, disks, clock, one seed) with a driver that moves logical time: ``run_until(t)``
advances the clock to the next event -- a message delivery, a node's periodic tick, a broker
machine's kernel write-back, or a timer of the caller's (``schedule``) -- and handles it, up
to ``t``. Every message crosses the network (delays, loss, duplication, partitions; the
network config says which). Each node ticks every ``tick_interval_ns`` (brokers and the
controller: heartbeats, session expiry, ISR changes, fetchers, purgatory expiry) or
``client_tick_interval_ns`` (clients: request and delivery timeouts), its first tick spread
over the interval from its own stream; a crashed node's ticks stop, a paused node's are held
until it resumes, a restarted node's start again. With ``ClusterConfig.buggify`` a broker's
next tick may start late (``impl.buggify``, FoundationDB's BUGGIFY). Each broker
*machine*'s flusher thread wakes every ``dirty_writeback_ns``
(``vm.dirty_writeback_centisecs``) and writes back pages dirty for longer than
``dirty_expire_ns``, whatever the Kafka process is doing.

Faults and client ops are the world's (``crash``, ``restart``, ``pause``, ``resume``,
``partition``, ``heal``, ``skew_clock``; ``client_send``, ``client_poll``): the nemesis
(``jepsen_py.nemesis``) and the workload (``jepsen_py.workload``) call them between
``run_until`` calls or from timers. The refinement tests drive the same world by hand
instead (``impl.refinement``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import attrs

from impl.buggify import RARE_FIRE_PROBABILITY, Buggify
from impl.messages import Message
from impl.protocol import Effects, LeaderAndIsr, Reconciled, StopReplica
from impl.sim.clock import TimerQueue
from impl.sim.collector import FewerCollections
from impl.sim.node import NodeState
from impl.sim.rng import SimRandom
from impl.timeline import Election, IsrChange
from impl.world import ClusterConfig, Ghost, IllegalEvent, World

__all__ = [
    "CHANNEL_REQUESTS",
    "ChannelRelease",
    "Cluster",
    "ClusterConfig",
    "Ghost",
    "IllegalEvent",
    "LagChance",
    "Wake",
    "Writeback",
]
# ClusterConfig, Ghost and IllegalEvent belong to impl.world; they are named here too because
# a cluster is built, and its events refused, through this module.


CHANNEL_REQUESTS = (LeaderAndIsr, StopReplica)
"""What a controller's per-broker send thread carries (``ControllerChannelManager``)."""


@attrs.frozen
class ChannelRelease:
    """The timer payload of BUGGIFY's controller send site: the send thread of the
    controller on ``src`` to broker ``dst`` resumes."""

    src: str
    dst: str


@attrs.frozen
class LagChance:
    """The timer payload of a callback armed by ``Cluster.arm_on_lag``: the callback ``key``
    names runs, told which partition may now have a replica behind."""

    key: str
    topic: str
    partition: int


@attrs.frozen
class Wake:
    """The timer payload of a pause that ends at a set time (``Cluster.resume_at``)."""

    node: str


@attrs.frozen
class Call:
    """The timer payload of a callback set by ``Cluster.call_at``: its key, and which of
    the key's callbacks it is (a replaced one's timer calls nothing)."""

    key: str
    serial: int


@attrs.frozen
class Writeback:
    """The timer payload of a broker machine's flusher thread (``Cluster.writeback``)."""

    broker: int


class Cluster(World):
    """The world driven by time (see the module docstring)."""

    def __init__(self, config: ClusterConfig, seed: int) -> None:
        if config.refinement:
            raise ValueError(
                "ClusterConfig(refinement=True) makes atomic brokers, which only a driver of "
                "synchronous round trips can run: build an impl.refinement.RefinementCluster, "
                "or drop refinement=True to run by time"
            )
        self.buggify: Buggify | None = None  # the world's start-up is not buggified
        self._held: dict[tuple[str, str], list[Message]] = {}
        """(controller's broker, broker) -> the requests its stalled send thread holds, in
        order (BUGGIFY's, or a fault's: ``stall_channel``)."""
        self._lag_armed: dict[str, Callable[[str, int], None]] = {}
        """``arm_on_lag``: key -> callback, waiting for an ISR to shrink."""
        self._lag_due: dict[str, Callable[[str, int], None]] = {}
        """Callbacks whose ISR shrink happened, due at their `LagChance` timer."""
        super().__init__(config, seed)
        nodes = list(self.broker_names.values())
        sites = [f"tick/{n}" for n in nodes] + [f"controller-send/{n}" for n in nodes]
        self.buggify = Buggify(seed, sites) if config.buggify else None
        """BUGGIFY's sites (``impl.buggify``): a broker's tick may start late; the send
        thread of the controller on a broker may stall, holding its requests to one broker
        (in order) for a while."""
        self._paused_version = -1
        self._paused_nodes: tuple[str, ...] = ()
        self._calls: dict[str, tuple[int, Callable[[], None]]] = {}
        self._call_serial = 0
        """``call_at``'s callbacks by key, until their timer comes (or ``cancel_call``)."""
        self.timers: TimerQueue[Any] = TimerQueue()
        """Node ticks (payload: the node's name, owned by it), write-backs, the caller's."""
        for name in self.node_names:
            self.timers.schedule(self._first_tick(name), name, owner=name)
        if config.dirty_writeback_ns:
            for b, node in self.broker_names.items():
                wake = SimRandom(seed, f"writeback/{node}").randrange(config.dirty_writeback_ns)
                self.timers.schedule(self.clock.now + wake, Writeback(b))

    # ------------------------------------------------------------------ timers

    def _first_tick(self, name: str) -> int:
        # Spread ticks over the interval, from the node's own stream (deterministic).
        offset = SimRandom(self.seed, f"tick/{name}").randrange(self._interval(name))
        return self.clock.now + offset

    def _interval(self, name: str) -> int:
        if name in self.producers or name in self.consumers:
            return self.config.client_tick_interval_ns
        return self.config.tick_interval_ns

    def _node_started(self, name: str) -> None:
        self.timers.schedule(self._first_tick(name), name, owner=name)

    def _node_stopped(self, name: str) -> None:
        self.timers.cancel_owner(name)
        for key in [k for k in self._held if k[0] == name]:
            del self._held[key]  # the send threads die with the process

    def _dispatch(self, src: str, effects: Effects) -> None:
        """As the world's; a controller's requests to a broker may wait in its stalled send
        thread (per broker, in order: one connection each), with BUGGIFY or while a fault
        stalls it (``stall_channel``)."""
        buggify = self.buggify
        if (buggify is None and not self._held) or src not in self._broker_of_node:
            World._dispatch(self, src, effects)  # (not super(): it builds an object per call)
            return
        passed = Effects(notes=effects.notes)
        for dst, msg in effects.sends:
            if isinstance(msg, CHANNEL_REQUESTS):
                queue = self._held.get((src, dst))
                if queue is not None:
                    queue.append(msg)
                    continue
                if buggify is None:
                    passed.send(dst, msg)
                    continue
                delay = buggify.delay(f"controller-send/{src}", RARE_FIRE_PROBABILITY)
                if delay:
                    self._held[(src, dst)] = [msg]
                    self.timers.schedule(self.clock.now + delay, ChannelRelease(src, dst), src)
                    continue
            passed.send(dst, msg)
        super()._dispatch(src, passed)

    def stall_channel(self, src: str, dst: str) -> None:
        """The send thread of the controller on broker ``src`` stops sending to broker
        ``dst``: its LeaderAndIsr and StopReplica requests wait there, in order, until
        `release_channel`, while ``dst`` goes on fetching and serving with what it knows.
        Before KIP-291 (Kafka 2.2) a broker read the controller's requests from the same
        queue as produce and fetch requests, so a busy broker acted on them late; the
        controller's channel to one broker stalled (``ControllerChannelManager``'s one
        thread and connection per broker) is the same. A stall ends when ``src`` dies, or
        when a BUGGIFY stall of the same thread ends."""
        self._held.setdefault((src, dst), [])

    def release_channel(self, src: str, dst: str) -> None:
        """End `stall_channel`'s stall: what the thread held goes out now, in order (if
        ``src`` still runs the controller)."""
        self._release(ChannelRelease(src, dst))

    def _release(self, release: ChannelRelease) -> None:
        """BUGGIFY: a stalled send thread resumes and sends what it held, in order."""
        held = self._held.pop((release.src, release.dst), [])
        # A controller that resigned shut its channels down; a zombie's still send.
        if self.running(release.src) and self._broker_of_node[release.src] in self.controllers:
            for msg in held:
                self.network.send(release.src, release.dst, msg)

    def _node_resumed(self, name: str) -> None:
        self.timers.release(name)

    def _paused(self) -> tuple[str, ...]:
        """The paused nodes, recomputed only when a life cycle changed (``nodes.version``):
        a driver asks before every event."""
        version = self.nodes.version
        if self._paused_version != version:
            self._paused_version = version
            self._paused_nodes = self.nodes.in_state(NodeState.PAUSED)
        return self._paused_nodes

    def schedule(self, at: int, payload: Any) -> None:
        """A world-level timer (workload, faults): ``run_until``'s ``on_timer`` gets it."""
        self.timers.schedule(at, payload)

    def arm_on_lag(self, key: str, callback: Callable[[str, int], None]) -> None:
        """Call ``callback(topic, partition)`` once, right after the next moment a
        partition may have a replica behind: its ISR shrank (the leader's AlterPartition,
        or an election that drops a dead broker), or a follower (re)started following its
        leader (``Reconciled``: a broker back from a crash catches up from there). For a
        fault that waits for its target (``jepsen_py.nemesis``); it runs from a timer due
        at that moment, not inside the event's own handling."""
        self._lag_armed[key] = callback

    def disarm_lag(self, key: str) -> None:
        """Forget ``key``'s callback, whether or not its shrink has happened."""
        self._lag_armed.pop(key, None)
        self._lag_due.pop(key, None)

    def _observe(self, note: Message) -> None:
        if not self._lag_armed:
            World._observe(self, note)
            return
        before = len(self.timeline.events)
        World._observe(self, note)
        if isinstance(note, Reconciled):
            chance: tuple[str, int] | None = (note.topic, note.partition)
        else:
            chance = next(
                (
                    (event.topic, event.partition)
                    for event in self.timeline.events[before:]
                    if isinstance(event, Election | IsrChange)
                    and event.leader >= 0
                    and len(event.isr) < len(event.previous_isr)
                ),
                None,
            )
        if chance is None:
            return
        for key in list(self._lag_armed):
            self._lag_due[key] = self._lag_armed.pop(key)
            self.timers.schedule(self.clock.now, LagChance(key, *chance))

    def _lag_chance(self, shrunk: LagChance) -> None:
        callback = self._lag_due.pop(shrunk.key, None)
        if callback is not None:
            callback(shrunk.topic, shrunk.partition)

    def call_at(self, at: int, key: str, callback: Callable[[], None]) -> None:
        """Call ``callback()`` at global time ``at``, from a timer: a fault that acts a
        while after its op (``jepsen_py.nemesis``'s ``transfer-leadership``). One callback
        per ``key``: a later one replaces it."""
        self._call_serial += 1
        self._calls[key] = (self._call_serial, callback)
        self.timers.schedule(at, Call(key, self._call_serial))

    def cancel_call(self, key: str) -> bool:
        """Forget ``key``'s callback; whether one was pending."""
        return self._calls.pop(key, None) is not None

    def _paused_at_decision(self, name: str) -> None:
        """As the world's; a pause armed with a hold (``pause_controller_at_decision``)
        wakes by itself that long after it fired."""
        super()._paused_at_decision(name)
        if self.pause_at_decision_hold is not None:
            self.resume_at(name, self.clock.now + self.pause_at_decision_hold)

    def resume_at(self, name: str, at: int) -> None:
        """Resume the paused node ``name`` at global time ``at`` (a pause held to its end
        whatever the nemesis's schedule: ``jepsen_py.nemesis``'s
        ``pause-deciding-controller``)."""
        self.timers.schedule(at, Wake(name))

    def next_event_time(self) -> int | None:
        """When the cluster next has something to do (a message delivery, a tick of a node
        not paused, a write-back, a caller's timer); None: nothing ever again."""
        times = (self.timers.peek_time(self._paused()), self.network.next_delivery_time())
        known = [t for t in times if t is not None]
        return min(known) if known else None

    # ------------------------------------------------------------------ running by time

    def run_until(
        self,
        end_ns: int,
        on_timer: Callable[[Any], None] | None = None,
        on_event: Callable[[], None] | None = None,
    ) -> None:
        """Handle every event due up to ``end_ns``, in time order, then move the clock to
        ``end_ns``. ``on_timer(payload)`` handles the caller's timers (``schedule``);
        ``on_event()`` is called after every message delivered and every node's tick (a
        checker that looks at the world after each event, e.g. a refinement check)."""
        with FewerCollections():
            self._run_until(end_ns, on_timer, on_event)

    def _run_until(
        self,
        end_ns: int,
        on_timer: Callable[[Any], None] | None,
        on_event: Callable[[], None] | None,
    ) -> None:
        clock, network, timers = self.clock, self.network, self.timers
        step_node = self._step_node
        # Without BUGGIFY and stalls this cluster's _dispatch is the world's: call that one
        # directly (a stall may start inside this call: a timer's callback).
        dispatch = self._dispatch if self.buggify is not None else super()._dispatch
        stalls, stalled_dispatch = self._held, self._dispatch
        nodes, paused_nodes = self.nodes, self._paused
        version, paused = -1, cast(tuple[str, ...], ())
        t_timer, timers_version = None, -1
        for _ in range(100_000_000):
            if version != nodes.version:
                version, paused = nodes.version, paused_nodes()
                timers_version = -1
            if timers_version != timers.version:  # (most events leave the timers alone)
                t_timer, timers_version = timers.peek_time(paused), timers.version
            t_net = network.next_delivery_time()
            # (Comparisons rather than min/max and advance_to's checks: this runs per event.)
            if t_timer is None:
                if t_net is None:
                    break
                at = t_net
            else:
                at = t_timer if t_net is None or t_timer < t_net else t_net
            if at > end_ns:
                break
            now = clock.now
            if at > now:
                clock.now = now = at  # an int from a heap, after now: what advance_to checks
            if t_net is not None and t_net <= now:
                envelope = network.deliver_next()
                if envelope is not None:
                    dst = envelope.dst
                    if stalls:
                        stalled_dispatch(dst, step_node(dst, envelope.src, envelope.message))
                    else:
                        dispatch(dst, step_node(dst, envelope.src, envelope.message))
                    if on_event is not None:
                        on_event()
                continue
            timer = timers.pop_due(now, paused)
            if timer is None:
                continue
            payload = timer.payload
            if timer.owner is not None and payload == timer.owner:
                if self.running(payload):
                    self._tick(payload)
                    at = clock.now + self._interval(payload)
                    if self.buggify is not None and payload in self._broker_of_node:
                        at += self.buggify.delay(f"tick/{payload}")
                    timers.schedule(at, payload, owner=payload)
                    if on_event is not None:
                        on_event()
            elif isinstance(payload, ChannelRelease):
                self._release(payload)
            elif isinstance(payload, LagChance):
                self._lag_chance(payload)
            elif isinstance(payload, Call):
                pending = self._calls.get(payload.key)
                if pending is not None and pending[0] == payload.serial:
                    del self._calls[payload.key]
                    pending[1]()
            elif isinstance(payload, Wake):
                if self.state(payload.node) is NodeState.PAUSED:
                    self.resume(payload.node)
            elif isinstance(payload, Writeback):
                self.writeback(payload.broker)
                assert self.config.dirty_writeback_ns
                timers.schedule(clock.now + self.config.dirty_writeback_ns, payload)
            elif on_timer is not None:
                on_timer(payload)
        else:
            raise AssertionError("run_until did not reach its end time")
        self.clock.advance_to(max(end_ns, self.clock.now))

    def writeback(self, broker_id: int) -> int:
        """The broker machine's flusher thread wakes up: every file dirty for longer than
        ``dirty_expire_ns`` is written back (``impl.sim.disk``). The kernel does this
        whatever the Kafka process is doing (running, paused, killed with SIGKILL); a
        machine that lost power has nothing dirty. Returns the bytes written back."""
        written = self.disks[broker_id].writeback(self.clock.now - self.config.dirty_expire_ns)
        self.stats["bytes_written_back"] += written
        return written
