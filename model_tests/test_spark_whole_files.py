"""Spark's whole-file path (`jepsen_py.checker.spark.wholefile`) against the per-key path
and the local engine.

The whole-file path claims the per-key path's results row for row: the verdict table
(every column but ``time`` and ``engine``), each input's result (verdicts, explanations,
counterexamples, anomalies and their witnesses, rejected lines with their numbers), and
the rejected lines the job brings back. One directory holds what can go wrong: several
runs with injected anomalies, consumers that assign and subscribe, malformed and
undecodable lines, a process whose ops interleave across keys, ops without an index after
rejected lines, a key-value history the model rejects lines of, a ``.gz`` file, a Parquet
file, a file above the size bound, and runs (the ``run`` field) spread over two files:
two candidates, and a candidate and the file above the bound, which the job must send
down the per-key path. The same directory goes through both paths in one session.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from jepsen_py.checker.engine import NOT_CHECKED, TXN_REFUSED, verify_path
from jepsen_py.checker.histgen import INJECTORS, LogWorkload, generate
from jepsen_py.checker.kafkagen import SmallWorkload, generate_small
from jepsen_py.checker.result import Verdict
from jepsen_py.history import Op, write_jsonl, write_parquet
from jepsen_py.history.jsonl import op_to_record

BOUND = 60_000
"""The whole-file size bound in this test: the big file is above it, the others below."""


def _lines(ops: list[Op], run: str | None = None) -> list[str]:
    records = [op_to_record(op) for op in ops]
    if run is not None:
        for record in records:
            record["run"] = run
    return [orjson.dumps(r).decode() for r in records]


def _txn_lines(process: int, key: str, run: str | None) -> list[str]:
    """A Kafka transaction (Jepsen's ``txn``: sends and polls as one op), invoked and ok."""
    steps = [["send", key, 1000 + process], ["poll"]]
    records = [
        {"process": process, "type": "invoke", "f": "txn", "key": key, "value": steps},
        {"process": process, "type": "ok", "f": "txn", "key": key, "value": steps},
    ]
    if run is not None:
        for record in records:
            record["run"] = run
    return [orjson.dumps(r).decode() for r in records]


def _directory(folder: Path) -> dict[str, Path]:
    """The inputs, by role (see the module docstring)."""
    folder.mkdir()
    rng = random.Random(5)
    made: dict[str, Path] = {}
    workload = LogWorkload(ops=300, keys=3, p_implicit=0.1)
    for i, name in enumerate(["valid", "lost-write", "duplicate", "poll-skip"]):
        ops = generate(random.Random(i), workload)
        if name in INJECTORS:
            ops = INJECTORS[name](ops, rng) or ops
        made[name] = folder / f"{i:02d}-{name}.jsonl"
        write_jsonl(made[name], ops)
    consumers = generate_small(random.Random(10), SmallWorkload(keys=3, steps=80, p_fault=0.05))
    assert any(op.f in ("assign", "subscribe") for op in consumers)
    made["consumers"] = folder / "10-consumers.jsonl"
    write_jsonl(made["consumers"], consumers)
    # malformed lines, a blank one, a process that invokes on a second key while its op on
    # the first is pending
    ops = generate(random.Random(3), LogWorkload(ops=300, keys=3))
    lines = _lines(ops)
    lines[5:5] = ["", "not json at all", '{"type": "ok", "f": "send", "key": "t-1"}']
    lines.insert(40, '{"process": 999, "type": "invoke", "f": "send", "key": "t-0", "value": -1}')
    lines.insert(42, '{"process": 999, "type": "invoke", "f": "send", "key": "t-2", "value": -2}')
    made["malformed"] = folder / "20-malformed.jsonl"
    made["malformed"].write_text("\n".join(lines) + "\n")
    # ops without an index, after a blank and a rejected line: numbered as the reader does
    bare = [{k: v for k, v in op_to_record(op).items() if k not in ("index", "time")} for op in ops]
    bare_lines = [orjson.dumps(r).decode() for r in bare]
    bare_lines[3:3] = ["", "{oops"]
    made["unindexed"] = folder / "21-unindexed.jsonl"
    made["unindexed"].write_text("\n".join(bare_lines) + "\n")
    # a kv history whose puts carry numbers: the model rejects them, key after key
    kv_ops = []
    for i, (key, value) in enumerate([("b", 1), ("a", "x"), ("a", 2), ("b", "y"), ("a", 3)]):
        kv_ops += [Op(2 * i, 2 * i, i, "invoke", "put", key, value),
                   Op(2 * i + 1, 2 * i + 1, i, "ok", "put", key, value)]  # fmt: skip
    made["kv"] = folder / "22-kv-numbers.jsonl"
    write_jsonl(made["kv"], kv_ops)
    # a line that is not UTF-8, and no newline after the last line
    raw = [orjson.dumps(op_to_record(op)) for op in ops[:60]]
    raw.insert(3, b'{"process": 3, "type": "ok", "f": "send", "key": "t-0", "value": "\xff\xfe"}')
    made["undecodable"] = folder / "23-undecodable.jsonl"
    made["undecodable"].write_bytes(b"\n".join(raw))
    # compressed: Spark's text source reads it through, the worker decompresses it
    made["gz"] = folder / "30-compressed.jsonl.gz"
    made["gz"].write_bytes(gzip.compress(made["lost-write"].read_bytes()))
    made["parquet"] = folder / "31-table.parquet"
    write_parquet(made["parquet"], generate(random.Random(31), workload))
    # one run in two files (its first ops, then the rest): neither can be checked alone
    shared = _lines(generate(random.Random(40), LogWorkload(ops=300, keys=2)), run="split")
    made["split-a"] = folder / "40-split-a.jsonl"
    made["split-b"] = folder / "41-split-b.jsonl"
    made["split-a"].write_text("\n".join(shared[:200]) + "\n")
    made["split-b"].write_text("\n".join(shared[200:]) + "\n")
    # a run named in its file alone: checked whole
    made["named"] = folder / "42-named.jsonl"
    solo = _lines(generate(random.Random(42), LogWorkload(ops=200, keys=2)), run="solo")
    made["named"].write_text("\n".join(solo) + "\n")
    # above the bound, and sharing its run with a small file: both go by key
    big = _lines(generate(random.Random(50), LogWorkload(ops=600, keys=3)), run="big")
    made["big"] = folder / "50-big.jsonl"
    made["big"].write_text("\n".join(big[:-20]) + "\n")
    made["big-tail"] = folder / "51-big-tail.jsonl"
    made["big-tail"].write_text("\n".join(big[-20:]) + "\n")
    # txn ops among sends and polls (refused line by line, the rest checked): on keys of
    # their own and on the log's keys, with a run; one invoked by a process whose send on
    # another key is pending (the validator's rejection, not the refusal)
    # (t-2 and t-3 have no txn op: their verdicts stand)
    mixed = _lines(generate(random.Random(70), LogWorkload(ops=300, keys=4)), run="mixed")
    for at, process, key in [(9, 700, "t-0"), (60, 701, "t-9")]:
        mixed[at:at] = _txn_lines(process, key, "mixed")
    mixed.insert(200, '{"process": 888, "type": "invoke", "f": "send", "key": "t-0", "value": -1,'
                 ' "run": "mixed"}')  # fmt: skip
    mixed.insert(202, _txn_lines(888, "t-1", "mixed")[0])
    made["txn-mixed"] = folder / "70-txn-mixed.jsonl"
    made["txn-mixed"].write_text("\n".join(mixed) + "\n")
    # txn ops alone: every line refused, nothing to check
    made["txn-only"] = folder / "71-txn-only.jsonl"
    alone = [line for p in range(3) for line in _txn_lines(p, f"t-{p % 2}", None)]
    made["txn-only"].write_text("\n".join(alone) + "\n")
    # nothing to check: an empty file, and one of the nemesis's lines alone
    made["empty"] = folder / "60-empty.jsonl"
    made["empty"].write_text("")
    made["nemesis"] = folder / "61-nemesis.jsonl"
    nemesis = [Op(i, i, "nemesis", "info", "start-partition", None, None) for i in range(3)]
    write_jsonl(made["nemesis"], nemesis)
    assert made["big"].stat().st_size > BOUND
    assert all(p.stat().st_size <= BOUND for n, p in made.items() if n not in ("big", "gz"))
    return made


def _table(report: Any) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in row.items() if k not in ("time", "engine")} for row in report.verdicts
    ]


