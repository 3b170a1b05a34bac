"""A run's reports in its store directory: ``timeline.html`` headed by the verdict
(`jepsen_py.report.timeline`), ``latency.png`` and ``rate.png`` with fault periods shaded
(`jepsen_py.report.plots`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jepsen_py.history.op import Op
from jepsen_py.report.plots import render_plots
from jepsen_py.report.spans import collect
from jepsen_py.report.timeline import VerdictBanner, write_timeline
from jepsen_py.runner.outcome import HistoryCheck, verdict_name
from jepsen_py.store import TIMELINE_FILE


def verdict_banner(check: HistoryCheck) -> VerdictBanner:
    """What the timeline page says about the run's verdict."""
    return VerdictBanner(
        verdict=verdict_name(check.verdict),
        consistency=check.consistency,
        violations=tuple(
            (name, tuple(tuple(w) for w in check.violation_lines.get(name, ())))
            for name in check.violations
        ),
        informational=tuple(sorted(check.informational.items())),
        linearizable=check.linearizable.verdict.value,
        explanations=tuple(sorted(check.explanations.items())),
    )


def write_reports(
    history: Sequence[Op], directory: Path, *, title: str, check: HistoryCheck | None = None
) -> None:
    """``timeline.html`` (headed by the verdict, when ``check`` is given), ``latency.png``
    and ``rate.png`` into a run's directory."""
    data = collect(list(history), source=title)
    banner = verdict_banner(check) if check is not None else None
    write_timeline(data, directory / TIMELINE_FILE, title=title, verdict=banner)
    render_plots(data, directory, title=title)


__all__ = ["verdict_banner", "write_reports"]
