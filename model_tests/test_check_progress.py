"""``kmodel check`` reports progress on stderr when it is not on a terminal (CI, scripts,
``--json``): a plain line every few seconds."""

from __future__ import annotations

import importlib

import pytest

from spec.explore import Stats

# The package re-exports the command under the module's name; take the module itself.
check_module = importlib.import_module("jepsen_py.cli.check")


def test_progress_lines_when_stderr_is_not_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(check_module, "PROGRESS_SECONDS", 0.0)
    with check_module.progress_display(True) as report:
        assert report is not None
        report(Stats(distinct_states=12_345, depth=7, seconds=2.0))
    err = capsys.readouterr().err
    assert "progress: 12,345 distinct states, depth 7, 6,172 states/s" in err
    assert "MiB" in err


def test_no_progress_when_disabled(capsys: pytest.CaptureFixture[str]) -> None:
    with check_module.progress_display(False) as report:
        assert report is None
    assert capsys.readouterr().err == ""
