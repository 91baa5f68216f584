"""A credential header is never written into a scenario (and is masked when shown), whatever its name."""

from __future__ import annotations

import pytest

from rushhour.scenarios.protocols.credentials import masked_headers
from rushhour.scenarios.spec.target import TargetProtocol, is_secret_header

CREDENTIAL_HEADERS = ["Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "Api-Key", "X-Auth-Token",
                      "X-Access-Token", "X-Amz-Security-Token", "X-Goog-Api-Key", "Ocp-Apim-Subscription-Key",
                      "X-Vendor-Secret", "X-Session-Token", "X-Signature"]


@pytest.mark.parametrize("name", CREDENTIAL_HEADERS)
def test_a_credential_header_is_refused_in_a_scenario_and_masked_when_shown(name: str) -> None:
    assert is_secret_header(name) and is_secret_header(name.upper())
    with pytest.raises(ValueError, match="would write a credential into the scenario"):
        TargetProtocol(headers={name: "s3cr3t-value-1234"})
    assert "s3cr3t" not in masked_headers({name: "s3cr3t-value-1234"})[name]


@pytest.mark.parametrize("name", ["X-Team", "Accept-Language", "X-Request-Priority", "Content-Type"])
def test_an_ordinary_header_is_kept(name: str) -> None:
    assert not is_secret_header(name)
    assert TargetProtocol(headers={name: "a"}).headers == {name: "a"}
