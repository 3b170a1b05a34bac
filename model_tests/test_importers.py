"""Importers: Jepsen/Knossos EDN and Porcupine's etcd and kv logs, and the conventions
that give their events meaning (each shown to change a verdict)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jepsen_py.checker.model import operations
from jepsen_py.checker.models import CasRegisterModel, KeyValueModel
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.wgl import check_operations
from jepsen_py.history import (
    ETCD,
    FORMATS,
    KNOSSOS,
    NATIVE,
    Conventions,
    HistoryError,
    Rejections,
    detect_format,
    read_edn,
    read_etcd_log,
    read_kv,
    validate,
)
from jepsen_py.history.edn import decode_form
from model_tests.shared_corpora import PORCUPINE, needs_porcupine

CORPUS = PORCUPINE


def _verdict(path: Path, read, conventions: Conventions, model=None) -> Verdict:
    model = model or CasRegisterModel()
    rejections = Rejections(str(path))
    ops = operations(validate(read(path, rejections), rejections), model, conventions, rejections)
    assert not rejections.items, rejections.items
    return check_operations(model, ops).verdict


def test_edn_one_map_per_line_becomes_plain_ops(tmp_path: Path) -> None:
    path = tmp_path / "h.edn"
    path.write_text(
        "{:process 0, :type :invoke, :f :cas, :value [1 2], :time 5}\n"
        "{:process 0, :type :fail, :f :cas, :value [1 2]}\n"
        "{:process :nemesis, :type :info, :f :start, :value nil}\n"
    )
    ops = list(read_edn(path))
    assert [(o.process, o.type, o.f, o.value, o.line) for o in ops] == [
        (0, "invoke", "cas", [1, 2], 1),
        (0, "fail", "cas", [1, 2], 2),
        ("nemesis", "info", "start", None, 3),
    ]
    assert ops[0].time == 5


def test_edn_vector_of_maps_spanning_lines_with_comments_and_strings(tmp_path: Path) -> None:
    path = tmp_path / "h.edn"
    path.write_text(
        "; a Knossos history\n"
        "[{:process 0, :type :invoke, :f :write, :value 3}\n"
        " {:process 0,\n"
        '  :type :ok, :f :write, :value 3, :note "a } ; in a string"}\n'
        " {:process 1 :type :invoke :f :read :value nil} {:process 1 :type :ok :f :read"
        " :value #{3}}]\n"
    )
    ops = list(read_edn(path))
    assert [(o.type, o.f, o.value, o.line) for o in ops] == [
        ("invoke", "write", 3, 2),
        ("ok", "write", 3, 3),
        ("invoke", "read", None, 5),
        ("ok", "read", [3], 5),
    ]


def test_edn_fast_path_agrees_with_edn_format() -> None:
    text = '{:process 3, :type :ok, :f :get, :key "k 1", :value [1 -2 nil true :x "s"]}'
    fast = decode_form(text)
    slow = decode_form(text.replace("{", "{:extra #{1}, ", 1))  # forces edn_format
    slow.pop("extra")
    assert (
        fast
        == slow
        == {
            "process": 3,
            "type": "ok",
            "f": "get",
            "key": "k 1",
            "value": [1, -2, None, True, "x", "s"],
        }
    )


_EDN_KEYS = st.sampled_from([":process", ":type", ":f", ":key", ":value", ":a-b?", ":x.y"])
_EDN_FLAT_VALUES = ["nil", "true", "0", "-12", '"s"', '"a b"', '""', ":kw", '[1 :a "z" nil]', "[]"]
_EDN_VALUES = st.sampled_from(
    [*_EDN_FLAT_VALUES, '"x}"', "{:b 1}", "#{1}", "(1)", "1a", "nilx", ":", '"q\\""']
)
_EDN_GAPS = st.sampled_from([" ", ", ", ",", "  ", "\t", "", "\n"])


@st.composite
def _edn_maps(draw: st.DrawFn) -> str:
    """Maps of pairs whose values are flat scalars and vectors, or not (nested maps, sets,
    lists, malformed atoms), with any blanks and commas, and endings good and bad."""
    body = ""
    for _ in range(draw(st.integers(0, 5))):
        body += draw(_EDN_KEYS) + draw(_EDN_GAPS.filter(bool)) + draw(_EDN_VALUES)
        body += draw(_EDN_GAPS)
    return "{" + body + draw(st.sampled_from(["}", " }", ", }", "}}", "", "x}"]))


@settings(max_examples=400, deadline=None)
@given(_edn_maps())
def test_edn_fast_path_decodes_every_map_as_edn_format_does(text: str) -> None:
    """The one-regex decoding of flat maps takes exactly the maps it decodes right: every
    map decodes (or is refused) as edn_format alone decodes (or refuses) it."""
    import edn_format

    from jepsen_py.history.edn import plain

    try:
        fast: Any = decode_form(text)
    except ValueError:
        fast = ValueError
    try:
        forms = edn_format.loads_all(text)
        slow: Any = plain(forms[0]) if len(forms) == 1 else ValueError
    except Exception:  # edn_format raises its own and PLY's errors
        slow = ValueError
    assert fast == slow


def test_malformed_edn_is_rejected_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "h.edn"
    path.write_text(
        "{:process 0, :type :invoke, :f :read, :value nil}\n"
        "{:process 0, :type :ok :f}\n"
        "42\n"
        "{:process 0, :type :ok, :f :read, :value 1}\n"
    )
    rejections = Rejections(str(path))
    ops = list(read_edn(path, rejections))
    assert [o.line for o in ops] == [1, 4]
    assert [r.line for r in rejections] == [2, 3]
    assert "op map" in rejections.items[1].reason


def test_an_edn_map_keyed_by_a_map_or_vector_is_rejected_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "h.edn"
    path.write_text(
        "{:process 0, :type :invoke, :f :read, :value nil}\n"
        "{{:a 1} 2, :process 0}\n"
        "{:process 0, :value {[1 2] 3}}\n"
        "{:process 0, :type :ok, :f :read, :value 1}\n"
    )
    rejections = Rejections(str(path))
    assert [o.line for o in read_edn(path, rejections)] == [1, 4]
    assert [r.line for r in rejections] == [2, 3]
    assert all("a map key must be" in r.reason for r in rejections)


def test_knossos_fail_op_and_nil_read_constrain_nothing(tmp_path: Path) -> None:
    path = tmp_path / "h.edn"
    path.write_text(
        "{:process 0, :type :invoke, :f :write, :value 1}\n"
        "{:process 0, :type :ok, :f :write, :value 1}\n"
        "{:process 1, :type :invoke, :f :read, :value nil}\n"
        "{:process 1, :type :ok, :f :read, :value nil}\n"
        "{:process 2, :type :invoke, :f :cas, :value [1 5]}\n"
        "{:process 2, :type :fail, :f :cas, :value [1 5]}\n"
    )
    assert _verdict(path, read_edn, KNOSSOS) is Verdict.OK
    # the same events read as this project's native history: the nil read is illegal
    assert _verdict(path, read_edn, NATIVE) is Verdict.ILLEGAL
    # and under etcd's conventions the failed cas (the register held 1) is illegal too
    text = path.read_text().replace(":value nil}\n{:process 2", ":value 1}\n{:process 2")
    path.write_text(text.replace("{:process 1, :type :ok, :f :read, :value nil}", ""))
    assert _verdict(path, read_edn, KNOSSOS) is Verdict.OK
    assert _verdict(path, read_edn, ETCD) is Verdict.ILLEGAL


ETCD_LINES = [
    "INFO  jepsen.util - 0\t:invoke\t:write\t1",
    "INFO  jepsen.util - 0\t:ok\t:write\t1",
    "INFO  jepsen.util - 1\t:invoke\t:cas\t[1 2]",
    "INFO  jepsen.util - 1\t:fail\t:cas\t[1 2]",
]


def _etcd(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "etcd_x.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_etcd_failed_cas_is_a_completed_compare(tmp_path: Path) -> None:
    # the register holds 1 when the cas [1 2] compares: it must have applied
    path = _etcd(tmp_path, *ETCD_LINES)
    assert _verdict(path, read_etcd_log, ETCD) is Verdict.ILLEGAL
    ok_path = _etcd(
        tmp_path, *ETCD_LINES[:2], *(x.replace("[1 2]", "[3 2]") for x in ETCD_LINES[2:])
    )
    assert _verdict(ok_path, read_etcd_log, ETCD) is Verdict.OK


def test_etcd_nil_read_means_no_value_yet(tmp_path: Path) -> None:
    reads = ["INFO  jepsen.util - 2\t:invoke\t:read\tnil", "INFO  jepsen.util - 2\t:ok\t:read\tnil"]
    assert _verdict(_etcd(tmp_path, *reads, *ETCD_LINES[:2]), read_etcd_log, ETCD) is Verdict.OK
    after = _etcd(tmp_path, *ETCD_LINES[:2], *reads)
    assert _verdict(after, read_etcd_log, ETCD) is Verdict.ILLEGAL


def test_etcd_timed_out_read_constrains_nothing_and_info_stays_pending(tmp_path: Path) -> None:
    path = _etcd(
        tmp_path,
        "INFO  jepsen.util - 2\t:invoke\t:read\tnil",
        "INFO  jepsen.util - 2\t:fail\t:read\t:timed-out",
        "INFO  jepsen.util - 3\t:invoke\t:write\t7",
        "INFO  jepsen.util - 3\t:info\t:write\t:timed-out",
        "INFO  jepsen.util - 4\t:invoke\t:read\tnil",
        "INFO  jepsen.util - 4\t:ok\t:read\tnil",
        "INFO  jepsen.util - 5\t:invoke\t:read\tnil",
        "INFO  jepsen.util - 5\t:ok\t:read\t7",
        "not an event line",
    )
    ops = list(read_etcd_log(path))
    assert ops[3].type == "info" and ops[3].value == 7  # carries the invocation's value
    assert ops[1].value is None
    # the info write took effect between the two reads (after its invocation): OK
    assert _verdict(path, read_etcd_log, ETCD) is Verdict.OK
    # a read of 7 before the write's invocation cannot be: ILLEGAL
    early = _etcd(
        tmp_path,
        "INFO  jepsen.util - 5\t:invoke\t:read\tnil",
        "INFO  jepsen.util - 5\t:ok\t:read\t7",
        "INFO  jepsen.util - 3\t:invoke\t:write\t7",
        "INFO  jepsen.util - 3\t:info\t:write\t:timed-out",
    )
    assert _verdict(early, read_etcd_log, ETCD) is Verdict.ILLEGAL


def test_etcd_event_of_unknown_shape_is_rejected_with_its_line(tmp_path: Path) -> None:
    path = _etcd(
        tmp_path,
        ETCD_LINES[0],
        "INFO  jepsen.util - 0\t:ok\t:write\tbanana",
        "INFO  jepsen.util - 0\t:ok\t:delete\t1",
    )
    rejections = Rejections(str(path))
    assert len(list(read_etcd_log(path, rejections))) == 1
    assert [r.line for r in rejections] == [2, 3]
    assert "expected an integer" in rejections.items[0].reason


@needs_porcupine
def test_formats_are_detected_for_the_corpus() -> None:
    assert detect_format(CORPUS / "jepsen" / "etcd_000.log") == "porcupine-etcd"
    assert detect_format(CORPUS / "kv" / "c01-ok.txt") == "porcupine-kv"
    with pytest.raises(HistoryError):
        detect_format(CORPUS / "README.md")


@needs_porcupine
def test_kv_importer_reads_keys_and_string_values() -> None:
    path = CORPUS / "kv" / "c01-ok.txt"
    spec = FORMATS["porcupine-kv"]
    ops = list(spec.read(path, None))
    assert ops[0].key == "0" and ops[0].f == "append" and isinstance(ops[0].value, str)
    assert _verdict(path, spec.read, spec.conventions, KeyValueModel()) is Verdict.OK


# --- the whole-line shortcut of the EDN form splitter --------------------------------------

_EDN_PIECES = st.sampled_from(
    [
        "{:process 0, :type :invoke, :f :read, :value nil}",
        '{:process 1 :type :ok :f :append :key "7" :value "x {1} ;y"}',
        '{:f :cas :value [1 "a]"]}',
        "{:f :txn :value [[:r 1 nil] [:w 2 3]]}",
        '{:value "esc \\" quote"}',
        "{:a (1 2)}",
        "{:a {:b 1}}",
        "{:a 1} {:b 2}",
        "{:a 1}, ; a comment",
        "{:a 1",
        " :b 2}",
        "[",
        "]",
        "(",
        ")",
        "{:a 1}]",
        "  ",
        ":keyword",
        '"a string"',
        "; only a comment",
        "{}",
        "{:a [1 2] :b []}",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_EDN_PIECES, max_size=8))
def test_edn_whole_line_shortcut_splits_as_the_scan_does(lines: list[str]) -> None:
    from jepsen_py.history.edn import split_forms

    text = [line + "\n" for line in lines]
    assert list(split_forms(iter(text))) == list(split_forms(iter(text), whole_lines=False))


def test_edn_whole_line_shortcut_is_taken_for_jepsen_op_lines() -> None:
    from jepsen_py.history.edn import FLAT_LINE

    assert FLAT_LINE.fullmatch('{:process 0, :type :ok, :f :get, :key "7", :value "x 0 1 y"}')
    assert not FLAT_LINE.fullmatch("{:a {:b 1}}")
    assert not FLAT_LINE.fullmatch("{:a 1} {:b 2}")


# --- Porcupine's kv layout: one regex per line, the EDN importer's ops ----------------------

_KV_LINES = st.sampled_from(
    [
        '{:process 0, :type :invoke, :f :append, :key "0", :value "x 0 0 y"}',
        '{:process 0, :type :ok, :f :append, :key "0", :value "x 0 0 y"}',
        '{:process 12, :type :invoke, :f :get, :key "3", :value nil}',
        '{:process 12, :type :ok, :f :get, :key "3", :value ""}',
        '{:process 5, :type :info, :f :put, :key "k 1", :value "v"},',
        '  {:process 7, :type :fail, :f :get, :key "9", :value nil}  ',
        '{:process 1, :type :bogus, :f :get, :key "3", :value nil}',
        '{:process 1, :type :ok, :f :get, :key "3", :value 4}',
        '{:process 1, :type :ok, :f :get, :key "3", :value "a\\"b"}',
        '{:process -1, :type :ok, :f :get, :key "3", :value nil}',
        '{:process 2, :type :invoke, :f :get, :key "3", :value nil, :time 5}',
        '{:type :invoke, :process 2, :f :get, :key "3", :value nil}',
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_KV_LINES, _KV_LINES, _EDN_PIECES, st.just("\udcff")), max_size=10))
def test_kv_reader_reads_every_file_as_the_edn_importer_does(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    """`read_kv` takes the lines of Porcupine's layout by one regex and hands the rest of the
    file to the EDN importer: the ops, their lines and the rejections are the EDN importer's
    whole, for files of the layout, of other EDN, of both, and with undecodable lines."""
    path = tmp_path_factory.mktemp("kv") / "h.txt"
    path.write_bytes(b"".join(line.encode("utf-8", "surrogateescape") + b"\n" for line in lines))
    fast, whole = Rejections(str(path)), Rejections(str(path))
    ops = list(read_kv(path, fast))
    assert ops == list(read_edn(path, whole))
    assert [op.line for op in ops] == [op.line for op in read_edn(path, Rejections(str(path)))]
    assert [(r.line, r.reason) for r in fast] == [(r.line, r.reason) for r in whole]
