"""The nemesis schedule: alternating fault start/stop ops on the nemesis thread, and heal.

The ops are named by the fault vocabulary (``jepsen_py.fault_verbs``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from jepsen_py.fault_verbs import fault_ops
from jepsen_py.generator.combinators import concat, invoke, nemesis
from jepsen_py.generator.core import (
    PENDING,
    Context,
    Gen,
    GeneratorError,
    Invocation,
    Pending,
    Step,
    derive_rng,
)
from jepsen_py.history.op import FINAL


def _gap(schedule: _Schedule | _Overlapping, step: int) -> int:
    """The time before a schedule's op ``step``: its interval, jittered from the seed."""
    rng = derive_rng(schedule.seed, f"nemesis-schedule/gap/{step}")
    return max(1, int(schedule.interval * (1 + schedule.jitter * (2 * rng.random() - 1))))


def _next_gap(schedule: _Schedule | _Overlapping, step: int, started: str | None) -> int:
    """The time before op ``step``: its jittered gap, and after a start (``started``) the
    started fault's hold added, then stretched to its settle (``nemesis_schedule``)."""
    gap = _gap(schedule, step)
    if started is None:
        return gap
    return max(gap + _held(schedule.holds, started), _held(schedule.settles, started))


def _held(holds: tuple[tuple[str, int], ...], fault: str | None) -> int:
    """How much longer the op after ``fault``'s start waits (0 for most faults, and after
    a stop: None)."""
    return next((wait for name, wait in holds if name == fault), 0)


def _waiting(schedule: _Schedule | _Overlapping, ctx: Context) -> Step | None:
    """A schedule's step while it waits (its first gap, the time of its next op, a free
    thread); None when its op is due and a thread is free for it."""
    if schedule.next_time is None:
        first = attrs.evolve(schedule, next_time=ctx.time + _gap(schedule, 0))
        return Pending(first.next_time), first
    if ctx.time < schedule.next_time:
        return Pending(schedule.next_time), schedule
    if ctx.first_free() is None:
        return PENDING, schedule
    return None


@attrs.frozen(slots=True)
class _Schedule(Gen):
    faults: tuple[str, ...]
    interval: int
    seed: int
    jitter: float
    step: int
    active: str | None
    next_time: int | None
    holds: tuple[tuple[str, int], ...] = ()
    """Fault -> how much longer the op after its start waits (``nemesis_schedule``)."""
    settles: tuple[tuple[str, int], ...] = ()
    """Fault -> the least time from its start to the op after it (``nemesis_schedule``)."""

    def op(self, ctx: Context) -> Step:
        waiting = _waiting(self, ctx)
        if waiting is not None:
            return waiting
        thread = ctx.first_free()
        assert thread is not None
        if self.active is None:
            rng = derive_rng(self.seed, f"nemesis-schedule/fault/{self.step}")
            fault = self.faults[rng.randrange(len(self.faults))]
            f, active = fault_ops(fault)[0], fault
        else:
            f, active = fault_ops(self.active)[1], None
        inv = Invocation(ctx.time, thread, ctx.workers[thread], f)
        step = self.step + 1
        gap = _next_gap(self, step, active)
        after = attrs.evolve(self, step=step, active=active, next_time=ctx.time + gap)
        return inv, after


