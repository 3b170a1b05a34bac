"""A process and the processes below it, from Linux's /proc: what the benchmarks that start
other processes (a JVM and its Python workers, a checker's forked workers) measure.

Each process's ``/proc/PID/stat`` is read as its fields after the command name (which may
hold spaces and parentheses): index 0 the state, 1 the parent pid, 11 and 12 ``utime`` and
``stime``, 13 and 14 ``cutime`` and ``cstime`` (in clock ticks), 21 ``rss`` (in pages),
as proc(5) numbers them from 3 on.
"""

from __future__ import annotations

import os

__all__ = ["CUTIME", "PPID", "RSS", "UTIME", "descendants", "proc_stats"]

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
