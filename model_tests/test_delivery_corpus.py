"""``kmodel verify --delivery`` on the delivery corpus (``model_tests/corpora/delivery``:
one hand-written consumer-group history per anomaly, explanation and near miss, and
``cases.json``, what each mode must say of each, the pages docs/checking.md cites), and
the command line's exit codes, refusals and rejected lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from jepsen_py.checker.delivery_engine import verify_delivery_path
from jepsen_py.checker.taxonomy import DELIVERIES
from jepsen_py.cli.verify import verify

CORPUS = Path(__file__).resolve().parent / "corpora" / "delivery"
CASES = json.loads((CORPUS / "cases.json").read_text())["cases"]


def run(*args: str) -> tuple[int, str, dict[str, Any] | None]:
    result = CliRunner().invoke(verify, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    lines = result.stdout.strip().splitlines()
    payload = orjson.loads(lines[-1]) if "--json" in args and lines else None
    return result.exit_code, result.output, payload


@pytest.mark.parametrize("delivery", DELIVERIES)
@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_each_corpus_history_gets_the_verdict_and_counts_its_case_states(
    case: dict[str, Any], delivery: str
) -> None:
    result = verify_delivery_path(CORPUS / case["file"], delivery)
    expected = case["expect"][delivery]
    assert result.verdict.value == expected["verdict"]
    assert result.anomaly_counts == expected["counts"]
    assert not result.rejected


def test_the_corpus_covers_every_verdict_and_every_anomaly() -> None:
    verdicts = {c["expect"][d]["verdict"] for c in CASES for d in DELIVERIES}
    names = {n for c in CASES for d in DELIVERIES for n in c["expect"][d]["counts"]}
    assert verdicts == {"ok", "illegal", "unknown"}
    assert names == {
        "lost",
        "duplicated-crash",
        "duplicated-seek",
        "duplicated-rebalance",
        "duplicated-unexplained",
        "commit-regression",
    }


def test_exit_codes_follow_the_verdict_under_each_mode() -> None:
    lost = str(CORPUS / "lost-commit-before-process.jsonl")
    crash = str(CORPUS / "duplicate-crash.jsonl")
    assert run("--engine", "local", "--delivery", "at-least-once", lost)[0] == 1
    assert run("--engine", "local", "--delivery", "at-most-once", lost)[0] == 0
    code, out, payload = run("--engine", "local", "--delivery", "at-least-once", "--json", crash)
    assert code == 0
    assert payload is not None
    [key] = payload["inputs"][0]["keys"]
    assert key["consistency"] == "at-least-once"
    assert key["informational"] == {"duplicated-crash": 2}
    assert "anomaly duplicated-crash (informational): 2" not in out  # --json: no table
    code, out, _ = run("--engine", "local", "--delivery", "at-most-once", crash)
    assert code == 1
    assert "violation duplicated-crash (2)" in out
    assert "witness lines [9 10 15], [9 10 15]" in out
    seek = str(CORPUS / "seek-regression-undecided.jsonl")
    assert run("--engine", "local", "--delivery", "at-least-once", seek)[0] == 2


@pytest.mark.parametrize(
    "flag", [["--model", "log"], ["--consistency", "kafka"], ["--timeout", "3"]]
)
def test_flags_of_the_log_check_are_refused_with_delivery(flag: list[str]) -> None:
    code, out, _ = run("--engine", "local", "--delivery", "at-least-once", *flag, str(CORPUS))
    assert code == 2
    assert f"{flag[0]} does not apply to --delivery" in out


def test_malformed_group_lines_are_rejected_with_their_line_and_reason(tmp_path: Path) -> None:
    lines = [
        {"process": 0, "type": "invoke", "f": "send", "key": "t-0", "value": 1},
        {"process": 0, "type": "ok", "f": "send", "key": "t-0", "value": {"offset": 0, "value": 1}},
        {"process": 1, "type": "ok", "f": "process", "key": "t-0", "value": {"records": []}},
        {"process": 1, "type": "invoke", "f": "commit", "value": {"t-0": "1"}},
        {"process": 1, "type": "invoke", "f": "process", "key": "t-0", "value": [[0, 1]]},
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, _, payload = run("--engine", "local", "--delivery", "at-least-once", "--json", str(path))
    assert code == 2
    assert payload is not None
    rejected = payload["inputs"][0]["rejected_lines"]
    assert [(r["line"], r["key"]) for r in rejected] == [(3, "t-0"), (4, None), (5, "t-0")]
    assert "not the records processed" in rejected[0]["reason"]
    assert "not a map of key -> offset" in rejected[1]["reason"]
    assert "logged once, as ok" in rejected[2]["reason"]


def test_a_history_without_group_ops_is_not_judged(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    lines = [
        {"process": 0, "type": "invoke", "f": "send", "key": "t-0", "value": 1},
        {"process": 0, "type": "ok", "f": "send", "key": "t-0", "value": {"offset": 0, "value": 1}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, _ = run("--engine", "local", "--delivery", "at-least-once", str(path))
    assert code == 2
    assert "not a consumer group's history" in out
