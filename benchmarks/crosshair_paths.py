"""CrossHair paths explored per function within a fixed budget (issue 6, section 3).

Prints one JSON line: for every contract-carrying function (``impl.contract_check.CONTRACTS``:
the rules of ``spec.proofs.rules``, the partitioner, leader-epoch cache, offset index and
record-batch harnesses of ``impl.contracts``, and the consumer-group assignors of
``impl.assignors`` with their small-group harnesses), the
execution paths CrossHair explored with ``--per_condition_timeout`` seconds per condition,
the wall time, and the violations found (none expected). Then the controls, deliberately
broken copies that must each show a violation: the paths CrossHair explored until its first
one (within ``--control-budget``; ``impl.contract_check.CONTROLS``). Run:
``.venv/bin/python benchmarks/crosshair_paths.py [--budget S] [--control-budget S]``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from impl.contract_check import CONTRACTS, CONTROLS, crosshair_check

FUNCTIONS = {name: fn for name, (fn, _) in sorted(CONTRACTS.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=float, default=2.0, help="CPU s per condition")
    parser.add_argument(
        "--control-budget", type=float, default=8.0, help="CPU s per condition, controls"
    )
    args = parser.parse_args()
    results = {}
    for name, fn in FUNCTIONS.items():
        started = time.perf_counter()
        bad, paths = crosshair_check(fn, args.budget)
        results[name] = {
            "paths": paths,
            "violations": len(bad),
            "wall_seconds": round(time.perf_counter() - started, 3),
        }
    controls = {}
    for name, fn in CONTROLS.items():
        started = time.perf_counter()
        bad, paths = crosshair_check(fn, args.control_budget, first_only=True)
        controls[name] = {
            "paths_to_first_violation": paths if bad else None,
            "found": bool(bad),
            "wall_seconds": round(time.perf_counter() - started, 3),
        }
    figures = {
        "benchmark": "crosshair_paths",
        "python": platform.python_version(),
        "per_condition_budget_cpu_seconds": args.budget,
        "control_budget_cpu_seconds": args.control_budget,
        "functions": results,
        "total_paths": sum(r["paths"] for r in results.values()),
        "violations": sum(r["violations"] for r in results.values()),
        "controls": controls,
        "controls_found": sum(c["found"] for c in controls.values()),
    }
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
