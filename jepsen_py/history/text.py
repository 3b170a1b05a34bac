"""A history file read as lines of text: every reader of a text format (JSONL, EDN,
Porcupine's logs) rejects a line that is not UTF-8 with its number and the same reason,
and reads on (docs/history-format.md: a malformed line never stops the check)."""

from __future__ import annotations

from collections.abc import Iterator

from jepsen_py.history.validate import Rejections

NOT_UTF8 = "the line is not UTF-8 text (undecodable bytes); write histories as UTF-8"
"""The rejection of a line whose bytes do not decode (every reader, both engines)."""


def decoded_lines(handle: Iterator[bytes], sink: Rejections) -> Iterator[str]:
    """The lines of a binary file as text; a line that is not UTF-8 is rejected (with its
    number) and read as an empty line, so line numbers stay right."""
    for number, raw in enumerate(handle, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            sink.reject(number, NOT_UTF8)
            yield "\n"
