"""The simulator's garbage-collector policy (``impl.sim.collector``): fewer young
collections while a simulation runs, the process's thresholds restored afterwards."""

from __future__ import annotations

import gc

import pytest

from impl.sim.collector import YOUNG_THRESHOLD, FewerCollections


@pytest.fixture
def default_thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_the_young_threshold_is_raised_inside_and_restored_after(default_thresholds):
    with FewerCollections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        with FewerCollections():  # nested: the driver steps the cluster inside a run
            assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_the_thresholds_are_restored_when_the_run_raises(default_thresholds):
    with pytest.raises(RuntimeError), FewerCollections():
        raise RuntimeError("a run that fails")
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_or_a_disabled_collector_is_left_alone(default_thresholds):
    gc.set_threshold(10 * YOUNG_THRESHOLD, 10, 10)
    with FewerCollections():
        assert gc.get_threshold() == (10 * YOUNG_THRESHOLD, 10, 10)
    gc.set_threshold(0, 10, 10)
    with FewerCollections():
        assert gc.get_threshold() == (0, 10, 10)
    assert gc.get_threshold() == (0, 10, 10)
