"""Shared test options.

``--rewrite`` (or ``KMODEL_REWRITE=1``) regenerates the expectations of scenario files
instead of comparing against them, etcd-raft datadriven style: the diff is what gets
reviewed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--rewrite",
        action="store_true",
        default=False,
        help="rewrite scenario files' expectations instead of checking them",
    )


@pytest.fixture
def rewrite(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--rewrite")) or os.environ.get("KMODEL_REWRITE") == "1"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local SparkSession (local[2]) for every test that needs Spark: start-up is most
    of their cost. ``verify_spark`` joins the active session instead of starting one."""
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java 17+ (scripts/check-java says how to install it)")
    from jepsen_py.checker.spark.session import SessionOptions, start

    session = start(SessionOptions(master="local[2]", progress=False, shuffle_partitions=2))
    yield session
    session.stop()
