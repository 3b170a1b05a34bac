"""A process and the processes below it, from Linux's /proc: what the benchmarks that start
other processes (a JVM and its Python workers, a checker's forked workers) measure.

Each process's ``/proc/PID/stat`` is read as its fields after the command name (which may
hold spaces and parentheses): index 0 the state, 1 the parent pid, 11 and 12 ``utime`` and
``stime``, 13 and 14 ``cutime`` and ``cstime`` (in clock ticks), 21 ``rss`` (in pages),
as proc(5) numbers them from 3 on.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from typing import IO, Any, NamedTuple

__all__ = [
    "CUTIME",
    "PPID",
    "RSS",
    "UTIME",
    "Watched",
    "descendants",
    "proc_stats",
    "tree_sample",
    "watched",
]

PPID = 1
UTIME = 11
"""``utime``; ``stime`` follows it."""
CUTIME = 13
"""``cutime``: the CPU of children waited for; ``cstime`` follows it."""
RSS = 21


def proc_stats() -> dict[int, list[str]]:
    """Every live process's stat fields after its command name, by pid."""
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stats[int(entry)] = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended meanwhile
    return stats


def descendants(root: int, stats: dict[int, list[str]]) -> list[int]:
    """Every process below ``root``, parents before children."""
    children: dict[int, list[int]] = {}
    for pid, fields in stats.items():
        children.setdefault(int(fields[PPID]), []).append(pid)
    out: list[int] = []
    stack = list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, ()))
    return out


def tree_sample(root: int) -> tuple[float, int]:
    """(CPU seconds, resident bytes) of ``root`` and the processes below it: each one's
    own CPU and that of the children it waited for (``cutime``)."""
    stats = proc_stats()
    tick = os.sysconf("SC_CLK_TCK")
    page = os.sysconf("SC_PAGE_SIZE")
    cpu = 0.0
    rss = 0
    for pid in [root, *descendants(root, stats)]:
        fields = stats.get(pid)
        if fields is None:
            continue
        ticks = sum(int(fields[i]) for i in (UTIME, UTIME + 1, CUTIME, CUTIME + 1))
        cpu += ticks / tick
        rss += int(fields[RSS]) * page
    return cpu, rss


class Watched(NamedTuple):
    """A finished child process: its wait status and resource usage (``os.wait4``), its
    wall seconds, and the highest CPU seconds and resident bytes its tree reached."""

    status: int
    usage: Any
    seconds: float
    peak_cpu: float
    peak_rss: int


def watched(command: list[str], every: float, out: IO[bytes], err: IO[bytes]) -> Watched:
    """Run ``command`` (its output into ``out`` and ``err``) and sample its process tree
    every ``every`` seconds (`tree_sample`) until it ends."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=out, stderr=err)
    peak_cpu = [0.0]
    peak_rss = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(every):
            cpu, rss = tree_sample(process.pid)
            peak_cpu[0] = max(peak_cpu[0], cpu)
            peak_rss[0] = max(peak_rss[0], rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    done.set()
    sampler.join()
    return Watched(status, usage, time.perf_counter() - started, peak_cpu[0], peak_rss[0])
