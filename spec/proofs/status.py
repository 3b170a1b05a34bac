"""What a proof obligation's z3 query concluded, and what a whole run did: shared by every
spec's proof (replication, controller, group, rebalance, offsets)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

PROVED = "proved"
"""The query is unsatisfiable: the invariant is preserved (or the property holds)."""
COUNTEREXAMPLE = "counterexample"
"""z3 found a model: a counterexample to induction."""
UNKNOWN = "unknown"
"""z3 gave up (the timeout)."""


def overall(statuses: Iterable[str]) -> str:
    """A run's status: a counterexample if any obligation has one, else unknown if any is
    unknown, else proved."""
    seen = set(statuses)
    if COUNTEREXAMPLE in seen:
        return COUNTEREXAMPLE
    if UNKNOWN in seen:
        return UNKNOWN
    return PROVED


class Outcome(Protocol):
    """One obligation's result, as every proof reports it."""

    @property
    def invariant(self) -> str: ...

    @property
    def action(self) -> str: ...

    @property
    def status(self) -> str: ...


MARKS = {PROVED: "ok", COUNTEREXAMPLE: "CTI", UNKNOWN: "?"}
"""How the invariant x action table shows each status."""


def counts(results: Iterable[Outcome]) -> dict[str, int]:
    """How many obligations ended in each status."""
    statuses = [r.status for r in results]
    return {s: statuses.count(s) for s in (PROVED, COUNTEREXAMPLE, UNKNOWN)}


def grid(results: Sequence[Outcome], shorten: Callable[[str], str]) -> tuple[list[str], list[str]]:
    """The invariant x action table (a row per invariant, a column per action instance in
    the order first met, ``shorten`` naming the columns): its lines, and the invariants in
    row order."""
    actions: list[str] = []
    table: dict[str, dict[str, str]] = {}
    for r in results:
        if r.action not in actions:
            actions.append(r.action)
        table.setdefault(r.invariant, {})[r.action] = MARKS[r.status]
    width = max(len(n) for n in table)
    short = [shorten(a) for a in actions]
    cols = [max(3, len(a)) for a in short]
    lines = [
        "invariant".ljust(width)
        + "  "
        + "  ".join(a.ljust(w) for a, w in zip(short, cols, strict=True))
    ]
    for name, cells in table.items():
        row = [cells.get(a, "").ljust(w) for a, w in zip(actions, cols, strict=True)]
        lines.append(name.ljust(width) + "  " + "  ".join(row).rstrip())
    return lines, list(table)
