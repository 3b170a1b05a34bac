"""Does steering (``kmodel test --runs N --steer``) reach more situations than the plain
swarm in the same number of runs?

For each starting seed S of ``--starts``, the swarm of seeds S..S+N-1 runs twice on the
local engine (`jepsen_py.runner.swarm.run_member`, the code both engines run): plain
(`swarm_config`) and steered (`Steering`, rounds of `ROUND`). Reached: the situations and
spec actions (`jepsen_py.runner.coverage`) at least one run of the swarm reached, after
each round and at the end; "rare" counts those reached by at most 2 runs of the N.

Prints ONE JSON line: the configuration, per mode the reached counts per start (final and
after each round), their mean, and the wall time.

    .venv/bin/python benchmarks/swarm_coverage.py [--runs 40] [--starts 1,1001,2001]
        [--time-limit 20] [--unsafe]

``--unsafe``: acks=1, min.insync.replicas=1, unclean election (more situations reachable:
unclean elections, acks below min.insync.replicas, truncated acknowledged records).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from typing import Any

import attrs

from jepsen_py.generator import SECOND
from jepsen_py.nemesis import parse_faults
from jepsen_py.runner.config import TestConfig
from jepsen_py.runner.coverage import coverage_table, possible
from jepsen_py.runner.swarm import ROUND, Steering, SwarmPlan, SwarmRow, rounds, run_member


def swarm(plan: SwarmPlan, start: int, runs: int, steer: bool) -> list[list[SwarmRow]]:
    steering = Steering.start(plan.base) if steer else None
    out = []
    for number, seeds in enumerate(rounds(start, runs, True)):
        batch = [run_member(plan, seed, steering, number)[1] for seed in seeds]
        out.append(batch)
        if steering is not None:
            steering = steering.learn(batch)
    return out


def reached(rows: list[SwarmRow]) -> tuple[int, int]:
    table = coverage_table(row.coverage for row in rows)
    return sum(1 for _, n in table if n), sum(1 for _, n in table if 0 < n <= 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--starts", default="1,1001,2001", help="first seeds, comma-separated")
    parser.add_argument("--time-limit", type=float, default=20.0, help="logical seconds")
    parser.add_argument("--unsafe", action="store_true")
    parser.add_argument("--modes", default="plain,steer", help="plain, steer or both")
    args = parser.parse_args()
    base = TestConfig(nemesis=parse_faults("all"), time_limit_ns=round(args.time_limit * SECOND))
    if args.unsafe:
        base = attrs.evolve(base, acks="1", min_isr=1, unclean=True)
    plan = SwarmPlan(base, None, reports=False)
    started = time.perf_counter()
    result: dict[str, Any] = {}
    for mode in args.modes.split(","):
        per_start = {}
        for start in (int(s) for s in args.starts.split(",")):
            batches = swarm(plan, start, args.runs, mode == "steer")
            so_far: list[SwarmRow] = []
            curve = []
            for batch in batches:
                so_far += batch
                curve.append(reached(so_far)[0])
            final, rare = reached(so_far)
            per_start[str(start)] = {"reached": final, "rare": rare, "after_each_round": curve}
        finals = [v["reached"] for v in per_start.values()]
        result[mode] = {
            "per_start": per_start,
            "mean_reached": round(sum(finals) / len(finals), 2),
            "mean_rare": round(sum(v["rare"] for v in per_start.values()) / len(finals), 2),
        }
    print(
        json.dumps(
            {
                "benchmark": "swarm_coverage",
                "runs": args.runs,
                "round": ROUND,
                "time_limit_s": args.time_limit,
                "config": "acks=1 min.isr=1 unclean" if args.unsafe else "acks=all min.isr=2",
                "possible": len(possible(base)),
                **result,
                "wall_s": round(time.perf_counter() - started, 1),
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "python": platform.python_version(),
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
