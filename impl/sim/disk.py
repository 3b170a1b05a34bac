"""A node's simulated disk: what the page cache holds versus what fsync made durable.

Kafka leaves durability to the operating system by default (``log.flush.interval.messages``
and ``log.flush.interval.ms`` are unset): a write lands in the page cache, survives the
broker process dying, and is lost when the machine loses power before the kernel writes it
back. Kafka's defence is replication plus recovery on an unclean start: every record batch
carries a CRC-32C, and the log re-scans its unflushed segments, cutting the log at the first
torn or corrupt batch (``LogSegment.recover``). This module is the disk those failures
happen on, deterministically.

The model, per file:

- the *current* content: what a reader sees now (the page cache);
- the *durable image*: what a power loss leaves. ``fsync(path)`` makes the current content
  the durable image. A file that was created but never fsynced has no durable image: a
  crash removes it (its directory entry was never persisted either);
- ``rename`` is atomic and durable, and moves both views (Kafka's checkpoint files rely on
  write-temp + fsync + rename; renaming a file that was never fsynced therefore loses it at
  the next crash, which is the classic zero-length-file bug this model can reproduce);
- ``delete`` is immediate and durable;
- ``truncate`` is a durable metadata change too (journaled by the filesystem): it cuts both
  views, and bytes below the cut stay flushed or unflushed as they were. So a crash never
  resurrects records a log truncated away (Kafka does not fsync its ``ftruncate``; real
  filesystems commit it within seconds; the replication protocol does not model it coming
  back).

``crash()`` is a power loss: every file reverts to its durable image. A process crash that
keeps the page cache needs no disk call at all: the restarted node simply re-opens its files.

The kernel's write-back (Linux's flusher threads): the page cache does not stay dirty for
ever. A file is *dirty* from the first write after it was last clean (the inode's
``dirtied_when``); every ``vm.dirty_writeback_centisecs`` (5 s by default) the flusher wakes
and writes back every file dirty for longer than ``vm.dirty_expire_centisecs`` (30 s by
default), all its dirty pages, as ``writeback(now, older_than)`` does here; the world
(``impl.cluster``) wakes it. So a power loss loses what was written in the last 30 to 35
seconds, not everything since the last fsync. (The kernel also starts writing back early
when dirty memory passes ``vm.dirty_background_ratio``; the simulated brokers hold a few
megabytes at most, so that threshold is never reached and is not modelled.) The disk reads
the time of a write from the world's ``Clock``; a disk made without one stamps every write
at time 0.

Fault hooks (the disk nemesis), each deterministic given its arguments or the
``random.Random`` passed in:

- a torn write: ``crash(torn={path: n})`` keeps the first ``n`` unflushed bytes of a file
  (sectors written before power failed), ``crash_torn(rng)`` draws ``n`` per file;
- ``flip_bit``: one bit of the stored bytes flips (media corruption), at a chosen or drawn
  position;
- ``truncate_tail``: a file loses its last bytes, durably (lost sectors, or a filesystem
  check that cut the file).

Representation. The durable image is kept as a shared prefix plus a remainder: ``image =
data[:synced_len] + synced_rest``. Appends never touch the prefix, so append + fsync costs
O(bytes appended), not O(file size); an overwrite or a truncation below ``synced_len`` moves
the affected part of the prefix into ``synced_rest`` first.

Invariants (checked by ``check_invariants``): ``0 <= synced_len <= len(data)``; a file with
no durable image has ``synced_len == 0`` and no remainder; the byte counters only grow.
Paths are plain strings with ``/`` separators; directories are implicit (a path's prefix).
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from impl.sim.clock import Clock

__all__ = ["DiskStats", "SimDisk"]


class _File:
    """One file's two views; see the module docstring for the representation."""

    __slots__ = ("data", "dirty_since", "durable", "synced_len", "synced_rest")

    def __init__(self) -> None:
        self.data = bytearray()
        self.synced_len = 0
        self.synced_rest = b""
        self.durable = False
        self.dirty_since: int | None = None
        """When the file last went from clean to dirty (the inode's ``dirtied_when``)."""

    def dirty(self) -> bool:
        """A crash now would change the file's content or remove it."""
        return not self.durable or self.synced_len < len(self.data) or bool(self.synced_rest)

    def make_durable(self) -> int:
        """The current content becomes the durable image; returns the bytes newly durable."""
        flushed = len(self.data) if not self.durable else self.unflushed()
        self.synced_len = len(self.data)
        self.synced_rest = b""
        self.durable = True
        self.dirty_since = None
        return flushed

    def image(self) -> bytes:
        return bytes(self.data[: self.synced_len]) + self.synced_rest

    def unflushed(self) -> int:
        """How many bytes at the end of the current content are not yet durable."""
        return len(self.data) - self.synced_len

    def cut(self, size: int) -> None:
        """Both views end at ``size`` at most."""
        if self.synced_len > size:
            self.synced_len = size
            self.synced_rest = b""
        else:
            self.synced_rest = self.synced_rest[: size - self.synced_len]
        del self.data[size:]

    def invalidate_from(self, position: int) -> None:
        """Keep the durable image intact before bytes at ``position`` onwards change."""
        if position < self.synced_len:
            self.synced_rest = bytes(self.data[position : self.synced_len]) + self.synced_rest
            self.synced_len = position


