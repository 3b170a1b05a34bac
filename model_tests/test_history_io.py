"""Histories on disk: the JSONL and Parquet round trips, streaming, and validation errors
that name the file, the line and the reason."""

from __future__ import annotations

import types
from pathlib import Path

import orjson
import pytest

from jepsen_py.history import (
    HistoryError,
    Op,
    Rejections,
    read_history,
    read_jsonl,
    read_parquet,
    validate,
    write_jsonl,
    write_parquet,
)


def _ops() -> list[Op]:
    return [
        Op(0, 1200, 3, "invoke", "send", "t-0", 17),
        Op(1, 1900, 3, "ok", "send", "t-0", {"offset": 4, "value": 17}),
        Op(2, 2000, 1, "invoke", "poll", "t-0", {"from": 0}),
        Op(3, 2600, 1, "ok", "poll", "t-0", {"records": [[0, 11], [1, 12]], "hw": 2}),
        Op(4, 3000, "nemesis", "info", "start-partition", None, {"grudge": {"0": [1, 2]}}),
        Op(5, 3100, 2, "invoke", "cas", "r", [1, 2], run="run-b"),
        Op(6, 3200, 2, "fail", "cas", "r", [1, 2], run="run-b"),
    ]


def _strip_lines(ops: list[Op]) -> list[tuple[object, ...]]:
    return [(o.index, o.time, o.process, o.type, o.f, o.key, o.value, o.run) for o in ops]


def test_jsonl_round_trip_keeps_every_field(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    assert write_jsonl(path, _ops()) == 7
    back = list(read_jsonl(path))
    assert _strip_lines(back) == _strip_lines(_ops())
    assert [o.line for o in back] == [1, 2, 3, 4, 5, 6, 7]


def test_jsonl_reader_is_a_stream(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    write_jsonl(path, _ops())
    stream = read_jsonl(path)
    assert isinstance(stream, types.GeneratorType)
    assert next(stream).index == 0  # one op read, the rest not yet


def test_parquet_round_trip_over_several_row_groups(tmp_path: Path) -> None:
    path = tmp_path / "h.parquet"
    assert write_parquet(path, _ops(), row_group_size=2) == 7
    back = list(read_parquet(path, batch_size=3))
    assert _strip_lines(back) == _strip_lines(_ops())
    assert [o.line for o in back] == [1, 2, 3, 4, 5, 6, 7]  # row numbers
    assert back[4].process == "nemesis" and back[0].process == 3


def test_format_is_detected_from_extension_and_content(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a.jsonl", _ops())
    write_parquet(tmp_path / "b.parquet", _ops())
    (tmp_path / "c.data").write_bytes((tmp_path / "a.jsonl").read_bytes())
    for name in ("a.jsonl", "b.parquet", "c.data"):
        assert _strip_lines(list(read_history(tmp_path / name))) == _strip_lines(_ops())
    (tmp_path / "d.data").write_text("hello\n")
    with pytest.raises(HistoryError, match="--format"):
        list(read_history(tmp_path / "d.data"))


def _lines(*records: object) -> str:
    return "".join((r if isinstance(r, str) else orjson.dumps(r).decode()) + "\n" for r in records)


def test_malformed_lines_are_rejected_with_line_and_reason_and_reading_goes_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        _lines(
            {"process": 0, "type": "invoke", "f": "read", "key": "a"},
            "{not json",
            {"process": 0, "type": "done", "f": "read", "key": "a"},
            {"process": 0, "type": "ok", "key": "a"},
            [1, 2],
            {"process": 0, "type": "ok", "f": "read", "key": "a", "value": 1},
        )
    )
    rejections = Rejections(str(path))
    ops = list(read_jsonl(path, rejections))
    assert [o.line for o in ops] == [1, 6]
    got = {(r.line, r.reason.split(" ")[0]) for r in rejections}
    assert got == {(2, "not"), (3, "unknown"), (4, "field"), (5, "expected")}
    assert all(r.path == str(path) for r in rejections)
    assert "unknown type 'done'" in next(r.reason for r in rejections if r.line == 3)
    assert str(next(iter(rejections))).startswith(f"{path}:2: ")


def test_without_a_sink_the_first_malformed_line_raises(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(_lines({"process": 0, "type": "invoke", "f": "read"}, "]"))
    with pytest.raises(HistoryError, match=r"bad.jsonl:2: not valid JSON"):
        list(read_jsonl(path))


def _validated(tmp_path: Path, *records: dict[str, object]) -> tuple[list[Op], Rejections]:
    path = tmp_path / "h.jsonl"
    path.write_text(_lines(*records))
    rejections = Rejections(str(path))
    return list(validate(read_jsonl(path, rejections), rejections)), rejections


def _inv(p: object, f: str = "write", key: str = "a", value: object = 1) -> dict[str, object]:
    return {"process": p, "type": "invoke", "f": f, "key": key, "value": value}


def _done(p: object, t: str = "ok", f: str = "write", key: str = "a") -> dict[str, object]:
    return {"process": p, "type": t, "f": f, "key": key, "value": 1}


def test_a_well_formed_history_passes_validation_untouched(tmp_path: Path) -> None:
    ops, rejections = _validated(
        tmp_path,
        _inv(0),
        _inv(1, key="b"),
        {"process": "nemesis", "type": "info", "f": "kill"},
        _done(0),
        _done(1, "info", key="b"),
        _inv(0),  # still pending at the end: legal
    )
    assert len(ops) == 6 and not rejections.items


def test_a_completion_without_invocation_is_rejected_with_its_line(tmp_path: Path) -> None:
    ops, rejections = _validated(tmp_path, _inv(0), _done(0), _done(0), _done(7, key="b"))
    assert [(r.line, r.key) for r in rejections] == [(3, "a"), (4, "b")]
    assert "completes nothing" in rejections.items[0].reason
    assert len(ops) == 2


def test_a_process_invoking_twice_is_rejected_and_other_keys_go_on(tmp_path: Path) -> None:
    ops, rejections = _validated(
        tmp_path, _inv(0), _inv(0), _inv(1, key="b"), _done(1, key="b"), _done(0)
    )
    assert [r.line for r in rejections] == [2]
    assert "invokes twice" in rejections.items[0].reason
    assert "line 1" in rejections.items[0].reason
    assert [o.line for o in ops] == [1, 3, 4, 5]


def test_a_process_that_ended_info_must_not_invoke_again(tmp_path: Path) -> None:
    ops, rejections = _validated(tmp_path, _inv(0), _done(0, "info"), _inv(0), _done(0))
    assert [r.line for r in rejections] == [3, 4]
    assert "ended info" in rejections.items[0].reason
    assert "completes nothing" in rejections.items[1].reason
    # the same history with a new process id for the client is fine
    ops, rejections = _validated(tmp_path, _inv(0), _done(0, "info"), _inv(5), _done(5))
    assert not rejections.items and len(ops) == 4


def test_a_completion_of_another_f_or_key_is_rejected(tmp_path: Path) -> None:
    ops, rejections = _validated(tmp_path, _inv(0), _done(0, f="read"), _done(0, key="z"))
    assert [r.line for r in rejections] == [2, 3]
    assert [o.line for o in ops] == [1]
    assert "does not match" in rejections.items[0].reason
