"""The specs ``kmodel check`` knows: one entry per spec, naming its own flags, its ``--bug``
choices and how to build it from the flag values.

``kmodel check SPEC`` carries every spec's flags; a flag belongs to one spec, and giving it
on the command line for another spec is a usage error that names the spec it belongs to.
A spec's flags left unset take that spec's defaults (its ``Params``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
import click

from jepsen_py.cli.replication_flags import replication_params
from spec import controller, group, offsets, rebalance, replication
from spec.framework import Spec, SpecError


@attrs.frozen
class CheckEntry:
    name: str
    flags: tuple[str, ...]
    """The click parameter names of the flags this spec reads."""
    bugs: Mapping[str, str]
    """``--bug`` choices: name -> the mistake it makes."""
    build: Callable[[Mapping[str, Any], tuple[str, ...]], Spec]
    """(flag values, bugs) -> the spec; raises ``SpecError`` on bad values."""
    params_json: Callable[[Any], dict[str, Any]]
    """The spec's parameters, for ``--json`` and ``--trace-json``."""


def build_replication(flags: Mapping[str, Any], bugs: tuple[str, ...]) -> Spec:
    """Parameters from flags (``replication_params``: the one builder ``kmodel prove``
    shares); the published model rejects the extended model's flags."""
    params = replication_params(
        model=flags["model"],
        replicas=flags["replicas"],
        log_size=flags["log_size"],
        max_records=flags["max_records"],
        max_epoch=flags["max_epoch"],
        truncation=flags["truncation"],
        acks=flags["acks"],
        min_isr=flags["min_isr"],
        unclean=flags["unclean"],
        max_crashes=flags["max_crashes"],
        bugs=bugs,
    )
    return replication.Replication(params)


def replication_params_json(params: replication.Params) -> dict[str, Any]:
    return {
        "replicas": params.replicas,
        "log_size": params.log_size,
        "max_records": params.max_records,
        "max_epoch": params.max_epoch,
        "truncation": params.truncation,
        "model": params.model,
        "acks": params.acks,
        "min_isr": params.min_isr,
        "unclean": params.unclean,
        "max_crashes": params.max_crashes,
        "bugs": sorted(params.bugs),
    }


CONTROLLER_FLAGS = (
    "brokers",
    "partitions",
    "max_controller_epoch",
    "max_leader_epoch",
    "max_expiries",
    "mode",
)


def controller_params(flags: Mapping[str, Any], bugs: tuple[str, ...]) -> controller.Params:
    """Parameters from flags: an unset flag takes ``controller.Params``' default."""
    given = {name: flags[name] for name in CONTROLLER_FLAGS if flags.get(name) is not None}
    return controller.Params(**given, bugs=frozenset(bugs))


def build_controller(flags: Mapping[str, Any], bugs: tuple[str, ...]) -> Spec:
    return controller.Controller(controller_params(flags, bugs))


def controller_params_json(params: controller.Params) -> dict[str, Any]:
    return {
        "brokers": params.brokers,
        "partitions": params.partitions,
        "max_controller_epoch": params.max_controller_epoch,
        "max_leader_epoch": params.max_leader_epoch,
        "max_expiries": params.max_expiries,
        "mode": params.mode,
        "bugs": sorted(params.bugs),
    }


GROUP_FLAGS = {
    "protocol": "protocol",
    "members": "members",
    "topic_partitions": "partitions",
    "max_generation": "max_generation",
    "max_member_expiries": "max_expiries",
    "max_timeouts": "max_timeouts",
    "max_failovers": "max_failovers",
    "network": "network",
}
"""``kmodel check group``'s flags (click names) -> ``group.Params`` fields."""


def build_group(flags: Mapping[str, Any], bugs: tuple[str, ...]) -> Spec:
    """Parameters from flags: an unset flag takes the setting where a chosen bug shows
    (``group.BUG_SETTINGS``), else ``group.Params``' default."""
    given: dict[str, Any] = {}
    for bug in bugs:
        given.update(group.BUG_SETTINGS.get(bug, {}))
    given.update(
        {field: flags[name] for name, field in GROUP_FLAGS.items() if flags.get(name) is not None}
    )
    return group.build(group.Params(**given, bugs=frozenset(bugs)))


