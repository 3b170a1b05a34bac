"""Generators: what a test does, and when, as pure values on logical time (Jepsen's
``jepsen.generator``).

A generator is an immutable value. Asked for an op with a `Context` (the logical time in
nanoseconds, the threads in scope and which are free, each thread's current process, and
the run's PRNG), ``gen.op(ctx)`` returns ``(result, gen')`` where ``result`` is

- an `Invocation` to perform now (``time == ctx.time``, on a free thread of ``ctx``), and
  ``gen'`` is the generator for what comes after it;
- a `Pending`: nothing now. ``until`` is the logical time at which asking again may help
  (None: only an event helps, a completion freeing a thread); ``gen'`` replaces ``gen``
  (it may have recorded a deadline);
- ``EXHAUSTED``: nothing ever again.

``gen.update(ctx, event)`` returns the generator that has seen ``event``, a history `Op`:
the invocation it made once dispatched, and every completion (``ok``/``fail``/``info``).
That is how generators learn positions from polls. Nothing is mutated, so a generator can
be simulated alone (`simulate`), and the same (generator, seed) always gives the same ops.

Randomness comes only from ``ctx.rng``, the run's stream for the workload (one seed; the
driver passes the same stream to every ask, so the draws depend on the seed and on the
sequence of asks, both deterministic), except `nemesis_schedule`, which derives its draws
from its own ``seed`` and the step number. Never the wall clock, never ``hash()``.

Threads are the client slots ``0..n-1`` and ``"nemesis"``. A thread runs one op at a
time; when a client op ends ``info``, the thread goes on as a new process
(``process + number of client threads``, Jepsen's convention). Combinators that care about
threads (`each_thread`, `reserve`, `on_threads`, `clients`, `nemesis`) hand their children a
context restricted to some threads; a plain generator such as `invoke` takes any free
thread in scope, so put client work under `clients` and faults under `nemesis`.

Combinators: `mix`, `stagger`, `delay`, `limit`, `once`, `time_limit`, `phases` (each phase
waits for the previous one to be exhausted and every thread to be free), `concat`,
`synchronize`, `any_of`, `each_thread`, `each_process`, `reserve`, `on_threads`, `repeat`,
`cycle`, `filter`, `map`, `sleep`, `log` and `info` markers, `nemesis_schedule` and `heal`.
Kafka workload generators: `sends`, `polls`, `final_reads` (the checker's final read-back
convention: polls invoked with ``{"from": N, "final": true}``).

The `Interpreter` is the driver's half: it asks the generator, keeps threads busy until
their op completes, replaces processes after ``info``, builds the history `Op`s and feeds
events back through ``update``. The runner drives it against the simulated cluster;
`simulate` drives it against fake completions (`IdealLog`).
"""

from __future__ import annotations

import enum
import functools
import hashlib
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from jepsen_py.history.op import Op

Thread = int | str
Process = int | str

NEMESIS = "nemesis"
"""The nemesis's thread and process."""

MILLISECOND = 1_000_000
SECOND = 1_000_000_000


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


def _sooner(a: int | None, b: int | None) -> int | None:
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


# --- single ops and markers -----------------------------------------------------------


@attrs.frozen(slots=True)
class _Invoke(Gen):
    f: str
    key: str | None
    value: Any

    def op(self, ctx: Context) -> Step:
        thread = ctx.some_free()
        if thread is None:
            return PENDING, self
        inv = Invocation(ctx.time, thread, ctx.workers[thread], self.f, self.key, self.value)
        return inv, NIL


def invoke(f: str, key: str | None = None, value: Any = None) -> Gen:
    """One op on a free thread in scope (chosen at random), then exhausted (a Jepsen op
    map)."""
    if not isinstance(f, str) or not f:
        raise GeneratorError(f"an op needs a non-empty string f, got {f!r}")
    return _Invoke(f, key, value)


@attrs.frozen(slots=True)
class _Marker(Gen):
    kind: str
    f: str
    value: Any

    def op(self, ctx: Context) -> Step:
        return Invocation(ctx.time, None, None, self.f, None, self.value, self.kind), NIL


def log(message: str) -> Gen:
    """A marker for the run's log (not the history), e.g. "healing the cluster"; takes no
    thread."""
    return _Marker("log", "log", message)


def info(f: str, value: Any = None) -> Gen:
    """A marker recorded in the history as an ``info`` event of the nemesis process, e.g.
    ``info("phase", "final-reads")``; takes no thread."""
    return _Marker("info", f, value)


# --- counting and repeating -----------------------------------------------------------


@attrs.frozen(slots=True)
class _Limit(Gen):
    remaining: int
    gen: Gen

    def op(self, ctx: Context) -> Step:
        if self.remaining <= 0:
            return EXHAUSTED, self
        result, gen = self.gen.op(ctx)
        if isinstance(result, Invocation):
            return result, _Limit(self.remaining - 1, gen)
        if isinstance(result, Pending):
            return result, _Limit(self.remaining, gen)
        return EXHAUSTED, self

    def update(self, ctx: Context, event: Op) -> Gen:
        return _Limit(self.remaining, self.gen.update(ctx, event))


def limit(n: int, gen: Gen) -> Gen:
    """At most ``n`` ops of ``gen``."""
    if n < 0:
        raise GeneratorError(f"limit({n}): the count must be >= 0")
    return _Limit(n, gen)


def once(gen: Gen) -> Gen:
    """The first op of ``gen`` only."""
    return _Limit(1, gen)


