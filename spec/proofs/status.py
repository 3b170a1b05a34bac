"""What a proof obligation's z3 query concluded, and what a whole run did: shared by every
spec's proof (replication, controller, group, rebalance, offsets)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import attrs

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


S = TypeVar("S")
"""A spec's state (what a counterexample to induction is made of)."""
P = TypeVar("P")
"""A spec's parameters."""


@attrs.frozen
class Obligation(Generic[S]):
    """One obligation's outcome, with the counterexample to induction (pre-state,
    post-state) when z3 found one: the shape of the group and offsets proofs."""

    invariant: str
    action: str
    status: str
    cti: tuple[S, S] | None = None


@attrs.frozen
class ProofRun(Generic[P, S]):
    """A whole proof: its parameters, every obligation's outcome, and per action instance
    whether it is enabled under the strengthening."""

    params: P
    results: tuple[Obligation[S], ...]
    enabled: tuple[tuple[str, str], ...]

    @property
    def status(self) -> str:
        return overall(r.status for r in self.results)


def summary_line(results: Sequence[Outcome]) -> str:
    """``N obligations: X proved, Y counterexamples, Z unknown``."""
    counted = counts(results)
    return (
        f"{len(results)} obligations: {counted[PROVED]} proved, "
        f"{counted[COUNTEREXAMPLE]} counterexamples, {counted[UNKNOWN]} unknown"
    )


def cti_lines(spec: Any, results: Iterable[Obligation[Any]], note: str = "") -> list[str]:
    """Every counterexample to induction as a two-row trace table of ``spec`` (pre-state,
    then the action's post-state), each under the sentence that says what it breaks;
    ``note`` ends that sentence (what else the pre-state shows)."""
    from spec.explore import TraceStep
    from spec.framework import Step
    from spec.trace import render_table

    lines: list[str] = []
    for r in results:
        if r.cti is None:
            continue
        pre, post = r.cti
        trace = [TraceStep(None, pre), TraceStep(Step(r.action), post)]
        lines += [
            "",
            f"{r.invariant} is not preserved by {r.action} (counterexample to induction: the "
            f"pre-state satisfies every assumed invariant{note}):",
            render_table(spec, trace).rstrip().replace(" Init ", " pre  ", 1),
        ]
    return lines
