"""The `kmodel check` command: exit codes, --json, outputs, bad input."""

from __future__ import annotations

from pathlib import Path
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


def test_holding_model_exits_zero_with_the_figures_a_script_needs() -> None:
    code, out, _ = run("check", "replication", "--json")
    assert code == 0
    payload = last_json(out)
    assert payload["distinct_states"] == 5_973 and payload["violated"] is None
    for key in ("states_generated", "depth", "seconds", "trace_length", "coverage", "sometimes"):
        assert key in payload
    assert all(payload["sometimes"].values())


def test_violation_exits_one_and_prints_the_trace_table(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    dot = tmp_path / "graph.dot"
    code, out, _ = run(
        "check",
        "replication",
        "--truncation",
        "high_watermark",
        "--invariant",
        "StrongIsr",
        "--trace-json",
        str(trace),
        "--dot",
        str(dot),
    )
    assert code == 1
    assert "Invariant StrongIsr is violated (10 states)" in out
    assert "become_follower(q=(e2,L1,{1,2}), r=2)" in out
    steps = orjson.loads(trace.read_bytes())["trace"]
    assert len(steps) == 10 and steps[0]["action"] is None
    assert dot.read_text().startswith('digraph "replication"')


def test_budget_exhausted_is_unknown() -> None:
    code, out, _ = run("check", "replication", "--max-states", "100", "--json")
    assert code == 2 and last_json(out)["complete"] is False


def test_vacuous_model_fails() -> None:
    # With no epoch to spare after the first election, leadership can never change.
    code, out, _ = run("check", "replication", "--max-epoch", "0")
    assert code == 1 and "sometimes LeaderChange: NOT witnessed" in out


def test_simulation_finds_the_kip101_bug_and_is_seeded() -> None:
    args = ("check", "replication", "--truncation", "high_watermark", "--simulate")
    a = run(*args, "--seed", "3", "--json")
    b = run(*args, "--seed", "3", "--json")
    assert a[0] == b[0] == 1
    first, second = last_json(a[1]), last_json(b[1])
    assert first["mode"] == "simulation"
    for key in ("violated", "trace_length", "distinct_states", "states_generated", "coverage"):
        assert first[key] == second[key], key


def test_bad_parameters_are_one_line_errors_with_exit_two() -> None:
    for args, needle in [
        (("--invariant", "Nope"), "unknown invariant 'Nope'"),
        (("--unclean",), "only in --model extended"),
        (("--replicas", "9"), "replicas must be 1..4"),
        (("--model", "extended", "--min-isr", "3"), "min_isr must be 1..replicas"),
    ]:
        code, _, err = run("check", "replication", *args)
        assert code == 2, args
        assert needle in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1


def test_symmetry_reports_the_reduction() -> None:
    code, out, _ = run("check", "replication", "--symmetry", "--json")
    payload = last_json(out)
    assert code == 0 and payload["unreduced_states"] == 5_973
    assert payload["symmetry_factor"] > 1
