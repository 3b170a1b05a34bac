"""Model-checking runs of the rebalance spec shared by several test modules (each
mechanism's default configuration, computed once per test session)."""

from __future__ import annotations

import functools

from spec.explore import CheckResult, check
from spec.rebalance import Params, Rebalance


@functools.cache
def default_check(mechanism: str) -> CheckResult:
    """Every reachable state of ``kmodel check rebalance --mechanism MECHANISM``."""
    return check(Rebalance(Params.of(mechanism)))
