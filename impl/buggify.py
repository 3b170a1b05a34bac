"""BUGGIFY: randomized timing inside the simulated brokers, drawn from the run's seed.

FoundationDB's simulator marks places in its code with ``BUGGIFY``: in a simulated run
each such site is switched on or off for the whole run (with probability 1/4), and an
active site fires at random, delaying an action or taking a rare path, so that timings a
real deployment meets once a year happen in every few runs (FoundationDB's documentation,
"Simulation and Testing"; Zhou et al., "FoundationDB: A Distributed Unbundled
Transactional Key Value Store", SIGMOD 2021, section 4.1). Here the sites are the brokers'
periodic work (``impl.cluster``: one broker's tick runs its fetchers, its ISR changes
(``replica.lag.time.max.ms``), its heartbeat to the store and, on the controller's broker,
the controller's duties): a broker whose site is active now and then starts its next tick
late, by a delay drawn log-uniformly between `MIN_DELAY_NS` and `MAX_DELAY_NS` -- a slow
thread, a long GC pause of one thread, a stalled disk -- while its network handlers keep
answering. Fetches then lag, ISRs shrink, controllers react late and leader changes
bunch up, in orders the message timings alone rarely produce. The second kind of site is
the send thread of the controller on a broker (``ControllerChannelManager``'s one thread
and connection per broker): when it fires, the LeaderAndIsr and StopReplica requests to
one broker wait, in order, for as long -- a broker learns of a leader change late, and a
zombie controller's requests arrive after its successor's.

Off unless asked for (``ClusterConfig.buggify``; ``kmodel test --buggify``): a run without
it draws nothing from this stream, so its history is byte-identical to one before BUGGIFY
existed. With it, everything is drawn from the stream ``buggify`` of the run's seed: the
same seed gives the same delays.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from impl.sim.rng import SimRandom

__all__ = [
    "ACTIVE_PROBABILITY",
    "FIRE_PROBABILITY",
    "MAX_DELAY_NS",
    "MIN_DELAY_NS",
    "RARE_FIRE_PROBABILITY",
    "Buggify",
]

ACTIVE_PROBABILITY = 0.25
"""The chance that a site is active for a run (FoundationDB's ``P_BUGGIFIED_SECTION_ACTIVATED``)."""
FIRE_PROBABILITY = 0.05
"""The chance that an active tick site fires each time it is reached (a tick is reached
ten times a second)."""
RARE_FIRE_PROBABILITY = 0.25
"""The chance for a site reached rarely (a controller's request): FoundationDB's
``P_BUGGIFIED_SECTION_FIRES``."""
MIN_DELAY_NS = 10_000_000
"""The shortest delay a firing site adds (10 ms)."""
MAX_DELAY_NS = 8_000_000_000
"""The longest (8 s): past the store's session timeout (6 s by default), near
``replica.lag.time.max.ms`` (10 s)."""


class Buggify:
    """The BUGGIFY sites of one run: which are active, and each firing's delay."""

    def __init__(self, seed: int, sites: Iterable[str]) -> None:
        self.rng = SimRandom(seed, "buggify")
        self.active = frozenset(s for s in sorted(sites) if self.rng.random() < ACTIVE_PROBABILITY)
        """The sites switched on for this run (drawn once, in sorted order)."""
        self.fired = 0
        self.delayed_ns = 0
        self.fired_at: Counter[str] = Counter()
        """How many times each site fired."""

    def delay(self, site: str, fire: float = FIRE_PROBABILITY) -> int:
        """Nanoseconds to delay the action at ``site`` now: 0 unless it is active and
        fires (with probability ``fire``), else log-uniform in [`MIN_DELAY_NS`,
        `MAX_DELAY_NS`]."""
        if site not in self.active or self.rng.random() >= fire:
            return 0
        low, high = math.log(MIN_DELAY_NS), math.log(MAX_DELAY_NS)
        delay = round(math.exp(self.rng.uniform(low, high)))
        self.fired += 1
        self.fired_at[site] += 1
        self.delayed_ns += delay
        return delay