def _rejected(report: Any) -> list[tuple[Any, ...]]:
    return sorted((r.pos, r.reason, r.key, r.run, r.stage) for r in report.rejected)


def _input(result: Any) -> Any:
    """An input's result without its timings."""
    keys = [attrs.evolve(k, seconds=0.0, checked=[]) for k in result.keys]
    return attrs.evolve(result, keys=keys, seconds=0.0)


@pytest.mark.spark
def test_whole_files_give_the_per_key_paths_results_row_for_row(spark: Any, tmp_path: Path) -> None:
    from jepsen_py.checker.spark import SparkOptions, verify_spark

    made = _directory(tmp_path / "runs")
    folder = str(tmp_path / "runs")
    options = SparkOptions(partitions=2, whole_file_max_bytes=BOUND)
    whole = verify_spark([folder], options, spark=spark)
    per_key = verify_spark([folder], attrs.evolve(options, whole_files=False), spark=spark)
    by_key = {(r["file"], r["key"]): r["engine"] for r in whole.verdicts}
    by_file: dict[str, set[str]] = {}
    for (file, _), engine in by_key.items():
        by_file.setdefault(Path(file).name, set()).add(engine)
    # which path each file took: the shared runs and the big file by key, the rest whole
    by_key_files = {made[n].name for n in ("split-a", "split-b", "big", "big-tail", "parquet")}
    for name, engines in by_file.items():
        assert engines == ({"per-key"} if name in by_key_files else {"whole-file"}), name
    assert whole.figures["whole_files"] == len(made) - len(by_key_files)
    assert whole.figures["reruns"]["shared_runs"] == 3  # split-a, split-b, then big-tail
    assert {r["engine"] for r in per_key.verdicts} == {"per-key"}
    # the same results, row for row
    assert _table(whole) == _table(per_key)
    for mine, theirs in zip(whole.inputs, per_key.inputs, strict=True):
        a, b = attrs.asdict(_input(mine)), attrs.asdict(_input(theirs))
        assert a == b, [(k, a[k], b[k]) for k in a if a[k] != b[k]]
    # the rejected lines brought back (`rejected.json`, written in line order)
    assert _rejected(whole) == _rejected(per_key) and len(whole.rejected) == 19
    assert whole.figures["lines"] == per_key.figures["lines"]
    # and the local engine's, file by file (it checks each file alone, so not the files
    # of a shared run; it does not read .gz: its uncompressed twin stands in)
    results = {r.path: r for r in whole.inputs}
    for name, path in made.items():
        if name in ("split-a", "split-b", "big", "big-tail", "empty", "nemesis"):
            continue  # a shared run; an input Spark calls "cannot tell the model" (both paths)
        mine = results[str(path)]
        local = verify_path(made["lost-write"] if name == "gz" else path)
        assert (mine.verdict, mine.ops, mine.model) == (local.verdict, local.ops, local.model)
        assert [(r.line, r.reason) for r in mine.rejected] == [
            (r.line, r.reason) for r in local.rejected
        ], name
        for key in local.keys:
            if key.explanation == NOT_CHECKED:
                continue  # the local engine stops at a file's first illegal key
            theirs = next(k for k in mine.keys if (k.run, k.key) == (key.run, key.key))
            assert (theirs.verdict, theirs.explanation, theirs.ops, theirs.rejected) == (
                key.verdict,
                key.explanation,
                key.ops,
                key.rejected,
            ), (name, key.key)
    # the test sees what it claims to: anomalies, rejections and every verdict
    assert results[str(made["lost-write"])].anomalies.get("lost-write")
    assert results[str(made["gz"])].anomalies.get("lost-write")
    malformed = results[str(made["malformed"])]
    assert [(r.line, r.key) for r in malformed.rejected] == [(7, None), (8, "t-1"), (43, "t-2")]
    assert [r.line for r in results[str(made["unindexed"])].rejected] == [5]
    assert [(r.line, r.key) for r in results[str(made["kv"])].rejected] == [
        (6, "a"),
        (10, "a"),
        (2, "b"),
    ]
    assert [r.line for r in results[str(made["undecodable"])].rejected] == [4]
    assert results[str(made["empty"])].error and results[str(made["nemesis"])].error
    # txn ops: refused line by line as the local engine refuses them, the rest checked
    mixed = results[str(made["txn-mixed"])]
    assert mixed.model == "log" and mixed.error is None
    assert [(r.line, r.key, r.reason == TXN_REFUSED) for r in mixed.rejected] == [
        (10, "t-0", True),
        (11, "t-0", True),
        (61, "t-9", True),
        (62, "t-9", True),
        (203, "t-1", False),  # invoked while its process's send was pending
    ]
    assert {k.key: k.verdict for k in mixed.keys} == {
        "t-0": Verdict.UNKNOWN,
        "t-1": Verdict.UNKNOWN,
        "t-2": Verdict.OK,
        "t-3": Verdict.OK,
    }
    alone = results[str(made["txn-only"])]
    local = verify_path(made["txn-only"])
    assert (alone.verdict, alone.error, alone.ops) == (Verdict.UNKNOWN, local.error, 0)
    assert [str(r) for r in alone.rejected] == [str(r) for r in local.rejected]
    assert {r.reason for r in alone.rejected} == {TXN_REFUSED} and len(alone.rejected) == 6
    verdicts = {r.verdict for r in whole.inputs}
    assert verdicts == {Verdict.OK, Verdict.ILLEGAL, Verdict.UNKNOWN}


