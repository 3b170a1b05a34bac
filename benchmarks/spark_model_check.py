"""The Spark engine of ``kmodel check`` (``--engine spark``) on ``local[1]`` and
``local[2]``, beside the sequential search in the same run.

Prints one JSON line: for the published model's kip320 configuration with two replicas
(5,973 states, 18 levels) and three (737,794 states; ``--three``, a long run), the distinct
states (which must equal the sequential search's), levels, wall seconds, states per second
and seconds per level, so the cost on a cluster can be estimated: a level's fixed cost
(a few Spark jobs) plus its states at the measured per-state rate. Run:
``.venv/bin/python benchmarks/spark_model_check.py [--three]``.
"""

from __future__ import annotations

import argparse
import os
import time

import orjson

from jepsen_py.checker.spark.session import SessionOptions, start
from jepsen_py.spark_search import check_spark
from spec.explore import check
from spec.replication import Params, Replication


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--three", action="store_true", help="also the 737,794-state model")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    configs = [("kip320, 2 replicas", Params())]
    if args.three:
        configs.append(("kip320, 3 replicas", Params(replicas=3)))
    figures: dict[str, object] = {"benchmark": "spark_model_check"}
    for name, params in configs:
        started = time.perf_counter()
        local = check(Replication(params))
        row: dict[str, object] = {
            "sequential_seconds": round(time.perf_counter() - started, 2),
            "distinct_states": local.stats.distinct_states,
            "levels": local.stats.depth,
        }
        for master in ("local[1]", "local[2]"):
            spark = start(
                SessionOptions(
                    master=master,
                    app_name="kmodel-check-bench",
                    progress=False,
                    extra_conf=(("spark.executorEnv.PYTHONHASHSEED", "0"),),
                )
            )
            started = time.perf_counter()
            result = check_spark(Replication(params), spark, partitions=4)
            wall = time.perf_counter() - started
            row[master] = {
                "distinct_states": result.stats.distinct_states,
                "same_as_sequential": result.stats.distinct_states == local.stats.distinct_states
                and result.stats.fired == local.stats.fired,
                "wall_seconds": round(wall, 2),
                "states_per_second": round(result.stats.distinct_states / wall),
                "seconds_per_level": round(wall / result.stats.depth, 2),
            }
            spark.stop()
        figures[name] = row
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
