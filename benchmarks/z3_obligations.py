"""z3 proof obligations for the safe configuration (issue 6, section 6).

Prints one JSON line: for the published model with KIP-320 fencing, three replicas, logs of
any length up to L = 3 (LOG_SIZE any value 1..3), and unbounded epochs, record ids and
offsets: the z3 time of every obligation (invariant x action, plus Init), their total, the
wall time of the whole run (vacuity checks and formula building included), and the outcome
counts; then the time of bounded model checking to the first StrongIsr violation of the
pre-KIP-101 rule (two replicas, the explicit checker's bounds), next to the explicit
checker's. Obligation times are CPU seconds of this process by default (``--clock cpu``:
z3 runs in-process, and the figure does not depend on what else the machine is doing);
``--clock wall`` times them by the wall clock. Run:
``.venv/bin/python benchmarks/z3_obligations.py [--log-bound L] [--clock cpu|wall]``.
"""

from __future__ import annotations

import argparse
import platform
import time

import orjson
import z3

from spec.explore import check
from spec.proofs.bmc import bmc
from spec.proofs.encoding import Config
from spec.proofs.obligations import prove
from spec.replication import Params, Replication


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--log-bound", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--clock", choices=["cpu", "wall"], default="cpu")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    config = Config.of(
        Params(replicas=args.replicas, truncation="kip320"), args.log_bound, bounded=False
    )
    started, cpu_started = time.perf_counter(), time.process_time()
    run = prove(config, timeout_ms=60_000, clock=clock)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    per = {f"{r.invariant}/{r.action}": round(r.seconds, 4) for r in run.results}
    slowest = sorted(per.items(), key=lambda kv: -kv[1])[:5]

    hw = Params(replicas=2, truncation="high_watermark")
    started = time.perf_counter()
    found = bmc(Config.of(hw), "StrongIsr", 12)
    bmc_seconds = time.perf_counter() - started
    started = time.perf_counter()
    explicit = check(Replication(hw), invariants=["StrongIsr"])
    explicit_seconds = time.perf_counter() - started

    figures = {
        "benchmark": "z3_obligations",
        "python": platform.python_version(),
        "z3": z3.get_version_string(),
        "config": config.describe(),
        "status": run.status,
        "obligations": len(run.results),
        "proved": sum(1 for r in run.results if r.status == "proved"),
        "counterexamples": sum(1 for r in run.results if r.status == "counterexample"),
        "unknown": sum(1 for r in run.results if r.status == "unknown"),
        "actions_enabled_under_strengthening": sum(1 for _, a in run.enabled if a == "sat"),
        "actions": len(run.enabled),
        "clock": args.clock,
        "z3_seconds_total": round(sum(r.seconds for r in run.results), 3),
        "z3_seconds_max": max(per.values()),
        "z3_seconds_mean": round(sum(per.values()) / len(per), 4),
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
        "slowest": slowest,
        "per_obligation_seconds": per,
        "bmc_high_watermark_2_replicas": {
            "steps": found.steps,
            "depth": found.depth,
            "seconds": round(bmc_seconds, 3),
            "explicit_depth": None if explicit.violation is None else explicit.violation.depth,
            "explicit_seconds": round(explicit_seconds, 3),
        },
    }
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
