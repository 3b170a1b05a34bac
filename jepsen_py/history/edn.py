"""Importer for Jepsen/Knossos histories written as EDN.

Accepted layouts: one op map per line (Jepsen's ``history.edn``), or one vector or list of
maps (Knossos's test data has both ``[...]`` and ``(...)`` files), maps possibly spanning
several lines. A line that is not UTF-8 is rejected with its number (the form it belongs to
then fails too); the rest of the file is read. A small scanner splits the text
into top-level forms as a stream (strings, escapes and ``;`` comments respected), so a big
file is never read whole, and each form keeps the line it starts on for error messages.

Each form is decoded by the ``edn_format`` package (never ``eval``), except that flat op
maps of plain scalars take a strict fast path (keywords, integers, nil/true/false, strings
without escapes, vectors of these); anything else falls back to ``edn_format``.

Op maps: ``:process`` (integer, or a keyword such as ``:nemesis``), ``:type``
(``:invoke``/``:ok``/``:fail``/``:info``), ``:f`` and ``:value`` are read; ``:key``,
``:index``, ``:time`` are used when present. Keywords become their names ("read"), vectors
become lists, nil becomes None. A cas value is ``[expected new]``.

Knossos conventions (`validate.KNOSSOS`): a ``fail`` op had no effect and constrains nothing; an
``ok`` read of nil observed nothing and constrains nothing; an ``info`` op stays pending to
the end of the history.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from jepsen_py.history.jsonl import RecordError, op_from_record
from jepsen_py.history.op import Op
from jepsen_py.history.text import decoded_lines, open_history
from jepsen_py.history.validate import Rejections, show

_OPEN = "{[("
_CLOSE = "}])"
_MAX_FORM_CHARS = 1 << 24
"""A form longer than this (16 MiB) is not an op map: reject it rather than buffer more."""


def _edn_format() -> Any:
    # edn_format (a PLY parser) takes 40 ms to import; flat op maps never need it.
    import edn_format

    return edn_format


def plain(value: Any) -> Any:
    """Turn an ``edn_format`` value into JSON-shaped Python: keywords and symbols become
    their names, vectors/lists become lists, sets become lists, maps become dicts."""
    if value is None or isinstance(value, bool | int | str | float):
        return value
    edn_format = _edn_format()
    if isinstance(value, edn_format.Keyword | edn_format.Symbol):
        return value.name
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, AbstractSet):
        items = [plain(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, Sequence):
        return [plain(v) for v in value]
    from decimal import Decimal  # here: only the edn_format fallback meets one
    from fractions import Fraction

    if isinstance(value, Decimal | Fraction):
        return float(value)
    if isinstance(value, edn_format.Char):
        return str(value)
    return str(value)


_KEYWORD = r"[A-Za-z_][\w\-.?!*+/]*"
_KEY_END = r"(?![\w\-.?!*+/])"  # a key is all of its characters: no backtracking into it
_SCALAR = (
    r"(?:(nil|true|false)(?=[\s,}\]])"
    r"|(-?\d+)(?=[\s,}\]])"
    r'|"([^"\\]*)"'
    r"|:(" + _KEYWORD + r")(?=[\s,}\]]))"
)
_SCALAR_NOCAPTURE = re.sub(r"\((?!\?)", "(?:", _SCALAR)
_VECTOR = r"\[(?:[\s,]*" + _SCALAR_NOCAPTURE + r")*[\s,]*\]"
FLAT_MAP = (
    r"\{(?:[\s,]*:"
    + _KEYWORD
    + _KEY_END
    + r"[\s,]*(?:"
    + _SCALAR_NOCAPTURE
    + "|"
    + _VECTOR
    + r"))*"
    r"[\s,]*\}"
)
"""The pattern of a flat map, of scalars and vectors of scalars: the maps `_flat_pairs`
decodes (its pairs taken by `_FAST_PAIR` in the regex engine: a few times faster than a
token at a time). Not compiled here: `_flat_pairs` needs only the pairs; the tests hold it
to this whole-map pattern."""
_FAST_PAIR = re.compile(
    r"([\s,]*:(" + _KEYWORD + r")" + _KEY_END + r"[\s,]*(?:" + _SCALAR + r"|(" + _VECTOR + r")))"
)
"""One ``:key value`` pair of a flat map, with what precedes it; group 1 is all of it."""
_FAST_ITEM = re.compile(r"[\s,]*" + _SCALAR)
_GAP = re.compile(r"[\s,]*")
_LITERALS = {"nil": None, "true": True, "false": False}


def _fast_value(literal: str, number: str, string: str, keyword: str) -> Any:
    # findall gives "" for a group that did not take part; only a string can be empty
    if literal:
        return _LITERALS[literal]
    if number:
        return int(number)
    if keyword:
        return keyword
    return string


def _fast_map(text: str) -> dict[str, Any] | None:
    """Decode a flat map of scalars (and vectors of scalars), or None to fall back."""
    return _flat_pairs(text.strip())


def _flat_pairs(text: str) -> dict[str, Any] | None:
    """The map ``text`` is when it is a flat one (`FLAT_MAP`, without surrounding blanks),
    else None. One pass of `_FAST_PAIR` takes the pairs; they are the whole map when their
    lengths add up to all of it but blanks and commas before the ``}``: a gap between two
    pairs would leave out a character that is not one (else the later pair would have
    started there), and the last pair ends in a value, never in a blank, so a gap never
    passes for the trailing blanks."""
    if text[-1:] != "}" or text[:1] != "{":
        return None
    pairs = _FAST_PAIR.findall(text, 1)
    end = 1 + sum(len(pair[0]) for pair in pairs)
    if end != len(text) - 1 and _GAP.fullmatch(text, end, len(text) - 1) is None:
        return None
    out: dict[str, Any] = {}
    for _, key, literal, number, string, keyword, vector in pairs:
        # `_fast_value` written out: this loop runs for every pair of every line
        if vector:
            out[key] = [_fast_value(*item) for item in _FAST_ITEM.findall(vector, 1)]
        elif literal:
            out[key] = _LITERALS[literal]
        elif number:
            out[key] = int(number)
        elif keyword:
            out[key] = keyword
        else:
            out[key] = string
    return out


def decode_form(text: str) -> Any:
    """Decode one EDN form to JSON-shaped Python (raises ``ValueError`` when malformed)."""
    fast = _fast_map(text)
    if fast is not None:
        return fast
    try:
        forms = _edn_format().loads_all(text)
    except Exception as exc:  # edn_format raises its own and PLY errors
        raise ValueError(f"not valid EDN ({str(exc).strip() or type(exc).__name__})") from exc
    if len(forms) != 1:
        raise ValueError(f"expected one EDN form, found {len(forms)}")
    try:
        return plain(forms[0])
    except TypeError as exc:  # a map or a vector as a map's key: JSON-shaped data has none
        raise ValueError(f"a map key must be a keyword, string or number ({exc})") from exc


FLAT_LINE = re.compile(r'\{(?:[^"{}\[\]()\\;]|"[^"\\]*"|\[(?:[^"{}\[\]()\\;]|"[^"\\]*")*\])*\}')
"""One map on a line of its own, balanced by construction: no nested map, no parentheses,
vectors of scalars, strings without escapes, no comment. Jepsen's ``history.edn`` is made of
such lines; `split_forms` takes each whole instead of scanning it character by character."""


def split_forms(lines: Iterator[str], *, whole_lines: bool = True) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) of each top-level form, looking through one wrapping vector
    or list (Knossos's layouts). Unbalanced text at the end is yielded as is, to be
    rejected. ``whole_lines``: take a line that is one flat map (`FLAT_LINE`) whole; False
    scans every character (the test of the shortcut compares the two)."""
    for number, text, _ in _forms(lines, whole_lines):
        yield number, text


