"""The fault vocabulary of a history: the ``f`` of the nemesis ops that start and stop a
fault, as Jepsen's nemeses name them.

A fault ``X`` starts with ``start-X`` and stops with ``stop-X``, except the process faults
Jepsen names by their verbs: ``kill``/``restart`` and ``pause``/``resume`` (``fault_ops``).
Reading a history (``fault_kind``) also knows what other Jepsen tests write: the bare
``start``/``stop`` of a single-fault nemesis (fault ``fault``), and ``heal``, ``heal-all``
and ``stop-all``, which stop every open fault (``EVERY_FAULT``).

The generator names its ops with ``fault_ops`` (``jepsen_py.generator``), the nemesis
performs them (``jepsen_py.nemesis``), and the reports pair them into fault periods
(``jepsen_py.report.spans``): one table, so the three cannot drift apart.
"""

from __future__ import annotations

__all__ = ["EVERY_FAULT", "fault_kind", "fault_ops"]

EVERY_FAULT = "*"
"""The fault a heal-everything op stops: every one open."""

_OWN_VERBS: dict[str, tuple[str, str]] = {
    "kill": ("kill", "restart"),
    "pause": ("pause", "resume"),
    "kill-consumer": ("kill-consumer", "restart-consumer"),
    "leave-consumer": ("leave-consumer", "join-consumer"),
}
"""Faults whose start and stop ops are verbs of their own (Jepsen's names)."""

_READ_ONLY_VERBS: dict[str, tuple[str, str]] = {
    "start": ("fault", "start"),
    "stop": ("fault", "stop"),
    "heal": (EVERY_FAULT, "stop"),
    "heal-all": (EVERY_FAULT, "stop"),
    "stop-all": (EVERY_FAULT, "stop"),
}
"""Ops other Jepsen tests write, which this project's generator never does."""

_VERBS: dict[str, tuple[str, str]] = {
    **{start: (fault, "start") for fault, (start, _) in _OWN_VERBS.items()},
    **{stop: (fault, "stop") for fault, (_, stop) in _OWN_VERBS.items()},
    **_READ_ONLY_VERBS,
}


def fault_ops(fault: str) -> tuple[str, str]:
    """The ``f`` of the ops that start and stop ``fault``: ``kill``/``restart``,
    ``pause``/``resume``, otherwise ``start-<fault>``/``stop-<fault>``."""
    return _OWN_VERBS.get(fault, (f"start-{fault}", f"stop-{fault}"))


def fault_kind(f: str) -> tuple[str, str] | None:
    """(fault, ``"start"`` | ``"stop"``) for a nemesis op's ``f``; None when it is neither
    (a marker, a client op). The inverse of ``fault_ops``, and it reads Jepsen's other
    names too (see the module docstring)."""
    verb = _VERBS.get(f)
    if verb is not None:
        return verb
    for prefix, edge in (("start-", "start"), ("stop-", "stop")):
        if f.startswith(prefix) and len(f) > len(prefix):
            return f[len(prefix) :], edge
    return None
