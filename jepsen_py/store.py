"""The store: one directory per test run, what the runner writes and the tools read back.

Layout (Jepsen's ``store/``)::

    DIR/<test-name>/<timestamp>/      e.g. store/kafka-acks-1/20261121T223000Z/
        test.json       name, seed, config, code version, creation time (written first)
        history.jsonl   the history, appended as the run goes, flushed line by line
        results.json    the checker's results (written last, atomically)
        cluster.jsonl   what the simulated cluster did: elections, ISR changes, session
                        expiries, crashes, recoveries, truncations (``impl.timeline``)
        timeline.html, latency.png, rate.png   reports, when rendered
    DIR/<test-name>/latest -> <timestamp>   (a relative symlink to the newest run)

``DIR`` defaults to ``./store``. The timestamp is the wall clock in UTC: it only names the
directory (the run itself is on logical time); two runs created in the same second get
``-1``, ``-2``, ... suffixes, taken with ``mkdir`` so concurrent runs never share one.

Kill safety: the history is written through a `HistoryLines` (the runner's) or a
`JsonlWriter` that flushes every line (or every ``flush_every`` lines) to the operating
system, so a runner killed mid-run (SIGKILL, an OOM kill) leaves every flushed line on
disk. A line cut in half by a crash mid-write is the one thing left to tolerate:
`Run.read_history` rejects the torn last line (with its
line number) and yields everything before it.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import attrs
import orjson

from jepsen_py.history.jsonl import JsonlWriter, read_jsonl
from jepsen_py.history.op import Op
from jepsen_py.history.validate import HistoryError, Rejections

DEFAULT_ROOT = Path("store")
TEST_FILE = "test.json"
HISTORY_FILE = "history.jsonl"
RESULTS_FILE = "results.json"
CLUSTER_FILE = "cluster.jsonl"
TIMELINE_FILE = "timeline.html"
LATEST = "latest"

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_STAMP = re.compile(r"(\d{8}T\d{6}Z)(?:-(\d+))?")


class StoreError(ValueError):
    """A store directory that cannot be created or read; the message names the path and
    says what to do."""


def code_version() -> str:
    """``git describe --always --dirty --tags`` of the checkout this package runs from,
    else the installed package version, else ``"unknown"``."""
    here = Path(__file__).resolve().parent.parent
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if described.returncode == 0 and described.stdout.strip():
            return described.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("kafka-model")
    except PackageNotFoundError:
        return "unknown"


def timestamp(now: _dt.datetime | None = None) -> str:
    """A run directory's name: UTC, to the second, e.g. ``20261121T223000Z``."""
    moment = now if now is not None else _dt.datetime.now(_dt.UTC)
    if moment.tzinfo is None:
        raise StoreError("timestamp: pass an aware datetime (e.g. with tzinfo=timezone.utc)")
    return moment.astimezone(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def _dumps(payload: Any, what: Path) -> bytes:
    try:
        return orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    except TypeError as exc:
        raise StoreError(
            f"{what}: cannot be written as JSON ({exc}); pass plain dicts, lists, strings, "
            "numbers, booleans and None"
        ) from exc


def _write_atomically(path: Path, data: bytes) -> None:
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)


def _load_json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StoreError(f"{path}: cannot read: {exc.strerror}") from exc
    except orjson.JSONDecodeError as exc:
        raise StoreError(
            f"{path}: not valid JSON ({exc.args[0]}); the run that wrote it may have been "
            "interrupted: re-run the test or delete the directory"
        ) from exc


