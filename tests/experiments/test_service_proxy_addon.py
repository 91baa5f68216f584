"""rushhour's mitmproxy addon (experiments/service/mitm_addon.py) without mitmproxy: the delay and
error draws it makes, and its request hook on a stand-in flow."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest
from scipy import stats

from rushhour.experiments.leasefiles import write_end
from rushhour.experiments.service import mitm_addon


class Flow:
    """The one thing the addon does to a flow without mitmproxy's classes: kill it."""

    def __init__(self) -> None:
        self.killed = False

    def kill(self) -> None:
        self.killed = True


@pytest.fixture
def addon(tmp_path: Path) -> mitm_addon.RushhourFaults:
    folder = tmp_path / "leases"
    folder.mkdir(mode=0o700)
    return mitm_addon.RushhourFaults("svc", {"RUSHHOUR_LEASE_DIR": str(folder)}, seed=3)


def test_service_proxy_addon_delay_stays_within_its_jitter_and_centres_on_the_latency() -> None:
    rng = random.Random(1)
    delays = [mitm_addon.delay_s({"latency_ms": 300, "jitter_ms": 50}, rng) for _ in range(4000)]
    assert 0.25 <= min(delays) and max(delays) <= 0.35
    assert abs(sum(delays) / len(delays) - 0.3) < 0.003  # uniform +-50 ms: standard error under 0.5 ms
    assert mitm_addon.delay_s({"latency_ms": 120}, rng) == pytest.approx(0.12)
    assert min(mitm_addon.delay_s({"latency_ms": 10, "jitter_ms": 40}, rng) for _ in range(200)) == 0.0


def test_service_proxy_addon_errors_take_their_share_with_their_status() -> None:
    rng, count, rate = random.Random(2), 20000, 0.3
    drawn = [mitm_addon.error_status({"rate": rate, "status": 502}, rng) for _ in range(count)]
    low, high = stats.binom.interval(0.9999, count, rate)
    assert low <= drawn.count(502) <= high and drawn.count(None) == count - drawn.count(502)
    assert {mitm_addon.error_status({"rate": 1, "status": 700}, rng) for _ in range(20)} == {503}
    assert {mitm_addon.error_status({"rate": 0}, rng) for _ in range(200)} == {None}


def test_service_proxy_addon_resets_and_passes_as_the_fault_file_says(addon: mitm_addon.RushhourFaults) -> None:
    flow = Flow()
    asyncio.run(addon.request(flow))
    assert not flow.killed  # no fault file: the request passes
    write_end(addon.path, 60.0, {"fault": "reset"})
    time.sleep(mitm_addon.REREAD_S)  # the file is read again at most this often
    asyncio.run(addon.request(flow))
    assert flow.killed


def test_service_proxy_addon_blackhole_holds_until_the_fault_is_removed(addon: mitm_addon.RushhourFaults) -> None:
    write_end(addon.path, 60.0, {"fault": "blackhole"})
    flow = Flow()

    async def hold_then_remove() -> list[bool]:
        held = asyncio.ensure_future(addon.request(flow))
        seen = []
        for _ in range(5):
            await asyncio.sleep(mitm_addon.CHECK_EVERY_S)
            seen.append(held.done() or flow.killed)
        addon.path.unlink()
        await asyncio.wait_for(held, timeout=10.0)
        return seen

    assert asyncio.run(hold_then_remove()) == [False] * 5  # held, unanswered, while the fault is in force
    assert flow.killed  # then closed: what the blackhole swallowed is never passed on


def test_service_proxy_addon_blackhole_ends_with_its_lease(addon: mitm_addon.RushhourFaults) -> None:
    write_end(addon.path, 0.3, {"fault": "blackhole"})
    flow = Flow()
    asyncio.run(asyncio.wait_for(addon.request(flow), timeout=10.0))
    assert flow.killed and addon.path.exists()  # it ended by itself: nobody removed the file


def test_service_proxy_addon_reads_the_file_at_most_once_a_reread_interval(
        addon: mitm_addon.RushhourFaults, monkeypatch: pytest.MonkeyPatch) -> None:
    write_end(addon.path, 60.0, {"fault": "blackhole"})
    reads: list[float] = []
    read = mitm_addon.read_fault

    def counted(path: Path) -> dict[str, object] | None:
        reads.append(time.monotonic())
        return read(path)

    monkeypatch.setattr(mitm_addon, "read_fault", counted)

    async def hold_many() -> None:
        held = [asyncio.ensure_future(addon.request(Flow())) for _ in range(200)]
        await asyncio.sleep(0.5)
        addon.path.unlink()
        await asyncio.wait_for(asyncio.gather(*held), timeout=10.0)

    asyncio.run(hold_many())
    gaps = [later - earlier for earlier, later in zip(reads, reads[1:], strict=False)]
    assert len(reads) >= 2 and min(gaps) >= mitm_addon.REREAD_S  # 200 held flows, not 200 readers
