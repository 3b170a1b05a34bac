"""Scenario files: expected output checked in next to the tests, with a rewrite mode."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

SCENARIOS = Path(__file__).parent / "scenarios"


def assert_matches_file(path: Path, actual: str, rewrite: bool) -> None:
    """Compare ``actual`` with the file's text; with ``rewrite``, write it instead."""
    if rewrite:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
        return
    if not path.exists():
        pytest.fail(f"{path} does not exist; run pytest with --rewrite (or KMODEL_REWRITE=1)")
    expected = path.read_text()
    if expected != actual:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=str(path),
                tofile="actual",
            )
        )
        pytest.fail(f"{path.name} differs from the model's output:\n{diff}")
