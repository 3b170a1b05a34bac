"""The simulated network: seeded delays, loss, duplication, reordering and partitions.

Kafka brokers, controllers and clients talk over TCP connections, one per pair of
endpoints, so by default a link delivers in order (``NetworkConfig.fifo``): each message's
delivery time is at least that of the message before it on the same directed link. With
``fifo=False`` every message draws its own delay and delay jitter reorders them. Message
loss and duplication are the nemesis's, not TCP's: they stand for lost requests and
retransmitted (retried) ones, and are off by default.

What a message meets, decided when it is sent (drawing from the network's PRNG) and checked
again when it arrives:

- the sender must be running: a paused or crashed node does not act;
- a destination that is down (crashed or stopped) refuses the connection: dropped;
- a blocked link (a partition) drops it, whether it is blocked when the message is sent or
  when it would arrive; one sent before a partition and arriving after the heal gets through
  (TCP retransmits it);
- a paused destination (SIGSTOP) accepts it, but it waits until the node resumes and then
  arrives late, in order;
- a connection belongs to one incarnation of each endpoint (``NodeLifecycles``): when either
  end crashes or stops, everything in flight on its connections is lost (TCP reset), and
  nothing addressed to or sent by a previous incarnation reaches a restarted node.

Every ``send`` draws exactly four numbers from the PRNG, whatever the configuration and
whatever happens to the message, so changing a probability or a partition does not shift
the random delays of unrelated messages: a fault schedule can be shrunk one fault at a time.

Two ways to drive it:

- by time: the world loop asks ``next_delivery_time()``, advances the clock to the earliest
  event, and calls ``deliver_next()`` until it returns None;
- by hand (the refinement tests): ``in_flight()``, ``deliverable()``, ``deliver(seq)`` and
  ``drop(seq)`` pick any message, ignoring delivery times but not partitions, pauses or
  per-link order.

``pending_digest()`` and ``history_digest()`` fingerprint the queue and everything delivered
or dropped so far, identically in every process: replaying a seed must reproduce both.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import attrs

from impl.messages import describe
from impl.sim.clock import Clock, format_ns
from impl.sim.node import NodeLifecycles, NodeState
from impl.sim.rng import SimRandom

__all__ = [
    "DISTRIBUTIONS",
    "DeliveryError",
    "Envelope",
    "Link",
    "Network",
    "NetworkConfig",
    "NetworkStats",
    "bridge_links",
    "halves_links",
    "isolate_links",
    "majorities_ring_links",
    "split_halves",
]

Link = tuple[str, str]
"""A directed link (src, dst). A partition is a set of blocked links; asymmetric is allowed."""

DISTRIBUTIONS = ("uniform", "exponential")

DRAWS_PER_SEND = 4
"""drop?, duplicate?, delay, duplicate's delay: always all four, in that order."""


def _probability(instance: Any, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"NetworkConfig.{attribute.name} must be in [0, 1], got {value!r}")


def _non_negative_int(instance: Any, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"NetworkConfig.{attribute.name} must be an int >= 0, got {value!r}")


@attrs.frozen(slots=True)
class NetworkConfig:
    """How the network behaves; a plain record, so a run's test.json can carry it.

    Delays are integer nanoseconds in ``[min_delay_ns, max_delay_ns]``. ``uniform`` draws
    them evenly; ``exponential`` draws ``min + Exp(mean=(max-min)/4)``, capped at ``max``:
    most messages are fast and a few straggle (about 2% hit the cap).
    """

    min_delay_ns: int = attrs.field(default=500_000, validator=_non_negative_int)
    max_delay_ns: int = attrs.field(default=5_000_000, validator=_non_negative_int)
    distribution: str = attrs.field(
        default="uniform", validator=attrs.validators.in_(DISTRIBUTIONS)
    )
    drop_probability: float = attrs.field(default=0.0, validator=_probability)
    duplicate_probability: float = attrs.field(default=0.0, validator=_probability)
    fifo: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    max_in_flight: int = attrs.field(default=1_000_000, validator=_non_negative_int)

    def __attrs_post_init__(self) -> None:
        if self.max_delay_ns < self.min_delay_ns:
            raise ValueError(
                f"NetworkConfig.max_delay_ns ({self.max_delay_ns}) is below min_delay_ns "
                f"({self.min_delay_ns})"
            )

    def delay(self, u: float) -> int:
        """The delay for one uniform draw ``u`` in [0, 1) (inverse transform sampling)."""
        spread = self.max_delay_ns - self.min_delay_ns
        if self.distribution == "uniform":
            extra = min(int(u * (spread + 1)), spread)
        else:
            extra = min(round(-(spread / 4) * math.log1p(-u)), spread)
        return self.min_delay_ns + extra


