"""What a proof obligation's z3 query concluded, and what a whole run did: shared by every
spec's proof (replication, controller, group, rebalance, offsets)."""

from __future__ import annotations

from collections.abc import Iterable

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
