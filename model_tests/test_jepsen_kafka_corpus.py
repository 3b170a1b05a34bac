"""Jepsen's own Kafka checker tests, translated into this project's history format
(``model_tests/corpora/jepsen-kafka``: one history per case, and ``cases.json``, what
Jepsen asserts and what this checker finds).

Every case that needs no transactions either agrees with Jepsen -- the anomaly counts
Jepsen's test asserts are this checker's, under the names of ``cases.json``'s ``names`` --
or differs for the reason ``cases.json`` gives (and docs/checking.md repeats). Cases of
transactions are refused with a clear message (the model has none yet).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from jepsen_py.checker.engine import verify_path

CORPUS = Path(__file__).resolve().parent / "corpora" / "jepsen-kafka"
MANIFEST = orjson.loads((CORPUS / "cases.json").read_bytes())
CASES: list[dict[str, Any]] = MANIFEST["cases"]
DOCS = Path(__file__).resolve().parents[1] / "docs" / "checking.md"


def _counts(path: Path) -> tuple[str, dict[str, int], Any]:
    result = verify_path(path)
    counts: dict[str, int] = {}
    for key in result.keys:
        for name, n in key.counts.items():
            counts[name] = counts.get(name, 0) + n
    return result.verdict.value, counts, result


@pytest.mark.parametrize("case", [c for c in CASES if "file" in c], ids=lambda c: c["jepsen"])
def test_translated_jepsen_case(case: dict[str, Any]) -> None:
    verdict, counts, result = _counts(CORPUS / case["file"])
    if "verdict" in case:
        assert verdict == case["verdict"], (verdict, counts, result.error)
    for name, n in case.get("expect", {}).items():
        assert counts.get(name, 0) == n, (name, counts)
    if case["status"] == "agree":
        jepsen = {MANIFEST["names"].get(name, name): n for name, n in case["asserts"].items()}
        assert case["expect"] == jepsen, "an agreeing case finds what Jepsen asserts"
    elif case["status"] == "differ":
        assert case["reason"], "a difference says why"
    elif case["status"] == "txn":
        assert any("txn ops (Kafka transactions)" in r.reason for r in result.rejected)


def test_every_case_is_accounted_for_and_every_history_is_a_case() -> None:
    statuses = {c["status"] for c in CASES}
    assert statuses == {"agree", "differ", "txn", "n/a"}
    assert all(c.get("reason") for c in CASES if c["status"] in ("differ", "txn", "n/a"))
    files = {c["file"] for c in CASES if "file" in c}
    assert files == {p.name for p in CORPUS.glob("*.jsonl")}


def test_the_case_table_in_the_docs_matches_the_corpus() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for case in CASES:
        row = next((line for line in text.splitlines() if f"| {case['jepsen']} |" in line), None)
        assert row is not None, f"docs/checking.md has no row for {case['jepsen']!r}"
        assert f"| {case['status']} |" in row, (case["jepsen"], row)


def test_on_the_jepsen_cases_the_oracle_and_the_violations_agree_exactly() -> None:
    """The brute-force oracle of Kafka's guarantees rejects exactly the cases on which a
    violation fires (soundness is the oracle test's; here completeness holds too)."""
    from jepsen_py.checker.kafka_oracle import kafka_consistent
    from jepsen_py.history import read_history

    for case in CASES:
        if "file" not in case or case["status"] == "txn":
            continue
        verdict, _, _ = _counts(CORPUS / case["file"])
        accepted = kafka_consistent(list(read_history(CORPUS / case["file"]))).ok
        assert accepted == (verdict != "illegal"), case["jepsen"]
