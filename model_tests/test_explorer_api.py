"""The state explorer's JSON API (``kmodel explore``): states named by paths replayed from
the initial state, steps as the spec's successors, the model checker's counterexample as a
path, and ``kmodel check --trace-json`` files loaded as paths."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from jepsen_py.cli import main
from jepsen_py.explorer.paths import Explorer, PathError
from jepsen_py.explorer.server import page
from model_tests.explorer_fixtures import build_spec, get, running_explorer


def test_a_path_reaches_the_state_the_specs_successors_reach() -> None:
    spec, _ = build_spec("replication")
    with running_explorer("replication") as server:
        status, first = get(server, "/api/state?path=")
        assert status == 200
        (init,) = spec.init()
        successors = list(spec.successors(init))
        assert [t["label"] for t in first["enabled"]] == [
            spec.step_of(decl, args).describe() for decl, args, _ in successors
        ]
        assert first["state"]["json"] == orjson.loads(orjson.dumps(spec.to_json(init)))
        chosen = len(successors) - 1
        status, second = get(server, f"/api/state?init=0&path={chosen}")
        assert status == 200
        assert second["path"] == [chosen]
        assert second["trail"][1]["label"] == first["enabled"][chosen]["label"]
        expected = successors[chosen][2]
        assert second["state"]["json"] == orjson.loads(orjson.dumps(spec.to_json(expected)))
        groups = {g["group"] for g in second["state"]["groups"]}
        assert {"replica 1", "replica 2"} <= groups
        assert all(inv["holds"] for inv in second["invariants"])


@pytest.mark.parametrize(
    "query",
    ["/api/state?path=99", "/api/state?path=0,x", "/api/state?init=5", "/api/state?path=-1"],
)
def test_a_path_that_leads_nowhere_is_a_400_saying_why(query: str) -> None:
    with running_explorer("controller") as server:
        status, body = get(server, query)
    assert status == 400
    assert body["error"]


@pytest.mark.parametrize(
    ("name", "bug", "violated"),
    [
        ("replication", "reuse_epoch", "OneLeaderPerEpoch"),
        ("controller", "unconditional_write", "OneControllerWritesPerEpoch"),
        ("offsets", "stale_generation_commit", "StaleGenerationNeverCommits"),
    ],
)
def test_the_counterexample_path_ends_where_the_property_fails(
    name: str, bug: str, violated: str
) -> None:
    with running_explorer(name, (bug,)) as server:
        status, found = get(server, "/api/counterexample")
        assert status == 200
        assert found["property"] == violated
        path = ",".join(map(str, found["path"]))
        _, view = get(server, f"/api/state?init={found['init']}&path={path}")
    failing = [
        p["name"] for p in view["invariants"] + view["transition_properties"] if not p["holds"]
    ]
    assert failing == [violated]
    # One step less, the property still held: the path is a counterexample, not a detour.
    spec, params = build_spec(name, (bug,))
    before = Explorer(spec, params).view(found["init"], found["path"][:-1])
    assert all(p["holds"] for p in before["invariants"] + before["transition_properties"])


def test_without_a_bug_the_counterexample_search_reports_none() -> None:
    spec, params = build_spec("replication")
    found = Explorer(spec, params).counterexample()
    assert found.property is None
    assert found.path == ()
    assert "no violation" in found.message


def test_a_budget_too_small_is_said_not_hidden() -> None:
    spec, params = build_spec("controller")
    found = Explorer(spec, params, max_states=10).counterexample()
    assert found.property is None
    assert "budget" in found.message


def test_a_trace_file_of_kmodel_check_loads_as_the_same_path(tmp_path: Path) -> None:
    trace_file = tmp_path / "trace.json"
    check = ["check", "replication", "--bug", "reuse_epoch", "--workers", "1"]
    done = CliRunner().invoke(main, [*check, "--trace-json", str(trace_file)])
    assert done.exit_code == 1, done.output
    with running_explorer("replication", ("reuse_epoch",)) as server:
        _, found = get(server, "/api/counterexample")
        status, loaded = get(server, "/api/trace", trace_file.read_bytes())
    assert status == 200
    assert loaded == {
        "init": found["init"],
        "path": found["path"],
        "violated": "OneLeaderPerEpoch",
        "cycle_starts_after": None,
    }


def test_a_trace_file_of_other_parameters_or_not_a_trace_is_refused(tmp_path: Path) -> None:
    spec, params = build_spec("replication", ("reuse_epoch",))
    explorer = Explorer(spec, params)
    found = explorer.counterexample()
    trace = [
        {"step": 1, "action": None, "args": {}, "state": spec.to_json(explorer.inits[0])},
    ]
    with pytest.raises(PathError, match="other parameters"):
        explorer.path_of_trace_file({"params": {**params, "replicas": 3}, "trace": trace})
    with pytest.raises(PathError, match="not a trace file"):
        explorer.path_of_trace_file({"steps": []})
    bad_step = {"step": 2, "action": "no_such_action", "args": {}, "state": {}}
    with pytest.raises(PathError, match="step 2"):
        explorer.path_of_trace_file({"params": params, "trace": [*trace, bad_step]})
    with running_explorer("replication", ("reuse_epoch",)) as server:
        status, body = get(server, "/api/trace", b"{not json")
    assert status == 400
    assert "not JSON" in body["error"]
    assert found.property is not None


def test_the_page_is_self_contained() -> None:
    """No script, style or font from the network: the explorer works offline."""
    html = page().decode()
    assert "<script>" in html
    for remote in ("http://", "https://", "//cdn", "src=", "<link"):
        assert remote not in html, remote
    with (
        running_explorer("group") as server,
        urllib.request.urlopen(server.url, timeout=30) as response,
    ):
        assert response.headers["Content-Type"].startswith("text/html")
        assert response.read() == page()


def test_explore_refuses_another_specs_flag_and_a_busy_port() -> None:
    done = CliRunner().invoke(main, ["explore", "controller", "--members", "2", "--no-browser"])
    assert done.exit_code == 2
    assert "--members is a flag of spec" in done.output
    with running_explorer("controller") as server:
        port = str(server.server_address[1])
        done = CliRunner().invoke(main, ["explore", "controller", "--port", port, "--no-browser"])
    assert done.exit_code == 2
    assert "choose another --port" in done.output


def test_a_liveness_counterexample_is_a_lasso_whose_cycle_returns_to_its_start() -> None:
    """With no safety violation, the explorer looks for a liveness violation: the path is
    the lasso's prefix then its cycle, which comes back to the state the cycle left."""
    spec, params = build_spec("replication", ("follower_stops_fetching",))
    explorer = Explorer(spec, params)
    found = explorer.counterexample()
    assert found.kind == "liveness"
    assert found.cycle_starts_after is not None
    trace = explorer.replay(found.init, found.path)
    assert trace[found.cycle_starts_after].state == trace[-1].state


