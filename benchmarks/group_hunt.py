"""The bug hunt's group runs over a range of seeds: how many are invalid, and why.

``benchmarks/bug_hunt.py`` stops at the first seed that shows an entry's anomaly; this
script runs every seed of a range in the same configuration (``kmodel test --workload
group --nemesis GROUP_FENCE_FAULTS --interval 4s --time-limit 60s``, the group faults but
the application's own) with the given fences off (none: the safe configuration, whose
invalid runs are false alarms), and prints one JSON line: the invalid seeds, the delivery
anomalies summed over the runs, and the CPU seconds. ``--monitor-interval-ms 0`` turns the
offsets monitor off (``docs/offsets.md``, "The offsets monitor").

    .venv/bin/python benchmarks/group_hunt.py --seeds 1-200
    .venv/bin/python benchmarks/group_hunt.py --seeds 1-50 --bug fetch_before_load
    .venv/bin/python benchmarks/group_hunt.py --seeds 1-50 --bug fetch_before_load \\
        --monitor-interval-ms 0
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bug_hunt import GROUP_FENCE_FAULTS

from impl.sim.clock import ms
from jepsen_py.group_workload import GROUP_BUGS, run_group_test

SECOND = 1_000_000_000


def seed_range(text: str) -> range:
    """``A-B`` (both included) or a single seed."""
    first, _, last = text.partition("-")
    try:
        a, b = int(first), int(last or first)
    except ValueError:
        raise SystemExit(f"--seeds {text!r}: expected A-B or one seed, e.g. 1-200") from None
    if a < 0 or b < a:
        raise SystemExit(f"--seeds {text!r}: expected 0 <= A <= B")
    return range(a, b + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-50", help="A-B, both included")
    parser.add_argument("--bug", action="append", default=[], choices=sorted(GROUP_BUGS))
    parser.add_argument("--monitor-interval-ms", type=int, default=1000)
    args = parser.parse_args()
    seeds = seed_range(args.seeds)
    if args.monitor_interval_ms < 0:
        raise SystemExit("--monitor-interval-ms must be 0 (off) or positive")
    anomalies: collections.Counter[str] = collections.Counter()
    invalid = []
    start = time.process_time()
    for seed in seeds:
        result = run_group_test(
            seed=seed,
            faults=GROUP_FENCE_FAULTS,
            time_limit_ns=60 * SECOND,
            interval_ns=4 * SECOND,
            partitions=6,
            brokers=3,
            consumers=3,
            bugs=tuple(args.bug),
            store_root=None,
            name="group",
            monitor_interval_ns=ms(args.monitor_interval_ms),
        )
        anomalies.update(result["delivery"]["counts"])
        if not result["ok"]:
            invalid.append(seed)
        print(f"  seed {seed}: {result['verdict']}", file=sys.stderr, flush=True)
    print(
        orjson.dumps(
            {
                "benchmark": "group_hunt",
                "seeds": [seeds.start, seeds.stop - 1],
                "bugs": sorted(args.bug),
                "monitor_interval_ms": args.monitor_interval_ms,
                "runs": len(seeds),
                "invalid": len(invalid),
                "invalid_seeds": invalid,
                "anomalies": dict(sorted(anomalies.items())),
                "cpu_seconds": round(time.process_time() - start, 1),
            }
        ).decode()
    )


if __name__ == "__main__":
    main()