class HistoryLines:
    """``history.jsonl`` written one serialized line at a time, each handed to the
    operating system as it is written (kill safety, as `JsonlWriter` with
    ``flush_every=1``), the file forced to disk on ``close``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[bytes] = open(path, "wb")  # noqa: SIM115 - closed in close()

    def write(self, line: bytes) -> None:
        """Append one line (the op's JSON object and its newline)."""
        self._handle.write(line)
        self._handle.flush()

    def close(self) -> None:
        if self._handle.closed:
            return
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()

    def __enter__(self) -> HistoryLines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@attrs.frozen
class Run:
    """One run's directory in the store."""

    path: Path

    @property
    def test_name(self) -> str:
        return self.path.parent.name

    @property
    def stamp(self) -> str:
        return self.path.name

    @property
    def test_path(self) -> Path:
        return self.path / TEST_FILE

    @property
    def history_path(self) -> Path:
        return self.path / HISTORY_FILE

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS_FILE

    @property
    def timeline_path(self) -> Path:
        return self.path / TIMELINE_FILE

    def test(self) -> dict[str, Any]:
        """The contents of ``test.json``: name, seed, config, version, created."""
        try:
            loaded = _load_json(self.test_path)
        except FileNotFoundError as exc:
            raise StoreError(
                f"{self.path}: no {TEST_FILE}: not a run directory written by the store "
                "(expected DIR/<test-name>/<timestamp>/)"
            ) from exc
        if not isinstance(loaded, dict):
            raise StoreError(f"{self.test_path}: expected a JSON object, got {loaded!r:.60}")
        return loaded

    def history_writer(self, *, flush_every: int | None = 1) -> JsonlWriter:
        """A writer for ``history.jsonl`` (truncates it): write each op as it happens."""
        if flush_every is not None and flush_every < 1:
            raise StoreError(f"flush_every={flush_every}: flush at least every line (>= 1)")
        return JsonlWriter(self.history_path, flush_every=flush_every, fsync=True)

    def history_lines(self) -> HistoryLines:
        """A writer of ``history.jsonl`` lines already serialized (truncates it): for the
        runner, which serializes each op once, for its hash and for the file."""
        return HistoryLines(self.history_path)

    def read_history(self, rejections: Rejections | None = None) -> Iterator[Op]:
        """Stream the history. With ``rejections``, malformed lines (a torn last line after
        a crash) are collected there and skipped; without, the first one raises
        `HistoryError` naming the file and line."""
        if not self.history_path.exists():
            raise StoreError(f"{self.history_path}: no history: the run wrote none (did it start?)")
        return read_jsonl(self.history_path, rejections)

    @property
    def cluster_path(self) -> Path:
        return self.path / CLUSTER_FILE

    def write_cluster_events(self, events: Iterable[Mapping[str, Any]]) -> Path:
        """Write ``cluster.jsonl``, one event a line, atomically."""
        data = b"".join(orjson.dumps(dict(e)) + b"\n" for e in events)
        _write_atomically(self.cluster_path, data)
        return self.cluster_path

    def cluster_events(self) -> list[dict[str, Any]]:
        """The lines of ``cluster.jsonl`` ([] for a run stored without it)."""
        try:
            raw = self.cluster_path.read_bytes()
        except FileNotFoundError:
            return []
        events = []
        for number, line in enumerate(raw.splitlines(), 1):
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise StoreError(f"{self.cluster_path}:{number}: not JSON: {exc}") from None
            if not isinstance(event, dict):
                raise StoreError(f"{self.cluster_path}:{number}: expected a JSON object")
            events.append(event)
        return events

    def write_results(self, results: Mapping[str, Any]) -> Path:
        """Write ``results.json`` atomically (a reader never sees half of it)."""
        _write_atomically(self.results_path, _dumps(dict(results), self.results_path))
        return self.results_path

    def results(self) -> dict[str, Any] | None:
        """The contents of ``results.json``, or None when the run has not finished."""
        try:
            loaded = _load_json(self.results_path)
        except FileNotFoundError:
            return None
        if not isinstance(loaded, dict):
            raise StoreError(f"{self.results_path}: expected a JSON object")
        return loaded


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name == LATEST:
        raise StoreError(
            f"test name {name!r}: use letters, digits, '.', '_' and '-' (not starting with "
            f"'.' or '-', at most 128 characters, not {LATEST!r}); it names a directory"
        )


def create_run(
    name: str,
    *,
    seed: int,
    config: Mapping[str, Any],
    root: str | os.PathLike[str] = DEFAULT_ROOT,
    now: _dt.datetime | None = None,
    version: str | None = None,
) -> Run:
    """Make ``root/<name>/<timestamp>/`` with its ``test.json`` and point ``latest`` at it.
    ``config`` must be JSON-shaped; ``version`` defaults to `code_version`."""
    _check_name(name)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise StoreError(f"seed {seed!r} must be an int (the run's one seed)")
    test_dir = Path(root) / name
    try:
        test_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"{test_dir}: cannot create the store directory: {exc.strerror}; pass a writable "
            "store root"
        ) from exc
    stamp = timestamp(now)
    path = test_dir / stamp
    for suffix in range(1, 100_000):
        try:
            path.mkdir()
            break
        except FileExistsError:
            path = test_dir / f"{stamp}-{suffix}"
        except OSError as exc:
            raise StoreError(f"{path}: cannot create the run directory: {exc.strerror}") from exc
    else:
        raise StoreError(f"{test_dir}: 100000 runs in one second? clean the directory up")
    run = Run(path)
    test = {
        "name": name,
        "seed": seed,
        "config": dict(config),
        "version": version if version is not None else code_version(),
        "created": path.name,
    }
    _write_atomically(run.test_path, _dumps(test, run.test_path))
    _point_latest(test_dir, path.name)
    return run


