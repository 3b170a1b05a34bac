"""The guides (``docs/guides/``) and the README's tour show real commands (issue 13).

Every ``kmodel ...`` line in a guide's code blocks must parse with today's flags: click's own
parser builds the command's context in-process, so a renamed flag, a removed choice or a
value out of range fails here. A ``console`` block is a captured session: each ``$ kmodel
...`` line is run (in-process, in a scratch directory per guide, in the guide's order, after
writing the blocks titled with a file name there), and every output line the guide shows
must appear in what the command prints, in order (a ``...`` line stands for lines left
out; durations, rates and store timestamps are masked, since they vary from run to run).
The guides' Python example (a whole spec) is run too. Each console command takes under
two seconds.
"""

from __future__ import annotations

import re
import runpy
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from jepsen_py.cli import main

ROOT = Path(__file__).parent.parent
GUIDES = ROOT / "docs" / "guides"
REQUIRED = (
    "model-checking.md",
    "fault-injection.md",
    "replay-and-shrink.md",
    "verify-history.md",
    "spark-cluster.md",
    "extending.md",
)

README = ROOT / "README.md"
PAGES = (*(GUIDES / name for name in REQUIRED), README)
"""Every page whose commands are checked."""

FENCE = re.compile(r"^```(?P<lang>[\w-]*)(?P<info>.*)$")
TITLE = re.compile(r'title="(?P<name>[^"]+)"')
VARYING = (
    (re.compile(r"\b\d{8}T\d{6}Z\b"), "<timestamp>"),
    (re.compile(r"[\d,]+ distinct states/s"), "<rate>"),
    (re.compile(r"\b\d[\d,]*(?:\.\d+)? s\b"), "<seconds>"),
)


class Block:
    """A fenced code block of a guide: its language, title (a file name) and lines."""

    def __init__(self, lang: str, title: str | None, lines: list[str], line: int) -> None:
        self.lang, self.title, self.lines, self.line = lang, title, lines, line


def blocks(text: str) -> Iterator[Block]:
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        title = TITLE.search(opening["info"])
        body: list[str] = []
        i += 1
        while not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        yield Block(opening["lang"], title["name"] if title else None, body, i - len(body))
        i += 1


def joined(lines: list[str]) -> Iterator[tuple[int, str]]:
    """The block's lines with ``\\`` continuations joined, with their index."""
    i = 0
    while i < len(lines):
        start, line = i, lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i].strip()
        yield start, line
        i += 1


def kmodel_argv(line: str) -> list[str] | None:
    """The arguments after ``kmodel`` of a command line, or None for another line."""
    line = line.removeprefix("$ ")
    if not re.match(r"(\S*bin/)?kmodel(\s|$)", line):
        return None
    # A shell comment starts at a word: ``#`` inside one (``env.tar.gz#env``) is not one.
    return shlex.split(re.sub(r"(^|\s)#.*$", "", line))[1:]


def commands(page: Path) -> list[tuple[int, list[str]]]:
    """Every ``kmodel`` command of a guide's code blocks: (line in the page, arguments)."""
    found = []
    for block in blocks(page.read_text()):
        if block.title is not None:
            continue
        for index, line in joined(block.lines):
            if block.lang == "console" and not line.startswith("$ "):
                continue
            argv = kmodel_argv(line)
            if argv is not None:
                found.append((block.line + index + 1, argv))
    return found


def parse(argv: list[str]) -> None:
    """Build the command's click context, as ``kmodel`` would before running it: raises
    ``click.UsageError`` (or ``BadParameter``) for an unknown command, flag or value."""
    parent = main.make_context("kmodel", list(argv), resilient_parsing=True)
    name = argv[0]
    command = main.get_command(parent, name)
    if command is None:
        raise click.UsageError(f"no such command {name!r}")
    with command.make_context(name, list(argv[1:]), parent=parent):
        pass


def masked(line: str) -> str:
    for pattern, placeholder in VARYING:
        line = pattern.sub(placeholder, line)
    return " ".join(line.split())


def assert_shown(shown: list[str], printed: str, where: str) -> None:
    """Every line ``shown`` appears in ``printed``, in order (``...`` skips)."""
    actual = [masked(line) for line in printed.splitlines()]
    at = 0
    for line in shown:
        if line.strip() in ("", "..."):
            continue
        want = masked(line)
        try:
            at = actual.index(want, at) + 1
        except ValueError:
            pytest.fail(
                f"{where}: the guide shows a line the command did not print:\n"
                f"  {line}\nit printed:\n{printed}"
            )


