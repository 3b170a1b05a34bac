"""What every history writer is: ``write(op)`` as the run goes, ``close()`` at the end, and a
context manager that closes it however the block ends (so a crashed run keeps what was
written)."""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self

from jepsen_py.history.op import Op


class HistoryWriter(abc.ABC):
    @abc.abstractmethod
    def write(self, op: Op) -> None:
        """Append one op."""

    @abc.abstractmethod
    def close(self) -> None:
        """Flush and release the file."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
