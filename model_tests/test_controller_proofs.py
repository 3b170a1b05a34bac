"""The z3 encoding of the controller spec, and what it proves.

Trust in a proof is trust in its encoding, so most of this file checks the encoding against
the Python spec: on reachable states, every encoded action instance has the spec's
enabledness and successor for every argument (under the Python reading, and under both z3
readings, term by term), and the restated invariants agree with the spec's. Then the proofs:
the strengthening is inductive with both fences (ZooKeeper and KRaft), every action instance
is enabled under it, every auxiliary invariant is needed, and each broken variant fails the
induction where it should, with a counterexample checked against the spec.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import orjson
import pytest
import z3
from click.testing import CliRunner

from jepsen_py.cli import main
from spec.controller import BUGS, Controller, Params, Request, State
from spec.explore import reachable_states
from spec.proofs.controller.encoding import Config, Encoding, SymPart, SymRep, SymState
from spec.proofs.controller.invariants import REGISTRY, SPEC_NAMES, TRANSITIONS
from spec.proofs.controller.obligations import (
    COUNTEREXAMPLE,
    PROVED,
    prove,
    strengthening,
)
from spec.proofs.controller.ops import PyOps, WindowOps, Z3Ops

CONFIGS = {
    "default": Params(),
    "three-brokers-two-partitions": Params(brokers=3, partitions=2, max_expiries=2),
    "kraft": Params(mode="kraft"),
    **{bug: Params(bugs=frozenset({bug})) for bug in sorted(BUGS)},
}


def sample(params: Params, limit: int, size: int, seed: int = 3) -> list[State]:
    states = reachable_states(Controller(params), limit)
    if len(states) <= size:
        return states
    return random.Random(seed).sample(states, size)


def every_argument(spec: Controller, s: State) -> Any:
    """Every argument of every action, not only the domains', with the spec's successor."""
    for decl in spec.actions():
        fn = getattr(spec, decl.method)
        domain = set(getattr(spec, decl.domain)(s)) if decl.domain else {()}
        spaces = []
        for param in decl.params:
            if param == "m":
                spaces.append(sorted(s.requests, key=Request.key))
            elif param == "p":
                spaces.append(list(spec.parts))
            else:
                spaces.append(list(spec.ids))
        for args in itertools.product(*spaces):
            yield decl.name, args, (fn(s, *args) if args in domain else None)


def disagreements(params: Params, states: list[State]) -> list[str]:
    config = Config.of(params)
    spec = Controller(config.params())
    enc = Encoding(config, PyOps())
    names = {a.name for a in enc.actions()}
    assert names == {d.name for d in spec.actions()}
    found = []
    for s in states:
        st = enc.from_state(s)
        assert enc.to_state(st) == s
        for name, args, want in every_argument(spec, s):
            try:
                a, key = enc.instances_of(name, args)
            except ValueError:
                if want is not None:
                    found.append(f"{name}{args}: no instance, spec enables it")
                continue
            guard, post = enc.step(st, a, key)
            got = enc.to_state(post) if guard else None
            if got != want:
                found.append(f"{name}{args} on {spec.short(s)}: {got} != {want}")
    return found


# --- the encoding agrees with the spec -----------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=[pytest.mark.slow] if n == "kraft" else []) for n in sorted(CONFIGS)],
)
def test_encoded_actions_agree_with_the_spec_on_reachable_states(name: str) -> None:
    """Same enabledness and successor for every argument, on a sample of reachable states
    (deep ones included)."""
    params = CONFIGS[name]
    assert disagreements(params, sample(params, 3_000, 150)) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_encoded_actions_agree_with_the_spec_on_many_reachable_states(name: str) -> None:
    params = CONFIGS[name]
    assert disagreements(params, reachable_states(Controller(params), 10_000)) == []


class _Simplifier:
    """A stand-in for a z3 model whose terms are all literals: ``eval`` simplifies."""

    def eval(self, term: Any, model_completion: bool = True) -> Any:
        return z3.simplify(term)


def _read_z3(enc: Encoding, st: SymState) -> SymState:
    """A concrete state built from unbounded z3 terms (arrays), read back as Python values
    over the window's keys."""

    def num(t: Any) -> Any:
        v = z3.simplify(t)
        return bool(z3.is_true(v)) if z3.is_bool(v) else int(v.as_long())

    def members(arr: Any, space: list[tuple[int, ...]]) -> frozenset[tuple[int, ...]]:
        return frozenset(k for k in space if num(z3.Select(arr, *k)))

    def part(sp: SymPart) -> SymPart:
        return SymPart(num(sp.leader), num(sp.le), tuple(num(x) for x in sp.isr))

    return SymState(
        sess=tuple(num(x) for x in st.sess),
        ctl=num(st.ctl),
        cepoch=num(st.cepoch),
        cver=num(st.cver),
        parts=tuple(part(p) for p in st.parts),
        brokers=tuple(
            type(sb)(
                num(sb.ce),
                num(sb.act),
                num(sb.ver),
                tuple(SymRep(num(r.le), num(r.leader)) for r in sb.reps),
                tuple(part(c) for c in sb.ctx),
            )
            for sb in st.brokers
        ),
        um=members(st.um, enc.um_space),
        lai=tuple(members(s, enc.lai_space) for s in st.lai),
        sr=tuple(tuple(members(s, enc.sr_space) for s in row) for row in st.sr),
        wrote=tuple(members(s, enc.wrote_space) for s in st.wrote),
        hist=tuple({k: num(z3.Select(h, k)) for k in enc.le_values} for h in st.hist),
        expiries=num(st.expiries),
    )


