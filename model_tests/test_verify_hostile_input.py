"""``kmodel verify`` on careless and hostile input: nothing checked is UNKNOWN with the
reason, undecodable bytes are rejected line by line, directories yield only history files
(each once), flags are refused before any work starts, long values are cut in messages,
an ILLEGAL verdict names its violations by history line, and a violation anywhere wins
over UNKNOWN elsewhere."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from jepsen_py.checker.engine import verify_path
from jepsen_py.checker.result import Verdict
from jepsen_py.cli.verify import verify
from jepsen_py.history import Op, list_histories, read_edn, write_jsonl
from jepsen_py.history.jsonl import NOT_UTF8
from jepsen_py.history.validate import Rejections


def run(*args: str) -> tuple[int, str, dict[str, Any] | None]:
    result = CliRunner().invoke(verify, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    lines = result.stdout.strip().splitlines()
    payload = orjson.loads(lines[-1]) if "--json" in args and lines else None
    return result.exit_code, result.output, payload


def ops(*events: tuple[Any, ...], key: str = "k") -> list[Op]:
    return [Op(i, i, p, t, f, key, v) for i, (p, t, f, v) in enumerate(events)]


LOST = ops(
    (0, "invoke", "send", 10),
    (0, "ok", "send", {"offset": 0, "value": 10}),
    (0, "invoke", "send", 11),
    (0, "ok", "send", {"offset": 1, "value": 11}),
    (1, "invoke", "poll", {"from": 0}),
    (1, "ok", "poll", {"records": [[1, 11]], "hw": 2}),
)
"""A poll from 0 that returns offset 1 first: 10 is lost, and the poll skipped it."""

CLEAN = ops(
    (0, "invoke", "send", 10),
    (0, "ok", "send", {"offset": 0, "value": 10}),
    (1, "invoke", "poll", {"from": 0}),
    (1, "ok", "poll", {"records": [[0, 10]], "hw": 1}),
)


# --- nothing to check -----------------------------------------------------------------


def test_an_empty_file_is_unknown_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n\n")
    code, _, payload = run(str(tmp_path / "empty.jsonl"), "--json")
    assert code == 2 and payload is not None
    assert payload["inputs"][0]["verdict"] == "unknown"
    assert "nothing to check: the file holds no op" in payload["inputs"][0]["error"]


def test_every_line_rejected_is_unknown_with_the_first_reason(tmp_path: Path) -> None:
    (tmp_path / "junk.jsonl").write_text("hello\n[1, 2]\n")
    code, _, payload = run(str(tmp_path / "junk.jsonl"), "--json")
    assert code == 2 and payload is not None
    error = payload["inputs"][0]["error"]
    assert "all 2 line(s) with content were rejected" in error and "not valid JSON" in error


def test_a_format_that_fits_no_line_is_unknown_and_names_the_format_it_looks_like(
    tmp_path: Path,
) -> None:
    write_jsonl(tmp_path / "lost.jsonl", LOST)
    code, _, payload = run(str(tmp_path / "lost.jsonl"), "--format", "porcupine-etcd", "--json")
    assert code == 2 and payload is not None
    error = payload["inputs"][0]["error"]
    assert "no line of it is a porcupine-etcd op" in error
    assert "looks like jsonl, not porcupine-etcd: check --format" in error


# --- undecodable bytes ----------------------------------------------------------------


def test_undecodable_bytes_are_rejected_line_by_line_in_every_text_format(
    tmp_path: Path,
) -> None:
    lines = [orjson.dumps({k: v for k, v in op_record(op).items()}) for op in CLEAN]
    lines.insert(2, b'{"process": 7, "type": "ok", "f": "send", "value": "\xff\xfe"}')
    (tmp_path / "h.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    result = verify_path(tmp_path / "h.jsonl")
    assert [(r.line, r.reason) for r in result.rejected] == [(3, NOT_UTF8)]
    assert result.verdict is Verdict.UNKNOWN and result.ops == 4  # the rest was checked
    edn = b"{:process 0 :type :invoke :f :write :value 1}\n{:process 0 :type :ok :f \xff}\n"
    (tmp_path / "h.edn").write_bytes(edn)
    sink = Rejections(str(tmp_path / "h.edn"))
    assert len(list(read_edn(tmp_path / "h.edn", sink))) == 1
    assert [(r.line, r.reason) for r in sink] == [(2, NOT_UTF8)]


def test_a_type_that_is_no_string_is_rejected_not_a_crash(tmp_path: Path) -> None:
    """A ``type`` that is a list (unhashable) is a malformed line like any other: rejected
    with its line and the reason, in JSONL and in EDN alike."""
    lines = [orjson.dumps(op_record(op)) for op in CLEAN]
    lines.insert(1, b'{"process": 7, "type": [1], "f": "send", "value": 3}')
    (tmp_path / "h.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    result = verify_path(tmp_path / "h.jsonl")
    assert [r.line for r in result.rejected] == [2]
    assert "unknown type [1]" in result.rejected[0].reason
    (tmp_path / "h.edn").write_text("{:process 0 :type [:ok] :f :read :value 1}\n")
    sink = Rejections(str(tmp_path / "h.edn"))
    assert list(read_edn(tmp_path / "h.edn", sink)) == []
    assert [r.line for r in sink] == [1] and "unknown type" in sink.items[0].reason


def op_record(op: Op) -> dict[str, Any]:
    from jepsen_py.history.jsonl import op_to_record

    return op_to_record(op)


# --- which files a directory holds ----------------------------------------------------


def test_a_directory_yields_history_files_once_and_names_what_it_skipped(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "kafka" / "20240101T000000Z"
    run_dir.mkdir(parents=True)
    write_jsonl(run_dir / "history.jsonl", CLEAN)
    (run_dir / "results.json").write_text('{"verdict": "valid"}')
    (run_dir / "test.json").write_text("{}")
    (run_dir / "timeline.html").write_text("<html></html>")
    (run_dir / "results.edn").write_text("{:valid? true}")
    (run_dir / "history.edn").write_text("{:process 0, :type :invoke, :f :read}\n")
    os.symlink(run_dir.name, tmp_path / "kafka" / "latest")
    os.symlink("20240101T000000Z/history.jsonl", tmp_path / "kafka" / "copy.jsonl")
    listing = list_histories([str(tmp_path)])
    assert sorted(Path(f).name for f in listing.files) == ["history.edn", "history.jsonl"]
    skipped = {Path(path).name: why for path, why in listing.skipped}
    assert {"results.json", "test.json", "timeline.html", "results.edn"} <= set(skipped)
    assert "the same file as" in skipped["copy.jsonl"]
    _, _, payload = run(str(tmp_path), "--json")
    assert payload is not None and payload["totals"]["inputs"] == 2


def test_a_path_that_names_nothing_is_an_input_error_not_a_crash(tmp_path: Path) -> None:
    code, _, payload = run(str(tmp_path / "missing.jsonl"), "--json")
    assert code == 2 and payload is not None and "no such file" in payload["inputs"][0]["error"]
    (tmp_path / "empty").mkdir()
    code, _, payload = run(str(tmp_path / "empty"), "--json")
    assert code == 2 and payload is not None
    assert "holds no history file" in payload["inputs"][0]["error"]


# --- flags ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--engine", "spark", "--master", "foo://x"], "is not a Spark master URL"),
        (["--engine", "spark", "--master", "local[0]"], "is not a Spark master URL"),
        (["--engine", "spark", "--driver-memory", "lots"], "is not a memory size"),
        (["--engine", "spark", "--spark-conf", "novalue"], "expected KEY=VALUE"),
        (["--model", "register", "--consistency", "kafka"], "--consistency applies to Kafka"),
        (["--timeout", "0"], "--timeout must be a positive"),
        (["--engine", "local", "--master", "local[2]"], "applies to --engine spark"),
        (["--engine", "local", "--no-whole-files"], "applies to --engine spark"),
        (["--partitions", "0"], "Invalid value for '--partitions'"),
        (["--max-key-ops", "-1"], "Invalid value for '--max-key-ops'"),
        (["--consistency", "strict"], "Invalid value for '--consistency'"),
    ],
)
def test_a_bad_flag_is_refused_before_any_work(tmp_path: Path, args: list[str], says: str) -> None:
    write_jsonl(tmp_path / "h.jsonl", CLEAN)
    result = CliRunner().invoke(verify, [*args, str(tmp_path / "h.jsonl")])
    assert result.exit_code == 2 and says in result.output, result.output
    assert "starting Spark" not in result.output


def test_an_output_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "h.jsonl", CLEAN)
    (tmp_path / "out").write_text("")
    code, out, _ = run(str(tmp_path / "h.jsonl"), "--output", str(tmp_path / "out"))
    assert code == 2 and "--output" in out and "not a directory" in out


# --- messages -------------------------------------------------------------------------


def test_long_values_are_cut_in_messages(tmp_path: Path) -> None:
    huge = "x" * 100_000
    lines = [orjson.dumps(op_record(op)).decode() for op in CLEAN]
    lines.append(orjson.dumps({"process": 9, "type": huge, "f": "send"}).decode())
    (tmp_path / "h.jsonl").write_text("\n".join(lines) + "\n")
    result = verify_path(tmp_path / "h.jsonl")
    (rejection,) = result.rejected
    assert "unknown type" in rejection.reason and len(rejection.reason) < 700
    big = ops(
        (0, "invoke", "send", huge),
        (0, "ok", "send", {"offset": 0, "value": huge}),
        (1, "invoke", "send", huge),
        (1, "ok", "send", {"offset": 1, "value": huge}),
    )
    write_jsonl(tmp_path / "twice.jsonl", big)
    (key,) = verify_path(tmp_path / "twice.jsonl").keys
    assert "sent twice" in (key.explanation or "") and len(key.explanation or "") < 2000


# --- verdicts -------------------------------------------------------------------------


def test_an_illegal_verdict_names_its_violations_with_history_lines(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "lost.jsonl", LOST)
    code, out, _ = run(str(tmp_path / "lost.jsonl"))
    assert code == 1
    assert "violation lost-write (1)" in out and "witness lines [1 2 6]" in out
    assert "violation poll-skip (1)" in out
    code, _, payload = run(str(tmp_path / "lost.jsonl"), "--json")
    assert payload is not None
    (key,) = payload["inputs"][0]["keys"]
    assert [v["name"] for v in key["violations"]] == ["lost-write", "poll-skip"]
    assert key["violations"][0] == {"name": "lost-write", "count": 1, "lines": [[1, 2, 6]]}
    assert payload["inputs"][0]["violations"] == {"lost-write": 1, "poll-skip": 1}
    assert payload["totals"]["violations"] == {"lost-write": 1, "poll-skip": 1}


def test_a_violation_anywhere_wins_over_unknown_elsewhere(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "lost.jsonl", LOST)
    (tmp_path / "junk.jsonl").write_text("junk\n")
    code, _, payload = run(str(tmp_path / "junk.jsonl"), str(tmp_path / "lost.jsonl"), "--json")
    assert code == 1 and payload is not None
    assert [i["verdict"] for i in payload["inputs"]] == ["unknown", "illegal"]
    # in one file: a key with rejected lines and another key with a violation
    lines = [orjson.dumps(op_record(op)).decode() for op in LOST]
    lines.append('{"process": 5, "type": "invoke", "f": "send", "key": "j", "value": []]}')
    lines.append('{"process": 5, "type": "ok", "f": "send", "key": "j"}')
    (tmp_path / "mixed.jsonl").write_text("\n".join(lines) + "\n")
    assert verify_path(tmp_path / "mixed.jsonl").verdict is Verdict.ILLEGAL


def test_a_keyless_assign_moves_the_consumer_on_every_key_of_its_run(tmp_path: Path) -> None:
    def record(process: int, type_: str, f: str, value: Any, key: str | None = "k") -> bytes:
        fields = {"process": process, "type": type_, "f": f, "value": value}
        return orjson.dumps({**fields, "key": key} if key is not None else fields)

    for keys, expected in ((["k", "j"], Verdict.ILLEGAL), (["j"], Verdict.OK), (None, Verdict.OK)):
        lines = [
            record(0, "invoke", "send", 10),
            record(0, "ok", "send", {"offset": 0, "value": 10}),
            record(0, "invoke", "send", 11),
            record(0, "ok", "send", {"offset": 1, "value": 11}),
            record(0, "invoke", "send", 12),
            record(0, "ok", "send", {"offset": 2, "value": 12}),
            record(2, "invoke", "send", 20, "j"),
            record(2, "ok", "send", {"offset": 0, "value": 20}, "j"),
            record(1, "invoke", "poll", {"from": 0}),
            record(1, "ok", "poll", {"records": [[0, 10]], "hw": 3}),
            record(1, "invoke", "assign", keys, None),
            record(1, "ok", "assign", keys, None),
            # continuing: past offset 1 if the position on k was kept; anywhere if not
            record(1, "invoke", "poll", {}),
            record(1, "ok", "poll", {"records": [[2, 12]], "hw": 3}),
        ]
        path = tmp_path / f"assign-{keys}.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        result = verify_path(path)
        assert result.verdict is expected, (keys, [k.explanation for k in result.keys])
        assert result.ops == 14 and {k.key for k in result.keys} == {"k", "j"}


def test_edn_histories_may_be_a_top_level_list_vector_or_one_map_per_line(
    tmp_path: Path,
) -> None:
    maps = [
        "{:process 0, :type :invoke, :f :write, :value 1}",
        "{:process 0, :type :ok, :f :write, :value 1}",
        "{:process 1, :type :invoke, :f :read, :value nil}",
        "{:process 1, :type :ok, :f :read, :value 1}",
    ]
    layouts = {
        "lines.edn": "\n".join(maps),
        "vector.edn": "[" + "\n ".join(maps) + "]",
        "list.edn": "(" + "\n ".join(maps) + ")",
    }
    for name, text in layouts.items():
        (tmp_path / name).write_text(text + "\n")
        result = verify_path(tmp_path / name)
        assert result.verdict is Verdict.OK and result.ops == 4 and not result.rejected, name
