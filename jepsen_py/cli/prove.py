"""``kmodel prove SPEC``: discharge the spec's proof obligations with z3.

For every invariant of the strengthening (the spec's invariants and the auxiliary ones its
proof needs) and every action, z3 checks ``Init => Inv`` and ``S /\\ Action => Inv'`` over
logs of any length up to ``--log-bound``, with offsets, epochs and ids unbounded. Prints the
invariant x action table (proved / CTI / unknown, with z3 seconds) and every counterexample
to induction as a trace table.

Exit codes: 0 every obligation proved (and every action enabled somewhere, so nothing holds
vacuously); 1 a counterexample (or an action that is never enabled); 2 unknown (a timeout,
an inconclusive quantifier instantiation) or bad input.
"""

from __future__ import annotations

import time

import click

from jepsen_py.cli.common import EXIT_VIOLATION, emit_json, fail_input, proof_exit_code
from jepsen_py.cli.prove_controller import prove_controller
from jepsen_py.cli.prove_group import prove_group
from jepsen_py.cli.prove_offsets import prove_offsets
from jepsen_py.cli.prove_rebalance import prove_rebalance
from jepsen_py.cli.replication_flags import replication_params
from jepsen_py.cli.specs import prove_foreign_flags
from spec.controller import BUGS as CONTROLLER_BUGS
from spec.controller import MODES
from spec.framework import SpecError
from spec.group import BUGS as GROUP_BUGS
from spec.group import PROTOCOLS as GROUP_PROTOCOLS
from spec.offsets import BUGS as OFFSETS_BUGS
from spec.offsets import COMMITS as OFFSETS_COMMITS
from spec.offsets import RESETS as OFFSETS_RESETS
from spec.proofs.bmc import bmc
from spec.proofs.encoding import ENCODED_BUGS, Config, EncodingError
from spec.proofs.obligations import COUNTEREXAMPLE, PROVED, Result, Run, applicable
from spec.proofs.obligations import prove as prove_obligations
from spec.proofs.rebalance import ENCODED_BUGS as REBALANCE_BUGS
from spec.proofs.report import render_run, run_json
from spec.replication import ACKS, MODELS, TRUNCATIONS, Params, Replication
from spec.trace import render_table

SPECS = ("replication", "controller", "group", "rebalance", "offsets")

GROUP_ENCODED_BUGS = tuple(
    sorted(bug for bug in GROUP_BUGS if bug in ("assign_before_revoked", "no_member_epoch_fencing"))
)
"""The group bugs the z3 encoding covers: KIP-848's."""


def _params(
    model: str,
    replicas: int,
    truncation: str,
    acks: str | None,
    min_isr: int | None,
    bugs: tuple[str, ...],
    log_size: int,
    max_records: int,
    max_epoch: int,
) -> Params:
    """The flags' parameters, within what the encoding covers: no crashes, no unclean
    election, and the extended model without its leader view."""
    extended = model == "extended"
    if not extended and (acks is not None or min_isr is not None):
        fail_input("--acks and --min-isr: only with --model extended")
    return replication_params(
        model=model,
        replicas=replicas,
        log_size=log_size,
        max_records=max_records,
        max_epoch=max_epoch,
        truncation=truncation,
        acks=acks,
        min_isr=min_isr,
        max_crashes=0,
        leader_view=False if extended else None,
        bugs=bugs,
    )


def exit_code(run: Run) -> int:
    """The run's exit code (``common.proof_exit_code``)."""
    return proof_exit_code(run.status == COUNTEREXAMPLE, run.status == PROVED, run.enabled)


