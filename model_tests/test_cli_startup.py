"""``kmodel`` starts without importing what the subcommand does not use.

Each check runs in a fresh interpreter and inspects ``sys.modules`` at exit: a module
imported once by this test session would otherwise hide an import. These tests assert which
modules are loaded, never how long anything takes (benchmarks/cli_startup.py times it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from jepsen_py.cli import COMMANDS, load_command, main
from model_tests.shared_corpora import PORCUPINE, needs_porcupine

REPO = Path(__file__).resolve().parents[1]
SMALL = REPO / "model_tests" / "corpora" / "jepsen-kafka" / "duplicate-basic.jsonl"
HEAVY = ("pyspark", "py4j", "z3", "matplotlib", "hypothesis", "numpy")
"""Dependencies that cost a tenth of a second or more each, none needed to list commands or
to verify a small history with the local engine."""

_PROBE = """
import atexit, sys
def _report():
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
    sys.stderr.write("LOADED=" + ",".join(loaded) + "\\n")
atexit.register(_report)
"""


def _loaded_after(code: str) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    """Run ``code`` in a fresh interpreter; the heavy modules it had loaded at exit."""
    program = f"HEAVY = {HEAVY!r}\n{_PROBE}\n{code}\n"
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    for line in done.stderr.splitlines():
        if line.startswith("LOADED="):
            return [name for name in line.removeprefix("LOADED=").split(",") if name], done
    raise AssertionError(f"the probe did not report; stderr: {done.stderr[-2000:]}")


def _cli(*args: str) -> str:
    argv = ["kmodel", *args]
    return f"import sys\nsys.argv = {argv!r}\nfrom jepsen_py.cli import main\nmain()"


def test_importing_the_cli_loads_no_heavy_dependency() -> None:
    loaded, done = _loaded_after("import jepsen_py.cli")
    assert done.returncode == 0, done.stderr
    assert loaded == []


def test_help_loads_no_heavy_dependency_and_no_subcommand() -> None:
    code = _cli("--help") + "\n"
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('SUB=' + ','.join(sorted("
        "m for m in sys.modules if m.startswith('jepsen_py.cli.'))) + '\\n'))\n"
    )
    loaded, done = _loaded_after(probe + code)
    assert done.returncode == 0, done.stderr
    assert loaded == []
    (sub,) = [line for line in done.stderr.splitlines() if line.startswith("SUB=")]
    assert sub == "SUB=", f"--help imported subcommand modules: {sub}"
    for name in COMMANDS:
        assert f"  {name} " in done.stdout


def test_verify_of_a_small_history_loads_no_heavy_dependency() -> None:
    loaded, done = _loaded_after(_cli("verify", str(SMALL)))
    assert done.returncode in (0, 1), done.stderr
    assert "engine: local" in done.stderr
    assert loaded == []


LOG_ONLY = (
    "jepsen_py.checker.anomalies",
    "jepsen_py.checker.kafka_log",
    "jepsen_py.checker.verdict",
)
"""The Kafka-log checker: what only a Kafka history needs checked."""
LATER = ("multiprocessing", "shutil", "jepsen_py.checker.spark.session")
"""Forked workers (big inputs), the search for Java and Spark's session (the Spark engine)."""


def _modules_after(code: str, names: tuple[str, ...]) -> tuple[list[str], str]:
    """Which of ``names`` a fresh interpreter running ``code`` had imported at exit."""
    probe = (
        "import atexit, sys\n"
        f"_NAMES = {names!r}\n"
        "atexit.register(lambda: sys.stderr.write("
        "'MODS=' + ','.join(sorted(set(_NAMES) & set(sys.modules))) + '\\n'))\n"
    )
    _, done = _loaded_after(probe + code)
    assert done.returncode in (0, 1), done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("MODS=")]
    return [name for name in line.removeprefix("MODS=").split(",") if name], done.stderr


