"""Whole ``kmodel verify`` processes, start-up included: wall time, the CPU and the peak
resident memory of the process tree (the driver, Spark's JVM and its Python workers),
on a free machine or beside busy loops.

Runs each configuration (``--configs``) ``--repeat`` times, alternating, on one history
directory (``--data``, e.g. the ten runs of 10^6 ops that
``benchmarks/spark_verify.py --sizes 10000000 --data DIR`` leaves in ``DIR/ops-10000000``):

- ``whole``: ``kmodel verify --engine spark --master MASTER DIR`` (the whole-file path for
  the files it may take);
- ``per-key``: the same with ``--no-whole-files`` (every file through the per-key path);
- ``local``: ``kmodel verify --engine local DIR``.

``--busy N`` starts N busy loops (``python -c "while 1: pass"``) before the runs and ends
them after (by their process ids): the machine "loaded" with N cores kept busy by other
processes. The tree's CPU is sampled from /proc every 0.2 s (so its last 0.2 s may be
missed) and the load average read before and after each run, since this machine is
shared and its other work shows in the wall time. Prints ONE JSON line per run.

    .venv/bin/python benchmarks/verify_process.py --data DIR [--configs whole,per-key]
        [--repeat 1] [--busy 0] [--master 'local[2]']
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from proc_tree import watched

KMODEL = str(Path(sys.executable).with_name("kmodel"))


def measured(command: list[str]) -> dict[str, Any]:
    """One run of ``command``: wall, tree CPU, tree peak RSS, exit code, last stderr line."""
    load = os.getloadavg()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        run = watched(command, 0.2, out, err)
        err.seek(0)
        said = err.read().decode(errors="replace").strip().splitlines()
    own = run.usage.ru_utime + run.usage.ru_stime  # the driver and what it waited for
    return {
        "seconds": round(run.seconds, 1),
        "tree_cpu_seconds": round(max(run.peak_cpu, own), 1),
        "tree_peak_rss_mb": round(run.peak_rss / 2**20),
        "exit_code": os.waitstatus_to_exitcode(run.status),
        "load_average_before": [round(x, 2) for x in load],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "last_line": said[-1][:300] if said else "",
    }


def command_of(config: str, folder: str, master: str) -> list[str]:
    spark = [KMODEL, "verify", "--engine", "spark", "--master", master]
    return {
        "whole": [*spark, folder],
        "per-key": [*spark, "--no-whole-files", folder],
        "local": [KMODEL, "verify", "--engine", "local", folder],
    }[config]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the history directory to verify")
    parser.add_argument("--configs", default="whole,per-key")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--busy", type=int, default=0, help="busy loops to run beside")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    loops = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(args.busy)]
    try:
        for round_ in range(args.repeat):
            for config in args.configs.split(","):
                result = measured(command_of(config, args.data, args.master))
                line = {"benchmark": "verify_process", "config": config, "round": round_}
                line.update(busy_loops=args.busy, cores=os.cpu_count(), **result)
                print(json.dumps(line, sort_keys=True))
                sys.stdout.flush()
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


if __name__ == "__main__":
    main()
