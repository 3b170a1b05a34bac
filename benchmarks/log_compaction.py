"""Log compaction's figures (issue 19, the log side): one JSON line.

A compacted log on a simulated disk (``impl.sim.disk.SimDisk``, in memory) is filled with
``RECORDS`` one-record batches over ``KEYS`` keys (every 50th a tombstone), in 4 KiB
segments, then cleaned once below its end (``impl.log.cleaner.clean_log``, the whole
.cleaned/.swap protocol included) and once more after the tombstones' delete horizon.
Reported: records and bytes before and after each pass, and records examined per second
(wall and CPU). Single-threaded; CPU seconds beside wall seconds because the machine may be
shared. Run: ``.venv/bin/python benchmarks/log_compaction.py``.
"""

from __future__ import annotations

import platform
import time

import orjson

from impl.log import Log, LogConfig, RecordBatch
from impl.log.cleaner import CleanResult, clean_log
from impl.sim.disk import SimDisk

RECORDS = 20_000
KEYS = 500


def _figures(result: CleanResult, wall: float, cpu: float) -> dict[str, object]:
    return {
        "records_before": result.records_before,
        "records_after": result.records_after,
        "bytes_before": result.bytes_before,
        "bytes_after": result.bytes_after,
        "segments_before": result.segments_before,
        "segments_after": result.segments_after,
        "tombstones_removed": result.tombstones_removed,
        "records_per_second_wall": round(result.records_before / wall),
        "records_per_second_cpu": round(result.records_before / cpu) if cpu else None,
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
    }


def _timed_clean(log: Log, now_ms: int) -> dict[str, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = clean_log(log, first_unstable_offset=log.log_end_offset, now_ms=now_ms)
    return _figures(result, time.perf_counter() - wall, time.process_time() - cpu)


def main() -> None:
    config = LogConfig(
        segment_bytes=4096,
        index_interval_bytes=256,
        cleanup_policy="compact",
        delete_retention_ms=1,
    )
    log = Log.open(SimDisk(), "offsets-0", config=config)
    for i in range(RECORDS):
        key = b"key-%04d" % (i % KEYS)
        value = None if i % 50 == 0 else b"value-%08d" % i
        log.append_as_leader(RecordBatch.of(value, key=key), 0)
    log.roll()
    first = _timed_clean(log, now_ms=0)
    second = _timed_clean(log, now_ms=10)
    print(
        orjson.dumps(
            {
                "benchmark": "log_compaction",
                "python": platform.python_version(),
                "records": RECORDS,
                "keys": KEYS,
                "first_pass": first,
                "after_delete_horizon": second,
            }
        ).decode()
    )


if __name__ == "__main__":
    main()
