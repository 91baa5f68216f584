"""Admission of a target: may the harness load it, and can it serve what the scenario needs.

One function (`admit`) asks, in order: the guard (the URL's form, loopback, allowed hosts, special
addresses; a host name resolved, checked and pinned: `rushhour.scenarios.spec.urls.guard_url`), the
features the scenario wants beyond its requests (`Needs.wanted`: the jobs API, the admin API chaos
drives), the capability probe (one real request, `rushhour.scenarios.protocols.probe`) and the fit
(a wanted feature the target does not serve refused, or switched off with a warning, as
`target.unsupported` says). The answer is one typed result: `Admitted` with the lines to print and
the features served, or `Refused` with the sentence and the exit code. `run`, `capacity`, `ab`,
`init`/`identify` and the drill's look at its embedded server all ask it.

Every HTTP client that contacts an admitted target is made by `admitted_client`, whose transport
connects only at the addresses the guard pinned, so a name that resolves elsewhere later (DNS
rebinding) cannot redirect the probe, the scrapers or the capacity samplers.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import httpx

from rushhour.scenarios.protocols.features import refusal, switched_off
from rushhour.scenarios.protocols.pinning import pinned_transport
from rushhour.scenarios.spec.target import TargetProtocol
from rushhour.scenarios.spec.urls import guard_url

if TYPE_CHECKING:  # the probe's module makes its client here (admitted_client), so it is imported when asked
    from rushhour.scenarios.protocols.probe import ProbeReport

__all__ = ["PROBE_FAILED", "Admission", "Admitted", "Context", "Needs", "Probe", "Refused", "admit",
           "admitted_client", "fit", "not_served"]

EXIT_REFUSED = 2
PROBE_FAILED = "{source}: target: the capability probe failed: {error}"
"""How a probe failure is said unless the command says it otherwise (`Context.failure`)."""

Probe = Callable[..., "ProbeReport"]


@dataclass(frozen=True)
class Needs:
    """What the scenario asks of its target: the protocol it speaks, the features it uses that
    the protocol has (asked of the target), and the file named in a refusal."""

    protocol: TargetProtocol
    source: str = ""
    wanted: tuple[str, ...] = ()


@dataclass(frozen=True)
class Context:
    """How the command asks: the field the URL came from, the guard's settings, whether it probes,
    and how a probe failure is worded (`{source}` and `{error}` replaced by the file and the probe's sentence)."""

    field: str = "target.url"
    allow_remote: bool = False
    allowed: tuple[str, ...] = ()
    guard: bool = True
    probe: bool = True
    failure: str = PROBE_FAILED


@dataclass(frozen=True)
class Admitted:
    """The target may be loaded: the lines to print, the wanted features it serves, those switched off."""

    notes: tuple[str, ...] = ()
    served: tuple[str, ...] = ()
    switched_off: tuple[str, ...] = ()
    report: ProbeReport | None = None


@dataclass(frozen=True)
class Refused:
    """The target may not be loaded, or cannot serve the scenario: the sentence, the stage that
    refused, the exit code, and the lines to print before the sentence (the probe's answer)."""

    sentence: str
    stage: Literal["guard", "probe", "fit"]
    exit_code: int = EXIT_REFUSED
    notes: tuple[str, ...] = ()


Admission = Admitted | Refused


def admit(url: str, needs: Needs, context: Context = Context(), *, probe: Probe | None = None) -> Admission:
    """Guard, probe (`probe_target` unless a stand-in is given) and fit the target at `url` for
    `needs`; Admitted or Refused, never raised."""
    from rushhour.scenarios.protocols.probe import ProbeError, probe_target

    if context.guard:
        try:
            guard_url(url, field=context.field, allow_remote=context.allow_remote, allowed=context.allowed)
        except ValueError as exc:
            return Refused(str(exc), "guard")
    if not context.probe:
        return Admitted(served=needs.wanted)
    try:
        report = (probe or probe_target)(url, needs.protocol, features=needs.wanted)
    except ProbeError as exc:
        return Refused(context.failure.replace("{source}", needs.source).replace("{error}", str(exc)), "probe")
    return fit(url, needs, report)


def fit(url: str, needs: Needs, report: ProbeReport) -> Admission:
    """What the probe found against what the scenario wants: refused, or admitted with the rest switched off."""
    missing = tuple(f for f in needs.wanted if f not in report.features)
    why = not_served(url)
    if missing and needs.protocol.unsupported == "refuse":
        return Refused(refusal(needs.source, list(missing), why=why), "fit", notes=(report.line(),))
    served = tuple(f for f in needs.wanted if f in report.features)
    notes = (report.line(), *(switched_off(f, why=why) for f in missing))
    return Admitted(notes, served, missing, report)


def not_served(url: str) -> str:
    """Why a wanted feature is refused or switched off after the probe of the target at `url`."""
    return f"the target at {url} does not serve it"


def admitted_client(*, base_url: str = "", timeout: float | httpx.Timeout = 5.0, verify: ssl.SSLContext | bool = True,
                    headers: Mapping[str, str] | None = None, limits: httpx.Limits | None = None) -> httpx.Client:
    """An httpx client for an admitted target: connects at the pinned addresses only (a name the
    guard never saw is checked when first contacted), no proxy variables, no redirects."""
    return httpx.Client(base_url=base_url, timeout=timeout, headers=headers, trust_env=False,
                        follow_redirects=False, transport=pinned_transport(verify, limits))
