"""Integration: hypothesis throws random JSON, random field values and random
bytes at `POST /v1/translate`, at every jobs endpoint and at every admin endpoint of one running
server. The server must never answer a 5xx other than 503/504, must answer every error with the
JSON error body, must keep `/metrics` bounded (every label value from a bounded set) and must
still be alive afterwards."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.support.prometheus import unbounded_labels
from tests.support.server import TOKEN, RunningServer, module_server

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FUZZ_FEW = settings(FUZZ, max_examples=60)

json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=40)
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12)
field_values = json_scalars | st.sampled_from(["en", "de", "auto", "fast", "quality", "paid", "free", "batch", "reject",
                                               "cache", "", "\x00", "\ud800"])
valid_fields = {
    "text": st.text(min_size=1, max_size=60),
    "source_lang": st.sampled_from(["en", "fr", "EN"]),
    "target_lang": st.sampled_from(["de", "ja", "zh"]),
    "mode": st.sampled_from(["auto", "fast", "quality"]),
    "priority": st.sampled_from(["paid", "free", "batch"]),
    "tenant": st.text(min_size=1, max_size=64),
    "deadline_ms": st.floats(1, 600_000) | st.integers(1, 600_000),
    "on_overload": st.sampled_from(["reject", "fast", "cache"]),
}
REQUIRED = ("text", "source_lang", "target_lang")
translate_bodies = st.fixed_dictionaries(
    {name: valid_fields[name] for name in REQUIRED},
    optional={name: strategy for name, strategy in valid_fields.items() if name not in REQUIRED},
)
mutations = st.none() | st.tuples(st.sampled_from([*valid_fields, "extra"]), field_values | st.just(None))


# The fast pool is autoscaled between 1 and 1 node with a clock-time peak, so that the epoch
# endpoint has schedules to move, without the autoscaler ever starting a node.
FUZZ_CONFIG = {"pools": {"fast": {"autoscale": {"min_nodes": 1, "max_nodes": 1, "schedule": [{"at_clock": "03:00", "nodes": 1}]}}}}
MAX_METRICS_BYTES = 256_000  # every bounded label set at once stays far below this


server = module_server("fuzz-server", FUZZ_CONFIG)


def _check(response: httpx.Response) -> None:
    event(f"status {response.status_code}")
    assert response.status_code < 500 or response.status_code in (503, 504), (response.status_code, response.text)
    if response.status_code >= 400:
        error = response.json()["error"]
        assert isinstance(error["code"], str) and isinstance(error["message"], str) and error["message"], response.text


def _post(server: RunningServer, path: str, content: bytes, content_type: str = "application/json") -> httpx.Response:
    return server.client.post(path, content=content, headers={"content-type": content_type, "authorization": f"Bearer {TOKEN}"}, timeout=30)


def _json(value: Any) -> bytes:
    """ASCII JSON: lone surrogates travel as escapes, infinities as the `Infinity` that Python's
    parser (and so the server's) accepts."""
    return json.dumps(value).encode()


@FUZZ
@given(body=json_values)
@pytest.mark.slow
def test_fuzz_translate_random_json(server: RunningServer, body: Any) -> None:
    _check(_post(server, "/v1/translate", _json(body)))


@FUZZ
@given(body=translate_bodies, mutation=mutations)
@pytest.mark.slow
def test_fuzz_translate_random_field_values(server: RunningServer, body: dict[str, Any], mutation: tuple[str, Any] | None) -> None:
    """A valid body, or one with a single field set to a random value (or removed)."""
    if mutation is not None:
        name, value = mutation
        body = {k: v for k, v in body.items() if k != name} if value is None else {**body, name: value}
    response = _post(server, "/v1/translate", _json(body))
    _check(response)
    if response.status_code == 200:
        assert response.json()["chars"] == len(body["text"]) and response.json()["translation"]


@FUZZ
@given(content=st.binary(max_size=300),
       content_type=st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded", ""]))
@pytest.mark.slow
def test_fuzz_translate_random_bytes(server: RunningServer, content: bytes, content_type: str) -> None:
    _check(_post(server, "/v1/translate", content, content_type))


@FUZZ_FEW
@given(body=translate_bodies, mutation=mutations, path=st.sampled_from(["/v1/jobs", "/v1/translate/stream"]))
@pytest.mark.slow
def test_fuzz_jobs_random_field_values(server: RunningServer, body: dict[str, Any], mutation: tuple[str, Any] | None, path: str) -> None:
    if mutation is not None:
        name, value = mutation
        body = {k: v for k, v in body.items() if k != name} if value is None else {**body, name: value}
    response = _post(server, path, _json(body))
    _check(response)
    if path == "/v1/jobs" and response.status_code == 202:
        _check(server.client.get(response.headers["Location"]))


@FUZZ_FEW
@given(body=json_values | st.binary(max_size=300), path=st.sampled_from(["/v1/jobs", "/v1/translate/stream"]))
@pytest.mark.slow
def test_fuzz_jobs_random_bodies(server: RunningServer, body: Any, path: str) -> None:
    _check(_post(server, path, body if isinstance(body, bytes) else _json(body)))


@FUZZ_FEW
@given(job_id=st.text(min_size=1, max_size=80).filter(lambda s: s not in (".", "..")))  # dot segments: another path
@pytest.mark.slow
def test_fuzz_job_ids(server: RunningServer, job_id: str) -> None:
    response = server.client.get(f"/v1/jobs/{quote(job_id, safe='')}")
    _check(response)
    assert response.status_code == 404


@FUZZ_FEW
@given(params=st.dictionaries(st.sampled_from(["after", "limit", "other"]),
                              st.text(max_size=30) | st.integers(-(2**70), 2**70).map(str), max_size=3))
@pytest.mark.slow
def test_fuzz_events_query(server: RunningServer, params: dict[str, str]) -> None:
    response = server.client.get("/v1/events", params=params)
    _check(response)
    if response.status_code == 200:
        seqs = [e["seq"] for e in response.json()["events"]]
        assert seqs == sorted(seqs) and all(isinstance(s, int) for s in seqs)


ADMIN_PATHS = st.sampled_from(
    ["/admin/nodes/{node}/faults", "/admin/nodes/{node}/restart", "/admin/pools/{pool}/scale", "/admin/cache/flush",
     "/admin/nodes/{node}/kill"]
)
fault_bodies = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.sampled_from(["partition", "reset", "latency", "errors", "meteor"]) | json_scalars,
        "mode": st.sampled_from(["blackhole", "reset"]) | json_scalars,
        "latency_ms": st.floats(-5, 200) | json_scalars,
        "jitter_ms": st.floats(-5, 50) | json_scalars,
        "error_rate": st.floats(-1, 2) | json_scalars,
        "ttl_s": st.floats(-1, 2) | json_scalars,
        "extra": json_scalars,
    },
)


