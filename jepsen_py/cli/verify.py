"""``kmodel verify``: check recorded histories for linearizability (and, for Kafka logs,
the anomaly taxonomy), one verdict per file.

Two engines do the work: `jepsen_py.checker.engine` in this process (``--engine local``),
and `jepsen_py.checker.spark` on Spark (``--engine spark``: ``local[*]`` by default, any
cluster with ``--master``). ``--engine auto`` (the default) takes the local engine unless
the input is big enough for Spark to finish first (`choose_engine`), and says which and why
on stderr.
For Kafka-log histories, ``--consistency`` says what decides (docs/checking.md): Kafka's
guarantees (``kafka``, the default; linearizability is reported beside) or
linearizability (``linearizable``).

This module parses and checks every flag before any work starts, prints a table per
input (key, operations, verdict, time) and, for every key that is not OK, why: its
violations by name with the history lines of their witnesses. Exit code: 1 when any key
anywhere is illegal (a violation wins over unknowns elsewhere); else 2 when something is
unknown (timeout, nothing checked, an input that could not be read, rejected lines);
else 0.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import click
import orjson

from jepsen_py.checker.engine import MODEL_NAMES, NOT_CHECKED, verify_paths
from jepsen_py.checker.models import UNSET
from jepsen_py.checker.records import WITNESSES_SHOWN, InputResult, KeyResult, line_of
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.spark.flags import master_problem, memory_problem
from jepsen_py.checker.taxonomy import (
    ANOMALIES,
    CONSISTENCIES,
    DELIVERIES,
    DELIVERY_ANOMALIES,
    DESCRIPTIONS,
    KAFKA,
    class_of,
)
from jepsen_py.checker.totals import exit_code, summary, totals
from jepsen_py.cli.common import emit_json, fail_input
from jepsen_py.history import FORMATS, list_histories

_STYLE = {Verdict.OK: "green", Verdict.ILLEGAL: "bold red", Verdict.UNKNOWN: "yellow"}
_REJECTED_SHOWN = 10
_KEYS_SHOWN = 60
"""Above this many keys in all, Spark results are summarized instead of tabled per input."""

AUTO_SPARK_BYTES = 512 << 20
"""``--engine auto`` picks Spark above this many bytes of history in all, on a machine with
more cores than the local engine uses (or for a remote path). Where the engines cross
over (benchmarks/engine_crossover.py, docs/spark.md "Which engine"): Spark's session and
first job cost 15-37 s before any history is read, and on this project's 2-core machines
its cost per MB is at best 0.07-0.08 s (free cores) against the local engine's 0.10-0.23
s, so Spark can win from some 200-500 MB on free cores with more cores than the local
engine's processes (this is the upper end) and, on two cores, not at all (10^7 ops in ten
files, 1.2 GB: Spark 89.1 s, the local engine 65.6 s with its two processes). The number
of files does not count: the local engine spends about a millisecond per file (1,000
files of 100 ops: 0.8 s) where Spark spends more (79 s)."""


def parse_initial(text: str | None) -> Any:
    """``--initial``: JSON (``0``, ``"a"``, ``[1, 2]``), ``nil``/``null`` for no value, or
    else the text itself as a string."""
    if text is None:
        return UNSET
    if text in ("nil", "null"):
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def _lines(groups: list[list[Any]]) -> str:
    return ", ".join(
        "[" + " ".join(str(line_of(op)) for op in group) + "]" for group in groups[:WITNESSES_SHOWN]
    )


def describe_key(key: KeyResult) -> list[str]:
    """What to say about a key that is not OK: its explanation, then each violation by
    name with the history lines of its first witnesses."""
    out = [f"key {_key_name(key)}: {key.explanation}"] if key.explanation else []
    for name in key.violations:
        entry = key.violation_json(name)
        lines = ", ".join("[" + " ".join(map(str, group)) + "]" for group in entry["lines"])
        what = DESCRIPTIONS.get(name, "the history has no linearization")
        out.append(f"  violation {name} ({entry['count']}): {what}; witness lines {lines}")
    return out


def _key_name(key: KeyResult) -> str:
    name = "-" if key.key is None else str(key.key)
    return name if key.run is None else f"{key.run}/{name}"


def _print_human(result: InputResult) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=True)
    if result.error is not None:
        console.print(f"{result.path}: not checked: {result.error}", markup=False, style="yellow")
        return
    style = _STYLE[result.verdict]
    console.print(
        f"[bold]{escape(result.path)}[/bold] ({result.format}, model {result.model}): "
        f"[{style}]{result.verdict.value.upper()}[/]"
    )
    table = Table()
    table.add_column("key")
    table.add_column("ops", justify="right")
    table.add_column("verdict")
    table.add_column("time", justify="right")
    skipped = []
    for key in result.keys:
        name = _key_name(key)
        verdict = f"[{_STYLE[key.verdict]}]{key.verdict.value}[/]"
        if not key.checked and key.explanation == NOT_CHECKED:
            verdict = "[dim]not checked[/]"
            skipped.append(name)
        table.add_row(escape(name), str(key.ops), verdict, f"{key.seconds:.3f} s")
    console.print(table)
    for key in result.keys:
        if key.verdict is not Verdict.OK and key.explanation != NOT_CHECKED:
            for line in describe_key(key):
                console.print(line, markup=False)
        if key.report:
            console.print(f"  report: {key.report}", markup=False)
    if skipped:
        console.print(f"not checked ({NOT_CHECKED}): keys {', '.join(skipped)}", markup=False)
    _print_anomalies(console, result)
    for rejection in result.rejected[:_REJECTED_SHOWN]:
        console.print(f"rejected {rejection}", markup=False)
    if len(result.rejected) > _REJECTED_SHOWN:
        more = len(result.rejected) - _REJECTED_SHOWN
        console.print(f"... and {more} more rejected lines (--json lists them all)")


def _print_anomalies(console: Any, result: InputResult) -> None:
    """One line per anomaly found: count over the keys, class, first witnesses' lines."""
    counts = result.anomaly_counts
    for name in (*ANOMALIES, *DELIVERY_ANOMALIES):
        groups = result.anomalies.get(name) or []
        n = counts.get(name, len(groups))
        if n:
            console.print(
                f"anomaly {name} ({class_of(name, result.consistency)}): {n} "
                f"(lines {_lines(groups)})",
                markup=False,
            )


