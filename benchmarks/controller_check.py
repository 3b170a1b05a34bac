"""The controller spec's figures (issue 16, part 1): one JSON line.

``kmodel check controller``'s default bounds with and without symmetry reduction, the
shortest counterexample of every ``--bug`` choice, and ``kmodel prove controller``'s run.
Single-threaded. CPU seconds are reported beside wall seconds because the machine may be
shared (wall-clock rates then understate the checker). Run:
``.venv/bin/python benchmarks/controller_check.py``.
"""

from __future__ import annotations

import platform
import time
from typing import Any

import orjson

from spec.controller import BUGS, Controller, Params
from spec.explore import check
from spec.proofs.controller.encoding import Config
from spec.proofs.controller.obligations import prove


def _timed(fn: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def checked(params: Params, symmetry: bool = False) -> dict[str, object]:
    result, wall, cpu = _timed(lambda: check(Controller(params), symmetry=symmetry))
    stats = result.stats
    return {
        "distinct_states": stats.distinct_states,
        "unreduced_states": stats.unreduced_states,
        "states_generated": stats.states_generated,
        "depth": stats.depth,
        "violated": None if result.violation is None else result.violation.name,
        "trace_length": None if result.violation is None else result.violation.depth,
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
    }


def main() -> None:
    run, wall, cpu = _timed(lambda: prove(Config()))
    figures = {
        "benchmark": "controller_check",
        "python": platform.python_version(),
        "default": checked(Params()),
        "default_symmetry": checked(Params(), symmetry=True),
        "bugs": {bug: checked(Params(bugs=frozenset({bug}))) for bug in sorted(BUGS)},
        "prove": {
            "status": run.status,
            "obligations": len(run.results),
            "wall_seconds": round(wall, 3),
            "cpu_seconds": round(cpu, 3),
        },
    }
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