def _forms(
    lines: Iterator[str], whole_lines: bool, first_line: int = 1, seen_form: bool = False
) -> Iterator[tuple[int, str, dict[str, Any] | None]]:
    """`split_forms`, with a third item: the map a line taken whole is when it is a flat one
    (`_flat_pairs`: decoded once, as the line is recognised), else None. ``first_line``:
    the number of the first of ``lines``; ``seen_form``: whether forms came before them
    (then a ``[`` opens a vector, not the wrapping one)."""
    depth = 0
    base = 0  # 1 inside the wrapping vector or list
    wrap = ""  # the character that closes it
    buffer: list[str] = []
    start = 0
    in_string = False
    for number, line in enumerate(lines, start=first_line):
        if whole_lines and depth == base and not buffer and not in_string:
            text = line.strip(" \t\r\n,")
            if text[:1] == "{":
                flat = _flat_pairs(text)
                if flat is not None or FLAT_LINE.fullmatch(text):
                    yield number, text, flat  # what the scan below yields, a few times faster
                    seen_form = True
                    continue
        i = 0
        n = len(line)
        chunk_from = 0
        while i < n:
            c = line[i]
            if in_string:
                if c == "\\":
                    i += 2
                    continue
                if c == '"':
                    in_string = False
                    if depth == base:
                        buffer.append(line[chunk_from : i + 1])
                        yield start, "".join(buffer), None
                        buffer = []
                        chunk_from = i + 1
            elif c == ";":
                n = i  # comment to the end of the line
                break
            elif c == '"':
                if depth == base and not buffer:
                    start, chunk_from = number, i
                in_string = True
            elif c in _OPEN:
                if depth == base and not buffer:
                    if c in "[(" and not seen_form and base == 0:
                        base = depth = 1
                        wrap = "]" if c == "[" else ")"
                        seen_form = True
                        i += 1
                        continue
                    start, chunk_from = number, i
                depth += 1
            elif c in _CLOSE:
                if depth == base:
                    if base == 1 and c == wrap:
                        base = depth = 0
                        i += 1
                        continue
                    yield number, c, None
                    i += 1
                    continue
                depth -= 1
                if depth == base:
                    buffer.append(line[chunk_from : i + 1])
                    yield start, "".join(buffer), None
                    buffer = []
                    chunk_from = i + 1
            elif c == "\\" and depth > base:
                i += 2
                continue
            elif depth == base and c not in " \t\r\n,":
                # a bare atom at top level: take it up to the next delimiter
                j = i
                while j < n and line[j] not in ' \t\r\n,;{}[]()"':
                    j += 1
                yield number, line[i:j], None
                seen_form = True
                i = j
                continue
            if depth > base or in_string:
                seen_form = True
            i += 1
        if depth > base or in_string:
            buffer.append(line[chunk_from:n])
            if sum(len(part) for part in buffer) > _MAX_FORM_CHARS:
                yield start, "".join(buffer), None
                buffer, depth, in_string = [], base, False
    if buffer:
        yield start, "".join(buffer), None


