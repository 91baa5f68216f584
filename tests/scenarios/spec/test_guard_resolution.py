"""guard_url names the field and the address when a target's name resolves somewhere it may not go.

The attack: a target host name that resolves to the cloud metadata address (or, without
--allow-remote, to a remote one) passed the guard as a name, since only its text was read.
The guard resolves it: the refusal names the field, the URL and the address; nothing is contacted.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from rushhour.kernel.pinning import forget_pins, pinned
from rushhour.scenarios.spec.urls import guard_url

ANSWERS = {"meta.test": "169.254.169.254", "far.test": "192.0.2.44", "here.test": "127.0.0.1"}


@pytest.fixture(autouse=True)
def resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def answer(host: str, *args: object, **kwargs: object) -> list[tuple[object, ...]]:
        if host not in ANSWERS:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ANSWERS[host], 0))]

    forget_pins()
    monkeypatch.setattr(socket, "getaddrinfo", answer)
    yield
    forget_pins()


def test_a_name_resolving_to_metadata_is_refused_even_under_allow_remote() -> None:
    with pytest.raises(ValueError, match=r'^--target: "http://meta.test:80/v1" resolves to 169.254.169.254, which is '
                                         r"a link-local address .* rushhour never contacts one, --allow-remote or not\.$"):
        guard_url("http://meta.test:80/v1", field="--target", allow_remote=True)


def test_a_name_resolving_off_this_machine_needs_allow_remote_and_is_pinned_with_it() -> None:
    with pytest.raises(ValueError, match=r'target.url: "http://far.test" resolves to 192.0.2.44, which is not on '
                                         r"this machine .* pass --allow-remote"):
        guard_url("http://far.test", field="target.url", allow_remote=False)
    guard_url("http://far.test", field="target.url", allow_remote=True)
    guard_url("http://here.test:8000", field="target.url", allow_remote=False)
    assert pinned("far.test") == ("192.0.2.44",) and pinned("here.test") == ("127.0.0.1",)