def _register_history(tmp_path: Path) -> Path:
    ops = [
        (0, "invoke", "write", 1),
        (0, "ok", "write", 1),
        (1, "invoke", "read", None),
        (1, "ok", "read", 1),
    ]
    lines = [
        json.dumps({"process": p, "type": t, "f": f, "value": v, "key": "r"}) for p, t, f, v in ops
    ]
    path = tmp_path / "register.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_verify_of_a_register_history_loads_neither_the_log_checker_nor_workers(
    tmp_path: Path,
) -> None:
    """A register (or key-value) history is checked by the WGL search alone: the Kafka-log
    checker, multiprocessing (forked workers check big inputs only), shutil (the search for
    Java) and Spark's session stay unimported."""
    path = _register_history(tmp_path)
    args = ("verify", "--engine", "local", "--model", "cas-register", str(path))
    loaded, stderr = _modules_after(_cli(*args), LOG_ONLY + LATER)
    assert loaded == [], stderr


@needs_porcupine
def test_verify_of_porcupine_logs_loads_no_other_reader() -> None:
    """Porcupine's etcd and kv logs are read by their own readers: the EDN and JSONL
    readers stay unimported (the kv reader hands a line of another layout to the EDN one)."""
    others = ("jepsen_py.history.edn", "jepsen_py.history.jsonl", "jepsen_py.history.parquet")
    for fmt, model, folder in (
        ("porcupine-etcd", "cas-register", "jepsen"),
        ("porcupine-kv", "kv", "kv"),
    ):
        args = ("verify", "--engine", "local", "--format", fmt, "--model", model)
        loaded, stderr = _modules_after(_cli(*args, str(PORCUPINE / folder)), others)
        assert loaded == [], stderr


def test_verify_of_a_kafka_history_loads_the_log_checker() -> None:
    """The probe above is not blind: a Kafka history does load the log checker."""
    loaded, stderr = _modules_after(_cli("verify", "--engine", "local", str(SMALL)), LOG_ONLY)
    assert loaded == sorted(LOG_ONLY), stderr


@needs_porcupine
def test_auto_checks_the_porcupine_corpus_locally_without_starting_spark() -> None:
    """Porcupine's 102 etcd logs (660 KB): ``--engine auto`` takes the local engine and
    never imports pyspark (so never starts a JVM), and the verdicts are all there."""
    args = ["--format", "porcupine-etcd", "--model", "cas-register", "--json"]
    loaded, done = _loaded_after(_cli("verify", *args, str(PORCUPINE / "jepsen")))
    assert done.returncode == 1, done.stderr  # 79 of the 102 logs are not linearizable
    assert "engine: local (102 file(s)" in done.stderr
    assert "pyspark" not in loaded and "py4j" not in loaded
    assert '"engine":"local"' in done.stdout.splitlines()[-1]


def test_the_probe_sees_a_heavy_import() -> None:
    """The probe is not blind: a process that imports numpy is reported as such."""
    loaded, _ = _loaded_after("import numpy")
    assert loaded == ["numpy"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_listed_short_help_is_the_commands_own(name: str) -> None:
    """``kmodel --help`` shows each command's help from `COMMANDS` without importing it:
    that text must stay the command's own first sentence."""
    command = load_command(name)
    assert command.name == name
    limit = 10_000
    assert COMMANDS[name].listed_help(limit) == command.get_short_help_str(limit)
    assert COMMANDS[name].listed_help(45) == command.get_short_help_str(45)


def test_every_subcommand_runs_through_the_lazy_group() -> None:
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        assert main.get_command(ctx, name) is load_command(name)
    assert main.get_command(ctx, "no-such-command") is None


def test_the_console_entry_freezes_the_heap_as_the_process_ends() -> None:
    """``main()`` (the console script) ends with `gc.freeze`, so the interpreter's last
    collections skip what the command made; click's test runner, which calls ``main.main``
    in a process that goes on, leaves the collector as it was."""
    probe = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: sys.stderr.write(f'FROZEN={gc.get_freeze_count()}\\n'))\n"
    )
    for code, frozen in (
        (_cli("verify", "--engine", "local", str(SMALL)), True),
        (
            "from click.testing import CliRunner\nfrom jepsen_py.cli import main\n"
            f"CliRunner().invoke(main, ['verify', '--engine', 'local', {str(SMALL)!r}])",
            False,
        ),
    ):
        _, done = _loaded_after(probe + code)
        (line,) = [line for line in done.stderr.splitlines() if line.startswith("FROZEN=")]
        assert (int(line.removeprefix("FROZEN=")) > 0) is frozen, done.stderr