@attrs.frozen(slots=True)
class _Repeat(Gen):
    gen: Gen
    remaining: int | None

    def op(self, ctx: Context) -> Step:
        if self.remaining == 0:
            return EXHAUSTED, self
        result, _ = self.gen.op(ctx)
        if isinstance(result, Invocation):
            left = None if self.remaining is None else self.remaining - 1
            return result, _Repeat(self.gen, left)
        if isinstance(result, Pending):
            return result, self
        return EXHAUSTED, self

    def update(self, ctx: Context, event: Op) -> Gen:
        return _Repeat(self.gen.update(ctx, event), self.remaining)


def repeat(gen: Gen, n: int | None = None) -> Gen:
    """Ops of the *same* value ``gen`` again and again (forever, or ``n`` times), as
    Jepsen's ``repeat``: ``repeat(invoke("poll", "t-0"))``. The state ``gen`` moves to
    after an op is dropped, so repeat literals, not stateful generators (a repeated `sends`
    would send the same value again)."""
    if n is not None and n < 0:
        raise GeneratorError(f"repeat(n={n}): the count must be >= 0 or None")
    return _Repeat(gen, n)


@attrs.frozen(slots=True)
class _Cycle(Gen):
    original: Gen
    current: Gen
    remaining: int | None
    emitted: bool

    def op(self, ctx: Context) -> Step:
        current, remaining, emitted = self.current, self.remaining, self.emitted
        while True:
            result, gen = current.op(ctx)
            if isinstance(result, Invocation):
                return result, _Cycle(self.original, gen, remaining, True)
            if isinstance(result, Pending):
                return result, _Cycle(self.original, gen, remaining, emitted)
            # This round is over; an empty round would spin forever.
            if not emitted or (remaining is not None and remaining <= 1):
                return EXHAUSTED, self
            current = self.original
            remaining = None if remaining is None else remaining - 1
            emitted = False

    def update(self, ctx: Context, event: Op) -> Gen:
        current = self.current.update(ctx, event)
        return _Cycle(self.original, current, self.remaining, self.emitted)


def cycle(gen: Gen, n: int | None = None) -> Gen:
    """Run ``gen`` to exhaustion, then from its start again (forever, or ``n`` rounds)."""
    if n is not None and n < 1:
        raise GeneratorError(f"cycle(n={n}): the number of rounds must be >= 1 or None")
    return _Cycle(gen, gen, n, False)


# --- time -----------------------------------------------------------------------------


@attrs.frozen(slots=True)
class _TimeLimit(Gen):
    dt: int
    gen: Gen
    cutoff: int | None

    def op(self, ctx: Context) -> Step:
        cutoff = ctx.time + self.dt if self.cutoff is None else self.cutoff
        if ctx.time >= cutoff:
            return EXHAUSTED, self
        result, gen = self.gen.op(ctx)
        if isinstance(result, Invocation):
            return result, _TimeLimit(self.dt, gen, cutoff)
        if isinstance(result, Pending):
            # Wake at the cutoff at the latest, to be exhausted then.
            return Pending(_sooner(result.until, cutoff)), _TimeLimit(self.dt, gen, cutoff)
        return EXHAUSTED, self

    def update(self, ctx: Context, event: Op) -> Gen:
        return _TimeLimit(self.dt, self.gen.update(ctx, event), self.cutoff)


def time_limit(dt: int, gen: Gen) -> Gen:
    """Ops of ``gen`` for ``dt`` ns of logical time from the first ask, then exhausted."""
    if dt < 0:
        raise GeneratorError(f"time_limit({dt}): the duration must be >= 0 ns")
    return _TimeLimit(dt, gen, None)


@attrs.frozen(slots=True)
class _Spaced(Gen):
    """Ops no sooner than ``next_time``; after each, the next one ``gap`` later, where the
    gap is ``dt`` (`delay`) or uniform in [0, 2 dt) (`stagger`)."""

    dt: int
    random_gap: bool
    gen: Gen
    next_time: int | None

    def op(self, ctx: Context) -> Step:
        if self.next_time is not None and ctx.time < self.next_time:
            return Pending(self.next_time), self
        result, gen = self.gen.op(ctx)
        if isinstance(result, Invocation):
            gap = int(ctx.rng.random() * 2 * self.dt) if self.random_gap else self.dt
            return result, _Spaced(self.dt, self.random_gap, gen, ctx.time + gap)
        if isinstance(result, Pending):
            return result, _Spaced(self.dt, self.random_gap, gen, self.next_time)
        return EXHAUSTED, self

    def update(self, ctx: Context, event: Op) -> Gen:
        return _Spaced(self.dt, self.random_gap, self.gen.update(ctx, event), self.next_time)


def stagger(dt: int, gen: Gen) -> Gen:
    """Ops of ``gen`` spaced by random gaps, uniform in [0, 2 dt) ns, so ``1/dt`` ops per
    ns on average when threads are free (Jepsen's ``stagger``): a rate, not a rhythm."""
    if dt <= 0:
        raise GeneratorError(f"stagger({dt}): the mean gap must be > 0 ns")
    return _Spaced(dt, True, gen, None)


def delay(dt: int, gen: Gen) -> Gen:
    """Ops of ``gen`` at least ``dt`` ns apart (the first one at once)."""
    if dt < 0:
        raise GeneratorError(f"delay({dt}): the gap must be >= 0 ns")
    return _Spaced(dt, False, gen, None)


@attrs.frozen(slots=True)
class _Sleep(Gen):
    dt: int
    until: int | None

    def op(self, ctx: Context) -> Step:
        until = ctx.time + self.dt if self.until is None else self.until
        if ctx.time >= until:
            return EXHAUSTED, self
        return Pending(until), _Sleep(self.dt, until)


def sleep(dt: int) -> Gen:
    """No ops for ``dt`` ns from the first ask, then exhausted; takes no thread. In
    `phases`, a pause between phases (e.g. to let the cluster recover after healing)."""
    if dt < 0:
        raise GeneratorError(f"sleep({dt}): the duration must be >= 0 ns")
    return _Sleep(dt, None)


