"""``kmodel prove controller``: the controller spec's inductive invariants, proved with z3.

Exit codes as for every ``kmodel prove``: 0 every obligation proved and every action
instance enabled under the strengthening; 1 a checked counterexample to induction (or an
action never enabled); 2 unknown (a timeout, a CTI that could not be checked) or bad input.
"""

from __future__ import annotations

import time
from typing import NoReturn

import click

from jepsen_py.cli.common import echo_enabledness, emit_json, fail_input, proof_exit_code
from spec.proofs.controller.encoding import Config, EncodingError
from spec.proofs.controller.obligations import COUNTEREXAMPLE, PROVED, Result, Run, prove
from spec.proofs.controller.report import render_run, run_json


def exit_code(run: Run) -> int:
    """The run's exit code (``common.proof_exit_code``)."""
    return proof_exit_code(run.status == COUNTEREXAMPLE, run.status == PROVED, run.enabled)


def prove_controller(
    brokers: int | None,
    partitions: int | None,
    mode: str | None,
    bugs: tuple[str, ...],
    timeout: float,
    invariants: tuple[str, ...],
    actions: tuple[str, ...],
    json_mode: bool,
) -> NoReturn:
    if timeout <= 0:
        fail_input(f"--timeout must be positive, got {timeout}")
    try:
        config = Config(
            brokers=brokers or 2,
            partitions=partitions or 1,
            mode=mode or "zookeeper",
            bugs=frozenset(bugs),
        )
    except EncodingError as err:
        fail_input(str(err))

    def progress(result: Result) -> None:
        if result.status != PROVED:
            click.echo(f"  ... {result.invariant} / {result.action}: {result.status}", err=True)

    try:
        run = prove(
            config,
            list(invariants) or None,
            actions=list(actions) or None,
            timeout_ms=int(timeout * 1000),
            clock=time.perf_counter,
            progress=None if json_mode else progress,
        )
    except KeyError as err:
        fail_input(str(err.args[0]) if err.args else str(err))
    code = exit_code(run)
    if json_mode:
        payload = run_json(run)
        payload["exit_code"] = code
        emit_json(payload)
    else:
        click.echo(render_run(run).rstrip())
        echo_enabledness(run.enabled)
    raise SystemExit(code)
