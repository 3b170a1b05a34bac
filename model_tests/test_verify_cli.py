"""``kmodel verify``: exit codes (0 OK, 1 illegal or anomaly, 2 unknown or input error), the
``--json`` last line, flags, rejected lines and HTML reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from jepsen_py.cli.verify import verify
from jepsen_py.history import Op, write_jsonl
from model_tests.shared_corpora import PORCUPINE, needs_porcupine

CORPUS = PORCUPINE
ETCD_OK = str(CORPUS / "jepsen" / "etcd_005.log")
ETCD_BAD = str(CORPUS / "jepsen" / "etcd_000.log")
needs_corpus = needs_porcupine


def run(*args: str) -> tuple[int, str, dict[str, Any] | None]:
    result = CliRunner().invoke(verify, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    lines = result.stdout.strip().splitlines()
    payload = orjson.loads(lines[-1]) if "--json" in args and lines else None
    return result.exit_code, result.output, payload


def _register(tmp_path: Path, read_value: Any, name: str = "r.jsonl") -> str:
    path = tmp_path / name
    write_jsonl(
        path,
        [
            Op(0, 0, 0, "invoke", "write", "x", 1),
            Op(1, 1, 0, "ok", "write", "x", 1),
            Op(2, 2, 1, "invoke", "read", "x", None),
            Op(3, 3, 1, "ok", "read", "x", read_value),
            Op(4, 4, 2, "invoke", "read", "y", None),
            Op(5, 5, 2, "ok", "read", "y", None),
        ],
    )
    return str(path)


@needs_corpus
def test_ok_history_exits_0_and_json_has_the_agreed_shape() -> None:
    code, _, payload = run(ETCD_OK, "--json")
    assert code == 0 and payload is not None
    (entry,) = payload["inputs"]
    assert entry["path"] == ETCD_OK and entry["verdict"] == "ok"
    assert entry["format"] == "porcupine-etcd" and entry["model"] == "cas-register"
    assert entry["anomalies"] == {} and entry["rejected_lines"] == []
    (key,) = entry["keys"]
    assert {"key", "ops", "verdict", "seconds"} <= set(key) and key["verdict"] == "ok"
    assert payload["totals"]["inputs"] == 1 and payload["totals"]["ok"] == 1
    assert payload["exit_code"] == 0


@needs_corpus
def test_each_path_gets_its_own_verdict_and_any_illegal_exits_1() -> None:
    code, output, payload = run(ETCD_OK, ETCD_BAD, "--json")
    assert code == 1 and payload is not None
    assert [i["verdict"] for i in payload["inputs"]] == ["ok", "illegal"]
    assert payload["totals"]["illegal"] == 1
    code, output, _ = run(ETCD_BAD)
    assert code == 1 and "ILLEGAL" in output and "no order places" in output


def test_register_key_per_key_table_and_initial_value(tmp_path: Path) -> None:
    code, _output, payload = run(_register(tmp_path, 1), "--json")
    assert code == 0 and payload is not None
    assert payload["inputs"][0]["model"] == "cas-register"
    assert [k["key"] for k in payload["inputs"][0]["keys"]] == ["x", "y"]
    code, _, payload = run(_register(tmp_path, 2), "--json")
    assert code == 1 and payload is not None
    x, y = payload["inputs"][0]["keys"]
    assert x["verdict"] == "illegal"
    # the check stops at the first illegal key: y is left unchecked, not guessed
    assert y["verdict"] == "unknown" and "stopped at the first illegal" in y["explanation"]
    # y's read of nil holds only while the register starts empty
    code, _, _ = run(_register(tmp_path, 1), "--initial", "0")
    assert code == 1
    code, _, _ = run(_register(tmp_path, 1), "--initial", "nil", "--model", "register")
    assert code == 0


def test_rejected_lines_make_the_key_unknown_and_exit_2(tmp_path: Path) -> None:
    path = Path(_register(tmp_path, 1))
    lines = path.read_text().splitlines()
    lines.insert(2, '{"process": 1, "type": "ok", "f": "read", "key": "x", "value": 1}')
    lines.append("{oops")
    path.write_text("\n".join(lines) + "\n")
    code, output, payload = run(str(path), "--json")
    assert code == 2 and payload is not None
    entry = payload["inputs"][0]
    assert [(r["line"], r["key"]) for r in entry["rejected_lines"]] == [(3, "x"), (8, None)]
    assert "completes nothing" in entry["rejected_lines"][0]["reason"]
    assert entry["verdict"] == "unknown"
    verdicts = {k["key"]: k["verdict"] for k in entry["keys"]}
    assert verdicts == {"x": "unknown", "y": "ok"}  # the other key's check went on
    code, output, _ = run(str(path))
    assert code == 2 and f"rejected {path}:3:" in output


@needs_corpus
def test_a_timeout_gives_unknown_and_exit_2() -> None:
    code, _, payload = run(str(CORPUS / "jepsen" / "etcd_002.log"), "--timeout", "1e-6", "--json")
    assert code == 2 and payload is not None
    key = payload["inputs"][0]["keys"][0]
    assert key["verdict"] == "unknown" and "timed out" in key["explanation"]


def test_input_errors_exit_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    code, output, payload = run(str(tmp_path / "missing.jsonl"), "--json")
    assert code == 2 and payload is not None
    assert "no such file" in payload["inputs"][0]["error"]
    odd = tmp_path / "odd.bin"
    odd.write_text("hello\n")
    code, output, _ = run(str(odd))
    assert code == 2 and "--format" in output and "Traceback" not in output
    code, output, _ = run(str(odd), "--timeout", "-1")
    assert code == 2 and output.startswith("kmodel: error: --timeout")
    code, output, _ = run(_register(tmp_path, 1), "--model", "kv")
    assert code == 2 and "not an operation of the kv model" in output


@needs_corpus
def test_report_writes_one_self_contained_page_per_key(tmp_path: Path) -> None:
    code, _, payload = run(ETCD_BAD, "--report", str(tmp_path / "out"), "--json")
    assert code == 1 and payload is not None
    report = Path(payload["inputs"][0]["keys"][0]["report"])
    page = report.read_text()
    assert report.suffix == ".html" and "<svg" in page and 'class="blocked"' in page


def test_log_model_runs_the_kafka_log_checker(tmp_path: Path) -> None:
    good = [
        Op(0, 0, 0, "invoke", "send", "t-0", 17),
        Op(1, 1, 0, "ok", "send", "t-0", {"offset": 0, "value": 17}),
        Op(2, 2, 1, "invoke", "poll", "t-0", {"from": 0}),
        Op(3, 3, 1, "ok", "poll", "t-0", {"records": [[0, 17]], "hw": 1}),
    ]
    write_jsonl(tmp_path / "good.jsonl", good)
    code, _, payload = run(str(tmp_path / "good.jsonl"), "--json")
    assert payload is not None and payload["inputs"][0]["model"] == "log"
    assert code == 0, payload
    bad = [*good[:3], Op(3, 3, 1, "ok", "poll", "t-0", {"records": [[0, 99]], "hw": 1})]
    write_jsonl(tmp_path / "bad.jsonl", bad)
    code, _, payload = run(str(tmp_path / "bad.jsonl"), "--model", "log", "--json")
    assert code == 1, payload


def test_unseen_write_is_a_violation_only_after_a_final_read(tmp_path: Path) -> None:
    sends = [
        Op(0, 0, 0, "invoke", "send", "t-0", 17),
        Op(1, 1, 0, "ok", "send", "t-0", {"offset": 0, "value": 17}),
        Op(2, 2, 0, "invoke", "send", "t-0", 18),
        Op(3, 3, 0, "ok", "send", "t-0", {"offset": 1, "value": 18}),
    ]
    # No final read-back: value 18 may simply not have been read yet.
    partial = [
        *sends,
        Op(4, 4, 1, "invoke", "poll", "t-0", {"from": 0}),
        Op(5, 5, 1, "ok", "poll", "t-0", {"records": [[0, 17]], "hw": 2}),
    ]
    write_jsonl(tmp_path / "partial.jsonl", partial)
    code, _, payload = run(str(tmp_path / "partial.jsonl"), "--json")
    assert payload is not None and code == 0, payload
    assert "unseen" in payload["inputs"][0]["anomalies"]
    # A final read-back that ends before value 18: the acknowledged write is gone.
    final = [
        *sends,
        Op(4, 4, 1, "invoke", "poll", "t-0", {"from": 0, "final": True}),
        Op(5, 5, 1, "ok", "poll", "t-0", {"records": [[0, 17]], "hw": 2}),
        Op(6, 6, 1, "invoke", "poll", "t-0", {"from": 1, "final": True}),
        Op(7, 7, 1, "ok", "poll", "t-0", {"records": [], "hw": 1}),
    ]
    write_jsonl(tmp_path / "final.jsonl", final)
    code, _, payload = run(str(tmp_path / "final.jsonl"), "--json")
    assert payload is not None and code == 1, payload
    assert payload["inputs"][0]["keys"][0]["violations"][0]["name"] == "lost-write"
    assert payload["inputs"][0]["keys"][0]["violations"][0]["lines"] == [[3, 4, 8]]
    # A final read that never reached the end of the log proves nothing: unknown.
    write_jsonl(tmp_path / "cut.jsonl", final[:6])
    code, _, payload = run(str(tmp_path / "cut.jsonl"), "--json")
    assert payload is not None and code == 2, payload
    assert "final read" in payload["inputs"][0]["keys"][0]["explanation"]
