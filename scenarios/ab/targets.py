"""What a TARGET of `rushhour ab` is, and getting both arms up and answering before any load.

A TARGET is a URL of a running service (on this machine unless `--allow-remote`, the same
loopback guard as `rushhour run`), `embedded` (the bundled reference server with the scenario's
embedded settings, booted for this run) or `embedded:CONFIG.yaml` (the same with that server
config). Each embedded arm gets its own server process on its own free port.

A relative peak ("0.6x n-1 capacity") is calibrated on the BASELINE arm, the way `rushhour run`
calibrates on its target (`rate_target`): a URL under the same guard, or the reference server the
baseline boots (its config file included), cached per target like every calibration. The
candidate is then loaded at the same rate, so the arms stay comparable, and it receives nothing
while the baseline is measured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from rushhour.scenarios.protocols.admission import Context, Needs, Refused, admit
from rushhour.scenarios.run.embedded import EmbeddedServer
from rushhour.scenarios.spec.model import EmbeddedTarget, Scenario
from rushhour.scenarios.spec.target import TargetProtocol
from rushhour.scenarios.spec.urls import check_target_url

EMBEDDED = "embedded"

__all__ = ["ArmTarget", "ArmServers", "RateTarget", "TargetError", "parse_target", "rate_target"]


class TargetError(ValueError):
    """A TARGET that is malformed, not allowed, not reachable or not speaking the protocol."""


@dataclass(frozen=True)
class ArmTarget:
    """One arm's target: `url` for a running service, `embedded` for a server booted here."""

    arm: str
    given: str
    url: str | None = None
    embedded: EmbeddedTarget | None = None

    @property
    def flag(self) -> str:
        return f"--{self.arm}"

    def describe(self) -> str:
        if self.url is not None:
            return self.url
        config = self.embedded.config if self.embedded is not None else None
        return f"the reference server, booted here{f' with {config}' if config else ''}"


def parse_target(arm: str, given: str, scenario: Scenario, *, allow_remote: bool) -> ArmTarget:
    """Read one TARGET argument; raise TargetError naming the flag and the value."""
    text = given.strip()
    if text == EMBEDDED or text.startswith(EMBEDDED + ":"):
        return ArmTarget(arm, given, embedded=_embedded(arm, given, text, scenario))
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetError(f'--{arm}: "{given}" is not a target; give a URL (http://127.0.0.1:8000), "embedded" '
                          'or "embedded:CONFIG.yaml".')
    try:
        check_target_url(text)  # the port
    except ValueError as exc:
        raise TargetError(f"--{arm}: {exc}") from exc
    context = Context(field=f"--{arm}", allow_remote=allow_remote, allowed=scenario.load.allowed_hosts, probe=False)
    answer = admit(text, Needs(scenario.target), context)
    if isinstance(answer, Refused):
        raise TargetError(answer.sentence)
    return ArmTarget(arm, given, url=text.rstrip("/"))


def _embedded(arm: str, given: str, text: str, scenario: Scenario) -> EmbeddedTarget:
    """The scenario's embedded settings (or the defaults), with the config file the TARGET names."""
    base = scenario.target.embedded or EmbeddedTarget()
    config = text[len(EMBEDDED) + 1:] if ":" in text else ""
    if not config:
        return base
    path = Path(config).expanduser()
    if not path.is_file():
        raise TargetError(f'--{arm}: "{given}": the server config "{config}" does not exist.')
    return base.model_copy(update={"config": str(path.resolve())})


@dataclass(frozen=True)
class RateTarget:
    """Where a relative peak is calibrated: the baseline's URL (the `--target` of that
    calibration) or the reference server the baseline boots; neither for an absolute peak."""

    url: str | None = None
    embedded: EmbeddedTarget | None = None


def rate_target(baseline: ArmTarget, scenario: Scenario) -> RateTarget:
    """The target a relative peak of `scenario` is calibrated on: the baseline, whatever it is."""
    if scenario.traffic.relative_peak is None:
        return RateTarget()
    return RateTarget(url=baseline.url, embedded=baseline.embedded)


def probe_arm(target: ArmTarget, url: str, protocol: TargetProtocol) -> str:
    """One real request to the arm; the probe's line, or TargetError naming the arm."""
    answer = admit(url, Needs(protocol), Context(guard=False, failure=f"{target.flag} {target.given}: the probe failed: "
                                                                        "{error}"))
    if isinstance(answer, Refused):
        raise TargetError(answer.sentence)
    return f"{target.arm}: " + answer.notes[0].removeprefix("probe").strip()


@dataclass
class ArmServers:
    """The embedded servers of an A/B run (none for URL arms): booted, warmed, stopped together."""

    targets: tuple[ArmTarget, ArmTarget]
    folder: Path
    base_dir: Path
    servers: dict[str, EmbeddedServer] = field(default_factory=dict)

    def start(self, languages: tuple[str, ...], say: Callable[[str], None]) -> None:
        """Boot each embedded arm in turn (one at a time: booting is CPU-heavy) and warm it."""
        for target in self.targets:
            if target.embedded is None:
                continue
            server = EmbeddedServer(target.embedded, log_path=self.folder / target.arm / "server.log",
                                    base_dir=self.base_dir)
            self.servers[target.arm] = server
            say(f"booting the {target.arm} reference server on {server.url} ...")
            server.start()
            server.warm(languages)

    def url(self, target: ArmTarget) -> str:
        server = self.servers.get(target.arm)
        return server.url if server is not None else str(target.url)

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()
