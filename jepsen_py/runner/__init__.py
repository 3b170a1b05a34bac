"""The runner: a Kafka workload and the nemesis on the simulated cluster, a store
directory, and a verdict (Jepsen's ``jepsen.core/run!``).

A run is a function of (code, `TestConfig`, seed): the same three give the same history,
byte for byte (`RunOutcome.history_hash`). No wall clock enters the run; only the store
directory's name and the timings of ``results.json`` read it. One module per concern:

- `jepsen_py.runner.config`: what a run depends on (`TestConfig`), durations, the command
  that reproduces a run, swarm configurations;
- `jepsen_py.runner.drive`: the run's generator and the driver that steps the simulated
  cluster (`simulate_run`), the history's hash;
- `jepsen_py.runner.outcome`: the verdict as typed records (`HistoryCheck`, `RunOutcome`)
  and the checks that build them (`check_history`);
- `jepsen_py.runner.reports`: ``timeline.html`` and the plots;
- `jepsen_py.runner.run`: all of it, with the store (`run_test`).

This package re-exports what callers use, so ``from jepsen_py.runner import run_test``
works; modules of the runner import each other directly, never this package.
"""

from __future__ import annotations

from jepsen_py.runner.config import (
    ConfigError,
    TestConfig,
    format_duration,
    parse_duration,
    reproduce_command,
    swarm_config,
)
from jepsen_py.runner.drive import (
    HistoryHash,
    Observer,
    RunFigures,
    Simulation,
    build_generator,
    history_file_hash,
    simulate_run,
)
from jepsen_py.runner.outcome import (
    FinalReads,
    HistoryCheck,
    Linearizability,
    RunOutcome,
    Timings,
    check_history,
    check_run,
    completion_counts,
    explain_run_divergences,
    explain_run_losses,
    fault_counts,
    final_read_status,
    missing_from_final_read,
    settle_run,
    verdict_name,
)
from jepsen_py.runner.reports import verdict_banner, write_reports
from jepsen_py.runner.run import run_test

__all__ = [
    "ConfigError",
    "FinalReads",
    "HistoryCheck",
    "HistoryHash",
    "Linearizability",
    "Observer",
    "RunFigures",
    "RunOutcome",
    "Simulation",
    "TestConfig",
    "Timings",
    "build_generator",
    "check_history",
    "check_run",
    "completion_counts",
    "explain_run_divergences",
    "explain_run_losses",
    "fault_counts",
    "final_read_status",
    "format_duration",
    "history_file_hash",
    "missing_from_final_read",
    "parse_duration",
    "reproduce_command",
    "run_test",
    "settle_run",
    "simulate_run",
    "swarm_config",
    "verdict_banner",
    "verdict_name",
    "write_reports",
]
