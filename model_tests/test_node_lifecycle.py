"""The node life cycle is exactly its table: allowed events move, all others are refused."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.sim.node import (
    INITIAL_STATE,
    TRANSITIONS,
    IllegalTransition,
    NodeEvent,
    NodeLifecycles,
    NodeState,
    allowed_events,
    next_state,
    to_dot,
    to_markdown,
    to_mermaid,
)

EXPECTED = {
    (NodeState.RUNNING, NodeEvent.PAUSE): NodeState.PAUSED,
    (NodeState.PAUSED, NodeEvent.RESUME): NodeState.RUNNING,
    (NodeState.RUNNING, NodeEvent.CRASH): NodeState.CRASHED,
    (NodeState.PAUSED, NodeEvent.CRASH): NodeState.CRASHED,
    (NodeState.RUNNING, NodeEvent.STOP): NodeState.STOPPED,
    (NodeState.CRASHED, NodeEvent.RESTART): NodeState.RUNNING,
    (NodeState.STOPPED, NodeEvent.RESTART): NodeState.RUNNING,
}


@pytest.mark.parametrize(("state", "event"), list(itertools.product(NodeState, NodeEvent)))
def test_every_state_and_event_pair_follows_the_table_or_is_refused(
    state: NodeState, event: NodeEvent
) -> None:
    if (state, event) in EXPECTED:
        assert next_state(state, event) is EXPECTED[(state, event)]
    else:
        with pytest.raises(IllegalTransition) as info:
            next_state(state, event, node="b2")
        message = str(info.value)
        assert f"node 'b2' cannot {event.value} while {state.value}" in message
        allowed = [e.value for (s, e) in EXPECTED if s is state]
        assert message.endswith(f"events allowed while {state.value}: {', '.join(allowed)}")
        assert (info.value.node, info.value.state, info.value.event) == ("b2", state, event)


def test_the_table_has_no_extra_rows() -> None:
    assert {(r.source, r.event): r.target for r in TRANSITIONS} == EXPECTED
    assert len(TRANSITIONS) == len(EXPECTED)


def test_every_state_is_reachable_and_none_is_a_dead_end() -> None:
    seen, frontier = {INITIAL_STATE}, [INITIAL_STATE]
    while frontier:
        state = frontier.pop()
        for event in allowed_events(state):
            target = next_state(state, event)
            if target not in seen:
                seen.add(target)
                frontier.append(target)
    assert seen == set(NodeState)
    assert all(allowed_events(state) for state in NodeState)


def test_what_each_state_may_do() -> None:
    assert [s for s in NodeState if s.acts] == [NodeState.RUNNING]
    assert [s for s in NodeState if s.alive] == [NodeState.RUNNING, NodeState.PAUSED]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["b1", "b2"]), st.sampled_from(NodeEvent)), max_size=30))
def test_lifecycles_follow_the_table_and_refusals_change_nothing(
    steps: list[tuple[str, NodeEvent]],
) -> None:
    nodes = NodeLifecycles(["b2", "b1"])
    model = {"b1": (NodeState.RUNNING, 0), "b2": (NodeState.RUNNING, 0)}
    for name, event in steps:
        state, incarnation = model[name]
        version = nodes.version
        if (state, event) in EXPECTED:
            row = nodes.apply(name, event)
            assert (row.source, row.event, row.target) == (state, event, EXPECTED[(state, event)])
            incarnation += event is NodeEvent.RESTART
            model[name] = (row.target, incarnation)
            assert nodes.version == version + 1
        else:
            with pytest.raises(IllegalTransition, match=f"node '{name}' cannot {event.value}"):
                nodes.apply(name, event)
            assert nodes.version == version
        assert nodes.snapshot() == tuple((n, *model[n]) for n in ("b1", "b2"))


def test_a_pause_keeps_the_incarnation_and_a_restart_starts_a_new_one() -> None:
    nodes = NodeLifecycles(["b1"])
    nodes.pause("b1")
    nodes.resume("b1")
    assert nodes.incarnation("b1") == 0
    nodes.crash("b1")
    assert nodes.incarnation("b1") == 0
    nodes.restart("b1")
    assert nodes.incarnation("b1") == 1
    nodes.stop("b1")
    nodes.restart("b1")
    assert nodes.incarnation("b1") == 2


def test_names_are_sorted_and_unknown_or_duplicate_names_are_refused() -> None:
    nodes = NodeLifecycles(["c", "a", "b"])
    assert nodes.names == ("a", "b", "c")
    nodes.crash("b")
    assert nodes.in_state(NodeState.RUNNING) == ("a", "c")
    with pytest.raises(
        KeyError, match=re.escape("unknown node 'z'; the nodes are ['a', 'b', 'c']")
    ):
        nodes.pause("z")
    with pytest.raises(ValueError, match="already exists"):
        nodes.add("a")
    with pytest.raises(ValueError, match="non-empty str"):
        nodes.add("")


def test_diagrams_draw_exactly_the_table() -> None:
    mermaid = to_mermaid()
    assert mermaid.startswith("stateDiagram-v2\n    [*] --> running\n")
    arrows = set(re.findall(r"^    (\w+) --> (\w+): (\w+)$", mermaid, flags=re.M))
    assert arrows == {(s.value, t.value, e.value) for (s, e), t in EXPECTED.items()}

    dot = to_dot()
    edges = set(re.findall(r'^    (\w+) -> (\w+) \[label="(\w+)"', dot, flags=re.M))
    assert edges == {(s.value, t.value, e.value) for (s, e), t in EXPECTED.items()}
    assert dot.startswith("digraph node_lifecycle {") and dot.rstrip().endswith("}")

    rows = to_markdown().splitlines()[2:]
    assert len(rows) == len(EXPECTED)
    assert "| paused | resume | running |" in rows[1]
