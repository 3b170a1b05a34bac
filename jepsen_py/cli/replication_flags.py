"""The replication spec's parameters from command-line flags: one builder, shared by
``kmodel check replication`` and ``kmodel prove replication``.

A flag the user did not give arrives as None and takes its default here: ``acks=all``,
``min.insync.replicas`` 1, and a crash budget of one in the extended model (none in the
published model, which has no crashes). ``Params`` itself rejects the extended model's
settings on the published model, with a ``SpecError`` the command reports as bad input.
"""

from __future__ import annotations

from collections.abc import Iterable

from spec.replication import Params


def replication_params(
    *,
    model: str,
    replicas: int,
    log_size: int,
    max_records: int,
    max_epoch: int,
    truncation: str,
    acks: str | None = None,
    min_isr: int | None = None,
    unclean: bool = False,
    max_crashes: int | None = None,
    leader_view: bool | None = None,
    bugs: Iterable[str] = (),
) -> Params:
    """``Params`` from flag values, a flag not given (None) taking its default."""
    if max_crashes is None:
        max_crashes = 1 if model == "extended" else 0
    return Params(
        replicas=replicas,
        log_size=log_size,
        max_records=max_records,
        max_epoch=max_epoch,
        truncation=truncation,
        model=model,
        acks=acks or "all",
        min_isr=min_isr or 1,
        unclean=unclean,
        max_crashes=max_crashes,
        leader_view=leader_view,
        bugs=frozenset(bugs),
    )
