"""The offsets spec's figures (issue 19, part 1): one JSON line.

``kmodel check offsets``'s default bounds, every outcome pinned in
``spec.offsets_outcomes`` (each ``--bug``'s shortest counterexample, the at-most-once loss,
the holding configurations) and the liveness check of ``WorkCommitted``. Single-threaded.
CPU seconds are reported beside wall seconds because the machine may be shared. Run:
``.venv/bin/python benchmarks/offsets_check.py``.
"""

from __future__ import annotations

import platform
import time
from typing import Any

import orjson

from spec.explore import check
from spec.liveness import check_liveness
from spec.offsets import Params, build
from spec.offsets_outcomes import LIVENESS, OUTCOMES


def _timed(fn: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def checked(params: Params, invariants: tuple[str, ...] = ()) -> dict[str, object]:
    result, wall, cpu = _timed(lambda: check(build(params), invariants=list(invariants) or None))
    stats = result.stats
    return {
        "distinct_states": stats.distinct_states,
        "depth": stats.depth,
        "violated": None if result.violation is None else result.violation.name,
        "trace_length": None if result.violation is None else result.violation.depth,
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
    }


def live(params: Params) -> dict[str, object]:
    result, wall, cpu = _timed(lambda: check_liveness(build(params)))
    violation = result.violation
    return {
        "states": result.states,
        "transitions": result.edges,
        "violated": None if violation is None else violation.name,
        "lasso": None
        if violation is None
        else [len(violation.lasso.prefix), len(violation.lasso.cycle)],
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
    }


def main() -> None:
    figures = {
        "benchmark": "offsets_check",
        "python": platform.python_version(),
        "outcomes": {o.name: checked(o.params, o.invariants) for o in OUTCOMES},
        "liveness": {name: live(params) for name, _, params, _, _ in LIVENESS},
    }
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
