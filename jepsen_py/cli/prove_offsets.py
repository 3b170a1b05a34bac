"""``kmodel prove offsets``: the offsets spec's invariants, proved inductive with z3
(``spec.proofs.offsets``).

Proved, for every generation, coordinator and number of expiries, crashes and coordinator
moves: ``AtLeastOnce`` (committing after processing), ``CommittedWithinOwnerProgress``,
``StaleGenerationNeverCommits`` and ``CommittedNeverRegresses``, relative to the auxiliary
invariants of ``spec.proofs.offsets.obligations``. Committing before processing,
``AtLeastOnce`` is false and the run reports its counterexample to induction; the liveness
property ``WorkCommitted`` is not an invariant and is checked by ``kmodel check offsets``.

Exit codes as for every ``kmodel prove``: 0 every obligation proved and every action
instance enabled under the strengthening; 1 a counterexample to induction (or an action
never enabled); 2 unknown (a timeout) or bad input.
"""

from __future__ import annotations

import time
from typing import Any, NoReturn

import click

from jepsen_py.cli.common import echo_enabledness, emit_json, fail_input, proof_exit_code
from spec.framework import SpecError
from spec.offsets import Params
from spec.proofs.offsets.obligations import COUNTEREXAMPLE, PROVED, UNKNOWN, Run, prove, render
from spec.proofs.status import counts


def exit_code(run: Run) -> int:
    """The run's exit code (``common.proof_exit_code``)."""
    return proof_exit_code(run.status == COUNTEREXAMPLE, run.status == PROVED, run.enabled)


def run_json(run: Run, seconds: float) -> dict[str, Any]:
    counted = counts(run.results)
    p = run.params
    return {
        "spec": "offsets",
        "commit": p.commit,
        "reset": p.reset,
        "members": p.members,
        "records": p.records,
        "max_member_ids": p.max_member_ids,
        "bugs": sorted(p.bugs),
        "status": run.status,
        "obligations": len(run.results),
        "proved": counted[PROVED],
        "counterexamples": counted[COUNTEREXAMPLE],
        "unknown": counted[UNKNOWN],
        "seconds": round(seconds, 3),
        "enabled": dict(run.enabled),
        "results": [
            {"invariant": r.invariant, "action": r.action, "status": r.status} for r in run.results
        ],
    }


def prove_offsets(
    commit: str | None,
    reset: str | None,
    members: int | None,
    records: int | None,
    bugs: tuple[str, ...],
    timeout: float,
    json_mode: bool,
) -> NoReturn:
    if timeout <= 0:
        fail_input(f"--timeout must be positive, got {timeout}")
    given: dict[str, Any] = {
        "commit": commit,
        "reset": reset,
        "members": members,
        "records": records,
    }
    try:
        params = Params(**{k: v for k, v in given.items() if v is not None}, bugs=frozenset(bugs))
    except SpecError as err:
        fail_input(str(err))
    clock = time.perf_counter
    start = clock()
    run = prove(params, timeout_ms=int(timeout * 1000))
    seconds = clock() - start
    code = exit_code(run)
    if json_mode:
        payload = run_json(run, seconds)
        payload["exit_code"] = code
        emit_json(payload)
    else:
        click.echo(render(run).rstrip())
        click.echo(f"z3: {seconds:.2f} s")
        echo_enabledness(run.enabled)
    raise SystemExit(code)
