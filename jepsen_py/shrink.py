"""Shrinking: from a failing run to a minimal run that still fails the same way.

The failing run's faults are read back from its history as an explicit schedule (each
nemesis completion names its concrete targets, `jepsen_py.nemesis.realized_schedule`), so
a candidate can drop faults one by one while the others hit the same nodes at the same
times. The seed stays: every candidate is a deterministic run of (config', seed), and a
candidate is kept when it fails *the same way*. A run that lost acknowledged writes keeps
losing them, by the same mechanism (``lost-acknowledged-write:last-replica-standing``,
`jepsen_py.explain`): that is what matters about it, whatever anomalies the loss shows as.
Any other run keeps its gravest violated anomaly type (``inconsistent-offsets``, ...; or
``nonlinearizable`` when the run broke linearizability and nothing else); an informational
anomaly is never a target.

Passes, each keeping the smallest failing candidate it finds, within a budget of runs:

1. **faults**: delta debugging (Zeller's ddmin) over the fault windows (a start with the
   stop that ends it);
2. **time**: the main phase cut short (binary search on the time limit; faults after the
   cut are dropped);
3. **clients**: fewer client threads;
4. **ops**: a lower rate (halved while the run fails: fewer ops all along), then a cap on
   the main phase's client ops (binary search: fewer ops at the end);
5. **recovery**: a shorter quiet period before the final reads;
6. **time** again, since fewer faults and ops may allow a shorter run.

Binary searches assume a monotone predicate, which a simulation is not: a shorter run that
happens to pass does not stop ddmin from trying smaller subsets, and whatever is kept
always fails (it was run). The result is written as a new store directory (test name
``<name>-shrunk``) whose ``test.json`` holds the explicit schedule, so ``kmodel replay``
reproduces it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from impl.timeline import Event, event_from_json
from jepsen_py.checker.verdict import KAFKA
from jepsen_py.generator import SECOND
from jepsen_py.history.op import Op
from jepsen_py.nemesis import ScheduleStep, fault_of_op, fault_windows, realized_schedule
from jepsen_py.replay import SEVERITY, ReplayError, load_config
from jepsen_py.runner.config import TestConfig
from jepsen_py.runner.drive import simulate_run
from jepsen_py.runner.outcome import HistoryCheck, RunOutcome, check_run
from jepsen_py.runner.run import run_test
from jepsen_py.store import StoreError, load_run

MIN_TIME_STEP_NS = SECOND
"""The time-limit search stops when the bounds are this close."""


class ShrinkError(ValueError):
    """A run that cannot be shrunk (it passed, or it is not a `kmodel test` run)."""


@attrs.frozen
class Figures:
    """The size of a run, for before/after comparisons."""

    history_ops: int
    client_ops: int
    faults: int
    time_limit_ns: int
    concurrency: int

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def figures_of(config: TestConfig, history: Sequence[Op]) -> Figures:
    client = sum(1 for op in history if op.is_client and op.type == "invoke")
    schedule = config.schedule if config.schedule is not None else ()
    starts = sum(1 for step in schedule if (fault_of_op(step.f) or ("", ""))[1] == "start")
    return Figures(len(history), client, starts, config.time_limit_ns, config.concurrency)


@attrs.define
class ShrinkResult:
    original: Path
    target: str
    seed: int
    before: Figures
    after: Figures
    config: TestConfig
    runs: int
    seconds: float
    outcome: RunOutcome
    log: list[str]

    @property
    def factor(self) -> float:
        return self.before.history_ops / max(1, self.after.history_ops)

    def to_json(self) -> dict[str, Any]:
        return {
            "original": str(self.original),
            "shrunk": str(self.outcome.run_dir) if self.outcome.run_dir else None,
            "anomaly": self.target,
            "seed": self.seed,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "factor": round(self.factor, 2),
            "runs": self.runs,
            "seconds": round(self.seconds, 3),
            "verdict": self.outcome.verdict_name,
            "violations": self.outcome.violations,
            "command": self.outcome.command,
        }


LOSS = "lost-acknowledged-write"
"""The failure type of a run whose complete final reads miss an acknowledged write."""


def anomaly_types(check: HistoryCheck) -> list[str]:
    """The failure types a run shows, gravest first: lost acknowledged writes, one type per
    mechanism that explains them (``lost-acknowledged-write:<mechanism>``), then the
    violations that decided its verdict (`jepsen_py.replay.SEVERITY`; ``nonlinearizable``
    only under ``--consistency linearizable``). Informational anomalies are never failures."""
    losses = []
    if check.lost_acknowledged_writes:
        losses = [f"{LOSS}:{m}" for m in check.loss_mechanisms] or [LOSS]
    types = set(check.violations)
    return losses + [name for name in SEVERITY if name in types]


def shows(target: str, types: Sequence[str]) -> bool:
    """Whether a run of failure ``types`` fails as ``target`` asks (plain ``LOSS``: a loss by
    any mechanism)."""
    return target in types or (target == LOSS and any(t.startswith(LOSS) for t in types))


def failure_types(
    config: TestConfig, history: list[Op], events: Sequence[Event], consistency: str = KAFKA
) -> list[str]:
    """`anomaly_types` of a simulated run checked under ``consistency``, its losses explained
    from its ``events``."""
    return anomaly_types(check_run(config, history, events, finished=True, consistency=consistency))


class _Search:
    """Runs candidates within the budget and keeps the current smallest failing run.

    A candidate is *accepted* when it fails the same way and its history is no bigger than
    the current one's; only the fault pass may grow the history (fewer faults come first:
    a run with fewer faults usually gets more ops through)."""

    def __init__(
        self,
        config: TestConfig,
        history: list[Op],
        seed: int,
        target: str,
        max_runs: int,
        progress: Callable[[str], None] | None,
        consistency: str = KAFKA,
    ) -> None:
        self.current = config
        self.history = history
        self.seed = seed
        self.consistency = consistency
        self.target = target
        self.max_runs = max_runs
        self.runs = 0
        self.progress = progress
        self.log: list[str] = []

    @property
    def exhausted(self) -> bool:
        return self.runs >= self.max_runs

    def attempt(self, candidate: TestConfig, what: str, *, may_grow: bool = False) -> bool:
        """Run ``candidate``; accept it (it becomes ``current``) if it fails the same way
        and is no bigger (``may_grow``: whatever its size)."""
        if self.exhausted:
            return False
        self.runs += 1
        simulation = simulate_run(candidate, self.seed)
        history = simulation.history
        types = failure_types(candidate, history, simulation.events, self.consistency)
        failed = shows(self.target, types)
        accepted = failed and (may_grow or len(history) <= len(self.history))
        if accepted:
            self.current, self.history = candidate, history
        outcome = "fails" if failed else "passes"
        if failed and not accepted:
            outcome += " but is bigger"
        line = f"run {self.runs}: {what}: {outcome} ({len(history)} history ops)"
        self.log.append(line)
        if self.progress is not None:
            self.progress(line)
        return accepted


def _starts(config: TestConfig) -> list[int]:
    return [
        step.time
        for step in config.schedule or ()
        if (fault_of_op(step.f) or ("", ""))[1] == "start"
    ]


def _cut(config: TestConfig, time_limit: int) -> TestConfig:
    schedule = tuple(s for s in (config.schedule or ()) if s.time < time_limit)
    return attrs.evolve(config, time_limit_ns=time_limit, schedule=schedule)


def _shift(config: TestConfig, by: int) -> TestConfig:
    """The run started ``by`` ns later into its faults: every fault ``by`` earlier (those
    before it dropped: only stops, as ``by`` never passes a start) and a shorter time."""
    schedule = tuple(
        attrs.evolve(s, time=s.time - by) for s in (config.schedule or ()) if s.time >= by
    )
    return attrs.evolve(config, time_limit_ns=config.time_limit_ns - by, schedule=schedule)


def _shrink_time(search: _Search) -> None:
    """Cut the end of the main phase (faults after the cut go), down to the last start."""
    lo, hi = max(_starts(search.current), default=0), search.current.time_limit_ns
    while hi - lo > MIN_TIME_STEP_NS and not search.exhausted:
        mid = (lo + hi) // 2
        if search.attempt(_cut(search.current, mid), f"time limit {mid / SECOND:g} s"):
            hi = mid
        else:
            lo = mid


def _shrink_front(search: _Search) -> None:
    """Cut the start of the main phase: bring every fault earlier, up to the first start."""
    config = search.current
    lo, hi = 0, min(_starts(config), default=config.time_limit_ns)
    while hi - lo > MIN_TIME_STEP_NS and not search.exhausted:
        mid = (lo + hi) // 2
        shifted = _shift(config, mid)
        if search.attempt(shifted, f"faults {mid / SECOND:g} s earlier, run shorter"):
            lo = mid
        else:
            hi = mid


def _with_units(config: TestConfig, units: Sequence[tuple[ScheduleStep, ...]]) -> TestConfig:
    steps = sorted((s for unit in units for s in unit), key=lambda s: s.time)
    return attrs.evolve(config, schedule=tuple(steps))


def _ddmin(search: _Search) -> None:
    """Zeller's ddmin over the fault windows: try subsets, then complements, refining."""
    config = search.current
    units = fault_windows(list(config.schedule or ()))
    n = 2
    while len(units) >= 2 and not search.exhausted:
        size = len(units) // n
        chunks = [units[i : i + size] for i in range(0, len(units), size)] if size else []
        reduced = False
        for i, chunk in enumerate(chunks):
            what = f"{len(chunk)} of {len(units)} faults"
            if search.attempt(_with_units(config, chunk), what, may_grow=True):
                units, n, reduced = chunk, 2, True
                break
            complement = [u for j, c in enumerate(chunks) if j != i for u in c]
            what = f"{len(complement)} of {len(units)} faults"
            if n > 2 and search.attempt(_with_units(config, complement), what, may_grow=True):
                units, n, reduced = complement, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(units):
                break
            n = min(len(units), 2 * n)
    if len(units) == 1:
        search.attempt(_with_units(config, []), "no faults at all", may_grow=True)


