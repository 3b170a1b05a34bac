"""Fault-injection runs pinned as scenario files (``scenarios/runs/*.txt``): the run that
lost acknowledged writes to a wall-clock bump (issue 20: seed 517 and its shrunk form),
which must stay safe, and the runs that show each known loss mechanism. ``--rewrite``
regenerates them; the diff is what gets reviewed."""

from __future__ import annotations

from pathlib import Path

import pytest

from model_tests.run_scenarios import RunScenario
from model_tests.scenario_files import (
    SCENARIOS,
    assert_matches_file,
    parse_scenario,
    render_scenario,
)

RUNS = SCENARIOS / "runs"
FILES = sorted(RUNS.glob("*.txt"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_run_scenario(path: Path, rewrite: bool) -> None:
    scenario = RunScenario()
    items = []
    for kind, line, expected in parse_scenario(path.read_text()):
        if kind == "case":
            expected = scenario.execute(line)
        items.append((kind, line, expected))
    assert_matches_file(path, render_scenario(items), rewrite)


def test_the_scenarios_exist() -> None:
    names = {p.stem for p in FILES}
    assert {
        "issue20-seed517",
        "issue20-shrunk",
        "last-replica-standing",
        "last-replica-standing-elr",
        "elr-unclean-restart",
        "stale-elr",
        "unclean-leader-election",
        "kip279-fast-failover",
    } <= names
