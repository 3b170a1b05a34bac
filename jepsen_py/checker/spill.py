"""An external partition of a history by (run, key): how the local engine checks a file
bigger than it can hold.

Every check is per (run, key) (Kafka's partitions are independent logs; the WGL models are
P-compositional per key), so a history need never be in memory whole: one streaming pass
reads and validates it (`jepsen_py.history`: one pending op per process), and writes each
accepted op to one of ``buckets`` spill files chosen by a stable hash of its (run, key), in
history order; ``assign``/``subscribe`` ops, which act on every key of their run, go to a
file of their own. Then each bucket is read back alone, merged (by history position) with
the reassignments of its runs, grouped as `engine.group_ops` groups a whole file, and
checked; only one bucket's ops are in memory at a time. The spill files live in a
temporary directory that is removed afterwards, whatever happens.

The peak is then about a bucket's share of the input times the in-memory cost of an op
(about 5.6 bytes per byte of JSONL), plus the validator's per-process state: with
`BUCKET_BYTES` of input per bucket, some 200-400 MB whatever the file's size, unless one
(run, key) alone is bigger than a bucket (a key is never split: its check needs all of it).
"""

from __future__ import annotations

import heapq
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import attrs
import orjson

from jepsen_py.checker.taxonomy import REASSIGN_FS
from jepsen_py.history.op import Op

BUCKET_BYTES = 48 << 20
"""Input bytes per spill bucket: the in-memory share of a spilled check (about 5.6 bytes
of memory per byte of JSONL while a bucket is checked)."""

MAX_BUCKETS = 512
"""Open spill files at once, at most (a 24 GB input; beyond, buckets grow)."""


def buckets_for(nbytes: int) -> int:
    """How many spill buckets an input of ``nbytes`` bytes is split into."""
    return max(1, min(MAX_BUCKETS, -(-nbytes // BUCKET_BYTES)))


def bucket_of(run: Any, key: Any, buckets: int) -> int:
    """The bucket of a (run, key): a stable hash (``hash()`` of a string changes from one
    process to the next with ``PYTHONHASHSEED``)."""
    return zlib.crc32(orjson.dumps([run, key])) % buckets


def _encode(position: int, op: Op) -> bytes:
    return orjson.dumps(
        [position, op.index, op.time, op.process, op.type, op.f, op.key, op.value, op.run, op.line]
    )


def _decode(line: bytes) -> tuple[int, Op]:
    position, *fields = orjson.loads(line)
    return position, Op(*fields)


@attrs.define
class Spilled:
    """A history partitioned into spill files (see the module docstring); a context
    manager that removes them."""

    folder: Path
    buckets: int
    ops: int = 0
    fs: set[str] = attrs.field(factory=set)
    _files: list[IO[bytes]] = attrs.field(factory=list)
    _reassign: IO[bytes] | None = None
    _reassign_runs: set[Any] = attrs.field(factory=set)

    @classmethod
    def create(cls, buckets: int, where: str | None = None) -> Spilled:
        folder = Path(tempfile.mkdtemp(prefix="kmodel-spill-", dir=where))
        spilled = cls(folder, buckets)
        try:
            spilled._files = [open(folder / f"b{i:04d}", "wb") for i in range(buckets)]  # noqa: SIM115
            spilled._reassign = open(folder / "reassign", "wb")  # noqa: SIM115
        except OSError:
            spilled.close()
            raise
        return spilled

    def add(self, op: Op) -> None:
        """Spill one accepted client op (in history order)."""
        position = self.ops
        self.ops += 1
        self.fs.add(op.f)
        line = _encode(position, op) + b"\n"
        if op.f in REASSIGN_FS:
            assert self._reassign is not None
            self._reassign.write(line)
            self._reassign_runs.add(op.run)
        else:
            self._files[bucket_of(op.run, op.key, self.buckets)].write(line)

    def finish(self) -> None:
        """Close the files being written: the buckets can be read."""
        for handle in self._files:
            handle.close()
        if self._reassign is not None:
            self._reassign.close()

    def bucket_ops(self, i: int) -> Iterator[Op]:
        """Bucket ``i``'s ops in history order, with the reassignments of their runs."""
        own = self._read(self.folder / f"b{i:04d}")
        if not self._reassign_runs:
            return (op for _, op in own)
        runs = self._runs_of(i)
        reassign = ((p, op) for p, op in self._read(self.folder / "reassign") if op.run in runs)
        return (op for _, op in heapq.merge(own, reassign, key=lambda item: item[0]))

    def _runs_of(self, i: int) -> set[Any]:
        return {op.run for _, op in self._read(self.folder / f"b{i:04d}")}

    @staticmethod
    def _read(path: Path) -> Iterator[tuple[int, Op]]:
        with open(path, "rb") as handle:
            for line in handle:
                yield _decode(line)

    def close(self) -> None:
        for handle in self._files:
            handle.close()
        if self._reassign is not None:
            self._reassign.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Spilled:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def spill_dir() -> str | None:
    """Where spill files go: ``KMODEL_SPILL_DIR`` when set, else the temporary directory."""
    return os.environ.get("KMODEL_SPILL_DIR") or None