@pytest.mark.parametrize("backend", ["unbounded", "window"])
def test_z3_terms_agree_with_the_spec_on_sampled_states(backend: str) -> None:
    """The same actions built as z3 terms over a concrete state's literals and simplified
    give the spec's guard and successor: the z3 reading of every operator is checked too."""
    params = Params(bugs=frozenset({"partition_version_only"}))
    config = Config.of(params)
    spec = Controller(config.params())
    enc = Encoding(config, Z3Ops() if backend == "unbounded" else WindowOps())
    penc = Encoding(config, PyOps())
    from spec.proofs.controller.obligations import read_state

    checked = 0
    for s in sample(params, 1_500, 10, seed=5):
        st = enc.from_state(s)
        for name, args, want in every_argument(spec, s):
            try:
                a, key = enc.instances_of(name, args)
            except ValueError:
                continue
            guard, post = enc.step(st, a, tuple(z3.IntVal(k) for k in key))
            enabled = z3.is_true(z3.simplify(guard))
            if backend == "unbounded":
                got = penc.to_state(_read_z3(enc, post)) if enabled else None
            else:
                got = penc.to_state(read_state(_Simplifier(), post)) if enabled else None
            assert got == want, (name, args, spec.short(s))
            checked += 1
    assert checked > 200


# --- the invariants ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["default", "three-brokers-two-partitions", "kraft"])
def test_every_invariant_holds_on_reachable_states(name: str) -> None:
    params = CONFIGS[name]
    enc = Encoding(Config.of(params), PyOps())
    for s in reachable_states(Controller(params), 2_000):
        st = enc.from_state(s)
        failing = [n for n, inv in REGISTRY.items() if not inv(enc, st)]
        assert failing == [], (failing, s)


@pytest.mark.parametrize("bug", ["accept_stale_controller_epoch", "unconditional_write"])
def test_restated_spec_invariants_agree_with_the_spec(bug: str) -> None:
    """On reachable states of broken variants, violating ones included, the restated state
    invariants and transition properties have the spec's values."""
    params = Params(bugs=frozenset({bug}))
    config = Config.of(params)
    spec = Controller(config.params())
    enc = Encoding(config, PyOps())
    decls = {d.name: d for d in spec.select_invariants(None)}
    assert set(SPEC_NAMES) | set(TRANSITIONS) == set(decls)
    seen = {name: set() for name in decls}
    for s in reachable_states(Controller(params), 2_000):
        st = enc.from_state(s)
        for name in SPEC_NAMES:
            value = bool(getattr(spec, decls[name].method)(s))
            assert bool(REGISTRY[name](enc, st)) == value, (name, s)
            seen[name].add(value)
        for decl, args, t in spec.successors(s):
            step = spec.step_of(decl, args)
            tt = enc.from_state(t)
            for name, fn in TRANSITIONS.items():
                value = bool(getattr(spec, decls[name].method)(s, step, t))
                assert bool(fn(enc, st, tt)) == value, (name, step)
                seen[name].add(value)
    assert any(False in values for values in seen.values()), "the variant never violated anything"


# --- the proofs ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["zookeeper", pytest.param("kraft", marks=pytest.mark.slow)])
def test_the_strengthening_is_inductive_and_no_action_is_vacuous(mode: str) -> None:
    run = prove(Config(mode=mode))
    assert run.status == PROVED, [
        (r.invariant, r.action, r.status) for r in run.results if r.status != PROVED
    ]
    assert run.enabled and all(answer == "sat" for _, answer in run.enabled), run.enabled
    proved = {r.invariant for r in run.results}
    assert set(SPEC_NAMES) | set(TRANSITIONS) <= proved


