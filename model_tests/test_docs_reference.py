"""docs/reference/ is rendered from the specs' declarations and kept current."""

from __future__ import annotations

from pathlib import Path

import pytest

import spec.replication
from model_tests.scenario_files import assert_matches_file
from spec.framework import SpecError
from spec.reference import cited, docstring_markdown, field_docs, kafka_refs, render_reference
from spec.replication import Params, Pending, Quorum, Replica, Replication, State, Write

DOCS = Path(__file__).parent.parent / "docs"

INTRO = """
Generated from `spec/replication/` by `model_tests/test_docs_reference.py` (run pytest with
`--rewrite` after changing a docstring). The narrative is in `docs/replication.md`.
"""


def test_replication_reference_is_current(rewrite: bool) -> None:
    configurations = [
        ("published-2018 (unfenced)", Replication(Params(truncation="kip279"))),
        ("published-2018 (kip320)", Replication(Params(truncation="kip320"))),
        (
            "extended (kip320)",
            Replication(Params(model="extended", truncation="kip320", max_crashes=1)),
        ),
        (
            "extended (unclean, high_watermark)",
            Replication(
                Params(model="extended", truncation="high_watermark", unclean=True, max_crashes=1)
            ),
        ),
    ]
    text = render_reference(
        "Replication spec: reference",
        INTRO,
        configurations,
        mechanism=[spec.replication],
        state=[State, Replica, Quorum, Write, Pending],
    )
    assert_matches_file(DOCS / "reference" / "replication.md", text, rewrite)


CONTROLLER_INTRO = """
Generated from `spec/controller.py` by `model_tests/test_docs_reference.py` (run pytest with
`--rewrite` after changing a docstring). The narrative is in `docs/controller.md`.
"""


def test_controller_reference_is_current(rewrite: bool) -> None:
    import spec.controller
    from spec.controller import Broker, Controller, LocalReplica, PartitionState, Request, Store
    from spec.controller import Params as ControllerParams
    from spec.controller import State as ControllerState

    configurations = [
        ("zookeeper (both fences on)", Controller(ControllerParams())),
        (
            "zookeeper + partition_version_only (before Kafka 2.2)",
            Controller(ControllerParams(bugs=frozenset({"partition_version_only"}))),
        ),
        (
            "zookeeper + accept_stale_controller_epoch",
            Controller(ControllerParams(bugs=frozenset({"accept_stale_controller_epoch"}))),
        ),
        ("kraft", Controller(ControllerParams(mode="kraft"))),
    ]
    text = render_reference(
        "Controller spec: reference",
        CONTROLLER_INTRO,
        configurations,
        mechanism=[spec.controller],
        state=[ControllerState, Store, PartitionState, Broker, LocalReplica, Request],
    )
    assert_matches_file(DOCS / "reference" / "controller.md", text, rewrite)


GROUP_INTRO = """
Generated from `spec/group/` by `model_tests/test_docs_reference.py` (run pytest with
`--rewrite` after changing a docstring). The narrative is in `docs/groups.md`.
"""


def test_group_reference_is_current(rewrite: bool) -> None:
    import spec.group
    import spec.group.classic
    import spec.group.consumer
    from spec.group import Params as GroupParams
    from spec.group import build
    from spec.group.classic import Group, Member, MemberMeta, Stored
    from spec.group.classic import Request as GroupRequest
    from spec.group.classic import State as ClassicState
    from spec.group.consumer import Client
    from spec.group.consumer import Record as MemberRecord
    from spec.group.consumer import State as ConsumerState

    configurations = [
        ("classic (eager)", build(GroupParams())),
        ("cooperative (KIP-429)", build(GroupParams(protocol="cooperative"))),
        ("classic, no failover", build(GroupParams(max_failovers=0))),
        ("consumer (KIP-848)", build(GroupParams(protocol="consumer"))),
    ]
    text = render_reference(
        "Consumer-group spec: reference",
        GROUP_INTRO,
        configurations,
        mechanism=[spec.group, spec.group.classic, spec.group.consumer],
        state=[
            ClassicState,
            Group,
            MemberMeta,
            Stored,
            Member,
            GroupRequest,
            ConsumerState,
            MemberRecord,
            Client,
        ],
    )
    assert_matches_file(DOCS / "reference" / "groups.md", text, rewrite)


def test_groups_page_draws_the_life_cycle_tables_as_printed() -> None:
    from spec.group.lifecycle import (
        GROUP_TRANSITIONS,
        GROUP_WHY,
        MEMBER_TRANSITIONS,
        MEMBER_WHY,
        mermaid,
    )

    page = (DOCS / "groups.md").read_text()
    assert mermaid(GROUP_TRANSITIONS, GROUP_WHY) in page
    assert mermaid(MEMBER_TRANSITIONS, MEMBER_WHY) in page


REBALANCE_INTRO = """
Generated from `spec/rebalance/` by `model_tests/test_docs_reference.py` (run pytest with
`--rewrite` after changing a docstring). The narrative is in `docs/leadership.md`; the
data-plane actions are `spec/replication/`'s, documented in `docs/reference/replication.md`.
"""


