"""``kmodel explore SPEC``: a spec's states in a local web page, one step at a time.

The page (``jepsen_py.explorer``) shows a state as people read it (each replica's log with
its HW and LEO, its leader epoch and ISR; the controller's brokers and store; a group's
members), the steps enabled there as buttons, and the path so far; it jumps to the model
checker's shortest counterexample, loads a ``kmodel check --trace-json`` file, and shares a
path as a URL. The spec's flags and ``--bug`` are ``kmodel check``'s (the same options
objects), so a configuration explored is the configuration checked.

Exit codes: 0 when stopped (Ctrl-C); 2 on bad input (a flag of another spec, a port in use).
"""

from __future__ import annotations

import webbrowser
from typing import Any

import click

from jepsen_py.cli.check import check_cmd
from jepsen_py.cli.common import fail_input
from jepsen_py.cli.specs import CHECK_SPECS, check_bugs, refuse_foreign_flags
from jepsen_py.explorer.paths import COUNTEREXAMPLE_BUDGET, Explorer, PathError
from jepsen_py.explorer.server import serve
from spec.framework import SpecError

SPEC_FLAGS = frozenset(flag for entry in CHECK_SPECS.values() for flag in entry.flags)
"""The click names of every spec's flags (each spec reads its own)."""

DEFAULT_PORT = 8471


def spec_params() -> list[click.Parameter]:
    """``kmodel check``'s SPEC argument, spec flags and ``--bug``, in its order."""
    return [
        param
        for param in check_cmd.params
        if param.name in SPEC_FLAGS or param.name in ("spec_name", "bugs")
    ]


@click.command(name="explore", params=spec_params())
@click.option(
    "--port",
    type=click.IntRange(min=0, max=65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port on 127.0.0.1 (0: any free port).",
)
@click.option("--no-browser", is_flag=True, help="Print the URL; do not open a browser.")
@click.option(
    "--max-states",
    type=click.IntRange(min=1),
    default=COUNTEREXAMPLE_BUDGET,
    show_default=True,
    help="Budget of the counterexample search (distinct states).",
)
def explore_cmd(
    spec_name: str,
    bugs: tuple[str, ...],
    port: int,
    no_browser: bool,
    max_states: int,
    **spec_flags: Any,
) -> None:
    """Explore SPEC in a local web page: its states, the enabled steps as buttons, back, jump
    to a counterexample (--bug NAME), load a trace file, share a path as a URL."""
    entry = CHECK_SPECS[spec_name]
    try:
        refuse_foreign_flags(spec_name, spec_flags, "explore")
        check_bugs(spec_name, bugs)
        spec = entry.build(spec_flags, bugs)
        explorer = Explorer(
            spec,
            entry.params_json(spec.p),  # type: ignore[attr-defined]
            max_states=max_states,
        )
    except (SpecError, PathError) as err:
        fail_input(str(err))
    try:
        server = serve(explorer, port)
    except OSError as err:
        fail_input(
            f"cannot listen on 127.0.0.1:{port} ({err.strerror}); choose another --port, "
            "or --port 0 for any free one"
        )
    click.echo(f"kmodel explore {spec_name}: {server.url}  (Ctrl-C stops it)")
    if not no_browser:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped")
    finally:
        server.server_close()


explore = explore_cmd
