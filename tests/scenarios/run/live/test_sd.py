"""`/sd` lists an address a scraper can reach: never the wildcard the endpoint was bound to."""

from __future__ import annotations

import socket

from rushhour.scenarios.run.live.metrics import advertised


def test_advertised_keeps_a_concrete_bind_address() -> None:
    assert advertised("127.0.0.1", 9100, "whatever:1") == "127.0.0.1:9100"
    assert advertised("::1", 9100, "") == "[::1]:9100"


def test_advertised_replaces_a_wildcard_bind_with_the_address_the_scraper_used() -> None:
    assert advertised("0.0.0.0", 9100, "10.1.2.3:9100") == "10.1.2.3:9100"
    assert advertised("::", 9100, "[fd00::5]:9100") == "[fd00::5]:9100"


def test_advertised_never_says_a_wildcard_even_when_asked_through_one() -> None:
    for asked in ("", "0.0.0.0:9100"):
        own = advertised("0.0.0.0", 9100, asked)
        assert not own.startswith("0.0.0.0") and own == f"{socket.gethostname()}:9100"
