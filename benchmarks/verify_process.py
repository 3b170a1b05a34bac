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
import threading
import time
from pathlib import Path
from typing import Any

from proc_tree import CUTIME, RSS, UTIME, descendants, proc_stats

KMODEL = str(Path(sys.executable).with_name("kmodel"))


def tree_sample(root: int) -> tuple[float, int]:
    """(CPU seconds, resident bytes) of ``root`` and the processes below it: each one's
    own CPU and that of the children it waited for (``cutime``)."""
    stats = proc_stats()
    tick = os.sysconf("SC_CLK_TCK")
    page = os.sysconf("SC_PAGE_SIZE")
    cpu = 0.0
    rss = 0
    for pid in [root, *descendants(root, stats)]:
        fields = stats.get(pid)
        if fields is None:
            continue
        ticks = sum(int(fields[i]) for i in (UTIME, UTIME + 1, CUTIME, CUTIME + 1))
        cpu += ticks / tick
        rss += int(fields[RSS]) * page
    return cpu, rss


def measured(command: list[str]) -> dict[str, Any]:
    """One run of ``command``: wall, tree CPU, tree peak RSS, exit code, last stderr line."""
    load = os.getloadavg()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err)
        peak_cpu = [0.0]
        peak_rss = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.2):
                cpu, rss = tree_sample(process.pid)
                peak_cpu[0] = max(peak_cpu[0], cpu)
                peak_rss[0] = max(peak_rss[0], rss)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        done.set()
        sampler.join()
        seconds = time.perf_counter() - started
        err.seek(0)
        said = err.read().decode(errors="replace").strip().splitlines()
    own = usage.ru_utime + usage.ru_stime  # the driver and what it waited for
    return {
        "seconds": round(seconds, 1),
        "tree_cpu_seconds": round(max(peak_cpu[0], own), 1),
        "tree_peak_rss_mb": round(peak_rss[0] / 2**20),
        "exit_code": os.waitstatus_to_exitcode(status),
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
