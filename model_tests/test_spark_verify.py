"""``kmodel verify --engine spark`` (``jepsen_py.checker.spark``) against the local engine.

The Spark engine claims the local engine's verdicts, explanations and rejected lines,
key for key, whatever path a key takes (the per-key Python UDF, the SQL formulation of the
log checker) and whatever went wrong in the input (malformed lines, processes whose ops
interleave across keys, ops without an index). Each test runs one Spark job over many
histories at once, in one SparkSession for the whole test session (local[2]).

The Porcupine corpus is read on the driver by the local importers (its formats carry
their own conventions: an etcd ``fail`` cas completed) and checked in the executors.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jepsen_py.checker.engine import NOT_CHECKED, InputResult, verify_path
from jepsen_py.checker.histgen import INJECTORS, PERTURBATIONS, LogWorkload, generate, mutate
from jepsen_py.checker.kafkagen import SmallWorkload, generate_small
from jepsen_py.checker.result import Verdict
from jepsen_py.history import Op, write_jsonl, write_parquet
from jepsen_py.history.jsonl import NOT_UTF8
from model_tests.shared_corpora import PORCUPINE, needs_porcupine

CORPUS = PORCUPINE
needs_corpus = needs_porcupine


def _verify(spark: Any, paths: list[str], **options: Any) -> list[InputResult]:
    from jepsen_py.checker.spark import SparkOptions, verify_spark

    options.setdefault("partitions", 2)
    report = verify_spark(paths, SparkOptions(**options), spark=spark)
    print(report.figures)
    return report.inputs


def _compare(spark_result: InputResult, local: InputResult) -> list[str]:
    """Every difference between the two engines' results on one input (empty: agree). A
    key the local engine left unchecked (it stops at the first illegal key) has no local
    verdict to compare; Spark checks every key."""
    diffs = []
    for field in ("verdict", "error", "format", "model", "ops"):
        if getattr(spark_result, field) != getattr(local, field):
            diffs.append(f"{field}: {getattr(spark_result, field)} != {getattr(local, field)}")
    if [str(r) for r in spark_result.rejected] != [str(r) for r in local.rejected]:
        diffs.append(f"rejected: {spark_result.rejected} != {local.rejected}")
    theirs = {(k.run, k.key): k for k in spark_result.keys}
    for key in local.keys:
        mine = theirs.pop((key.run, key.key), None)
        if mine is None:
            diffs.append(f"key {key.key} missing")
        elif key.explanation != NOT_CHECKED and (
            (mine.verdict, mine.explanation, mine.ops, mine.rejected)
            != (key.verdict, key.explanation, key.ops, key.rejected)
        ):
            diffs.append(f"key {key.key}: {mine.verdict} {mine.explanation!r} != "
                         f"{key.verdict} {key.explanation!r}")  # fmt: skip
    if theirs:
        diffs.append(f"extra keys {sorted(theirs)}")
    counts = {n: len(g) for n, g in spark_result.anomalies.items() if g}
    if counts != {n: len(g) for n, g in local.anomalies.items() if g}:
        diffs.append(f"anomalies {counts} != {local.anomalies.keys()}")
    return diffs


def _runs(folder: Path) -> list[Path]:
    """Generated Kafka-log runs: valid ones, and ones with each anomaly injected; several
    keys per run; JSONL and Parquet."""
    folder.mkdir()
    rng = random.Random(7)
    paths = []
    workload = LogWorkload(ops=400, keys=4, p_implicit=0.1)
    for i, name in enumerate(["valid", "valid-2", *sorted(INJECTORS)]):
        ops = generate(random.Random(i), workload)
        if name in INJECTORS:
            ops = INJECTORS[name](ops, rng) or ops
        path = folder / f"{i:02d}-{name}.{'parquet' if i % 4 == 3 else 'jsonl'}"
        (write_parquet if path.suffix == ".parquet" else write_jsonl)(path, ops)
        paths.append(path)
    # consumers that assign and subscribe (keyless ops: every key of the run), seek, and
    # continue, on a cluster that misbehaves
    for i in range(4):
        ops = generate_small(random.Random(i), SmallWorkload(keys=3, steps=80, p_fault=0.05))
        path = folder / f"{20 + i:02d}-consumers.{'parquet' if i == 3 else 'jsonl'}"
        (write_parquet if path.suffix == ".parquet" else write_jsonl)(path, ops)
        paths.append(path)
    return paths


def _broken(folder: Path) -> list[Path]:
    """Inputs that are not histories everywhere: malformed lines (not JSON, missing fields,
    blank lines), a process that invokes on a second key while its op on the first is
    pending (a rejection across keys), ops without an index after rejected lines."""
    ops = generate(random.Random(3), LogWorkload(ops=300, keys=3))
    lines = [orjson.dumps(_record(op)).decode() for op in ops]
    lines[5:5] = ["", "not json at all", '{"type": "ok", "f": "send", "key": "t-1"}']
    lines.insert(40, '{"process": 999, "type": "invoke", "f": "send", "key": "t-0", "value": -1}')
    lines.insert(42, '{"process": 999, "type": "invoke", "f": "send", "key": "t-2", "value": -2}')
    malformed = folder / "malformed.jsonl"
    malformed.write_text("\n".join(lines) + "\n")
    unindexed = folder / "unindexed.jsonl"
    bare = [{k: v for k, v in _record(op).items() if k not in ("index", "time")} for op in ops]
    bare_lines = [orjson.dumps(r).decode() for r in bare]
    bare_lines[3:3] = ["", "{oops"]
    unindexed.write_text("\n".join(bare_lines) + "\n")
    # a kv history whose puts carry numbers: the model rejects them, key after key
    kv = folder / "kv-numbers.jsonl"
    kv_ops = []
    for i, (key, value) in enumerate([("b", 1), ("a", "x"), ("a", 2), ("b", "y"), ("a", 3)]):
        kv_ops += [Op(2 * i, 2 * i, i, "invoke", "put", key, value),
                   Op(2 * i + 1, 2 * i + 1, i, "ok", "put", key, value)]  # fmt: skip
    write_jsonl(kv, kv_ops)
    # a line that is not UTF-8 (Spark reads raw bytes): rejected alone, the rest checked
    undecodable = folder / "undecodable.jsonl"
    raw = [orjson.dumps(_record(op)) for op in ops[:60]]
    raw.insert(3, b'{"process": 3, "type": "ok", "f": "send", "key": "t-0", "value": "\xff\xfe"}')
    undecodable.write_bytes(b"\n".join(raw) + b"\n")
    return [malformed, unindexed, kv, undecodable]


def _record(op: Op) -> dict[str, Any]:
    from jepsen_py.history.jsonl import op_to_record

    return op_to_record(op)


@pytest.mark.spark
def test_spark_and_local_engines_agree_on_the_corpus_and_generated_runs(
    spark: Any, tmp_path: Path
) -> None:
    generated = _runs(tmp_path / "runs")
    broken = _broken(tmp_path)
    corpus: list[str] = []  # Porcupine's, when it is beside the repository
    kv: list[Path] = []
    if (CORPUS / "README.md").exists():
        kv = [p for p in sorted((CORPUS / "kv").iterdir()) if p.name != "c50-bad.txt"]
        corpus = [str(CORPUS / "jepsen"), *map(str, kv)]
    paths = [*corpus, str(tmp_path / "runs"), *map(str, broken)]
    results = _verify(spark, paths)
    assert len(results) == (102 + len(kv) if corpus else 0) + len(generated) + len(broken)
    by_path = {r.path: r for r in results}
    disagreements = {}
    for path, result in by_path.items():
        local = verify_path(path)
        diffs = _compare(result, local)
        if diffs:
            disagreements[path] = diffs
    assert not disagreements
    verdicts = [r.verdict for r in results]
    if corpus:
        assert verdicts.count(Verdict.OK) >= 25 and verdicts.count(Verdict.ILLEGAL) >= 85
    # the generated runs: valid ones hold, every injected anomaly is found and named
    for path in generated:
        result = by_path[str(path)]
        name = path.stem.split("-", 1)[1]
        if name.startswith("valid"):
            assert result.verdict is Verdict.OK, result
        elif name == "consumers":
            assert result.verdict is not Verdict.UNKNOWN, result
        else:
            assert result.anomalies.get(name), (name, result.anomalies.keys())
    # the broken inputs: every bad line is named by file and line, the rest is checked
    malformed = by_path[str(broken[0])]
    assert [(r.line, r.key) for r in malformed.rejected] == [(7, None), (8, "t-1"), (43, "t-2")]
    assert "invokes twice without completing" in malformed.rejected[2].reason
    assert malformed.verdict is Verdict.UNKNOWN and len(malformed.keys) == 3
    t2 = next(k for k in malformed.keys if k.key == "t-2")
    assert t2.verdict is Verdict.UNKNOWN and t2.rejected == 1
    unindexed = by_path[str(broken[1])]
    assert [r.line for r in unindexed.rejected] == [5]
    kv_numbers = by_path[str(broken[2])]
    assert [(r.line, r.key) for r in kv_numbers.rejected] == [(6, "a"), (10, "a"), (2, "b")]
    undecodable = by_path[str(broken[3])]
    assert [(r.line, r.reason) for r in undecodable.rejected] == [(4, NOT_UTF8)]
    assert undecodable.verdict is Verdict.UNKNOWN and undecodable.keys


@pytest.mark.spark
@needs_corpus
def test_a_per_key_timeout_gives_unknown_for_that_key_not_a_failed_job(spark: Any) -> None:
    # c50-bad: the local engine stops at its first illegal key; Spark checks all ten, and
    # those whose search outlasts the timeout are UNKNOWN while the rest are decided
    path = str(CORPUS / "kv" / "c50-bad.txt")
    (result,) = _verify(spark, [path], timeout=1.0)
    local = verify_path(path)
    assert result.verdict is local.verdict is Verdict.ILLEGAL
    assert not _compare(result, local)
    unknown = [k for k in result.keys if k.verdict is Verdict.UNKNOWN]
    assert unknown and all("timed out" in (k.explanation or "") for k in unknown)


@pytest.mark.spark
def test_the_row_udf_of_older_pyspark_gives_the_local_engines_results(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before PySpark 4.1 (no arrow_udf) each group reaches its worker as a sorted
    # collect_list through a row UDF: the same results, reruns included (rejected lines,
    # a process whose ops interleave across keys, ops without an index, kv's model)
    from jepsen_py.checker.spark import job

    paths = [*map(str, _runs(tmp_path / "runs")), *map(str, _broken(tmp_path))]
    monkeypatch.setattr(job, "_arrow_udf", lambda: None)
    results = _verify(spark, paths, whole_files=False)
    assert len(results) == len(paths)
    disagreements = {r.path: d for r in results if (d := _compare(r, verify_path(r.path)))}
    assert not disagreements


@pytest.mark.spark
def test_assign_and_subscribe_lines_are_found_in_every_format_before_their_copies_are_skipped(
    spark: Any, tmp_path: Path
) -> None:
    # the job copies an assign/subscribe line to every other key of its run only when the
    # first pass counted one: a history with them, alone in its job, in JSONL and in
    # Parquet, still gets the local engine's results; one without them skips the copies
    # and loses nothing. (Seed 10: without the copies, a poll of key k1 after a reassign
    # looks like a nonmonotonic poll, and the verdict turns ILLEGAL.) The per-key path's
    # alone: a JSONL file would be checked whole, with no copies to make.
    from jepsen_py.checker.spark import SparkOptions, verify_spark

    ops = generate_small(random.Random(10), SmallWorkload(keys=3, steps=80, p_fault=0.05))
    assert any(op.f in ("assign", "subscribe") for op in ops)
    inputs = {"jsonl": write_jsonl, "parquet": write_parquet}
    for suffix, write in inputs.items():
        path = tmp_path / f"consumers.{suffix}"
        write(path, ops)
        options = SparkOptions(partitions=2, whole_files=False)
        report = verify_spark([str(path)], options, spark=spark)
        assert report.figures["reassign_lines"] > 0, suffix
        (result,) = report.inputs
        assert not _compare(result, verify_path(str(path))), suffix
    plain = tmp_path / "plain.jsonl"
    write_jsonl(plain, generate(random.Random(6), LogWorkload(ops=300, keys=3)))
    options = SparkOptions(partitions=2, whole_files=False)
    report = verify_spark([str(plain)], options, spark=spark)
    assert report.figures["reassign_lines"] == 0
    (result,) = report.inputs
    assert result.verdict is Verdict.OK and not _compare(result, verify_path(str(plain)))


W_SMALL = LogWorkload(
    ops=60,
    producers=3,
    consumers=2,
    p_fail=0.15,
    p_info=0.2,
    p_poll_info=0.1,
    max_records=3,
    p_seek=0.2,
    p_implicit=0.2,
    final_chunk=3,
)
"""Small single-key histories with every kind of op: info and failed sends (fillers of
unobserved offsets), stale and partial polls, seeks, subscribed polls."""


def _single_key_histories(folder: Path, n: int) -> list[Path]:
    folder.mkdir()
    names = sorted([*INJECTORS, *PERTURBATIONS])
    rng = random.Random(11)
    paths = []
    for i in range(n):
        ops = generate(random.Random(1000 + i), attrs.evolve(W_SMALL, final_reads=i % 3 != 0))
        for _ in range(i % 3):
            changed = mutate(ops, rng, names[rng.randrange(len(names))])
            ops = changed if changed is not None else ops
        path = folder / f"h{i:03d}.jsonl"
        write_jsonl(path, ops)
        paths.append(path)
    return paths


def _ops(*events: tuple[Any, ...]) -> list[Op]:
    """Ops from (process, type, f, value) rows on key "k", indexed in order."""
    return [Op(i, i, p, t, f, "k", v) for i, (p, t, f, v) in enumerate(events)]


def _send(p: Any, v: Any) -> tuple[Any, ...]:
    return (p, "invoke", "send", v)


def _ack(p: Any, v: Any, offset: Any) -> tuple[Any, ...]:
    return (p, "ok", "send", {"offset": offset, "value": v})


def _poll(p: Any, start: Any = 0) -> tuple[Any, ...]:
    return (p, "invoke", "poll", {"from": start})


def _polled(p: Any, records: Any, hw: Any) -> tuple[Any, ...]:
    return (p, "ok", "poll", {"records": records, "hw": hw})


HANDMADE = {
    "sent-twice": _ops(_send(0, 1), _ack(0, 1, 0), _send(1, 1), _ack(1, 1, 1)),
    "ack-without-offset": _ops(_send(0, 1), (0, "ok", "send", {"value": 1})),
    "malformed-poll-first": _ops(
        _poll(2), (2, "ok", "poll", {"records": 5, "hw": 1}),
        _send(0, 1), _ack(0, 1, 0), _send(1, 2), _ack(1, 2, 0),
    ),
    "conflict-first": _ops(
        _send(0, 1), _ack(0, 1, 0), _send(1, 2), _ack(1, 2, 0),
        _poll(2), (2, "ok", "poll", {"records": 5, "hw": 1}),
    ),
    "echo-of-another-value": _ops(_send(0, 1), (0, "ok", "send", {"offset": 0, "value": 9})),
    "negative-offset": _ops(_send(0, 1), _ack(0, 1, -1)),
    "offset-not-an-integer": _ops(_send(0, 1), _ack(0, 1, "0")),
    "poll-not-from-its-position": _ops(
        _send(0, 1), _ack(0, 1, 0), _send(0, 2), _ack(0, 2, 1), _poll(1, 0), _polled(1, [[1, 2]], 2)
    ),
    "record-above-hw": _ops(_send(0, 1), _ack(0, 1, 0), _poll(1), _polled(1, [[0, 1]], 0)),
    "record-not-a-pair": _ops(_send(0, 1), _ack(0, 1, 0), _poll(1), _polled(1, [[0, 1, 2]], 1)),
    "never-sent": _ops(_poll(1), _polled(1, [[0, 7]], 1)),
    "aborted-read": _ops(_send(0, 1), _poll(1), _polled(1, [[0, 1]], 1), (0, "fail", "send", 1)),
    "too-few-fillers": _ops(_send(0, 1), _ack(0, 1, 0), _poll(1), _polled(1, [[0, 1]], 3)),
    "stale-read": _ops(_send(0, 1), _ack(0, 1, 0), _poll(1), _polled(1, [], 0)),
    "nonmonotonic-send": _ops(_send(0, 1), _ack(0, 1, 1), _send(0, 2), _ack(0, 2, 0)),
    "duplicate-in-a-poll": _ops(
        _send(0, 1), _ack(0, 1, 0), _poll(1), _polled(1, [[0, 1], [1, 1]], 2)
    ),
    "skip-after-assign-is-no-skip": _ops(
        _send(0, 1), _ack(0, 1, 0), _send(0, 2), _ack(0, 2, 1),
        _poll(1, 0), _polled(1, [[0, 1]], 2), (1, "invoke", "assign", None),
        (1, "ok", "assign", None), _poll(1, 2), _polled(1, [], 2),
    ),
    "skip": _ops(
        _send(0, 1), _ack(0, 1, 0), _send(0, 2), _ack(0, 2, 1),
        _poll(1, 0), _polled(1, [[0, 1]], 2), _poll(1, 2), _polled(1, [], 2),
    ),
    "back": _ops(
        _send(0, 1), _ack(0, 1, 0), _poll(1, 0), _polled(1, [[0, 1]], 1),
        (1, "invoke", "poll", {}), _polled(1, [[0, 1]], 1),
    ),
}  # fmt: skip
"""Hand-written keys, one per rule of `check_log` and the anomaly finders, for the rules
generated histories rarely reach (UNKNOWN inputs, the order of first problems)."""


@pytest.mark.spark
def test_the_sql_log_checker_agrees_with_check_log(spark: Any, tmp_path: Path) -> None:
    paths = _single_key_histories(tmp_path / "keys", 60)
    for name, ops in HANDMADE.items():
        write_jsonl(tmp_path / "keys" / f"x-{name}.jsonl", ops)
        paths.append(tmp_path / "keys" / f"x-{name}.jsonl")
    results = _verify(spark, [str(tmp_path / "keys")], model="log", max_key_ops=0)
    assert len(results) == len(paths)
    seen = set()
    for result in results:
        local = verify_path(result.path, model="log")
        assert not _compare(result, local), (result.path, _compare(result, local))
        seen.add(result.verdict)
    # the comparison is not vacuous: all three verdicts occur
    assert seen == {Verdict.OK, Verdict.ILLEGAL, Verdict.UNKNOWN}


@pytest.mark.spark
def test_the_cli_runs_spark_and_writes_the_verdict_table(spark: Any, tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from jepsen_py.cli.verify import verify

    runs = tmp_path / "runs"
    runs.mkdir()
    rng = random.Random(5)
    for i in range(3):
        ops = generate(random.Random(i), LogWorkload(ops=300, keys=3))
        if i == 2:
            ops = INJECTORS["lost-write"](ops, rng) or ops
        write_jsonl(runs / f"run-{i}.jsonl", ops)
    out = tmp_path / "out"
    args = ["--engine", "spark", str(runs), "--output", str(out), "--partitions", "2", "--json"]
    result = CliRunner().invoke(verify, args)
    assert result.exit_code == 1, result.output
    payload = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert payload["engine"] == "spark" and payload["exit_code"] == 1
    assert [i["verdict"] for i in payload["inputs"]] == ["ok", "ok", "illegal"]
    assert payload["totals"]["keys"] == 9 and payload["spark"]["keys"] == 9
    table = pq.read_table(out / "verdicts.parquet").to_pylist()
    assert len(table) == 9
    assert {"run", "key", "model", "verdict", "ops", "anomalies", "time"} <= set(table[0])
    assert [(r["run"], r["key"]) for r in table] == sorted((r["run"], r["key"]) for r in table)
    illegal = [r for r in table if r["verdict"] == "illegal"]
    assert illegal and all(r["run"].endswith("run-2.jsonl") for r in illegal)
    assert any(dict(r["anomalies"]).get("lost-write") for r in illegal)
    assert (out / "summary.json").exists() and (out / "anomalies.json").is_dir()
    # the valid runs alone: exit 0
    (runs / "run-2.jsonl").unlink()
    result = CliRunner().invoke(verify, ["--engine", "spark", str(runs), "--partitions", "2"])
    assert result.exit_code == 0, result.output


# --- without Spark ----------------------------------------------------------------------


def test_auto_engine_takes_spark_for_big_inputs_and_local_for_many_small_runs(
    tmp_path: Path,
) -> None:
    from jepsen_py.cli.verify import AUTO_SPARK_BYTES, choose_engine

    ops = generate(random.Random(1), LogWorkload(ops=40))
    for i in range(200):  # many runs, few bytes: the local engine finishes first
        write_jsonl(tmp_path / f"run-{i:03d}.jsonl", ops)
    engine, why = choose_engine((str(tmp_path),))
    assert engine == "local" and "200 file(s)" in why, why
    big = tmp_path / "big"
    big.mkdir()
    with open(big / "run.jsonl", "wb") as handle:  # sparse: its size is what counts
        handle.truncate(AUTO_SPARK_BYTES + 1)
    engine, why = choose_engine((str(big),), cores=8)
    assert engine == ("spark" if shutil.which("java") else "local"), why
    # With no more cores than the local engine's processes, Spark has nothing to add.
    engine, why = choose_engine((str(big),), cores=2)
    assert engine == "local" and "2 core(s)" in why, why
    engine, why = choose_engine((str(tmp_path / "run-000.jsonl"),))
    assert engine == "local" and "1 file(s)" in why
    assert choose_engine(("s3a://bucket/runs/",))[0] == "spark"


def test_local_mode_retries_a_failed_task_like_a_cluster() -> None:
    from jepsen_py.checker.spark.session import effective_master

    assert effective_master("local[*]") == "local[*,4]"
    assert effective_master("local[2]") == "local[2,4]"
    assert effective_master("local[2,3]") == "local[2,3]"
    assert effective_master("spark://host:7077") == "spark://host:7077"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, -0.0, 1.0, 2.5])
    | st.sampled_from(["a", "b", "1"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("ab"), inner),
    max_leaves=6,
)  # fmt: skip


@given(JSON, JSON)
def test_sql_value_keys_are_equal_exactly_when_the_checkers_values_are(a: Any, b: Any) -> None:
    from jepsen_py.checker.spark.logfields import canon
    from jepsen_py.history.op import freeze

    assert (canon(a) == canon(b)) == (freeze(a) == freeze(b))


def test_the_worker_reads_lines_as_the_local_reader_does(tmp_path: Path) -> None:
    from jepsen_py.checker.spark.keycheck import LineError, decode
    from jepsen_py.history import Rejections, read_jsonl

    lines = [
        '{"index": 0, "process": 1, "type": "invoke", "f": "send", "key": "k", "value": 1}',
        "",
        "not json",
        "[1, 2]",
        '{"process": 1, "type": "done", "f": "send"}',
        '{"process": true, "type": "ok", "f": "send", "key": "k"}',
        '{"process": 1, "type": "ok", "f": "", "key": 7}',
        '{"process": 1, "type": "ok", "f": "send", "key": 7, "run": 3}',
        '{"process": "nemesis", "type": "info", "f": "start", "time": 1.5}',
        '{"process": 2, "type": "ok", "f": "poll", "key": 7}',
    ]
    path = tmp_path / "h.jsonl"
    path.write_text("\n".join(lines) + "\n")
    sink = Rejections(str(path))
    local = {op.line: op for op in read_jsonl(path, sink)}
    reasons = {r.line: (r.reason, r.key) for r in sink}
    ordinal = 0
    for number, text in enumerate(lines, start=1):
        try:
            op = decode("jsonl", text, ordinal, number)
        except LineError as exc:
            assert reasons[number] == (exc.reason, exc.key)
            continue
        if op is None:
            assert number not in local and number not in reasons
            continue
        ordinal += 1
        assert op == local[number] and op.line == number
    assert len(reasons) == 7 and len(local) == 2


def test_a_spark_failure_is_told_in_one_line_with_sparks_own_reason() -> None:
    from jepsen_py.checker.spark.session import jvm_reason, spark_reason

    trace = (
        "An error occurred while calling o91.collectToPython.\n: org.apache.spark.SparkExcep"
        "tion: Job aborted due to stage failure: Task 0 in stage 4.0 failed 4 times, most "
        "recent failure: Lost task 0.3 (TID 9): org.apache.spark.api.python.PythonException: "
        'Traceback (most recent call last):\n  File "worker.py", line 1, in main\n'
        "MemoryError: out of memory while checking\n\n\tat org.apache.spark.api.python.Base"
    )
    assert spark_reason(Exception(trace)) == "MemoryError: out of memory while checking"
    missing = "[PATH_NOT_FOUND] Path does not exist: file:/nowhere.jsonl."
    assert spark_reason(Exception(missing)) == missing
    assert len(spark_reason(Exception("ValueError: " + "x" * 10_000))) < 400
    said = [b"Using Spark's default log4j profile\n", b"Error: Master must start with yarn\n"]
    assert jvm_reason(said) == "Error: Master must start with yarn"


def test_the_cli_says_spark_failed_in_one_line_and_prints_traces_only_when_verbose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    import jepsen_py.checker.spark as spark_package
    from jepsen_py.cli.verify import verify

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Traceback (most recent call last):\nOSError: disk quota exceeded")

    monkeypatch.setattr(spark_package, "verify_spark", explode)
    write_jsonl(tmp_path / "h.jsonl", generate(random.Random(1), LogWorkload(ops=20)))
    if shutil.which("java") is None:
        monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    args = ["--engine", "spark", str(tmp_path / "h.jsonl")]
    result = CliRunner().invoke(verify, args)
    assert result.exit_code == 2
    (line,) = [line for line in result.output.splitlines() if line.startswith("kmodel:")]
    assert "Spark failed on" in line and "h.jsonl" in line and "disk quota exceeded" in line
    assert "--verbose" in line and "Traceback" not in result.output
    result = CliRunner().invoke(verify, [*args, "--verbose"])
    assert result.exit_code == 2 and "Traceback" in result.output


@pytest.mark.spark
def test_an_input_spark_cannot_read_does_not_cost_the_others_their_verdicts(
    spark: Any, tmp_path: Path
) -> None:
    good = tmp_path / "good.jsonl"
    write_jsonl(good, generate(random.Random(2), LogWorkload(ops=60, keys=2)))
    bad = tmp_path / "torn.parquet"
    bad.write_bytes(b"PAR1 this is not a parquet file at all")
    results = {r.path: r for r in _verify(spark, [str(good), str(bad)])}
    assert results[str(good)].verdict is Verdict.OK
    torn = results[str(bad)]
    assert torn.verdict is Verdict.UNKNOWN and torn.error is not None
    assert "Spark failed on this input" in torn.error and len(torn.error.splitlines()) == 1