# One path segment: a "/" or a dot segment would name another route (404 before any check).
path_segments = st.text(min_size=1, max_size=12).filter(lambda s: "/" not in s and s not in (".", ".."))


@FUZZ_FEW
@given(
    template=ADMIN_PATHS,
    node=st.sampled_from(["quality-0", "fast-0", "quality-99"]) | path_segments,
    pool=st.sampled_from(["gpu", "missing"]) | path_segments,
    body=fault_bodies | json_values | st.fixed_dictionaries({"warm": json_scalars, "nodes": st.integers(-3, 100) | json_scalars}),
)
@pytest.mark.slow
def test_fuzz_admin_endpoints(server: RunningServer, template: str, node: str, pool: str, body: Any) -> None:
    if template.endswith("/kill") and node in ("quality-0", "fast-0"):
        node = "quality-99"  # killing is covered by test_resilience; here it would only slow the fuzzing
    if template.endswith("/scale") and pool in ("quality", "fast"):
        pool = "gpu"  # a real scale-up could start dozens of node processes on a small machine
    path = template.format(node=quote(node, safe=""), pool=quote(pool, safe=""))
    _check(_post(server, path, _json(body)))


EVERY_ADMIN_CALL = st.sampled_from(
    [
        ("POST", "/admin/nodes/{node}/kill"), ("POST", "/admin/nodes/{node}/restart"), ("POST", "/admin/nodes/{node}/faults"),
        ("DELETE", "/admin/nodes/{node}/faults"), ("POST", "/admin/pools/{pool}/scale"), ("POST", "/admin/cache/flush"),
        ("POST", "/admin/cache/save"), ("POST", "/admin/cache/restore"), ("POST", "/admin/autoscale/epoch"),
        ("POST", "/admin/reset"),
    ]
)
epoch_bodies = (st.fixed_dictionaries({"epoch": st.floats() | st.integers(-(2**70), 2**70) | json_scalars})
                | st.fixed_dictionaries({}, optional={"epoch": json_values, "extra": json_scalars}))
admin_bodies = epoch_bodies | fault_bodies | json_values | st.binary(max_size=200)


@FUZZ_FEW
@given(
    call=EVERY_ADMIN_CALL,
    node=st.sampled_from(["quality-0", "fast-0", "quality-99"]) | path_segments,
    pool=st.sampled_from(["gpu", "missing"]) | path_segments,
    body=admin_bodies,
    token=st.sampled_from([TOKEN, None, "", "wrong"]) | st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=20),
)
@pytest.mark.slow
def test_fuzz_every_admin_endpoint(server: RunningServer, call: tuple[str, str], node: str, pool: str, body: Any,
                                   token: str | None) -> None:
    method, template = call
    if template.endswith("/kill") and node in ("quality-0", "fast-0"):
        node = "quality-99"  # killing is covered by test_resilience; here it would only slow the fuzzing
    if template.endswith("/scale") and pool in ("quality", "fast"):
        pool = "gpu"  # a real scale-up could start dozens of node processes on a small machine
    path = template.format(node=quote(node, safe=""), pool=quote(pool, safe=""))
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}".strip()
    content = body if isinstance(body, bytes) else _json(body)
    response = server.client.request(method, path, content=content, headers=headers, timeout=30)
    _check(response)
    if token != TOKEN:  # a body that is no JSON at all is refused before the token is read
        assert response.status_code == 401 or (response.status_code == 400 and isinstance(body, bytes)), response.text


@pytest.mark.slow
def test_fuzz_metrics_stay_bounded(server: RunningServer) -> None:
    text = server.client.get("/metrics").text
    assert unbounded_labels(text, {"quality", "fast"}) == []
    assert len(text) < MAX_METRICS_BYTES, f"/metrics has {len(text)} bytes after the fuzzing"


@pytest.mark.slow
def test_fuzz_server_still_healthy_afterwards(server: RunningServer) -> None:
    assert server.client.get("/healthz").status_code == 200
    assert server.admin("POST", "/admin/reset").status_code == 200
    status = server.wait_for(lambda s: s["ready"] and all(n["state"] == "ready" for n in s["nodes"]), timeout_s=30)
    assert len(status["nodes"]) == 3
    assert server.translate("Still standing after the fuzzing.").status_code == 200
