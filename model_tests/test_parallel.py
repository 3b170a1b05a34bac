"""``kmodel check --workers N``: the search on several processes gives the sequential
search's results exactly: counts, coverage, depth, counterexamples, witnesses, and the
counts at the moment a violation stops it."""

from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from model_tests.test_fingerprints import CONFIGS, same_search
from spec import parallel
from spec.explore import check
from spec.parallel import check_parallel
from spec.replication import Params, Replication


@pytest.fixture
def fork_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small models: dispatch every level to the worker processes, in small chunks."""
    monkeypatch.setattr(parallel, "PARALLEL_FROM", 1)
    monkeypatch.setattr(parallel, "CHUNK", 7)


@pytest.mark.parametrize("symmetry", [False, True], ids=["plain", "symmetry"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_same_search_as_check(name: str, symmetry: bool, fork_early: None) -> None:
    spec = CONFIGS[name]
    result = check_parallel(spec, workers=2, symmetry=symmetry)
    same_search(check(spec, symmetry=symmetry), result)


@pytest.mark.parametrize("workers", [1, 3])
def test_any_number_of_workers(workers: int, fork_early: None) -> None:
    spec = CONFIGS["kip279"]
    same_search(check(spec), check_parallel(spec, workers=workers))


def test_budgets_stop_it_as_they_stop_check(fork_early: None) -> None:
    spec = CONFIGS["kip320"]
    same_search(check(spec, max_states=1_000), check_parallel(spec, workers=2, max_states=1_000))
    same_search(check(spec, max_depth=6), check_parallel(spec, workers=2, max_depth=6))


def test_symmetry_without_the_unreduced_count(fork_early: None) -> None:
    spec = CONFIGS["kip320"]
    fast = check_parallel(spec, workers=2, symmetry=True, count_unreduced=False)
    assert fast.stats.unreduced_states is None and fast.stats.distinct_states == 2_987


def test_zero_workers_is_refused() -> None:
    with pytest.raises(ValueError, match="workers must be at least 1"):
        check_parallel(CONFIGS["kip320"], workers=0)


def test_cli_workers_give_the_same_figures() -> None:
    def figures(*extra: str) -> dict[str, object]:
        result = CliRunner().invoke(
            main, ["check", "replication", "--truncation", "kip101", "--json", *extra]
        )
        assert result.exit_code == 1, result.output
        payload = orjson.loads(result.output.strip().splitlines()[-1])
        return {k: payload[k] for k in ("distinct_states", "coverage", "depth", "trace_length")}

    assert figures("--workers", "1") == figures("--workers", "2")
    assert CliRunner().invoke(main, ["check", "replication", "--workers", "0"]).exit_code == 2


@pytest.mark.slow
def test_the_published_three_replica_model_on_two_workers() -> None:
    result = check_parallel(Replication(Params(replicas=3)), workers=2)
    assert result.violation is None and result.stats.distinct_states == 737_794
