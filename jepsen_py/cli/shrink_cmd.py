"""``kmodel shrink STORE_DIR``: delta debugging over a failing run's faults and workload,
down to a minimal run that still shows the same anomaly type, written as a new store
directory (test name ``<name>-shrunk``) that ``kmodel replay`` reproduces.

Exit code: 1 when a minimal failing run was written (it fails, as it should); 2 when the
run cannot be shrunk (it passed, it is not a `kmodel test` run) or on bad input.
"""

from __future__ import annotations

import click

from jepsen_py.cli.common import emit_json, fail_input, verdict_exit_code
from jepsen_py.generator import SECOND
from jepsen_py.shrink import ShrinkError, shrink


@click.command(name="shrink")
@click.argument("store_dir", type=click.Path(file_okay=False))
@click.option("--anomaly", default=None, help="The failure type to keep (default: the first).")
@click.option("--max-runs", type=int, default=200, show_default=True, help="Budget of runs.")
@click.option("--store", "store_root", default=None, help="Where to write the shrunk run.")
@click.option("--no-reports", is_flag=True, help="Skip timeline.html and the PNG plots.")
@click.option("--json", "json_mode", is_flag=True, help="One JSON object as the last line.")
def shrink_cmd(
    store_dir: str,
    anomaly: str | None,
    max_runs: int,
    store_root: str | None,
    no_reports: bool,
    json_mode: bool,
) -> None:
    """Shrink the failing run STORE_DIR: fewer faults, a shorter time, fewer clients and
    ops, while it still shows the same anomaly type."""
    if max_runs < 1:
        fail_input(f"--max-runs {max_runs}: allow at least one run")

    def progress(line: str) -> None:
        if not json_mode:
            click.echo(f"  {line}", err=True)

    try:
        result = shrink(
            store_dir,
            anomaly=anomaly,
            max_runs=max_runs,
            store_root=store_root,
            reports=not no_reports,
            progress=progress,
        )
    except ShrinkError as exc:
        fail_input(str(exc))
    if json_mode:
        emit_json(result.to_json())
        raise SystemExit(verdict_exit_code(result.outcome.verdict))
    b, a = result.before, result.after
    click.echo(f"shrunk {result.original} keeping {result.target} (seed {result.seed})")
    change = (
        f"{result.factor:.1f}x smaller"
        if a.history_ops <= b.history_ops
        else f"{a.history_ops / max(1, b.history_ops):.1f}x larger: fewer faults, more ops"
    )
    click.echo(f"  history ops: {b.history_ops} -> {a.history_ops} ({change})")
    click.echo(f"  client ops:  {b.client_ops} -> {a.client_ops}")
    click.echo(f"  faults:      {b.faults} -> {a.faults}")
    click.echo(f"  time limit:  {b.time_limit_ns / SECOND:g} s -> {a.time_limit_ns / SECOND:.3f} s")
    click.echo(f"  clients:     {b.concurrency} -> {a.concurrency}")
    click.echo(f"  {result.runs} runs in {result.seconds:.1f} s")
    for step in result.config.schedule or ():
        click.echo(f"    fault at {step.time / 1e9:.3f} s: {step.f} {step.value or ''}")
    click.echo(f"  store: {result.outcome.run_dir}")
    click.echo(f"  reproduce: {result.outcome.command}")
    raise SystemExit(verdict_exit_code(result.outcome.verdict))