def _point_latest(test_dir: Path, target: str) -> None:
    link = test_dir / LATEST
    temporary = test_dir / f".{LATEST}.{os.getpid()}"
    try:
        if temporary.is_symlink():
            temporary.unlink()
        os.symlink(target, temporary)
        os.replace(temporary, link)
    except OSError:
        # No symlinks here (some Windows setups): `open_run(test_dir)` picks the newest.
        temporary.unlink(missing_ok=True)


def _order(run: Run) -> tuple[str, str, int]:
    match = _STAMP.fullmatch(run.stamp)
    if match is None:
        return (run.test_name, run.stamp, 0)
    return (run.test_name, match.group(1), int(match.group(2) or 0))


def open_run(path: str | os.PathLike[str]) -> Run:
    """The run at ``path``: a run directory, or a test directory (its ``latest`` run)."""
    p = Path(path)
    if (p / TEST_FILE).is_file():
        return Run(p)
    if (p / LATEST).exists():
        return Run((p / LATEST).resolve())
    if p.is_dir():
        runs = list(_runs_of(p))
        if runs:
            return max(runs, key=_order)
        raise StoreError(
            f"{p}: neither a run directory (no {TEST_FILE}) nor a test directory with runs; "
            "pass DIR/<test-name>/<timestamp> or DIR/<test-name>"
        )
    raise StoreError(f"{p}: no such directory; list the runs with `kmodel` or ls store/")


def _runs_of(test_dir: Path) -> Iterator[Run]:
    for child in sorted(test_dir.iterdir()):
        if child.name == LATEST or child.is_symlink() or not child.is_dir():
            continue
        if (child / TEST_FILE).is_file():
            yield Run(child)


def list_runs(root: str | os.PathLike[str] = DEFAULT_ROOT, test: str | None = None) -> list[Run]:
    """Every run under ``root`` (of test ``test`` only, when given), oldest first per test,
    tests by name. A missing root has no runs."""
    base = Path(root)
    if not base.is_dir():
        return []
    if test is not None:
        _check_name(test)
        tests = [base / test] if (base / test).is_dir() else []
    else:
        tests = sorted(d for d in base.iterdir() if d.is_dir() and not d.is_symlink())
    runs = [run for t in tests for run in _runs_of(t)]
    return sorted(runs, key=_order)


@attrs.frozen
class LoadedRun:
    """A run read back: its ``test.json``, its results (None if unfinished), its history
    ops, and the history lines rejected (a torn last line after a crash)."""

    run: Run
    test: dict[str, Any]
    results: dict[str, Any] | None
    history: list[Op]
    rejected: Rejections


def load_run(path: str | os.PathLike[str]) -> LoadedRun:
    """Read a whole run (see `open_run` for ``path``); the history goes into memory, so
    stream `Run.read_history` instead for a huge one."""
    run = open_run(path)
    test = run.test()
    rejected = Rejections(str(run.history_path))
    try:
        history = list(run.read_history(rejected)) if run.history_path.exists() else []
    except HistoryError as exc:
        raise StoreError(str(exc)) from exc
    return LoadedRun(run, test, run.results(), history, rejected)


__all__ = [
    "DEFAULT_ROOT",
    "HISTORY_FILE",
    "LATEST",
    "RESULTS_FILE",
    "TEST_FILE",
    "TIMELINE_FILE",
    "LoadedRun",
    "Run",
    "StoreError",
    "code_version",
    "create_run",
    "list_runs",
    "load_run",
    "open_run",
    "timestamp",
]