class DiskStats:
    """Byte and call counters of one disk; they only ever grow (also across crashes)."""

    __slots__ = ("bytes_flushed", "bytes_written", "bytes_written_back", "crashes", "fsyncs")

    def __init__(self) -> None:
        self.bytes_written = 0
        self.bytes_flushed = 0
        self.bytes_written_back = 0
        self.fsyncs = 0
        self.crashes = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "bytes_written": self.bytes_written,
            "bytes_flushed": self.bytes_flushed,
            "bytes_written_back": self.bytes_written_back,
            "fsyncs": self.fsyncs,
            "crashes": self.crashes,
        }

    def __repr__(self) -> str:
        return f"DiskStats({self.as_dict()})"


class SimDisk:
    """The simulated disk of one node. No real file is ever touched."""

    def __init__(self, name: str = "disk", clock: Clock | None = None) -> None:
        self.name = name
        self.stats = DiskStats()
        self._files: dict[str, _File] = {}
        self._clock = clock

    def _touch(self, f: _File) -> None:
        """``f`` was written: it is dirty from now, if it was clean."""
        if f.dirty_since is None:
            f.dirty_since = self._clock.now if self._clock is not None else 0

    # ---------------------------------------------------------------- reading

    @property
    def generation(self) -> int:
        """How many crashes this disk has seen; a handle opened before one is stale."""
        return self.stats.crashes

    def exists(self, path: str) -> bool:
        return path in self._files

    def size(self, path: str) -> int:
        return len(self._file(path).data)

    def read(self, path: str, offset: int = 0, size: int | None = None) -> bytes:
        """Up to ``size`` bytes of the current content from ``offset`` (fewer at the end)."""
        data = self._file(path).data
        if offset < 0 or (size is not None and size < 0):
            raise ValueError(f"read of {path!r} at offset {offset} size {size}: negative")
        end = len(data) if size is None else offset + size
        return bytes(data[offset:end])

    def list_dir(self, directory: str) -> list[str]:
        """Names of the files directly inside ``directory``, sorted."""
        prefix = directory.rstrip("/") + "/" if directory else ""
        names = [
            path[len(prefix) :]
            for path in self._files
            if path.startswith(prefix) and "/" not in path[len(prefix) :]
        ]
        return sorted(names)

    def paths(self) -> list[str]:
        """Every file path, sorted."""
        return sorted(self._files)

    def unflushed_bytes(self, path: str) -> int:
        """Bytes at the end of the file that a crash would drop (the whole file if never
        fsynced)."""
        f = self._file(path)
        return len(f.data) if not f.durable else f.unflushed()

    def durable_image(self, path: str) -> bytes | None:
        """What ``path`` would hold after a crash now; None if it would not exist."""
        f = self._file(path)
        return f.image() if f.durable else None

    def is_dirty(self, path: str) -> bool:
        """True if a crash now would change the file's content or remove it."""
        return self._file(path).dirty()

    def dirty_since(self, path: str) -> int | None:
        """When ``path`` last went from clean to dirty; None while it is clean."""
        return self._file(path).dirty_since

    # ---------------------------------------------------------------- writing

    def create(self, path: str) -> None:
        """Create an empty file; it survives a crash only once fsynced."""
        if not path or path.endswith("/"):
            raise ValueError(f"not a file path: {path!r}")
        if path in self._files:
            raise FileExistsError(f"{self.name}: {path!r} already exists")
        f = _File()
        self._files[path] = f
        self._touch(f)

    def append(self, path: str, data: bytes) -> int:
        """Append ``data`` to the page cache of ``path``; return the position it landed at."""
        f = self._file(path)
        position = len(f.data)
        f.data += data
        self.stats.bytes_written += len(data)
        if data:
            self._touch(f)
        return position

    def write(self, path: str, data: bytes) -> None:
        """Replace the whole content of ``path`` (creating it if absent); not durable until
        fsync."""
        f = self._files.get(path)
        if f is None:
            self.create(path)
            f = self._files[path]
        f.invalidate_from(0)
        f.data = bytearray(data)
        self.stats.bytes_written += len(data)
        self._touch(f)

    def truncate(self, path: str, size: int) -> None:
        """Cut ``path`` to ``size`` bytes, durably; bytes below the cut keep their state."""
        f = self._file(path)
        if not 0 <= size <= len(f.data):
            raise ValueError(
                f"{self.name}: cannot truncate {path!r} to {size} bytes: it holds {len(f.data)}"
            )
        f.cut(size)
        if not f.dirty():
            f.dirty_since = None

    def fsync(self, path: str) -> int:
        """Make the current content of ``path`` durable; return the bytes newly flushed."""
        flushed = self._file(path).make_durable()
        self.stats.fsyncs += 1
        self.stats.bytes_flushed += flushed
        return flushed

    def writeback(self, older_than: int) -> int:
        """The kernel's periodic write-back: every file dirty since ``older_than`` or
        earlier is written back whole (its content and its directory entry become durable,
        as after an fsync, without the process asking). Returns the bytes written back."""
        written = 0
        for path in sorted(self._files):
            f = self._files[path]
            if f.dirty_since is not None and f.dirty_since <= older_than:
                written += f.make_durable()
        self.stats.bytes_written_back += written
        return written

    def rename(self, source: str, target: str) -> None:
        """Atomically and durably move ``source`` to ``target``, replacing ``target``."""
        f = self._file(source)
        if source == target:
            return
        del self._files[source]
        self._files[target] = f

    def delete(self, path: str) -> None:
        """Remove ``path``, immediately and durably."""
        self._file(path)
        del self._files[path]

    # ---------------------------------------------------------------- crashes and faults

    def crash(self, torn: Mapping[str, int] | None = None) -> None:
        """Power loss: every file reverts to its durable image; files never fsynced vanish.

        ``torn`` maps a path to how many of its unflushed bytes reached the platter anyway
        (a prefix of the unflushed tail: a torn write). Every other file loses its whole
        unflushed tail.
        """
        torn = dict(torn or {})
        for path in sorted(torn):
            f = self._file(path)
            if not f.durable:
                raise ValueError(
                    f"{self.name}: cannot tear {path!r}: it was never fsynced, so a crash "
                    "removes it whole"
                )
            if not 0 <= torn[path] <= f.unflushed():
                raise ValueError(
                    f"{self.name}: cannot keep {torn[path]} unflushed bytes of {path!r}: it "
                    f"has {f.unflushed()}"
                )
        for path in sorted(self._files):
            f = self._files[path]
            if not f.durable:
                del self._files[path]
                continue
            keep = torn.get(path, 0)
            end = f.synced_len + keep
            image = bytes(f.data[:end]) + f.synced_rest[keep:]
            f.data = bytearray(image)
            f.synced_len = len(image)
            f.synced_rest = b""
            f.dirty_since = None
        self.stats.crashes += 1
        self.check_invariants()

    def crash_torn(self, rng: random.Random, paths: list[str] | None = None) -> dict[str, int]:
        """Power loss during write-back: each file (of ``paths``, default all) with an
        unflushed tail keeps a prefix of it whose length is drawn uniformly from
        ``[0, tail]``. Returns the drawn lengths, so a failing run can print them."""
        candidates = sorted(self._files) if paths is None else sorted(paths)
        torn: dict[str, int] = {}
        for path in candidates:
            f = self._file(path)
            if f.durable and f.unflushed() > 0:
                torn[path] = rng.randint(0, f.unflushed())
        self.crash(torn)
        return torn

    def flip_bit(self, path: str, bit: int | None = None, rng: random.Random | None = None) -> int:
        """Flip one bit of ``path`` as stored (both views where they share the byte); the
        bit is ``bit`` or drawn from ``rng``. Returns the bit position (byte * 8 + bit)."""
        f = self._file(path)
        nbits = len(f.data) * 8
        if nbits == 0:
            raise ValueError(f"{self.name}: cannot flip a bit of empty file {path!r}")
        if bit is None:
            if rng is None:
                raise ValueError("flip_bit needs a bit position or a random.Random to draw one")
            bit = rng.randrange(nbits)
        if not 0 <= bit < nbits:
            raise ValueError(f"{self.name}: bit {bit} is outside {path!r} ({nbits} bits)")
        f.data[bit // 8] ^= 1 << (bit % 8)
        return bit

    def truncate_tail(self, path: str, nbytes: int) -> None:
        """Fault: ``path`` durably loses its last ``nbytes`` bytes, flushed or not (lost
        sectors, or a filesystem check that cut the file)."""
        f = self._file(path)
        if not 0 <= nbytes <= len(f.data):
            raise ValueError(
                f"{self.name}: cannot drop {nbytes} bytes of {path!r}: it holds {len(f.data)}"
            )
        f.cut(len(f.data) - nbytes)
        if not f.dirty():
            f.dirty_since = None

    # ---------------------------------------------------------------- checks

    def check_invariants(self) -> None:
        for path in sorted(self._files):
            f = self._files[path]
            assert 0 <= f.synced_len <= len(f.data), (path, f.synced_len, len(f.data))
            assert f.durable or (f.synced_len == 0 and not f.synced_rest), path
            assert (f.dirty_since is not None) == f.dirty(), (path, f.dirty_since)
        s = self.stats
        assert min(s.bytes_written, s.bytes_flushed, s.fsyncs, s.crashes) >= 0

    def _file(self, path: str) -> _File:
        f = self._files.get(path)
        if f is None:
            raise FileNotFoundError(f"{self.name}: no file {path!r}")
        return f

    def __repr__(self) -> str:
        return f"SimDisk({self.name!r}, files={len(self._files)}, {self.stats!r})"
