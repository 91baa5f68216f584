"""The guard resolves every name it admits and pins it; a rebinding name cannot redirect a connection.

The attack (DNS rebinding): a name answers 127.0.0.1 while the guard looks, then a metadata
service or a remote host when the load connects. Before, the guard looked only at the text of the
host and the clients resolved it afresh per connection, so the load went wherever the second answer
said. The resolver here is a stand-in whose answers are known; refusals name TEST-NET and
link-local addresses that nothing contacts.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from rushhour.kernel import pinning
from rushhour.kernel.loopback import connect_addresses, refused_address
from rushhour.kernel.pinning import ENV_PINNED, forget_pins, load_pins, pinned, pins_env


class Resolver:
    """A stand-in DNS: each name answers the next of its answers (the last one once they run out)."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def __call__(self, host: str, *args: object, **kwargs: object) -> list[tuple[object, ...]]:
        self.asked.append(host)
        queue = self.answers.get(host)
        if not queue:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        addresses = queue.pop(0) if len(queue) > 1 else queue[0]
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0))
                for a in addresses]


@pytest.fixture(autouse=True)
def fresh_pins() -> Iterator[None]:
    forget_pins()
    yield
    forget_pins()


def _resolver(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[list[str]]]) -> Resolver:
    resolver = Resolver(answers)
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    return resolver


def test_a_name_that_rebinds_after_the_guard_connects_where_the_guard_looked(monkeypatch: pytest.MonkeyPatch) -> None:
    resolver = _resolver(monkeypatch, {"rebind.test": [["127.0.0.1"], ["192.0.2.1"]]})
    assert refused_address("http://rebind.test:8000/v1", allow_remote=False) is None
    assert connect_addresses("rebind.test") == ("127.0.0.1",)
    assert connect_addresses("REBIND.test.") == ("127.0.0.1",)
    assert resolver.asked == ["rebind.test"]  # the second answer is never asked for


@pytest.mark.parametrize(("answer", "allow_remote", "phrase"), [
    (["127.0.0.1", "192.0.2.7"], False, "resolves to 192.0.2.7, which is not on this machine"),
    (["127.0.0.1", "169.254.169.254"], True, "resolves to 169.254.169.254, which is a link-local address"),
    (["::1", "fe80::1"], True, "resolves to fe80::1, which is a link-local address"),
    (["0.0.0.0"], True, "resolves to 0.0.0.0, which is the unspecified address"),
])
def test_the_guard_refuses_a_name_when_any_address_fails_its_rules(monkeypatch: pytest.MonkeyPatch, answer: list[str],
                                                                   allow_remote: bool, phrase: str) -> None:
    _resolver(monkeypatch, {"mixed.test": [answer]})
    reason = refused_address("http://mixed.test/", allow_remote=allow_remote)
    assert reason is not None and reason.startswith(phrase)
    assert pinned("mixed.test") is None


def test_a_remote_name_is_pinned_under_allow_remote_and_refused_without(monkeypatch: pytest.MonkeyPatch) -> None:
    _resolver(monkeypatch, {"gpu.test": [["192.0.2.10", "2001:db8::10"]]})
    assert "--allow-remote" in str(refused_address("https://gpu.test", allow_remote=False))
    assert refused_address("https://gpu.test", allow_remote=True) is None
    assert pinned("gpu.test") == ("192.0.2.10", "2001:db8::10")


def test_a_name_unresolved_at_guard_time_is_checked_when_first_contacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Admitted under --allow-remote before it resolves; when it first resolves to metadata, refused."""
    _resolver(monkeypatch, {})
    assert refused_address("http://late.test", allow_remote=True) is None
    assert "--allow-remote" in str(refused_address("http://later.test", allow_remote=False))
    monkeypatch.setattr(socket, "getaddrinfo", Resolver({"late.test": [["169.254.169.254"]]}))
    with pytest.raises(OSError, match=r'"late.test": it resolves to 169.254.169.254, which is a link-local'):
        connect_addresses("late.test")
    assert pinned("late.test") is None


def test_a_name_no_guard_saw_is_held_to_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    _resolver(monkeypatch, {"stranger.test": [["192.0.2.5"]], "local.test": [["127.0.0.2"]]})
    with pytest.raises(OSError, match=r'"stranger.test": it resolves to 192.0.2.5, which is not on this machine'):
        connect_addresses("stranger.test")
    assert connect_addresses("local.test") == ("127.0.0.2",)
    assert connect_addresses("127.0.0.1") == ("127.0.0.1",) and connect_addresses("[::1]") == ("::1",)


def test_a_named_host_is_pinned_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    _resolver(monkeypatch, {"lab.test": [["169.254.9.9"], ["192.0.2.99"]]})
    assert refused_address("http://lab.test:81", allow_remote=False, allowed=("lab.test",)) is None
    assert connect_addresses("lab.test") == ("169.254.9.9",)


def test_pins_travel_to_a_child_process_in_their_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    _resolver(monkeypatch, {"rebind.test": [["127.0.0.1"], ["192.0.2.1"]]})
    assert refused_address("http://rebind.test", allow_remote=False) is None
    assert refused_address("http://late.test", allow_remote=True) is None
    handed = {ENV_PINNED: pins_env()}
    forget_pins()
    load_pins(handed)
    assert pinned("rebind.test") == ("127.0.0.1",)
    assert pinning.late_policy("late.test").allow_remote is True
    with pytest.raises(ValueError, match=f"{ENV_PINNED} is not the JSON of pinned hosts"):
        load_pins({ENV_PINNED: '{"pins": 3}'})
