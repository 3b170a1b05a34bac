"""``kmodel verify``: check recorded histories for linearizability (and, for Kafka logs,
the anomaly taxonomy), one verdict per file.

The work is `jepsen_py.checker.engine`'s; this module parses flags, prints a table per
input (key, operations, verdict, time) and sets the exit code: 0 when every input is OK, 1
when any key is illegal or any anomaly was found, 2 when something is unknown (timeout,
budget) or an input could not be read, or lines of it were rejected.
"""

from __future__ import annotations

import os
from typing import Any

import click
import orjson

from jepsen_py.checker.engine import (
    MODEL_NAMES,
    NOT_CHECKED,
    InputResult,
    KeyResult,
    verify_path,
)
from jepsen_py.checker.models import UNSET
from jepsen_py.checker.result import Verdict
from jepsen_py.cli.common import EXIT_OK, EXIT_UNKNOWN, EXIT_VIOLATION, emit_json, fail_input
from jepsen_py.history import FORMATS

_STYLE = {Verdict.OK: "green", Verdict.ILLEGAL: "bold red", Verdict.UNKNOWN: "yellow"}
_REJECTED_SHOWN = 10


def parse_initial(text: str | None) -> Any:
    """``--initial``: JSON (``0``, ``"a"``, ``[1, 2]``), ``nil``/``null`` for no value, or
    else the text itself as a string."""
    if text is None:
        return UNSET
    if text in ("nil", "null"):
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def exit_code(results: list[InputResult]) -> int:
    """1 if anything is illegal; else 2 if anything is unknown or unreadable; else 0."""
    verdicts = [r.verdict for r in results]
    if Verdict.ILLEGAL in verdicts:
        return EXIT_VIOLATION
    if Verdict.UNKNOWN in verdicts or any(r.error or r.rejected for r in results):
        return EXIT_UNKNOWN
    return EXIT_OK


def totals(results: list[InputResult]) -> dict[str, Any]:
    return {
        "inputs": len(results),
        "ok": sum(r.verdict is Verdict.OK for r in results),
        "illegal": sum(r.verdict is Verdict.ILLEGAL for r in results),
        "unknown": sum(r.verdict is Verdict.UNKNOWN for r in results),
        "keys": sum(len(r.keys) for r in results),
        "ops": sum(r.ops for r in results),
        "rejected_lines": sum(len(r.rejected) for r in results),
        "anomalies": sum(len(g) for r in results for g in r.anomalies.values()),
        "seconds": round(sum(r.seconds for r in results), 6),
    }


def _key_name(key: KeyResult) -> str:
    name = "-" if key.key is None else str(key.key)
    return name if key.run is None else f"{key.run}/{name}"


def _print_human(result: InputResult) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=True)
    if result.error is not None:
        console.print(f"{result.path}: not checked: {result.error}", markup=False, style="yellow")
        return
    style = _STYLE[result.verdict]
    console.print(
        f"[bold]{escape(result.path)}[/bold] ({result.format}, model {result.model}): "
        f"[{style}]{result.verdict.value.upper()}[/]"
    )
    table = Table()
    table.add_column("key")
    table.add_column("ops", justify="right")
    table.add_column("verdict")
    table.add_column("time", justify="right")
    skipped = []
    for key in result.keys:
        name = _key_name(key)
        verdict = f"[{_STYLE[key.verdict]}]{key.verdict.value}[/]"
        if not key.checked and key.explanation == NOT_CHECKED:
            verdict = "[dim]not checked[/]"
            skipped.append(name)
        table.add_row(escape(name), str(key.ops), verdict, f"{key.seconds:.3f} s")
    console.print(table)
    for key in result.keys:
        if key.verdict is not Verdict.OK and key.explanation and key.explanation != NOT_CHECKED:
            console.print(f"key {_key_name(key)}: {key.explanation}", markup=False)
        if key.report:
            console.print(f"  report: {key.report}", markup=False)
    if skipped:
        console.print(f"not checked ({NOT_CHECKED}): keys {', '.join(skipped)}", markup=False)
    for name, groups in sorted(result.anomalies.items()):
        if groups:
            lines = ", ".join(
                "[" + " ".join(str(op.line or op.index) for op in group) + "]"
                for group in groups[:3]
            )
            console.print(f"anomaly {name}: {len(groups)} (lines {lines})", markup=False)
    for rejection in result.rejected[:_REJECTED_SHOWN]:
        console.print(f"rejected {rejection}", markup=False)
    if len(result.rejected) > _REJECTED_SHOWN:
        more = len(result.rejected) - _REJECTED_SHOWN
        console.print(f"... and {more} more rejected lines (--json lists them all)")


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--model",
    type=click.Choice(MODEL_NAMES),
    default=None,
    help="What the history is of; default: told by the format or the ops' f.",
)
@click.option(
    "--initial",
    default=None,
    metavar="VALUE",
    help='A register\'s initial value (JSON, or nil; default nil; kv: "").',
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(FORMATS)),
    default=None,
    help="The history format; default: by extension, then by content.",
)
@click.option(
    "--timeout",
    type=float,
    default=None,
    metavar="S",
    help="Seconds per input before its verdict is unknown (default: none).",
)
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False),
    default=None,
    metavar="DIR",
    help="Write an HTML report per key into DIR.",
)
@click.option("--json", "as_json", is_flag=True, help="End with one JSON line of results.")
def verify(
    paths: tuple[str, ...],
    model: str | None,
    initial: str | None,
    fmt: str | None,
    timeout: float | None,
    report_dir: str | None,
    as_json: bool,
) -> None:
    """Check the histories PATH... for linearizability; each file gets its own verdict.

    Formats: jsonl and parquet (this project's), edn (Jepsen/Knossos), porcupine-etcd and
    porcupine-kv (Porcupine's test data). Models: log (Kafka partitions: the exact checker
    and the anomaly taxonomy), register, cas-register, kv."""
    if timeout is not None and timeout <= 0:
        fail_input(f"--timeout must be a positive number of seconds, got {timeout}")
    if initial is not None and model in ("log",):
        fail_input("--initial applies to the register, cas-register and kv models, not to log")
    start_value = parse_initial(initial)
    if report_dir is not None and os.path.exists(report_dir) and not os.path.isdir(report_dir):
        fail_input(f"--report {report_dir}: exists and is not a directory")
    results = []
    for path in paths:
        result = verify_path(
            path,
            model=model,
            fmt=fmt,
            initial=start_value,
            timeout=timeout,
            report_dir=report_dir,
        )
        results.append(result)
        if not as_json:
            _print_human(result)
    code = exit_code(results)
    if as_json:
        emit_json(
            {
                "inputs": [r.to_json() for r in results],
                "totals": totals(results),
                "exit_code": code,
            }
        )
    raise SystemExit(code)
