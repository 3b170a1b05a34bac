"""CrossHair on every contract-carrying function of the project: the catalogue, its
deliberately broken controls, and the runner.

A contract is a function's PEP 316 ``pre:``/``post:`` docstring conditions; CrossHair
searches symbolic inputs for one that meets the preconditions and breaks a postcondition
(``crosshair_check``), or for an input on which two functions differ (``crosshair_diff``).
Budgets are CPU seconds per condition: a search that finds nothing within it proves nothing,
but explores ``paths`` execution paths.

``CONTRACTS`` names every contract-carrying function with its budget in the default test
run: the replication spec's rules (``spec.proofs.rules``: the HW rules, ISR expansion, the
truncation offsets of each variant) and the implementation's (``impl.contracts``: the
partitioner, record batches, the leader-epoch cache, the offset index, the assignors).
``CONTROLS`` are broken copies, each of which CrossHair must find a violation in: a contract
that cannot fail checks nothing. The tests (``model_tests/test_crosshair_contracts.py``) and
``benchmarks/crosshair_paths.py`` run both.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import crosshair.core_and_libs  # noqa: F401  (registers CrossHair's models of the stdlib)
from crosshair.core import analyze_function, run_checkables
from crosshair.diff_behavior import diff_behavior
from crosshair.fnutil import FunctionInfo
from crosshair.options import DEFAULT_OPTIONS, AnalysisKind, AnalysisOptionSet
from crosshair.statespace import MessageType

from impl.contracts import (
    ASSIGNORS,
    BROKEN_ASSIGNORS,
    IMPL_FUNCTIONS,
    IMPL_LOG,
    batch_round_trip,
    index_lookup_bisect_left,
    keyless_partitions_stay_in_range,
)
from impl.partitioner import murmur2
from spec.proofs import rules

__all__ = [
    "CONTRACTS",
    "CONTROLS",
    "RULES",
    "SLOW_RULES",
    "crosshair_check",
    "crosshair_diff",
    "follower_hw_unclamped",
]

# --- running CrossHair ---------------------------------------------------------------------


def crosshair_check(
    fn: Callable[..., Any], seconds: float, first_only: bool = False
) -> tuple[list[str], int]:
    """CrossHair on ``fn``'s PEP 316 contracts: (violations found, paths explored).
    ``first_only``: stop at the first condition found violated (a broken copy's test need
    not spend the budget on its other conditions)."""
    stats: collections.Counter[str] = collections.Counter()
    options = AnalysisOptionSet(
        analysis_kind=[AnalysisKind.PEP316],
        per_condition_timeout=seconds,
        per_path_timeout=max(seconds / 2, 0.5),
        stats=stats,
    )
    bad_states = (MessageType.POST_FAIL, MessageType.EXEC_ERR, MessageType.POST_ERR)
    if first_only:
        for checkable in analyze_function(fn, options):
            bad = [m.message for m in checkable.analyze() if m.state in bad_states]
            if bad:
                return bad, stats["num_paths"]
        return [], stats["num_paths"]
    messages = run_checkables(analyze_function(fn, options))
    bad = [m.message for m in messages if m.state in bad_states]
    return bad, stats["num_paths"]


def crosshair_diff(
    f: Callable[..., Any],
    g: Callable[..., Any],
    seconds: float,
    max_iterations: int | None = None,
) -> list[Any]:
    """CrossHair's ``diffbehavior``: the inputs found (within ``seconds`` per condition) on
    which ``f`` and ``g`` return differently; empty when none was found.

    ``diffbehavior`` searches until its budget runs out, even after a difference. A test that
    must find one bounds the search by ``max_iterations`` (paths, split between the two
    argument orders) and gives ``seconds`` as a ceiling that only a failing search reaches:
    the same paths are explored however loaded the machine is."""
    options = DEFAULT_OPTIONS.overlay(
        AnalysisOptionSet(per_condition_timeout=seconds, per_path_timeout=max(seconds / 4, 0.5))
    )
    if max_iterations is not None:
        options = options.overlay(AnalysisOptionSet(max_iterations=max_iterations))
    diffs = diff_behavior(FunctionInfo.from_fn(f), FunctionInfo.from_fn(g), options)
    if isinstance(diffs, str):
        raise ValueError(
            f"CrossHair cannot compare {f.__name__} with {g.__name__}: {diffs} "
            "(give both the same signature)"
        )
    return list(diffs)


# --- the catalogue -------------------------------------------------------------------------

# function -> CPU seconds per condition (postcondition) in the default run
RULES: dict[str, tuple[Callable[..., Any], float]] = {
    "follower_hw": (rules.follower_hw, 1.0),
    "recompute_leader_hw": (rules.recompute_leader_hw, 0.3),
    "may_join_isr_published": (rules.may_join_isr_published, 0.3),
    "truncation_offset_kip279": (rules.truncation_offset_kip279, 0.3),
    "truncation_offset_hw": (rules.truncation_offset_hw, 0.3),
}
SLOW_RULES: dict[str, tuple[Callable[..., Any], float]] = {
    "leader_advance_hw": (rules.leader_advance_hw, 0.5),
    "epoch_start_offset": (rules.epoch_start_offset, 0.5),
    "may_join_isr_kafka": (rules.may_join_isr_kafka, 0.5),
    "truncation_offset_kip101": (rules.truncation_offset_kip101, 0.5),
    "epoch_end_offset": (rules.epoch_end_offset, 0.5),
    "truncation_by_epoch_exchange": (rules.truncation_by_epoch_exchange, 1.0),
}
"""The spec's rules too slow for the default run's per-rule test."""

# Every contract-carrying function, with its default-run budget (those not in the default run
# are too slow for it). ``RoundRobinPartitioner.partition`` is a method: it is checked
# through the two partitioner wrappers.
CONTRACTS: dict[str, tuple[Callable[..., Any], float]] = {
    **{f"rules.{name}": entry for name, entry in {**RULES, **SLOW_RULES}.items()},
    **IMPL_FUNCTIONS,
    **IMPL_LOG,
    **ASSIGNORS,
    "murmur2": (murmur2, 1.0),
    "keyless_partitions_stay_in_range": (keyless_partitions_stay_in_range, 2.0),
    "batch_round_trip": (batch_round_trip, 10.0),
}


def follower_hw_unclamped(leader_hw: int, follower_leo: int) -> int:
    """The ``follower_hw_unclamped`` bug: the follower takes the leader's HW as is.

    pre: leader_hw >= 0
    pre: follower_leo >= 0
    post: __return__ <= follower_leo
    post: __return__ <= leader_hw
    """
    return leader_hw


CONTROLS: dict[str, Callable[..., Any]] = {
    "follower_hw_unclamped": follower_hw_unclamped,
    "index_lookup_bisect_left": index_lookup_bisect_left,
    **{f"assignor {name}": fn for name, fn in sorted(BROKEN_ASSIGNORS.items())},
}
"""Deliberately broken copies, each under a contract it must be found to violate."""
