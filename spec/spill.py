"""The model checker's memory on disk: breadth-first levels and the fingerprint seen set
spilled to a directory, so that a search holds in memory only what it works on.

A fingerprint search (``spec.fingerprints``) keeps 16 bytes a state in its seen set, but a
breadth-first level is a list of full states: on the replication spec about 1.3 KB each,
and a level of the 3/3/3 model holds over a million of them. TLC keeps its queue on disk for
the same reason. Here:

- ``SpillLevel``: a level written to a file as it is built, in pickled chunks of
  ``chunk`` pairs, and read back once, in order, chunk by chunk; the file is deleted when
  read. At most two levels exist at a time (the one read, the one written), each holding
  one chunk in memory.
- ``SpilledSeenSet``: the seen set whose sorted arrays rest in ``.npy`` files opened as
  memory maps (the operating system pages them in as lookups need them); each level's new
  fingerprints are merged into new files when the level closes.

The search, its order, its counts and its counterexamples are those of the in-memory
fingerprint search: only where the bytes live changes. No clock, no threads.
"""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from spec.explore import CheckResult, ProgressFn
from spec.fingerprints import SeenSet, check_fingerprints
from spec.framework import Spec

__all__ = ["SpillDirectory", "SpillLevel", "SpilledSeenSet", "check_spilled"]

CHUNK = 4096
"""Pairs per pickled chunk: large enough that pickling's per-call cost is amortised, small
enough that a chunk is a few MB."""


class SpillDirectory:
    """Where a search spills: a directory (created if missing) and fresh file names in it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"--spill {path}: cannot create the directory: {exc}") from exc
        self._names = itertools.count()

    def file(self, stem: str, suffix: str) -> Path:
        return self.path / f"{stem}-{next(self._names)}{suffix}"


class SpillLevel:
    """One breadth-first level on disk (see the module doc): ``append`` while it is built,
    then iterate once."""

    def __init__(self, directory: SpillDirectory, chunk: int = CHUNK) -> None:
        self.path = directory.file("level", ".pickle")
        self.chunk = chunk
        self.count = 0
        self.buffer: list[tuple[Any, Any]] = []
        self.out: BinaryIO | None = None

    def append(self, item: tuple[Any, Any], /) -> None:
        self.buffer.append(item)
        self.count += 1
        if len(self.buffer) >= self.chunk:
            self._flush()

    def _flush(self) -> None:
        if not self.buffer:
            return
        if self.out is None:
            self.out = self.path.open("wb")
        pickle.dump(self.buffer, self.out, protocol=pickle.HIGHEST_PROTOCOL)
        self.buffer = []

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        if self.out is None:  # never reached a chunk: it is all in the buffer
            yield from self.buffer
            return
        self._flush()
        self.out.close()
        try:
            with self.path.open("rb") as f:
                while True:
                    try:
                        chunk = pickle.load(f)
                    except EOFError:
                        break
                    yield from chunk
        finally:
            self.path.unlink(missing_ok=True)


class SpilledSeenSet(SeenSet):
    """A ``SeenSet`` whose sorted arrays rest in memory-mapped ``.npy`` files in
    ``directory``; the level being built is a dict until it closes, as in memory."""

    def __init__(self, directory: SpillDirectory) -> None:
        super().__init__()
        self.directory = directory
        self.files: tuple[Path, Path] | None = None

    def close_level(self) -> None:
        if not self.level:
            return
        super().close_level()  # merged in memory, then moved to disk
        keys_file = self.directory.file("seen-keys", ".npy")
        parents_file = self.directory.file("seen-parents", ".npy")
        np.save(keys_file, np.asarray(self.keys))
        np.save(parents_file, np.asarray(self.parents))
        old, self.files = self.files, (keys_file, parents_file)
        self.keys = np.load(keys_file, mmap_mode="r")
        self.parents = np.load(parents_file, mmap_mode="r")
        if old is not None:
            for path in old:
                path.unlink(missing_ok=True)

    def release(self) -> None:
        """Delete the files (the search is over; nothing is looked up any more)."""
        self.keys = np.empty(0, dtype=np.int64)
        self.parents = np.empty(0, dtype=np.int64)
        if self.files is not None:
            for path in self.files:
                path.unlink(missing_ok=True)
            self.files = None

    @property
    def nbytes(self) -> int:
        """Bytes in memory: the level being built only (the arrays are on disk)."""
        return 16 * len(self.level)

    @property
    def disk_bytes(self) -> int:
        return int(self.keys.nbytes + self.parents.nbytes)


def check_spilled(
    spec: Spec,
    directory: str | Path,
    *,
    invariants: Iterable[str] | None = None,
    symmetry: bool = False,
    max_states: int | None = None,
    max_depth: int | None = None,
    clock: Callable[[], float] | None = None,
    progress: ProgressFn | None = None,
    progress_every: int = 20_000,
    count_unreduced: bool = True,
) -> CheckResult:
    """``spec.fingerprints.check_fingerprints`` with its levels and its seen set on disk in
    ``directory`` (``kmodel check --fingerprints --spill DIR``). The result's
    ``stats.seen_bytes`` counts what the seen set held in memory at the end."""
    where = SpillDirectory(directory)
    seen = SpilledSeenSet(where)
    result = check_fingerprints(
        spec,
        invariants=invariants,
        symmetry=symmetry,
        max_states=max_states,
        max_depth=max_depth,
        clock=clock,
        progress=progress,
        progress_every=progress_every,
        count_unreduced=count_unreduced,
        seen_set=seen,
        new_level=lambda: SpillLevel(where),
    )
    seen.release()
    return result