# --- sequencing and concurrency -------------------------------------------------------


@attrs.frozen(slots=True)
class _Concat(Gen):
    gens: tuple[Gen, ...]

    def op(self, ctx: Context) -> Step:
        gens = self.gens
        while gens:
            result, gen = gens[0].op(ctx)
            if not isinstance(result, Exhausted):
                return result, _Concat((gen, *gens[1:]))
            gens = gens[1:]
        return EXHAUSTED, NIL

    def update(self, ctx: Context, event: Op) -> Gen:
        if not self.gens:
            return self
        return _Concat((self.gens[0].update(ctx, event), *self.gens[1:]))


def concat(*gens: Gen) -> Gen:
    """The ops of each generator in turn, each starting as soon as the previous one is
    exhausted (its ops may still be running)."""
    return _Concat(tuple(gens))


@attrs.frozen(slots=True)
class _Synchronize(Gen):
    gen: Gen
    started: bool

    def op(self, ctx: Context) -> Step:
        if not self.started and not ctx.all_free:
            return PENDING, self
        result, gen = self.gen.op(ctx)
        return result, _Synchronize(gen, True)

    def update(self, ctx: Context, event: Op) -> Gen:
        return _Synchronize(self.gen.update(ctx, event), self.started)


def synchronize(gen: Gen) -> Gen:
    """``gen``, started only once every thread in scope is free."""
    return _Synchronize(gen, False)


def phases(*gens: Gen) -> Gen:
    """Each generator in turn; each waits for the previous to be exhausted *and* for every
    thread to be free (every op of the previous phase completed)."""
    return _Concat(tuple(_Synchronize(g, False) for g in gens))


@attrs.frozen(slots=True)
class _AnyOf(Gen):
    gens: tuple[Gen, ...]

    def op(self, ctx: Context) -> Step:
        gens = list(self.gens)
        until: int | None = None
        i = 0
        while i < len(gens):
            result, gen = gens[i].op(ctx)
            if isinstance(result, Exhausted):
                del gens[i]
                continue
            gens[i] = gen
            if isinstance(result, Invocation):
                return result, _AnyOf(tuple(gens))
            until = _sooner(until, result.until)
            i += 1
        if not gens:
            return EXHAUSTED, NIL
        return Pending(until), _AnyOf(tuple(gens))

    def update(self, ctx: Context, event: Op) -> Gen:
        return _AnyOf(tuple(g.update(ctx, event) for g in self.gens))


def any_of(*gens: Gen) -> Gen:
    """All generators at once: the op of the first (in argument order) that has one now;
    exhausted when all are. Give them disjoint threads (`clients`, `nemesis`) so none
    waits for another."""
    return _AnyOf(tuple(gens))


@attrs.frozen(slots=True)
class _Mix(Gen):
    gens: tuple[Gen, ...]
    choice: int | None

    def op(self, ctx: Context) -> Step:
        gens = list(self.gens)
        choice = self.choice
        while gens:
            i = ctx.rng.randrange(len(gens)) if choice is None else choice
            result, gen = gens[i].op(ctx)
            if isinstance(result, Exhausted):
                del gens[i]
                choice = None
                continue
            gens[i] = gen
            if isinstance(result, Invocation):
                return result, _Mix(tuple(gens), None)
            # Keep the choice while it is pending, so a generator that is ready more often
            # does not get more than its share.
            return result, _Mix(tuple(gens), i)
        return EXHAUSTED, NIL

    def update(self, ctx: Context, event: Op) -> Gen:
        return _Mix(tuple(g.update(ctx, event) for g in self.gens), self.choice)


def mix(*gens: Gen) -> Gen:
    """Each op from a generator chosen uniformly at random (``ctx.rng``); an exhausted one
    leaves the mix."""
    if not gens:
        raise GeneratorError("mix() needs at least one generator")
    return _Mix(tuple(gens), None)


_MAX_SKIPS = 100_000


@attrs.frozen(slots=True)
class _Filter(Gen):
    pred: Callable[[Invocation], bool]
    gen: Gen

    def op(self, ctx: Context) -> Step:
        gen = self.gen
        for _ in range(_MAX_SKIPS):
            result, gen = gen.op(ctx)
            if not isinstance(result, Invocation):
                return result, _Filter(self.pred, gen)
            if self.pred(result):
                return result, _Filter(self.pred, gen)
        raise GeneratorError(
            f"filter({self.pred!r}) rejected {_MAX_SKIPS} ops in a row at time {ctx.time}: "
            "the predicate matches (almost) nothing this generator makes"
        )

    def update(self, ctx: Context, event: Op) -> Gen:
        return _Filter(self.pred, self.gen.update(ctx, event))


def filter_ops(pred: Callable[[Invocation], bool], gen: Gen) -> Gen:
    """Only the ops of ``gen`` for which ``pred`` holds (the others are dropped unrun)."""
    return _Filter(pred, gen)


@attrs.frozen(slots=True)
class _Map(Gen):
    fn: Callable[[Invocation], Invocation]
    gen: Gen

    def op(self, ctx: Context) -> Step:
        result, gen = self.gen.op(ctx)
        if isinstance(result, Invocation):
            mapped = self.fn(result)
            if mapped.thread != result.thread or mapped.time != result.time:
                raise GeneratorError(
                    f"map({self.fn!r}) moved an op to another thread or time: map may "
                    "change f, key and value only"
                )
            return mapped, _Map(self.fn, gen)
        return result, _Map(self.fn, gen)

    def update(self, ctx: Context, event: Op) -> Gen:
        return _Map(self.fn, self.gen.update(ctx, event))


