"""Running a generator alone against fake completions (`IdealLog`), for tests."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from jepsen_py.generator.core import (
    EXHAUSTED,
    MILLISECOND,
    NEMESIS,
    SECOND,
    Gen,
    GeneratorError,
    Invocation,
    Pending,
    Thread,
    derive_rng,
    sooner,
)
from jepsen_py.generator.interpreter import Interpreter
from jepsen_py.history.op import Op

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
        wake = sooner(result.until, next_completion)
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
