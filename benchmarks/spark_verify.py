"""Throughput of ``kmodel verify``: the local engine, and Spark on local[1] and local[2].

For each size (``--sizes``, default 10^5, 10^6, 10^7 ops) it generates Kafka-log histories
with ``histgen`` (seeded; about 1,000 keys in all: runs of at most 10^6 ops, each with
1,000 / runs keys; unique values, overlapping windows, info and failed sends, stale and
partial polls, a final read-back), injects a few anomalies into the first run (lost-write,
duplicate, poll-skip, nonmonotonic-send), streams every run to a JSONL file in a temporary
directory, and times:

- ``local``: the local engine (`engine.verify_path`), file after file, in this process;
- ``spark_local1`` / ``spark_local2``: `checker.spark.verify_spark` on the directory, each
  configuration in a process of its own (a new JVM, as a ``kmodel verify`` run starts one);
  ``spark2k`` (``spark_local2_per_key``): ``local[2]`` with the whole-file path off
  (``--no-whole-files``), every file through the per-key path, as before that path existed.
  ``startup_seconds`` is the session's start (the JVM); ``warmup_seconds`` a first
  verification of a tiny history (JIT, Python workers): the fixed cost of a Spark
  verification, paid once per session; ``seconds`` then the verification of the size
  itself, with the job's own figures (``first_pass_seconds``, ``steps``) and its CPU time
  split between the JVM, the Python workers and the driver's Python.

Every configuration must return the same verdicts (it raises otherwise). Prints ONE JSON
line per size, as soon as that size is done: ops/second for each configuration, ns per
op, and local[2]'s speed-up over local[1]; compare the ns per op across the lines to see
whether the cost per op stays flat as histories grow. The load average is printed with
the figures (before and after each configuration): this machine is shared, and its other
work slows everything measured here; ``cpu_seconds`` (the CPU time of the driver, the JVM
and its Python workers, from /proc) depends much less on that load, and ``cpu_seconds /
cores`` is the least wall time the same work could take on an idle machine with that
many cores.

    .venv/bin/python benchmarks/spark_verify.py [--sizes 100000,1000000,10000000]
        [--configs local,spark1,spark2,spark2k] [--data DIR] [--seed 1] [--driver-memory 3g]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from proc_tree import CUTIME, UTIME, descendants, proc_stats

from jepsen_py.checker.histgen import INJECTORS, LogWorkload, generate
from jepsen_py.history import write_jsonl

KEYS = 1000
RUN_OPS = 1_000_000
INJECTED = ("lost-write", "duplicate", "poll-skip", "nonmonotonic-send")


def make_histories(folder: Path, size: int, seed: int) -> dict[str, Any]:
    """Write the runs of ``size`` ops into ``folder`` (reused when already there)."""
    runs = max(1, size // RUN_OPS)
    keys = max(1, KEYS // runs)
    marker = folder / "_generated.json"  # hidden from the readers (a leading "_")
    if marker.exists():
        return dict(json.loads(marker.read_text()))
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    total = 0
    nbytes = 0
    for run in range(runs):
        rng = random.Random(seed * 1000 + run)
        workload = LogWorkload(ops=size // runs, keys=keys, producers=20, consumers=20)
        ops = generate(rng, workload)
        if run == 0:
            for name in INJECTED:
                ops = INJECTORS[name](ops, rng) or ops
        path = folder / f"run-{run:03d}.jsonl"
        write_jsonl(path, ops)
        total += len(ops)
        nbytes += path.stat().st_size
        del ops
    info = {
        "ops": total,
        "runs": runs,
        "keys": runs * keys,
        "bytes": nbytes,
        "generate_seconds": round(time.perf_counter() - started, 1),
    }
    marker.write_text(json.dumps(info))
    return info


def tree_cpu_seconds(root: int) -> tuple[float, float]:
    """User + system CPU seconds of process ``root`` (the JVM) and of every process below it
    (its Python daemon and workers), from Linux's /proc; children a process has waited for
    (a Python worker that exited) count through its ``cutime``/``cstime``. CPU time depends
    much less than wall time on what else the machine runs, so ``ops / cpu_seconds``
    compares configurations on a shared box."""
    stats = proc_stats()
    tick = os.sysconf("SC_CLK_TCK")

    def seconds(pid: int, first: int) -> float:
        """Two consecutive tick fields of ``pid`` (none when it ended), in seconds."""
        fields = stats.get(pid)
        return 0.0 if fields is None else (int(fields[first]) + int(fields[first + 1])) / tick

    below = seconds(root, CUTIME)
    for pid in descendants(root, stats):
        below += seconds(pid, UTIME) + seconds(pid, CUTIME)
    return seconds(root, UTIME), below


def run_local(folder: Path) -> dict[str, Any]:
    from jepsen_py.checker.engine import verify_path

    cpu = os.times()
    started = time.perf_counter()
    verdicts: dict[str, str] = {}
    ops = 0
    for path in sorted(folder.glob("*.jsonl")):
        result = verify_path(path)
        verdicts[path.name] = result.verdict.value
        ops += result.ops
    seconds = time.perf_counter() - started
    after = os.times()
    cpu_seconds = (after.user - cpu.user) + (after.system - cpu.system)
    return {
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2),
        "ops": ops,
        "verdicts": verdicts,
    }


def run_spark(
    folder: Path, master: str, memory: str, scratch: Path, whole_files: bool = True
) -> dict[str, Any]:
    """One Spark configuration in a process of its own, as ``kmodel verify`` would run:
    a JVM started for it, with no JIT or Python worker left over from another one."""
    command = [sys.executable, __file__, "--one-spark", master, "--data", str(scratch)]
    command += ["--driver-memory", memory, str(folder)]
    if not whole_files:
        command.append("--per-key")
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def spark_once(
    folder: Path, master: str, memory: str, scratch: Path, whole_files: bool = True
) -> dict[str, Any]:
    from jepsen_py.checker.spark import SessionOptions, SparkOptions, verify_spark
    from jepsen_py.checker.spark.session import start

    started = time.perf_counter()
    spark = start(SessionOptions(master=master, driver_memory=memory, progress=False))
    startup = time.perf_counter() - started
    try:
        tiny = scratch / "tiny"
        tiny.mkdir(exist_ok=True)
        write_jsonl(tiny / "tiny.jsonl", generate(random.Random(0), LogWorkload(ops=200)))
        began = time.perf_counter()
        verify_spark([str(tiny)], SparkOptions(), spark=spark)
        warmup = time.perf_counter() - began
        jvm = spark.sparkContext._gateway.proc  # the JVM, its Python daemon and workers
        jvm_before, workers_before = tree_cpu_seconds(jvm.pid)
        own = os.times()  # this process: the driver's Python
        began = time.perf_counter()
        options = SparkOptions(whole_files=whole_files)
        report = verify_spark([str(folder)], options, spark=spark)
        seconds = time.perf_counter() - began
        mine = os.times()
        jvm_after, workers_after = tree_cpu_seconds(jvm.pid)
    finally:
        spark.stop()
    cpu = {
        "jvm": jvm_after - jvm_before,
        "python_workers": workers_after - workers_before,
        "driver_python": (mine.user - own.user) + (mine.system - own.system),
    }
    verdicts = {Path(r.path).name: r.verdict.value for r in report.inputs}
    figures = report.figures
    return {
        "startup_seconds": round(startup, 2),
        "warmup_seconds": round(warmup, 2),
        "seconds": round(seconds, 2),
        "cpu_seconds": round(sum(cpu.values()), 2),
        "cpu_split_seconds": {name: round(value, 2) for name, value in cpu.items()},
        "ops": figures.get("ops", 0),
        "partitions": figures.get("partitions"),
        "first_pass_seconds": figures.get("first_pass_seconds"),
        "whole_files": figures.get("whole_files"),
        "steps": figures.get("steps"),
        "verdicts": verdicts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,10000000")
    parser.add_argument("--configs", default="local,spark1,spark2")
    parser.add_argument("--data", default=None, help="keep generated histories here")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--driver-memory", default="3g")
    parser.add_argument("--one-spark", metavar="MASTER", help=argparse.SUPPRESS)
    parser.add_argument("--per-key", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("folder", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_spark:  # a child of `run_spark`: one configuration, one JSON line
        result = spark_once(
            Path(args.folder), args.one_spark, args.driver_memory, Path(args.data), not args.per_key
        )
        print(json.dumps(result, sort_keys=True))
        return
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    configs = args.configs.split(",")
    scratch = Path(args.data or tempfile.mkdtemp(prefix="kmodel-spark-bench-"))
    for size in sizes:
        folder = scratch / f"ops-{size}"
        info = make_histories(folder, size, args.seed)
        line: dict[str, Any] = {
            "benchmark": "spark_verify",
            "size": size,
            **info,
            "python": platform.python_version(),
            "cores": os.cpu_count(),
        }
        results: dict[str, dict[str, Any]] = {}
        for config in configs:
            load = os.getloadavg()
            if config == "local":
                result = run_local(folder)
            else:
                master = {"spark1": "local[1]", "spark2": "local[2]", "spark2k": "local[2]"}[config]
                whole = config != "spark2k"
                result = run_spark(folder, master, args.driver_memory, scratch, whole)
            result["load_average_before"] = [round(x, 2) for x in load]
            result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
            ops = info["ops"]
            result["ops_per_second"] = round(ops / result["seconds"]) if result["seconds"] else 0
            result["ns_per_op"] = round(result["seconds"] / ops * 1e9) if ops else 0
            result["cpu_ns_per_op"] = round(result["cpu_seconds"] / ops * 1e9) if ops else 0
            results[config] = result
        verdicts = {name: r.pop("verdicts") for name, r in results.items()}
        first = next(iter(verdicts.values()), {})
        if any(v != first for v in verdicts.values()):
            raise SystemExit(f"the engines disagree on size {size}: {verdicts}")
        line["verdicts"] = {v: list(first.values()).count(v) for v in sorted(set(first.values()))}
        names = {"spark1": "spark_local1", "spark2": "spark_local2",
                 "spark2k": "spark_local2_per_key"}  # fmt: skip
        line.update({names.get(k, k): v for k, v in results.items()})
        if "spark1" in results and "spark2" in results:
            line["speedup_local2_over_local1"] = round(
                results["spark1"]["seconds"] / results["spark2"]["seconds"], 2
            )
        print(json.dumps(line, sort_keys=True))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