def map_ops(fn: Callable[[Invocation], Invocation], gen: Gen) -> Gen:
    """The ops of ``gen`` transformed by ``fn`` (e.g. ``attrs.evolve(op, key="t-1")``)."""
    return _Map(fn, gen)


# Jepsen's names; the module never uses the builtins they shadow.
filter = filter_ops
map = map_ops


# --- threads --------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _matching(pred: Callable[[Thread], bool], threads: tuple[Thread, ...]) -> tuple[Thread, ...]:
    # Asked on every op for the same few scopes: computed once each.
    return tuple(t for t in threads if pred(t))


@attrs.frozen(slots=True)
class _OnThreads(Gen):
    pred: Callable[[Thread], bool]
    gen: Gen

    def _scope(self, ctx: Context) -> Context:
        return ctx.restrict(_matching(self.pred, ctx.threads))

    def op(self, ctx: Context) -> Step:
        result, gen = self.gen.op(self._scope(ctx))
        return result, _OnThreads(self.pred, gen)

    def update(self, ctx: Context, event: Op) -> Gen:
        thread = ctx.thread_of(event.process)
        if thread is None or not self.pred(thread):
            return self
        return _OnThreads(self.pred, self.gen.update(self._scope(ctx), event))


def on_threads(pred: Callable[[Thread], bool], gen: Gen) -> Gen:
    """``gen`` restricted to the threads for which ``pred`` holds; it sees only their
    events."""
    return _OnThreads(pred, gen)


def clients(gen: Gen) -> Gen:
    """``gen`` on the client threads only."""
    return _OnThreads(is_client, gen)


def nemesis(nemesis_gen: Gen, client_gen: Gen | None = None) -> Gen:
    """``nemesis_gen`` on the nemesis thread; with ``client_gen``, both at once, the
    clients on the client threads (Jepsen's two-argument ``nemesis``)."""
    faults = _OnThreads(is_nemesis, nemesis_gen)
    if client_gen is None:
        return faults
    return _AnyOf((faults, _OnThreads(is_client, client_gen)))


@attrs.frozen(slots=True)
class _Each(Gen):
    template: Gen
    by_process: bool
    state: Mapping[Thread, tuple[Process, Gen | None]]
    """thread -> (the process the copy belongs to, the copy; None once exhausted)."""

    def _copy(self, ctx: Context, thread: Thread) -> Gen | None:
        held = self.state.get(thread)
        if held is None or (self.by_process and held[0] != ctx.workers[thread]):
            return self.template
        return held[1]

    def op(self, ctx: Context) -> Step:
        state = dict(self.state)
        until: int | None = None
        live = False
        # Free threads first: one of them may have an op now.
        order = [t for t in ctx.threads if t in ctx.free]
        order += [t for t in ctx.threads if t not in ctx.free]
        for thread in order:
            gen = self._copy(ctx, thread)
            if gen is None:
                # A busy thread's op may still end info, and its new process gets a
                # fresh copy: not exhausted yet.
                live = live or (self.by_process and thread not in ctx.free)
                continue
            result, gen = gen.op(ctx.restrict((thread,)))
            exhausted = isinstance(result, Exhausted)
            state[thread] = (ctx.workers[thread], None if exhausted else gen)
            if exhausted:
                live = live or (self.by_process and thread not in ctx.free)
            if isinstance(result, Invocation):
                return result, _Each(self.template, self.by_process, state)
            if isinstance(result, Pending):
                live = True
                until = _sooner(until, result.until)
        if not live:
            return EXHAUSTED, _Each(self.template, self.by_process, state)
        return Pending(until), _Each(self.template, self.by_process, state)

    def update(self, ctx: Context, event: Op) -> Gen:
        thread = ctx.thread_of(event.process)
        if thread is None or thread not in ctx.threads:
            return self
        gen = self._copy(ctx, thread)
        if gen is None:
            return self
        state = dict(self.state)
        state[thread] = (ctx.workers[thread], gen.update(ctx.restrict((thread,)), event))
        return _Each(self.template, self.by_process, state)


def each_thread(gen: Gen) -> Gen:
    """A copy of ``gen`` per thread in scope, each seeing only its thread; exhausted when
    every copy is. Each copy has its own state: a copied `sends` repeats its values."""
    return _Each(gen, False, {})


def each_process(gen: Gen) -> Gen:
    """Like `each_thread`, but a thread that goes on as a new process (after ``info``)
    starts over with a fresh copy of ``gen``."""
    return _Each(gen, True, {})


@attrs.frozen(slots=True)
class _Reserve(Gen):
    counts: tuple[int, ...]
    gens: tuple[Gen, ...]
    """One per count, then the default; NIL once exhausted."""

    def _ranges(self, ctx: Context) -> list[tuple[Thread, ...]]:
        threads = ctx.threads
        if sum(self.counts) > len(threads):
            raise GeneratorError(
                f"reserve{self.counts} needs {sum(self.counts)} threads but has "
                f"{len(threads)} in scope ({list(threads)}): run with more client threads "
                "or reserve fewer"
            )
        ranges, start = [], 0
        for n in self.counts:
            ranges.append(threads[start : start + n])
            start += n
        ranges.append(threads[start:])
        return ranges

    def op(self, ctx: Context) -> Step:
        gens = list(self.gens)
        until: int | None = None
        live = False
        for i, scope in enumerate(self._ranges(ctx)):
            if gens[i] is NIL:
                continue
            if not scope:  # the default has no thread left: it can never run
                gens[i] = NIL
                continue
            result, gen = gens[i].op(ctx.restrict(scope))
            if isinstance(result, Exhausted):
                gens[i] = NIL
                continue
            gens[i] = gen
            if isinstance(result, Invocation):
                return result, _Reserve(self.counts, tuple(gens))
            live = True
            until = _sooner(until, result.until)
        if not live:
            return EXHAUSTED, _Reserve(self.counts, tuple(gens))
        return Pending(until), _Reserve(self.counts, tuple(gens))

    def update(self, ctx: Context, event: Op) -> Gen:
        thread = ctx.thread_of(event.process)
        for i, scope in enumerate(self._ranges(ctx)):
            if thread in scope:
                gens = list(self.gens)
                gens[i] = gens[i].update(ctx.restrict(scope), event)
                return _Reserve(self.counts, tuple(gens))
        return self


