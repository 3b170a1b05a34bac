"""``kmodel prove group``: KIP-848's invariants are inductive for every group and member
epoch, the encoding agrees with the spec state by state, and each broken variant yields a
counterexample to induction for the property it breaks."""

from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from spec.explore import reachable_states
from spec.group import Params, build
from spec.proofs.group.encoding import Encoding, cross_check
from spec.proofs.group.obligations import COUNTEREXAMPLE, INVARIANTS, PROVED, prove


@pytest.mark.parametrize(
    "params",
    [
        Params(protocol="consumer"),
        Params(protocol="consumer", bugs=frozenset({"assign_before_revoked"})),
        Params(protocol="consumer", bugs=frozenset({"no_member_epoch_fencing"})),
    ],
    ids=["fenced", "assign_before_revoked", "no_member_epoch_fencing"],
)
def test_encoding_agrees_with_the_spec_on_reachable_states(params: Params) -> None:
    states = reachable_states(build(params), 2_000)[:250]
    assert len(states) >= 40
    assert cross_check(Encoding(params), states) == []


@pytest.mark.parametrize(("members", "partitions"), [(2, 2), (3, 3)])
def test_every_obligation_is_proved(members: int, partitions: int) -> None:
    run = prove(Params(protocol="consumer", members=members, partitions=partitions))
    assert run.status == PROVED, [r for r in run.results if r.status != PROVED]
    assert all(answer == "sat" for _, answer in run.enabled), "no action holds vacuously"


def test_the_strengthening_holds_on_every_reachable_state() -> None:
    params = Params(protocol="consumer")
    enc = Encoding(params)
    import z3

    for s in reachable_states(build(params), 2_000):
        sym = enc.of_state(s)
        for name, (fn, _) in INVARIANTS.items():
            assert z3.is_true(z3.simplify(fn(enc, sym))), (name, s)


@pytest.mark.parametrize(
    ("bug", "broken"),
    [
        ("assign_before_revoked", "OneOwnerPerPartition"),
        ("no_member_epoch_fencing", "StaleGenerationChangesNothing"),
    ],
)
def test_each_bug_gives_a_counterexample_to_induction(bug: str, broken: str) -> None:
    run = prove(Params(protocol="consumer", bugs=frozenset({bug})))
    assert run.status == COUNTEREXAMPLE
    assert any(r.invariant == broken and r.cti is not None for r in run.results)


def test_cli_proves_and_reports_json() -> None:
    result = CliRunner().invoke(main, ["prove", "group", "--json"])
    assert result.exit_code == 0, result.output
    payload = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert payload["status"] == "proved" and payload["obligations"] == payload["proved"] == 59


def test_cli_exits_one_on_a_counterexample_and_two_on_a_classic_protocol() -> None:
    bad = CliRunner().invoke(main, ["prove", "group", "--bug", "assign_before_revoked"])
    assert bad.exit_code == 1 and "counterexample to induction" in bad.stdout
    classic = CliRunner().invoke(main, ["prove", "group", "--protocol", "classic"])
    assert classic.exit_code == 2
    assert "only KIP-848's protocol" in classic.stdout + classic.stderr
