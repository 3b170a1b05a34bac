"""``kmodel check offsets`` and ``kmodel prove offsets``: flags, bugs, exit codes."""

from __future__ import annotations

from typing import Any

import orjson
from click.testing import CliRunner

from jepsen_py.cli import main


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def last_json(stdout: str) -> dict[str, Any]:
    payload: dict[str, Any] = orjson.loads(stdout.strip().splitlines()[-1])
    return payload


def test_each_safety_bug_alone_is_violated_with_its_shortest_trace() -> None:
    expected = {
        "stale_generation_commit": ("StaleGenerationNeverCommits", 10),
        "fetch_before_load": ("CommittedWithinOwnerProgress", 16),
    }
    for bug, (name, length) in expected.items():
        code, out, _ = run("check", "offsets", "--bug", bug, "--workers", "1", "--json")
        assert code == 1, out
        payload = last_json(out)
        assert (payload["violated"], payload["trace_length"]) == (name, length)
        assert payload["params"]["bugs"] == [bug]


def test_commit_before_process_loses_a_record() -> None:
    code, out, _ = run("check", "offsets", "--commit", "before-process", "--workers", "1")
    assert code == 1
    assert "Invariant AtLeastOnce is violated (9 states)" in out
    assert "crash(slot=1)" in out


def test_commit_given_up_fails_liveness_only() -> None:
    code, out, _ = run(
        "check", "offsets", "--bug", "commit_given_up", "--max-member-expiries", "0", "--json"
    )
    assert code == 1, out
    payload = last_json(out)
    assert payload["violation_kind"] == "liveness"
    assert payload["violated"] == "WorkCommitted"


def test_offsets_flags_are_its_own() -> None:
    code, _, err = run("check", "offsets", "--protocol", "classic")
    assert code == 2 and "flag of spec group" in err
    code, _, err = run("check", "group", "--commit", "before-process")
    assert code == 2 and "flag of spec offsets" in err
    code, _, err = run("check", "offsets", "--records", "9")
    assert code == 2 and "records must be 1..4" in err


def test_prove_offsets_takes_the_flags_of_check_offsets_and_no_other_spec_s() -> None:
    code, out, _ = run("prove", "offsets", "--members", "1", "--records", "1", "--json")
    assert code == 0, out
    payload = last_json(out)
    assert (payload["members"], payload["records"], payload["status"]) == (1, 1, "proved")
    code, _, err = run("prove", "offsets", "--topic-partitions", "2")
    assert code == 2 and "--topic-partitions is a flag of spec group" in err