def reserve(*args: int | Gen) -> Gen:
    """``reserve(n1, g1, n2, g2, ..., default)``: the first ``n1`` threads in scope (in
    `thread_order`) run ``g1``, the next ``n2`` run ``g2``, and the rest run ``default``
    (Jepsen's ``reserve``), e.g. ``clients(reserve(2, polls(keys), sends(keys)))``."""
    if len(args) % 2 != 1:
        raise GeneratorError(
            "reserve takes pairs (count, generator) and then a default generator, e.g. "
            "reserve(2, polls, sends)"
        )
    counts = args[0:-1:2]
    gens = (*args[1:-1:2], args[-1])
    for n in counts:
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise GeneratorError(f"reserve: thread count {n!r} must be an int >= 0")
    for g in gens:
        if not isinstance(g, Gen):
            raise GeneratorError(f"reserve: {g!r} is not a generator")
    return _Reserve(tuple(counts), tuple(gens))  # type: ignore[arg-type]


# --- faults ---------------------------------------------------------------------------

_FAULT_VERBS: dict[str, tuple[str, str]] = {
    "kill": ("kill", "restart"),
    "pause": ("pause", "resume"),
}


def fault_ops(fault: str) -> tuple[str, str]:
    """The ``f`` of the ops that start and stop ``fault``: ``kill``/``restart``,
    ``pause``/``resume``, otherwise ``start-<fault>``/``stop-<fault>``. The reports pair
    them the same way (`jepsen_py.report.spans.fault_kind`)."""
    return _FAULT_VERBS.get(fault, (f"start-{fault}", f"stop-{fault}"))


@attrs.frozen(slots=True)
class _Schedule(Gen):
    faults: tuple[str, ...]
    interval: int
    seed: int
    jitter: float
    step: int
    active: str | None
    next_time: int | None

    def _gap(self, step: int) -> int:
        rng = derive_rng(self.seed, f"nemesis-schedule/gap/{step}")
        return max(1, int(self.interval * (1 + self.jitter * (2 * rng.random() - 1))))

    def op(self, ctx: Context) -> Step:
        if self.next_time is None:
            first = attrs.evolve(self, next_time=ctx.time + self._gap(0))
            return Pending(first.next_time), first
        if ctx.time < self.next_time:
            return Pending(self.next_time), self
        thread = ctx.first_free()
        if thread is None:
            return PENDING, self
        if self.active is None:
            rng = derive_rng(self.seed, f"nemesis-schedule/fault/{self.step}")
            fault = self.faults[rng.randrange(len(self.faults))]
            f, active = fault_ops(fault)[0], fault
        else:
            f, active = fault_ops(self.active)[1], None
        inv = Invocation(ctx.time, thread, ctx.workers[thread], f)
        step = self.step + 1
        after = attrs.evolve(self, step=step, active=active, next_time=ctx.time + self._gap(step))
        return inv, after


def nemesis_schedule(
    faults: Sequence[str], interval: int, seed: int, *, jitter: float = 0.5
) -> Gen:
    """Forever: wait, start a fault chosen at random from ``faults``, wait, stop it, ...
    on the nemesis thread. Each wait is ``interval`` ns times a factor uniform in
    [1 - jitter, 1 + jitter]. Draws come from ``seed`` and the step number only, so the
    schedule does not move when the workload changes. The ops name the fault only
    (``value`` None): the nemesis's resolver picks the concrete targets (which nodes,
    which grudge) when it performs them, and records them in the completion."""
    if not faults:
        raise GeneratorError("nemesis_schedule needs at least one fault, e.g. ['partition']")
    if isinstance(faults, set | frozenset):
        raise GeneratorError("nemesis_schedule: pass faults as a list, not a set (order)")
    if interval <= 0:
        raise GeneratorError(f"nemesis_schedule: interval {interval} must be > 0 ns")
    if not 0 <= jitter < 1:
        raise GeneratorError(f"nemesis_schedule: jitter {jitter} must be in [0, 1)")
    schedule = _Schedule(tuple(faults), interval, seed, jitter, 0, None, None)
    return _OnThreads(is_nemesis, schedule)


def heal(faults: Sequence[str]) -> Gen:
    """Stop every fault of ``faults`` (in order), on the nemesis thread; for the final
    phase, whatever the schedule left running."""
    stops = [_Invoke(fault_ops(fault)[1], None, None) for fault in faults]
    return _OnThreads(is_nemesis, _Concat(tuple(stops)))


# --- the Kafka workload ---------------------------------------------------------------


def _keys(keys: Sequence[str], who: str) -> tuple[str, ...]:
    if isinstance(keys, str):
        raise GeneratorError(f"{who}: keys must be a list of keys, not the string {keys!r}")
    # A set's order is not part of the seed: sort it.
    out = tuple(sorted(keys)) if isinstance(keys, set | frozenset) else tuple(keys)
    if not out:
        raise GeneratorError(f"{who} needs at least one key, e.g. ['t-0']")
    return out


