"""The generator protocol's values: threads, `Invocation`, `Pending`, `EXHAUSTED`,
`Context`, and the `Gen` base class (see the package docstring)."""

from __future__ import annotations

import enum
import hashlib
import random
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from impl.sim.clock import NS_PER_MS, NS_PER_S
from jepsen_py.history.op import Op

Thread = int | str
Process = int | str

NEMESIS = "nemesis"
"""The nemesis's thread and process."""

MILLISECOND = NS_PER_MS
SECOND = NS_PER_S
"""Generators count logical time in nanoseconds, as the simulation's clock does."""


class GeneratorError(ValueError):
    """A generator broke the protocol (an op for a busy thread, a pending time in the past)
    or was built wrong (a bad count, an empty choice). The message names which and why."""


def thread_order(thread: Thread) -> tuple[int, int, str]:
    """Sort key of threads: client threads by number, then named ones ("nemesis")."""
    return (0, thread, "") if isinstance(thread, int) else (1, 0, thread)


def is_client(thread: Thread) -> bool:
    return isinstance(thread, int)


def is_nemesis(thread: Thread) -> bool:
    return thread == NEMESIS


def derive_rng(seed: int, name: str) -> random.Random:
    """A PRNG that is a pure function of (seed, name): blake2b, never ``hash()``."""
    digest = hashlib.blake2b(
        f"{seed}/{name}".encode(), digest_size=16, person=b"jepsen-py-gen"
    ).digest()
    return random.Random(int.from_bytes(digest, "big"))


# --- values ---------------------------------------------------------------------------


@attrs.frozen(slots=True)
class Invocation:
    """An op a generator asks for. ``kind`` is ``invoke`` (a client or nemesis op, on
    ``thread``), or a marker that takes no thread: ``log`` (for the run's log only) or
    ``info`` (recorded in the history as an ``info`` event of the nemesis process)."""

    time: int
    thread: Thread | None
    process: Process | None
    f: str
    key: str | None = None
    value: Any = None
    kind: str = attrs.field(
        default="invoke", validator=attrs.validators.in_(("invoke", "log", "info"))
    )

    @property
    def is_marker(self) -> bool:
        return self.kind != "invoke"

    def to_op(self, index: int, run: str | None = None) -> Op:
        """This invocation as a history line: ``invoke`` for a client; ``info`` for the
        nemesis (Jepsen logs a fault's invocation and completion as ``info``) and for an
        ``info`` marker."""
        if self.kind == "log":
            raise GeneratorError(f"a log marker ({self.value!r}) is not a history event")
        if self.kind == "info" or self.thread == NEMESIS:
            process: Process = NEMESIS if self.process is None else self.process
            return Op(index, self.time, process, "info", self.f, self.key, self.value, run)
        assert self.process is not None, self
        return Op(index, self.time, self.process, "invoke", self.f, self.key, self.value, run)


@attrs.frozen(slots=True)
class Pending:
    """Nothing to do now. ``until``: ask again at this logical time even if nothing else
    happens (None: only an event, such as a completion, can change the answer)."""

    until: int | None = None


PENDING = Pending()


class Exhausted(enum.Enum):
    EXHAUSTED = "exhausted"


EXHAUSTED = Exhausted.EXHAUSTED

Result = Invocation | Pending | Exhausted
Step = tuple[Result, "Gen"]


def sooner(a: int | None, b: int | None) -> int | None:
    """The earlier of two wake-up times, where None is "never" (only an event helps)."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


@attrs.frozen(slots=True)
class Context:
    """What a generator sees when asked: the logical time (ns), the threads in scope (in
    `thread_order`), which of them are free, every thread's current process, and the run's
    workload PRNG (the only source of randomness a generator may draw from)."""

    time: int
    threads: tuple[Thread, ...]
    free: frozenset[Thread]
    workers: Mapping[Thread, Process]
    rng: random.Random = attrs.field(eq=False, repr=False)

    def free_threads(self) -> list[Thread]:
        return [t for t in self.threads if t in self.free]

    def first_free(self) -> Thread | None:
        for t in self.threads:
            if t in self.free:
                return t
        return None

    def some_free(self) -> Thread | None:
        """A free thread chosen at random (``rng``), so work spreads over every client
        process; None when none is free."""
        free = self.free_threads()
        if len(free) <= 1:
            return free[0] if free else None
        return free[self.rng.randrange(len(free))]

    @property
    def all_free(self) -> bool:
        return all(t in self.free for t in self.threads)

    def restrict(self, threads: Iterable[Thread]) -> Context:
        scope = tuple(threads)
        if scope == self.threads:
            return self
        return Context(self.time, scope, self.free.intersection(scope), self.workers, self.rng)

    def thread_of(self, process: Process) -> Thread | None:
        """The thread now running ``process`` (None: no thread does, e.g. a marker)."""
        for thread, current in self.workers.items():
            if current == process:
                return thread
        return None


class Gen:
    """A generator: an immutable value; see the module docstring for the protocol."""

    __slots__ = ()

    def op(self, ctx: Context) -> Step:
        raise NotImplementedError

    def update(self, ctx: Context, event: Op) -> Gen:
        return self


@attrs.frozen(slots=True)
class _Nil(Gen):
    def op(self, ctx: Context) -> Step:
        return EXHAUSTED, self


NIL: Gen = _Nil()
"""The generator that is exhausted from the start."""
