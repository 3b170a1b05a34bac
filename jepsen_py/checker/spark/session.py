"""The SparkSession of ``kmodel verify --engine spark``: where it runs, how quiet it is, and
how it survives a failed task.

- Master: ``local[*]`` by default (every core of this machine: the embedded default),
  written ``local[*,4]`` so that a failed task is retried up to 4 times as it
  would be on a cluster (plain ``local[N]`` never retries). ``--master`` takes any Spark
  master URL (``spark://host:7077``, ``yarn``, ``k8s://...``); there the cluster's own
  ``spark.task.maxFailures`` (4 by default) applies.
- Noise: the JVM logs through a log4j2 configuration written for this session (root level
  ``--spark-log-level``, default ERROR, to stderr), so Spark's start-up chatter ("Using
  Spark's default log4j profile", "Setting default log level", the native-hadoop warning)
  never reaches the terminal; the JVM's own stderr passes through a filter that drops the
  few lines no logger controls (the incubator-module warning of Java 17+, the shell's
  "Setting default log level" notice).
- Progress: Spark's own console progress bar (stage, tasks done / total) on stderr when
  stderr is a terminal; ``--json`` output on stdout is never mixed with it.
- Failure to start: the JVM's own words (spark-submit's error, Java's) are kept as they
  pass through the filter, and `SparkStartError` carries the last of them: a bad
  ``--master`` says what Spark says about it, not just that the gateway exited.
- Python workers run the interpreter of this process (``spark.pyspark.python``), so they
  import the same ``jepsen_py``; a cluster gets the package shipped with ``addPyFile``
  (`ship_package`), or through ``spark-submit --py-files`` (docs/spark.md).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

import jepsen_py
from jepsen_py.history.validate import clip

if TYPE_CHECKING:
    import threading

    from pyspark.sql import SparkSession

# tempfile, threading and zipfile are imported where Spark starts; the flag checks every
# `kmodel verify` makes, Spark or not (master_problem, memory_problem), live in `flags`

LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")


class SparkStartError(RuntimeError):
    """Spark did not start; the message is Spark's (or Java's) own reason."""


DEFAULT_MASTER = "local[*]"
LOCAL_RETRIES = 4
"""Attempts per task in local mode (Spark's cluster default for ``spark.task.maxFailures``)."""


@attrs.frozen
class SessionOptions:
    """How to start Spark; every field has the CLI's default."""

    master: str | None = None
    """None: ``local[*]``, or under ``spark-submit`` the master it was given."""
    log_level: str = "ERROR"
    driver_memory: str = "2g"
    shuffle_partitions: int | None = None
    progress: bool | None = None
    """None: a progress bar when stderr is a terminal."""
    app_name: str = "kmodel-verify"
    extra_conf: tuple[tuple[str, str], ...] = ()
    verbose: bool = False
    """Spark's log with its exceptions' traces, and the loggers that report task and
    start-up failures (which otherwise come back as one line: `SparkStartError`, the
    job's error)."""


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def effective_master(master: str) -> str:
    """``local[N]`` and ``local[*]`` gain a retry count (``local[N,4]``): Spark's local mode
    otherwise fails the job at the first failed task."""
    if master == "local":
        return f"local[1,{LOCAL_RETRIES}]"
    if master.startswith("local[") and master.endswith("]") and "," not in master:
        return f"{master[:-1]},{LOCAL_RETRIES}]"
    return master


_LOG4J = """\
status = error
name = kmodel
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark %p %c{{1}}: %m%n{traces}
rootLogger.level = {level}
rootLogger.appenderRef.stdout.ref = console
logger.hadoop.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop.level = error
logger.shutdown.name = org.apache.spark.util.ShutdownHookManager
logger.shutdown.level = off
logger.blockmanager.name = org.apache.spark.storage.BlockManager
logger.blockmanager.level = error
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = {level}
{quiet}"""

_QUIET = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.scheduler.TaskSchedulerImpl",
    "org.apache.spark.SparkContext",
    "org.apache.spark.api.python.PythonRunner",
    "org.apache.spark.util.Utils",
)
"""Loggers whose errors this program reports itself, in one line (unless verbose)."""


def _log4j_file(level: str, verbose: bool = False) -> str:
    import tempfile

    folder = Path(tempfile.gettempdir()) / "kmodel-spark"
    folder.mkdir(exist_ok=True)
    target = folder / f"log4j2-{level.lower()}{'-verbose' if verbose else ''}.properties"
    quiet = (
        ""
        if verbose
        else "".join(
            f"logger.q{i}.name = {name}\nlogger.q{i}.level = off\n" for i, name in enumerate(_QUIET)
        )
    )
    text = _LOG4J.format(level=level.lower(), traces="%ex" if verbose else "", quiet=quiet)
    if not target.exists() or target.read_text() != text:
        scratch = target.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(text)
        scratch.replace(target)
    return str(target)


def start(options: SessionOptions) -> SparkSession:
    """Start (or join) the SparkSession ``options`` describe."""
    level = options.log_level.upper()
    if level not in LOG_LEVELS:
        raise ValueError(f"unknown Spark log level {options.log_level!r}: one of {LOG_LEVELS}")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    progress = options.progress
    if progress is None:
        progress = sys.stderr.isatty()
    log4j = _log4j_file(level, options.verbose)
    java_options = f"-Dlog4j2.configurationFile=file:{log4j} -Dlog4j.configurationFile=file:{log4j}"
    # under spark-submit the JVM exists: its --master and driver settings stand
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    master = options.master or (None if submitted else DEFAULT_MASTER)
    settings = {
        "spark.app.name": options.app_name,
        "spark.ui.showConsoleProgress": "true" if progress else "false",
        "spark.ui.enabled": "false",
        "spark.pyspark.python": sys.executable,
        "spark.sql.execution.pythonUDF.arrow.enabled": "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.python.worker.reuse": "true",
    }
    if master is not None:
        settings["spark.master"] = effective_master(master)
    if not submitted:
        settings["spark.driver.memory"] = options.driver_memory
        settings["spark.driver.extraJavaOptions"] = java_options
    if master is not None and is_local(master) and not submitted:
        # executors live in this JVM; a cluster's executors keep their own log4j setup
        settings["spark.executor.extraJavaOptions"] = java_options
    if options.shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(options.shuffle_partitions)
    settings.update(dict(options.extra_conf))
    _launch_quietly(settings, verbose=options.verbose)
    builder = SparkSession.builder
    for name, value in settings.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(level)
    return spark


