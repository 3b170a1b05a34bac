"""Runs per minute of a swarm (``kmodel test --runs N``) on the local engine and on Spark
``local[1]`` and ``local[2]``, side by side in one session.

Each engine runs the same swarm -- seeds S..S+N-1, ``--nemesis all``, ``--time-limit``,
``--no-reports`` -- as a whole ``kmodel test --json`` process, one after the other (in the
order local, local[1], local[2], repeated ``--repeat`` times). Runs per minute are counted
over the swarm itself (``seconds`` of the JSON: from the first run to the last verdict,
after Spark started); Spark's start-up and the whole process's wall time are reported
beside. The swarms must agree seed for seed (history hashes and verdicts): ``agree``.

``--master URL`` adds a Spark cluster (``spark://host:7077``, ``yarn``, ...) as a fourth
engine, ``spark_master``; ``--engines`` picks which engines run (the first one is the
reference the others must agree with).

Prints ONE JSON line, with the load average before and after (the machine may be shared).

    .venv/bin/python benchmarks/spark_swarm.py [--runs 12] [--seed 1] [--time-limit 20s]
        [--repeat 1] [--master URL] [--engines local,spark_local_2,spark_master]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ENGINES = {
    "local": ["--engine", "local"],
    "spark_local_1": ["--engine", "spark", "--master", "local[1]"],
    "spark_local_2": ["--engine", "spark", "--master", "local[2]"],
}


MASTER = "spark_master"
"""The engine ``--master`` names: Spark on that cluster."""


def kmodel() -> list[str]:
    return [sys.executable, "-c", "from jepsen_py.cli import main; main()"]


def one(engine: str, args: argparse.Namespace, store: Path) -> dict[str, Any]:
    flags = ["--engine", "spark", "--master", args.master] if engine == MASTER else ENGINES[engine]
    command = [*kmodel(), "test", "--runs", str(args.runs), "--seed", str(args.seed)]
    command += ["--time-limit", args.time_limit, "--nemesis", "all", "--no-reports", "--json"]
    command += ["--store", str(store), *flags]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{engine}: exit {done.returncode}: {done.stderr[-2000:]}")
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "seconds": payload["seconds"],
        "startup_seconds": payload["startup_seconds"],
        "process_seconds": round(wall, 2),
        "runs_per_minute": payload["runs_per_minute"],
        "runs": [(r["seed"], r["verdict"], r["history_hash"]) for r in payload["runs"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-limit", default="20s")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--master", default=None, help="a Spark cluster to run on too")
    parser.add_argument("--engines", default=None, help="comma-separated engines to run")
    args = parser.parse_args()
    known = [*ENGINES, *([MASTER] if args.master else [])]
    chosen = known if args.engines is None else args.engines.split(",")
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        parser.error(f"unknown engine(s) {', '.join(unknown)}; known: {', '.join(known)}")
    load_before = os.getloadavg()
    figures: dict[str, list[dict[str, Any]]] = {name: [] for name in chosen}
    with tempfile.TemporaryDirectory(prefix="kmodel-spark-swarm-") as scratch:
        for repeat in range(args.repeat):
            for name in chosen:
                store = Path(scratch) / f"{name}-{repeat}"
                figures[name].append(one(name, args, store))
    load_after = os.getloadavg()
    reference = figures[chosen[0]][0]["runs"]
    agree = all(f["runs"] == reference for runs in figures.values() for f in runs)
    out: dict[str, Any] = {}
    for name, runs in figures.items():
        best = max(runs, key=lambda f: f["runs_per_minute"])
        out[name] = {
            "runs_per_minute": [f["runs_per_minute"] for f in runs],
            "best_runs_per_minute": best["runs_per_minute"],
            "swarm_seconds": [f["seconds"] for f in runs],
            "startup_seconds": [f["startup_seconds"] for f in runs],
            "process_seconds": [f["process_seconds"] for f in runs],
        }
    print(
        json.dumps(
            {
                "benchmark": "spark_swarm",
                "runs": args.runs,
                "seed": args.seed,
                "time_limit": args.time_limit,
                "nemesis": "all",
                "master": args.master,
                **out,
                "agree": agree,
                "invalid_runs": sum(v == "invalid" for _, v, _ in reference),
                "load_average_before": [round(x, 2) for x in load_before],
                "load_average_after": [round(x, 2) for x in load_after],
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