def choose_engine(paths: tuple[str, ...], cores: int | None = None) -> tuple[str, str]:
    """(engine, why) for ``--engine auto``: Spark for a remote path, or for more than
    `AUTO_SPARK_BYTES` bytes of history on a machine with more ``cores`` (default: this
    one's) than the local engine's `SPILL_WORKERS` processes use (when Java is here);
    else local. Only file sizes are read: choosing starts no JVM."""
    from jepsen_py.checker.engine import SPILL_WORKERS
    from jepsen_py.checker.spark.inputs import is_remote, list_local

    remote = [p for p in paths if is_remote(p)]
    if remote:
        return "spark", f"{remote[0]} is a remote path"
    files = [f for p in paths for f in list_local(p, None) if f.error is None]
    size = sum(f.size for f in files)
    what = f"{len(files)} file(s), {size / (1 << 20):.1f} MB"
    if size <= AUTO_SPARK_BYTES:
        return "local", f"{what}: at most {AUTO_SPARK_BYTES >> 20} MB, the local engine is faster"
    if cores is None:
        cores = os.cpu_count() or 1
    if cores <= SPILL_WORKERS:
        return "local", (
            f"{what}, but {cores} core(s): Spark local[*] would have no more than the local "
            f"engine's {SPILL_WORKERS} processes, and its start-up besides"
        )
    if not _has_java():
        return "local", f"{what}, but no Java for Spark (scripts/check-java says how)"
    return "spark", f"{what}: more than {AUTO_SPARK_BYTES >> 20} MB on {cores} cores"


def _has_java() -> bool:
    """Whether Spark can start a JVM here: ``java`` on the PATH, or ``JAVA_HOME`` set."""
    import shutil  # here: the local engine never looks for Java (shutil pulls in bz2, lzma)

    return shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))


