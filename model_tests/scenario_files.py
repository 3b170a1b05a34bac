"""Scenario files: expected output checked in next to the tests, with a rewrite mode.

The step-by-step scenarios (``scenarios/*.txt`` for storage, ``scenarios/impl/*.txt`` for
the implementation) are in etcd raft's datadriven style: a command line, a ``----`` line,
then the expected output up to the next blank line; blank lines and ``#`` lines are prose
and are kept as they are::

    # A bit flip in a flushed segment, found by recovery.

    append epoch=1 values=x0000
    ----
    appended offsets 0..0
    log: start 0, LEO 1, recovery point 0, epochs [1@0]

``parse_scenario`` reads a file into items and ``render_scenario`` writes items back,
byte for byte: a test replays the commands and renders what happened instead of what was
expected, and the diff is what a reviewer reads.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from spec.trace import render_table

SCENARIOS = Path(__file__).parent / "scenarios"

ScenarioItem = tuple[str, str, list[str]]
"""``("text", line, [])`` for prose and blank lines, ``("case", command, expected lines)``
for a command and its ``----`` block."""


def parse_scenario(text: str) -> list[ScenarioItem]:
    """The items of a scenario file's ``text``; ``ValueError`` naming the line if a command
    is not followed by ``----``."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    items: list[ScenarioItem] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            items.append(("text", line, []))
            i += 1
            continue
        if i + 1 >= len(lines) or lines[i + 1] != "----":
            raise ValueError(f"line {i + 2}: expected '----' after the command {line!r}")
        i += 2
        expected = []
        while i < len(lines) and lines[i].strip():
            expected.append(lines[i])
            i += 1
        items.append(("case", line, expected))
    return items


def render_scenario(items: list[ScenarioItem]) -> str:
    """The text of a scenario file holding ``items`` (``parse_scenario``'s inverse)."""
    out = []
    for kind, line, expected in items:
        out.append(line)
        if kind == "case":
            out.append("----")
            out.extend(expected)
    return "\n".join(out) + "\n"


def assert_matches_file(path: Path, actual: str, rewrite: bool) -> None:
    """Compare ``actual`` with the file's text; with ``rewrite``, write it instead."""
    if rewrite:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
        return
    if not path.exists():
        pytest.fail(f"{path} does not exist; run pytest with --rewrite (or KMODEL_REWRITE=1)")
    expected = path.read_text()
    if expected != actual:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=str(path),
                tofile="actual",
            )
        )
        pytest.fail(f"{path.name} differs from the model's output:\n{diff}")


def render_outcome_file(
    spec: Any, result: Any, *, title: str, reference: str, command: str, gap: int = 2
) -> str:
    """A spec outcome as a scenario file: its title, reference and reproducing command, then
    ``holds: ...`` with the figures, or ``violated: ...`` and the counterexample as a table
    (after ``gap`` blank lines)."""
    lines = [f"# {title}", f"# reference: {reference}", f"# reproduce: {command}", ""]
    if result.violation is None:
        assert result.complete
        lines.append(
            f"holds: {', '.join(result.checked)} "
            f"({result.stats.distinct_states} distinct states, depth {result.stats.depth})"
        )
        return "\n".join(lines) + "\n"
    violation = result.violation
    lines += [f"violated: {violation.name} ({violation.depth} states)", *[""] * gap]
    return "\n".join(lines) + render_table(spec, violation.trace)


def outcome_cases(outcomes: Iterable[Any]) -> list[Any]:
    """Each outcome as a pytest case named after it, the slow ones marked slow."""
    return [
        pytest.param(o, id=o.name, marks=[pytest.mark.slow] if o.slow else []) for o in outcomes
    ]
