"""The ``kmodel check`` command line that reproduces a configuration of a spec: what the
pinned outcomes (``spec.*_outcomes``) print beside each scenario, so a reader can rerun it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def check_command(
    spec_name: str,
    params: Any,
    default: Any,
    flags: Iterable[tuple[str, str]],
    invariants: Sequence[str] = (),
    *,
    lead: Sequence[str] = (),
    switches: Sequence[str] = (),
) -> str:
    """``kmodel check SPEC``, then ``lead``, then ``--FLAG VALUE`` for each (field, flag)
    of ``flags`` whose value in ``params`` is set and differs from ``default``'s, then the
    on/off ``switches``, every ``--bug`` of ``params.bugs`` and every ``--invariant``."""
    parts = [f"kmodel check {spec_name}", *lead]
    for field, flag in flags:
        value = getattr(params, field)
        if value is not None and value != getattr(default, field):
            parts.append(f"--{flag} {value}")
    parts += switches
    parts += [f"--bug {bug}" for bug in sorted(params.bugs)]
    parts += [f"--invariant {name}" for name in invariants]
    return " ".join(parts)


def dashed(*fields: str) -> tuple[tuple[str, str], ...]:
    """(field, flag) pairs for flags named as their fields, ``_`` written ``-``."""
    return tuple((f, f.replace("_", "-")) for f in fields)
