"""A large swarm of Kafka's safe configuration under every fault but correlated power loss:
does it lose or misplace an acknowledged write, and if it does, is every loss explained by a
mechanism the docs list?

The safe configuration: acks=all, min.insync.replicas=2, 3 brokers, 2 partitions, clean
election, KIP-320 truncation, idempotent producers (``jepsen_py.scenarios.KAFKA_TODAY``).
Each run is ``kmodel test --runs N``'s swarm run for its seed: a random subset of ``all``
(every fault of the catalogue except ``kill-all``), its own fault interval, rate and
clients, 60 s of logical time, then heal, recovery and final reads. Runs are spread over
``--workers`` processes (each run is a deterministic function of its seed, so the figures do
not depend on how they are spread).

Prints ONE JSON line: runs, verdict counts (under ``--consistency kafka``), linearizability
verdicts beside them, lost and inconsistent writes, the runs that lost writes by mechanism
(and the unexplained ones, with their seeds), the violations counted over invalid runs, the
runs showing each informational anomaly (``stale-read``, ``unseen``), and the wall time.

    .venv/bin/python benchmarks/safe_swarm.py [--runs 500] [--seed 1] [--workers 2] [--elr]

``--elr`` runs the same seeds with KIP-966's Eligible Leader Replicas on (``kmodel test
--elr``; each seed's swarm draw is the same, so the runs differ only by ELR).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Any

import attrs

from jepsen_py.explain import MECHANISMS
from jepsen_py.runner.config import swarm_config
from jepsen_py.runner.run import run_test
from jepsen_py.scenarios import KAFKA_TODAY


def one_run(seed: int, elr: bool = False) -> dict[str, Any]:
    config = swarm_config(attrs.evolve(KAFKA_TODAY, elr=elr), seed)
    outcome = run_test(config, seed, reports=False)
    check = outcome.check
    return {
        "seed": seed,
        "verdict": outcome.verdict_name,
        "violations": list(check.violations),
        "informational": check.informational,
        "linearizable": check.linearizable.verdict.value,
        "lost": check.lost_acknowledged_writes,
        "inconsistent": check.inconsistent_offsets,
        "mechanisms": check.loss_mechanisms,
        "logical_s": outcome.figures.logical_end_ns / 1e9,
        "command": outcome.command,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1, help="the first run's seed")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--elr", action="store_true", help="KIP-966 ELR on (kmodel test --elr)")
    args = parser.parse_args()
    started = time.perf_counter()
    seeds = range(args.seed, args.seed + args.runs)
    results: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        runs = pool.map(partial(one_run, elr=args.elr), seeds, chunksize=4)
        for done, result in enumerate(runs, start=1):
            results.append(result)
            if done % 25 == 0:
                print(
                    f"{done}/{args.runs} runs, {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    verdicts = Counter(r["verdict"] for r in results)
    violations = Counter(v for r in results for v in r["violations"])
    informational = Counter(n for r in results for n in r["informational"])
    linearizable = Counter(r["linearizable"] for r in results)
    by_mechanism = Counter(m for r in results for m in r["mechanisms"])
    lossy = [r for r in results if r["lost"]]
    unexplained = [
        r["seed"] for r in lossy if not r["mechanisms"] or "unexplained" in r["mechanisms"]
    ]
    unlisted = sorted({m for r in lossy for m in r["mechanisms"]} - set(MECHANISMS))
    print(
        json.dumps(
            {
                "benchmark": "safe_swarm",
                "python": platform.python_version(),
                "runs": len(results),
                "first_seed": args.seed,
                "workers": args.workers,
                "elr": args.elr,
                "verdicts": dict(sorted(verdicts.items())),
                "violations_in_invalid_runs": dict(sorted(violations.items())),
                "runs_with_informational": dict(sorted(informational.items())),
                "linearizability": dict(sorted(linearizable.items())),
                "lost_acknowledged_writes": sum(r["lost"] for r in results),
                "inconsistent_offsets": sum(r["inconsistent"] for r in results),
                "runs_with_losses": len(lossy),
                "runs_with_losses_by_mechanism": dict(sorted(by_mechanism.items())),
                "unexplained_seeds": unexplained,
                "unlisted_mechanisms": unlisted,
                "lossy_runs": [
                    {k: r[k] for k in ("seed", "lost", "mechanisms", "command")} for r in lossy
                ],
                "logical_seconds": round(sum(r["logical_s"] for r in results), 1),
                "wall_seconds": round(time.perf_counter() - started, 1),
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
