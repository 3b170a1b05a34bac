"""docs/reference/ is rendered from the specs' declarations and kept current."""

from __future__ import annotations

from pathlib import Path

from model_tests.scenario_files import assert_matches_file
from spec.reference import render_reference
from spec.replication import Params, Replication

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
    text = render_reference("Replication spec: reference", INTRO, configurations)
    assert_matches_file(DOCS / "reference" / "replication.md", text, rewrite)


CONTROLLER_INTRO = """
Generated from `spec/controller.py` by `model_tests/test_docs_reference.py` (run pytest with
`--rewrite` after changing a docstring). The narrative is in `docs/controller.md`.
"""


def test_controller_reference_is_current(rewrite: bool) -> None:
    from spec.controller import Controller
    from spec.controller import Params as ControllerParams

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
    text = render_reference("Controller spec: reference", CONTROLLER_INTRO, configurations)
    assert_matches_file(DOCS / "reference" / "controller.md", text, rewrite)


GROUP_INTRO = """
Generated from `spec/group/` by `model_tests/test_docs_reference.py` (run pytest with
`--rewrite` after changing a docstring). The narrative is in `docs/groups.md`.
"""


def test_group_reference_is_current(rewrite: bool) -> None:
    from spec.group import Params as GroupParams
    from spec.group import build

    configurations = [
        ("classic (eager)", build(GroupParams())),
        ("cooperative (KIP-429)", build(GroupParams(protocol="cooperative"))),
        ("classic, no failover", build(GroupParams(max_failovers=0))),
        ("consumer (KIP-848)", build(GroupParams(protocol="consumer"))),
    ]
    text = render_reference("Consumer-group spec: reference", GROUP_INTRO, configurations)
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
    from spec.rebalance import Params as RebalanceParams
    from spec.rebalance import Rebalance

    configurations = [
        (mechanism, Rebalance(RebalanceParams.of(mechanism)))
        for mechanism in ("preferred", "shutdown", "reassignment", "elr")
    ]
    configurations.append(
        ("elr + no_elr (before KIP-966)", Rebalance(RebalanceParams.of(bugs={"no_elr"})))
    )
    text = render_reference("Rebalance spec: reference", REBALANCE_INTRO, configurations)
    assert_matches_file(DOCS / "reference" / "rebalance.md", text, rewrite)


OFFSETS_INTRO = """
Generated from `spec/offsets/` by `model_tests/test_docs_reference.py` (run pytest with
`--rewrite` after changing a docstring). The narrative is in `docs/offsets.md`.
"""


def test_offsets_reference_is_current(rewrite: bool) -> None:
    from spec.offsets import Params as OffsetsParams
    from spec.offsets import build

    configurations = [
        ("after-process (at least once)", build(OffsetsParams())),
        ("before-process (at most once)", build(OffsetsParams(commit="before-process"))),
        ("after-process, no failover", build(OffsetsParams(max_failovers=0))),
    ]
    text = render_reference("Offsets spec: reference", OFFSETS_INTRO, configurations)
    assert_matches_file(DOCS / "reference" / "offsets.md", text, rewrite)
