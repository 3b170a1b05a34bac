"""The consumer-group spec's figures (issue 18, part 1): one JSON line.

``kmodel check group``'s default bounds for each ``--protocol``, the shortest
counterexample of every outcome pinned in ``spec.group_outcomes`` (each ``--bug`` and the
generation-reuse finding), and ``kmodel prove group``'s runs. Single-threaded. CPU seconds
are reported beside wall seconds because the machine may be shared. Run:
``.venv/bin/python benchmarks/group_check.py``.
"""

from __future__ import annotations

import platform
import time
from typing import Any

import orjson

from spec.explore import check
from spec.group import PROTOCOLS, Params, build
from spec.group_outcomes import OUTCOMES
from spec.proofs.group.obligations import prove


def _timed(fn: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def checked(params: Params, invariants: tuple[str, ...] = ()) -> dict[str, object]:
    result, wall, cpu = _timed(lambda: check(build(params), invariants=list(invariants) or None))
    stats = result.stats
    return {
        "distinct_states": stats.distinct_states,
        "states_generated": stats.states_generated,
        "depth": stats.depth,
        "violated": None if result.violation is None else result.violation.name,
        "trace_length": None if result.violation is None else result.violation.depth,
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
    }


def proved(params: Params) -> dict[str, object]:
    run, wall, cpu = _timed(lambda: prove(params))
    return {
        "status": run.status,
        "obligations": len(run.results),
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
    }


def main() -> None:
    figures = {
        "benchmark": "group_check",
        "python": platform.python_version(),
        "default": {p: checked(Params(protocol=p)) for p in PROTOCOLS},
        "outcomes": {
            o.name: checked(o.params, o.invariants)
            for o in OUTCOMES
            if o.expect_violation is not None
        },
        "prove": {
            "consumer_2x2": proved(Params(protocol="consumer")),
            "consumer_3x3": proved(Params(protocol="consumer", members=3, partitions=3)),
        },
    }
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
