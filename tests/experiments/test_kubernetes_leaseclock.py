"""The Kubernetes lease keeper on a stepped wall clock: once it has seen a lease it counts it down on
the steady clock, so a cordon or a scale-down still ends within its lease when the harness host's
wall clock is stepped back an hour, and no later when it is stepped forward; a renewal is taken
afresh. The keeper runs against the fake API (tests/experiments/kubefake.py) with its real sweep,
the fake cluster's time as its steady clock and that time shifted by the step as its wall clock."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from rushhour.experiments import leases
from rushhour.experiments.kubernetes import leases as kleases
from rushhour.experiments.kubernetes import workload
from rushhour.experiments.kubernetes.leaseclock import SteadyLeases, judged_at
from rushhour.experiments.kubernetes.objects import lease_expiry
from tests.experiments.kubefake import NS, WEB, FakeKube, workload_cluster

HOUR_S = 3600.0


@pytest.fixture
def kube(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    """The workload cluster, which the keeper's own sweep (no sweeper given) reaches as its API."""
    fake = workload_cluster(monkeypatch)
    monkeypatch.setattr(kleases, "_apis", lambda secrets: (fake, fake, fake))
    yield fake
    leases.release("k8s|")


def _keeper_stepping_the_wall_clock(kube: FakeKube, step_s: float, after_s: float = 60.0, *,
                                    before_first_look: bool = False) -> str:
    """Run the keeper; its wall clock is stepped by `step_s` once its first sweep has seen the leases,
    or (`before_first_look`) once the keeper has started, before that sweep."""
    wall = SimpleNamespace(offset=0.0, reads=0)

    def read() -> float:
        wall.reads += 1
        return kube.now + (step_s if before_first_look and wall.reads > 1 else wall.offset)

    def sleep(seconds: float) -> None:
        wall.offset = step_s
        kube.advance(seconds)

    return kleases.keep_swept(NS, after_s=after_s, clock=read, sleep=sleep, steady=lambda: kube.now,
                              log=lambda message: None)


def _cordon_and_scale_down_then_lose_the_harness(kube: FakeKube) -> list[float]:
    """Held faults whose holder dies at once: nothing renews them. Their lease ends (epoch seconds)."""
    workload.cordon_workload_nodes(WEB, NS, hold_s=600)
    workload.scale_workload(WEB, NS, replicas=0, hold_s=600)
    leases.release("k8s|")
    marked = [kube.nodes["node-a"].metadata.annotations, kube.deployments["web"].metadata.annotations]
    ends = [lease_expiry(annotations) for annotations in marked]
    assert None not in ends and kube.nodes["node-a"].spec.unschedulable and kube.deployments["web"].spec.replicas == 0
    return [end for end in ends if end is not None]


def _undone(kube: FakeKube) -> bool:
    return (not kube.nodes["node-a"].spec.unschedulable and not kube.nodes["node-b"].spec.unschedulable
            and kube.deployments["web"].spec.replicas == 3 and kube.nodes["node-c"].spec.unschedulable is True)


def test_a_wall_clock_stepped_back_an_hour_after_the_lease_is_seen_does_not_extend_it(kube: FakeKube) -> None:
    started = kube.now
    ends = _cordon_and_scale_down_then_lose_the_harness(kube)
    assert _keeper_stepping_the_wall_clock(kube, -HOUR_S) == "healed" and _undone(kube)
    assert kube.now - started <= leases.DEFAULT_LEASE_S + kleases.CHECK_EVERY_S
    assert kube.now - HOUR_S < min(ends), "by the stepped wall clock the leases had an hour to go"


def test_a_wall_clock_stepped_back_before_the_keepers_first_look_at_the_lease_does_not_extend_it(
        kube: FakeKube) -> None:
    started = kube.now
    ends = _cordon_and_scale_down_then_lose_the_harness(kube)
    assert _keeper_stepping_the_wall_clock(kube, -HOUR_S, before_first_look=True) == "healed" and _undone(kube)
    assert kube.now - started <= leases.DEFAULT_LEASE_S + kleases.CHECK_EVERY_S
    assert kube.now - HOUR_S < min(ends), "by the stepped wall clock the leases had an hour to go"


def test_a_wall_clock_stepped_forward_ends_the_lease_no_later(kube: FakeKube) -> None:
    started = kube.now
    _cordon_and_scale_down_then_lose_the_harness(kube)
    assert _keeper_stepping_the_wall_clock(kube, HOUR_S) == "healed" and _undone(kube)
    assert kube.now - started <= leases.DEFAULT_LEASE_S + kleases.CHECK_EVERY_S


def test_a_partition_whose_job_outlives_its_deadline_is_removed_within_its_lease_on_a_stepped_clock(
        kube: FakeKube) -> None:
    kube.ttl_controller = False  # the cluster does not delete the failed lease Job: the keeper must
    started = kube.now
    workload.partition_workload(WEB, NS, hold_s=600)
    leases.release("k8s|")
    assert kube.policies and kube.jobs
    assert _keeper_stepping_the_wall_clock(kube, -HOUR_S) == "healed"
    assert kube.policies == {} and kube.jobs == {}
    assert kube.now - started <= leases.DEFAULT_LEASE_S + kleases.CHECK_EVERY_S


