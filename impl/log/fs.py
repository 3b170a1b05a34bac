"""What the log needs from a file system, and nothing more.

The storage layer never touches the operating system: it calls these operations on an
object handed to it. ``impl.sim.disk.SimDisk`` is the simulated one (flushed versus
unflushed bytes, crashes, torn writes, bit flips); an adapter over real files would satisfy
the same protocol without a change to the log.

Durability contract, as the log assumes it: ``append``/``write``/``truncate`` change what
readers see; only ``fsync`` makes a file's content (and its existence) survive a crash;
``rename`` is atomic and durable; ``delete`` is durable.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["FileSystem", "join"]


class FileSystem(Protocol):
    @property
    def generation(self) -> int:
        """Bumped by every crash: a handle opened in an earlier generation is stale."""
        ...

    def exists(self, path: str) -> bool: ...

    def size(self, path: str) -> int: ...

    def read(self, path: str, offset: int = 0, size: int | None = None) -> bytes: ...

    def list_dir(self, directory: str) -> list[str]: ...

    def create(self, path: str) -> None: ...

    def append(self, path: str, data: bytes) -> int: ...

    def write(self, path: str, data: bytes) -> None: ...

    def truncate(self, path: str, size: int) -> None: ...

    def fsync(self, path: str) -> int: ...

    def rename(self, source: str, target: str) -> None: ...

    def delete(self, path: str) -> None: ...


def join(directory: str, name: str) -> str:
    """``directory/name``, with ``""`` meaning the disk's root."""
    return f"{directory.rstrip('/')}/{name}" if directory else name
