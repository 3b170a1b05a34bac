"""Every verdict of Porcupine's public test histories (the corpus README), reproduced:
102 etcd logs (a compare-and-set register under Jepsen) and 6 key-value histories.

The whole corpus takes a few seconds, so it all runs by default. The expected verdicts are
the README's list, parsed from the README itself so the two cannot drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jepsen_py.checker.engine import verify_path
from jepsen_py.checker.result import Verdict
from model_tests.shared_corpora import PORCUPINE, needs_porcupine

CORPUS = PORCUPINE
README = CORPUS / "README.md"

pytestmark = needs_porcupine


def _linearizable_etcd() -> set[int]:
    text = README.read_text()
    listed = re.search(r"Verdicts: linearizable — ([\d,\s]+)\.", text)
    assert listed, "the README's etcd verdict list moved: update this parser"
    return {int(n) for n in re.findall(r"\d+", listed.group(1))}


def _etcd_cases() -> list[tuple[str, Verdict]]:
    if not README.exists():
        return []
    ok = _linearizable_etcd()
    cases = []
    for path in sorted((CORPUS / "jepsen").glob("etcd_*.log")):
        number = int(path.stem.split("_")[1])
        cases.append((path.name, Verdict.OK if number in ok else Verdict.ILLEGAL))
    return cases


def test_readme_lists_23_linearizable_of_102_etcd_histories() -> None:
    cases = _etcd_cases()
    assert len(cases) == 102
    assert sum(v is Verdict.OK for _, v in cases) == 23
    assert sum(v is Verdict.ILLEGAL for _, v in cases) == 79


@pytest.mark.parametrize(("name", "expected"), _etcd_cases())
def test_etcd_verdict(name: str, expected: Verdict) -> None:
    result = verify_path(CORPUS / "jepsen" / name, timeout=60)
    assert result.error is None and not result.rejected
    assert result.format == "porcupine-etcd" and result.model == "cas-register"
    assert result.verdict is expected, [k.explanation for k in result.keys]


KV = [
    (f"c{n}-{v}.txt", Verdict.OK if v == "ok" else Verdict.ILLEGAL)
    for n in ("01", "10", "50")
    for v in ("ok", "bad")
]


@pytest.mark.parametrize(("name", "expected"), KV)
def test_kv_verdict(name: str, expected: Verdict) -> None:
    result = verify_path(CORPUS / "kv" / name, timeout=60)
    assert result.error is None and not result.rejected
    assert result.format == "porcupine-kv" and result.model == "kv"
    assert result.verdict is expected
    assert len(result.keys) >= 8  # c01-bad touches 8 of the 10 keys


def test_an_illegal_etcd_history_explains_itself() -> None:
    result = verify_path(CORPUS / "jepsen" / "etcd_000.log")
    (key,) = result.keys
    assert key.verdict is Verdict.ILLEGAL
    assert key.explanation is not None and "no order places" in key.explanation
    assert re.search(r"\[line \d+\]", key.explanation)


def test_a_linearizable_history_becomes_illegal_when_one_read_is_changed(tmp_path: Path) -> None:
    # the corpus check can fail: change the value of one ok read in an OK history
    lines = (CORPUS / "jepsen" / "etcd_002.log").read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if re.search(r":ok\s+:read\s+\d+$", line))
    value = int(lines[index].rsplit(None, 1)[1])
    lines[index] = lines[index].rsplit(None, 1)[0] + f"\t{value + 100}"
    mutated = tmp_path / "etcd_mutated.log"
    mutated.write_text("\n".join(lines) + "\n")
    assert verify_path(CORPUS / "jepsen" / "etcd_002.log").verdict is Verdict.OK
    assert verify_path(mutated).verdict is Verdict.ILLEGAL


def test_the_pruned_search_takes_a_fifth_of_the_steps_on_the_slowest_etcd_log() -> None:
    # etcd_002 took 443,517 model steps before indeterminate operations were pruned (only
    # where they change the state; equal inputs in call order): pinned so a change shows
    from jepsen_py.checker.engine import load
    from jepsen_py.checker.model import operations
    from jepsen_py.checker.models import CasRegisterModel
    from jepsen_py.checker.wgl import check_partition

    loaded = load(CORPUS / "jepsen" / "etcd_002.log")
    (ops,) = loaded.groups.values()
    model = CasRegisterModel()
    result = check_partition(model, operations(ops, model, loaded.conventions))
    assert result.verdict is Verdict.OK
    assert result.steps == 77_083
