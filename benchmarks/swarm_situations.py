"""How often swarm runs reach the situations Kafka's replication is decided in (issue 21):
an ISR shrink, an ISR of one replica (KIP-966's "last replica standing"), a leader
election, an unclean election (``unclean.leader.election.enable``), a broker session
expiry, and a controller failover.

Each run is exactly ``kmodel test --runs N --seed S --nemesis all <flags>``'s swarm run for
its seed (``jepsen_py.runner.config.swarm_config``: the fault subset, the pace tied to
``replica.lag.time.max.ms`` and the session timeout, the overlap, and the targeted faults
of ``jepsen_py.nemesis.TARGETED``), simulated through the runner (not checked: only the
cluster's timeline, ``impl.timeline``, is read). Four variants: Kafka's safe configuration
one fault at a time, up to three at once (``--max-faults 3``), the same with ``--buggify``
(``impl.buggify``), and ``--unclean --min-isr 1 --max-faults 3`` (where unclean
elections can happen at all).

Prints ONE JSON line: per variant, the runs, the share of runs that reached each situation
(``runs_with``) and the mean count per run (``per_run``)::

    .venv/bin/python benchmarks/swarm_situations.py [--runs 20] [--seed 1] [--time-limit 60]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from impl.timeline import Election, IsrChange, SessionExpiry
from jepsen_py.generator import SECOND
from jepsen_py.nemesis import ALL
from jepsen_py.runner.config import TestConfig, swarm_config
from jepsen_py.runner.drive import simulate_run

VARIANTS: dict[str, dict[str, Any]] = {
    "safe": {"max_faults": 1},
    "safe_max_faults_3": {"max_faults": 3},
    "safe_max_faults_3_buggify": {"max_faults": 3, "buggify": True},
    "unclean_min_isr_1_max_faults_3": {"max_faults": 3, "unclean": True, "min_isr": 1},
}
"""Variant name -> the ``TestConfig`` fields it sets (``--nemesis all`` for every one)."""

SITUATIONS = (
    "isr_shrink",
    "isr_of_one",
    "election",
    "unclean_election",
    "session_expiry",
    "controller_failover",
)


def situations(config: TestConfig, seed: int) -> Counter[str]:
    """What one run's cluster went through (counts of each of `SITUATIONS`)."""
    simulation = simulate_run(config, seed)
    seen: Counter[str] = Counter()
    topic = config.cluster_config().topic
    for e in simulation.events:
        if isinstance(e, Election | IsrChange) and e.topic == topic:
            if len(e.isr) < len(e.previous_isr):
                seen["isr_shrink"] += 1
            if len(e.isr) == 1:
                seen["isr_of_one"] += 1
            if isinstance(e, Election) and e.leader >= 0:
                seen["election"] += 1
                if not e.clean:
                    seen["unclean_election"] += 1
        elif isinstance(e, SessionExpiry):
            seen["session_expiry"] += 1
    elections = simulation.figures.controller.get("controller_elections", 0)
    seen["controller_failover"] += max(0, int(elections) - 1)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-limit", type=int, default=60)
    parser.add_argument("--only", default=None, help="comma-separated variant names")
    args = parser.parse_args()
    chosen = list(VARIANTS) if args.only is None else args.only.split(",")
    out: dict[str, Any] = {}
    for name in chosen:
        base = TestConfig(
            name=f"situations-{name}",
            nemesis=ALL,
            time_limit_ns=args.time_limit * SECOND,
            **VARIANTS[name],
        )
        runs_with: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for seed in range(args.seed, args.seed + args.runs):
            seen = situations(swarm_config(base, seed), seed)
            total.update(seen)
            runs_with.update({k: 1 for k, n in seen.items() if n})
        out[name] = {
            "runs": args.runs,
            "runs_with": {k: round(runs_with[k] / args.runs, 2) for k in SITUATIONS},
            "per_run": {k: round(total[k] / args.runs, 2) for k in SITUATIONS},
        }
        print(f"{name}: {out[name]}", file=sys.stderr, flush=True)
    print(json.dumps({"seed": args.seed, "time_limit_s": args.time_limit, **out}, sort_keys=True))


if __name__ == "__main__":
    main()
