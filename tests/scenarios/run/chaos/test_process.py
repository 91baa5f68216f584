"""A `chaos run` child carries the drill's pinned host names, so the chaos side connects where the guard looked."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from rushhour.kernel.loopback import refused_address
from rushhour.kernel.pinning import ENV_PINNED, forget_pins, load_pins, pinned
from rushhour.scenarios.run.chaos import process as chaosproc

NAME = "admitted.test"


class Captured(Exception):
    """Raised by the stand-in Popen once it has seen the environment."""


def test_the_chaos_child_gets_the_pins_of_the_names_the_drill_admitted(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, str] = {}

    def popen(*args: Any, **kwargs: Any) -> None:
        seen.update(kwargs["env"])
        raise Captured

    def resolve(host: str, *args: Any, **kwargs: Any) -> Any:
        assert host == NAME, f"only {NAME} is looked up, not {host}"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.7", 0))]

    forget_pins()
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(chaosproc.subprocess, "Popen", popen)
    monkeypatch.setenv(ENV_PINNED, '{"pins": {"stale.test": ["127.0.0.9"]}, "late": {}}')  # not the drill's own
    try:
        assert refused_address(f"http://{NAME}:8000", allow_remote=False) is None
        proc = chaosproc.ChaosProcess(name="x", experiment=tmp_path / "x.json", out_dir=tmp_path, env={})
        with pytest.raises(Captured):
            proc.launch()
        forget_pins()  # the child starts with none but what it is handed
        load_pins(seen)
        assert pinned(NAME) == ("127.0.0.7",) and pinned("stale.test") is None
    finally:
        forget_pins()
