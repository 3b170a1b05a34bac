"""The fault injector's speed: a one-minute logical test with every fault, and shrinking a
failing run.

1. ``kmodel test``'s default configuration with ``--nemesis all`` (acks=all,
   min.insync.replicas=2, 3 brokers, 2 partitions, 5 clients at up to 100 ops/s, a fault
   every ~5 s) for 60 s of logical time, then heal, 20 s of recovery and the final reads:
   wall time to the verdict, client ops per wall second, history size, checker time, and
   the time to render the reports (timeline and PNG plots) on top;
2. a failing run -- the 2013 unclean-election pattern (followers cut off from the leader,
   then the leader cut off; acks=all, min.insync.replicas=1, unclean election) with unrelated
   faults mixed in (delays, message loss, pauses) -- shrunk with ``kmodel shrink``'s
   passes: wall time, runs, and the factor (history ops before / after).

Prints ONE JSON line.

    .venv/bin/python benchmarks/jepsen_run.py [--seed 1] [--max-runs 200]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time

from jepsen_py.generator import MILLISECOND, SECOND
from jepsen_py.nemesis import ALL, ScheduleStep
from jepsen_py.runner.config import TestConfig
from jepsen_py.runner.run import run_test
from jepsen_py.scenarios import CUT_FOLLOWERS, ISOLATE_LEADER
from jepsen_py.shrink import shrink

FAILING = TestConfig(
    name="bench-unclean",
    acks="all",
    min_isr=1,
    unclean=True,
    partitions=2,
    schedule=(
        ScheduleStep(
            1 * SECOND,
            "start-delay",
            {"min_delay_ns": 5 * MILLISECOND, "max_delay_ns": 40 * MILLISECOND},
        ),
        ScheduleStep(3 * SECOND, "stop-delay"),
        ScheduleStep(4 * SECOND, "pause", {"node": "b3"}),
        ScheduleStep(6 * SECOND, "resume"),
        ScheduleStep(
            8 * SECOND, "start-partition", {"shape": "isr-shrink", "grudge": CUT_FOLLOWERS}
        ),
        ScheduleStep(12 * SECOND, "start-loss", {"drop_probability": 0.05}),
        ScheduleStep(14 * SECOND, "stop-loss"),
        ScheduleStep(
            24 * SECOND, "start-partition", {"shape": "leader-cut", "grudge": ISOLATE_LEADER}
        ),
        ScheduleStep(36 * SECOND, "stop-partition"),
        ScheduleStep(40 * SECOND, "start-pause-controller"),
        ScheduleStep(42 * SECOND, "stop-pause-controller"),
        ScheduleStep(
            46 * SECOND,
            "start-delay",
            {"min_delay_ns": 5 * MILLISECOND, "max_delay_ns": 40 * MILLISECOND},
        ),
        ScheduleStep(50 * SECOND, "stop-delay"),
    ),
    time_limit_ns=60 * SECOND,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as store:
        config = TestConfig(nemesis=ALL)
        outcome = run_test(config, args.seed, store_root=store)
        client_ops = sum(1 for op in outcome.history if op.is_client and op.type == "invoke")
        wall = outcome.seconds.wall
        history_bytes = (outcome.run_dir / "history.jsonl").stat().st_size  # type: ignore[operator]
        failing = run_test(FAILING, args.seed, store_root=store, reports=False)
        if failing.check.lost_acknowledged_writes == 0:
            raise SystemExit(f"the failing run lost nothing (seed {args.seed}): {failing.command}")
        started = time.perf_counter()
        shrunk = shrink(failing.run_dir, max_runs=args.max_runs, reports=False)  # type: ignore[arg-type]
        shrink_seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "benchmark": "jepsen_run",
                "seed": args.seed,
                "python": platform.python_version(),
                "test": {
                    "logical_seconds": config.time_limit_ns / SECOND,
                    "logical_end_seconds": round(outcome.figures.logical_end_ns / SECOND, 3),
                    "faults": sum(outcome.faults.values()),
                    "wall_seconds_to_verdict": wall,
                    "simulation_seconds": outcome.seconds.simulation,
                    "checker_seconds": outcome.check.checker_seconds,
                    "reports_seconds": outcome.seconds.reports,
                    "client_ops": client_ops,
                    "ops_per_wall_second": round(client_ops / wall, 1),
                    "history_ops": len(outcome.history),
                    "history_bytes": history_bytes,
                    "verdict": outcome.verdict_name,
                    "violations": outcome.violations,
                    "lost_acknowledged_writes": outcome.check.lost_acknowledged_writes,
                },
                "shrink": {
                    "anomaly": shrunk.target,
                    "seconds": round(shrink_seconds, 3),
                    "runs": shrunk.runs,
                    "factor": round(shrunk.factor, 2),
                    "before": shrunk.before.to_json(),
                    "after": shrunk.after.to_json(),
                },
            },
            sort_keys=True,
        )
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