def test_rebalance_reference_is_current(rewrite: bool) -> None:
    import spec.rebalance
    from spec.rebalance import Meta, Rebalance, RState
    from spec.rebalance import Params as RebalanceParams

    configurations = [
        (mechanism, Rebalance(RebalanceParams.of(mechanism)))
        for mechanism in ("preferred", "shutdown", "reassignment", "elr")
    ]
    configurations.append(
        ("elr + no_elr (before KIP-966)", Rebalance(RebalanceParams.of(bugs={"no_elr"})))
    )
    text = render_reference(
        "Rebalance spec: reference",
        REBALANCE_INTRO,
        configurations,
        mechanism=[spec.rebalance],
        state=[RState, Meta],
    )
    assert_matches_file(DOCS / "reference" / "rebalance.md", text, rewrite)


OFFSETS_INTRO = """
Generated from `spec/offsets/` by `model_tests/test_docs_reference.py` (run pytest with
`--rewrite` after changing a docstring). The narrative is in `docs/offsets.md`.
"""


def test_offsets_reference_is_current(rewrite: bool) -> None:
    import spec.offsets
    import spec.offsets.commits
    from spec.offsets import Params as OffsetsParams
    from spec.offsets import build
    from spec.offsets.commits import Commit, Consumer, Stored
    from spec.offsets.commits import Group as OffsetsGroup
    from spec.offsets.commits import State as OffsetsState

    configurations = [
        ("after-process (at least once)", build(OffsetsParams())),
        ("before-process (at most once)", build(OffsetsParams(commit="before-process"))),
        ("after-process, no failover", build(OffsetsParams(max_failovers=0))),
    ]
    text = render_reference(
        "Offsets spec: reference",
        OFFSETS_INTRO,
        configurations,
        mechanism=[spec.offsets, spec.offsets.commits],
        state=[OffsetsState, OffsetsGroup, Stored, Consumer, Commit],
    )
    assert_matches_file(DOCS / "reference" / "offsets.md", text, rewrite)


SPEC_PAGES = ("replication", "controller", "groups", "rebalance", "offsets")


@pytest.mark.parametrize("page", SPEC_PAGES)
def test_every_spec_page_opens_with_plain_words_then_state_then_tables(page: str) -> None:
    text = (DOCS / "reference" / f"{page}.md").read_text()
    order = [
        "## The mechanism in plain words",
        "## State",
        "## Actions",
        "## Invariants and transition properties",
        '## "Sometimes" properties',
    ]
    where = [text.find(heading) for heading in order]
    assert -1 not in where and where == sorted(where), f"{page}: sections {where}"
    assert "In plain words." in text
    assert "| Kafka configs, KIPs |" in text


def test_kafka_refs_finds_configs_and_kips_and_skips_project_names() -> None:
    doc = """KIP-320: a follower joins the ISR (``replica.lag.time.max.ms``) with acks=all
    and ``unclean.leader.election.enable=true``, not ``spec.replication`` nor
    ``history.jsonl`` nor ``Partition.makeLeader``; KIP-320 again, then KIP-101."""
    assert kafka_refs(doc) == (
        "`acks`, `replica.lag.time.max.ms`, `unclean.leader.election.enable`, KIP-320, KIP-101"
    )
    assert kafka_refs("A leader is in its own ISR.") == "-"
    assert cited(["KIP-320, ``flush.ms``", "KIP-101 and acks=1", "none here"]) == (
        "`acks`, `flush.ms`, KIP-101, KIP-320"
    )


def test_the_reference_cites_the_configs_and_kips_of_the_actions() -> None:
    text = (DOCS / "reference" / "replication.md").read_text()
    rows = {line.split(" | ")[0].strip("| `"): line for line in text.splitlines()}
    assert rows["shrink_isr_lagging"].endswith("| `replica.lag.time.max.ms` |")
    assert rows["leader_write"].endswith("| `acks`, `min.insync.replicas` |")
    assert rows["follower_fetch_fenced"].endswith("| KIP-320 |")


def test_definition_lists_become_bullets() -> None:
    doc = """Intro.

    ``store``
        The coordination store,
        linearizable.
    ``brokers``
        Per broker.

    After."""
    assert docstring_markdown(doc) == (
        "Intro.\n\n- **``store``**: The coordination store, linearizable.\n"
        "- **``brokers``**: Per broker.\n\nAfter."
    )


def test_a_state_field_without_a_docstring_is_refused() -> None:
    import attrs

    @attrs.frozen
    class Half:
        documented: int
        """What it holds."""
        bare: int

    with pytest.raises(SpecError, match=r"Half.bare has no docstring"):
        field_docs(Half)
    assert field_docs(Quorum)[0][:2] == ("epoch", "int")

    @attrs.frozen
    class Unions:
        maybe: int | None
        """Optional."""
        either: tuple[int | str, ...]
        """A union inside."""

    assert [kind for _, kind, _ in field_docs(Unions)] == [
        "Optional[int]",
        "tuple[Union[int, str], ...]",
    ]
