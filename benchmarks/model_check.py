"""Model-checking throughput (issue: spec framework and the replication spec, section 5).

Prints one JSON line: distinct states, states/second, depth and wall time for the published
model's default bounds with three replicas (kip320, LOG_SIZE 2, MAX_RECORDS 2, MAX_EPOCH 2)
with and without symmetry reduction, sequentially, on two worker processes
(``--workers 2``) and with a fingerprint seen set (``--fingerprints``), side by side in one
run, and the time to the first KIP-101 counterexample. CPU seconds are reported beside wall
seconds because the machine may be shared (wall-clock rates then understate the checker);
with workers they count the coordinator only, so compare wall seconds on an idle machine.
Run:
``.venv/bin/python benchmarks/model_check.py``.
"""

from __future__ import annotations

import platform
import time

import orjson

from spec.explore import CheckResult, check
from spec.fingerprints import check_fingerprints
from spec.outcomes import by_name
from spec.parallel import check_parallel
from spec.replication import Params, Replication


def run(
    params: Params, symmetry: bool, invariants: list[str], engine: str = "sequential"
) -> dict[str, object]:
    started = time.perf_counter()
    cpu_started = time.process_time()
    spec = Replication(params)
    result: CheckResult
    if engine == "workers-2":
        result = check_parallel(spec, workers=2, invariants=invariants, symmetry=symmetry)
    elif engine == "fingerprints":
        result = check_fingerprints(spec, invariants=invariants, symmetry=symmetry)
    else:
        result = check(spec, invariants=invariants, symmetry=symmetry, clock=time.perf_counter)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
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
        "distinct_states_per_second": round(stats.distinct_states / wall),
        "distinct_states_per_cpu_second": round(stats.distinct_states / cpu),
    }


def main() -> None:
    default = Params(replicas=3, truncation="kip320")
    kip101 = by_name("kip101-acked-write-lost")
    figures = {
        "benchmark": "model_check",
        "python": platform.python_version(),
        "config": "published-2018 kip320, 3 replicas, log 2, records 2, epochs 0..2",
        "no_symmetry": run(default, False, ["StrongIsr"]),
        "no_symmetry_workers_2": run(default, False, ["StrongIsr"], "workers-2"),
        "no_symmetry_fingerprints": run(default, False, ["StrongIsr"], "fingerprints"),
        "symmetry": run(default, True, ["StrongIsr"]),
        "symmetry_workers_2": run(default, True, ["StrongIsr"], "workers-2"),
        "kip101_first_counterexample": run(kip101.params, False, list(kip101.invariants)),
        "kip101_published_3_replicas": run(
            Params(replicas=3, truncation="high_watermark"), False, ["StrongIsr"]
        ),
    }
    base = figures["no_symmetry"]["wall_seconds"]  # type: ignore[index]
    figures["speedup_workers_2"] = round(
        base / figures["no_symmetry_workers_2"]["wall_seconds"],
        2,  # type: ignore[index]
    )
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
