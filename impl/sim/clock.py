"""Logical time: the simulation's clock, each node's monotonic and wall clocks, and a queue
of timers.

Time is an int of nanoseconds since the start of the run, the unit of the history format.
Nothing reads a wall clock: the world loop moves the clock forward to the next event (a
timer or a message delivery) and nothing else moves it. Kafka's own timeouts are in
milliseconds (``replica.lag.time.max.ms``, ``request.timeout.ms``); ``ms()`` converts.

Two clocks per node, as every JVM has (the ``clock`` nemesis moves them):

- the **monotonic** clock (``System.nanoTime``, ``CLOCK_MONOTONIC``) never steps. A rate
  makes it run fast or slow (libfaketime's rate, which Jepsen uses to make a process's
  clocks run at another speed, applies to it too);
- the **wall** clock (``System.currentTimeMillis``, ``CLOCK_REALTIME``) is the monotonic
  reading plus every *bump*: ``settimeofday`` (Jepsen's ``bump`` and ``strobe``, and the
  ``ntpdate`` that heals them) steps it forward or back and leaves the monotonic clock
  alone.

Each of Kafka's timers reads the clock Kafka really reads for it:

==========================================================  ==========  ==================
timer                                                       Kafka       here
==========================================================  ==========  ==================
``replica.lag.time.max.ms``: the leader drops a follower    wall        wall (``impl.isr``)
  (``Partition.getOutOfSyncReplicas`` compares
  ``time.milliseconds()`` with the follower's last
  caught-up fetch time, also ``time.milliseconds()``)
broker session expiry: KRaft's ``BrokerHeartbeatManager``   monotonic   monotonic
  (``lastContactNs``, ``time.nanoseconds()``); ZooKeeper's                (controller)
  session tracker (monotonic since ZOOKEEPER-1366)
broker heartbeats and registration retries                  monotonic   monotonic
  (``BrokerLifecycleManager``'s event queue; ZooKeeper
  client pings)
produce and fetch purgatory timeouts (``SystemTimer`` on    monotonic   monotonic
  ``hiResClockMs``), fetch backoff, HW checkpoints
  (``KafkaScheduler``)
``log.flush.interval.ms`` (``LogManager.flushDirtyLogs``    wall        wall
  compares ``time.milliseconds()`` with the last flush)
a broker's own request timeouts (``NetworkClient``)         wall        monotonic
a client's ``request.timeout.ms``, ``delivery.timeout.ms``  wall        wall
==========================================================  ==========  ==================

The one difference, a broker's request timeouts, changes no replication decision: a bumped
wall clock would only time a replica fetch out early or late, and the fetcher retries
either way. So a bump of a leader's wall clock can shrink its ISR (Kafka does that too), but
no bump makes the controller expire a broker's session or stops a broker's heartbeats;
only a rate, or a pause or a partition, can.

The world hands every node the readings it needs (``impl.world``); events are scheduled,
and histories timed, on global time, which keeps runs deterministic.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from typing import Generic, NamedTuple, TypeVar

__all__ = [
    "NS_PER_MS",
    "NS_PER_S",
    "NS_PER_US",
    "Clock",
    "Timer",
    "TimerQueue",
    "format_ns",
    "ms",
    "seconds",
    "to_ms",
    "us",
]

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000

T = TypeVar("T")


def _to_ns(value: int | float, unit: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what}() takes a number, got {type(value).__name__}: {value!r}")
    if isinstance(value, int):
        return value * unit
    if not math.isfinite(value):
        raise ValueError(f"{what}() takes a finite number, got {value!r}")
    return round(value * unit)


def us(value: int | float) -> int:
    """Microseconds as integer nanoseconds."""
    return _to_ns(value, NS_PER_US, "us")


def ms(value: int | float) -> int:
    """Milliseconds as integer nanoseconds: ``ms(30_000)`` is ``replica.lag.time.max.ms``."""
    return _to_ns(value, NS_PER_MS, "ms")


def seconds(value: int | float) -> int:
    """Seconds as integer nanoseconds."""
    return _to_ns(value, NS_PER_S, "seconds")


def to_ms(ns: int) -> int:
    """Nanoseconds as whole milliseconds (rounded down), the unit of Kafka's configs."""
    return ns // NS_PER_MS


