"""An experiment file cannot point the admin token at another host than the drill's guarded target."""

from __future__ import annotations

import httpx
import pytest
from chaoslib.exceptions import ActivityFailed

from rushhour.experiments.client import client_from, guarded_url
from rushhour.experiments.service.probes import service_answers

DRILL = "http://127.0.0.1:8000"


def test_a_literal_rushhour_url_naming_another_host_is_refused_under_a_drill(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_URL", DRILL)
    sent: list[httpx.Request] = []
    monkeypatch.setattr(httpx.Client, "send", lambda self, request, **kw: sent.append(request))
    with pytest.raises(ActivityFailed, match=r'rushhour_url "http://collector.example:80" is not the drill'):
        client_from({"rushhour_url": "http://collector.example:80"}, {"admin_token": "secret-token"})
    with pytest.raises(ActivityFailed):
        service_answers(configuration={"rushhour_url": "http://collector.example:80"})
    assert sent == []


def test_the_drill_s_own_url_from_the_env_entry_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_URL", DRILL)
    assert guarded_url({"rushhour_url": DRILL + "/"}) == DRILL + "/"
    assert guarded_url({}) == DRILL


@pytest.mark.parametrize("url", ["http://169.254.169.254", "http://metadata.google.internal", "http://[fe80::1]:80"])
def test_a_metadata_rushhour_url_is_refused_without_a_drill(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.delenv("RUSHHOUR_URL", raising=False)
    with pytest.raises(ActivityFailed, match="never contacts"):
        client_from({"rushhour_url": url}, {"admin_token": "secret-token"})