@click.command(name="prove")
@click.argument("spec_name", metavar="SPEC", type=click.Choice(SPECS))
@click.option(
    "--model",
    type=click.Choice(MODELS),
    default="published-2018",
    show_default=True,
    help="extended: acks/min.insync.replicas and the acked-write ghost (without crashes, "
    "unclean election or the leader view, which are not encoded).",
)
@click.option("--truncation", type=click.Choice(TRUNCATIONS), default="kip320", show_default=True)
@click.option("--replicas", type=int, default=3, show_default=True, help="1 to 4 replicas.")
@click.option(
    "--log-bound",
    type=int,
    default=3,
    show_default=True,
    help="L: logs of any length 0..L (LOG_SIZE is any value 1..L).",
)
@click.option("--acks", type=click.Choice(ACKS), default=None, help="extended model: 0, 1, all")
@click.option(
    "--min-isr",
    type=int,
    default=None,
    help="min.insync.replicas (replication extended model; rebalance, default 2)",
)
@click.option(
    "--brokers",
    type=int,
    default=None,
    help="controller: 2 or 3 (default 2); rebalance: 2 to 4 (default 3).",
)
@click.option("--partitions", type=int, default=None, help="controller: 1 or 2 (default 1).")
@click.option(
    "--mode", type=click.Choice(MODES), default=None, help="controller: zookeeper or kraft."
)
@click.option(
    "--protocol",
    type=click.Choice(GROUP_PROTOCOLS),
    default=None,
    help="group: only consumer (KIP-848, the default) is encoded.",
)
@click.option(
    "--members", type=int, default=None, help="group, offsets: consumers, 1 to 3 (default 2)."
)
@click.option(
    "--topic-partitions", type=int, default=None, help="group: partitions, 1 to 3 (default 2)."
)
@click.option(
    "--commit",
    type=click.Choice(OFFSETS_COMMITS),
    default=None,
    help="offsets: the consumer commits after processing (default) or before.",
)
@click.option(
    "--offset-reset",
    type=click.Choice(OFFSETS_RESETS),
    default=None,
    help="offsets: auto.offset.reset without a committed offset (default earliest).",
)
@click.option(
    "--records",
    type=int,
    default=None,
    help="offsets: records in the partition, 1 to 4 (default 2).",
)
@click.option(
    "--bug",
    "bugs",
    multiple=True,
    type=click.Choice(
        sorted(
            set(ENCODED_BUGS)
            | set(CONTROLLER_BUGS)
            | set(GROUP_ENCODED_BUGS)
            | set(REBALANCE_BUGS)
            | set(OFFSETS_BUGS)
        )
    ),
    help="Prove a deliberately broken variant (to see an obligation fail). Per spec: "
    f"replication: {', '.join(sorted(ENCODED_BUGS))}; "
    f"controller: {', '.join(sorted(CONTROLLER_BUGS))}; "
    f"group: {', '.join(sorted(GROUP_ENCODED_BUGS))}; "
    f"rebalance: {', '.join(sorted(REBALANCE_BUGS))}; "
    f"offsets: {', '.join(sorted(OFFSETS_BUGS))}.",
)
@click.option(
    "--timeout",
    type=float,
    default=20.0,
    show_default=True,
    help="Seconds per z3 query; an obligation that times out is UNKNOWN.",
)
@click.option(
    "--invariant",
    "invariants",
    multiple=True,
    help="Prove only these (repeatable), still relative to the whole strengthening.",
)
@click.option("--action", "actions", multiple=True, help="Only these actions (repeatable).")
@click.option(
    "--alone",
    is_flag=True,
    help="Check each invariant relative to itself only (most are not inductive alone).",
)
@click.option("--no-minimise", is_flag=True, help="Print counterexamples as z3 found them.")
@click.option(
    "--bmc",
    "bmc_steps",
    type=int,
    default=None,
    help="Also search, by bounded model checking from Init, for a trace of at most this "
    "many steps violating StrongIsr, with the explicit checker's bounds below.",
)
@click.option("--log-size", type=int, default=2, show_default=True, help="BMC bound.")
@click.option("--max-records", type=int, default=2, show_default=True, help="BMC bound.")
@click.option("--max-epoch", type=int, default=2, show_default=True, help="BMC bound.")
@click.option("--json", "json_mode", is_flag=True, help="One JSON object as the last line.")
def prove_cmd(
    spec_name: str,
    model: str,
    truncation: str,
    replicas: int,
    log_bound: int,
    acks: str | None,
    min_isr: int | None,
    brokers: int | None,
    partitions: int | None,
    mode: str | None,
    protocol: str | None,
    members: int | None,
    topic_partitions: int | None,
    commit: str | None,
    offset_reset: str | None,
    records: int | None,
    bugs: tuple[str, ...],
    timeout: float,
    invariants: tuple[str, ...],
    actions: tuple[str, ...],
    alone: bool,
    no_minimise: bool,
    bmc_steps: int | None,
    log_size: int,
    max_records: int,
    max_epoch: int,
    json_mode: bool,
) -> None:
    """Prove SPEC's invariants inductive with z3 (relative to the auxiliary invariants
    its correctness rests on), or print a counterexample to induction. Each spec has its
    own flags (their help starts with the spec's name, or is replication's)."""
    context = click.get_current_context()
    given = [
        name
        for name in context.params
        if context.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE
    ]
    foreign = prove_foreign_flags(spec_name, given)
    if foreign:
        flag, owner = foreign[0]
        option = next(p for p in context.command.params if p.name == flag)
        fail_input(f"{option.opts[0]} is a flag of spec {owner}, not of {spec_name}")
    known_bugs = {
        "controller": tuple(CONTROLLER_BUGS),
        "group": GROUP_ENCODED_BUGS,
        "rebalance": REBALANCE_BUGS,
        "offsets": tuple(OFFSETS_BUGS),
    }.get(spec_name, tuple(ENCODED_BUGS))
    wrong = [bug for bug in bugs if bug not in known_bugs]
    if wrong:
        fail_input(
            f"--bug {', '.join(wrong)} is not a bug of spec {spec_name}; its bugs: "
            + ", ".join(sorted(known_bugs))
        )
    if spec_name == "offsets":
        prove_offsets(commit, offset_reset, members, records, bugs, timeout, json_mode)
    if spec_name == "rebalance":
        prove_rebalance(brokers, min_isr, bugs, timeout, json_mode)
    if spec_name == "controller":
        prove_controller(brokers, partitions, mode, bugs, timeout, invariants, actions, json_mode)
    if spec_name == "group":
        prove_group(protocol, members, topic_partitions, bugs, timeout, json_mode)
    if timeout <= 0:
        fail_input(f"--timeout must be positive, got {timeout}")
    if log_bound < 1 or log_bound > 12:
        fail_input(f"--log-bound must be 1..12, got {log_bound}")
    if bmc_steps is not None and bmc_steps < 0:
        fail_input(f"--bmc must be >= 0, got {bmc_steps}")
    try:
        params = _params(
            model, replicas, truncation, acks, min_isr, bugs, log_size, max_records, max_epoch
        )
        config = Config.of(params, log_bound, bounded=False)
    except (SpecError, EncodingError) as err:
        fail_input(str(err))
    clock = time.perf_counter

    def progress(result: Result) -> None:
        if result.status != PROVED:
            click.echo(f"  ... {result.invariant} / {result.action}: {result.status}", err=True)

    try:
        run = prove_obligations(
            config,
            list(invariants) or None,
            strengthening=None if not invariants else _all_names(config),
            mode="alone" if alone else "relative",
            actions=list(actions) or None,
            timeout_ms=int(timeout * 1000),
            clock=clock,
            minimise=not no_minimise,
            progress=None if json_mode else progress,
        )
    except (KeyError, EncodingError) as err:
        fail_input(str(err.args[0]) if err.args else str(err))
    code = exit_code(run)
    payload = run_json(run)
    if not json_mode:
        click.echo(render_run(run).rstrip())
        never = [name for name, answer in run.enabled if answer != "sat"]
        if run.enabled and not never:
            click.echo("every action is enabled in some state satisfying the assumptions")
        for name, answer in run.enabled:
            if answer != "sat":
                click.echo(f"warning: action {name}: enabled under the assumptions? {answer}")
    if bmc_steps is not None:
        bounded = Config.of(params)
        found = bmc(bounded, "StrongIsr", bmc_steps, clock=clock)
        payload["bmc"] = {
            "status": found.status,
            "steps": found.steps,
            "depth": found.depth if found.trace else None,
            "seconds": round(found.seconds, 3),
        }
        if not json_mode:
            click.echo("")
            if found.trace:
                click.echo(
                    f"BMC: StrongIsr is violated after {found.steps} steps "
                    f"({found.depth} states), {found.seconds:.2f} s:"
                )
                click.echo(render_table(Replication(params), found.trace).rstrip())
            else:
                click.echo(f"BMC: {found.status} within {found.steps} steps")
        if found.trace:
            code = EXIT_VIOLATION
    if json_mode:
        payload["exit_code"] = code
        emit_json(payload)
    raise SystemExit(code)


def _all_names(config: Config) -> list[str]:
    return [inv.name for inv in applicable(config)]


prove = prove_cmd
