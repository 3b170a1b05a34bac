"""Our model checker and TLC on the published 2018 replication model, side by side in one run.

Needs TLC and the published specs, neither of which the project ships:

- ``TLA2TOOLS``: the path of a ``tla2tools.jar`` (TLC, from the TLA+ tools' releases), run
  with the ``java`` on the PATH;
- ``KAFKA_SPEC_DIR``: a checkout of github.com/hachikuji/kafka-specification (the modules
  ``KafkaReplication``, ``Kip320`` and what they extend).

Without them the script prints one JSON line saying it was skipped, and exits 0.

For each configuration (the issue's table: KIP-320 with 3 replicas and LogSize, MaxRecords,
MaxLeaderEpoch 2/2/2, with and without symmetry, and 2 replicas with 3/3/3), it writes a
TLC model (a module extending the spec, with ``Permutations(Replicas)`` for symmetry, and a
config checking ``TypeOk`` and ``StrongIsr`` from ``Init``/``Next``, deadlock not checked),
then alternates the runs: TLC with 1 and 2 workers, ``kmodel check`` sequentially and with
``--workers 2``, each ``--repeat`` times, and reports medians of wall seconds, the distinct
states each found (they must agree: the parity tests hold our counts to TLC's published
ones) and our time as a ratio to TLC's. One JSON line, as every benchmark.

Run: ``TLA2TOOLS=.../tla2tools.jar KAFKA_SPEC_DIR=.../kafka-specification
.venv/bin/python benchmarks/tlc_side_by_side.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from spec.explore import check
from spec.parallel import check_parallel
from spec.replication import Params, Replication

CONFIGS = (
    {"name": "kip320-3r-222", "replicas": 3, "bounds": 2, "symmetry": False},
    {"name": "kip320-3r-222-symmetry", "replicas": 3, "bounds": 2, "symmetry": True},
    {"name": "kip320-2r-333", "replicas": 2, "bounds": 3, "symmetry": False},
)

MODEL = """---- MODULE MC ----
EXTENDS Kip320, TLC
Perms == Permutations(Replicas)
====
"""


def tlc_config(replicas: int, bounds: int, symmetry: bool) -> str:
    """A TLC configuration: the constants as model values and numbers, the invariants."""
    names = ", ".join(f"r{i}" for i in range(1, replicas + 1))
    lines = [
        "INIT Init",
        "NEXT Next",
        f"CONSTANTS Replicas = {{{names}}}",
        f"CONSTANTS LogSize = {bounds} MaxRecords = {bounds} MaxLeaderEpoch = {bounds}",
        "INVARIANTS TypeOk StrongIsr",
        "CHECK_DEADLOCK FALSE",
    ]
    if symmetry:
        lines.append("SYMMETRY Perms")
    return "\n".join(lines) + "\n"


def run_tlc(jar: str, specs: Path, config: dict[str, Any], workers: int) -> dict[str, Any]:
    """One TLC run in a scratch directory: wall seconds, distinct states, depth."""
    with tempfile.TemporaryDirectory(prefix="tlc-") as scratch:
        work = Path(scratch)
        for module in specs.glob("*.tla"):
            shutil.copy(module, work / module.name)
        (work / "MC.tla").write_text(MODEL)
        cfg = tlc_config(config["replicas"], config["bounds"], config["symmetry"])
        (work / "MC.cfg").write_text(cfg)
        command = [
            "java",
            "-XX:+UseParallelGC",
            "-cp",
            jar,
            "tlc2.TLC",
            "-workers",
            str(workers),
            "-config",
            "MC.cfg",
            "MC.tla",
        ]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
    out = done.stdout + done.stderr
    states = re.search(r"([\d,]+) distinct states found", out)
    depth = re.search(r"depth of the complete state graph search is (\d+)", out)
    if done.returncode != 0 or states is None:
        raise RuntimeError(f"TLC failed (exit {done.returncode}):\n{out[-2000:]}")
    return {
        "seconds": seconds,
        "states": int(states.group(1).replace(",", "")),
        "depth": int(depth.group(1)) if depth else None,
    }


def run_ours(config: dict[str, Any], workers: int) -> dict[str, Any]:
    """One run of our checker on the same model: wall seconds, distinct states, depth."""
    b = config["bounds"]
    spec = Replication(
        Params(
            replicas=config["replicas"],
            log_size=b,
            max_records=b,
            max_epoch=b,
            truncation="kip320",
        )
    )
    invariants = ["StrongIsr"]  # TypeOk holds by construction (typed records)
    started = time.perf_counter()
    if workers == 1:
        result = check(spec, invariants=invariants, symmetry=config["symmetry"])
    else:
        result = check_parallel(
            spec, invariants=invariants, symmetry=config["symmetry"], workers=workers
        )
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "states": result.stats.distinct_states, "depth": result.stats.depth}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    jar, specs = os.environ.get("TLA2TOOLS"), os.environ.get("KAFKA_SPEC_DIR")
    if not jar or not specs or not Path(jar).is_file() or not Path(specs, "Kip320.tla").is_file():
        print(
            orjson.dumps(
                {
                    "benchmark": "tlc_side_by_side",
                    "skipped": "set TLA2TOOLS to a tla2tools.jar and KAFKA_SPEC_DIR to a "
                    "checkout of hachikuji/kafka-specification",
                }
            ).decode()
        )
        return
    figures: dict[str, Any] = {}
    for config in CONFIGS:
        times: dict[str, list[float]] = {"tlc1": [], "tlc2": [], "ours1": [], "ours2": []}
        states: dict[str, int] = {}
        for _ in range(args.repeat):  # alternate, so load changes hit every engine alike
            for label, workers in (("tlc1", 1), ("ours1", 1), ("tlc2", 2), ("ours2", 2)):
                if label.startswith("tlc"):
                    got = run_tlc(jar, Path(specs), config, workers)
                else:
                    got = run_ours(config, workers)
                times[label].append(got["seconds"])
                states[label] = got["states"]
                print(f"{config['name']} {label}: {got}", file=sys.stderr, flush=True)
        med = {label: statistics.median(ts) for label, ts in times.items()}
        figures[config["name"]] = {
            "median_seconds": {k: round(v, 2) for k, v in med.items()},
            "states": states,
            "ours_over_tlc_1_worker": round(med["ours1"] / med["tlc1"], 2),
            "ours_over_tlc_2_workers": round(med["ours2"] / med["tlc2"], 2),
        }
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(
        orjson.dumps(
            {"benchmark": "tlc_side_by_side", "repeat": args.repeat, "load": load, **figures}
        ).decode()
    )


if __name__ == "__main__":
    main()
