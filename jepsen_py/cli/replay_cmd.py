"""``kmodel replay STORE_DIR``: run a stored test's (config, seed) again, confirm that the
history is identical (by hash), and print a step-by-step trace of what the cluster did
around the first anomaly.

Exit code: the run's verdict when the replay is identical (0 valid, 1 invalid); 2 when the
history differs (a different code version, or a determinism bug) or the directory cannot
be replayed.
"""

from __future__ import annotations

import click

from jepsen_py.checker.engine import line_of
from jepsen_py.cli.common import emit_json, fail_input, verdict_exit_code
from jepsen_py.cli.test_cmd import violation_lines
from jepsen_py.explain import explanation_lines
from jepsen_py.replay import ReplayError, format_trace, replay
from jepsen_py.runner.outcome import verdict_name


@click.command(name="replay")
@click.argument("store_dir", type=click.Path(file_okay=False))
@click.option("--json", "json_mode", is_flag=True, help="One JSON object as the last line.")
def replay_cmd(store_dir: str, json_mode: bool) -> None:
    """Re-run STORE_DIR (a run directory, or a test directory's latest run) from its
    test.json, compare the histories, and trace the first anomaly."""
    try:
        result = replay(store_dir)
    except ReplayError as exc:
        fail_input(str(exc))
    if json_mode:
        emit_json(result.to_json())
        raise SystemExit(verdict_exit_code(result.verdict))
    click.echo(f"replay of {result.run_dir} (seed {result.seed})")
    if result.identical:
        click.echo(f"  history: identical (blake2b {result.replayed_hash})")
    else:
        click.echo(
            click.style("  history: DIFFERENT", fg="red", bold=True)
            + f" (stored {result.stored_hash}, replayed {result.replayed_hash})"
        )
        click.echo(f"  first difference: {result.first_difference}")
        if result.version_stored != result.version_now:
            click.echo(
                f"  the run was made by code {result.version_stored}; this is "
                f"{result.version_now}: check out that version to reproduce it"
            )
    check = result.check
    verdict = verdict_name(check.verdict)
    violations = ", ".join(check.violations) or "none"
    click.echo(
        f"  verdict: {verdict.upper()} under --consistency {check.consistency} "
        f"(violations: {violations})"
    )
    for line in violation_lines(check):
        click.echo(f"    {line}")
    if check.informational:
        found = ", ".join(f"{n} ({c})" for n, c in check.informational.items())
        click.echo(f"  informational (allowed by Kafka's guarantees): {found}")
    if check.loss_explanations:
        lost = check.lost_acknowledged_writes
        click.echo(f"  acknowledged writes lost: {lost}, explained:")
        for line in explanation_lines(check.loss_explanations):
            click.echo(line)
    anomaly = result.anomaly
    if anomaly is None:
        click.echo("  no anomaly to trace")
    else:
        lines = " ".join(str(line_of(op)) for op in anomaly.witness)
        kind = "violation" if anomaly.violation else "anomaly"
        click.echo(f"  first {kind}: {anomaly.name}, {anomaly.explanation}; witness lines {lines}")
        click.echo("")
        for line in format_trace(result.trace):
            click.echo(line)
    raise SystemExit(verdict_exit_code(result.verdict))
