"""The mitmproxy overhead benchmark loads both paths with every request answered."""

from __future__ import annotations

import pytest

from benchmarks import mitm_overhead


@pytest.mark.slow
def test_mitm_overhead_loads_the_service_directly_and_through_the_proxy() -> None:
    if not mitm_overhead.MITMDUMP.exists():
        pytest.skip(f"mitmproxy is not installed in {mitm_overhead.MITMDUMP.parent.parent}: `make mitmproxy` builds it.")
    result = mitm_overhead.run(rounds=2, requests=40, concurrency=4)
    assert set(result["runs"]) == {"direct", "via mitmproxy"}
    for runs in result["runs"].values():
        assert len(runs) == 2
        assert all(r["rps"] > 0 and 0 < r["p50_ms"] <= r["p99_ms"] for r in runs)
    assert result["median"]["via mitmproxy"]["p50_ms"] == pytest.approx(
        sorted(r["p50_ms"] for r in result["runs"]["via mitmproxy"])[0] / 2
        + sorted(r["p50_ms"] for r in result["runs"]["via mitmproxy"])[1] / 2)