@attrs.frozen(slots=True)
class _Sends(Gen):
    keys: tuple[str, ...]
    next_value: int

    def op(self, ctx: Context) -> Step:
        thread = ctx.some_free()
        if thread is None:
            return PENDING, self
        key = self.keys[ctx.rng.randrange(len(self.keys))]
        inv = Invocation(ctx.time, thread, ctx.workers[thread], "send", key, self.next_value)
        return inv, _Sends(self.keys, self.next_value + 1)


def sends(keys: Sequence[str], values_from: int = 0) -> Gen:
    """Forever: send the next integer (``values_from``, then +1 each op) to a key chosen at
    random, so every value is unique, across keys too. One `sends` per run: a copy (under
    `each_thread`, `repeat`, `cycle`) counts on its own, so give copies disjoint
    ``values_from`` ranges."""
    return _Sends(_keys(keys, "sends"), values_from)


def _last_offset(value: Any) -> int | None:
    """The offset of the last record of an ``ok`` poll's value; None when it has none."""
    records = value.get("records") if isinstance(value, dict) else None
    if not isinstance(records, list) or not records:
        return None
    last = records[-1]
    if not isinstance(last, list | tuple) or not last or not isinstance(last[0], int):
        return None
    return last[0]


@attrs.frozen(slots=True)
class _Polls(Gen):
    keys: tuple[str, ...]
    p_rewind: float
    positions: Mapping[tuple[Process, str], int]
    """(process, key) -> where its next poll of that key starts."""
    inflight: Mapping[Process, int]
    """process -> the ``from`` of its poll in flight."""

    def op(self, ctx: Context) -> Step:
        thread = ctx.some_free()
        if thread is None:
            return PENDING, self
        process = ctx.workers[thread]
        key = self.keys[ctx.rng.randrange(len(self.keys))]
        rewind = ctx.rng.random() < self.p_rewind
        start = 0 if rewind else self.positions.get((process, key), 0)
        inv = Invocation(ctx.time, thread, process, "poll", key, {"from": start})
        inflight = {**self.inflight, process: start}
        return inv, _Polls(self.keys, self.p_rewind, self.positions, inflight)

    def update(self, ctx: Context, event: Op) -> Gen:
        if event.f != "poll" or event.type == "invoke" or event.process not in self.inflight:
            return self
        inflight = dict(self.inflight)
        start = inflight.pop(event.process)
        positions = self.positions
        if event.type == "info":
            # The process is retired (its thread goes on as a new one): forget it, so the
            # map holds live processes only.
            positions = {pk: o for pk, o in positions.items() if pk[0] != event.process}
        elif event.type == "ok" and event.key is not None:
            last = _last_offset(event.value)
            positions = {
                **positions,
                (event.process, event.key): start if last is None else last + 1,
            }
        return _Polls(self.keys, self.p_rewind, positions, inflight)


def polls(keys: Sequence[str], *, p_rewind: float = 0.1) -> Gen:
    """Forever: poll a key chosen at random from the polling process's position on it (one
    past the last offset its previous ``ok`` poll returned; 0 for a new process), or with
    probability ``p_rewind`` from the beginning. Positions come from completions
    (``update``)."""
    if not 0.0 <= p_rewind <= 1.0:
        raise GeneratorError(f"polls: p_rewind {p_rewind} must be a probability in [0, 1]")
    return _Polls(_keys(keys, "polls"), p_rewind, {}, {})


@attrs.frozen(slots=True)
class KeyRead:
    """Where the final read-back of one key stands."""

    position: int = 0
    owner: Thread | None = None
    """The thread that reads this key: one consumer per key, so its polls are successive
    polls of one process (a position handed between processes would look like a skip)."""
    inflight: Process | None = None
    strikes: int = 0
    """Polls in a row that made no progress (failed, or empty below the high watermark)."""
    done: bool = False


@attrs.frozen(slots=True)
class _FinalReads(Gen):
    keys: tuple[str, ...]
    max_strikes: int
    reads: Mapping[str, KeyRead]

    def op(self, ctx: Context) -> Step:
        if all(r.done for r in self.reads.values()):
            return EXHAUSTED, self
        for key in self.keys:
            read = self.reads[key]
            if read.done or read.inflight is not None:
                continue
            if read.owner is None:
                thread = ctx.first_free()
            else:
                thread = read.owner if read.owner in ctx.free else None
            if thread is None:
                continue
            process = ctx.workers[thread]
            value = {"from": read.position, "final": True}
            inv = Invocation(ctx.time, thread, process, "poll", key, value)
            reads = {**self.reads, key: attrs.evolve(read, owner=thread, inflight=process)}
            return inv, _FinalReads(self.keys, self.max_strikes, reads)
        return PENDING, self

    def update(self, ctx: Context, event: Op) -> Gen:
        read = self.reads.get(event.key) if event.key is not None else None
        if (
            event.f != "poll"
            or event.type == "invoke"
            or read is None
            or read.inflight != event.process
        ):
            return self
        assert event.key is not None
        last = _last_offset(event.value) if event.type == "ok" else None
        if last is not None and last >= read.position:
            new = attrs.evolve(read, position=last + 1, inflight=None, strikes=0)
        else:
            hw = event.value.get("hw") if isinstance(event.value, dict) else None
            caught_up = event.type == "ok" and (not isinstance(hw, int) or read.position >= hw)
            strikes = read.strikes + 1
            done = caught_up or strikes > self.max_strikes
            new = attrs.evolve(read, inflight=None, strikes=strikes, done=done)
        return _FinalReads(self.keys, self.max_strikes, {**self.reads, event.key: new})


