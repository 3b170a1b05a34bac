"""The z3 encoding of the replication spec, and what it proves.

Trust in a proof is trust in its encoding, so most of this file checks the encoding against
the Python spec: on reachable states of small configurations, every encoded action has the
spec's enabledness and successor (under the Python backend, and under the z3 backend, term
by term), and every restated invariant has the spec's value. Then the proofs themselves:
the strengthening is inductive for the safe configuration (KIP-320), every action is enabled
under it (no vacuous obligation), every invariant is shown able to fail on a broken variant,
the pre-KIP-101 rule fails on the become-follower action, and bounded model checking finds
counterexamples exactly as long as the explicit checker's.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import z3
from click.testing import CliRunner

from jepsen_py.cli import main
from spec.explore import check, reachable_states
from spec.proofs import invariants as invs
from spec.proofs.bmc import bmc
from spec.proofs.encoding import (
    JUNK,
    Config,
    Encoding,
    PyOps,
    SymState,
    Z3Ops,
    python_args,
)
from spec.proofs.mutants import FAILS_UNDER, MUTANTS, PUBLISHED_ONLY
from spec.proofs.obligations import COUNTEREXAMPLE, PROVED, TRANSITIONS, applicable, prove
from spec.replication import Params, Quorum, Replica, Replication, State

# --- helpers -------------------------------------------------------------------------------


def sample(spec: Replication, limit: int, size: int, seed: int = 6) -> list[State]:
    states = reachable_states(spec, limit)
    if len(states) <= size:
        return states
    return random.Random(seed).sample(states, size)


def spec_transitions(
    spec: Replication, enc: Encoding, s: State
) -> Iterator[tuple[Any, dict[str, Any], State | None]]:
    """Every argument of every encoded action, with the spec's successor (None: disabled),
    over the *whole* argument space (not only the spec's domains)."""
    decls = {d.name: d for d in spec.actions()}
    for a in enc.actions():
        decl = decls[a.name]
        fn = getattr(spec, decl.method)
        domain = set(getattr(spec, decl.domain)(s)) if decl.domain else {()}
        spaces = [
            sorted(s.requests, key=Quorum.key) if p == "q" else list(spec.ids) for p in decl.params
        ]
        for args in itertools.product(*spaces):
            want = fn(s, *args) if args in domain else None
            base = python_args(enc, a, s, args)
            hidden = list(spec.ids) if "_leader" in a.replicas else [None]
            for h in hidden:
                full = dict(base)
                if h is not None and h != full["_leader"]:
                    yield a, {**full, "_leader": h}, None
                    continue
                yield a, full, want


def disagreements(params: Params, states: list[State], enc_class: type = Encoding) -> list[str]:
    spec = Replication(params)
    enc = enc_class(Config.of(params), PyOps())
    assert {a.name for a in enc.actions()} == {d.name for d in spec.actions()}
    found = []
    for s in states:
        for junk in (JUNK, 5):
            st = enc.from_state(s, junk)
            assert enc.to_state(st) == s
            for a, args, want in spec_transitions(spec, enc, s):
                guard, post = enc.step(st, a, args)
                got = enc.to_state(post) if guard else None
                if got != want:
                    found.append(f"{a.name}{args} on {spec.short(s)}: {got} != {want}")
    return found


SAFE = Params(replicas=2, truncation="kip320")
CONFIGS = {
    "kip320": SAFE,
    "high_watermark": Params(truncation="high_watermark"),
    "kip101": Params(truncation="kip101"),
    "kip279-3": Params(replicas=3, truncation="kip279"),
    "extended-acks-all": Params(model="extended", leader_view=False),
    "extended-acks-1": Params(model="extended", leader_view=False, acks="1"),
    "extended-min-isr-2": Params(model="extended", leader_view=False, replicas=3, min_isr=2),
    "bugs": Params(
        truncation="kip279",
        bugs=frozenset({"elect_outside_isr", "accept_stale_epoch", "follower_hw_unclamped"}),
    ),
    "ack-before-hw": Params(model="extended", leader_view=False, bugs=frozenset({"ack_before_hw"})),
}


# --- the encoding agrees with the spec -----------------------------------------------------


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_encoded_actions_agree_with_the_spec_on_reachable_states(name: str) -> None:
    """Same enabledness and same successor, for every argument, on a sample of reachable
    states (deep ones included), whatever junk fills the log vectors past their ends."""
    params = CONFIGS[name]
    states = sample(Replication(params), 4_000, 120)
    assert disagreements(params, states) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_encoded_actions_agree_with_the_spec_on_every_reachable_state(name: str) -> None:
    params = CONFIGS[name]
    assert disagreements(params, reachable_states(Replication(params), 40_000)) == []


def test_the_cross_check_catches_a_wrong_encoding() -> None:
    """A plausible slip (a follower capping the leader's HW at its LEO *before* the append
    instead of after) is caught on reachable states, and only there where it matters."""

    class Slipped(Encoding):
        def replicate(self, st: SymState, leader: int, f: int) -> tuple[Any, SymState]:
            guard, post = super().replicate(st, leader, f)
            hw = self.min(self.rep(st, leader).hw, self.rep(st, f).leo)
            return guard, self.with_rep(post, f, attrs.evolve(self.rep(post, f), hw=hw))

    states = sample(Replication(SAFE), 4_000, 120)
    found = disagreements(SAFE, states, Slipped)
    assert found and all("follower_fetch_fenced" in line for line in found)
    assert disagreements(SAFE, states) == []


def _z3_state(enc: Encoding, st: SymState, epochs: range, ids: range) -> State:
    """A z3-backend state of numerals, simplified back to a spec state."""

    def num(term: Any) -> int:
        if isinstance(term, int):  # an argument passed through (the request's epoch)
            return term
        return int(z3.simplify(term).as_long())

    def true(term: Any) -> bool:
        return bool(z3.is_true(z3.simplify(term)))

    reps = []
    for rep in st.reps:
        leo = num(rep.leo)
        log = tuple((num(rep.log_ep[k]), num(rep.log_id[k])) for k in range(leo))
        isr = frozenset(m for m in enc.ids if true(rep.isr[m - 1]))
        reps.append(Replica(log, num(rep.hw), num(rep.epoch), num(rep.leader), isr))
    requests = frozenset(
        Quorum(
            e,
            num(z3.Select(st.req_leader, e)),
            frozenset(m for m in enc.ids if true(z3.Select(st.req_isr[m - 1], e))),
        )
        for e in epochs
        if true(z3.Select(st.req_in, e))
    )
    from spec.replication import Pending, Write

    pending = frozenset(
        Pending(num(z3.Select(st.pend_leader, i)), num(z3.Select(st.pend_offset, i)), i)
        for i in ids
        if true(z3.Select(st.pend_in, i))
    )
    acked = frozenset(
        Write(num(z3.Select(st.acked_offset, i)), i, enc.c.acked_kind)
        for i in ids
        if true(z3.Select(st.acked_in, i))
    )
    return State(
        tuple(reps),
        Quorum(
            num(st.q_epoch),
            num(st.q_leader),
            frozenset(m for m in enc.ids if true(st.q_isr[m - 1])),
        ),
        requests,
        num(st.next_id),
        num(st.next_epoch),
        0,
        acked if enc.c.extended else frozenset(),
        pending if enc.c.extended else frozenset(),
    )


@pytest.mark.parametrize("name", ["kip320", "kip101", "extended-acks-all", "high_watermark"])
def test_z3_terms_agree_with_the_spec_on_sampled_states(name: str) -> None:
    """The z3 reading of every operator: the same actions, built as z3 terms over the
    numerals of a concrete state and simplified, give the spec's guard and successor."""
    params = CONFIGS[name]
    spec = Replication(params)
    enc = Encoding(Config.of(params), Z3Ops())
    epochs = range(-1, params.max_epoch + 2)
    ids = range(-1, params.max_records + 2)
    checked = 0
    for s in sample(spec, 3_000, 12, seed=11):
        st = enc.from_state(s)
        for a, args, want in spec_transitions(spec, enc, s):
            guard, post = enc.step(st, a, args)
            enabled = z3.is_true(z3.simplify(guard))
            got = _z3_state(enc, post, epochs, ids) if enabled else None
            assert got == want, (a.name, args, spec.short(s))
            checked += 1
    assert checked > 300


# --- the invariants, restated ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["kip320", "extended-acks-all", "extended-min-isr-2"])
def test_every_invariant_holds_on_reachable_safe_states(name: str) -> None:
    """A necessary condition for the strengthening: each auxiliary invariant is true of
    every reachable state of small safe configurations."""
    params = CONFIGS[name]
    enc = Encoding(Config.of(params), PyOps())
    for s in sample(Replication(params), 6_000, 1_500):
        st = enc.from_state(s)
        failing = [inv.name for inv in invs.for_config(enc) if not inv(enc, st)]
        assert failing == [], (failing, s)


@pytest.mark.slow
def test_every_invariant_holds_on_every_reachable_state_with_three_replicas() -> None:
    params = Params(replicas=3, truncation="kip320")
    enc = Encoding(Config.of(params), PyOps())
    for s in reachable_states(Replication(params), 10**6):
        st = enc.from_state(s)
        assert all(inv(enc, st) for inv in invs.for_config(enc)), s


@pytest.mark.parametrize("name", ["high_watermark", "kip101", "ack-before-hw", "extended-acks-1"])
def test_restated_spec_invariants_agree_with_the_spec(name: str) -> None:
    """On reachable states of unsafe configurations too, where they are violated."""
    params = CONFIGS[name]
    spec = Replication(params)
    enc = Encoding(Config.of(params), PyOps())
    python = {d.name: getattr(spec, d.method) for d in spec.invariants()}
    restated = [inv for inv in invs.for_config(enc) if inv.kind == "spec"]
    assert {inv.name for inv in restated} <= set(python)
    violated = set()
    for s in sample(spec, 8_000, 2_000):
        st = enc.from_state(s)
        for inv in restated:
            value = bool(inv(enc, st))
            assert value == python[inv.name](s), (inv.name, s)
            if not value:
                violated.add(inv.name)
    if name == "high_watermark":
        assert {"StrongIsr", "WeakIsr"} <= violated


# --- proofs --------------------------------------------------------------------------------


def unbounded(params: Params, log_bound: int = 2) -> Config:
    return Config.of(params, log_bound, bounded=False)


def test_the_strengthening_is_inductive_for_kip320_with_two_replicas() -> None:
    """Every invariant, and the EpochsOnlyGrow transition property, is proved for every
    action, with logs of any length up to 2 and unbounded epochs, ids and offsets; and every
    action is enabled in some state of the strengthening (nothing holds vacuously)."""
    run = prove(unbounded(SAFE), timeout_ms=30_000)
    assert [(r.invariant, r.action, r.status) for r in run.results if r.status != PROVED] == []
    assert len(run.results) == 31 + 9 * 32
    assert dict(run.enabled) == {a: "sat" for a, _ in run.enabled}
    assert "StrongIsr" in run.assumed and "WeakIsr" in run.assumed


@pytest.mark.slow
@pytest.mark.parametrize(
    ("params", "log_bound"),
    [
        (Params(replicas=3, truncation="kip320"), 3),
        (Params(replicas=3, truncation="kip320"), 4),
        (Params(replicas=3, model="extended", leader_view=False), 2),
        (Params(replicas=3, model="extended", leader_view=False, min_isr=2), 2),
    ],
)
def test_the_strengthening_is_inductive_for_the_safe_configurations(
    params: Params, log_bound: int
) -> None:
    run = prove(unbounded(params, log_bound), timeout_ms=60_000)
    assert [(r.invariant, r.action, r.status) for r in run.results if r.status != PROVED] == []
    assert all(answer == "sat" for _, answer in run.enabled)


def test_high_watermark_truncation_fails_the_induction_on_become_follower() -> None:
    """Before KIP-101: even with every auxiliary invariant assumed, a follower that
    truncates to its own HW drops a committed record. The CTI is checked concretely: the
    spec's own StrongIsr holds before and fails after the spec's own action."""
    params = Params(replicas=2, truncation="high_watermark")
    config = unbounded(params)
    run = prove(
        config,
        ["StrongIsr"],
        strengthening=[inv.name for inv in applicable(config)],
        actions=["become_follower"],
        timeout_ms=10_000,
    )
    (result,) = [
        r for r in run.results if r.action == "become_follower" and r.invariant == "StrongIsr"
    ]
    assert result.status == COUNTEREXAMPLE
    cti = result.cti
    assert cti is not None and cti.validated and cti.pre is not None
    spec = Replication(Params(replicas=2, truncation="high_watermark", log_size=2))
    assert spec.strong_isr(cti.pre) and not spec.strong_isr(cti.post)
    # the follower lost a record below the leader's HW: truncation to its own, lagging HW
    assert sum(r.leo for r in cti.post.replicas) < sum(r.leo for r in cti.pre.replicas)


def shown_to_fail(invariant: str) -> Any:
    """Prove ``invariant`` for the broken variant ``FAILS_UNDER`` names, on the one action
    it names; the result for that obligation."""
    params, mutant, action, strengthening = FAILS_UNDER[invariant]
    config = unbounded(params)
    if strengthening == PUBLISHED_ONLY:
        names = [inv.name for inv in applicable(config) if not inv.extended_only]
        names.append(invariant)
    else:
        names = [inv.name for inv in applicable(config)]
    transition = invariant in TRANSITIONS
    run = prove(
        config,
        [] if transition else [invariant],
        strengthening=names,
        actions=[action],
        transitions=(invariant,) if transition else (),
        timeout_ms=15_000,
        minimise=False,
        check_vacuity=False,
        encoding=MUTANTS[mutant] if mutant else Encoding,
    )
    (result,) = [r for r in run.results if r.invariant == invariant and r.action == action]
    return result


def test_every_invariant_has_a_variant_that_breaks_it() -> None:
    published = {inv.name for inv in applicable(unbounded(SAFE))}
    extended = {inv.name for inv in applicable(unbounded(CONFIGS["extended-acks-all"]))}
    assert set(FAILS_UNDER) == published | extended | set(TRANSITIONS)


@pytest.mark.parametrize(
    "invariant", ["HwBelowLeo", "LeaderInIsr", "RequestEpochs", "EpochsOnlyGrow"]
)
def test_obligations_are_shown_able_to_fail(invariant: str) -> None:
    result = shown_to_fail(invariant)
    assert result.status == COUNTEREXAMPLE and result.cti is not None and result.cti.validated


@pytest.mark.slow
@pytest.mark.parametrize("invariant", sorted(FAILS_UNDER))
def test_every_obligation_is_shown_able_to_fail(invariant: str) -> None:
    result = shown_to_fail(invariant)
    assert result.status == COUNTEREXAMPLE and result.cti is not None and result.cti.validated


# --- bounded model checking ------------------------------------------------------------------


def _replay(params: Params, trace: tuple[Any, ...]) -> State:
    """Run a BMC trace through the Python spec, step by step."""
    spec = Replication(params)
    s = next(iter(spec.init()))
    assert trace[0].state == s
    for step in trace[1:]:
        decl = next(d for d in spec.actions() if d.name == step.step.action)
        args = tuple(value for _, value in step.step.args)
        assert decl.domain is not None
        assert args in list(getattr(spec, decl.domain)(s)), step.step.describe()
        s = getattr(spec, decl.method)(s, *args)
        assert s == step.state, step.step.describe()
    return s


def _bmc_matches_explicit(params: Params, max_steps: int) -> int:
    explicit = check(Replication(params), invariants=["StrongIsr"])
    assert explicit.violation is not None
    found = bmc(Config.of(params), "StrongIsr", max_steps)
    assert found.status == "counterexample"
    assert found.depth == explicit.violation.depth
    end = _replay(params, found.trace)
    assert not Replication(params).strong_isr(end)
    return found.depth


def test_bmc_finds_the_kip101_loss_as_short_as_the_explicit_checker() -> None:
    """Published model, two replicas, truncation to the HW: both find the shortest
    StrongIsr violation at depth 10 (9 steps), TLC's figure; the BMC trace is a real
    execution of the spec."""
    depth = _bmc_matches_explicit(Params(replicas=2, truncation="high_watermark"), 12)
    assert depth == 10


@pytest.mark.slow
@pytest.mark.parametrize(
    ("replicas", "truncation", "max_steps"),
    [(3, "high_watermark", 10), (2, "kip101", 13), (3, "kip279", 12)],
)
def test_bmc_agrees_with_the_explicit_checker(
    replicas: int, truncation: str, max_steps: int
) -> None:
    _bmc_matches_explicit(Params(replicas=replicas, truncation=truncation), max_steps)


def test_bmc_finds_nothing_within_the_bound_for_kip320() -> None:
    found = bmc(Config.of(SAFE), "StrongIsr", 6)
    assert found.status == "bounded" and found.steps == 6


# --- the command line ----------------------------------------------------------------------


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(main, ["prove", "replication", *args])


def test_cli_proves_kip320_and_exits_0_with_json() -> None:
    import orjson

    result = _invoke("--replicas", "2", "--log-bound", "2", "--action", "leader_write", "--json")
    assert result.exit_code == 0, result.output
    payload = orjson.loads(result.output.strip().splitlines()[-1])
    assert payload["status"] == "proved" and payload["counterexamples"] == 0
    assert payload["obligations"] == 31 + 32


def test_cli_exits_1_with_a_counterexample_table() -> None:
    result = _invoke(
        "--truncation",
        "high_watermark",
        "--replicas",
        "2",
        "--log-bound",
        "2",
        "--invariant",
        "StrongIsr",
        "--action",
        "become_follower",
    )
    assert result.exit_code == 1, result.output
    assert "StrongIsr is not preserved by become_follower" in result.output
    assert "| pre " in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--replicas", "9"], "replicas must be 1..4"),
        (["--acks", "1"], "only with --model extended"),
        (["--invariant", "NoSuchThing"], "unknown invariant"),
        (["--timeout", "0"], "--timeout must be positive"),
        (["--model", "extended", "--action", "crash"], "no action 'crash'"),
    ],
)
def test_cli_rejects_bad_input_with_exit_2(args: list[str], message: str) -> None:
    result = _invoke(*args)
    assert result.exit_code == 2
    assert message in result.output


def test_cli_reports_unknown_on_timeout_with_exit_2() -> None:
    result = _invoke(
        "--invariant",
        "CommittedEverywhere",
        "--action",
        "become_follower_fenced",
        "--timeout",
        "0.001",
        "--no-minimise",
    )
    assert result.exit_code == 2, result.output
    assert "unknown" in result.output