def test_the_guides_are_in_the_nav() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.Loader)
    sections = {name: pages for entry in config["nav"] for name, pages in entry.items()}
    listed = {next(iter(entry.values())) for entry in sections["Guides"]}
    assert listed == {f"guides/{name}" for name in REQUIRED}
    assert sorted(p.name for p in GUIDES.glob("*.md")) == sorted(REQUIRED)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_kmodel_command_of_a_page_parses(page: Path) -> None:
    found = commands(page)
    assert found, f"{page.name} shows no kmodel command"
    for line, argv in found:
        try:
            parse(argv)
        except click.ClickException as error:
            pytest.fail(f"{page.name}:{line}: kmodel {shlex.join(argv)}: {error.format_message()}")


def test_a_renamed_flag_or_value_fails_the_parse() -> None:
    """The check can fail: what a stale guide would show."""
    parse(["check", "replication", "--truncation", "kip320"])
    for stale in (
        ["check", "replication", "--truncate", "kip320"],
        ["check", "replication", "--truncation", "kip999"],
        ["test", "--nemesis-all"],
        ["verify", "--engine", "flink", "x.jsonl"],
        ["checks", "replication"],
    ):
        with pytest.raises(click.ClickException):
            parse(stale)


def test_masking_keeps_what_is_deterministic() -> None:
    assert masked("  1,294 distinct states, depth 9, 0.18 s (7,175 distinct states/s)") == (
        "1,294 distinct states, depth 9, <seconds> (<rate>)"
    )
    assert masked("store: store/kafka/20261126T090958Z") == "store: store/kafka/<timestamp>"
    with pytest.raises(pytest.fail.Exception):
        assert_shown(["verdict: VALID"], "verdict: INVALID\n", "here")
    with pytest.raises(pytest.fail.Exception):
        assert_shown(["b", "a"], "a\nb\n", "order")
    assert_shown(["a", "...", "c"], "a\nb\nc\n", "skip")


@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if any(b.lang == "console" for b in blocks(p.read_text()))],
    ids=lambda p: p.name,
)
def test_the_console_sessions_of_a_page_print_what_it_shows(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run in a scratch directory, where ``model_tests/`` (the corpora) is linked."""
    (tmp_path / "model_tests").symlink_to(ROOT / "model_tests")
    monkeypatch.chdir(tmp_path)
    guide = page.name
    ran = 0
    for block in blocks(page.read_text()):
        if block.title is not None:
            (tmp_path / block.title).write_text("\n".join(block.lines) + "\n")
            continue
        if block.lang != "console":
            continue
        session = list(joined(block.lines))
        starts = [k for k, (_, line) in enumerate(session) if line.startswith("$ ")]
        for n, k in enumerate(starts):
            argv = kmodel_argv(session[k][1])
            assert argv is not None, f"{guide}:{block.line + k}: not a kmodel command"
            end = starts[n + 1] if n + 1 < len(starts) else len(session)
            shown = [line for _, line in session[k + 1 : end]]
            result = CliRunner().invoke(main, argv)
            if result.exception and not isinstance(result.exception, SystemExit):
                raise result.exception
            assert_shown(shown, result.output, f"{guide}:{block.line + k}")
            ran += 1
    assert ran


def test_the_extending_guides_spec_is_checked_as_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The guide's whole spec is written out and its check script run: the correct spec
    holds, the bug breaks the invariant in two steps, and the table shown is printed."""
    page = (GUIDES / "extending.md").read_text()
    files = {b.title: b for b in blocks(page) if b.title is not None}
    assert set(files) == {"toy_hw.py", "check_toy_hw.py"}
    for name, block in files.items():
        (tmp_path / name).write_text("\n".join(block.lines) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toy_hw", raising=False)
    runpy.run_path(str(tmp_path / "check_toy_hw.py"), run_name="__main__")
    printed = capsys.readouterr().out
    shown = [b for b in blocks(page) if b.lang == "text"]
    assert shown, "the guide shows the table its script prints"
    assert_shown(shown[0].lines, printed, "extending.md")
