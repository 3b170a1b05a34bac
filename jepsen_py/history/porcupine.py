"""Importers for the public test histories of Porcupine (anishathalye/porcupine,
``test_data/``): the etcd logs from Jepsen and the key-value histories.

etcd logs (``jepsen/etcd_NNN.log``, one compare-and-set register, initially nil): one event
per line, ``INFO  jepsen.util - PROCESS<tab>:TYPE<tab>:F<tab>VALUE``. Read with one regex
per event shape, as Porcupine's own test does; their meaning (`validate.ETCD`):

- ``:ok :read nil``: the register had no value yet (it constrains: nil was read);
- ``:fail :cas [from to]``: the cas completed: it compared, found another value, and did not
  apply (a completed op whose output is "cas did not apply");
- ``:fail :read :timed-out``: the read's result is unknown; it constrains nothing;
- ``:info :write/:cas :timed-out``: indeterminate; it stays pending to the end of the
  history (it may take effect at any time after its invocation, or never).

Lines that do not start like an event (``INFO jepsen.util - N :type``) are not events and
are skipped; a line that does but matches no event shape is rejected with its number.
Ops get ``index`` and ``time`` from their order in the file (the logs carry no time).

Key-value histories (``kv/cNN-*.txt``): EDN maps, one per line, with ``:key``. Each key's
value is a string, initially "" (`validate.PORCUPINE_KV`). Porcupine writes every line in
one layout, ``{:process N, :type :T, :f :F, :key "K", :value V}`` with V nil or a string,
and its own test parses them with one regex per line; `read_kv` does too (`KV_LINE`), and
hands the file from its first line of any other layout on to the EDN importer, which reads
what the regex reads the same way.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator
from typing import Any

from jepsen_py.history.op import Op
from jepsen_py.history.text import decoded_lines, open_history
from jepsen_py.history.validate import Rejections, show

_PREFIX = re.compile(r"^INFO\s+jepsen\.util\s+-\s+(\d+)\s+:(\w+)\s+:(\w+)\s*(.*?)\s*$")
_PAIR = re.compile(r"\[\s*(-?\d+)\s+(-?\d+)\s*\]")

# (type, f) -> the shapes its value may take: "nil", "int", "pair", "timed-out"
_SHAPES: dict[tuple[str, str], tuple[str, ...]] = {
    ("invoke", "read"): ("nil",),
    ("invoke", "write"): ("int",),
    ("invoke", "cas"): ("pair",),
    ("ok", "read"): ("nil", "int"),
    ("ok", "write"): ("int",),
    ("ok", "cas"): ("pair",),
    ("fail", "cas"): ("pair",),
    ("fail", "read"): ("timed-out",),
    ("info", "write"): ("timed-out",),
    ("info", "cas"): ("timed-out",),
    ("info", "read"): ("timed-out",),
}


def _value(text: str, shapes: tuple[str, ...]) -> tuple[bool, Any]:
    for shape in shapes:
        if shape == "nil" and text == "nil":
            return True, None
        if shape == "int" and (text[1:] if text[:1] == "-" else text).isdecimal():
            return True, int(text)  # isdecimal: what `-?\d+` matches, without the regex
        if shape == "pair":
            pair = _PAIR.fullmatch(text)
            if pair:
                return True, [int(pair.group(1)), int(pair.group(2))]
        if shape == "timed-out" and text == ":timed-out":
            return True, "timed-out"
    return False, None


def read_etcd_log(
    path: str | os.PathLike[str], rejections: Rejections | None = None
) -> Iterator[Op]:
    """Stream the ops of one Porcupine/Jepsen etcd log (conventions: `validate.ETCD`).

    An ``info`` or ``fail`` completion whose log value is ``:timed-out`` carries its
    invocation's value instead (Jepsen's op map has the value and the error apart; the log
    prints only the error), so a pending write still says what it wrote."""
    handle, sink = open_history(path, rejections)
    invoked: dict[int, Any] = {}
    ordinal = 0
    with handle:
        for number, line in enumerate(decoded_lines(handle, sink), start=1):
            event = _PREFIX.match(line)
            if event is None:
                continue
            digits, type_, f, text = event.groups()
            process = int(digits)
            shapes = _SHAPES.get((type_, f))
            if shapes is None:
                sink.reject(
                    number,
                    f"unknown etcd event ':{type_} :{f}': expected :invoke/:ok/:fail/:info of "
                    ":read, :write or :cas",
                )
                continue
            ok, value = _value(text, shapes)
            if not ok:
                sink.reject(
                    number,
                    f"':{type_} :{f}' with value {show(text)}: expected "
                    + " or ".join(
                        {
                            "nil": "nil",
                            "int": "an integer",
                            "pair": "[from to]",
                            "timed-out": ":timed-out",
                        }[s]
                        for s in shapes
                    ),
                )
                continue
            if type_ == "invoke":
                invoked[process] = value
            elif value == "timed-out":
                value = invoked.get(process) if type_ == "info" else None
            yield Op(ordinal, ordinal, process, type_, f, None, value, None, number)
            ordinal += 1


KV_LINE = re.compile(
    r"\{:process (\d+), :type :(invoke|ok|fail|info), :f :([A-Za-z_][\w\-.?!*+/]*), "
    r':key "([^"\\]*)", :value (?:(nil)|"([^"\\]*)")\}'
)
"""A line of Porcupine's key-value layout (blanks and commas around it stripped): process,
type, f, key, and the value, nil or a string without escapes."""


def read_kv(path: str | os.PathLike[str], rejections: Rejections | None = None) -> Iterator[Op]:
    """Stream the ops of one Porcupine key-value history (conventions: `validate.PORCUPINE_KV`):
    lines of `KV_LINE`'s layout by that regex, a few times faster than the EDN importer
    decodes them; from the first other line on, the EDN importer (`edn_ops`)."""
    handle, sink = open_history(path, rejections)
    with handle:
        lines = decoded_lines(handle, sink)
        for ordinal, line in enumerate(lines):  # each line before the first other one: an op
            event = KV_LINE.fullmatch(line.strip(" \t\r\n,"))
            if event is None:
                # here: a file all of Porcupine's layout never needs the EDN importer
                from jepsen_py.history.edn import edn_ops

                rest = itertools.chain((line,), lines)
                yield from edn_ops(rest, sink, first_line=ordinal + 1, ordinal=ordinal)
                return
            process, type_, f, key, nil, value = event.groups()
            value = None if nil is not None else value
            yield Op(ordinal, ordinal, int(process), type_, f, key, value, None, ordinal + 1)