class Envelope(NamedTuple):
    """A message in flight from ``src`` to ``dst``, due at global time ``deliver_at``.

    ``seq`` numbers sends (and duplicates) in the order they happened; it breaks ties
    between equal delivery times and names a message in manual control.

    A named tuple rather than an ``attrs`` class: every message sent makes one, and a
    tuple is the cheapest immutable record Python builds.
    """

    seq: int
    src: str
    dst: str
    sent_at: int
    deliver_at: int
    message: Any
    src_incarnation: int
    dst_incarnation: int
    duplicate_of: int | None = None

    @property
    def link(self) -> Link:
        return (self.src, self.dst)

    def describe(self) -> str:
        dup = f" dup-of=#{self.duplicate_of}" if self.duplicate_of is not None else ""
        return (
            f"#{self.seq} {self.src}.{self.src_incarnation}->{self.dst}.{self.dst_incarnation}"
            f" sent={self.sent_at} due={self.deliver_at}{dup} {describe(self.message)}"
        )


@attrs.frozen(slots=True)
class NetworkStats:
    """Message counters. Every sent message is delivered, dropped, or still in flight
    (``sent + duplicated == delivered + dropped + in_flight``)."""

    sent: int
    duplicated: int
    delivered: int
    dropped_random: int
    """by ``drop_probability`` (the message-loss nemesis)"""
    dropped_partition: int
    """on a blocked link, at send or at arrival"""
    dropped_unreachable: int
    """addressed to a node that was down (connection refused)"""
    dropped_reset: int
    """in flight when one end crashed or stopped (connection reset)"""
    dropped_manual: int
    """by ``drop(seq)``"""
    in_flight: int
    sent_by_type: tuple[tuple[str, int], ...]

    @property
    def dropped(self) -> int:
        return (
            self.dropped_random
            + self.dropped_partition
            + self.dropped_unreachable
            + self.dropped_reset
            + self.dropped_manual
        )


class DeliveryError(Exception):
    """A manual ``deliver`` or ``drop`` of a message that cannot be delivered or dropped."""


_HASH_BATCH = 4096
"""Recorded events hashed at a time (``Network._record``)."""

_COUNTERS = (
    "sent",
    "duplicated",
    "delivered",
    "dropped_random",
    "dropped_partition",
    "dropped_unreachable",
    "dropped_reset",
    "dropped_manual",
)