def _shrink_clients(search: _Search) -> None:
    for threads in range(1, search.current.concurrency):
        candidate = attrs.evolve(search.current, concurrency=threads)
        if search.attempt(candidate, f"{threads} client threads"):
            return


def _shrink_rate(search: _Search) -> None:
    """Fewer ops all along: a lower rate (each try is a different run, so a few factors)."""
    progress = True
    while progress and search.current.rate > 1 and not search.exhausted:
        progress = False
        for factor in (0.25, 0.5, 0.75):
            rate = max(1.0, round(search.current.rate * factor, 3))
            if search.attempt(attrs.evolve(search.current, rate=rate), f"{rate:g} ops/s"):
                progress = True
                break


def _shrink_ops(search: _Search, ops: int) -> None:
    """Fewer ops at the end: a cap on the main phase's client ops (binary search)."""
    lo, hi = 0, ops
    while hi - lo > 1 and not search.exhausted:
        mid = (lo + hi) // 2
        if search.attempt(attrs.evolve(search.current, max_ops=mid), f"at most {mid} client ops"):
            hi = mid
        else:
            lo = mid


def _shrink_recovery(search: _Search) -> None:
    for recovery in (2 * SECOND, 5 * SECOND, 10 * SECOND):
        if recovery >= search.current.recovery_ns:
            break
        candidate = attrs.evolve(search.current, recovery_ns=recovery)
        if search.attempt(candidate, f"recovery {recovery / SECOND:g} s"):
            return


