"""The driver's half: the `Interpreter` asks the generator, keeps threads busy until their
op completes, replaces processes after ``info`` and builds the history."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from jepsen_py.generator.core import (
    NEMESIS,
    Context,
    Exhausted,
    Gen,
    GeneratorError,
    Pending,
    Process,
    Result,
    Thread,
    is_client,
    thread_order,
)
from jepsen_py.history.op import Op

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
