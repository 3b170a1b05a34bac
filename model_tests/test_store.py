"""The store directory: a run's files round-trip, the history survives a killed writer, and
mistakes name the path and what to do."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jepsen_py import store
from jepsen_py.history.op import Op
from jepsen_py.history.validate import HistoryError, Rejections

WHEN = dt.datetime(2026, 11, 21, 22, 30, 0, tzinfo=dt.UTC)
REPO = Path(__file__).resolve().parent.parent


def ops(n: int) -> list[Op]:
    out = []
    for i in range(n):
        process = i // 2 % 3
        if i % 2 == 0:
            out.append(Op(i, i * 1000, process, "invoke", "send", "t-0", i))
        else:
            out.append(Op(i, i * 1000, process, "ok", "send", "t-0", {"offset": i, "value": i}))
    return out


def test_a_run_round_trips_config_history_and_results(tmp_path: Path) -> None:
    run = store.create_run(
        "kafka-acks-1", seed=42, config={"acks": 1, "keys": ["t-0"]}, root=tmp_path, now=WHEN
    )
    assert run.path == tmp_path / "kafka-acks-1" / "20261121T223000Z"
    with run.history_writer() as writer:
        for op in ops(10):
            writer.write(op)
    run.write_results({"valid": True, "anomalies": {}})
    loaded = store.load_run(run.path)
    assert loaded.test["seed"] == 42
    assert loaded.test["config"] == {"acks": 1, "keys": ["t-0"]}
    assert loaded.test["name"] == "kafka-acks-1"
    assert isinstance(loaded.test["version"], str) and loaded.test["version"]
    assert loaded.history == ops(10)
    assert loaded.results == {"valid": True, "anomalies": {}}
    assert len(loaded.rejected) == 0


def test_runs_in_one_second_get_distinct_directories_and_latest_follows(tmp_path: Path) -> None:
    runs = [store.create_run("t", seed=i, config={}, root=tmp_path, now=WHEN) for i in range(12)]
    names = [r.path.name for r in runs]
    assert names[:3] == ["20261121T223000Z", "20261121T223000Z-1", "20261121T223000Z-2"]
    assert len(set(names)) == 12
    assert (tmp_path / "t" / "latest").is_symlink()
    assert store.open_run(tmp_path / "t").path.resolve() == runs[-1].path.resolve()
    # Listed oldest first: -10 after -9 (numeric, not text, order).
    listed = store.list_runs(tmp_path, "t")
    assert [r.path.name for r in listed] == names
    later = store.create_run("t", seed=0, config={}, root=tmp_path, now=WHEN.replace(minute=31))
    assert store.list_runs(tmp_path)[-1] == later
    assert store.open_run(tmp_path / "t").test()["created"] == "20261121T223100Z"


def test_list_runs_spans_tests_and_ignores_stray_directories(tmp_path: Path) -> None:
    a = store.create_run("a", seed=1, config={}, root=tmp_path, now=WHEN)
    b = store.create_run("b", seed=2, config={}, root=tmp_path, now=WHEN)
    (tmp_path / "a" / "not-a-run").mkdir()
    assert store.list_runs(tmp_path) == [a, b]
    assert store.list_runs(tmp_path / "missing") == []


def test_open_run_without_latest_picks_the_newest(tmp_path: Path) -> None:
    store.create_run("t", seed=1, config={}, root=tmp_path, now=WHEN)
    newest = store.create_run("t", seed=2, config={}, root=tmp_path, now=WHEN.replace(hour=23))
    (tmp_path / "t" / "latest").unlink()
    assert store.open_run(tmp_path / "t") == newest


def test_the_version_is_the_git_description_here() -> None:
    described = subprocess.run(
        ["git", "describe", "--always", "--dirty", "--tags"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    expected = described.stdout.strip() if described.returncode == 0 else None
    version = store.code_version()
    if expected:
        assert version == expected
    else:
        assert version  # the package version, or "unknown"


def test_a_torn_last_line_is_rejected_and_everything_before_it_is_read(tmp_path: Path) -> None:
    run = store.create_run("t", seed=1, config={}, root=tmp_path, now=WHEN)
    with run.history_writer() as writer:
        for op in ops(20):
            writer.write(op)
    data = run.history_path.read_bytes()
    run.history_path.write_bytes(data[:-9])  # a crash in the middle of the last line
    loaded = store.load_run(run.path)
    assert loaded.history == ops(19)
    assert [r.line for r in loaded.rejected] == [20]
    assert "not valid JSON" in loaded.rejected.items[0].reason
    # A strict reader names the file and the line.
    with pytest.raises(HistoryError, match=r"history\.jsonl:20: not valid JSON"):
        list(run.read_history())
    # With a sink, reading goes on.
    sink = Rejections(str(run.history_path))
    assert len(list(run.read_history(sink))) == 19 and len(sink) == 1


_WRITE_THEN_DIE = textwrap.dedent(
    """
    import os, signal, sys
    from jepsen_py.history.op import Op
    from jepsen_py.history.jsonl import JsonlWriter
    path, flush, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    writer = JsonlWriter(
        path, flush_every=None if flush == "none" else int(flush), fsync=True
    )
    for i in range(n):
        writer.write(Op(i, i, 0, "invoke" if i % 2 == 0 else "ok", "send", "t-0", i))
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _write_and_kill(path: Path, flush: str, n: int) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _WRITE_THEN_DIE, str(path), flush, str(n)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    return len(path.read_bytes().splitlines())


def test_a_killed_writer_leaves_every_line_it_wrote(tmp_path: Path) -> None:
    assert _write_and_kill(tmp_path / "flushed.jsonl", "1", 200) == 200
    assert _write_and_kill(tmp_path / "few.jsonl", "1", 10) == 10
    # With batches, at most the unflushed tail of a batch is lost.
    assert _write_and_kill(tmp_path / "batched.jsonl", "16", 200) == 192
    # The control: a buffered writer killed before close loses what its buffer held (10
    # lines fit in it), so the test above does tell flushing from not flushing.
    assert _write_and_kill(tmp_path / "buffered.jsonl", "none", 10) == 0


def test_mistakes_name_the_path_and_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(store.StoreError, match=r"test name 'a/b'.*letters, digits"):
        store.create_run("a/b", seed=1, config={}, root=tmp_path)
    with pytest.raises(store.StoreError, match="latest"):
        store.create_run("latest", seed=1, config={}, root=tmp_path)
    with pytest.raises(store.StoreError, match=r"config\.json|test\.json.*cannot be written"):
        store.create_run("t", seed=1, config={"bad": object()}, root=tmp_path)
    with pytest.raises(store.StoreError, match="seed"):
        store.create_run("t", seed="7", config={}, root=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(store.StoreError, match=r"no such directory"):
        store.open_run(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(store.StoreError, match=r"empty: neither a run directory"):
        store.open_run(tmp_path / "empty")
    run = store.create_run("t", seed=1, config={}, root=tmp_path, now=WHEN)
    with pytest.raises(store.StoreError, match=r"no history: the run wrote none"):
        list(run.read_history())
    assert store.load_run(run.path).history == []
    assert run.results() is None
    run.results_path.write_text("{not json")
    with pytest.raises(store.StoreError, match=r"results\.json: not valid JSON.*re-run"):
        run.results()


def test_results_are_written_atomically(tmp_path: Path) -> None:
    run = store.create_run("t", seed=1, config={}, root=tmp_path, now=WHEN)
    run.write_results({"valid": False})
    run.write_results({"valid": True})
    assert run.results() == {"valid": True}
    assert sorted(p.name for p in run.path.iterdir()) == ["results.json", "test.json"]
