"""One guard for every address: what `--allow-remote` opens and what stays shut whatever the flags.

Nothing here sends a request: the guard is a pure function of the URL, the flag and the names."""

from __future__ import annotations

import pytest

from rushhour.kernel.loopback import is_loopback_host, is_loopback_url, refused_address

NEVER = ["http://169.254.169.254/latest/meta-data/", "http://2852039166/", "http://0xa9fea9fe/",
         "http://169.254.43518/", "http://[::ffff:169.254.169.254]/", "http://[fe80::1]:80/",
         "http://metadata.google.internal/computeMetadata/v1/", "http://METADATA.google.internal./",
         "http://224.0.0.1:80/", "http://[ff02::1]/", "http://0.0.0.0:8000/", "http://240.0.0.1/"]


@pytest.mark.parametrize("url", NEVER)
def test_guard_refuses_special_addresses_even_under_allow_remote(url: str) -> None:
    reason = refused_address(url, allow_remote=True)
    assert reason is not None and "never contacts" in reason
    assert refused_address(url, allow_remote=False) is not None


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000", "http://localhost:1", "http://[::1]:9", "http://2130706433/"])
def test_guard_lets_loopback_through_without_any_flag(url: str) -> None:
    assert is_loopback_url(url) and refused_address(url, allow_remote=False) is None


@pytest.mark.parametrize("url", ["http://10.1.2.3:8000", "https://gpu-gateway.example.com", "http://[fd00::1]:80"])
def test_guard_opens_ordinary_remote_hosts_only_under_allow_remote(url: str) -> None:
    reason = refused_address(url, allow_remote=False)
    assert reason is not None and "--allow-remote" in reason
    assert refused_address(url, allow_remote=True) is None


def test_guard_lets_a_named_test_host_through_without_allow_remote() -> None:
    assert refused_address("http://[fd77::1]:18080", allow_remote=False, allowed=("fd77::1",)) is None


@pytest.mark.parametrize("host, here", [("127.0.0.1", True), ("::1", True), ("LOCALHOST", True), ("127.1", True),
                                        ("::ffff:127.0.0.1", True), ("0.0.0.0", False), ("::", False),
                                        ("10.0.0.5", False), ("example.com", False), ("", False)])
def test_loopback_host_is_the_url_rule_for_a_bare_host(host: str, here: bool) -> None:
    assert is_loopback_host(host) is here
    if host:
        assert is_loopback_url(f"http://{f'[{host}]' if ':' in host else host}:1/") is here
