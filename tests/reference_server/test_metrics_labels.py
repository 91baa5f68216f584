"""Integration: unauthenticated input never becomes a Prometheus label.

Huge and unknown values in every field of every public and admin endpoint are answered with an
error, and `/metrics` stays the same size: label values come only from bounded sets the
server knows (priority classes, pools, nodes, modes, status codes; the tenant never).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from tests.support.prometheus import unbounded_labels
from tests.support.server import TOKEN, RunningServer

BIG = "x" * 60_000
VALID = {"text": "Label me not.", "source_lang": "en", "target_lang": "de"}
POOLS = {"quality", "fast"}
MAX_GROWTH_BYTES = 16_384  # a handful of new bounded label sets (422 answers, "invalid" priority)


@pytest.fixture(scope="module")
def server(shared_server: RunningServer) -> RunningServer:
    return shared_server


def _metrics(server: RunningServer) -> str:
    response = server.client.get("/metrics")
    assert response.status_code == 200
    return response.text


def _bad_bodies(i: int) -> list[dict[str, Any]]:
    """Each a valid body with one field set to a huge, fresh value."""
    huge = f"{BIG}{i}"
    return [
        {**VALID, "priority": huge},
        {**VALID, "priority": f"unknown-class-{i}"},  # short enough for the model, still no class
        {**VALID, "mode": huge},
        {**VALID, "tenant": huge},
        {**VALID, "source_lang": huge},
        {**VALID, "target_lang": f"x{i}"},
        {**VALID, "on_overload": huge},
        {**VALID, "deadline_ms": huge},
        {**VALID, huge[:200]: 1},
    ]


@pytest.mark.slow
def test_metrics_labels_stay_bounded_under_huge_invalid_fields(server: RunningServer) -> None:
    assert server.translate("Warm the label sets up.").status_code == 200
    before = len(_metrics(server))
    for i in range(5):
        for body in _bad_bodies(i):
            for path in ("/v1/translate", "/v1/jobs", "/v1/translate/stream"):
                response = server.client.post(path, json=body)
                assert response.status_code in (413, 422), (path, response.status_code, response.text[:300])
                assert len(response.content) < 2_000, "an error answer must not echo a huge value back"
    text = _metrics(server)
    assert len(text) - before < MAX_GROWTH_BYTES, f"/metrics grew from {before} to {len(text)} bytes"
    assert unbounded_labels(text, POOLS) == []


@pytest.mark.slow
def test_metrics_labels_stay_bounded_under_admin_calls_with_unknown_names(server: RunningServer) -> None:
    before = len(_metrics(server))
    for i in range(5):
        name = quote(f"{'n' * 8_000}{i}", safe="")
        for token in (TOKEN, None, f"{'t' * 8_000}{i}"):
            for method, path, body in (
                ("POST", f"/admin/nodes/{name}/faults", {"kind": "latency", "latency_ms": 5, "ttl_s": 1}),
                ("DELETE", f"/admin/nodes/{name}/faults", None),
                ("POST", f"/admin/nodes/{name}/kill", None),
                ("POST", f"/admin/nodes/{name}/restart", {"warm": True}),
                ("POST", f"/admin/pools/{name}/scale", {"nodes": 1}),
                ("POST", "/admin/nodes/fast-0/faults", {"kind": f"k{i}" * 10_000, "ttl_s": 1}),
            ):
                response = server.admin(method, path, json=body, token=token)
                assert response.status_code in (401, 404, 422), (path[:80], response.status_code, response.text[:300])
    for query in (f"after={BIG}", f"limit={BIG}", "after=-1&limit=99999999999999999999"):
        assert server.client.get(f"/v1/events?{query}").status_code in (200, 422)
    missing = server.client.get(f"/v1/jobs/{BIG}")
    assert missing.status_code == 404 and len(missing.content) < 2_000
    text = _metrics(server)
    assert len(text) - before < MAX_GROWTH_BYTES, f"/metrics grew from {before} to {len(text)} bytes"
    assert unbounded_labels(text, POOLS) == []