def final_reads(keys: Sequence[str], *, max_strikes: int = 5) -> Gen:
    """Read every key back from offset 0 with polls invoked with ``{"from": N, "final":
    true}`` (the checker's final-read convention), each key by one thread, continuing from
    one past the last record returned while polls return records; a key is done at an
    empty poll at or past the high watermark it reports (or with no ``hw``). A key gives
    up after ``max_strikes`` polls in a row without progress (failed, or empty below
    ``hw``), so a broken cluster cannot keep the phase running forever."""
    ks = _keys(keys, "final_reads")
    return _FinalReads(ks, max_strikes, {k: KeyRead() for k in ks})


# --- the driver -----------------------------------------------------------------------


class Interpreter:
    """Runs a generator against a world: asks it for ops, keeps each thread busy until its
    op completes, gives a client thread a new process after an ``info``, numbers history
    events and feeds them back to the generator. Mutable (it is the driver); the generator
    inside stays a value.

    Protocol for a driver (the runner; `simulate`)::

        while True:
            result = interp.step(now)
            if isinstance(result, Invocation):   # perform it; its history op is emitted
                continue                         # ask again at the same time
            if result is EXHAUSTED and not interp.busy:
                break
            # wait until result.until (if any) or the next completion, whichever is first;
            # for each completion: interp.complete(time, thread, type, value)

    ``emit`` receives every history `Op` (invocations, completions, ``info`` markers) in
    order; ``on_log`` the text of ``log`` markers.
    """

    def __init__(
        self,
        gen: Gen,
        threads: Sequence[Thread],
        rng: random.Random,
        *,
        emit: Callable[[Op], None] | None = None,
        on_log: Callable[[str], None] | None = None,
        run: str | None = None,
    ) -> None:
        if len(set(threads)) != len(threads):
            raise GeneratorError(f"duplicate thread ids in {list(threads)}")
        self.gen = gen
        self.threads = tuple(sorted(threads, key=thread_order))
        self.clients = sum(1 for t in self.threads if is_client(t))
        self.workers: dict[Thread, Process] = {t: t for t in self.threads}
        self.free: set[Thread] = set(self.threads)
        self.running: dict[Thread, Op] = {}
        self.rng = rng
        self.emit = emit
        self.on_log = on_log
        self.run = run
        self.index = 0
        self.time = 0

    @property
    def busy(self) -> bool:
        return bool(self.running)

    def context(self, now: int) -> Context:
        return Context(now, self.threads, frozenset(self.free), dict(self.workers), self.rng)

    def _record(self, op: Op) -> None:
        self.index += 1
        if self.emit is not None:
            self.emit(op)

    def step(self, now: int) -> Result:
        """Ask the generator once at logical time ``now``; an invocation is dispatched."""
        if now < self.time:
            raise GeneratorError(f"time went backwards: {now} after {self.time}")
        self.time = now
        ctx = self.context(now)
        result, gen = self.gen.op(ctx)
        self.gen = gen
        if isinstance(result, Pending):
            if result.until is not None and result.until <= now:
                raise GeneratorError(
                    f"pending until {result.until}, not after now ({now}): a generator must "
                    f"return an op or a later time ({gen!r})"
                )
            return result
        if isinstance(result, Exhausted):
            return result
        if result.time != now:
            raise GeneratorError(f"op {result} is not for now ({now}): ops are invoked at once")
        if result.kind == "log":
            if self.on_log is not None:
                self.on_log(str(result.value))
            return result
        if result.kind == "info":
            self._record(result.to_op(self.index, self.run))
            return result
        thread = result.thread
        if thread is None or thread not in self.free:
            state = "busy" if thread in self.workers else "unknown"
            raise GeneratorError(f"op {result} is for a {state} thread: use a free one")
        if result.process != self.workers[thread]:
            raise GeneratorError(f"op {result} names a process its thread is not running")
        invoked = result.to_op(self.index, self.run)
        self._record(invoked)
        self.free.discard(thread)
        self.running[thread] = invoked
        self.gen = self.gen.update(self.context(now), invoked)
        return result

    def complete(self, now: int, thread: Thread, type_: str, value: Any) -> Op:
        """The op running on ``thread`` completed at ``now`` with ``type_`` (ok, fail,
        info) and ``value``; returns its history op. The nemesis completes with info."""
        if thread not in self.running:
            raise GeneratorError(f"thread {thread!r} has no op running to complete")
        if now < self.time:
            raise GeneratorError(f"time went backwards: {now} after {self.time}")
        self.time = now
        invoked = self.running.pop(thread)
        if thread == NEMESIS:
            type_ = "info"
        op = Op(self.index, now, invoked.process, type_, invoked.f, invoked.key, value, self.run)
        self._record(op)
        self.gen = self.gen.update(self.context(now), op)
        if type_ == "info" and is_client(thread):
            assert isinstance(invoked.process, int), invoked
            self.workers[thread] = invoked.process + self.clients
        self.free.add(thread)
        return op


# --- simulation -----------------------------------------------------------------------

Respond = Callable[[Invocation, random.Random], tuple[str, Any]]
"""A fake world: the completion (type, value) of an invocation."""


