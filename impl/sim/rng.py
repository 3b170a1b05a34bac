"""One seed drives everything: a root seed split into one PRNG per subsystem.

TigerBeetle's simulator and FoundationDB's both draw every random choice of a run from a
single seed, so that the seed alone reproduces the run. Handing one ``random.Random`` to
every subsystem would tie them together: a new draw in the network (one more duplicated
message) would shift every later draw of the disk and the workload, and a failing run could
not be shrunk fault by fault. So each subsystem gets its own stream, derived from the pair
(root seed, name) and from nothing else:

- the child's seed is ``blake2b(f"{root_seed}/{name}")``: a stable hash, the same in every
  process (Python's ``hash()`` of a string changes with ``PYTHONHASHSEED``, so it must never
  seed anything);
- splitting never draws from the parent, so adding, removing or reordering subsystems
  leaves the other streams byte-for-byte as they were;
- names form a path: ``split(seed, "node").split("b1")`` is ``split(seed, "node/b1")``.

Conventional names: ``network``, ``disk``, ``workload``, ``faults``, ``config`` (a randomized
cluster configuration), and ``node/<name>`` for per-node streams.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

__all__ = ["SimRandom", "derive_seed", "split"]

_SEED_BYTES = 16
"""128-bit child seeds: ``random.Random`` seeds from every bit of an int, so a collision
between two named streams of one run is as likely as a blake2b-128 collision."""


def derive_seed(root_seed: int, name: str) -> int:
    """The seed of the stream called ``name`` under ``root_seed``; the same in every process."""
    _check_seed(root_seed)
    if not isinstance(name, str):
        raise TypeError(f"a stream name must be a str, got {type(name).__name__}: {name!r}")
    digest = hashlib.blake2b(
        f"{root_seed}/{name}".encode(), digest_size=_SEED_BYTES, person=b"kafka-model-rng"
    ).digest()
    return int.from_bytes(digest, "big")


def split(seed: int, name: str) -> SimRandom:
    """The PRNG of subsystem ``name`` of the run with root seed ``seed``."""
    return SimRandom(seed).split(name)


class SimRandom(random.Random):
    """A ``random.Random`` that knows its root seed and its name, and can be split.

    ``SimRandom(seed)`` is the root stream of a run; ``rng.split("network")`` is the
    network's. Every ``random.Random`` method works as usual (``random``, ``randint``,
    ``choice``, ``shuffle``, ``sample`` of a sequence, ...). Give ``choice``/``sample`` a
    sorted sequence, never a set: a set's order is not part of the seed.
    """

    root_seed: int
    name: str

    def __init__(self, seed: int, name: str = "") -> None:
        _check_seed(seed)
        if name.startswith("/") or name.endswith("/") or "//" in name:
            raise ValueError(f"stream name {name!r} has an empty path component")
        self.root_seed = seed
        self.name = name
        super().__init__(derive_seed(seed, name))

    def split(self, name: str) -> SimRandom:
        """The child stream ``name``; does not draw from (or otherwise touch) this stream."""
        if not name:
            raise ValueError("a child stream needs a non-empty name, e.g. 'network' or 'disk'")
        return SimRandom(self.root_seed, f"{self.name}/{name}" if self.name else name)

    def chance(self, probability: float) -> bool:
        """True with the given probability; always draws exactly one number."""
        assert 0.0 <= probability <= 1.0, probability
        return self.random() < probability

    def seed(self, *args: Any, **kwargs: Any) -> None:
        # random.Random.__init__ seeds through this method once; any later call would make
        # the stream depend on something other than (root seed, name).
        if getattr(self, "_seeded", False):
            raise TypeError(
                f"SimRandom stream {self.name or '<root>'!r} cannot be reseeded: "
                "split a new named stream instead"
            )
        super().seed(*args, **kwargs)
        self._seeded = True

    def __reduce__(self) -> tuple[Any, ...]:
        # random.Random pickles as cls() + setstate; SimRandom needs its constructor arguments.
        return (self.__class__, (self.root_seed, self.name), self.getstate())

    def __repr__(self) -> str:
        return f"SimRandom(seed={self.root_seed}, name={self.name!r})"


def _check_seed(seed: int) -> None:
    # bool is an int, and random.Random would happily take abs() of a negative seed, making
    # two different printed seeds reproduce the same run.
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"a seed must be an int, got {type(seed).__name__}: {seed!r}")
    if seed < 0:
        raise ValueError(f"a seed must be >= 0, got {seed}")
