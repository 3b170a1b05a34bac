"""Wall time of the linearizability checker on Porcupine's public test histories.

Prints one JSON line: seconds to check all 102 etcd histories (and the slowest one), and
each key-value history (c01/c10/c50, ok/bad), measured with ``time.perf_counter``. As in
Porcupine's own benchmarks, parsing is outside the timed check (``*_seconds``); the time
with parsing and validation is reported beside it (``*_with_parsing``). Every verdict is
checked against the corpus README; a wrong one fails the run.

Each figure is the best of ``--repeat`` runs (default 3), to shed noise from other
work on the machine; the load average is printed with them.

Whole processes, side by side (the runs alternate, so both sides see the same load):

- ``whole_etcd_seconds`` / ``whole_kv_seconds``: ``kmodel verify --engine local`` of the
  102 etcd logs (``--format porcupine-etcd --model cas-register``) and of the 6 kv
  histories (``--format porcupine-kv --model kv``): interpreter, imports, reading, checking;
- with ``--baseline DIR`` (another checkout of this project, say the commit before a
  change), the same two commands run from it: ``baseline_whole_*_seconds``;
- when ``PORCUPINE_DIR`` names a checkout of anishathalye/porcupine and ``go`` is on the
  PATH: Porcupine's own tests of the same histories, as a compiled test binary (built once
  with ``go test -c``; ``-test.run '^TestEtcdJepsen'`` and the six partitioned kv tests),
  ``porcupine_*_seconds``, and our time over Porcupine's (``*_ratio_to_porcupine``).

Reference (the corpus README): Porcupine (Go) ~1.5 s for the 102 etcd histories (slowest
~0.5 s, etcd_002), 0.6 s for c50-ok, 0.15 s for c50-bad, on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from jepsen_py.checker.model import operations
from jepsen_py.checker.models import CasRegisterModel, KeyValueModel
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.wgl import check_operations
from jepsen_py.history import FORMATS, Rejections, validate

CORPUS = Path(
    os.environ.get(
        "PORCUPINE_CORPUS",
        Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora" / "porcupine",
    )
)
"""Porcupine's test histories: ``../shared/corpora/porcupine`` beside the repository, or
``PORCUPINE_CORPUS``."""


REPO = Path(__file__).resolve().parents[1]
RUN_CLI = "import sys; from jepsen_py.cli import main; sys.argv[0] = 'kmodel'; main()"
SETS = {
    "etcd": (["--format", "porcupine-etcd", "--model", "cas-register"], "jepsen"),
    "kv": (["--format", "porcupine-kv", "--model", "kv"], "kv"),
}
PORCUPINE_TESTS = {
    "etcd": "^TestEtcdJepsen",
    "kv": "^TestKv(1Client|10Clients|50Clients)(Ok|Bad)$",
}


CPU: dict[str, float] = {}
"""The CPU seconds (user + system) of the last process `_wall` ran, by figure name."""


def _wall(command: list[str], **kwargs) -> tuple[float, subprocess.CompletedProcess[str]]:  # type: ignore[no-untyped-def]
    """Wall seconds of ``command``; its CPU seconds go to ``CPU["last"]``. On a loaded
    machine the wall time mostly measures the wait for a core, the CPU time much less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["last"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, done


def whole_kmodel(checkout: Path, name: str, bytecode: Path) -> float:
    """Seconds of ``kmodel verify --engine local`` of one set, run from ``checkout``, with
    its modules' bytecode cached under ``bytecode`` (as an installed package has it: without
    the cache every run would compile the sources again)."""
    flags, folder = SETS[name]
    command = [sys.executable, "-c", RUN_CLI, "verify", "--engine", "local", "--json", *flags]
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONPYCACHEPREFIX": str(bytecode)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    seconds, done = _wall([*command, str(CORPUS / folder)], env=env, cwd=tempfile.gettempdir())
    if done.returncode != 1:  # each set has illegal histories
        raise SystemExit(f"kmodel verify of {name} from {checkout}: exit {done.returncode}")
    return seconds


def build_porcupine(checkout: Path, into: Path) -> Path | None:
    """Porcupine's tests compiled once (``go test -c``), or None without Go."""
    if shutil.which("go") is None:
        return None
    binary = into / "porcupine.test"
    done = subprocess.run(
        ["go", "test", "-c", "-o", str(binary), "."], cwd=checkout, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"go test -c in {checkout} failed: {done.stderr[-1000:]}")
    return binary


def whole_porcupine(binary: Path, checkout: Path, name: str) -> float:
    seconds, done = _wall([str(binary), "-test.run", PORCUPINE_TESTS[name]], cwd=checkout)
    if done.returncode != 0 or "PASS" not in done.stdout:
        raise SystemExit(f"Porcupine's {name} tests failed: {done.stdout[-1000:]}")
    return seconds


def side_by_side(repeat: int, baseline: Path | None, sets: list[str]) -> dict[str, float | str]:
    """Whole processes, alternating: ours, the baseline's, Porcupine's, per set."""
    figures: dict[str, float | str] = {}
    porcupine_dir = os.environ.get("PORCUPINE_DIR")
    with tempfile.TemporaryDirectory() as scratch:
        binary = None
        if porcupine_dir:
            binary = build_porcupine(Path(porcupine_dir), Path(scratch))
        best: dict[str, float] = {}
        ours, theirs = Path(scratch) / "ours", Path(scratch) / "baseline"
        for name in sets:  # one unmeasured run each: the bytecode caches fill
            whole_kmodel(REPO, name, ours)
            if baseline is not None:
                whole_kmodel(baseline, name, theirs)
        for _ in range(repeat):
            for name in sets:
                runs = {f"whole_{name}_seconds": lambda n=name: whole_kmodel(REPO, n, ours)}
                if baseline is not None:
                    runs[f"baseline_whole_{name}_seconds"] = lambda n=name: whole_kmodel(
                        baseline, n, theirs
                    )
                if binary is not None and porcupine_dir:
                    runs[f"porcupine_{name}_seconds"] = lambda n=name: whole_porcupine(
                        binary, Path(porcupine_dir), n
                    )
                for figure, run in runs.items():
                    best[figure] = min(best.get(figure, float("inf")), run())
                    cpu = figure.replace("_seconds", "_cpu_seconds")
                    best[cpu] = min(best.get(cpu, float("inf")), CPU["last"])
    figures.update({k: round(v, 3) for k, v in best.items()})
    for name in sets:
        if f"porcupine_{name}_seconds" in best:
            ratio = best[f"whole_{name}_seconds"] / best[f"porcupine_{name}_seconds"]
            figures[f"{name}_ratio_to_porcupine"] = round(ratio, 2)
            ratio = best[f"whole_{name}_cpu_seconds"] / best[f"porcupine_{name}_cpu_seconds"]
            figures[f"{name}_cpu_ratio_to_porcupine"] = round(ratio, 2)
        if f"baseline_whole_{name}_seconds" in best:
            ratio = best[f"baseline_whole_{name}_seconds"] / best[f"whole_{name}_seconds"]
            figures[f"{name}_speedup_over_baseline"] = round(ratio, 2)
    if not porcupine_dir:
        figures["porcupine"] = "not run: set PORCUPINE_DIR to a checkout (and install Go)"
    elif shutil.which("go") is None:
        figures["porcupine"] = "not run: no go on the PATH"
    return figures


def _load(path: Path, fmt: str, model):  # type: ignore[no-untyped-def]
    spec = FORMATS[fmt]
    rejections = Rejections(str(path))
    ops = operations(validate(spec.read(path, rejections), rejections), model, spec.conventions)
    if rejections.items:
        raise SystemExit(f"{path}: rejected lines: {rejections.items[:3]}")
    return ops


def _etcd_expected() -> dict[str, Verdict]:
    text = (CORPUS / "README.md").read_text()
    listed = re.search(r"Verdicts: linearizable — ([\d,\s]+)\.", text)
    if listed is None:
        raise SystemExit("cannot find the etcd verdicts in the corpus README")
    ok = {int(n) for n in re.findall(r"\d+", listed.group(1))}
    return {
        p.name: Verdict.OK if int(p.stem.split("_")[1]) in ok else Verdict.ILLEGAL
        for p in sorted((CORPUS / "jepsen").glob("etcd_*.log"))
    }


def _timed(fn):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def run_once() -> dict[str, float | str]:
    figures: dict[str, float | str] = {}
    register = CasRegisterModel()
    check_total = parse_total = 0.0
    slowest = (0.0, "")
    for name, expected in _etcd_expected().items():
        path = CORPUS / "jepsen" / name
        parse_s, ops = _timed(lambda path=path: _load(path, "porcupine-etcd", register))
        check_s, result = _timed(lambda ops=ops: check_operations(register, ops))
        if result.verdict is not expected:
            raise SystemExit(f"{name}: {result.verdict.value}, expected {expected.value}")
        check_total += check_s
        parse_total += parse_s
        slowest = max(slowest, (check_s, name))
    figures["etcd_102_seconds"] = check_total
    figures["etcd_102_with_parsing"] = check_total + parse_total
    figures["etcd_slowest_seconds"] = slowest[0]
    figures["etcd_slowest_file"] = slowest[1]
    kv = KeyValueModel()
    for size in ("c01", "c10", "c50"):
        for kind in ("ok", "bad"):
            path = CORPUS / "kv" / f"{size}-{kind}.txt"
            parse_s, ops = _timed(lambda path=path: _load(path, "porcupine-kv", kv))
            check_s, result = _timed(lambda ops=ops: check_operations(kv, ops))
            expected = Verdict.OK if kind == "ok" else Verdict.ILLEGAL
            if result.verdict is not expected:
                raise SystemExit(f"{path.name}: {result.verdict.value}, expected {expected.value}")
            figures[f"kv_{size}_{kind}_seconds"] = check_s
            figures[f"kv_{size}_{kind}_with_parsing"] = check_s + parse_s
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs; the best is reported")
    parser.add_argument(
        "--baseline", type=Path, default=None, help="another checkout to time side by side"
    )
    parser.add_argument("--whole-only", action="store_true", help="only the whole-process figures")
    parser.add_argument(
        "--sets",
        default=",".join(SETS),
        help=f"the corpus sets of the whole-process figures, comma-separated (default: "
        f"{','.join(SETS)})",
    )
    args = parser.parse_args()
    if not (CORPUS / "README.md").exists():
        raise SystemExit(f"no corpus at {CORPUS}; set PORCUPINE_CORPUS")
    load_before = round(os.getloadavg()[0], 2)
    best: dict[str, float | str | int | list[float] | bool] = {}
    if not args.whole_only:
        runs = [run_once() for _ in range(max(args.repeat, 1))]
        for name, value in runs[0].items():
            if isinstance(value, float):
                best[name] = round(min(float(r[name]) for r in runs), 4)
            else:
                best[name] = value
        best["all_verdicts_match_readme"] = True
    sets = [name for name in args.sets.split(",") if name]
    unknown = sorted(set(sets) - set(SETS))
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)}: choose among {', '.join(SETS)}")
    best.update(side_by_side(max(args.repeat, 1), args.baseline, sets))
    best["runs"] = max(args.repeat, 1)
    best["loadavg_1min_before"] = load_before
    best["loadavg_1min"] = round(os.getloadavg()[0], 2)
    best["cpus"] = os.cpu_count() or 0
    best["python"] = sys.version.split()[0]
    print(orjson.dumps(best).decode())


if __name__ == "__main__":
    main()
