"""Wall time of the linearizability checker on Porcupine's public test histories.

Prints one JSON line: seconds to check all 102 etcd histories (and the slowest one), and
each key-value history (c01/c10/c50, ok/bad), measured with ``time.perf_counter``. As in
Porcupine's own benchmarks, parsing is outside the timed check (``*_seconds``); the time
with parsing and validation is reported beside it (``*_with_parsing``). Every verdict is
checked against the corpus README; a wrong one fails the run.

Each figure is the best of ``--repeat`` runs (default 3), to shed noise from other
work on the machine; the load average is printed with them.

Reference (the corpus README): Porcupine (Go) ~1.5 s for the 102 etcd histories (slowest
~0.5 s, etcd_002), 0.6 s for c50-ok, 0.15 s for c50-bad, on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
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
    args = parser.parse_args()
    if not (CORPUS / "README.md").exists():
        raise SystemExit(f"no corpus at {CORPUS}; set PORCUPINE_CORPUS")
    runs = [run_once() for _ in range(max(args.repeat, 1))]
    best: dict[str, float | str | int | list[float]] = {}
    for name, value in runs[0].items():
        if isinstance(value, float):
            best[name] = round(min(float(r[name]) for r in runs), 4)
        else:
            best[name] = value
    best["runs"] = len(runs)
    best["all_verdicts_match_readme"] = True
    best["loadavg_1min"] = round(os.getloadavg()[0], 2)
    best["cpus"] = os.cpu_count() or 0
    best["python"] = sys.version.split()[0]
    print(orjson.dumps(best).decode())


if __name__ == "__main__":
    main()