def group_params_json(params: group.Params) -> dict[str, Any]:
    return {
        "protocol": params.protocol,
        "members": params.members,
        "partitions": params.partitions,
        "max_generation": params.generation_bound,
        "max_expiries": params.max_expiries,
        "max_timeouts": params.max_timeouts,
        "max_failovers": params.max_failovers,
        "network": params.network,
        "bugs": sorted(params.bugs),
    }


REBALANCE_FLAGS = (
    "mechanism",
    "brokers",
    "replication_factor",
    "min_isr",
    "max_records",
    "max_epoch",
    "max_crashes",
    "max_reassignments",
    "max_shutdowns",
    "imbalance_pct",
    "no_auto_rebalance",
)


def _given(name: str) -> bool:
    """Whether flag ``name`` was given on the command line (flags shared with another
    spec, such as ``--max-records``, carry that spec's default otherwise)."""
    context = click.get_current_context(silent=True)
    if context is None:
        return True
    return context.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE


def rebalance_params(flags: Mapping[str, Any], bugs: tuple[str, ...]) -> rebalance.Params:
    """Parameters from flags: the mechanism's default bounds (``rebalance.Params.of``),
    overridden by the flags given; without ``--mechanism``, the mechanism of the bug."""
    given = {
        name: flags[name]
        for name in REBALANCE_FLAGS[1:-1]
        if flags.get(name) is not None and _given(name)
    }
    if flags.get("no_auto_rebalance"):
        given["auto_rebalance"] = False
    return rebalance.Params.of(flags.get("mechanism"), bugs=frozenset(bugs), **given)


def build_rebalance(flags: Mapping[str, Any], bugs: tuple[str, ...]) -> Spec:
    return rebalance.Rebalance(rebalance_params(flags, bugs))


def rebalance_params_json(params: rebalance.Params) -> dict[str, Any]:
    return {
        "mechanism": params.mechanism,
        "brokers": params.brokers,
        "replication_factor": params.replication_factor,
        "min_isr": params.min_isr,
        "max_records": params.max_records,
        "max_epoch": params.max_epoch,
        "max_crashes": params.max_crashes,
        "max_reassignments": params.max_reassignments,
        "max_shutdowns": params.max_shutdowns,
        "auto_rebalance": params.auto_rebalance,
        "imbalance_pct": params.imbalance_pct,
        "bugs": sorted(params.bugs),
    }


OFFSETS_FLAGS = {
    "commit": "commit",
    "offset_reset": "reset",
    "members": "members",
    "records": "records",
    "max_generation": "max_generation",
    "max_member_expiries": "max_expiries",
    "max_crashes": "max_crashes",
    "max_failovers": "max_failovers",
}
"""``kmodel check offsets``'s flags (click names) -> ``offsets.Params`` fields."""


def build_offsets(flags: Mapping[str, Any], bugs: tuple[str, ...]) -> Spec:
    """Parameters from flags: an unset flag takes the setting where a chosen bug shows
    (``offsets.BUG_SETTINGS``), else ``offsets.Params``' default."""
    given: dict[str, Any] = {}
    for bug in bugs:
        given.update(offsets.BUG_SETTINGS.get(bug, {}))
    given.update(
        {field: flags[name] for name, field in OFFSETS_FLAGS.items() if flags.get(name) is not None}
    )
    return offsets.build(offsets.Params(**given, bugs=frozenset(bugs)))


def offsets_params_json(params: offsets.Params) -> dict[str, Any]:
    return {
        "commit": params.commit,
        "reset": params.reset,
        "members": params.members,
        "records": params.records,
        "max_generation": params.max_generation,
        "max_expiries": params.max_expiries,
        "max_crashes": params.max_crashes,
        "max_failovers": params.max_failovers,
        "bugs": sorted(params.bugs),
    }


