"""Shared test options.

``--rewrite`` (or ``KMODEL_REWRITE=1``) regenerates the expectations of scenario files
instead of comparing against them, etcd-raft datadriven style: the diff is what gets
reviewed.
"""

from __future__ import annotations

import os

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
