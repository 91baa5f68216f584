"""The chaos extension's HTTP client keeps the admin token on the guarded target."""

from __future__ import annotations

from typing import Any

import pytest
from chaoslib.exceptions import ActivityFailed

from rushhour.experiments.client import AdminClient, client_from
from tests.support.stub import Answer, stub_server

Fake = tuple[Any, dict[str, Any], dict[str, Any]]


def _proxy_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)


@pytest.mark.slow
def test_client_ignores_proxy_variables_for_a_loopback_server(fake_cluster: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, config, secrets = fake_cluster
    _proxy_everything(monkeypatch)
    client = client_from(config, secrets)
    assert client.get_json("/v1/status")["ready"] is True
    client.post("/admin/nodes/quality-0/kill")
    assert cluster.calls == [("POST", "/admin/nodes/quality-0/kill", None)]
    assert client.status_code("/readyz") == 200


def test_client_keeps_proxy_variables_for_a_remote_server() -> None:
    http = AdminClient(url="http://gateway.example.com:8000")._http()
    try:
        assert http._trust_env is True
    finally:
        http.close()


def test_client_never_follows_a_redirect_with_the_token() -> None:
    routes: dict[str, Answer] = {"/admin/reset": (307, {"Location": "http://redirected.invalid/admin/reset"}, {}),
              "/v1/status": (302, {"Location": "http://redirected.invalid/v1/status"}, {})}
    with stub_server(routes) as (url, asked):
        client = AdminClient(url=url, token="secret")
        with pytest.raises(ActivityFailed, match='307 with a redirect to "http://redirected.invalid/admin/reset"'):
            client.post("/admin/reset")
        with pytest.raises(ActivityFailed, match="never follows redirects"):
            client.get_json("/v1/status")
        assert client.request_raw("POST", "/v1/status", {}).status_code == 302
    assert asked == ["/admin/reset", "/v1/status", "/v1/status"]