@pytest.mark.slow
def test_the_strengthening_is_inductive_with_three_brokers_and_two_partitions() -> None:
    run = prove(Config(brokers=3, partitions=2))
    assert run.status == PROVED
    assert all(answer == "sat" for _, answer in run.enabled)


def _without(name: str) -> str:
    rest = [n for n in strengthening() if n != name]
    run = prove(Config(), rest, assumed=rest, transitions=[], check_vacuity=False)
    return run.status


def test_an_auxiliary_invariant_is_needed() -> None:
    assert _without("StoreMatchesHistory") != PROVED


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, inv in REGISTRY.items() if inv.kind == "aux"])
def test_every_auxiliary_invariant_is_needed(name: str) -> None:
    assert _without(name) != PROVED


BREAKS = [
    ("accept_stale_controller_epoch", "NoStaleControllerEpochApplied", "apply_update_metadata"),
    ("unconditional_write", "LeaderEpochsOnlyGrow", "shrink_isr"),
    ("partition_version_only", "ContextIsCurrent", "shrink_isr"),
    ("epoch_not_persisted", "WritesNotAhead", "elect_controller"),
    # slower: the unbounded query gives up before the window finds these
    ("unconditional_write", "OneControllerWritesPerEpoch", "elect_leader"),
    ("unconditional_write", "BrokersMatchHistory", "elect_leader"),
    ("partition_version_only", "OneControllerWritesPerEpoch", "elect_leader"),
]


@pytest.mark.parametrize(
    ("bug", "invariant", "action"),
    [
        pytest.param(*case, marks=[pytest.mark.slow] if i >= 4 else [])
        for i, case in enumerate(BREAKS)
    ],
)
def test_each_broken_variant_fails_the_induction_where_it_should(
    bug: str, invariant: str, action: str
) -> None:
    run = prove(Config(bugs=frozenset({bug})), [invariant], actions=[action], check_vacuity=False)
    (result,) = [r for r in run.results if r.action == action]
    assert result.status == COUNTEREXAMPLE and result.cti is not None
    assert result.cti.step.action == action


def test_every_spec_invariant_and_fact_is_shown_able_to_fail() -> None:
    broken = {invariant for _, invariant, _ in BREAKS}
    wanted = {n for n, inv in REGISTRY.items() if inv.kind in ("spec", "fact")}
    # OneLeaderPerLeaderEpoch is preserved by every action *given* the strengthening, so no
    # bug gives it a CTI of its own: BrokersMatchHistory, what it rests on, fails instead,
    # and the model checker finds the two leaders (scenario unconditional-write-two-leaders).
    assert wanted - {"OneLeaderPerLeaderEpoch"} <= broken | set(TRANSITIONS)
    assert {"NoStaleControllerEpochApplied", "LeaderEpochsOnlyGrow"} <= broken


# --- the command line ----------------------------------------------------------------------


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(main, ["prove", "controller", *args])


def test_cli_proves_and_exits_0_with_json() -> None:
    result = _invoke("--action", "elect_controller", "--json")
    assert result.exit_code == 0, result.output
    payload = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert payload["status"] == "proved" and payload["counterexamples"] == 0
    # Init and elect_controller for the 13 invariants, elect_controller for the 2 transitions
    assert payload["obligations"] == payload["proved"] == 13 + 13 + 2
    assert set(payload["enabled"].values()) == {"sat"}


def test_cli_exits_1_with_a_counterexample_table() -> None:
    result = _invoke(
        "--bug",
        "unconditional_write",
        "--invariant",
        "LeaderEpochsOnlyGrow",
        "--action",
        "shrink_isr",
    )
    assert result.exit_code == 1, result.output
    assert "LeaderEpochsOnlyGrow is not preserved by shrink_isr" in result.stdout
    assert "| pre " in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--brokers", "4"], "brokers must be 2 or 3"),
        (["--truncation", "kip101"], "--truncation is a flag of spec replication"),
        (["--bug", "ack_before_hw"], "is not a bug of spec controller"),
        (["--invariant", "NoSuchThing"], "unknown invariant"),
        (["--action", "crash"], "no action 'crash'"),
        (["--timeout", "0"], "--timeout must be positive"),
    ],
)
def test_cli_rejects_bad_input_with_exit_2(args: list[str], message: str) -> None:
    result = _invoke(*args)
    assert result.exit_code == 2
    assert message in result.output
