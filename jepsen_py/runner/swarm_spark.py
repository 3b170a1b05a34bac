"""``kmodel test --runs N --engine spark``: a swarm's seeds spread over Spark's executors.

One Spark task per seed (``parallelize(seeds, numSlices=len(seeds))``): each task runs
`jepsen_py.runner.swarm.run_member` -- the local swarm's own code: draw, simulate, check,
store, coverage -- and sends its `SwarmRow` back to the driver. With ``--steer`` the swarm
goes in rounds (`jepsen_py.runner.swarm.rounds`), one Spark job each, the steering weights
learnt on the driver between rounds; so a seed gets the same configuration, history and
verdict on either engine.

Where the store directories go (``--store``):

- a plain path: every task writes its run there itself. Right for ``local[*]`` (the tasks
  run on this machine); on a cluster the path must be one every executor and the driver can
  write (a shared file system), else each run lands on the disk of the executor that ran
  it;
- a Hadoop URI (``hdfs://``, ``s3a://``, ``gs://``, ``file://``...): a task writes its run
  in scratch space on its executor and sends the files back with its row; the driver
  writes them with Hadoop's ``FileSystem`` (through Spark's JVM), under
  ``URI/<name>/<timestamp>-seed<seed>/``. The run directories travel through the driver,
  so keep ``--no-reports`` for big swarms.

``swarm.parquet`` (`jepsen_py.runner.swarm.PARQUET_FIELDS`) is written by the driver, as
for the local engine, at ``STORE/<name>/swarm.parquet``.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from jepsen_py.runner.swarm import (
    PARQUET_FILE,
    Steering,
    SwarmPlan,
    SwarmRow,
    run_member,
    write_parquet,
)

PACKAGES = ("spec", "impl", "jepsen_py")
"""What an executor imports to run a swarm member: shipped to a cluster's executors."""

Files = tuple[tuple[str, bytes], ...]
"""A run directory's files, as (path relative to the store root, contents)."""


def is_hadoop_uri(store: str) -> bool:
    """A store given as a URI (``scheme://...``) goes through Hadoop's FileSystem."""
    return "://" in store


def ship_packages(spark: Any) -> str | None:
    """Zip `PACKAGES` and add them to the job (``SparkContext.addPyFile``), so a cluster's
    executors import this code without an install; None in local mode (the workers import
    this process's packages)."""
    master = spark.sparkContext.master or "local"
    if master == "local" or master.startswith("local["):
        return None
    shipped: str | None = getattr(spark.sparkContext, "kmodel_swarm_zip", None)
    if shipped is not None:  # once per SparkContext
        return shipped
    folder = Path(tempfile.mkdtemp(prefix="kmodel-swarm-"))
    target = folder / "kmodel.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in PACKAGES:
            init = __import__(package).__file__
            assert init is not None, f"{package} is a regular package"
            root = Path(init).resolve().parent
            for path in sorted(root.rglob("*.py")):
                archive.write(path, Path(package) / path.relative_to(root))
    spark.sparkContext.addPyFile(str(target))
    spark.sparkContext.kmodel_swarm_zip = str(target)
    return str(target)


def _collect_files(run_dir: Path, relative: str) -> Files:
    return tuple(
        (f"{relative}/{path.relative_to(run_dir).as_posix()}", path.read_bytes())
        for path in sorted(run_dir.rglob("*"))
        if path.is_file()
    )


def _import_member(_: Iterable[int]) -> Iterator[int]:
    from jepsen_py.runner import swarm  # noqa: F401 - the import is the point

    yield os.getpid()


def warm_up(spark: Any) -> int:
    """One small job that makes every Python worker import the runner (a second or more
    each: the simulator, the checkers, matplotlib for the reports), so that the swarm's
    own jobs time the runs; returns how many worker processes answered."""
    sc = spark.sparkContext
    slots = max(1, int(sc.defaultParallelism))
    pids = sc.parallelize(range(slots), slots).mapPartitions(_import_member).collect()
    return len(set(pids))


