"""Benchmark: appending small batches to a segmented log, and reading them back by offset.

Appends 10^5 one-record batches (8-byte key, 16-byte value) as a leader to a log on the
simulated disk (1 MiB segments, so it rolls and flushes as it goes; Kafka's default
``log.index.interval.bytes``), then reads 10^4 batches at offsets drawn from a seeded PRNG,
each through the sparse index. Prints one JSON line:

    appends_per_s, mb_per_s   (encoded batch bytes appended per second, 10^6 bytes = 1 MB)
    reads_per_s               (one-batch reads at random offsets)

Run: ``.venv/bin/python benchmarks/log_append.py [--batches N] [--reads N] [--seed S]``.
Wall-clock timing lives here only; nothing in ``impl`` reads a clock.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time

from impl.log import Log, LogConfig, RecordBatch
from impl.sim.disk import SimDisk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=100_000)
    parser.add_argument("--reads", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    config = LogConfig(segment_bytes=1024 * 1024)
    disk = SimDisk("bench")
    log = Log.open(disk, "bench-0", config=config)
    batches = [
        RecordBatch.of(b"value-%010d" % i, key=b"key-%04d" % (i % 10_000))
        for i in range(args.batches)
    ]

    start = time.perf_counter()
    for batch in batches:
        log.append_as_leader(batch, 1)
    append_seconds = time.perf_counter() - start
    appended_bytes = log.size_in_bytes
    log.check_invariants()

    rng = random.Random(args.seed)
    offsets = [rng.randrange(log.log_end_offset) for _ in range(args.reads)]
    start = time.perf_counter()
    for offset in offsets:
        data = log.read(offset, max_bytes=1)
        assert data, offset
    read_seconds = time.perf_counter() - start

    print(
        json.dumps(
            {
                "benchmark": "log_append",
                "batches": args.batches,
                "batch_bytes": appended_bytes // args.batches,
                "segments": len(log.segments),
                "appends_per_s": round(args.batches / append_seconds),
                "mb_per_s": round(appended_bytes / append_seconds / 1e6, 2),
                "reads": args.reads,
                "reads_per_s": round(args.reads / read_seconds),
                "fsyncs": disk.stats.fsyncs,
                "seed": args.seed,
                "python": platform.python_version(),
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