_NOISE = (
    b"WARNING: Using incubator modules",
    b'Setting default log level to "',  # Spark's shell notice; --spark-log-level rules
    b"To adjust logging level use sc.setLogLevel(",
)


def _launch_quietly(settings: dict[str, str], *, verbose: bool = False) -> None:
    """Start the JVM ourselves, its stderr piped through `_forward`, when this process has
    no JVM yet (under ``spark-submit`` the JVM exists and its output is spark-submit's).
    Until Spark is up, the JVM's words are kept, not shown (unless ``verbose``): if it
    fails to start, `SparkStartError` says why in one line."""
    from pyspark import SparkConf, SparkContext

    if (
        SparkContext._active_spark_context is not None
        or SparkContext._gateway is not None  # a JVM from an earlier session: reused
        or "PYSPARK_GATEWAY_PORT" in os.environ
    ):
        return
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf()
    for name, value in settings.items():
        conf.set(name, value)
    # our own pipe, read from before the JVM starts: if it dies at once, its last words
    # are here to say why
    import threading

    read_end, write_end = os.pipe()
    said: list[bytes] = []
    live = threading.Event()
    if verbose:
        live.set()
    reader = threading.Thread(target=_forward, args=(read_end, said, live), daemon=True)
    reader.start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})
    except Exception as exc:
        os.close(write_end)
        reader.join(timeout=2.0)
        raise SparkStartError(jvm_reason(said) or spark_reason(exc)) from exc
    os.close(write_end)
    try:
        SparkContext(conf=conf, gateway=gateway)
    except Exception as exc:
        raise SparkStartError(spark_reason(exc)) from exc
    live.set()


def jvm_reason(said: list[bytes]) -> str | None:
    """The JVM's error among its last lines: spark-submit's ``Error: ...``, an exception's
    message, else its last line."""
    lines = [raw.decode("utf-8", "replace").strip() for raw in said[-40:]]
    lines = [line for line in lines if line and not line.startswith("at ")]
    for line in lines:
        if line.startswith(("Error:", "Exception in thread")) or "Exception:" in line:
            return clip(_THREAD.sub("", line))
    return clip(lines[-1]) if lines else None


_THREAD = re.compile(r'^Exception in thread "[^"]*" ')
_FAILURE = re.compile(r"^(Caused by: )?([\w$]+\.)*[\w$]*(Error|Exception)(: .*)?$|^\[[A-Z_.]+\] .*")
_WRAPPERS = (
    "py4j.protocol.Py4JJavaError",
    "Py4JJavaError",
    "An error occurred while calling",
    "org.apache.spark.SparkException: Job aborted",
    "pyspark.errors.exceptions",
)


def spark_reason(exc: BaseException) -> str:
    """Spark's own reason for a failure, in one line, cut to a few hundred characters:
    the root cause (the last ``Caused by:``, or the last ``...Error: ...`` line: a Python
    worker's error comes last in a Java trace), else the first line."""
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = [line for line in lines if _FAILURE.match(line) and not line.startswith("at ")]
    specific = [line for line in found if not line.startswith(_WRAPPERS)]
    causes = [line for line in specific if line.startswith("Caused by: ")]
    pick = (causes or specific or found or lines or [type(exc).__name__])[-1]
    return clip(_THREAD.sub("", pick.removeprefix("Caused by: ")))


def _forward(fd: int, said: list[bytes], live: threading.Event) -> None:
    """Copy the JVM's stderr (file descriptor ``fd``) to ours once ``live`` is set, without
    the `_NOISE` lines, and keep its last lines in ``said``. Progress bars end their
    segments with a carriage return: segments are forwarded as soon as they end."""
    out = sys.stderr.buffer if hasattr(sys.stderr, "buffer") else None
    pending = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            if pending:
                said.append(pending)
            os.close(fd)
            return
        pending += chunk
        cut = max(pending.rfind(b"\n"), pending.rfind(b"\r")) + 1
        if not cut:
            continue
        ready, pending = pending[:cut], pending[cut:]
        segments = [s for s in ready.splitlines(keepends=True) if not s.startswith(_NOISE)]
        said.extend(segments)
        del said[:-100]
        kept = b"".join(segments)
        if kept and out is not None and live.is_set():
            try:
                out.write(kept)
                out.flush()
            except (OSError, ValueError):
                return


def ship_package(spark: SparkSession) -> str | None:
    """Zip ``jepsen_py`` and add it to the job (``SparkContext.addPyFile``), so executors of a
    cluster import the checker without an install. Returns the zip's path (None in local
    mode: the workers already import this process's package)."""
    if is_local(spark.sparkContext.master or DEFAULT_MASTER):
        return None
    import tempfile
    import zipfile

    root = Path(jepsen_py.__file__).resolve().parent
    folder = Path(tempfile.mkdtemp(prefix="kmodel-pyfiles-"))
    target = folder / "jepsen_py.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*.py")):
            archive.write(path, Path("jepsen_py") / path.relative_to(root))
    spark.sparkContext.addPyFile(str(target))
    return str(target)
