"""Liveness checking (``spec.liveness``): fairness semantics on small specs whose answers are
known by hand, every lasso re-verified independently, and the specs' liveness properties
with the variants that break them."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import attrs
import orjson
import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from spec.controller import Controller
from spec.controller import Params as ControllerParams
from spec.framework import Fair, Spec, SpecError, action, eventually
from spec.liveness import Lasso, build_graph, check_liveness
from spec.replication import Params, Replication

# --- a toy spec with known answers ------------------------------------------------------------


@attrs.frozen
class ToyParams:
    go: str = "none"  # "none", "weak" or "strong": the fairness of `go`
    flip_fair: bool = True
    bound: int = 99


class Toy(Spec):
    """A light that flips between on (1) and off (0); ``go`` is enabled only while it is on
    and leads to ``done`` (2). ``count`` grows with each flip up to ``bound`` (a state
    beyond the bound is not expanded)."""

    name = "toy"

    def __init__(self, p: ToyParams) -> None:
        self.p = p

    def init(self) -> Iterator[tuple[int, int]]:
        yield (0, 0)

    def within_bounds(self, s: tuple[int, int]) -> bool:
        return s[1] <= self.p.bound

    @action()
    def flip(self, s: tuple[int, int]) -> tuple[int, int] | None:
        """The light flips."""
        light, count = s
        if light == 2:
            return None
        return (1 - light, min(count + 1, 3) if self.p.bound < 99 else 0)

    @action()
    def go(self, s: tuple[int, int]) -> tuple[int, int] | None:
        """Done, possible only while the light is on."""
        return (2, s[1]) if s[0] == 1 else None

    @eventually()
    def done(self, s: tuple[int, int]) -> bool:
        """Eventually done."""
        return s[0] == 2

    @eventually(after="is_on")
    def done_after_on(self, s: tuple[int, int]) -> bool:
        """Once on, eventually done."""
        return s[0] == 2

    def is_on(self, s: tuple[int, int]) -> bool:
        return s[0] == 1

    def fairness(self) -> tuple[Fair, ...]:
        out = [Fair("flip")] if self.p.flip_fair else []
        if self.p.go != "none":
            out.append(Fair("go", strong=self.p.go == "strong"))
        return tuple(out)


def verify_lasso(spec: Spec, lasso: Lasso, goal: str, premise: str | None) -> None:
    """Check a counterexample independently of the checker: it is a path of the spec, it
    returns to where its cycle starts, the goal never holds on the cycle (from a premise
    state on, for ``P ~> Q``), and
    the cycle is fair (each fair action taken on it, or disabled somewhere on it, and a
    strongly fair one never enabled on it unless taken)."""
    states = [step.state for step in lasso.prefix + lasso.cycle]
    assert list(spec.init()).count(states[0]) == 1
    for before, after in itertools.pairwise(states):
        assert any(t == after for _, _, t in spec.successors(before))
    loop = len(lasso.prefix) - 1
    if lasso.cycle:
        assert states[-1] == states[loop]
    on_cycle = states[loop:] if lasso.cycle else [states[loop]]
    holds = getattr(spec, goal)
    if premise is None:  # []<>Q fails when Q never holds on the cycle
        assert not any(holds(s) for s in on_cycle)
    else:  # P ~> Q fails when, from some P state on, Q never holds again
        assert any(
            getattr(spec, premise)(states[i]) and not any(holds(s) for s in states[i:])
            for i in range(loop + 1)
        )
    taken = {step.step.action for step in lasso.cycle if step.step is not None}
    for fair in spec.fairness():
        enabled = [
            any(d.name == fair.action and t != s for d, _, t in spec.successors(s))
            for s in on_cycle
        ]
        if fair.action in taken:
            continue
        if fair.strong:
            assert not any(enabled), f"SF({fair.action}) violated by the reported cycle"
        else:
            assert not all(enabled), f"WF({fair.action}) violated by the reported cycle"


@pytest.mark.parametrize(
    ("params", "violated", "cycle"),
    [
        # no fairness for go: the light may flip for ever
        (ToyParams(go="none"), True, 2),
        # weak fairness is not enough: go is disabled every other state
        (ToyParams(go="weak"), True, 2),
        # strong fairness: enabled infinitely often, so taken
        (ToyParams(go="strong"), False, None),
        # flip not fair either: stopping while off is fair (go is disabled there)
        (ToyParams(go="weak", flip_fair=False), True, 0),
    ],
)
def test_fairness_semantics_on_a_toy(params: ToyParams, violated: bool, cycle: int | None) -> None:
    spec = Toy(params)
    result = check_liveness(spec, properties=["Done"])
    assert (result.violation is not None) == violated
    if result.violation is not None:
        assert len(result.violation.lasso.cycle) == cycle
        verify_lasso(spec, result.violation.lasso, "done", None)


def test_premise_restricts_where_the_search_starts() -> None:
    spec = Toy(ToyParams(go="weak"))
    result = check_liveness(spec, properties=["DoneAfterOn"])
    assert result.violation is not None
    verify_lasso(spec, result.violation.lasso, "done_after_on", "is_on")


def test_states_outside_the_bounds_are_never_part_of_a_counterexample() -> None:
    # With a bound, the flip count leaves the bounds after a few flips: the only cycles are
    # beyond it, so no counterexample is reported (and flip, which leads out, is fair).
    spec = Toy(ToyParams(go="weak", bound=2))
    graph = build_graph(spec)
    assert any(graph.cut)
    assert check_liveness(spec, properties=["Done"], graph=graph).violation is None


def test_fairness_must_name_an_action_the_spec_runs() -> None:
    class Broken(Toy):
        def fairness(self) -> tuple[Fair, ...]:
            return (Fair("nope"),)

    with pytest.raises(SpecError, match="fairness names action 'nope'"):
        check_liveness(Broken(ToyParams()))


def test_an_unknown_liveness_property_is_refused() -> None:
    with pytest.raises(SpecError, match="unknown liveness property 'Nope'"):
        check_liveness(Toy(ToyParams()), properties=["Nope"])


# --- the specs ---------------------------------------------------------------------------------


def lasso_shape(spec: Spec) -> tuple[str, int, int] | None:
    result = check_liveness(spec)
    assert result.complete
    if result.violation is None:
        return None
    decl = next(d for d in spec.applicable_liveness() if d.name == result.violation.name)
    verify_lasso(spec, result.violation.lasso, decl.method, decl.premise)
    lasso = result.violation.lasso
    return result.violation.name, len(lasso.prefix), len(lasso.cycle)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (Params(), None),
        (Params(truncation="kip279"), None),
        (Params(truncation="high_watermark"), None),
        (Params(model="extended"), None),
        # The follower never fetches: the leader's HW waits for ever (stutter after 5 states).
        (Params(bugs=frozenset({"follower_stops_fetching"})), ("LeaderCommitsItsLog", 5, 0)),
        # The published model disables a follower's truncation step when the KIP-101 offset
        # lies past its log end (Kafka treats it as a no-op): that follower can never follow
        # the current leader, whose HW then stalls -- a deadlock of the published model.
        (Params(truncation="kip101"), ("LeaderCommitsItsLog", 10, 0)),
    ],
    ids=["kip320", "kip279", "high_watermark", "extended", "follower_stops_fetching", "kip101"],
)
def test_replication_liveness(params: Params, expected: tuple[str, int, int] | None) -> None:
    assert lasso_shape(Replication(params)) == expected


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (ControllerParams(), None),
        (ControllerParams(mode="kraft"), None),
        (
            ControllerParams(bugs=frozenset({"zombie_never_resigns"})),
            ("ZombieStepsDown", 3, 0),
        ),
    ],
    ids=["zookeeper", "kraft", "zombie_never_resigns"],
)
def test_controller_liveness(
    params: ControllerParams, expected: tuple[str, int, int] | None
) -> None:
    assert lasso_shape(Controller(params)) == expected


# --- the CLI -------------------------------------------------------------------------------------


def run(*args: str) -> Any:
    return CliRunner().invoke(main, ["check", *args])


def test_check_reports_a_liveness_violation_with_its_lasso() -> None:
    result = run("replication", "--bug", "follower_stops_fetching")
    assert result.exit_code == 1, result.output
    assert "Liveness property LeaderCommitsItsLog is violated" in result.output
    assert "then state 5 repeats forever" in result.output


def test_check_json_carries_the_liveness_figures() -> None:
    result = run("replication", "--bug", "follower_stops_fetching", "--json")
    assert result.exit_code == 1
    payload = orjson.loads(result.output.strip().splitlines()[-1])
    assert payload["violation_kind"] == "liveness"
    assert payload["liveness"]["violated"] == "LeaderCommitsItsLog"
    assert (payload["liveness"]["prefix_length"], payload["liveness"]["cycle_length"]) == (5, 0)


def test_no_liveness_skips_it_and_invariant_selects_it() -> None:
    assert run("replication", "--bug", "follower_stops_fetching", "--no-liveness").exit_code == 0
    only = run("replication", "--invariant", "LeaderCommitsItsLog", "--json")
    payload = orjson.loads(only.output.strip().splitlines()[-1])
    assert only.exit_code == 0
    assert payload["checked"] == [] and payload["liveness"]["checked"] == ["LeaderCommitsItsLog"]


def test_symmetry_skips_liveness_with_a_reason() -> None:
    result = run("replication", "--symmetry", "--bug", "follower_stops_fetching")
    assert result.exit_code == 0
    assert "liveness not checked: it needs the unreduced graph" in result.output
