"""Start-up of the ``kmodel`` command: what a user waits for before any work is done.

Prints one JSON line, each figure the best of ``--repeat`` fresh processes (default 5):

- ``python_bare_seconds``: ``python -c pass``, the floor every figure below includes;
- ``import_cli_seconds`` / ``import_verify_seconds``: importing `jepsen_py.cli` (the group)
  and `jepsen_py.cli.verify` (what ``kmodel verify`` loads), timed inside the process;
- ``help_seconds``: the whole process of ``kmodel --help``;
- ``verify_small_seconds``: the whole process of ``kmodel verify FILE`` (default engine,
  ``--engine auto``) on a small history of the project's corpus;
- ``heavy_modules_after_verify``: which of pyspark, z3, matplotlib, hypothesis, numpy that
  process imported (it should be none).

The load average is printed with them: on a shared machine, compare figures taken side by
side only. To time another checkout (say, the commit before a change) with the same
interpreter, run this script with ``PYTHONPATH`` pointing at that checkout.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
SMALL = REPO / "model_tests" / "corpora" / "jepsen-kafka" / "duplicate-basic.jsonl"
HEAVY = ("pyspark", "z3", "matplotlib", "hypothesis", "numpy")
RUN_CLI = "import sys; from jepsen_py.cli import main; sys.argv[0] = 'kmodel'; main()"
TIME_IMPORT = (
    "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
)
NEUTRAL = tempfile.gettempdir()
"""The processes start here, not in a checkout: ``python -c`` puts its working directory first
on ``sys.path``, which would hide the checkout ``PYTHONPATH`` names."""
HEAVY_AFTER = (
    "import atexit, sys\n"
    "def _say():\n"
    "    heavy = sorted(h for h in {heavy!r} if h in sys.modules)\n"
    "    sys.stderr.write('HEAVY=' + ','.join(heavy) + '\\n')\n"
    "atexit.register(_say)\n"
    "from jepsen_py.cli import main; sys.argv[0] = 'kmodel'; main()\n"
)


def _wall(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, capture_output=True, check=False, cwd=NEUTRAL)
    return time.perf_counter() - started


def _inside(module: str) -> float:
    code = TIME_IMPORT.format(module=module)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=NEUTRAL
    )
    return float(out.stdout.strip())


def _heavy_after(args: list[str]) -> list[str]:
    code = HEAVY_AFTER.format(heavy=HEAVY)
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=NEUTRAL,
    )
    for line in out.stderr.splitlines():
        if line.startswith("HEAVY="):
            return [name for name in line[len("HEAVY=") :].split(",") if name]
    raise SystemExit(f"kmodel {' '.join(args)} did not finish: {out.stderr[-500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="processes; the best is reported")
    parser.add_argument("--file", type=Path, default=SMALL, help="the small history to verify")
    args = parser.parse_args()
    repeat = max(args.repeat, 1)
    python = sys.executable
    figures: dict[str, object] = {
        "python_bare_seconds": min(_wall([python, "-c", "pass"]) for _ in range(repeat)),
        "import_cli_seconds": min(_inside("jepsen_py.cli") for _ in range(repeat)),
        "import_verify_seconds": min(_inside("jepsen_py.cli.verify") for _ in range(repeat)),
        "help_seconds": min(_wall([python, "-c", RUN_CLI, "--help"]) for _ in range(repeat)),
        "verify_small_seconds": min(
            _wall([python, "-c", RUN_CLI, "verify", str(args.file)]) for _ in range(repeat)
        ),
    }
    figures = {k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}
    figures["heavy_modules_after_verify"] = _heavy_after(["verify", str(args.file)])
    figures["file"] = args.file.name
    figures["runs"] = repeat
    figures["loadavg_1min"] = round(os.getloadavg()[0], 2)
    figures["cpus"] = os.cpu_count() or 0
    print(orjson.dumps(figures).decode())


if __name__ == "__main__":
    main()
