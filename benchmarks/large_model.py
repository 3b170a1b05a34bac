"""A model too large to keep in memory as objects: the published replication model with
KIP-320, three replicas and 3/3/3 bounds (log size, records, leader epochs), explored to the
end with symmetry reduction and a fingerprint seen set (``kmodel check --fingerprints``).

Prints one JSON line: distinct (reduced) states, the unreduced count when asked
(``--unreduced``; it costs an orbit computation per state), depth, wall and CPU seconds,
peak resident memory and memory per distinct state, the seen set's bytes, and TLC's
collision estimate. Progress goes to stderr every 30 s. With ``--spill DIR`` the levels and
the seen set live in DIR (``kmodel check --fingerprints --spill``). Run:
``.venv/bin/python benchmarks/large_model.py [--replicas 3 --bound 3] [--spill DIR]``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import orjson

from spec.explore import Stats
from spec.fingerprints import check_fingerprints
from spec.parallel import check_parallel
from spec.replication import Params, Replication
from spec.spill import check_spilled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--bound", type=int, default=3, help="log size = records = epochs")
    parser.add_argument("--truncation", default="kip320")
    parser.add_argument("--no-symmetry", action="store_true")
    parser.add_argument("--max-states", type=int, default=None)
    parser.add_argument("--unreduced", action="store_true", help="also count unreduced states")
    parser.add_argument("--workers", type=int, default=1, help="processes (kmodel check --workers)")
    parser.add_argument(
        "--spill", default=None, help="a directory: levels and seen set on disk (--spill)"
    )
    args = parser.parse_args()
    params = Params(
        replicas=args.replicas,
        truncation=args.truncation,
        log_size=args.bound,
        max_records=args.bound,
        max_epoch=args.bound,
    )
    started, cpu_started = time.perf_counter(), time.process_time()
    last = [started]

    def progress(stats: Stats) -> None:
        now = time.perf_counter()
        if now - last[0] >= 30:
            last[0] = now
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"progress: {stats.distinct_states:,} states, depth {stats.depth}, "
                f"{now - started:,.0f} s, {rss:,.0f} MiB",
                file=sys.stderr,
                flush=True,
            )

    if args.workers > 1:
        result = check_parallel(
            Replication(params),
            workers=args.workers,
            invariants=["StrongIsr"],
            symmetry=not args.no_symmetry,
            max_states=args.max_states,
            clock=time.perf_counter,
            progress=progress,
            progress_every=50_000,
            count_unreduced=args.unreduced,
        )
    elif args.spill is not None:
        result = check_spilled(
            Replication(params),
            args.spill,
            invariants=["StrongIsr"],
            symmetry=not args.no_symmetry,
            max_states=args.max_states,
            clock=time.perf_counter,
            progress=progress,
            progress_every=50_000,
            count_unreduced=args.unreduced,
        )
    else:
        result = check_fingerprints(
            Replication(params),
            invariants=["StrongIsr"],
            symmetry=not args.no_symmetry,
            max_states=args.max_states,
            clock=time.perf_counter,
            progress=progress,
            progress_every=50_000,
            count_unreduced=args.unreduced,
        )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    stats = result.stats
    print(
        orjson.dumps(
            {
                "benchmark": "large_model",
                "config": f"published-2018 {args.truncation}, {args.replicas} replicas, "
                f"{args.bound}/{args.bound}/{args.bound}, symmetry {not args.no_symmetry}, "
                f"{args.workers} worker(s)" + (", spilled to disk" if args.spill else ""),
                "complete": result.complete,
                "violated": None if result.violation is None else result.violation.name,
                "distinct_states": stats.distinct_states,
                "unreduced_states": stats.unreduced_states,
                "states_generated": stats.states_generated,
                "depth": stats.depth,
                "wall_seconds": round(wall, 1),
                "cpu_seconds": round(cpu, 1),
                "peak_rss_bytes": peak,
                "peak_rss_bytes_per_state": round(peak / max(stats.distinct_states, 1), 1),
                "seen_set_bytes": stats.seen_bytes,
                "collision_probability": stats.collision_probability,
            }
        ).decode()
    )


if __name__ == "__main__":
    main()
