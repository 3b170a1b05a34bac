"""Shrinking: from a failing run to a minimal run that still fails the same way.

The failing run's faults are read back from its history as an explicit schedule (each
nemesis completion names its concrete targets, `jepsen_py.nemesis.realized_schedule`), so
a candidate can drop faults one by one while the others hit the same nodes at the same
times. The seed stays: every candidate is a deterministic run of (config', seed), and a
candidate is kept when its history shows the *same anomaly type* (``lost-write``,
``inconsistent-offsets``, ...; or ``nonlinearizable`` when the run broke linearizability
and nothing else).

Passes, each keeping the smallest failing candidate it finds, within a budget of runs:

1. **time**: the main phase cut short (binary search on the time limit; faults after the
   cut are dropped);
2. **faults**: delta debugging (Zeller's ddmin) over the fault windows (a start with the
   stop that ends it);
3. **clients**: fewer client threads;
4. **ops**: a cap on the main phase's client ops (binary search);
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

from jepsen_py.generator import SECOND
from jepsen_py.history.op import Op
from jepsen_py.nemesis import ScheduleStep, fault_of_op, fault_windows, realized_schedule
from jepsen_py.replay import ReplayError, load_config
from jepsen_py.runner import RunOutcome, TestConfig, check_history, run_test, simulate_run
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
            "verdict": self.outcome.verdict,
            "violations": self.outcome.violations,
            "command": self.outcome.results.get("command"),
        }


def anomaly_types(results: dict[str, Any]) -> list[str]:
    """The failure types a run shows: its violated anomaly types, or ``nonlinearizable``
    when linearizability alone failed."""
    types = list(results["violations"])
    if not types and results["linearizable"]["verdict"] == "illegal":
        types = ["nonlinearizable"]
    return types


class _Search:
    """Runs candidates, counts them, and remembers the smallest failing one."""

    def __init__(
        self,
        seed: int,
        target: str,
        max_runs: int,
        progress: Callable[[str], None] | None,
    ) -> None:
        self.seed = seed
        self.target = target
        self.max_runs = max_runs
        self.runs = 0
        self.progress = progress
        self.log: list[str] = []

    @property
    def exhausted(self) -> bool:
        return self.runs >= self.max_runs

    def fails(self, config: TestConfig, what: str) -> bool:
        if self.exhausted:
            return False
        self.runs += 1
        history, _ = simulate_run(config, self.seed)
        failed = self.target in anomaly_types(check_history(history))
        line = f"run {self.runs}: {what}: {'fails' if failed else 'passes'}"
        self.log.append(line)
        if self.progress is not None:
            self.progress(line)
        return failed


def _cut(config: TestConfig, time_limit: int) -> TestConfig:
    schedule = tuple(s for s in (config.schedule or ()) if s.time < time_limit)
    return attrs.evolve(config, time_limit_ns=time_limit, schedule=schedule)


def _shrink_time(search: _Search, config: TestConfig) -> TestConfig:
    lo, hi = 0, config.time_limit_ns
    while hi - lo > MIN_TIME_STEP_NS and not search.exhausted:
        mid = (lo + hi) // 2
        candidate = _cut(config, mid)
        if search.fails(candidate, f"time limit {mid / SECOND:g} s"):
            hi, config = mid, candidate
        else:
            lo = mid
    return config


def _with_units(config: TestConfig, units: Sequence[tuple[ScheduleStep, ...]]) -> TestConfig:
    steps = sorted((s for unit in units for s in unit), key=lambda s: s.time)
    return attrs.evolve(config, schedule=tuple(steps))


def _ddmin(search: _Search, config: TestConfig) -> TestConfig:
    """Zeller's ddmin over the fault windows: try subsets, then complements, refining."""
    units = fault_windows(list(config.schedule or ()))
    n = 2
    while len(units) >= 2 and not search.exhausted:
        size = len(units) // n
        chunks = [units[i : i + size] for i in range(0, len(units), size)] if size else []
        reduced = False
        for i, chunk in enumerate(chunks):
            if search.fails(_with_units(config, chunk), f"{len(chunk)} of {len(units)} faults"):
                units, n, reduced = chunk, 2, True
                break
            complement = [u for j, c in enumerate(chunks) if j != i for u in c]
            if n > 2 and search.fails(
                _with_units(config, complement), f"{len(complement)} of {len(units)} faults"
            ):
                units, n, reduced = complement, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(units):
                break
            n = min(len(units), 2 * n)
    if len(units) == 1 and search.fails(_with_units(config, []), "no faults at all"):
        units = []
    return _with_units(config, units)


def _shrink_clients(search: _Search, config: TestConfig) -> TestConfig:
    for threads in range(1, config.concurrency):
        candidate = attrs.evolve(config, concurrency=threads)
        if search.fails(candidate, f"{threads} client threads"):
            return candidate
    return config


def _shrink_ops(search: _Search, config: TestConfig, ops: int) -> TestConfig:
    lo, hi = 0, ops
    best = config
    while hi - lo > 1 and not search.exhausted:
        mid = (lo + hi) // 2
        candidate = attrs.evolve(config, max_ops=mid)
        if search.fails(candidate, f"at most {mid} client ops"):
            hi, best = mid, candidate
        else:
            lo = mid
    return best


def _shrink_recovery(search: _Search, config: TestConfig) -> TestConfig:
    for recovery in (2 * SECOND, 5 * SECOND, 10 * SECOND):
        if recovery >= config.recovery_ns:
            break
        candidate = attrs.evolve(config, recovery_ns=recovery)
        if search.fails(candidate, f"recovery {recovery / SECOND:g} s"):
            return candidate
    return config


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
    found = anomaly_types(check_history(history))
    if not found:
        raise ShrinkError(
            f"{loaded.run.path}: the run shows no anomaly (nothing to shrink); shrink a run "
            "whose `kmodel test` verdict was invalid"
        )
    target = anomaly if anomaly is not None else found[0]
    if target not in found:
        raise ShrinkError(f"{loaded.run.path}: the run shows {', '.join(found)}, not {target}")
    search = _Search(seed, target, max_runs, progress)
    explicit = attrs.evolve(
        config,
        schedule=tuple(realized_schedule(history, before=config.time_limit_ns)),
        name=f"{config.name}-shrunk",
    )
    if config.schedule is None and not search.fails(explicit, "the faults as an explicit schedule"):
        raise ShrinkError(
            f"{loaded.run.path}: replaying its faults as an explicit schedule no longer shows "
            f"{target}; the run cannot be shrunk over its faults"
        )
    current = explicit
    current = _shrink_time(search, current)
    current = _ddmin(search, current)
    current = _shrink_clients(search, current)
    last, _ = simulate_run(current, seed)
    current = _shrink_ops(search, current, _main_phase_ops(last, current.time_limit_ns))
    current = _shrink_recovery(search, current)
    current = _shrink_time(search, current)
    root = store_root if store_root is not None else loaded.run.path.parent.parent
    outcome = run_test(
        current,
        seed,
        store_root=root,
        reports=reports,
        extra_results={
            "shrunk_from": str(loaded.run.path),
            "shrink": {"anomaly": target, "runs": search.runs},
        },
    )
    if target not in anomaly_types(outcome.results):  # pragma: no cover - determinism
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


__all__ = ["Figures", "ShrinkError", "ShrinkResult", "anomaly_types", "shrink"]