def _main_phase_ops(history: Sequence[Op], time_limit: int) -> int:
    return sum(1 for op in history if op.is_client and op.type == "invoke" and op.time < time_limit)


def shrink(
    path: str | os.PathLike[str],
    *,
    anomaly: str | None = None,
    max_runs: int = 200,
    store_root: str | os.PathLike[str] | None = None,
    reports: bool = True,
    progress: Callable[[str], None] | None = None,
) -> ShrinkResult:
    """Shrink the failing run at ``path``; see the module docstring. ``anomaly`` picks the
    failure type to keep (default: the run's first); ``store_root`` is where the shrunk
    run is written (default: the store the original lives in)."""
    started = time.perf_counter()
    try:
        loaded = load_run(path)
    except StoreError as exc:
        raise ShrinkError(str(exc)) from exc
    try:
        config, seed = load_config(loaded.test, str(loaded.run.path / "test.json"))
    except ReplayError as exc:
        raise ShrinkError(str(exc)) from exc
    history = loaded.history
    events = [event_from_json(e) for e in loaded.run.cluster_events()]
    if not events:
        events = list(simulate_run(config, seed).events)  # stored without cluster.jsonl
    consistency = str((loaded.run.results() or {}).get("consistency", KAFKA))
    found = failure_types(config, history, events, consistency)
    if not found:
        raise ShrinkError(
            f"{loaded.run.path}: the run shows no anomaly (nothing to shrink); shrink a run "
            "whose `kmodel test` verdict was invalid"
        )
    target = anomaly if anomaly is not None else found[0]
    if not shows(target, found):
        raise ShrinkError(f"{loaded.run.path}: the run shows {', '.join(found)}, not {target}")
    explicit = attrs.evolve(
        config,
        schedule=tuple(realized_schedule(history, before=config.time_limit_ns)),
        name=f"{config.name}-shrunk",
    )
    search = _Search(explicit, history, seed, target, max_runs, progress, consistency)
    if config.schedule is None and not search.attempt(
        explicit, "the faults as an explicit schedule", may_grow=True
    ):
        raise ShrinkError(
            f"{loaded.run.path}: replaying its faults as an explicit schedule no longer shows "
            f"{target}; the run cannot be shrunk over its faults"
        )
    _ddmin(search)
    _shrink_front(search)
    _shrink_time(search)
    _shrink_clients(search)
    _shrink_rate(search)
    _shrink_ops(search, _main_phase_ops(search.history, search.current.time_limit_ns))
    _shrink_recovery(search)
    _shrink_front(search)
    _shrink_time(search)
    current = search.current
    root = store_root if store_root is not None else loaded.run.path.parent.parent
    outcome = run_test(
        current,
        seed,
        store_root=root,
        reports=reports,
        consistency=consistency,
        extra_results={
            "shrunk_from": str(loaded.run.path),
            "shrink": {"anomaly": target, "runs": search.runs},
        },
    )
    if not shows(target, anomaly_types(outcome.check)):  # pragma: no cover - determinism
        raise ShrinkError(f"the shrunk run no longer shows {target}: a determinism bug")
    before = figures_of(explicit, history)
    after = figures_of(current, outcome.history)
    return ShrinkResult(
        loaded.run.path,
        target,
        seed,
        before,
        after,
        current,
        search.runs,
        time.perf_counter() - started,
        outcome,
        search.log,
    )


__all__ = [
    "LOSS",
    "Figures",
    "ShrinkError",
    "ShrinkResult",
    "anomaly_types",
    "failure_types",
    "shrink",
]