def run_seeds(
    plan: SwarmPlan,
    steering: Steering | None,
    round_: int | None,
    remote_root: str | None,
    seeds: Iterable[int],
) -> Iterator[tuple[SwarmRow, Files]]:
    """The task of one partition of seeds (one seed each): `run_member` of every seed. With
    ``remote_root`` (a Hadoop URI), the run is stored in scratch space and its files come
    back with its row, renamed to where the driver will put them."""
    for seed in seeds:
        if remote_root is None:
            _, row = run_member(plan, seed, steering, round_)
            yield row, ()
            continue
        scratch = tempfile.mkdtemp(prefix="kmodel-swarm-run-")
        try:
            _, row = run_member(plan, seed, steering, round_, store_root=scratch)
            assert row.store is not None
            run_dir = Path(row.store)
            relative = f"{run_dir.parent.name}/{run_dir.name}-seed{seed}"
            files = _collect_files(run_dir, relative)
            yield attrs.evolve(row, store=f"{remote_root.rstrip('/')}/{relative}"), files
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


class HadoopWriter:
    """Writes files under a Hadoop URI through the driver's JVM (``FileSystem.create``)."""

    def __init__(self, spark: Any, root: str) -> None:
        self.sc = spark.sparkContext
        self.root = root.rstrip("/")

    def write(self, relative: str, data: bytes) -> str:
        jvm = self.sc._jvm
        target = f"{self.root}/{relative}"
        path = jvm.org.apache.hadoop.fs.Path(target)
        fs = path.getFileSystem(self.sc._jsc.hadoopConfiguration())
        out = fs.create(path, True)
        try:
            out.write(bytearray(data))
        finally:
            out.close()
        return target


def run_swarm_spark(
    spark: Any,
    plan: SwarmPlan,
    rounds: Sequence[Sequence[int]],
    *,
    steer: bool,
    on_round: Callable[[list[SwarmRow]], None] | None = None,
) -> list[SwarmRow]:
    """Every seed of ``rounds`` as one Spark task (module docstring); the rows in seed
    order. ``on_round`` sees each round's rows as soon as they are back."""
    sc = spark.sparkContext
    ship_packages(spark)
    store = plan.store_root
    remote = store if store is not None and is_hadoop_uri(store) else None
    writer = HadoopWriter(spark, remote) if remote is not None else None
    steering = Steering.start(plan.base) if steer else None
    rows: list[SwarmRow] = []
    for number, seeds in enumerate(rounds):
        if not seeds:
            continue
        task = functools.partial(run_seeds, plan, steering, number if steer else None, remote)
        got = sc.parallelize(list(seeds), len(seeds)).mapPartitions(task).collect()
        round_rows = []
        for row, files in sorted(got, key=lambda pair: pair[0].seed):
            if writer is not None:
                for relative, data in files:
                    writer.write(relative, data)
            round_rows.append(row)
        rows.extend(round_rows)
        if on_round is not None:
            on_round(round_rows)
        if steering is not None:
            steering = steering.learn(round_rows)
    return rows


def write_swarm_table(spark: Any | None, rows: Sequence[SwarmRow], store: str, name: str) -> str:
    """``STORE/<name>/swarm.parquet`` (replacing the previous swarm's): written here, and
    copied through Hadoop's FileSystem when the store is a URI (``spark`` needed then)."""
    relative = f"{name}/{PARQUET_FILE}"
    if not is_hadoop_uri(store):
        target = Path(store) / relative
        scratch = target.with_name(f".{PARQUET_FILE}.{os.getpid()}")
        write_parquet(rows, scratch)
        os.replace(scratch, target)
        return str(target)
    if spark is None:
        raise ValueError(f"--store {store}: a Hadoop URI needs --engine spark")
    folder = Path(tempfile.mkdtemp(prefix="kmodel-swarm-table-"))
    try:
        local = write_parquet(rows, folder / PARQUET_FILE)
        return HadoopWriter(spark, store).write(relative, local.read_bytes())
    finally:
        shutil.rmtree(folder, ignore_errors=True)


__all__ = [
    "PACKAGES",
    "HadoopWriter",
    "is_hadoop_uri",
    "run_seeds",
    "run_swarm_spark",
    "ship_packages",
    "warm_up",
    "write_swarm_table",
]