def format_ns(ns: int) -> str:
    """A short, exact rendering for traces: ``1.500ms``, ``2s``, ``-250us``, ``7ns``."""
    sign = "-" if ns < 0 else ""
    magnitude = abs(ns)
    for unit, suffix in ((NS_PER_S, "s"), (NS_PER_MS, "ms"), (NS_PER_US, "us")):
        if magnitude >= unit:
            whole, rest = divmod(magnitude, unit)
            if rest == 0:
                return f"{sign}{whole}{suffix}"
            digits = len(str(unit)) - 1
            return f"{sign}{whole}.{rest:0{digits}d}".rstrip("0") + suffix
    return f"{sign}{magnitude}ns"


class Clock:
    """The global logical clock, and each node's two clocks (see the module docstring).

    Only the world loop calls ``advance_to``; everyone else reads ``now`` (global time),
    ``monotonic_now(node)`` (the node's ``System.nanoTime``) or ``wall_now(node)`` (its
    ``System.currentTimeMillis``).

    Per node, three numbers make both readings::

        monotonic_now(node) = now + drift(node) + (now - since(node)) * (rate(node) - 1)
        wall_now(node)      = monotonic_now(node) + step(node)

    ``drift`` is what past rates added (folded in whenever a rate changes), ``step`` is what
    wall-clock bumps added. A bump moves ``step`` only; a rate moves both clocks.
    """

    __slots__ = ("_drift", "_rate", "_step", "now")

    def __init__(self, start_ns: int = 0) -> None:
        assert isinstance(start_ns, int) and start_ns >= 0, start_ns
        self.now = start_ns
        """Global time in ns. A plain attribute, read on every event of a run (a property
        costs a call each time); only ``advance_to`` and ``advance_by`` move it, and the
        cluster's event loop (``impl.cluster``), which moves it forward to a heap's int."""
        self._drift: dict[str, int] = {}
        self._step: dict[str, int] = {}
        self._rate: dict[str, tuple[int, int, int]] = {}
        """node -> (global time the rate was set, numerator, denominator)."""

    def advance_to(self, time_ns: int) -> None:
        """Move global time forward to ``time_ns`` (or leave it where it is)."""
        if not isinstance(time_ns, int):
            raise TypeError(f"time is an int of nanoseconds, got {time_ns!r}")
        if time_ns < self.now:
            raise ValueError(
                f"global time never goes backwards: now is {self.now}ns, asked for "
                f"{time_ns}ns; to make one node's wall clock jump back, use set_skew()"
            )
        self.now = time_ns

    def advance_by(self, delta_ns: int) -> None:
        assert isinstance(delta_ns, int) and delta_ns >= 0, delta_ns
        self.now += delta_ns

    # The two clocks of a node -------------------------------------------------------------

    def monotonic_now(self, node: str) -> int:
        """What ``node``'s monotonic clock reads (``System.nanoTime``): it never steps; a
        rate makes it run fast or slow."""
        now = self.now
        if node in self._rate:
            since, num, den = self._rate[node]
            now += (now - since) * (num - den) // den
        return now + self._drift.get(node, 0)

    def wall_now(self, node: str) -> int:
        """What ``node``'s wall clock reads (``System.currentTimeMillis``): the monotonic
        reading plus every bump (``set_skew``) since."""
        if node not in self._step and node not in self._rate and node not in self._drift:
            return self.now
        return self.monotonic_now(node) + self._step.get(node, 0)

    def readings(self, node: str) -> tuple[int, int]:
        """``(monotonic_now(node), wall_now(node))``: a broker reads both on every step."""
        if node not in self._step and node not in self._rate and node not in self._drift:
            return self.now, self.now
        return self.monotonic_now(node), self.wall_now(node)

    # The clock nemesis ------------------------------------------------------------------

    def skew(self, node: str) -> int:
        """How far ``node``'s wall clock is from global time now."""
        return self.wall_now(node) - self.now

    def set_skew(self, node: str, skew_ns: int) -> None:
        """Bump ``node``'s wall clock (``settimeofday``, Jepsen's ``bump``): from now on it
        reads global time + ``skew_ns``, plus what its rate adds. The monotonic clock does
        not move."""
        if not isinstance(skew_ns, int):
            raise TypeError(f"skew is an int of nanoseconds, got {skew_ns!r}")
        step = self.now + skew_ns - self.monotonic_now(node)
        if step == 0:
            self._step.pop(node, None)
        else:
            self._step[node] = step

    def set_rate(self, node: str, numerator: int, denominator: int = 1) -> None:
        """From now on both of ``node``'s clocks advance ``numerator/denominator`` local
        nanoseconds per global one (2/1: twice as fast, as libfaketime's rate makes a
        process's clocks run); each reads what it reads now."""
        if not (isinstance(numerator, int) and isinstance(denominator, int)):
            raise TypeError(f"a rate is a ratio of ints, got {numerator!r}/{denominator!r}")
        if numerator <= 0 or denominator <= 0:
            raise ValueError(f"a clock rate is > 0, got {numerator}/{denominator}")
        self._fold_rate(node)
        if numerator != denominator:
            self._rate[node] = (self.now, numerator, denominator)

    def _fold_rate(self, node: str) -> None:
        """Fold what the current rate added so far into the drift, and drop the rate."""
        if node in self._rate:
            drift = self.monotonic_now(node) - self.now
            del self._rate[node]
            if drift:
                self._drift[node] = drift
            else:
                self._drift.pop(node, None)

    def rate(self, node: str) -> tuple[int, int]:
        _, num, den = self._rate.get(node, (0, 1, 1))
        return num, den

    def clear_skews(self) -> None:
        """Heal the clock nemesis (``ntpdate``): every wall clock reads global time again (a
        node that was ahead steps back) and every clock runs at the global rate. Monotonic
        clocks never step: each keeps the offset its rate gave it."""
        for node in sorted(set(self._rate) | set(self._step) | set(self._drift)):
            self._fold_rate(node)
            step = -self._drift.get(node, 0)
            if step:
                self._step[node] = step
            else:
                self._step.pop(node, None)

    def skews(self) -> tuple[tuple[str, int], ...]:
        """The nodes whose wall clock differs from global time now, with the difference,
        sorted by node name."""
        nodes = sorted(set(self._rate) | set(self._step) | set(self._drift))
        return tuple((n, self.skew(n)) for n in nodes if self.skew(n) != 0)

    def to_global(self, node: str, wall_ns: int) -> int:
        """The global time at which ``node``'s wall clock will read ``wall_ns`` (at its
        current skew and rate; the first such time, rounded up)."""
        offset = self._drift.get(node, 0) + self._step.get(node, 0)
        skewed = wall_ns - offset
        if node not in self._rate:
            return skewed
        since, num, den = self._rate[node]
        # skewed = since + (t - since) * num / den  =>  t = since + (skewed - since) * den / num
        return since + -((-(skewed - since) * den) // num)

    def __repr__(self) -> str:
        return f"Clock(now={format_ns(self.now)}, skews={dict(self.skews())})"


class Timer(NamedTuple, Generic[T]):
    """A scheduled wake-up: ``payload`` is handed back when global time reaches ``at``.

    A named tuple rather than an ``attrs`` class: every node tick and every client op
    schedules one, and a tuple is the cheapest immutable record Python builds."""

    at: int
    seq: int
    payload: T
    owner: str | None = None
    """The node the timer belongs to: a paused owner's timers wait, a crashed one's vanish."""


class TimerQueue(Generic[T]):
    """Timers ordered by (time, sequence number), with cancellation and per-owner holding.

    A paused process (SIGSTOP) does not run its timers: they come due while it sleeps and
    all fire, late, when it resumes. ``pop_due(now, paused=...)`` sets aside the due timers
    of paused owners and ``release(owner)`` puts them back, in their original order, when
    the owner resumes. A crashed process loses its timers: ``cancel_owner(owner)``.
    """

    __slots__ = ("_heap", "_held", "_live", "_max_pending", "_next_seq", "version")

    def __init__(self, max_pending: int = 1_000_000) -> None:
        assert max_pending > 0
        self._heap: list[tuple[int, int]] = []
        self._live: dict[int, Timer[T]] = {}
        self._held: dict[str, list[Timer[T]]] = {}
        self._next_seq = 0
        self._max_pending = max_pending
        self.version = 0
        """Bumped by every change that can move ``peek_time``'s answer (a timer scheduled,
        cancelled, popped or released): a driver that peeks before every event asks again
        only when it moved (or when the paused owners changed)."""

    def __len__(self) -> int:
        return len(self._live)

    def schedule(self, at: int, payload: T, owner: str | None = None) -> Timer[T]:
        if not isinstance(at, int) or at < 0:
            raise ValueError(f"a timer's time is an int of nanoseconds >= 0, got {at!r}")
        if len(self._live) >= self._max_pending:
            raise OverflowError(
                f"more than {self._max_pending} pending timers: a node is scheduling timers "
                "in a loop without letting them fire"
            )
        seq = self._next_seq
        # The fields in order (see Timer), built by tuple.__new__ (a named tuple's __new__
        # is a Python function): every tick and client op schedules one.
        timer: Timer[T] = tuple.__new__(Timer, (at, seq, payload, owner))
        self._next_seq = seq + 1
        self._live[seq] = timer
        heapq.heappush(self._heap, (at, seq))
        self.version += 1
        return timer

    def cancel(self, timer: Timer[T]) -> bool:
        """Cancel a pending timer; False if it already fired or was cancelled."""
        if self._live.pop(timer.seq, None) is None:
            return False
        self.version += 1
        if timer.owner is not None and timer.owner in self._held:
            self._held[timer.owner] = [t for t in self._held[timer.owner] if t.seq != timer.seq]
        return True

    def cancel_owner(self, owner: str) -> int:
        """Cancel every timer of ``owner`` (it crashed); returns how many."""
        doomed = [seq for seq, timer in self._live.items() if timer.owner == owner]
        for seq in doomed:
            del self._live[seq]
        self._held.pop(owner, None)
        self.version += 1
        return len(doomed)

    def peek_time(self, paused: Iterable[str] = ()) -> int | None:
        """When the next timer of a non-paused owner is due, or None."""
        heap, live = self._heap, self._live
        while heap and heap[0][1] not in live:  # _discard_dead_heads, inlined: hot
            heapq.heappop(heap)
        if not paused:
            return heap[0][0] if heap else None
        paused = frozenset(paused)
        # A paused owner's timers stay in the heap until due, so look past them (a linear
        # scan: only while the pause nemesis is active, over a handful of timers per node).
        candidates = [
            key
            for key in self._heap
            if (timer := self._live.get(key[1])) is not None and timer.owner not in paused
        ]
        return min(candidates)[0] if candidates else None

    def pop_due(self, now: int, paused: Iterable[str] = ()) -> Timer[T] | None:
        """The earliest timer due at ``now`` whose owner is not paused, removed; else None.

        Due timers of paused owners are set aside until ``release(owner)``.
        """
        paused = frozenset(paused) if paused else frozenset()
        heap, live = self._heap, self._live
        while heap and heap[0][0] <= now:
            _, seq = heapq.heappop(heap)
            self.version += 1
            timer = live.get(seq)
            if timer is None:
                continue  # cancelled
            if paused and timer.owner is not None and timer.owner in paused:
                self._held.setdefault(timer.owner, []).append(timer)
                continue
            del live[seq]
            return timer
        return None

    def release(self, owner: str) -> int:
        """``owner`` resumed: its held timers are due again (they fire late, in order)."""
        held = self._held.pop(owner, [])
        for timer in held:
            if timer.seq in self._live:
                heapq.heappush(self._heap, (timer.at, timer.seq))
        self.version += 1
        return len(held)

    def pending(self) -> tuple[Timer[T], ...]:
        """Every pending timer (held ones included), in firing order."""
        return tuple(sorted(self._live.values(), key=lambda t: (t.at, t.seq)))

    def _discard_dead_heads(self) -> None:
        while self._heap and self._heap[0][1] not in self._live:
            heapq.heappop(self._heap)
