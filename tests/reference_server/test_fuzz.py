"""Integration (issue 3): hypothesis throws random JSON, random field values and random bytes
at `POST /v1/translate` and at the admin endpoints of one running server. The server must
never answer a 5xx other than 503/504, must answer every error with the JSON error body,
and must still be alive afterwards."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.support.server import TOKEN, RunningServer

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FUZZ_FEW = settings(FUZZ, max_examples=60)

json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=40)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
field_values = json_scalars | st.sampled_from(["en", "de", "auto", "fast", "quality", "paid", "free", "batch", "reject", "cache", "", "\x00", "\ud800"])
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


@pytest.fixture(scope="module")
def server(shared_server: RunningServer) -> RunningServer:
    return shared_server


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
def test_fuzz_translate_random_json(server: RunningServer, body: Any) -> None:
    _check(_post(server, "/v1/translate", _json(body)))


@FUZZ
@given(body=translate_bodies, mutation=mutations)
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
@given(content=st.binary(max_size=300), content_type=st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded", ""]))
def test_fuzz_translate_random_bytes(server: RunningServer, content: bytes, content_type: str) -> None:
    _check(_post(server, "/v1/translate", content, content_type))


ADMIN_PATHS = st.sampled_from(
    ["/admin/nodes/{node}/faults", "/admin/nodes/{node}/restart", "/admin/pools/{pool}/scale", "/admin/cache/flush", "/admin/nodes/{node}/kill"]
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


@FUZZ_FEW
@given(
    template=ADMIN_PATHS,
    node=st.sampled_from(["quality-0", "fast-0", "quality-99"]) | st.text(min_size=1, max_size=12),
    pool=st.sampled_from(["gpu", "missing"]) | st.text(min_size=1, max_size=12),
    body=fault_bodies | json_values | st.fixed_dictionaries({"warm": json_scalars, "nodes": st.integers(-3, 100) | json_scalars}),
)
def test_fuzz_admin_endpoints(server: RunningServer, template: str, node: str, pool: str, body: Any) -> None:
    if template.endswith("/kill") and node in ("quality-0", "fast-0"):
        node = "quality-99"  # killing is covered by test_resilience; here it would only slow the fuzzing
    if template.endswith("/scale") and pool in ("quality", "fast"):
        pool = "gpu"  # a real scale-up could start dozens of node processes on a small machine
    path = template.format(node=quote(node, safe=""), pool=quote(pool, safe=""))
    _check(_post(server, path, _json(body)))


def test_fuzz_server_still_healthy_afterwards(server: RunningServer) -> None:
    assert server.client.get("/healthz").status_code == 200
    assert server.admin("POST", "/admin/reset").status_code == 200
    status = server.wait_for(lambda s: s["ready"] and all(n["state"] == "ready" for n in s["nodes"]), timeout_s=30)
    assert len(status["nodes"]) == 3
    assert server.translate("Still standing after the fuzzing.").status_code == 200
