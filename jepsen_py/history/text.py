"""A history file read as lines of text: every reader of a text format (JSONL, EDN,
Porcupine's logs) rejects a line that is not UTF-8 with its number and the same reason,
and reads on (docs/history-format.md: a malformed line never stops the check)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from jepsen_py.history.validate import HistoryError, Rejections

NOT_UTF8 = "the line is not UTF-8 text (undecodable bytes); write histories as UTF-8"
"""The rejection of a line whose bytes do not decode (every reader, both engines)."""


def open_history(
    path: str | os.PathLike[str], rejections: Rejections | None
) -> tuple[BinaryIO, Rejections]:
    """``path`` opened for reading as bytes (the caller closes it), and the sink its
    malformed lines go to: ``rejections``, or one that raises `HistoryError` at the first.
    A file that cannot be opened raises `HistoryError` with the system's reason."""
    sink = rejections if rejections is not None else Rejections(str(path), strict=True)
    try:
        return open(path, "rb"), sink
    except OSError as exc:
        raise HistoryError(f"{path}: cannot open: {exc.strerror}") from exc


def decoded_lines(handle: Iterator[bytes], sink: Rejections) -> Iterator[str]:
    """The lines of a binary file as text; a line that is not UTF-8 is rejected (with its
    number) and read as an empty line, so line numbers stay right."""
    for number, raw in enumerate(handle, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            sink.reject(number, NOT_UTF8)
            yield "\n"
