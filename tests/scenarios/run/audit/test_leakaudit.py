"""The leak audit: what counts as left behind, bounded waits, and the record's shape."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rushhour.scenarios.run.audit.leakaudit import (
    Finding,
    LeakAudit,
    process_findings,
    settle,
    status_findings,
    target_findings,
)
from rushhour.scenarios.run.audit.scope import leak_scope
from rushhour.scenarios.spec.chaos import PlannedFault
from tests.support.stub import Answer, stub_server

EXPERIMENTS = Path(__file__).resolve().parents[4] / "experiments"


def _status(**node: object) -> dict:
    base = {"id": "quality-0", "pool": "quality", "state": "ready", "breaker": "closed", "faults": []}
    return {"nodes": [{**base, **node}, {**base, "id": "fast-0"}], "cache": {"hits": 0}}


def _healer(healed: list[bool]) -> Callable[[], bool]:
    """A heal callback that records each call and says it healed."""
    def heal() -> bool:
        healed.append(True)
        return True
    return heal


def test_status_findings_name_active_faults_and_nodes_not_ready() -> None:
    assert status_findings(_status()) == []
    found = status_findings(_status(state="down", faults=[{"kind": "partition", "expires_in_s": 12.5}]))
    assert [(f.kind, f.target) for f in found] == [("fault", "quality-0"), ("node", "quality-0")]
    assert "partition fault is still active" in found[0].detail and "12.5 s" in found[0].detail
    assert '"down", not ready' in found[1].detail
    l2 = status_findings({"nodes": [], "cache": {"l2_available": False}})
    assert [f.kind for f in l2] == ["redis"]


def test_settle_retries_until_clean_within_its_bound() -> None:
    now = [0.0]
    answers = [[Finding("node", "q", "warming")], [Finding("node", "q", "warming")], []]
    calls: list[float] = []

    def check() -> list[Finding]:
        calls.append(now[0])
        return answers[min(len(calls) - 1, 2)]

    assert settle(check, wait_s=10, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s)) == []
    assert calls == [0.0, 1.0, 2.0]
    stuck = settle(lambda: [Finding("node", "q", "down")], wait_s=3, clock=lambda: now[0],
                   sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert stuck and now[0] <= 2.0 + 3 + 1


def test_target_findings_from_the_server_or_why_not() -> None:
    routes: dict[str, Answer] = {"/v1/status": (200, {}, _status(faults=[{"kind": "latency", "expires_in_s": 3}]))}
    with stub_server(routes) as (url, _):
        assert [f.kind for f in target_findings(url) or []] == ["fault"]
    with stub_server({}) as (url, _):
        assert target_findings(url) is None  # not the reference server: nothing to check
    with stub_server({"/v1/status": (500, {}, {"error": {}})}) as (url, _):
        found = target_findings(url) or []
        assert [f.kind for f in found] == ["unverified"] and "answered 500" in found[0].detail


def test_leak_audit_record_shape() -> None:
    audit = LeakAudit()
    audit.add("target", [])
    audit.skip("redis", "not used")
    assert audit.result(3.21) == {"clean": True, "checked": ["target"], "skipped": [{"check": "redis", "reason": "not used"}],
                                  "findings": [], "actions": [], "t_s": 3.21}
    audit.add("processes", process_findings([]))
    audit.add("unverified", [Finding("unverified", "kubernetes:rushhour", "no cluster")])
    record = audit.result()
    assert record["clean"] is False and record["findings"] == [
        {"kind": "unverified", "target": "kubernetes:rushhour", "detail": "no cluster"}]


def test_leak_scope_resolves_redis_ports_and_namespaces_from_the_experiments() -> None:
    def fault(name: str, env: dict[str, str] | None = None) -> PlannedFault:
        return PlannedFault(name=name, experiment=EXPERIMENTS / f"{name}.json", scenario_time="20:00:00",
                            offset_s=0.0, targets=[], env=env or {})

    scope = leak_scope([fault("redis-down", {"RUSHHOUR_REDIS_PORT": "7001"}), fault("network-partition")], environ={})
    assert scope.redis_ports == (7001,) and scope.namespaces == ()
    scope = leak_scope([fault("redis-down"), fault("k8s-network-partition")], environ={"RUSHHOUR_NAMESPACE": "drill"})
    assert scope.redis_ports == (6379,) and scope.namespaces == ("drill",)


@pytest.mark.slow
def test_audit_target_heals_only_what_it_found_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from rushhour.scenarios.run.audit.steps import WAIT_ENV, audit_target

    monkeypatch.setenv(WAIT_ENV, "0")
    plan: Any = SimpleNamespace(chaos=[])
    healed: list[bool] = []
    with stub_server({"/v1/status": (200, {}, _status())}) as (url, _):
        clean = LeakAudit()
        audit_target(clean, plan, url=url, heal=_healer(healed))
    assert clean.result()["clean"] is True and healed == [] and clean.actions == []
    with stub_server({"/v1/status": (200, {}, _status(faults=[{"kind": "partition"}]))}) as (url, _):
        leaky = LeakAudit()
        audit_target(leaky, plan, url=url, heal=_healer(healed))
    assert leaky.result()["clean"] is False and healed == [True]
    assert leaky.actions == [f"POST {url}/admin/reset after the audit: healed."]
    skipped = LeakAudit()
    audit_target(skipped, plan, url=None)
    assert skipped.checked == [] and skipped.skipped[0]["check"] == "target"
