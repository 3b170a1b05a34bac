"""Throughput of the exact Kafka-log checker (``jepsen_py.checker.kafka_log.check_log``).

Generates valid single-key histories of 10^4, 10^5 and 10^6 ops (``histgen``: overlapping
windows, info and failed sends, stale and partial polls; seeded), times ``check_log`` on
each (best of three runs, two for the largest), and prints ONE JSON line: ops/second per
size, and the ratio of the per-op cost between consecutive sizes. The checker is a pass,
a sort and a scan (O(n log n)): the ratios should stay near 1 (log-factor growth, cache
effects), never near 10 (quadratic).

    .venv/bin/python benchmarks/log_checker.py [--sizes 10000,100000,1000000] [--seed 1]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import platform
import random
import sys
import time

from jepsen_py.checker.histgen import LogWorkload, generate
from jepsen_py.checker.kafka_log import check_log
from jepsen_py.checker.result import Verdict


def measure(size: int, seed: int) -> dict[str, float | int]:
    started = time.perf_counter()
    ops = generate(random.Random(seed), LogWorkload(ops=size, keys=1, final_reads=False))
    generated = time.perf_counter() - started
    gc.collect()  # settle the generator's allocations before timing the checker
    repeats = 3 if size <= 100_000 else 2
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        result = check_log(ops)
        best = min(best, time.perf_counter() - started)
        if result.verdict is not Verdict.OK:  # a wrong verdict makes the figure meaningless
            raise SystemExit(f"check_log said {result.verdict.value} on a valid history: {result}")
    return {
        "ops": len(ops),
        "seconds": round(best, 4),
        "ops_per_second": round(len(ops) / best),
        "ns_per_op": round(best / len(ops) * 1e9, 1),
        "generate_seconds": round(generated, 3),
        "log_length": result.log_length,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    runs = {str(size): measure(size, args.seed) for size in sizes}
    ratios = {
        f"{b}/{a}": round(runs[str(b)]["ns_per_op"] / runs[str(a)]["ns_per_op"], 3)
        for a, b in itertools.pairwise(sizes)
    }
    print(
        json.dumps(
            {
                "benchmark": "log_checker",
                "seed": args.seed,
                "python": platform.python_version(),
                "ops_per_second": {k: v["ops_per_second"] for k, v in runs.items()},
                "per_op_cost_ratio": ratios,
                "runs": runs,
            },
            sort_keys=True,
        )
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