def local_paths(paths: tuple[str, ...], *, quiet: bool = False) -> list[tuple[str, str | None]]:
    """The inputs the local engine checks, as (path, why it cannot be checked or None):
    the history files of each PATH (each file once: `jepsen_py.history.files`), and each
    PATH that names none. The files skipped are named on stderr."""
    listing = list_histories(paths)
    out: list[tuple[str, str | None]] = [(path, None) for path in listing.files]
    out += [(path, f"{path}: {why}") for path, why in listing.missing]
    if listing.skipped and not quiet:
        names = ", ".join(path for path, _ in listing.skipped[:5])
        more = f" and {len(listing.skipped) - 5} more" if len(listing.skipped) > 5 else ""
        click.echo(
            f"skipped {len(listing.skipped)} file(s) that are not histories or were listed "
            f"already: {names}{more}",
            err=True,
        )
    return out


def _print_spark_summary(results: list[InputResult], figures: dict[str, Any]) -> None:
    """Many keys: the totals, then every key that is not OK with its counterexample."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=True)
    numbers = totals(results)
    table = Table(title="verdicts")
    for column in ("inputs", "keys", "ops", "ok", "illegal", "unknown", "anomalies", "rejected"):
        table.add_column(column, justify="right")
    table.add_row(
        *(
            str(numbers[name])
            for name in ("inputs", "keys", "ops", "ok", "illegal", "unknown", "anomalies")
        ),
        str(numbers["rejected_lines"]),
    )
    console.print(table)
    shown = 0
    for result in results:
        if result.error is not None:
            console.print(f"{result.path}: not checked: {result.error}", markup=False)
            continue
        for key in result.keys:
            if key.verdict is Verdict.OK:
                continue
            shown += 1
            if shown > _KEYS_SHOWN:
                continue
            style = _STYLE[key.verdict]
            console.print(
                f"[{style}]{key.verdict.value.upper()}[/] {escape(result.path)} ({key.ops} ops)",
                markup=True,
                highlight=False,
            )
            for line in describe_key(key):
                console.print(f"  {line}", markup=False)
        for name in (*ANOMALIES, *DELIVERY_ANOMALIES):
            groups = result.anomalies.get(name) or []
            if groups:
                console.print(
                    f"  {result.path}: anomaly {name} ({class_of(name, result.consistency)}): "
                    f"{result.anomaly_counts.get(name, len(groups))} "
                    f"(lines {_lines(groups)})",
                    markup=False,
                )
        for rejection in result.rejected[:_REJECTED_SHOWN]:
            console.print(f"rejected {rejection}", markup=False)
    if shown > _KEYS_SHOWN:
        console.print(f"... and {shown - _KEYS_SHOWN} more keys not OK (see --output or --json)")


def _figures_line(figures: dict[str, Any]) -> str:
    ops = figures.get("ops", 0)
    seconds = figures.get("seconds") or 0.0
    rate = f", {ops / seconds:,.0f} ops/s" if seconds else ""
    startup = figures.get("startup_seconds")
    started = f" (start-up {startup:.1f} s)" if startup is not None else ""
    reruns = figures.get("reruns") or {}
    again = "; checked again: " + ", ".join(f"{k} {v}" for k, v in reruns.items()) if reruns else ""
    sql = f"; {figures['sql_keys']} key(s) by Spark SQL" if figures.get("sql_keys") else ""
    whole = figures.get("whole_files") or 0
    paths = f"{whole} file(s) whole" if whole else ""
    if figures.get("files", 0) > whole or not whole:
        paths += (", " if paths else "") + f"{figures.get('partitions')} partitions by key"
    return (
        f"spark {figures.get('master')}: {ops} ops in {figures.get('keys', 0)} keys, "
        f"{paths}, {seconds:.1f} s{started}{rate}{sql}{again}"
    )


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option(
    "--model",
    type=click.Choice(MODEL_NAMES),
    default=None,
    help="What the history is of; default: told by the format or the ops' f.",
)
@click.option(
    "--initial",
    default=None,
    metavar="VALUE",
    help='A register\'s initial value (JSON, or nil; default nil; kv: "").',
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(FORMATS)),
    default=None,
    help="The history format; default: by extension, then by content.",
)
@click.option(
    "--timeout",
    type=float,
    default=None,
    metavar="S",
    help="Seconds per input (Spark: per key) before its verdict is unknown (default: none).",
)
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False),
    default=None,
    metavar="DIR",
    help="Write an HTML report per key into DIR.",
)
@click.option(
    "--engine",
    type=click.Choice(["auto", "local", "spark"]),
    default="auto",
    show_default=True,
    help="local: this process; spark: a Spark job; auto: Spark for a remote path, or above "
    "512 MB with more than 2 cores.",
)
@click.option(
    "--master",
    default=None,
    metavar="URL",
    help="Spark master (default local[*]; spark://host:7077, yarn, k8s://...).",
)
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Spark partitions for the per-key check (default: by input size, 2 per core at least).",
)
@click.option(
    "--output",
    "output_dir",
    default=None,
    metavar="DIR",
    help="Write the verdict table (Parquet and JSON) and a summary into DIR.",
)
@click.option(
    "--spark-log-level",
    type=click.Choice(["ERROR", "WARN", "INFO", "DEBUG", "OFF"], case_sensitive=False),
    default="ERROR",
    show_default=True,
    help="Level of Spark's own log on stderr.",
)
@click.option(
    "--max-key-ops",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Spark: keys above N ops run the log checker as Spark SQL (default 250000).",
)
@click.option(
    "--whole-files/--no-whole-files",
    "whole_files",
    default=None,
    help="Spark: check each JSONL file of at most 256 MB whose runs are its own whole, in one "
    "task (default), or every file key by key (--no-whole-files). docs/spark.md.",
)
@click.option(
    "--driver-memory",
    default="2g",
    show_default=True,
    metavar="SIZE",
    help="Spark driver memory (local mode: the executors' too).",
)
@click.option(
    "--spark-conf",
    "spark_conf",
    multiple=True,
    metavar="KEY=VALUE",
    help="A Spark setting (repeatable), e.g. spark.executor.memory=4g or fs.s3a options.",
)
@click.option(
    "--consistency",
    type=click.Choice(CONSISTENCIES),
    default=None,
    help="Kafka logs: what decides, Kafka's guarantees (kafka, the default; linearizability "
    "is reported beside) or linearizability (linearizable). docs/checking.md.",
)
@click.option(
    "--delivery",
    type=click.Choice(DELIVERIES),
    default=None,
    help="Check a consumer group's delivery instead (lost, duplicated, commit-regression), "
    "held to at-least-once or at-most-once. docs/checking.md.",
)
@click.option("--verbose", "-v", is_flag=True, help="On a Spark failure, print Spark's traces too.")
@click.option("--json", "as_json", is_flag=True, help="End with one JSON line of results.")
def verify(
    paths: tuple[str, ...],
    model: str | None,
    initial: str | None,
    fmt: str | None,
    timeout: float | None,
    report_dir: str | None,
    engine: str,
    master: str | None,
    partitions: int | None,
    output_dir: str | None,
    spark_log_level: str,
    max_key_ops: int | None,
    whole_files: bool | None,
    driver_memory: str,
    spark_conf: tuple[str, ...],
    consistency: str | None,
    delivery: str | None,
    verbose: bool,
    as_json: bool,
) -> None:
    """Check the histories PATH...: Kafka logs for Kafka's guarantees and linearizability
    (--consistency says which decides), registers and key-value stores for
    linearizability; each file gets its own verdict.

    A PATH is a file, a directory of runs or a glob; with the Spark engine also any URI
    Spark reads (hdfs://, s3a://). Formats: jsonl and parquet (this project's), edn
    (Jepsen/Knossos), porcupine-etcd and porcupine-kv (Porcupine's test data). Models: log
    (Kafka partitions: Kafka's guarantees and linearizability), register, cas-register,
    kv. In a directory only history files count (docs/history-format.md).

    With --delivery, what is checked is a consumer group's delivery (its process, commit
    and fetch-offsets ops): records lost, records processed twice and why, committed
    offsets that went backwards; at-least-once or at-most-once says which are violations."""
    if timeout is not None and timeout <= 0:
        fail_input(f"--timeout must be a positive number of seconds, got {timeout}")
    if initial is not None and model in ("log",):
        fail_input("--initial applies to the register, cas-register and kv models, not to log")
    if consistency is not None and model not in (None, "log"):
        fail_input(
            f"--consistency applies to Kafka logs (--model log); the {model} model is checked "
            "for linearizability only"
        )
    if delivery is not None:
        given = {"--model": model, "--consistency": consistency, "--initial": initial}
        given.update({"--report": report_dir, "--timeout": timeout})
        flag = next((f for f, v in given.items() if v is not None), None)
        if flag is not None:
            fail_input(f"{flag} does not apply to --delivery (a consumer group's delivery check)")
    consistency = consistency or KAFKA
    start_value = parse_initial(initial)
    if report_dir is not None and os.path.exists(report_dir) and not os.path.isdir(report_dir):
        fail_input(f"--report {report_dir}: exists and is not a directory")
    if output_dir is not None and os.path.exists(output_dir) and not os.path.isdir(output_dir):
        fail_input(f"--output {output_dir}: exists and is not a directory")
    if master is not None and (problem := master_problem(master)) is not None:
        fail_input(problem)
    if (problem := memory_problem(driver_memory)) is not None:
        fail_input(problem)
    settings = []
    for item in spark_conf:
        name, equals, value = item.partition("=")
        if not equals or not name.strip():
            fail_input(f"--spark-conf {item!r}: expected KEY=VALUE, e.g. spark.executor.memory=4g")
        settings.append((name.strip(), value))
    spark_flags = {
        "--master": master,
        "--partitions": partitions,
        "--max-key-ops": max_key_ops,
        "--whole-files/--no-whole-files": whole_files,
        "--spark-conf": spark_conf or None,
    }
    if engine == "auto":
        if master is not None:
            engine, why = "spark", f"--master {master}"
        else:
            engine, why = choose_engine(paths)
        click.echo(f"engine: {engine} ({why})", err=True)
    if engine == "local":
        given = [flag for flag, value in spark_flags.items() if value is not None]
        if given:
            fail_input(f"{given[0]} applies to --engine spark, not to the local engine")
    else:
        if report_dir is not None:
            fail_input("--report draws keys from the local engine: use --engine local")
        if not _has_java():
            fail_input("--engine spark needs Java 17+ (scripts/check-java says how to get it)")
        if delivery is not None:
            unsupported = {"--output": output_dir, "--partitions": partitions}
            unsupported["--max-key-ops"] = max_key_ops
            unsupported["--whole-files/--no-whole-files"] = whole_files
            flag = next((f for f, v in unsupported.items() if v is not None), None)
            if flag is not None:
                fail_input(f"{flag} does not apply to --delivery on Spark yet")
            _verify_spark_delivery(
                paths,
                delivery,
                fmt=fmt,
                master=master,
                log_level=spark_log_level,
                driver_memory=driver_memory,
                spark_conf=settings,
                verbose=verbose,
                as_json=as_json,
            )
        _verify_spark(
            paths,
            model=model,
            initial=initial,
            fmt=fmt,
            timeout=timeout,
            master=master,
            partitions=partitions,
            output_dir=output_dir,
            log_level=spark_log_level,
            max_key_ops=max_key_ops,
            whole_files=whole_files is not False,
            driver_memory=driver_memory,
            spark_conf=settings,
            consistency=consistency,
            verbose=verbose,
            as_json=as_json,
        )
        return
    started = time.perf_counter()
    results = []
    inputs = local_paths(paths, quiet=as_json)
    checked = verify_paths(
        [path for path, problem in inputs if problem is None and delivery is None],
        model=model,
        fmt=fmt,
        initial=start_value,
        timeout=timeout,
        report_dir=report_dir,
        consistency=consistency,
    )
    for path, problem in inputs:
        if problem is not None:
            result = InputResult.unchecked(path, problem, format=fmt, model=model)
        elif delivery is not None:
            # imported here: only --delivery needs the consumer-group checker
            from jepsen_py.checker.delivery_engine import verify_delivery_path

            result = verify_delivery_path(path, delivery, fmt)
        else:
            result = next(checked)  # in the order of the inputs
        results.append(result)
        if not as_json:
            _print_human(result)
    code = exit_code(results)
    if output_dir is not None:
        from jepsen_py.checker.spark.output import rows_from_inputs, write_local

        figures = {**summary(results, "local"), "seconds": round(time.perf_counter() - started, 3)}
        write_local(output_dir, rows_from_inputs(results), figures)
    if as_json:
        emit_json(
            {
                "inputs": [r.to_json() for r in results],
                "totals": totals(results),
                "exit_code": code,
                "engine": "local",
            }
        )
    raise SystemExit(code)


def _verify_spark_delivery(
    paths: tuple[str, ...],
    delivery: str,
    *,
    fmt: str | None,
    master: str | None,
    log_level: str,
    driver_memory: str,
    spark_conf: list[tuple[str, str]],
    verbose: bool,
    as_json: bool,
) -> None:
    """``--delivery`` on Spark (`jepsen_py.checker.spark.delivery`): the local engine's
    results and verdicts, printed the same way."""
    from jepsen_py.checker.spark.delivery import verify_delivery_spark
    from jepsen_py.checker.spark.session import SessionOptions, spark_reason

    session = SessionOptions(
        master=master,
        log_level=log_level.upper(),
        driver_memory=driver_memory,
        extra_conf=tuple(spark_conf),
        verbose=verbose,
    )
    try:
        results, figures = verify_delivery_spark(
            paths,
            delivery,
            fmt=fmt,
            session=session,
            say=lambda m: click.echo(f"spark: {m}", err=True),
        )
    except Exception as exc:  # Spark failed as a whole: say so, in one line, and exit 2
        if verbose:
            import traceback

            traceback.print_exc()
        fail_input(f"Spark failed on {', '.join(paths[:3])}: {spark_reason(exc)}")
    code = exit_code(results)
    if not as_json:
        for result in results:
            _print_human(result)
    click.echo(
        f"spark {figures.get('master')}: {figures['ops']} ops in {figures['keys']} keys, "
        f"{figures['seconds']:.1f} s",
        err=True,
    )
    if as_json:
        emit_json(
            {
                "inputs": [r.to_json() for r in results],
                "totals": totals(results),
                "exit_code": code,
                "engine": "spark",
                "spark": figures,
            }
        )
    sys.stdout.flush()
    raise SystemExit(code)


def _verify_spark(
    paths: tuple[str, ...],
    *,
    model: str | None,
    initial: str | None,
    fmt: str | None,
    timeout: float | None,
    master: str | None,
    partitions: int | None,
    output_dir: str | None,
    log_level: str,
    max_key_ops: int | None,
    whole_files: bool,
    driver_memory: str,
    spark_conf: list[tuple[str, str]],
    consistency: str,
    verbose: bool,
    as_json: bool,
) -> None:
    from jepsen_py.checker.spark import SessionOptions, SparkOptions, verify_spark
    from jepsen_py.checker.spark.job import DEFAULT_MAX_KEY_OPS
    from jepsen_py.checker.spark.session import spark_reason

    initial_json = None
    if initial is not None:
        initial_json = orjson.dumps(parse_initial(initial)).decode()
    options = SparkOptions(
        model=model,
        initial=initial_json,
        fmt=fmt,
        timeout=timeout,
        partitions=partitions,
        max_key_ops=DEFAULT_MAX_KEY_OPS if max_key_ops is None else max_key_ops,
        whole_files=whole_files,
        output=output_dir,
        consistency=consistency,
        verbose=verbose,
        session=SessionOptions(
            master=master,
            log_level=log_level.upper(),
            driver_memory=driver_memory,
            extra_conf=tuple(spark_conf),
            verbose=verbose,
        ),
    )

    def say(message: str) -> None:
        click.echo(f"spark: {message}", err=True)

    try:
        report = verify_spark(paths, options, say=say)
    except Exception as exc:  # Spark failed as a whole: say so, in one line, and exit 2
        if verbose:
            import traceback

            traceback.print_exc()
        inputs = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        hint = "" if verbose else " (--verbose shows Spark's traces)"
        fail_input(f"Spark failed on {inputs}: {spark_reason(exc)}{hint}")
    results = report.inputs
    code = exit_code(results)
    if not as_json:
        if sum(len(r.keys) for r in results) <= _KEYS_SHOWN:
            for result in results:
                _print_human(result)
        else:
            _print_spark_summary(results, report.figures)
        if output_dir is not None:
            click.echo(f"verdict table: {output_dir.rstrip('/')}/verdicts.parquet (and .json)")
    click.echo(_figures_line(report.figures), err=True)
    if as_json:
        emit_json(
            {
                "inputs": [r.to_json() for r in results],
                "totals": totals(results),
                "exit_code": code,
                "engine": "spark",
                "spark": report.figures,
            }
        )
    sys.stdout.flush()
    raise SystemExit(code)
