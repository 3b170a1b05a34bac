"""Conventions shared by every `kmodel` subcommand (README.md, "Exit codes").

- exit code 0: everything checked holds / valid; 1: a violation, an invalid history, an
  anomaly; 2: unknown (timeout, budget exhausted) or bad input / usage error;
- human output by default, and with ``--json`` a single JSON object on the last line of
  stdout;
- a user's mistake is one line on stderr naming the flag, file or line at fault and what is
  accepted, never a Python traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, NoReturn

import click
import orjson

from jepsen_py.checker.result import Verdict

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_UNKNOWN = 2

_VERDICT_EXIT_CODES = {
    Verdict.OK: EXIT_OK,
    Verdict.ILLEGAL: EXIT_VIOLATION,
    Verdict.UNKNOWN: EXIT_UNKNOWN,
}


def verdict_exit_code(verdict: Verdict) -> int:
    """The exit code of a verdict: 0 OK (valid), 1 ILLEGAL (invalid), 2 UNKNOWN."""
    return _VERDICT_EXIT_CODES[verdict]


def proof_exit_code(counterexample: bool, proved: bool, enabled: Iterable[tuple[str, str]]) -> int:
    """The exit code of a ``kmodel prove`` run, for every spec: 1 when an obligation has a
    counterexample to induction, or an action instance is never enabled under the
    strengthening (z3 answered ``unsat``: the proof would hold vacuously for it); 2 when an
    obligation, or an enabledness query, is unknown (a timeout); 0 otherwise."""
    if counterexample:
        return EXIT_VIOLATION
    if not proved:
        return EXIT_UNKNOWN
    answers = [answer for _, answer in enabled]
    if "unsat" in answers:
        return EXIT_VIOLATION
    if any(answer != "sat" for answer in answers):
        return EXIT_UNKNOWN
    return EXIT_OK


def echo_enabledness(enabled: Iterable[tuple[str, str]]) -> None:
    """A ``kmodel prove`` run's last lines: whether every action instance is enabled in
    some state the strengthening admits (else a warning per instance: nothing it does is
    proved of any state); nothing when no instance was asked about."""
    answers = list(enabled)
    never = [label for label, answer in answers if answer != "sat"]
    if answers and not never:
        click.echo("every action instance is enabled in some state satisfying the assumptions")
    for label in never:
        click.echo(f"warning: {label} is never enabled under the assumptions")


class InputError(click.ClickException):
    """A user's mistake (bad flag value, unreadable file, malformed line): exit 2."""

    exit_code = EXIT_UNKNOWN

    def show(self, file: Any = None) -> None:
        click.echo(f"kmodel: error: {self.format_message()}", err=True)


def fail_input(message: str) -> NoReturn:
    """Abort the command with a one-line error on stderr and exit code 2."""
    raise InputError(message)


def emit_json(payload: dict[str, Any]) -> None:
    """Print ``payload`` as one JSON line: the last line of stdout in ``--json`` mode."""
    sys.stdout.flush()
    sys.stdout.write(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS).decode() + "\n")
    sys.stdout.flush()