class IdealLog:
    """Fake completions from an ideal Kafka: one log per key, every op takes effect when
    invoked. ``send`` -> ok ``{"offset", "value"}``; ``poll`` -> ok ``{"records", "hw"}``,
    at most ``max_records`` from its ``from``; nemesis ops -> info; anything else -> ok,
    echoing its value. With ``p_fail``/``p_info``, a client op fails (no effect) or ends
    ``info`` (a send then took effect)."""

    def __init__(self, max_records: int = 4, p_fail: float = 0.0, p_info: float = 0.0):
        self.logs: dict[str, list[Any]] = {}
        self.max_records = max_records
        self.p_fail = p_fail
        self.p_info = p_info

    def __call__(self, inv: Invocation, rng: random.Random) -> tuple[str, Any]:
        if inv.thread == NEMESIS:
            return "info", inv.value
        r = rng.random()
        if r < self.p_fail:
            return "fail", None
        outcome = "info" if r < self.p_fail + self.p_info else "ok"
        if inv.f == "send" and inv.key is not None:
            log = self.logs.setdefault(inv.key, [])
            log.append(inv.value)
            if outcome == "info":
                return "info", inv.value
            return "ok", {"offset": len(log) - 1, "value": inv.value}
        if inv.f == "poll" and inv.key is not None:
            if outcome == "info":
                return "info", None
            log = self.logs.get(inv.key, [])
            start = inv.value.get("from", 0) if isinstance(inv.value, dict) else 0
            end = min(len(log), start + self.max_records)
            return "ok", {"records": [[o, log[o]] for o in range(start, end)], "hw": len(log)}
        return outcome, inv.value


@attrs.frozen
class Simulation:
    """What `simulate` did: every invocation (markers included) in order, the history it
    recorded, when it stopped and why (``exhausted``, ``until``: the time ran out,
    ``stalled``: pending with nothing in flight and no time to wait for, ``max-ops``)."""

    invocations: tuple[Invocation, ...]
    history: tuple[Op, ...]
    end: int
    outcome: str

    def ops(self, f: str | None = None) -> list[Invocation]:
        """The client and nemesis invocations (no markers), optionally of one ``f``."""
        return [i for i in self.invocations if not i.is_marker and (f is None or i.f == f)]


def simulate(
    gen: Gen,
    threads: int | Sequence[Thread] = 3,
    until: int = 60 * SECOND,
    seed: int = 0,
    latency: int | Callable[[Invocation, random.Random], int] = MILLISECOND,
    *,
    respond: Respond | None = None,
    nemesis_thread: bool = True,
    max_ops: int = 1_000_000,
) -> Simulation:
    """Run ``gen`` alone against fake completions, deterministically: the same arguments
    give the same `Simulation`. ``threads``: the number of client threads (plus
    ``"nemesis"`` when ``nemesis_thread``) or the thread ids. Nothing is invoked at or after
    ``until`` (ns); ops in flight then still complete. Each op takes ``latency`` ns (or
    ``latency(invocation, rng)``) and completes as ``respond`` says (default: a fresh
    `IdealLog`). Streams: ``generator`` (the generator's ``ctx.rng``), ``latency`` and
    ``world`` (``respond``), all derived from ``seed``."""
    if isinstance(threads, int):
        ids: list[Thread] = list(range(threads)) + ([NEMESIS] if nemesis_thread else [])
    else:
        ids = list(threads)
    world = respond if respond is not None else IdealLog()
    latency_rng = derive_rng(seed, "latency")
    world_rng = derive_rng(seed, "world")
    history: list[Op] = []
    invocations: list[Invocation] = []
    interp = Interpreter(gen, ids, derive_rng(seed, "generator"), emit=history.append)
    # (completion time, sequence, thread, type, value): the sequence keeps ties in order.
    inflight: list[tuple[int, int, Thread, str, Any]] = []
    sequence = 0
    now = 0
    outcome = "exhausted"

    def take_due(time: int) -> None:
        due = [c for c in inflight if c[0] <= time]
        due.sort(key=lambda c: (c[0], c[1]))
        for done in due:
            inflight.remove(done)
            interp.complete(done[0], done[2], done[3], done[4])

    while True:
        if len(invocations) >= max_ops:
            outcome = "max-ops"
            break
        result = interp.step(now)
        if isinstance(result, Invocation):
            invocations.append(result)
            if result.kind == "invoke":
                assert result.thread is not None
                took = latency if isinstance(latency, int) else latency(result, latency_rng)
                if took < 0:
                    raise GeneratorError(f"negative latency {took} for {result}")
                type_, value = world(result, world_rng)
                inflight.append((now + took, sequence, result.thread, type_, value))
                sequence += 1
                if took == 0:
                    take_due(now)
            continue
        if result is EXHAUSTED:
            break
        assert isinstance(result, Pending)
        next_completion = min((c[0] for c in inflight), default=None)
        wake = _sooner(result.until, next_completion)
        if wake is None:
            outcome = "stalled"
            break
        if wake >= until:
            outcome = "until"
            break
        now = max(now, wake)
        take_due(now)
    # Let what is in flight complete, so the history is well formed.
    for done in sorted(inflight, key=lambda c: (c[0], c[1])):
        now = max(now, done[0])
        interp.complete(now, done[2], done[3], done[4])
    return Simulation(tuple(invocations), tuple(history), now, outcome)


__all__ = [
    "EXHAUSTED",
    "MILLISECOND",
    "NEMESIS",
    "NIL",
    "PENDING",
    "SECOND",
    "Context",
    "Exhausted",
    "Gen",
    "GeneratorError",
    "IdealLog",
    "Interpreter",
    "Invocation",
    "KeyRead",
    "Pending",
    "Simulation",
    "any_of",
    "clients",
    "concat",
    "cycle",
    "delay",
    "derive_rng",
    "each_process",
    "each_thread",
    "fault_ops",
    "filter",
    "filter_ops",
    "final_reads",
    "heal",
    "info",
    "invoke",
    "is_client",
    "is_nemesis",
    "limit",
    "log",
    "map",
    "map_ops",
    "mix",
    "nemesis",
    "nemesis_schedule",
    "on_threads",
    "once",
    "phases",
    "polls",
    "repeat",
    "reserve",
    "sends",
    "simulate",
    "sleep",
    "stagger",
    "synchronize",
    "thread_order",
    "time_limit",
]
