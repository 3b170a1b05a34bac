"""The known-bug stories (``docs/stories/``) are regenerated from the model checker and
kept current.

For each story of ``spec.stories``: the bug's configuration must violate the property the
page names, first in the trace's last state (or its last step, for a transition property);
the fix's configuration must hold over every reachable state; and the page and its step
diagram must equal what ``model_tests.story_pages`` renders now. Run pytest with
``--rewrite`` (or ``KMODEL_REWRITE=1``) to regenerate them, and review the diff.
"""

from __future__ import annotations

import json
import re
import shlex

import attrs
import pytest
import yaml
from click.testing import CliRunner

from jepsen_py.cli import main
from model_tests.scenario_files import assert_matches_file
from model_tests.story_diagrams import render_svg
from model_tests.story_pages import (
    PAGES,
    ROOT,
    check_story,
    render_diagram,
    render_index,
    render_page,
)
from spec.explore import TraceStep
from spec.framework import Spec
from spec.stories import STORIES, Story, by_name, check_command, explore_command


def _holds(spec: Spec, name: str, trace: tuple[TraceStep, ...], at: int) -> bool:
    """Whether property ``name`` holds at step ``at`` of ``trace`` (an invariant on its
    state, a transition property on the step into it)."""
    for decl in spec.invariants():
        if decl.name == name:
            return bool(getattr(spec, decl.method)(trace[at].state))
    for decl in spec.transition_properties():
        if decl.name == name:
            if at == 0:
                return True
            return bool(
                getattr(spec, decl.method)(trace[at - 1].state, trace[at].step, trace[at].state)
            )
    raise AssertionError(f"spec {spec.name} has no invariant or transition property {name}")


@pytest.mark.parametrize("story", STORIES, ids=[s.name for s in STORIES])
def test_story_page_is_current(story: Story, rewrite: bool) -> None:
    run = check_story(story)
    violation = run.bug.violation
    assert violation is not None, f"{check_command(story.bug)} no longer finds a violation"
    assert violation.name == story.property
    trace = run.trace
    assert not _holds(run.bug_spec, story.property, trace, len(trace) - 1)
    assert all(_holds(run.bug_spec, story.property, trace, i) for i in range(len(trace) - 1))
    assert run.fix.violation is None and run.fix.complete, check_command(story.fix)
    assert story.property in run.fix.checked
    assert_matches_file(PAGES / f"{story.name}.md", render_page(run), rewrite)
    assert_matches_file(PAGES / f"{story.name}.svg", render_diagram(run), rewrite)


def test_story_index_is_current(rewrite: bool) -> None:
    assert_matches_file(PAGES / "index.md", render_index(), rewrite)


def test_every_story_is_in_the_site_nav() -> None:
    text = (ROOT / "mkdocs.yml").read_text()
    # mkdocs.yml carries a python tag (the slugify function): read the nav section alone.
    nav = yaml.safe_load(text[text.index("\nnav:") :])["nav"]
    section = next(item["Known bugs"] for item in nav if "Known bugs" in item)
    pages = {next(iter(entry.values())) for entry in section}
    assert pages == {"stories/index.md"} | {f"stories/{s.name}.md" for s in STORIES}


def test_the_fix_differs_from_the_bug_only_by_the_fix() -> None:
    """A story's two configurations have the same bounds: only the protocol changes."""
    for story in STORIES:
        bug, fix = story.bug.params, story.fix.params
        same = {
            "log_size",
            "max_records",
            "max_epoch",
            "replicas",
            "max_crashes",
            "brokers",
            "max_expiries",
            "max_failovers",
            "members",
            "records",
            "max_generation",
        }
        for field in same:
            if hasattr(bug, field):
                assert getattr(bug, field) == getattr(fix, field), (story.name, field)
        assert story.property in story.bug.invariants and story.property in story.fix.invariants
        assert "--invariant" not in explore_command(story.bug)


def test_the_diagram_is_drawn_from_the_trace() -> None:
    """Each row shows its own state: the last row of KIP-101's loss has the leader's record
    and the new leader's empty log, and changing a state changes the picture."""
    run = check_story(STORIES[0])
    svg = render_diagram(run)
    assert svg.count('class="num"') == len(run.trace) + 1  # the title, then one per step
    last_row = svg[svg.index('class="last"') :]
    state = run.bug_spec.to_json(run.trace[-1].state)
    for replica in state["replicas"].values():
        for epoch, record in replica["log"]:
            assert f"e{epoch}\u00b7{record}" in last_row
    shorter = render_svg(run.bug_spec, run.trace[:-1], STORIES[0].title)
    assert shorter != svg and shorter.count('class="num"') == len(run.trace)
    assert re.search(r"ISR \{1,2\}", last_row)


def test_a_story_that_stops_failing_is_reported() -> None:
    """A story whose bug configuration no longer fails cannot be rendered: checking the
    zombie controller's story against its own fix finds nothing, and the page says which
    command to look at."""
    story = by_name("zombie-controller")
    fixed = check_story(attrs.evolve(story, bug=story.fix))
    with pytest.raises(AssertionError, match="no longer shows"):
        render_page(fixed)


@pytest.mark.parametrize("story", STORIES, ids=[s.name for s in STORIES])
def test_the_page_command_reproduces_the_bug(story: Story) -> None:
    """The ``kmodel check`` line printed on the page parses to the story's configuration:
    run through the CLI, it finds the same property violated, at the same depth, over the
    same number of states as the story's own check."""
    argv = shlex.split(check_command(story.bug))
    assert argv[:2] == ["kmodel", "check"]
    result = CliRunner().invoke(main, [*argv[1:], "--json"])
    report = json.loads(result.output.strip().splitlines()[-1])
    run = check_story(story)
    assert run.bug.violation is not None
    assert report["violated"] == story.property
    assert report["trace_length"] == run.bug.violation.depth
    assert report["distinct_states"] == run.bug.stats.distinct_states
