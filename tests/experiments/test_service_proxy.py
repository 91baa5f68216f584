"""The proxy fault actions (experiments/service/proxy.py): the fault file they write, renew and
remove, read back the way rushhour's mitmproxy addon reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from chaoslib.exceptions import ActivityFailed
from chaoslib.experiment import ensure_experiment_is_valid

from rushhour.experiments import leases
from rushhour.experiments.service import mitm_addon
from rushhour.experiments.service.proxy import (
    ADDON,
    add_proxy_fault,
    fault_path,
    main,
    proxy_fault,
    remove_proxy_fault,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def lease_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "leases"
    monkeypatch.setenv("RUSHHOUR_LEASE_DIR", str(folder))
    monkeypatch.setenv("RUSHHOUR_LEASE_MARGIN_S", "0")
    yield folder
    leases.release("proxy|")


def test_service_proxy_fault_file_is_where_the_addon_looks(lease_folder: Path) -> None:
    for name in ("service", "my svc/../x"):
        assert fault_path(name) == mitm_addon.fault_file(name, {"RUSHHOUR_LEASE_DIR": str(lease_folder)})
    assert mitm_addon.fault_file("a", {"XDG_RUNTIME_DIR": "/run/user/7"}) == Path("/run/user/7/rushhour-leases/proxy-a.json")


def test_service_proxy_addon_reads_each_fault_it_was_given() -> None:
    faults = {
        "latency": {"latency_ms": 250.0, "jitter_ms": 20.0},
        "errors": {"rate": 0.25, "status": 502},
        "reset": {},
        "blackhole": {},
    }
    for kind, fields in faults.items():
        added = add_proxy_fault(kind, **fields)  # type: ignore[arg-type]
        read = mitm_addon.read_fault(fault_path("service"))
        assert read is not None and read["fault"] == kind and {k: read[k] for k in fields} == fields
        assert added["fault"] == kind and proxy_fault() == kind
    assert remove_proxy_fault() is True
    assert mitm_addon.read_fault(fault_path("service")) is None and proxy_fault() == ""
    assert remove_proxy_fault() is False


def test_service_proxy_fault_without_a_hold_ends_with_its_ttl() -> None:
    add_proxy_fault("reset", ttl_s=0.3)
    assert proxy_fault() == "reset"
    time.sleep(0.4)
    assert mitm_addon.read_fault(fault_path("service")) is None
    assert proxy_fault() == "" and fault_path("service").exists()  # nobody removed it: it ended by itself


def test_service_proxy_held_fault_is_renewed_past_its_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(leases.LEASE_ENV, "0.4")
    added = add_proxy_fault("blackhole", hold_s=30.0)
    assert added["lease_s"] == 0.4
    time.sleep(1.2)  # three leases: only renewals keep it in force
    assert mitm_addon.read_fault(fault_path("service")) is not None
    leases.release("proxy|")
    time.sleep(0.6)
    assert mitm_addon.read_fault(fault_path("service")) is None


def test_service_proxy_refuses_a_fault_it_cannot_apply() -> None:
    with pytest.raises(ActivityFailed, match='"packet_loss" is not a proxy fault'):
        add_proxy_fault("packet_loss")
    with pytest.raises(ActivityFailed, match="rate must be a share between 0 and 1 .* not 1.5"):
        add_proxy_fault("errors", rate=1.5)
    with pytest.raises(ActivityFailed, match="status must be an HTTP status .* not 700"):
        add_proxy_fault("errors", status=700)
    with pytest.raises(ActivityFailed, match="latency_ms must be .* not -5"):
        add_proxy_fault("latency", latency_ms=-5)
    assert not fault_path("service").exists()


def test_service_proxy_addon_ignores_a_fault_it_cannot_trust(lease_folder: Path) -> None:
    add_proxy_fault("reset")
    path = fault_path("service")
    assert mitm_addon.read_fault(path) is not None
    os.chmod(lease_folder, 0o770)  # another user could have written it
    assert mitm_addon.read_fault(path) is None
    os.chmod(lease_folder, 0o700)
    planted = lease_folder / "planted.json"
    os.replace(path, planted)
    path.symlink_to(planted)
    assert mitm_addon.read_fault(path) is None
    path.unlink()
    path.write_text(json.dumps({"fault": "meltdown", "expires_boot": mitm_addon.boot_clock() + 60}))
    assert mitm_addon.read_fault(path) is None
    path.write_text("not json")
    assert mitm_addon.read_fault(path) is None


def test_service_proxy_addon_module_imports_nothing_but_the_standard_library() -> None:
    code = ("import runpy, sys; runpy.run_path(sys.argv[1]); "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'rushhour', 'mitmproxy', 'httpx', 'chaoslib'}); "
            "print(bad)")
    result = subprocess.run([sys.executable, "-I", "-c", code, str(ADDON)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_service_proxy_prints_the_addon_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--addon-path"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert printed == ADDON and printed.is_file() and printed.name == "mitm_addon.py"
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2


@pytest.mark.parametrize("kind", ["latency", "errors", "reset", "blackhole"])
def test_service_proxy_experiment_is_valid_and_its_rollback_removes_the_fault(kind: str) -> None:
    experiment = json.loads((ROOT / "experiments" / f"service-proxy-{kind}.json").read_text())
    ensure_experiment_is_valid(experiment)
    assert experiment["runtime"]["rollbacks"]["strategy"] == "always"
    assert {"service", "network", "mitmproxy"} <= set(experiment["tags"])
    added = [a["provider"] for a in experiment["method"] if a["provider"]["func"] == "add_proxy_fault"]
    assert [p["arguments"]["fault"] for p in added] == [kind]
    assert added[0]["arguments"]["hold_s"] == "${fault_hold_s}"
    for steps in (experiment["method"][-1:], experiment["rollbacks"]):
        assert [s["provider"]["func"] for s in steps] == ["remove_proxy_fault"]
        assert steps[0]["provider"]["arguments"] == {"proxy": "${proxy_name}"}
