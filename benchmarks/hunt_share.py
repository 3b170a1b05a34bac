"""The share of generic-fault runs that show each known-unsafe entry (issue 21): a steadier
figure than ``bug_hunt.py``'s runs-to-bug, which depends on where its 10 seeds start.

Each entry of ``bug_hunt.entries()`` (and ``safe``) runs every seed of ``--seeds`` exactly as
``bug_hunt.py`` runs it (`bug_hunt.run_one`: the swarm draw of ``kmodel test --runs N --seed S
--nemesis all <flags>``, the same rules for what counts as the entry's anomaly). For the median
start to find an entry within 10 runs, about 7% of the runs must show it (1 - 0.93^10 = 0.52).

The seeds also read as consecutive starts of ``--block`` runs (default 10: seeds 1..100 are
the starts 1, 11, ..., 91 of ``bug_hunt.py --runs 10 --seed S``): per entry, each start's
runs to the bug (null when none of its block shows it) and their median, counting null as
``block + 1``: ``bug_hunt.py``'s figure over ten starts instead of three.

Prints ONE JSON line: per entry the runs, how many showed it, their share and seeds, the
runs to the bug per start and their median; the configuration; the wall time.

    .venv/bin/python benchmarks/hunt_share.py --only NAME,... [--seeds 1-100]
        [--max-faults 3] [--buggify] [--time-limit 60] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bug_hunt import SAFE, entries, run_one

CHUNK = 10
"""Seeds per job, so that one entry's seeds spread over the workers."""


def seeds_of(text: str) -> list[int]:
    """``1-100`` or ``1,5,9``: the seeds named."""
    if "-" in text:
        first, last = (int(part) for part in text.split("-", 1))
        return list(range(first, last + 1))
    return [int(part) for part in text.split(",") if part]


def runs_to_bug(seeds: list[int], shown: list[int], block: int) -> list[int | None]:
    """For each start (``seeds`` cut in blocks of ``block``), how many runs from it to the
    first seed in ``shown``, or None."""
    out: list[int | None] = []
    hits = set(shown)
    for i in range(0, len(seeds), block):
        found = [n for n, seed in enumerate(seeds[i : i + block], start=1) if seed in hits]
        out.append(found[0] if found else None)
    return out


def job(args: tuple[str, dict[str, Any], list[int], int, int, bool]) -> tuple[str, list[int]]:
    """Run an entry's seeds; return the ones that showed it."""
    name, fields, seeds, time_limit_s, max_faults, buggify = args
    shown = [
        seed
        for seed in seeds
        if run_one(name, fields, seed, time_limit_s, max_faults, buggify)["invalid"]
    ]
    return name, shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", required=True, help="comma-separated entry names")
    parser.add_argument("--seeds", default="1-100", help="FIRST-LAST or a comma list")
    parser.add_argument("--time-limit", type=int, default=60, help="seconds of each run")
    parser.add_argument("--max-faults", type=int, default=3)
    parser.add_argument("--buggify", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--block", type=int, default=10, help="runs per start")
    args = parser.parse_args()
    table = entries()
    table[SAFE] = ({}, "")
    names = [n for n in args.only.split(",") if n]
    unknown = sorted(set(names) - set(table))
    if unknown:
        parser.error(f"--only: unknown {unknown}; entries: {', '.join(table)}")
    seeds = seeds_of(args.seeds)
    jobs = [
        (name, table[name][0], seeds[i : i + CHUNK], args.time_limit, args.max_faults, args.buggify)
        for name in names
        for i in range(0, len(seeds), CHUNK)
    ]
    started = time.perf_counter()
    shown: dict[str, list[int]] = {name: [] for name in names}
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for name, found in pool.map(job, jobs):
            shown[name] += found
            print(f"  {name}: {found}", file=sys.stderr, flush=True)
    print(
        json.dumps(
            {
                "entries": {
                    name: {
                        "runs": len(seeds),
                        "shown": len(shown[name]),
                        "share": round(len(shown[name]) / len(seeds), 3),
                        "seeds": sorted(shown[name]),
                        "runs_to_bug": (found := runs_to_bug(seeds, shown[name], args.block)),
                        "median_runs_to_bug": statistics.median(
                            args.block + 1 if n is None else n for n in found
                        ),
                    }
                    for name in names
                },
                "seeds": args.seeds,
                "max_faults": args.max_faults,
                "buggify": args.buggify,
                "time_limit_s": args.time_limit,
                "block": args.block,
                "wall_s": round(time.perf_counter() - started, 1),
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
