"""The `kmodel` command: one console script, one module per subcommand.

Each subcommand lives in its own module of this package and is listed in `COMMANDS`, so
adding a command never touches another's code. The group loads a subcommand's module only
when that subcommand runs (click's lazy group pattern): ``kmodel --help`` and ``kmodel
verify`` do not pay for z3, the simulator or the model checker, which other subcommands
import. The short help ``kmodel --help`` lists is kept beside each entry, so listing the
commands imports none of them; model_tests/test_cli_startup.py checks it matches the
command's own.
"""

from __future__ import annotations

import gc
import importlib
from typing import Any, NamedTuple

import click


class LazyCommand(NamedTuple):
    """Where a subcommand lives (``module``, ``attribute``) and its one-line help."""

    module: str
    attribute: str
    short_help: str

    def listed_help(self, limit: int) -> str:
        """The line ``kmodel --help`` shows for this command, shortened as click does."""
        return click.Command(None, help=self.short_help).get_short_help_str(limit)


COMMANDS: dict[str, LazyCommand] = {
    "check": LazyCommand(
        "jepsen_py.cli.check",
        "check",
        "Model-check SPEC: explore every reachable state within the bounds (or random walks "
        "with --simulate), and print the shortest counterexample of the first violated property.",
    ),
    "demo": LazyCommand(
        "jepsen_py.cli.demo",
        "demo",
        "Run the main job: inject faults into a simulated Kafka cluster, verify the histories "
        "on Spark, model-check the replication spec, and summarise.",
    ),
    "explore": LazyCommand(
        "jepsen_py.cli.explore",
        "explore",
        "Explore SPEC in a local web page: its states, the enabled steps as buttons, back, jump "
        "to a counterexample (--bug NAME), load a trace file, share a path as a URL.",
    ),
    "prove": LazyCommand(
        "jepsen_py.cli.prove",
        "prove",
        "Prove SPEC's invariants inductive with z3 (relative to the auxiliary invariants its "
        "correctness rests on), or print a counterexample to induction.",
    ),
    "replay": LazyCommand(
        "jepsen_py.cli.replay_cmd",
        "replay_cmd",
        "Re-run STORE_DIR (a run directory, or a test directory's latest run) from its "
        "test.json, compare the histories, and trace the first anomaly.",
    ),
    "shrink": LazyCommand(
        "jepsen_py.cli.shrink_cmd",
        "shrink_cmd",
        "Shrink the failing run STORE_DIR: fewer faults, a shorter time, fewer clients and ops, "
        "while it still shows the same anomaly type.",
    ),
    "test": LazyCommand(
        "jepsen_py.cli.test_cmd",
        "test_cmd",
        "Run the Kafka workload against the simulated cluster under faults, check the history, "
        "and store it; print the verdict and the command that reproduces it.",
    ),
    "verify": LazyCommand(
        "jepsen_py.cli.verify",
        "verify",
        "Check the histories PATH...: Kafka logs for Kafka's guarantees and linearizability "
        "(--consistency says which decides), registers and key-value stores for "
        "linearizability; each file gets its own verdict.",
    ),
}
"""Every subcommand, by name: imported on first use."""


def load_command(name: str) -> click.Command:
    """Import the module of subcommand ``name`` and return its click command."""
    entry = COMMANDS[name]
    command = getattr(importlib.import_module(entry.module), entry.attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{entry.module}.{entry.attribute} is not a click command")
    return command


class LazyGroup(click.Group):
    """A click group whose `COMMANDS` are imported when run, not when listed."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The console script's entry (click's test runner calls `main` instead, in a
        process that goes on). The cyclic garbage collector is told twice that this process
        runs one command and ends (`gc.freeze`): before it, what is imported so far lives as
        long as the process, so no collection while the command works walks it again; after
        it, the interpreter's last collections at exit skip every object the command made.
        ``kmodel verify`` of Porcupine's etcd logs spends 15 ms less collecting (of 150 ms
        checking), of its kv logs 8 ms less at exit. What the command makes is collected as
        usual while it runs; objects still die by their reference counts, and files are
        closed by the ``with`` that opened them."""
        gc.freeze()
        try:
            return self.main(*args, **kwargs)
        finally:
            gc.freeze()

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        command = load_command(cmd_name)
        self.add_command(command, cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands section of ``--help``, from `COMMANDS` without importing them."""
        shown = [
            name
            for name in self.list_commands(ctx)
            if name not in self.commands or not self.commands[name].hidden
        ]
        if not shown:
            return
        limit = formatter.width - 6 - max(len(name) for name in shown)
        rows = []
        for name in shown:
            if name in self.commands:
                rows.append((name, self.commands[name].get_short_help_str(limit)))
            else:
                rows.append((name, COMMANDS[name].listed_help(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafka-model", prog_name="kmodel")
def main() -> None:
    """kafka-model: Kafka replication as executable specs, a model checker, a deterministic
    implementation, fault injection and history checkers."""