_LABELS_OF_A_WALK = """
import random, sys
from model_tests.explorer_fixtures import build_spec
from jepsen_py.explorer.paths import Explorer
for name in ("group", "offsets", "controller"):
    explorer = Explorer(*build_spec(name))
    choices = random.Random(7)
    path = []
    for _ in range(20):
        enabled = explorer.view(0, path)["enabled"]
        print(name, "|".join(t["label"] for t in enabled))
        if not enabled:
            break
        path.append(choices.randrange(len(enabled)))
"""


def test_a_shared_path_means_the_same_steps_in_another_process() -> None:
    """A URL is replayed by another server: the order of the enabled steps must not depend
    on the process (``PYTHONHASHSEED`` changes the iteration order of sets of strings)."""
    root = Path(__file__).parent.parent
    runs = [
        subprocess.run(
            [sys.executable, "-c", _LABELS_OF_A_WALK],
            capture_output=True,
            text=True,
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)},
            timeout=120,
        )
        for seed in ("1", "2")
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[0].stdout.count("\n") > 30
    assert runs[0].stdout == runs[1].stdout


def test_a_liveness_trace_file_loads_as_the_same_lasso(tmp_path: Path) -> None:
    trace_file = tmp_path / "lasso.json"
    check = ["check", "replication", "--bug", "follower_stops_fetching", "--workers", "1"]
    done = CliRunner().invoke(main, [*check, "--trace-json", str(trace_file)])
    assert done.exit_code == 1, done.output
    spec, params = build_spec("replication", ("follower_stops_fetching",))
    explorer = Explorer(spec, params)
    found = explorer.counterexample()
    loaded = explorer.path_of_trace_file(orjson.loads(trace_file.read_bytes()))
    assert (loaded.init, loaded.path, loaded.violated) == (found.init, found.path, found.property)
    assert loaded.cycle_starts_after == found.cycle_starts_after


def test_requests_in_parallel_get_the_answers_one_at_a_time_gives() -> None:
    """The server answers in threads, sharing one successor cache."""
    from concurrent.futures import ThreadPoolExecutor

    paths = [f"/api/state?path={a},{b}" for a in range(3) for b in range(3)] * 4
    with running_explorer("controller") as server:
        alone = {path: get(server, path) for path in paths}
        with ThreadPoolExecutor(max_workers=8) as pool:
            together = list(pool.map(lambda path: get(server, path), paths))
    assert together == [alone[path] for path in paths]
    assert all(status == 200 for status, _ in together)
