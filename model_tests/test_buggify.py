"""BUGGIFY (``impl.buggify``): randomized timing of the brokers' periodic work, drawn from
the run's seed; off by default, when the run draws nothing for it."""

from __future__ import annotations

import attrs

from impl.buggify import MAX_DELAY_NS, MIN_DELAY_NS, Buggify
from impl.cluster import Cluster, ClusterConfig
from jepsen_py.generator import SECOND
from jepsen_py.runner import TestConfig, run_test
from jepsen_py.runner.config import reproduce_command

SITES = ["tick/b1", "tick/b2", "tick/b3"]


def test_sites_are_drawn_once_per_run_and_fire_with_bounded_delays() -> None:
    runs = [Buggify(seed, SITES) for seed in range(40)]
    assert any(not b.active for b in runs) and any(b.active for b in runs)
    assert Buggify(3, SITES).active == Buggify(3, SITES).active
    busy = next(b for b in runs if b.active)
    site = sorted(busy.active)[0]
    delays = [busy.delay(site) for _ in range(2000)]
    fired = [d for d in delays if d]
    assert fired and len(fired) < len(delays) // 5, "an active site fires now and then"
    assert all(MIN_DELAY_NS <= d <= MAX_DELAY_NS for d in fired)
    assert busy.fired == len(fired) and busy.delayed_ns == sum(fired)
    assert all(busy.delay("tick/nowhere") == 0 for _ in range(100)), "inactive: never"


def test_an_active_site_delays_its_brokers_ticks_and_the_run_stays_deterministic() -> None:
    seed = next(s for s in range(100) if Buggify(s, SITES).active)
    config = ClusterConfig(brokers=3, buggify=True)

    def run(config: ClusterConfig) -> Cluster:
        cluster = Cluster(config, seed)
        cluster.run_until(30 * SECOND)
        return cluster

    slow = run(config)
    assert slow.buggify is not None and slow.buggify.fired > 0
    assert run(config).digest() == slow.digest(), "the same seed, the same delays"
    plain = run(attrs.evolve(config, buggify=False))
    assert plain.buggify is None and plain.digest() != slow.digest()


def test_kmodel_test_buggify_is_off_by_default_and_reproducible() -> None:
    config = TestConfig(nemesis=("kill",), time_limit_ns=10 * SECOND, recovery_ns=5 * SECOND)
    assert not config.buggify and "--buggify" not in reproduce_command(config, 1)
    on = attrs.evolve(config, buggify=True)
    assert "--buggify" in reproduce_command(on, 1)
    assert TestConfig.from_json(on.to_json()) == on
    seed = next(s for s in range(100) if Buggify(s, SITES).active)
    first, again = run_test(on, seed, reports=False), run_test(on, seed, reports=False)
    assert first.history == again.history and first.history


def test_a_stalled_controller_send_thread_delivers_late_and_the_cluster_converges() -> None:
    sites = [f"{kind}/b{i}" for kind in ("controller-send", "tick") for i in (1, 2, 3)]
    seed = next(s for s in range(100) if "controller-send/b1" in Buggify(s, sites).active)
    cluster = Cluster(ClusterConfig(brokers=3, buggify=True), seed)
    cluster.crash("b2")  # the controller (b1) moves b2's leaderships: LeaderAndIsr to b3
    cluster.run_until(40 * SECOND)
    assert cluster.buggify is not None and cluster.buggify.fired_at["controller-send/b1"] > 0
    state = cluster.store.partitions[("t", 0)]
    leader = cluster.brokers[state.leader]
    assert leader is not None and leader.replicas[("t", 0)].leader_epoch == state.leader_epoch
    again = Cluster(ClusterConfig(brokers=3, buggify=True), seed)
    again.crash("b2")
    again.run_until(40 * SECOND)
    assert again.digest() == cluster.digest()
