"""The Spark flags of ``kmodel verify`` and ``kmodel swarm`` checked before any work starts:
``--master`` (a Spark master URL, as ``SparkContext.createTaskScheduler`` accepts them) and
``--driver-memory`` (a JVM memory size, ``spark.driver.memory``).

Kept apart from `session` (which starts Spark): every ``kmodel verify`` checks its flags,
also when the local engine does the work, and this module costs it two regular expressions
only.
"""

from __future__ import annotations

import re

MASTER_FORMS = (
    "local",
    "local[N]",
    "local[*]",
    "local[N,F]",
    "local-cluster[N,C,M]",
    "spark://HOST:PORT",
    "yarn",
    "k8s://URL",
    "mesos://HOST:PORT",
)
"""The Spark master URLs Spark accepts (its ``SparkContext.createTaskScheduler``)."""

_MASTER = (
    r"local(\[(\*|[1-9][0-9]*)(,[1-9][0-9]*)?\])?|local-cluster\[[0-9]+,[0-9]+,[0-9]+\]"
    r"|spark://\S+(:[0-9]+)?(,\S+)*|yarn|k8s://\S+|mesos://\S+"
)
"""Compiled by `master_problem` when called (re caches it): most runs give no ``--master``."""

_MEMORY = re.compile(r"[0-9]+[kmgtp]?b?", re.IGNORECASE)


def master_problem(master: str) -> str | None:
    """Why ``master`` is not a Spark master URL, or None (checked before Spark starts)."""
    if re.fullmatch(_MASTER, master):
        return None
    return f"--master {master!r} is not a Spark master URL: expected {', '.join(MASTER_FORMS)}"


def memory_problem(size: str) -> str | None:
    """Why ``size`` is not a JVM memory size such as 2g or 512m, or None."""
    if _MEMORY.fullmatch(size.strip()):
        return None
    return f"--driver-memory {size!r} is not a memory size: write e.g. 2g, 4096m"
