"""Throughput of the delivery checker (``jepsen_py.checker.delivery.check_delivery``), the
local engine's ``kmodel verify --delivery``.

Generates consumer-group histories (``deliverygen``: members that commit before or after
processing, rebalances, fetches racing commits, kills, commits that end info; seeded) of
about 10^5 and 10^6 ops over 8 partitions, times ``check_delivery`` on each (best of two
runs, one for the largest), and prints ONE JSON line: ops/second per size, and the ratio of
the per-op cost between the sizes (near 1: a pass, sorts and binary searches; near 10
would be quadratic).

    .venv/bin/python benchmarks/delivery_check.py [--sizes 100000,1000000] [--seed 1]
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import sys
import time
from itertools import pairwise

from jepsen_py.checker.anomalies import AT_LEAST_ONCE
from jepsen_py.checker.delivery import check_delivery
from jepsen_py.checker.deliverygen import GroupWorkload, generate_group

OPS_PER_STEP = 1.35
"""About how many ops a generator step writes (measured on these workloads)."""


def measure(size: int, seed: int) -> dict[str, float | int]:
    started = time.perf_counter()
    w = GroupWorkload(keys=8, producers=4, members=6, steps=int(size / OPS_PER_STEP), p_fault=0.0)
    ops = generate_group(random.Random(seed), w)
    generated = time.perf_counter() - started
    gc.collect()
    best = float("inf")
    for _ in range(2 if size <= 100_000 else 1):
        started = time.perf_counter()
        keys = check_delivery(ops, AT_LEAST_ONCE)
        best = min(best, time.perf_counter() - started)
    found = {}
    for key in keys:
        for name, n in key.anomalies.counts.items():
            found[name] = found.get(name, 0) + n
    return {
        "ops": len(ops),
        "seconds": round(best, 4),
        "ops_per_second": round(len(ops) / best),
        "ns_per_op": round(best / len(ops) * 1e9, 1),
        "generate_seconds": round(generated, 3),
        "keys": len(keys),
        "anomalies": {n: c for n, c in found.items() if c},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {str(size): measure(size, args.seed) for size in sizes}
    per_op = [results[str(s)]["ns_per_op"] for s in sizes]
    print(
        json.dumps(
            {
                "benchmark": "delivery_check",
                "seed": args.seed,
                "sizes": results,
                "cost_ratio": [round(b / a, 2) for a, b in pairwise(per_op)],
                "python": platform.python_version(),
                "platform": sys.platform,
            }
        )
    )


if __name__ == "__main__":
    main()