class Network:
    """Named nodes (those of ``nodes``) exchanging frozen message values as envelopes."""

    def __init__(
        self,
        nodes: NodeLifecycles,
        clock: Clock,
        rng: SimRandom,
        config: NetworkConfig | None = None,
    ) -> None:
        self._nodes = nodes
        self._clock = clock
        self._rng = rng
        self._config = config if config is not None else NetworkConfig()
        self._next_seq = 0
        # Envelopes in flight by seq. Sequence numbers only grow and an envelope is never
        # re-inserted, so the dict's order is send order.
        self._in_flight: dict[int, Envelope] = {}
        # (deliver_at, seq) of envelopes not yet found waiting for a paused node; entries of
        # envelopes delivered or dropped by other means are skipped when they surface.
        self._heap: list[tuple[int, int]] = []
        # Envelopes that came due while their destination was paused, by destination.
        self._held: dict[str, list[int]] = {}
        self._blocked: set[Link] = set()
        # The latest delivery time scheduled on each link: FIFO delivers nothing earlier.
        self._link_tail: dict[Link, int] = {}
        # The seq last delivered on each link, to assert FIFO order.
        self._link_last_seq: dict[Link, int] = {}
        self._counters = dict.fromkeys(_COUNTERS, 0)
        self._sent_by_type: dict[str, int] = {}
        self._history = hashlib.blake2b(digest_size=16, person=b"kafka-model-net")
        # Events not yet hashed into ``_history``: hashing them in batches gives the same
        # digest (blake2b is a stream) for a fraction of the calls.
        self._unhashed: list[str] = []
        self._seen_version = -1
        # The nodes' life cycles as of ``_seen_version``, refreshed by ``_sync``: every
        # send and delivery consults them, and they change only with ``nodes.version``.
        self._states: dict[str, NodeState] = {}
        self._alive: dict[str, int] = {}
        """Incarnation of every node that is alive (running or paused)."""

    # Configuration ------------------------------------------------------------------------

    @property
    def config(self) -> NetworkConfig:
        return self._config

    def reconfigure(self, config: NetworkConfig) -> None:
        """Change delays and fault probabilities for messages sent from now on."""
        if config.fifo != self._config.fifo and self._in_flight:
            raise ValueError(
                f"cannot switch fifo to {config.fifo} with {len(self._in_flight)} messages in "
                "flight: their order was decided under the old setting; drain them first"
            )
        self._config = config

    # Sending ------------------------------------------------------------------------------

    def send(self, src: str, dst: str, message: Any) -> tuple[Envelope, ...]:
        """Send ``message`` from ``src`` to ``dst``; returns the envelopes now in flight
        (none if it was dropped, two if it was duplicated)."""
        if self._seen_version != self._nodes.version:
            self._sync()
        states = self._states
        # ``_states`` names every node (``_sync``): the same check as ``_check_node``.
        if dst not in states:
            self._check_node(dst)
        if states.get(src) is not NodeState.RUNNING:
            raise RuntimeError(
                f"node {src!r} is {self._nodes.state(src).value} and cannot send; only a "
                "running node acts (the world loop must not step a paused or crashed node)"
            )
        try:
            hash(message)
        except TypeError:
            raise TypeError(
                f"a {type(message).__name__} cannot be sent: messages are frozen, hashable "
                "values (declare it with @message from impl.messages)"
            ) from None
        config = self._config
        rng = self._rng.random
        u_drop, u_dup, u_delay, u_dup_delay = rng(), rng(), rng(), rng()
        counters = self._counters
        counters["sent"] += 1
        kind = type(message).__name__
        by_type = self._sent_by_type
        by_type[kind] = by_type.get(kind, 0) + 1

        if dst not in self._alive:
            return self._dropped_at_send("dropped_unreachable", src, dst)
        if self._blocked and (src, dst) in self._blocked:
            return self._dropped_at_send("dropped_partition", src, dst)
        if u_drop < config.drop_probability:
            return self._dropped_at_send("dropped_random", src, dst)
        if config.distribution == "uniform":  # NetworkConfig.delay, inlined (every send)
            spread = config.max_delay_ns - config.min_delay_ns
            extra = int(u_delay * (spread + 1))
            delay = config.min_delay_ns + (extra if extra < spread else spread)
        else:
            delay = config.delay(u_delay)
        first = self._schedule(src, dst, message, delay, None)
        if u_dup < config.duplicate_probability:
            self._count("duplicated")
            return (first, self._schedule(src, dst, message, config.delay(u_dup_delay), first.seq))
        return (first,)

    def _schedule(
        self, src: str, dst: str, message: Any, delay: int, duplicate_of: int | None
    ) -> Envelope:
        in_flight = self._in_flight
        if len(in_flight) >= self._config.max_in_flight:
            raise OverflowError(
                f"more than {self._config.max_in_flight} messages in flight: the world loop is "
                "sending without delivering (or raise NetworkConfig.max_in_flight)"
            )
        link = (src, dst)
        now = self._clock.now
        deliver_at = now + delay
        tails = self._link_tail
        tail = tails.get(link, 0)
        if deliver_at < tail and self._config.fifo:
            deliver_at = tail
        if deliver_at > tail:
            tails[link] = deliver_at
        seq = self._next_seq
        self._next_seq = seq + 1
        alive = self._alive
        # The fields in order (see Envelope), built by tuple.__new__: a named tuple's own
        # __new__ is a Python function, and every message sent makes an envelope.
        fields = (seq, src, dst, now, deliver_at, message, alive[src], alive[dst], duplicate_of)
        envelope: Envelope = tuple.__new__(Envelope, fields)
        in_flight[seq] = envelope
        heapq.heappush(self._heap, (deliver_at, seq))
        return envelope

    def _dropped_at_send(self, counter: str, src: str, dst: str) -> tuple[Envelope, ...]:
        self._count(counter)
        self._record(f"{counter} {src}->{dst} @{self._clock.now}")
        return ()

    # Delivering by time -------------------------------------------------------------------

    def next_delivery_time(self) -> int | None:
        """When the network next has something to do (never before now), or None.

        The message due then may turn out to be dropped (its link was blocked meanwhile), so
        ``deliver_next()`` at that time may return None.
        """
        if self._seen_version != self._nodes.version:
            self._sync()
        heap, in_flight, states = self._heap, self._in_flight, self._states
        while heap:
            at, seq = heap[0]
            envelope = in_flight.get(seq)
            if envelope is None:
                heapq.heappop(heap)
            elif states[envelope.dst] is NodeState.PAUSED:
                heapq.heappop(heap)
                self._held.setdefault(envelope.dst, []).append(seq)
            else:
                now = self._clock.now
                return at if at > now else now
        return None

    def deliver_next(self) -> Envelope | None:
        """The next message due at the clock's current time, removed from flight; else None.

        Messages due now on a blocked link are dropped on the way.
        """
        if self._seen_version != self._nodes.version:
            self._sync()
        now = self._clock.now
        heap, in_flight, states, blocked = self._heap, self._in_flight, self._states, self._blocked
        # As next_delivery_time, inlined (every delivery comes through here): heap entries
        # of envelopes gone are dropped, those for a paused node held; each round removes one.
        while heap:
            at, seq = heap[0]
            envelope = in_flight.get(seq)
            if envelope is not None and states[envelope.dst] is not NodeState.PAUSED:
                if at > now:
                    return None
                heapq.heappop(heap)
                del in_flight[seq]
                link = (envelope.src, envelope.dst)
                if blocked and link in blocked:
                    self._count("dropped_partition")
                    self._record(f"dropped_partition #{seq} @{now}")
                    continue
                # _delivered, inlined
                if self._config.fifo:
                    last = self._link_last_seq.get(link, -1)
                    assert seq > last, f"FIFO broken on {link}: #{seq} after #{last}"
                self._link_last_seq[link] = seq
                self._counters["delivered"] += 1
                unhashed = self._unhashed  # _record, inlined
                unhashed.append(f"delivered #{seq} {envelope.src}->{envelope.dst} @{now}")
                if len(unhashed) >= _HASH_BATCH:
                    self._hash_recorded()
                return envelope
            heapq.heappop(heap)
            if envelope is not None:
                self._held.setdefault(envelope.dst, []).append(seq)
        return None

    def _delivered(self, envelope: Envelope) -> None:
        seq, src, dst = envelope.seq, envelope.src, envelope.dst
        link = (src, dst)
        if self._config.fifo:
            last = self._link_last_seq.get(link, -1)
            assert seq > last, f"FIFO broken on {link}: #{seq} after #{last}"
        self._link_last_seq[link] = seq
        self._counters["delivered"] += 1
        self._record(f"delivered #{seq} {src}->{dst} @{self._clock.now}")

    # Delivering by hand -------------------------------------------------------------------

    def in_flight(self) -> tuple[Envelope, ...]:
        """Every message in flight (including those waiting for a paused node), by seq."""
        self._sync()
        return tuple(self._in_flight.values())

    def deliverable(self) -> tuple[Envelope, ...]:
        """The messages ``deliver(seq)`` would accept now, by seq."""
        self._sync()
        return tuple(e for e in self._in_flight.values() if self._why_not(e) is None)

    def deliver(self, seq: int) -> Envelope:
        """Deliver message ``seq`` now, whatever its delivery time; returns its envelope."""
        envelope = self._get(seq)
        reason = self._why_not(envelope)
        if reason is not None:
            raise DeliveryError(f"cannot deliver #{seq} ({envelope.src}->{envelope.dst}): {reason}")
        del self._in_flight[seq]
        self._delivered(envelope)
        return envelope

    def drop(self, seq: int) -> Envelope:
        """Lose message ``seq`` in flight; returns its envelope."""
        envelope = self._get(seq)
        del self._in_flight[seq]
        self._count("dropped_manual")
        self._record(f"dropped_manual #{seq} @{self._clock.now}")
        return envelope

    def _get(self, seq: int) -> Envelope:
        self._sync()
        envelope = self._in_flight.get(seq)
        if envelope is None:
            raise DeliveryError(
                f"no message #{seq} in flight (it was delivered or dropped, or never sent); "
                f"in flight: {[e.seq for e in self._in_flight.values()][:20]}"
            )
        return envelope

    def _why_not(self, envelope: Envelope) -> str | None:
        state = self._nodes.state(envelope.dst)
        if state is not NodeState.RUNNING:
            return f"{envelope.dst} is {state.value}; it receives once it resumes"
        if envelope.link in self._blocked:
            return f"the link {envelope.src}->{envelope.dst} is blocked by a partition"
        if self._config.fifo:
            for other in self._in_flight.values():
                if other.seq >= envelope.seq:
                    break
                if other.link == envelope.link:
                    return (
                        f"#{other.seq} is ahead of it on the same link, which is FIFO like a "
                        "TCP connection: deliver or drop that one first, or build the network "
                        "with NetworkConfig(fifo=False)"
                    )
        return None

    # Node life cycles ---------------------------------------------------------------------

    def _sync(self) -> None:
        """Catch up with life-cycle changes: reset connections, release held messages."""
        if self._seen_version == self._nodes.version:
            return
        self._seen_version = self._nodes.version
        nodes = self._nodes
        self._states = {n: nodes.state(n) for n in nodes.names}
        self._alive = alive = {
            n: nodes.incarnation(n) for n in nodes.names if self._states[n].alive
        }
        for seq, envelope in list(self._in_flight.items()):
            if (
                alive.get(envelope.src) != envelope.src_incarnation
                or alive.get(envelope.dst) != envelope.dst_incarnation
            ):
                del self._in_flight[seq]
                self._count("dropped_reset")
                self._record(f"dropped_reset #{seq} @{self._clock.now}")
        for dst in sorted(self._held):
            if nodes.state(dst) is not NodeState.PAUSED:
                for seq in self._held.pop(dst):
                    held = self._in_flight.get(seq)
                    if held is not None:
                        heapq.heappush(self._heap, (held.deliver_at, seq))

    def _check_node(self, name: str) -> None:
        if name not in self._nodes:
            raise KeyError(f"unknown node {name!r}; the nodes are {list(self._nodes.names)}")

    # Partitions ---------------------------------------------------------------------------

    def blocked_links(self) -> tuple[Link, ...]:
        return tuple(sorted(self._blocked))

    def is_blocked(self, src: str, dst: str) -> bool:
        return (src, dst) in self._blocked

    def block(self, links: Iterable[Link]) -> frozenset[Link]:
        """Block these directed links (in addition to those already blocked)."""
        links = frozenset(links)
        for src, dst in sorted(links):
            self._check_node(src)
            self._check_node(dst)
            if src == dst:
                raise ValueError(f"cannot block {src}->{dst}: a node always reaches itself")
        self._blocked |= links
        return links

    def unblock(self, links: Iterable[Link]) -> None:
        self._blocked -= frozenset(links)

    def heal(self) -> int:
        """Unblock every link; returns how many were blocked."""
        count = len(self._blocked)
        self._blocked.clear()
        return count

    def isolate(self, node: str) -> frozenset[Link]:
        """Cut ``node`` off from every other node, both ways."""
        return self.block(isolate_links(self._nodes.names, node))

    def halves(self, a: Iterable[str], b: Iterable[str]) -> frozenset[Link]:
        """Cut every link between groups ``a`` and ``b``, both ways."""
        return self.block(halves_links(a, b))

    def bridge(self, order: Sequence[str] | None = None) -> frozenset[Link]:
        """Two halves that only the middle node of ``order`` (default: sorted names) joins."""
        return self.block(bridge_links(order if order is not None else self._nodes.names))

    def majorities_ring(self, order: Sequence[str] | None = None) -> frozenset[Link]:
        """Each node hears from a majority, and no two from the same one (see the function)."""
        return self.block(majorities_ring_links(order if order is not None else self._nodes.names))

    # Counters and digests -----------------------------------------------------------------

    def stats(self) -> NetworkStats:
        self._sync()
        return NetworkStats(
            **self._counters,
            in_flight=len(self._in_flight),
            sent_by_type=tuple(sorted(self._sent_by_type.items())),
        )

    def pending_digest(self) -> str:
        """A hex digest of every message in flight (content, endpoints, times), by seq."""
        self._sync()
        digest = hashlib.blake2b(digest_size=16, person=b"kafka-model-pnd")
        for envelope in self._in_flight.values():
            digest.update(envelope.describe().encode())
            digest.update(b"\n")
        return digest.hexdigest()

    def history_digest(self) -> str:
        """A hex digest of every delivery and drop so far, in order, with its time."""
        self._sync()
        self._hash_recorded()
        return self._history.hexdigest()

    def _count(self, counter: str) -> None:
        self._counters[counter] += 1

    def _record(self, event: str) -> None:
        unhashed = self._unhashed
        unhashed.append(event)
        if len(unhashed) >= _HASH_BATCH:
            self._hash_recorded()

    def _hash_recorded(self) -> None:
        if self._unhashed:
            self._unhashed.append("")  # each event ends with a newline
            self._history.update("\n".join(self._unhashed).encode())
            self._unhashed.clear()

    def __repr__(self) -> str:
        return (
            f"Network(now={format_ns(self._clock.now)}, in_flight={len(self._in_flight)}, "
            f"blocked={len(self._blocked)}, fifo={self._config.fifo})"
        )