def test_the_keeper_waits_for_a_fault_to_appear_on_the_steady_clock(kube: FakeKube) -> None:
    started = kube.now
    assert _keeper_stepping_the_wall_clock(kube, -HOUR_S, after_s=10.0) == "undone"  # nothing was ever injected
    assert kube.now - started <= 10.0 + kleases.CHECK_EVERY_S


# -- the clock itself ---------------------------------------------------------------------------

@pytest.fixture
def clocks() -> SimpleNamespace:
    return SimpleNamespace(wall=1_000_000.0, steady=50.0)


def _watch(clocks: SimpleNamespace, longest_s: float = 600.0) -> SteadyLeases:
    return SteadyLeases(wall=lambda: clocks.wall, steady=lambda: clocks.steady, longest_s=longest_s)


def _pass(clocks: SimpleNamespace, seconds: float) -> None:
    clocks.wall, clocks.steady = clocks.wall + seconds, clocks.steady + seconds


def _sweep(watch: SteadyLeases, *leases_seen: tuple[str, str, float | None]) -> list[bool]:
    """One sweep that goes through: which of `leases_seen` (kind, name, end) are over."""
    judge = watch.look()
    over = [judge(*lease) for lease in leases_seen]
    watch.settled()
    return over


def test_a_lease_seen_once_ends_on_the_steady_clock_whatever_the_wall_clock_does(clocks: SimpleNamespace) -> None:
    watch = _watch(clocks)
    cordon = ("Node", "node-a", clocks.wall + 20.0)
    assert _sweep(watch, cordon) == [False]
    clocks.wall -= HOUR_S
    _pass(clocks, 19.0)
    assert _sweep(watch, cordon) == [False]
    _pass(clocks, 1.0)
    assert _sweep(watch, cordon) == [True]
    clocks.wall += 2 * HOUR_S  # stepped forward past the end: it was already over, and stays so
    assert _sweep(watch, cordon) == [True]


def test_a_renewal_is_taken_afresh_and_each_object_is_counted_on_its_own(clocks: SimpleNamespace) -> None:
    watch = _watch(clocks)
    assert _sweep(watch, ("Deployment", f"{NS}/web", clocks.wall + 20.0)) == [False]  # ends at steady 70
    _pass(clocks, 5.0)
    renewed = ("Deployment", f"{NS}/web", clocks.wall + 20.0)  # ends at steady 75
    cordon = ("Node", "node-a", clocks.wall + 3.0)  # another object, first seen: ends at steady 58
    assert _sweep(watch, renewed, cordon) == [False, False]
    _pass(clocks, 19.0)
    assert _sweep(watch, renewed, cordon) == [False, True]
    _pass(clocks, 1.0)
    assert _sweep(watch, renewed) == [True]


def test_an_end_written_just_before_a_step_back_and_seen_after_it_is_not_extended(clocks: SimpleNamespace) -> None:
    watch = _watch(clocks)
    assert _sweep(watch) == []
    _pass(clocks, 1.0)
    scale_down = ("Deployment", f"{NS}/web", clocks.wall + 20.0)  # written at steady 51: ends at steady 71
    _pass(clocks, 1.0)
    clocks.wall -= HOUR_S  # stepped back before the keeper's next look
    watch.look()  # that look's sweep fails at its first call (the API): the step is not forgotten
    _pass(clocks, 2.0)
    assert _sweep(watch, scale_down) == [False]
    _pass(clocks, 16.0)
    assert _sweep(watch, scale_down) == [False]
    _pass(clocks, 1.0)
    assert _sweep(watch, scale_down) == [True]


def test_a_renewal_on_the_stepped_clock_seen_at_the_look_after_the_step_ends_early(clocks: SimpleNamespace) -> None:
    watch = _watch(clocks)
    assert _sweep(watch, ("Node", "node-a", clocks.wall + 20.0)) == [False]
    clocks.wall -= HOUR_S
    _pass(clocks, 2.0)
    assert _sweep(watch, ("Node", "node-a", clocks.wall + 20.0)) == [True]  # the safe side: over, not an hour more


def test_a_lease_first_seen_past_its_end_or_unreadable_is_over_and_none_gets_more_than_the_longest(
        clocks: SimpleNamespace) -> None:
    watch = _watch(clocks, longest_s=600.0)
    far = ("Deployment", f"{NS}/web", clocks.wall + 10 * HOUR_S)
    assert _sweep(watch, ("Node", "node-a", clocks.wall - 1.0), ("Job", f"{NS}/p", None), far) == [True, True, False]
    clocks.steady += 600.0
    assert _sweep(watch, far) == [True]


def test_a_one_off_sweep_judges_by_the_time_it_is_given() -> None:
    judge = judged_at(100.0)
    assert judge("Node", "n", 100.0) and judge("Node", "n", None) and not judge("Node", "n", 100.5)
