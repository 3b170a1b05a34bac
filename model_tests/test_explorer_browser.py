"""The state explorer in a real headless browser: Playwright for Python driving the Debian
Chromium (``apt-get install chromium``; ``.ci/run`` installs it when it can). No browser
is downloaded: the tests launch the ``chromium`` found on PATH, and skip, saying so, when
there is none.

With ``KMODEL_EXPLORER_PICTURE=1`` the screenshot test also refreshes
``docs/explorer.png``, the picture of docs/explorer.md (not with ``--rewrite``: the picture
shows the server's port, so it would change on every rewrite of the scenario files).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from jepsen_py.explorer.server import ExplorerServer
from model_tests.explorer_fixtures import get, running_explorer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DOCS_PICTURE = Path(__file__).parent.parent / "docs" / "explorer.png"

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on PATH: apt-get install chromium (the browser tests use the "
    "Debian Chromium, not a downloaded one)",
)

TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'"
    )
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def reuse_epoch() -> Iterator[ExplorerServer]:
    """The replication spec with the bug that reuses a leader epoch (two leaders in one
    epoch: the invariant OneLeaderPerEpoch fails)."""
    with running_explorer("replication", ("reuse_epoch",)) as server:
        yield server


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT_MS)
    try:
        yield opened
    finally:
        context.close()


def trail(page: Any) -> list[str]:
    return [text.strip() for text in page.locator("#trail li").all_inner_texts()]


def failing(page: Any) -> list[str]:
    return page.locator('#violations li[data-holds="false"]').all_inner_texts()


def wait_for_depth(page: Any, depth: int) -> None:
    page.wait_for_function(
        "depth => document.querySelectorAll('#trail li').length === depth + 1", arg=depth
    )


def test_click_steps_then_go_back(page: Any, reuse_epoch: ExplorerServer) -> None:
    page.goto(reuse_epoch.url)
    wait_for_depth(page, 0)
    assert trail(page) == ["Init"]
    assert page.locator("[data-testid=lanes] .lane-name").count() == 2
    first = page.locator("[data-action-index]").first
    label = first.inner_text()
    first.click()
    wait_for_depth(page, 1)
    assert trail(page) == ["Init", label]
    assert page.evaluate("location.hash").endswith("path=0")
    second = page.locator("[data-action-index]").last
    second_label = second.inner_text()
    second.click()
    wait_for_depth(page, 2)
    assert trail(page) == ["Init", label, second_label]
    page.click("#back")
    wait_for_depth(page, 1)
    assert trail(page) == ["Init", label]
    page.go_back()  # the browser's own back: the path is in the URL
    wait_for_depth(page, 2)
    page.locator("#trail li a").first.click()
    wait_for_depth(page, 0)
    assert page.locator("#back").is_disabled()


def test_a_shared_url_replays_the_counterexample(page: Any, reuse_epoch: ExplorerServer) -> None:
    _, found = get(reuse_epoch, "/api/counterexample")
    path = ",".join(map(str, found["path"]))
    page.goto(f"{reuse_epoch.url}#init={found['init']}&path={path}")
    wait_for_depth(page, len(found["path"]))
    assert failing(page) == ["OneLeaderPerEpoch is violated"]
    assert page.locator("#share-url").input_value().endswith(f"path={path}")


def test_the_counterexample_button_loads_the_checkers_trace(
    page: Any, reuse_epoch: ExplorerServer
) -> None:
    page.goto(reuse_epoch.url)
    wait_for_depth(page, 0)
    assert failing(page) == []
    page.click("#counterexample")
    page.wait_for_selector('#violations li[data-holds="false"]')
    assert failing(page) == ["OneLeaderPerEpoch is violated"]
    assert "OneLeaderPerEpoch is violated after" in page.inner_text("#message")


def test_a_trace_file_loads(page: Any, reuse_epoch: ExplorerServer, tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    check = ["check", "replication", "--bug", "reuse_epoch", "--workers", "1"]
    done = CliRunner().invoke(main, [*check, "--trace-json", str(trace_file)])
    assert done.exit_code == 1, done.output
    page.goto(reuse_epoch.url)
    wait_for_depth(page, 0)
    page.set_input_files("#trace-file", str(trace_file))
    page.wait_for_selector('#violations li[data-holds="false"]')
    assert "trace.json: it violates OneLeaderPerEpoch" in page.inner_text("#message")


def screenshot_counterexample(page: Any, server: ExplorerServer, target: Path) -> None:
    """The explorer at the end of the model checker's counterexample, as a PNG."""
    page.goto(server.url)
    wait_for_depth(page, 0)
    page.click("#counterexample")
    page.wait_for_selector('#violations li[data-holds="false"]')
    page.screenshot(path=str(target), full_page=True)


def test_screenshot_of_a_counterexample_path(page: Any, tmp_path: Path) -> None:
    """KIP-101's first scenario: a follower truncates to its high watermark on becoming a
    follower again and drops a committed record (WeakIsr fails)."""
    from PIL import Image

    picture = tmp_path / "counterexample.png"
    with running_explorer("replication", truncation="high_watermark") as server:
        screenshot_counterexample(page, server, picture)
        assert failing(page) == ["WeakIsr is violated"]
        assert page.locator("[data-testid=lanes] .record").count() >= 1
    assert picture.stat().st_size > 20_000
    with Image.open(picture) as image:
        assert image.format == "PNG"
        width, height = image.size
        assert width >= 1280 and height >= 600
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
    assert colours is not None and len(colours) > 50, "the screenshot is nearly one colour"
    if os.environ.get("KMODEL_EXPLORER_PICTURE") == "1":
        # The docs' copy, in 256 colours: a fraction of the size.
        with Image.open(picture) as image:
            image.convert("RGB").quantize(colors=256).save(DOCS_PICTURE, optimize=True)