def op_from_edn(form: Any, ordinal: int, line: int) -> Op:
    """Build an `Op` from one decoded EDN op map, or raise `RecordError`."""
    if not isinstance(form, dict):
        raise RecordError(
            f"expected an op map such as {{:process 0, :type :invoke, ...}}, got {show(form)}"
        )
    process = form.get("process")
    if isinstance(process, str) and process.isdigit():
        form = {**form, "process": int(process)}
    key = form.get("key")
    if key is not None and not isinstance(key, str | int):
        raise RecordError(f":key must be a string or an integer, got {show(key)}")
    return op_from_record(form, ordinal, line)


def read_edn(path: str | os.PathLike[str], rejections: Rejections | None = None) -> Iterator[Op]:
    """Stream the ops of a Jepsen/Knossos EDN history (one map per line, or one vector of
    maps). Malformed forms go to ``rejections`` with the line they start on."""
    handle, sink = open_history(path, rejections)
    with handle:
        yield from edn_ops(decoded_lines(handle, sink), sink)


def edn_ops(
    lines: Iterator[str], sink: Rejections, *, first_line: int = 1, ordinal: int = 0
) -> Iterator[Op]:
    """The ops of EDN text ``lines`` (`read_edn` of a file's lines): malformed forms go to
    ``sink``. To read the rest of a file of which another reader took the first lines, each
    one op: ``first_line`` is the number of the first of ``lines``, ``ordinal`` the number of
    ops read before (the next op's default ``index``; after one, a ``[`` opens a vector, not
    a wrapping one)."""
    for line, text, flat in _forms(lines, True, first_line, seen_form=ordinal > 0):
        if text in _CLOSE:
            sink.reject(line, f"unbalanced {text!r}: no form is open here")
            continue
        try:
            form = flat if flat is not None else decode_form(text)
            op = op_from_edn(form, ordinal, line)
        except (ValueError, RecordError) as exc:
            sink.reject(line, str(exc))
            continue
        ordinal += 1
        yield op
