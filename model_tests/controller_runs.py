"""Model-checking runs of the controller spec shared by several test modules (computed once
per test session: the default configuration takes a few seconds)."""

from __future__ import annotations

import functools

from spec.controller import Controller, Params
from spec.explore import CheckResult, check


@functools.cache
def default_check() -> CheckResult:
    """Every reachable state of ``kmodel check controller``'s default bounds."""
    return check(Controller(Params()))
