"""A whole run: simulate, check, and write the store directory (``test.json`` first,
``history.jsonl`` as the run goes, ``cluster.jsonl``, then ``results.json`` and the
reports). The one place that joins the runner's parts (`jepsen_py.runner.drive`,
`jepsen_py.runner.outcome`, `jepsen_py.runner.reports`) with the store."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from impl.timeline import event_to_json
from jepsen_py.checker.verdict import KAFKA
from jepsen_py.history.op import Op
from jepsen_py.runner.config import TestConfig, reproduce_command
from jepsen_py.runner.drive import HistoryHash, Observer, simulate_run
from jepsen_py.runner.outcome import RunOutcome, Timings, check_run, fault_counts
from jepsen_py.runner.reports import write_reports
from jepsen_py.store import HistoryLines, create_run


def run_test(
    config: TestConfig,
    seed: int,
    *,
    store_root: str | os.PathLike[str] | None = None,
    reports: bool = True,
    observer: Observer | None = None,
    extra_results: Mapping[str, Any] | None = None,
    on_checked: Callable[[RunOutcome], None] | None = None,
    consistency: str = KAFKA,
) -> RunOutcome:
    """Run, check, and (with ``store_root``) write the store directory: ``test.json``
    first, ``history.jsonl`` as the run goes, then ``results.json`` and the reports.
    ``on_checked`` sees the outcome as soon as the verdict is known, before the reports
    (which take a second or two) are rendered; ``seconds.wall`` is the time to the
    verdict, ``seconds.reports`` the rendering's (in the outcome returned)."""
    started = time.perf_counter()
    hasher = HistoryHash()
    run = None
    writer: HistoryLines | None = None
    if store_root is not None:
        run = create_run(config.name, seed=seed, config=config.to_json(), root=store_root)
        writer = run.history_lines()

    def emit(op: Op, line: bytes) -> None:
        hasher.add(line)
        if writer is not None:
            writer.write(line)

    try:
        simulation = simulate_run(config, seed, emit=emit, observer=observer)
    finally:
        if writer is not None:
            writer.close()
    simulated = time.perf_counter() - started
    history, events = simulation.history, simulation.events
    if run is not None:
        run.write_cluster_events(event_to_json(e) for e in events)
    check = check_run(
        config, history, events, finished=simulation.figures.finished, consistency=consistency
    )
    store_dir = str(run.path) if run is not None else None
    command = reproduce_command(config, seed, store_dir)
    outcome = RunOutcome(
        config=config,
        seed=seed,
        history=history,
        history_hash=hasher.hexdigest(),
        check=check,
        figures=simulation.figures,
        faults=fault_counts(history),
        command=command + ("" if consistency == KAFKA else f" --consistency {consistency}"),
        seconds=Timings(
            simulation=round(simulated, 3), wall=round(time.perf_counter() - started, 3)
        ),
        run_dir=run.path if run is not None else None,
        extra=dict(extra_results or {}),
    )
    if run is not None:
        run.write_results(outcome.to_json())
    if on_checked is not None:
        on_checked(outcome)
    if run is not None and reports:
        rendered = time.perf_counter()
        write_reports(history, run.path, title=f"{config.name} seed {seed}", check=check)
        took = round(time.perf_counter() - rendered, 3)
        outcome = attrs.evolve(outcome, seconds=attrs.evolve(outcome.seconds, reports=took))
        run.write_results(outcome.to_json())
    return outcome


__all__ = ["run_test"]