@attrs.frozen(slots=True)
class _Overlapping(Gen):
    """Up to ``max_active`` faults at once: each step starts a fault not running (when
    fewer than ``max_active`` run, and always when none does) or stops one that runs, so
    faults compound (a partition, then a kill inside it, then the heal)."""

    faults: tuple[str, ...]
    interval: int
    seed: int
    jitter: float
    max_active: int
    step: int
    active: tuple[str, ...]
    next_time: int | None
    outer: frozenset[str] = frozenset()
    """Nested mode (non-empty): a compound opens with one of these faults (a partition),
    the faults started inside it are the others, and faults stop innermost first."""
    holds: tuple[tuple[str, int], ...] = ()
    """Fault -> how much longer the op after its start waits (``nemesis_schedule``: an
    outer fault's ``hold``, a fault that waits for the protocol)."""
    settles: tuple[tuple[str, int], ...] = ()
    """Fault -> the least time from its start to the op after it (``nemesis_schedule``)."""

    def op(self, ctx: Context) -> Step:
        waiting = _waiting(self, ctx)
        if waiting is not None:
            return waiting
        thread = ctx.first_free()
        assert thread is not None
        rng = derive_rng(self.seed, f"nemesis-schedule/overlap/{self.step}")
        idle = [f for f in self.faults if f not in self.active]
        start = idle and (
            not self.active or (len(self.active) < self.max_active and rng.random() < 0.5)
        )
        if start and self.outer:
            # Open a compound with an outer fault, then start inner ones inside it.
            wanted = [f for f in idle if (f in self.outer) == (not self.active)]
            idle = wanted or idle
        if start:
            fault = idle[rng.randrange(len(idle))]
            f, active = fault_ops(fault)[0], (*self.active, fault)
        else:
            pick = len(self.active) - 1 if self.outer else rng.randrange(len(self.active))
            fault = self.active[pick]
            f, active = fault_ops(fault)[1], tuple(a for a in self.active if a != fault)
        inv = Invocation(ctx.time, thread, ctx.workers[thread], f)
        step = self.step + 1
        gap = _next_gap(self, step, fault if start else None)
        after = attrs.evolve(self, step=step, active=active, next_time=ctx.time + gap)
        return inv, after


def nemesis_schedule(
    faults: Sequence[str],
    interval: int,
    seed: int,
    *,
    jitter: float = 0.5,
    max_active: int = 1,
    outer: Sequence[str] = (),
    hold: int = 0,
    holds: Mapping[str, int] | None = None,
    settles: Mapping[str, int] | None = None,
) -> Gen:
    """Forever: wait, start a fault chosen at random from ``faults``, wait, stop it, ...
    on the nemesis thread (with ``max_active`` > 1, up to that many faults overlap: each
    step starts another or stops one, at random; swarm testing draws it). Each wait is
    ``interval`` ns times a factor uniform in [1 - jitter, 1 + jitter]. Draws come from
    ``seed`` and the step number only, so the schedule does not move when the workload
    changes. With ``outer`` (and ``max_active`` > 1) faults nest: nothing running, a fault
    of ``outer`` starts (a partition); inside it, the others (a kill of the isolated
    leader); stops go innermost first, the outer one last (the heal) -- Jepsen's compound
    nemesis, drawn at random -- and the op after an outer start waits ``hold`` ns more
    (long enough for the partition to shrink an ISR). ``holds`` gives faults that wait
    for the protocol (one that cuts a follower off and acts once the ISR drops it) the
    same: the op after such a fault starts waits that much longer. ``settles`` gives faults
    that play out over a few steps of their own (leadership moved, then a cut lifted) the
    least time from their start to the next op: a shorter gap is stretched to it, a longer
    one kept, so that the next op neither cuts the fault short nor lands in the middle of
    it. The ops name the fault only
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
    if max_active < 1:
        raise GeneratorError(f"nemesis_schedule: max_active {max_active} must be >= 1")
    waits = dict(holds or {})
    least = tuple(sorted((settles or {}).items()))
    if max_active > 1:
        for fault in outer:
            waits[fault] = waits.get(fault, 0) + hold
        overlapping = _Overlapping(
            tuple(faults),
            interval,
            seed,
            jitter,
            max_active,
            0,
            (),
            None,
            frozenset(outer),
            tuple(sorted(waits.items())),
            least,
        )
        return nemesis(overlapping)
    schedule = _Schedule(
        tuple(faults), interval, seed, jitter, 0, None, None, tuple(sorted(waits.items())), least
    )
    return nemesis(schedule)


def heal(faults: Sequence[str]) -> Gen:
    """Stop every fault of ``faults`` (in order), on the nemesis thread; for the final
    phase, whatever the schedule left running. Each stop's value marks it final
    (``{"final": true}``, ``jepsen_py.history.op.FINAL``): a fault that would outlast its
    stop (a pause armed for the controller's next decision) does not outlast that one."""
    final = {FINAL: True}
    return nemesis(concat(*(invoke(fault_ops(fault)[1], value=final) for fault in faults)))
