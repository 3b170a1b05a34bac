"""The docs site (``mkdocs.yml``) builds in strict mode: a broken link, a missing anchor or a
page of ``docs/`` left out of the nav fails the suite (issue 13). ``make docs`` serves it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the project at ``root`` into ``site``."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=120,
    )


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    done = build(ROOT, tmp_path / "site")
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    pages = sorted(p.relative_to(ROOT / "docs") for p in (ROOT / "docs").rglob("*.md"))
    for page in pages:
        folder = page.parent if page.stem == "index" else page.with_suffix("")
        html = tmp_path / "site" / folder / "index.html"
        assert html.is_file(), f"{page} has no page on the site"


def test_a_broken_link_or_a_page_missing_from_the_nav_fails_the_build(tmp_path: Path) -> None:
    """The strict gate can fail: a copy of the docs with one page outside the nav, linking to
    a page and an anchor that do not exist."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / "docs" / "orphan.md").write_text(
        "# Orphan\n\nSee [nowhere](nowhere.md) and [the story](replication.md#no-such-anchor).\n"
    )
    done = build(tmp_path, tmp_path / "site")
    assert done.returncode != 0
    for expected in ("orphan.md", "nowhere.md", "no-such-anchor"):
        assert expected in done.stderr, f"{expected} not reported:\n{done.stderr}"