# Partition shapes (Jepsen's grudges), as sets of blocked directed links -------------------


def isolate_links(nodes: Iterable[str], node: str) -> frozenset[Link]:
    """Every link between ``node`` and the others, both directions."""
    others = sorted(set(nodes) - {node})
    if len(others) == len(set(nodes)):
        raise KeyError(f"cannot isolate unknown node {node!r}")
    return frozenset((node, o) for o in others) | frozenset((o, node) for o in others)


def halves_links(a: Iterable[str], b: Iterable[str]) -> frozenset[Link]:
    """Every link between a node of ``a`` and a node of ``b``, both directions."""
    left, right = frozenset(a), frozenset(b)
    if left & right:
        raise ValueError(f"the two sides share nodes {sorted(left & right)}")
    return frozenset((x, y) for x in left for y in right) | frozenset(
        (y, x) for x in left for y in right
    )


def split_halves(order: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``order`` cut in two, the second half the larger: ``a, b, c, d, e`` -> ``a, b | c, d, e``."""
    middle = len(order) // 2
    return tuple(order[:middle]), tuple(order[middle:])


def bridge_links(order: Sequence[str]) -> frozenset[Link]:
    """Jepsen's bridge: two halves that cannot talk to each other, and a node in the middle
    of ``order`` that talks to both (so both sides may believe they hold a majority)."""
    if len(order) < 3:
        raise ValueError(f"a bridge needs at least 3 nodes, got {list(order)}")
    middle = len(order) // 2
    return halves_links(order[:middle], order[middle + 1 :])


def majorities_ring_links(order: Sequence[str]) -> frozenset[Link]:
    """Jepsen's majorities ring: each node hears from a majority (itself included) and no two
    nodes hear from the same majority.

    Nodes sit on a ring in the given ``order``; node ``i`` hears from the majority ``m``
    nodes starting ``(m - 1) // 2`` places before it (with 5 nodes: its two neighbours).
    Every link into ``i`` from outside that window is blocked. When the majority is odd (4,
    5, 8, 9 nodes) the window is centred and the blocks are mutual; otherwise (3, 6, 7
    nodes) some links are blocked one way only.
    """
    n = len(order)
    if n < 3 or len(set(order)) != n:
        raise ValueError(f"a majorities ring needs at least 3 distinct nodes, got {list(order)}")
    majority = n // 2 + 1
    blocked = set()
    for i, node in enumerate(order):
        start = i - (majority - 1) // 2
        hears = {order[(start + k) % n] for k in range(majority)}
        blocked |= {(other, node) for other in order if other not in hears}
    return frozenset(blocked)
