"""What a batch of checked histories adds up to: the totals ``kmodel verify`` prints and
writes to ``summary.json``, and the exit code they mean.

Both engines' results are `records.InputResult`s, and both write the same ``summary.json``
(the local engine from the CLI, the Spark job beside its verdict table), so the rule lives
here once. The exit codes are kmodel's (every subcommand's): 0 everything checked holds,
1 a violation, 2 unknown (a timeout, an input that could not be read, rejected lines).
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checker.records import InputResult
from jepsen_py.checker.result import Verdict

EXIT_CODES = {Verdict.OK: 0, Verdict.ILLEGAL: 1, Verdict.UNKNOWN: 2}
"""kmodel's exit code for the verdict of a batch (the CLI's ``EXIT_OK``,
``EXIT_VIOLATION``, ``EXIT_UNKNOWN``)."""


def batch_verdict(results: list[InputResult]) -> Verdict:
    """ILLEGAL if any key anywhere is illegal (a violation wins over unknowns elsewhere);
    else UNKNOWN if anything is unknown, unreadable or has rejected lines; else OK."""
    verdicts = [r.verdict for r in results]
    if Verdict.ILLEGAL in verdicts:
        return Verdict.ILLEGAL
    if Verdict.UNKNOWN in verdicts or any(r.error or r.rejected for r in results):
        return Verdict.UNKNOWN
    return Verdict.OK


def exit_code(results: list[InputResult]) -> int:
    """1 if anything is illegal; else 2 if anything is unknown or unreadable; else 0."""
    return EXIT_CODES[batch_verdict(results)]


def totals(results: list[InputResult]) -> dict[str, Any]:
    """Counts over the inputs: verdicts, keys, ops, rejected lines, anomalies, violations
    (by name) and the seconds spent checking."""
    return {
        "inputs": len(results),
        "ok": sum(r.verdict is Verdict.OK for r in results),
        "illegal": sum(r.verdict is Verdict.ILLEGAL for r in results),
        "unknown": sum(r.verdict is Verdict.UNKNOWN for r in results),
        "keys": sum(len(r.keys) for r in results),
        "ops": sum(r.ops for r in results),
        "rejected_lines": sum(len(r.rejected) for r in results),
        "anomalies": sum(sum(k.counts.values()) for r in results for k in r.keys),
        "violations": _total_violations(results),
        "seconds": round(sum(r.seconds for r in results), 6),
    }


def summary(results: list[InputResult], engine: str) -> dict[str, Any]:
    """What ``summary.json`` holds besides an engine's figures."""
    return {"totals": totals(results), "exit_code": exit_code(results), "engine": engine}


def _total_violations(results: list[InputResult]) -> dict[str, int]:
    out: dict[str, int] = {}
    for result in results:
        for name, n in result.violations.items():
            out[name] = out.get(name, 0) + n
    return dict(sorted(out.items()))
