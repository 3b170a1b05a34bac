"""CrossHair paths explored per function within a fixed budget (issue 6, section 6).

Prints one JSON line: for every contract-carrying rule of ``spec.proofs.rules`` and every
contract wrapper of the implementation (partitioner, leader-epoch cache, record batches, in
``model_tests/test_crosshair_contracts.py``), the execution paths CrossHair explored with
``--per_condition_timeout`` seconds per postcondition, the wall time, and the violations
found (none expected; the deliberately broken copy of the HW rule is included as a control
and must show one). Run: ``.venv/bin/python benchmarks/crosshair_paths.py [--budget S]``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import orjson

# The implementation's contract wrappers live with their tests (spec/ may not import impl/).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model_tests import test_crosshair_contracts as contracts
from spec.proofs import rules

FUNCTIONS = {
    "rules.follower_hw": rules.follower_hw,
    "rules.leader_advance_hw": rules.leader_advance_hw,
    "rules.recompute_leader_hw": rules.recompute_leader_hw,
    "rules.epoch_start_offset": rules.epoch_start_offset,
    "rules.may_join_isr_published": rules.may_join_isr_published,
    "rules.may_join_isr_kafka": rules.may_join_isr_kafka,
    "rules.truncation_offset_kip101": rules.truncation_offset_kip101,
    "rules.truncation_offset_kip279": rules.truncation_offset_kip279,
    "rules.epoch_end_offset": rules.epoch_end_offset,
    "rules.truncation_by_epoch_exchange": rules.truncation_by_epoch_exchange,
    "impl.partitioner.to_positive": contracts.to_positive,
    "impl.partitioner.partition_for_key": contracts.partition_for_key,
    "keyed_partition_ignores_availability": contracts.keyed_partition_ignores_availability,
    "keyless_partitions_stay_in_range": contracts.keyless_partitions_stay_in_range,
    "leader_epoch_cache.epoch_lookup": contracts.epoch_lookup,
    "batch_round_trip": contracts.batch_round_trip,
    "control: follower_hw_unclamped (broken)": contracts.follower_hw_unclamped,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=float, default=2.0, help="CPU s per condition")
    args = parser.parse_args()
    results = {}
    for name, fn in FUNCTIONS.items():
        started = time.perf_counter()
        bad, paths = contracts.crosshair_check(fn, args.budget)
        results[name] = {
            "paths": paths,
            "violations": len(bad),
            "wall_seconds": round(time.perf_counter() - started, 3),
        }
    figures = {
        "benchmark": "crosshair_paths",
        "python": platform.python_version(),
        "per_condition_budget_cpu_seconds": args.budget,
        "functions": results,
        "total_paths": sum(r["paths"] for r in results.values()),
    }
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
