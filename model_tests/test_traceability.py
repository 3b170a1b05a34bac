"""docs/traceability.md: every modelled mechanism traced to its spec, code and tests.

The table is rendered from ``model_tests/traceability.py``; these tests keep it current and
honest: every spec name and implementation path must resolve, every fault and flag must be
one ``kmodel test`` takes, and every mechanism must be mentioned by at least one test file
(a mechanism without a test is a gap, and fails here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jepsen_py.group_workload import parse_group_faults
from jepsen_py.nemesis import CATALOGUE
from model_tests import traceability
from model_tests.scenario_files import assert_matches_file

DOCS = Path(__file__).parent.parent / "docs"


def test_the_traceability_page_is_current(rewrite: bool) -> None:
    assert_matches_file(DOCS / "traceability.md", traceability.render(), rewrite)


@pytest.mark.parametrize("m", traceability.MECHANISMS, ids=lambda m: m.name)
def test_every_name_of_a_mechanism_resolves(m: traceability.Mechanism) -> None:
    assert not traceability.unresolved(m), f"{m.name}: no such spec declaration or code"


def test_every_fault_and_flag_is_one_kmodel_test_takes() -> None:
    from click.testing import CliRunner

    from jepsen_py.cli import main

    help_text = CliRunner().invoke(main, ["test", "--help"]).output
    for m in traceability.MECHANISMS:
        for f in m.fault:
            if f.startswith("--"):
                assert f.split()[0] in help_text, f"{m.name}: `kmodel test` has no {f}"
            else:
                assert f in CATALOGUE or parse_group_faults(f), f"{m.name}: no fault {f}"


def test_no_mechanism_is_without_a_test() -> None:
    tests = traceability.test_files()
    gaps = [m.name for m in traceability.MECHANISMS if not traceability.covering_tests(m, tests)]
    assert not gaps, f"mechanisms no test mentions: {gaps}"


def test_coverage_is_found_not_assumed(tmp_path: Path) -> None:
    """A file that names none of a mechanism's names does not cover it; one that does,
    does (the gap check above can fail)."""
    m = traceability.Mechanism(
        "x", "y", ("replication:become_leader",), ("impl.client:Producer.send",)
    )
    silent, spec, code, loose = (tmp_path / f"test_{n}.py" for n in ("a", "b", "c", "d"))
    silent.write_text("def test_nothing():\n    assert True\n")
    spec.write_text("STEP = 'become_leader'\n")
    code.write_text("from impl.client import Producer\n\nProducer(...).send(1)\n")
    loose.write_text("sock.send(b'x')\n")  # ``send``, but not the producer's
    files = [silent, spec, code, loose]
    assert traceability.covering_tests(m, files) == [spec, code]
