"""``kmodel prove group``: the consumer-group spec's inductive invariants, proved with z3.

Only KIP-848's protocol (``--protocol consumer``) is encoded; the classic protocols are
checked by ``kmodel check group`` within bounds. Exit codes as for every ``kmodel prove``:
0 every obligation proved and every action instance enabled under the strengthening; 1 a
counterexample to induction (or an action never enabled); 2 unknown or bad input.
"""

from __future__ import annotations

from typing import Any, NoReturn

import click

from jepsen_py.cli.common import echo_enabledness, emit_json, fail_input, proof_exit_code
from spec.framework import SpecError
from spec.group import Params
from spec.proofs.group.obligations import COUNTEREXAMPLE, PROVED, Run, prove, render
from spec.proofs.status import counts


def exit_code(run: Run) -> int:
    """The run's exit code (``common.proof_exit_code``)."""
    return proof_exit_code(run.status == COUNTEREXAMPLE, run.status == PROVED, run.enabled)


def run_json(run: Run) -> dict[str, Any]:
    counted = counts(run.results)
    return {
        "spec": "group",
        "protocol": run.params.protocol,
        "members": run.params.members,
        "partitions": run.params.partitions,
        "bugs": sorted(run.params.bugs),
        "status": run.status,
        "obligations": len(run.results),
        "proved": counted[PROVED],
        "counterexamples": counted[COUNTEREXAMPLE],
        "enabled": dict(run.enabled),
        "results": [
            {"invariant": r.invariant, "action": r.action, "status": r.status} for r in run.results
        ],
    }


def prove_group(
    protocol: str | None,
    members: int | None,
    partitions: int | None,
    bugs: tuple[str, ...],
    timeout: float,
    json_mode: bool,
) -> NoReturn:
    protocol = protocol or "consumer"
    if protocol != "consumer":
        fail_input(
            f"--protocol {protocol}: only KIP-848's protocol (--protocol consumer) is encoded "
            "for z3; check the classic protocols with kmodel check group"
        )
    if timeout <= 0:
        fail_input(f"--timeout must be positive, got {timeout}")
    try:
        params = Params(
            protocol=protocol,
            members=members or 2,
            partitions=partitions or 2,
            bugs=frozenset(bugs),
        )
    except SpecError as err:
        fail_input(str(err))
    run = prove(params, timeout_ms=int(timeout * 1000))
    code = exit_code(run)
    if json_mode:
        payload = run_json(run)
        payload["exit_code"] = code
        emit_json(payload)
    else:
        click.echo(render(run).rstrip())
        echo_enabledness(run.enabled)
    raise SystemExit(code)