def test_a_whole_file_check_reads_what_the_local_engine_reads(tmp_path: Path) -> None:
    # the worker's function, in this process: the local engine's rejections and keys
    from jepsen_py.checker.spark.keycheck import JobSpec, line_of
    from jepsen_py.checker.spark.wholefile import check_file, is_candidate

    made = _directory(tmp_path / "runs")
    for name in ("malformed", "unindexed", "consumers", "kv", "undecodable", "txn-mixed"):
        path = made[name]
        spec = JobSpec(
            files=(str(path),), formats=("jsonl",), conventions=("native",), models=(None,)
        )
        row = check_file(spec, 0, path.read_bytes())
        local = verify_path(path)
        found = [*row["rejections"], *(r for g in row["groups"] for r in g["rejections"])]
        assert sorted((line_of(r["pos"]), r["reason"]) for r in found) == sorted(
            (r.line, r.reason) for r in local.rejected
        ), name
        groups = {g["key"]: g for g in row["groups"] if g["verdict"] is not None}
        for key in local.keys:
            if key.explanation != NOT_CHECKED and key.rejected == 0:
                assert groups[key.key]["verdict"] == key.verdict.value, (name, key.key)
                assert groups[key.key]["explanation"] == key.explanation, (name, key.key)
        assert row["lines"] == len(path.read_bytes().splitlines()), name
    assert is_candidate("file:///a.jsonl", "jsonl", BOUND, BOUND)
    assert not is_candidate("file:///a.jsonl", "jsonl", BOUND + 1, BOUND)
    assert not is_candidate("file:///a.jsonl.gz", "jsonl", BOUND // 2, BOUND)
    assert not is_candidate("file:///a.parquet", "parquet", 10, BOUND)


@pytest.mark.spark
def test_txn_ops_are_refused_by_the_sql_path_and_the_row_udf_as_by_the_local_engine(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the per-key path's other ways through: every key by Spark SQL (--max-key-ops 0), and
    # the row UDF of PySpark before 4.1; each refuses the txn lines (one of them rejected
    # by the exact validation instead, after the shuffle) and checks the rest
    from jepsen_py.checker.spark import SparkOptions, job, verify_spark

    made = _directory(tmp_path / "runs")
    folder = tmp_path / "txn"
    folder.mkdir()
    paths = [folder / made[n].name for n in ("txn-mixed", "txn-only")]
    for n, path in zip(("txn-mixed", "txn-only"), paths, strict=True):
        path.write_bytes(made[n].read_bytes())
    sql = verify_spark([str(folder)], SparkOptions(partitions=2, max_key_ops=0), spark=spark)
    monkeypatch.setattr(job, "_arrow_udf", lambda: None)
    rows = verify_spark([str(folder)], SparkOptions(partitions=2, whole_files=False), spark=spark)
    assert sql.figures["sql_keys"] > 0 and sql.figures["reruns"]["interleaving_processes"] == 1
    for report in (sql, rows):
        for result, path in zip(report.inputs, paths, strict=True):
            local = verify_path(path)
            assert (result.verdict, result.error, result.model, result.ops) == (
                local.verdict,
                local.error,
                local.model,
                local.ops,
            ), path.name
            assert [str(r) for r in result.rejected] == [str(r) for r in local.rejected]
            mine = {
                (k.run, k.key): (k.verdict, k.explanation, k.ops, k.rejected) for k in result.keys
            }
            assert mine == {
                (k.run, k.key): (k.verdict, k.explanation, k.ops, k.rejected) for k in local.keys
            }, path.name
        assert any(k.verdict is Verdict.OK for k in report.inputs[0].keys)


def test_a_worker_refuses_a_txn_op_after_pairing_it_unless_the_validation_left_it_out() -> None:
    # the per-key path's worker function (`keycheck.check_group`) and the SQL path's line
    # parser (`logfields.line_fields`), in this process
    from jepsen_py.checker.spark.keycheck import REFUSED, JobSpec, check_group, position
    from jepsen_py.checker.spark.logfields import LINE_COLUMNS, line_fields

    spec = JobSpec(files=("h.jsonl",), formats=("jsonl",), conventions=("native",), models=(None,))
    texts = [
        '{"process": 0, "type": "invoke", "f": "send", "key": "k", "value": 1}',
        '{"process": 0, "type": "ok", "f": "send", "key": "k", "value": {"offset": 0}}',
        *_txn_lines(1, "k", None),
        '{"process": 2, "type": "invoke", "f": "poll", "key": "k", "value": {"from": 0}}',
        '{"process": 2, "type": "ok", "f": "poll", "key": "k", "value": {"records": [[0, 1]], '
        '"hw": 1}}',
    ]
    positions = [position(0, line) for line in range(1, len(texts) + 1)]
    names = [
        "model",
        "verdict",
        "ops",
        "seconds",
        "explanation",
        "witness",
        "anomalies",
        "kafka",
        "linearizable",
        "consistency",
        "violations",
        "fs",
        "rejections",
        "pair_proc",
        "pair_inv",
        "pair_code",
        "mismatches",
        "client_ops",
        "needs_ordinal",
        "timed_out",
    ]

    def check(exclude: list[int] | None) -> dict[str, Any]:
        return dict(
            zip(names, check_group(spec, "\x000", "k", positions, texts, exclude), strict=True)
        )

    out = check(None)
    assert (out["model"], out["verdict"], out["fs"], out["client_ops"]) == (
        "log",
        "ok",
        ["poll", "send"],
        4,
    )
    assert out["rejections"] == [
        (positions[2], TXN_REFUSED, "k", None, REFUSED),
        (positions[3], TXN_REFUSED, "k", None, REFUSED),
    ]
    assert positions[2] in out["pair_inv"]  # paired: the validator sees it, as the local one does
    # a line the exact validation rejected is left out, and not refused as well
    assert check([positions[2]])["rejections"] == [(positions[3], TXN_REFUSED, "k", None, REFUSED)]
    fields = dict(
        zip([n for n, _ in LINE_COLUMNS], line_fields(spec, positions[2], texts[2]), strict=True)
    )
    assert (fields["client"], fields["refused"]) == (True, TXN_REFUSED)
    assert (
        line_fields(spec, positions[0], texts[0])[[n for n, _ in LINE_COLUMNS].index("refused")]
        is None
    )
