"""Where ``kmodel verify --engine spark`` (``local[*]``) starts to beat ``--engine local``.

Each case is a directory of histories, verified by both engines as whole processes (what a
user waits for: interpreter, imports, a JVM for Spark, reading, checking), the engines
alternating, ``--repeat`` times each (the best is kept):

- ``log-<ops>``: Kafka-log histories from `histgen` (seeded; 1,000 ops per key, runs of at
  most 100,000 ops per file), ``--sizes`` ops in all: the cost per byte of each engine;
- ``tiny-<n>``: ``n`` files of 100 ops each: the cost per file;
- ``porcupine-etcd``: Porcupine's 102 etcd histories (``../shared/corpora/porcupine``
  beside the repository or ``PORCUPINE_CORPUS``), when present.

Both engines must agree on every case's counts of ok / illegal / unknown keys (the run
stops otherwise). Prints ONE JSON line: each case's files, bytes, ops and seconds per
engine, and a least-squares fit over the ``log`` cases of ``seconds = fixed + per_mb * MB``
for each engine, with the size where the lines cross (``crossover_mb``). The load average
is printed with them: this machine is shared, and the crossover moves with the load.

    .venv/bin/python benchmarks/engine_crossover.py [--sizes 10000,100000,1000000]
        [--tiny 100,1000] [--repeat 1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from jepsen_py.checker.histgen import LogWorkload, generate
from jepsen_py.history import write_jsonl

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("PORCUPINE_CORPUS", REPO / ".." / "shared" / "corpora" / "porcupine"))
RUN_CLI = "import sys; from jepsen_py.cli import main; sys.argv[0] = 'kmodel'; main()"
FILE_OPS = 100_000
KEY_OPS = 1_000


def make_logs(folder: Path, ops: int, seed: int) -> None:
    """``ops`` Kafka-log ops in files of at most `FILE_OPS`, `KEY_OPS` per key."""
    folder.mkdir(parents=True)
    files = max(1, -(-ops // FILE_OPS))
    for run in range(files):
        size = ops // files
        workload = LogWorkload(ops=size, keys=max(1, size // KEY_OPS), producers=20, consumers=20)
        write_jsonl(folder / f"run-{run:04d}.jsonl", generate(random.Random(seed + run), workload))


def make_tiny(folder: Path, count: int, seed: int) -> None:
    folder.mkdir(parents=True)
    for run in range(count):
        write_jsonl(
            folder / f"run-{run:05d}.jsonl",
            generate(random.Random(seed + run), LogWorkload(ops=100)),
        )


def verify(engine: str, folder: Path, extra: list[str]) -> tuple[float, dict[str, int]]:
    """Wall seconds of ``kmodel verify --engine ENGINE FOLDER --json``, and its totals."""
    command = [sys.executable, "-c", RUN_CLI, "verify", "--engine", engine, "--json", *extra]
    started = time.perf_counter()
    done = subprocess.run([*command, str(folder)], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{engine} on {folder} exited {done.returncode}: {done.stderr[-2000:]}")
    totals = orjson.loads(done.stdout.strip().splitlines()[-1])["totals"]
    return seconds, {name: totals[name] for name in ("keys", "ok", "illegal", "unknown")}


def measure(name: str, folder: Path, repeat: int, extra: list[str]) -> dict[str, Any]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    case: dict[str, Any] = {
        "case": name,
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
        "loadavg_before": round(os.getloadavg()[0], 2),
    }
    best: dict[str, float] = {}
    counts: dict[str, dict[str, int]] = {}
    for _ in range(repeat):
        for engine in ("local", "spark"):
            seconds, counts[engine] = verify(engine, folder, extra)
            best[engine] = min(best.get(engine, seconds), seconds)
    if counts["local"] != counts["spark"]:
        raise SystemExit(f"{name}: the engines disagree: {counts}")
    case.update({f"{engine}_seconds": round(s, 2) for engine, s in best.items()})
    case["keys"] = counts["local"]["keys"]
    case["illegal_keys"] = counts["local"]["illegal"]
    case["loadavg_after"] = round(os.getloadavg()[0], 2)
    print(orjson.dumps(case).decode(), file=sys.stderr)  # progress; the result is stdout's
    return case


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares ``y = a + b x``: (a, b)."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / var if var else 0.0
    return mean_y - slope * mean_x, slope


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="log cases, in ops")
    parser.add_argument("--tiny", default="100,1000", help="tiny-file cases, in files")
    parser.add_argument("--repeat", type=int, default=1, help="runs per engine; best kept")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", default=None, help="generate into (and keep) this directory")
    args = parser.parse_args()
    scratch = Path(args.keep or tempfile.mkdtemp(prefix="kmodel-crossover-"))
    cases: list[dict[str, Any]] = []
    try:
        for ops in [int(float(s)) for s in args.sizes.split(",") if s]:
            folder = scratch / f"log-{ops}"
            if not folder.exists():
                make_logs(folder, ops, args.seed)
            cases.append({**measure(f"log-{ops}", folder, args.repeat, []), "ops": ops})
        for count in [int(s) for s in args.tiny.split(",") if s]:
            folder = scratch / f"tiny-{count}"
            if not folder.exists():
                make_tiny(folder, count, args.seed)
            cases.append(measure(f"tiny-{count}", folder, args.repeat, []))
        if (CORPUS / "jepsen").is_dir():
            extra = ["--format", "porcupine-etcd", "--model", "cas-register"]
            cases.append(measure("porcupine-etcd", CORPUS / "jepsen", args.repeat, extra))
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    logs = [c for c in cases if c["case"].startswith("log-")]
    line: dict[str, Any] = {"benchmark": "engine_crossover", "cases": cases}
    if len(logs) >= 2:
        mb = [c["bytes"] / 1e6 for c in logs]
        local = fit([(x, c["local_seconds"]) for x, c in zip(mb, logs, strict=True)])
        spark = fit([(x, c["spark_seconds"]) for x, c in zip(mb, logs, strict=True)])
        line["local_fit"] = {"fixed_s": round(local[0], 2), "per_mb_s": round(local[1], 4)}
        line["spark_fit"] = {"fixed_s": round(spark[0], 2), "per_mb_s": round(spark[1], 4)}
        if local[1] > spark[1]:
            line["crossover_mb"] = round((spark[0] - local[0]) / (local[1] - spark[1]), 1)
        else:
            line["crossover_mb"] = None  # Spark's cost per MB is not below the local engine's
    line["loadavg_1min"] = round(os.getloadavg()[0], 2)
    line["cpus"] = os.cpu_count() or 0
    print(orjson.dumps(line).decode())


if __name__ == "__main__":
    main()
