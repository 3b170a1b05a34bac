"""The rebalance spec's figures (issue 17, part 1): one JSON line.

``kmodel check rebalance --mechanism M``'s default bounds for every mechanism (and ``all``),
the shortest counterexample of every ``--bug`` choice (KIP-966's loss without the ELR among
them, beside the run with it), and ``kmodel prove rebalance`` for 2, 3 and 4 brokers.
Single-threaded. CPU seconds are reported beside wall seconds because the machine may be
shared. Run: ``.venv/bin/python benchmarks/rebalance_check.py``.
"""

from __future__ import annotations

import platform
import time
from typing import Any

import orjson

from spec.explore import check
from spec.liveness import check_liveness
from spec.proofs.rebalance import Config, prove
from spec.rebalance import BUGS, CHOICES, Params, Rebalance


def _timed(fn: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def checked(params: Params) -> dict[str, object]:
    spec = Rebalance(params)
    result, wall, cpu = _timed(lambda: check(spec))
    stats = result.stats
    liveness: dict[str, object] | None = None
    if result.violation is None and spec.applicable_liveness():
        live, live_wall, _ = _timed(lambda: check_liveness(spec))
        liveness = {
            "states": live.states,
            "edges": live.edges,
            "violated": None if live.violation is None else live.violation.name,
            "lasso_states": None if live.violation is None else live.violation.lasso.states,
            "wall_seconds": round(live_wall, 3),
        }
    return {
        "mechanism": params.mechanism,
        "distinct_states": stats.distinct_states,
        "states_generated": stats.states_generated,
        "depth": stats.depth,
        "violated": None if result.violation is None else result.violation.name,
        "trace_length": None if result.violation is None else result.violation.depth,
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
        "liveness": liveness,
    }


def proved(brokers: int) -> dict[str, object]:
    run, wall, cpu = _timed(lambda: prove(Config(brokers=brokers)))
    return {
        "status": run.status,
        "obligations": len(run.results),
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
    }


def main() -> None:
    figures = {
        "benchmark": "rebalance_check",
        "python": platform.python_version(),
        "mechanisms": {m: checked(Params.of(m)) for m in CHOICES},
        "bugs": {bug: checked(Params.of(bugs=frozenset({bug}))) for bug in sorted(BUGS)},
        "prove": {str(n): proved(n) for n in (2, 3, 4)},
    }
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
