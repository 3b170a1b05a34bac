"""``kmodel check --engine spark``: the breadth-first levels as Spark jobs give the
sequential search's results exactly (counts, coverage, depth, the counterexample, the
witnesses)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from jepsen_py.spark_search import check_spark
from model_tests.test_fingerprints import same_search
from spec.controller import Controller
from spec.controller import Params as ControllerParams
from spec.explore import check
from spec.framework import Spec
from spec.replication import Params, Replication

pytestmark = pytest.mark.spark

CONFIGS: dict[str, Spec] = {
    # a transition property broken (72 states)
    "accept_stale_epoch": Replication(Params(bugs=frozenset({"accept_stale_epoch"}))),
    # an invariant broken in the extended model (321 states)
    "extended acks=1": Replication(Params(model="extended", acks="1", max_crashes=1)),
    # the controller, whose states hold strings (386 states)
    "controller unconditional_write": Controller(
        ControllerParams(bugs=frozenset({"unconditional_write"}))
    ),
}


@pytest.fixture
def hash_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """PySpark refuses to partition by key unless the driver says its hash seed is fixed;
    the test session's workers share one seed (they fork from one daemon)."""
    monkeypatch.setenv("PYTHONHASHSEED", "0")


QUICK = {("accept_stale_epoch", False), ("accept_stale_epoch", True)}
"""In the default suite (a Spark level costs a few jobs); the rest in the slow one."""


@pytest.mark.parametrize(
    ("name", "symmetry"),
    [
        pytest.param(name, symmetry, marks=() if (name, symmetry) in QUICK else pytest.mark.slow)
        for name in sorted(CONFIGS)
        for symmetry in (False, True)
    ],
)
def test_the_same_search_as_check(name: str, symmetry: bool, spark: Any, hash_seed: None) -> None:
    spec = CONFIGS[name]
    same_search(check(spec, symmetry=symmetry), check_spark(spec, spark, symmetry=symmetry))


@pytest.mark.slow
def test_the_published_kip320_model_holds_with_the_same_counts(spark: Any, hash_seed: None) -> None:
    spec = Replication(Params())
    same_search(check(spec), check_spark(spec, spark))


def test_cli_engine_spark_reports_the_same_figures(spark: Any, hash_seed: None) -> None:
    def figures(*extra: str) -> dict[str, object]:
        args = ["check", "replication", "--bug", "accept_stale_epoch", "--json", *extra]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, result.output
        payload = orjson.loads(result.output.strip().splitlines()[-1])
        return {k: payload[k] for k in ("distinct_states", "coverage", "depth", "trace_length")}

    assert figures("--engine", "spark") == figures("--workers", "1")


def test_cli_refuses_what_the_spark_engine_does_not_do() -> None:
    for extra in (["--simulate"], ["--max-states", "10"], ["--master", "local[1]"]):
        engine = [] if extra[0] == "--master" else ["--engine", "spark"]
        result = CliRunner().invoke(main, ["check", "replication", *engine, *extra])
        assert result.exit_code == 2, result.output
