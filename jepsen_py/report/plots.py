"""Latency and rate plots of a run, as PNG, with fault periods shaded (Jepsen's
``latency-raw.png`` and ``rate.png``).

- ``latency.png``: one point per completed client op at its invocation time, its latency
  on a log axis; colour by ``f``, marker by outcome (ok ●, fail ✕, info ▲). Ops that never
  completed have no latency and are left out (the timeline shows them).
- ``rate.png``: completions per second over time, one line per (f, outcome), counted in
  fixed bins of logical time.

Rendered with matplotlib's Agg canvas directly (no pyplot: no global backend or figure
state), and saved without the "Software" text chunk: PNG carries no timestamp, so the same
history renders to the same bytes (tested).
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from jepsen_py.report.spans import Collected, History, collect

LATENCY_FILE = "latency.png"
RATE_FILE = "rate.png"

_MARKERS = {"ok": "o", "fail": "x", "info": "^"}
_FAULT_COLOURS = ("#7b61ff", "#ff6f61", "#2aa1b3", "#e6a100", "#c2185b", "#5c8a00")
_RC: Any = {
    "font.size": 9,
    "axes.titlesize": 10,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "path.simplify": True,
    "agg.path.chunksize": 10000,
}
_SIZE = (11.0, 5.0)


def _figure() -> tuple[Any, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=_SIZE, dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def _save(fig: Any, path: str | os.PathLike[str]) -> Path:
    out = Path(path)
    fig.savefig(out, format="png", dpi=100, metadata={"Software": None})
    return out


def _shade_faults(ax: Any, data: Collected) -> None:
    colours = {
        name: _FAULT_COLOURS[i % len(_FAULT_COLOURS)] for i, name in enumerate(data.fault_names)
    }
    labelled: set[str] = set()
    for period in data.faults:
        end = period.end if period.end is not None else data.t_max
        label = None if period.fault in labelled else f"fault: {period.fault}"
        labelled.add(period.fault)
        ax.axvspan(
            (period.start - data.t_min) / 1e9,
            (end - data.t_min) / 1e9,
            color=colours[period.fault],
            alpha=0.15,
            linewidth=0,
            label=label,
        )


def _colours(fs: list[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    palette = colormaps["tab10"]
    return {f: palette(i % 10) for i, f in enumerate(fs)}


def _empty(ax: Any, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what} in this history", ha="center", va="center")
    ax.set_axis_off()


def render_latency(
    history: History, path: str | os.PathLike[str], *, title: str | None = None
) -> Path:
    """Write the latency scatter of ``history`` (path, ops or `Collected`) to ``path``."""
    import matplotlib

    data = collect(history)
    with matplotlib.rc_context(_RC):
        fig, ax = _figure()
        points: dict[tuple[str, str], tuple[list[float], list[float]]] = defaultdict(
            lambda: ([], [])
        )
        for s in data.spans:
            if s.end is None or s.type not in _MARKERS:
                continue
            xs, ys = points[(s.f, s.type)]
            xs.append((s.start - data.t_min) / 1e9)
            # Log axis: a zero latency is drawn at 1 ns.
            ys.append(max(s.end - s.start, 1) / 1e6)
        if not points:
            _empty(ax, "completed client ops")
        else:
            colour = _colours(sorted({f for f, _ in points}))
            _shade_faults(ax, data)
            for (f, type_), (xs, ys) in sorted(points.items()):
                ax.plot(
                    xs,
                    ys,
                    linestyle="",
                    marker=_MARKERS[type_],
                    markersize=3 if type_ == "ok" else 4,
                    markeredgewidth=0.8 if type_ != "ok" else 0,
                    color=colour[f],
                    alpha=0.7,
                    label=f"{f} {type_} ({len(xs)})",
                )
            ax.set_yscale("log")
            ax.set_xlabel("time (s, from the first event)")
            ax.set_ylabel("latency (ms)")
            ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        ax.set_title(title or f"Latency: {data.source}")
        return _save(fig, path)


def _bin_width(span_ns: int, bins: int = 80) -> int:
    """A round bin width (1, 2 or 5 times a power of ten ns) giving about ``bins`` bins."""
    raw = max(span_ns / bins, 1)
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return int(factor * power)
    return int(10 * power)


def render_rate(
    history: History,
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    bin_ns: int | None = None,
) -> Path:
    """Write the throughput plot of ``history`` to ``path``: completions per second per
    (f, outcome), in bins of ``bin_ns`` (default: about 80 round bins over the history)."""
    import matplotlib

    data = collect(history)
    width = bin_ns if bin_ns is not None else _bin_width(data.t_max - data.t_min)
    if width <= 0:
        raise ValueError(f"bin_ns={bin_ns}: a bin must be at least 1 ns wide")
    n_bins = (data.t_max - data.t_min) // width + 1
    counts: dict[tuple[str, str], list[int]] = {}
    for s in data.spans:
        if s.end is None:
            continue
        row = counts.setdefault((s.f, s.type), [0] * n_bins)
        row[(s.end - data.t_min) // width] += 1
    with matplotlib.rc_context(_RC):
        fig, ax = _figure()
        if not counts:
            _empty(ax, "completed client ops")
        else:
            colour = _colours(sorted({f for f, _ in counts}))
            styles = {"ok": "-", "fail": "--", "info": ":"}
            _shade_faults(ax, data)
            xs = [i * width / 1e9 for i in range(n_bins + 1)]
            per_second = 1e9 / width
            for (f, type_), row in sorted(counts.items()):
                ys = [c * per_second for c in row]
                ax.step(
                    xs,
                    [*ys, ys[-1]],
                    where="post",
                    linestyle=styles.get(type_, "-."),
                    color=colour[f],
                    linewidth=1.2,
                    label=f"{f} {type_} ({sum(row)})",
                )
            ax.set_xlabel("time (s, from the first event)")
            ax.set_ylabel(f"completions per second ({width / 1e6:g} ms bins)")
            ax.set_ylim(bottom=0)
            ax.grid(True, linewidth=0.4, alpha=0.5)
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        ax.set_title(title or f"Throughput: {data.source}")
        return _save(fig, path)


def render_plots(
    history: History, directory: str | os.PathLike[str], *, title: str | None = None
) -> dict[str, Path]:
    """Both plots into ``directory`` (a run's directory): ``latency.png``, ``rate.png``."""
    data = collect(history)
    out = Path(directory)
    return {
        "latency": render_latency(data, out / LATENCY_FILE, title=title),
        "rate": render_rate(data, out / RATE_FILE, title=title),
    }


__all__ = ["LATENCY_FILE", "RATE_FILE", "render_latency", "render_plots", "render_rate"]
