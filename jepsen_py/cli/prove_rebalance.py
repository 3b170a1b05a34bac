"""``kmodel prove rebalance``: the rebalance spec's partition-state invariants, proved
inductive with z3 (``spec.proofs.rebalance``).

Proved: ``LeaderAndIsrWellFormed`` (with the auxiliary ``ReassignmentWellFormed``) and
``ReassignmentKeepsMinIsr``, for any sequence of elections, ISR changes, controlled
shutdowns, crashes, restarts and reassignments. ``NoAckedAllWriteLost`` is not encoded:
``kmodel check rebalance`` checks it within bounds.

Exit codes as for every ``kmodel prove``: 0 every obligation proved and every action
instance enabled under the strengthening; 1 a counterexample to induction (or an action
never enabled); 2 unknown (a timeout) or bad input.
"""

from __future__ import annotations

import time
from typing import NoReturn

import click

from jepsen_py.cli.common import echo_enabledness, emit_json, fail_input, proof_exit_code
from spec.proofs.rebalance import COUNTEREXAMPLE, PROVED, Config, Run, prove, render_run, run_json


def exit_code(run: Run) -> int:
    """The run's exit code (``common.proof_exit_code``)."""
    return proof_exit_code(run.status == COUNTEREXAMPLE, run.status == PROVED, run.enabled)


def prove_rebalance(
    brokers: int | None,
    min_isr: int | None,
    bugs: tuple[str, ...],
    timeout: float,
    json_mode: bool,
) -> NoReturn:
    if timeout <= 0:
        fail_input(f"--timeout must be positive, got {timeout}")
    try:
        config = Config(brokers=brokers or 3, min_isr=min_isr or 2, bugs=frozenset(bugs))
    except ValueError as err:
        fail_input(str(err))
    run = prove(config, timeout_ms=int(timeout * 1000), clock=time.perf_counter)
    code = exit_code(run)
    if json_mode:
        payload = run_json(run)
        payload["exit_code"] = code
        emit_json(payload)
    else:
        click.echo(render_run(run).rstrip())
        echo_enabledness(run.enabled)
        click.echo("not encoded: NoAckedAllWriteLost (checked by kmodel check rebalance)")
    raise SystemExit(code)
