"""The local engine's spilled check (`checker.spill`): a file checked bucket by bucket has
the results of the same file checked in memory whole, in the same order; the spill files
are removed (the peak memory: benchmarks/stream_memory.py)."""

from __future__ import annotations

import multiprocessing
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from jepsen_py.checker import engine, spill
from jepsen_py.checker.histgen import INJECTORS, LogWorkload, generate
from jepsen_py.checker.records import InputResult
from jepsen_py.checker.result import Verdict
from jepsen_py.history import Op, write_jsonl
from model_tests.shared_corpora import PORCUPINE


def _summary(result: InputResult) -> dict[str, Any]:
    return {
        "verdict": result.verdict,
        "model": result.model,
        "ops": result.ops,
        "rejected": [(r.line, r.reason, r.key, r.run) for r in result.rejected],
        "keys": [
            (k.run, k.key, k.ops, k.verdict, k.explanation, k.violations, k.counts, k.anomalies)
            for k in result.keys
        ],
        "anomalies": result.anomalies,
        "error": result.error,
    }


def _runs_with_anomalies(tmp_path: Path) -> Path:
    """Two runs of a few keys, anomalies injected into the first, a subscribe op in the
    second and a malformed line: what the bucket merge must get right."""
    rng = random.Random(7)
    ops: list[Op] = []
    for run in ("r0", "r1"):
        part = generate(rng, LogWorkload(ops=1500, keys=6, producers=4, consumers=3))
        if run == "r0":
            for name in ("lost-write", "duplicate", "poll-skip"):
                part = INJECTORS[name](part, rng) or part
        ops.extend(
            Op(len(ops) + i, op.time, op.process, op.type, op.f, op.key, op.value, run)
            for i, op in enumerate(part)
        )
    path = tmp_path / "history.jsonl"
    write_jsonl(path, ops)
    lines = path.read_bytes().splitlines(keepends=True)
    reassign = {"index": len(ops), "time": 0, "process": 999, "type": "invoke", "f": "subscribe"}
    reassign.update(run="r1", value=["t-0", "t-1"])
    done = {**reassign, "index": len(ops) + 1, "type": "ok"}
    middle = len(lines) // 2
    lines[middle:middle] = [orjson.dumps(reassign) + b"\n", orjson.dumps(done) + b"\n"]
    lines.insert(10, b"{not json\n")
    path.write_bytes(b"".join(lines))
    return path


def test_a_spilled_log_check_has_the_in_memory_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _runs_with_anomalies(tmp_path)
    whole = engine.verify_path(path, spill_above=None)
    monkeypatch.setattr(spill, "BUCKET_BYTES", 40_000)  # several buckets
    assert spill.buckets_for(path.stat().st_size) > 3
    spilled = engine.verify_path(path, spill_above=0)  # the buckets in worker processes
    alone = engine.verify_path(path, spill_above=0, parallel=False)  # in this process
    assert whole.verdict is Verdict.ILLEGAL
    assert whole.anomalies and whole.rejected  # the comparison below is not of empty results
    assert _summary(spilled) == _summary(whole)
    assert _summary(alone) == _summary(whole)


def test_a_spilled_kv_check_has_the_in_memory_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not (PORCUPINE / "kv").is_dir():
        pytest.skip("Porcupine's corpus is not here")
    monkeypatch.setattr(spill, "BUCKET_BYTES", 10_000)
    ok = PORCUPINE / "kv" / "c10-ok.txt"
    bad = PORCUPINE / "kv" / "c10-bad.txt"
    flags: dict[str, Any] = {"fmt": "porcupine-kv", "model": "kv"}
    assert _summary(engine.verify_path(ok, spill_above=0, **flags)) == _summary(
        engine.verify_path(ok, spill_above=None, **flags)
    )
    # a WGL check stops at the first illegal partition of a bucket, not of the file: the
    # verdict is the same, not necessarily which other keys were checked
    assert engine.verify_path(bad, spill_above=0, **flags).verdict is Verdict.ILLEGAL


def test_the_spill_files_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _runs_with_anomalies(tmp_path)
    where = tmp_path / "spill"
    where.mkdir()
    monkeypatch.setenv("KMODEL_SPILL_DIR", str(where))
    engine.verify_path(path, spill_above=0)
    assert not list(where.iterdir())


def test_a_bucket_is_chosen_by_a_stable_hash() -> None:
    # the same (run, key) lands in the same bucket in every process (no PYTHONHASHSEED)
    assert spill.bucket_of("r0", "t-1", 97) == spill.bucket_of("r0", "t-1", 97)
    assert {spill.bucket_of(None, f"k{i}", 8) for i in range(100)} == set(range(8))
    assert spill.bucket_of(None, "k1", 1_000_003) == 464_763  # crc32(b'[null,"k1"]') % 1,000,003


def test_the_buckets_hold_the_groups_of_the_whole_file(tmp_path: Path) -> None:
    # every (run, key) group, the subscribe op copied into each group of its run, in
    # history order: what engine.load groups from the whole file
    path = _runs_with_anomalies(tmp_path)
    whole = engine.load(path).groups
    assert any(op.f == "subscribe" for group in whole.values() for op in group)
    from jepsen_py.history import FORMATS, Rejections, validate

    rejections = Rejections(str(path))
    with spill.Spilled.create(5, str(tmp_path)) as spilled:
        for op in validate(FORMATS["jsonl"].read(path, rejections), rejections):
            if op.is_client:
                spilled.add(op)
        spilled.finish()
        parts: dict[Any, list[Op]] = {}
        for i in range(spilled.buckets):
            groups = engine.group_ops(list(spilled.bucket_ops(i)))
            assert not set(groups) & set(parts), "a group in two buckets"
            parts.update(groups)
    assert parts == whole


def test_files_checked_side_by_side_have_the_results_of_one_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`engine.verify_paths` in forked workers: the same results, in the inputs' order,
    whichever worker finishes first (a small file after a bigger one)."""
    rng = random.Random(11)
    paths = []
    for i, size in enumerate((2500, 300, 1200)):
        part = generate(rng, LogWorkload(ops=size, keys=4, producers=3, consumers=2))
        if i == 0:
            part = INJECTORS["lost-write"](part, rng) or part
        path = tmp_path / f"run-{i}.jsonl"
        write_jsonl(path, part)
        paths.append(str(path))
    one_at_a_time = [_summary(engine.verify_path(p)) for p in paths]
    monkeypatch.setattr(engine, "PARALLEL_FILES_ABOVE_BYTES", 0)
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork start method on this platform: files are checked one at a time")
    side_by_side = list(engine.verify_paths(paths))
    assert [r.path for r in side_by_side] == paths
    assert [_summary(r) for r in side_by_side] == one_at_a_time
    assert one_at_a_time[0]["verdict"] is Verdict.ILLEGAL
