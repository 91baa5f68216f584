"""The chaos extension's HTTP client keeps the admin token on the guarded target.

Against DNS rebinding, the target's name answers 127.0.0.1 while the drill's guard looks, then
192.0.2.1 (TEST-NET). The client is built in the `chaos run` process from the pins the drill handed
over (RUSHHOUR_PINNED_HOSTS) or, without a drill, from its own check of the URL; either way the
loopback stand-in gets every request, by name, and a second look-up fails the test before the
rebound answer could be handed out (so 192.0.2.1 is never contacted).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from chaoslib.exceptions import ActivityFailed

from rushhour.experiments.client import AdminClient, client_from
from rushhour.kernel.loopback import refused_address
from rushhour.kernel.pinning import ENV_PINNED, forget_pins, pinned, pins_env
from tests.support.stub import Answer, stub_server

Fake = tuple[Any, dict[str, Any], dict[str, Any]]
NAME = "rebind.test"


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



@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A resolver that answers 127.0.0.1 for NAME once, and fails the test on any later look-up."""
    real, asked = socket.getaddrinfo, []

    def resolve(host: str, *args: Any, **kwargs: Any) -> Any:
        if host != NAME:
            return real(host, *args, **kwargs)
        asked.append(host)
        if len(asked) > 1:
            raise AssertionError(f"{NAME} was looked up again, where the rebound answer (192.0.2.1) would send it")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 0))]

    forget_pins()
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.delenv(ENV_PINNED, raising=False)
    monkeypatch.delenv("RUSHHOUR_URL", raising=False)
    yield asked
    forget_pins()


def _drive(url: str) -> list[int]:
    client = client_from({"rushhour_url": url}, {"admin_token": "secret"})
    client.post("/admin/reset")
    return [client.status_code("/readyz"), client.request_raw("POST", "/readyz", {}).status_code]


def test_the_drill_s_pins_reach_the_chaos_process_and_hold(rebinding: list[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    with stub_server({"/admin/reset": (200, {}, {}), "/readyz": (200, {}, {})}) as (stub, asked):
        url = f"http://{NAME}:{stub.rsplit(':', 1)[1]}"
        assert refused_address(url, allow_remote=False) is None  # the drill's guard, in the drill's process
        handed = pins_env()
        forget_pins()  # the chaos process starts with no pin of its own
        monkeypatch.setenv(ENV_PINNED, handed)
        monkeypatch.setenv("RUSHHOUR_URL", url)
        statuses = _drive(url)
    assert statuses == [200, 200] and asked == ["/admin/reset", "/readyz", "/readyz"]
    assert rebinding == [NAME] and pinned(NAME) == ("127.0.0.1",)


def test_without_a_drill_the_client_connects_where_its_own_check_looked(rebinding: list[str]) -> None:
    with stub_server({"/admin/reset": (200, {}, {}), "/readyz": (204, {}, {})}) as (stub, asked):
        statuses = _drive(f"http://{NAME}:{stub.rsplit(':', 1)[1]}")
    assert statuses == [204, 204] and asked == ["/admin/reset", "/readyz", "/readyz"]
    assert rebinding == [NAME]


def test_pins_that_are_not_rushhour_s_json_are_refused_in_a_sentence(rebinding: list[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_PINNED, '{"pins": 3}')
    with pytest.raises(ActivityFailed, match=f"{ENV_PINNED} is not the JSON of pinned hosts rushhour writes"):
        client_from({"rushhour_url": "http://127.0.0.1:9"}, {})
    assert rebinding == []


def test_the_service_probe_answers_from_the_pinned_address_of_a_rebinding_name(rebinding: list[str]) -> None:
    from rushhour.experiments.service.probes import service_answers

    with stub_server({"/health": (200, {}, {})}) as (stub, asked):
        url = f"http://{NAME}:{stub.rsplit(':', 1)[1]}"
        answers = [service_answers("/health", configuration={"rushhour_url": url}) for _ in range(3)]
    assert answers == [True, True, True] and asked == ["/health"] * 3
    assert rebinding == [NAME]