CHECK_SPECS: dict[str, CheckEntry] = {
    "replication": CheckEntry(
        "replication",
        (
            "model",
            "replicas",
            "log_size",
            "max_records",
            "max_epoch",
            "max_crashes",
            "truncation",
            "acks",
            "min_isr",
            "unclean",
        ),
        replication.BUGS,
        build_replication,
        replication_params_json,
    ),
    "controller": CheckEntry(
        "controller",
        CONTROLLER_FLAGS,
        controller.BUGS,
        build_controller,
        controller_params_json,
    ),
    "group": CheckEntry(
        "group",
        tuple(GROUP_FLAGS),
        group.BUGS,
        build_group,
        group_params_json,
    ),
    "rebalance": CheckEntry(
        "rebalance",
        REBALANCE_FLAGS,
        rebalance.BUGS,
        build_rebalance,
        rebalance_params_json,
    ),
    "offsets": CheckEntry(
        "offsets",
        tuple(OFFSETS_FLAGS),
        offsets.BUGS,
        build_offsets,
        offsets_params_json,
    ),
}


def all_bugs() -> list[str]:
    """Every spec's ``--bug`` choices (click checks the name; the spec checks it is its own)."""
    return sorted({bug for entry in CHECK_SPECS.values() for bug in entry.bugs})


def bug_help() -> str:
    per_spec = "; ".join(
        f"{entry.name}: {', '.join(sorted(entry.bugs))}" for entry in CHECK_SPECS.values()
    )
    return f"Run a deliberately broken variant (to see an invariant fail). Per spec: {per_spec}."


def foreign_flags(spec_name: str, given: list[str]) -> list[tuple[str, str]]:
    """The flags given on the command line that belong to another spec: (flag, its spec)."""
    own = set(CHECK_SPECS[spec_name].flags)
    out = []
    for name in given:
        if name in own:
            continue
        for entry in CHECK_SPECS.values():
            if name in entry.flags:
                out.append((name, entry.name))
    return out


def refuse_foreign_flags(spec_name: str, spec_flags: Mapping[str, Any], command: str) -> None:
    """``SpecError`` if a flag given on the command line of ``kmodel COMMAND`` belongs to
    another spec than ``spec_name``."""
    context = click.get_current_context()
    given = [
        name
        for name in spec_flags
        if context.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE
    ]
    foreign = foreign_flags(spec_name, given)
    if foreign:
        flag, owner = foreign[0]
        raise SpecError(
            f"--{flag.replace('_', '-')} is a flag of spec {owner}, not of {spec_name}; "
            f"see kmodel {command} --help"
        )


def check_bugs(spec_name: str, bugs: tuple[str, ...]) -> None:
    """``SpecError`` if a ``--bug`` is another spec's."""
    known = CHECK_SPECS[spec_name].bugs
    wrong = [bug for bug in bugs if bug not in known]
    if wrong:
        raise SpecError(
            f"--bug {', '.join(wrong)} is not a bug of spec {spec_name}; its bugs: "
            + ", ".join(sorted(known))
        )


# --- kmodel prove --------------------------------------------------------------------------

PROVE_FLAGS: dict[str, tuple[str, ...]] = {
    "replication": (
        "model",
        "truncation",
        "replicas",
        "log_bound",
        "acks",
        "min_isr",
        "alone",
        "no_minimise",
        "bmc_steps",
        "log_size",
        "max_records",
        "max_epoch",
    ),
    "controller": ("brokers", "partitions", "mode"),
    "group": ("protocol", "members", "topic_partitions"),
    "rebalance": ("brokers", "min_isr"),
    "offsets": ("members", "commit", "offset_reset", "records"),
}
"""The flags of ``kmodel prove`` each spec reads (the others are shared)."""


def prove_foreign_flags(spec_name: str, given: list[str]) -> list[tuple[str, str]]:
    """The flags given on the command line that belong to another spec's proof."""
    own = set(PROVE_FLAGS[spec_name])
    return [
        (name, owner)
        for name in given
        if name not in own
        for owner, flags in PROVE_FLAGS.items()
        if name in flags
    ]
