"""Combinators: single ops and markers, counting and repeating, time, sequencing and
concurrency, and thread scoping (Jepsen's ``jepsen.generator`` combinators)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from jepsen_py.generator.core import (
    EXHAUSTED,
    NIL,
    PENDING,
    Context,
    Exhausted,
    Gen,
    GeneratorError,
    Invocation,
    Pending,
    Process,
    Step,
    Thread,
    is_client,
    is_nemesis,
    sooner,
)
from jepsen_py.history.op import Op

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
            return Pending(sooner(result.until, cutoff)), _TimeLimit(self.dt, gen, cutoff)
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
            until = sooner(until, result.until)
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
                until = sooner(until, result.until)
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
            until = sooner(until, result.until)
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
