"""What a running service speaks, for `rushhour init`: the protocols it answers, its models, whether
it streams.

Each candidate protocol is tried through the drill's own admission of a target
(`rushhour.scenarios.protocols.admission`, its capability probe), so a service `init` identifies is
one `rushhour run` will accept; the listing requests go through the same pinned connections.
The model lists come from the listing endpoints the protocols define (`GET /v1/models` for
OpenAI-compatible servers, `GET /v2/models` or Triton's `POST /v2/repository/index` for KServe
v2), and a KServe model's BYTES input is read from its metadata. Nothing here sends more than a
handful of requests, and, like the load, it neither follows redirects nor uses proxy variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from rushhour.scenarios.protocols.admission import Context, Needs, Refused, admit, admitted_client
from rushhour.scenarios.protocols.base import json_body
from rushhour.scenarios.protocols.credentials import CredentialError, auth_headers
from rushhour.scenarios.protocols.probe import ProbeError, ProbeReport
from rushhour.scenarios.spec.target import AuthSpec, HttpTemplate, TargetProtocol

__all__ = ["AUTO_ORDER", "Finding", "Identity", "Unreachable", "identify", "probe_http"]

AUTO_ORDER = ("rushhour", "openai-chat", "kserve-v2")
"""The protocols tried when none is named, most specific first."""
LIST_TIMEOUT_S = 10.0


class Unreachable(RuntimeError):
    """Nothing answered at the URL at all."""


@dataclass
class Finding:
    """One protocol the service answered: the target fields that worked and the probe's line."""

    target: TargetProtocol
    line: str
    models: list[str] = field(default_factory=list)


@dataclass
class Identity:
    """Every protocol the service speaks (best first), and why each other one did not fit."""

    url: str
    found: list[Finding] = field(default_factory=list)
    misses: dict[str, str] = field(default_factory=dict)

    @property
    def best(self) -> Finding | None:
        return self.found[0] if self.found else None


def identify(url: str, *, protocol: str | None = None, auth: AuthSpec | None = None,
             model: str | None = None) -> Identity:
    """Try `protocol`, or every protocol of AUTO_ORDER; raise Unreachable when nothing answers.
    `model` replaces the first listed model (for servers that list none)."""
    identity = Identity(url)
    try:
        client = _client(url, auth)
    except CredentialError as exc:
        raise Unreachable(str(exc)) from exc
    with client:
        _reachable(client, url)
        for name in (protocol,) if protocol else AUTO_ORDER:
            if name not in _TRIES:
                continue  # http: any service answers it; its template is probed by the caller
            try:
                identity.found.append(_TRIES[name](_Ask(client, url, auth, model)))
            except ProbeError as exc:
                identity.misses[name] = str(exc)
    return identity


@dataclass(frozen=True)
class _Ask:
    """What every protocol try needs: the open client, the URL, the credential, a named model."""

    client: httpx.Client
    url: str
    auth: AuthSpec | None
    model: str | None


def probe_http(url: str, template: HttpTemplate, auth: AuthSpec | None) -> ProbeReport:
    """The probe of an `http` template, as `rushhour run --dry-run` will send it."""
    return _probe(url, TargetProtocol(protocol="http", http=template, auth=auth))


def _probe(url: str, target: TargetProtocol) -> ProbeReport:
    """The admission's probe of `url` as `target` (the caller guarded it); ProbeError when it does not fit."""
    answer = admit(url, Needs(target), Context(guard=False, failure="{error}"))
    if isinstance(answer, Refused) or answer.report is None:
        raise ProbeError(answer.sentence if isinstance(answer, Refused) else f"{url} was not probed.")
    return answer.report


def _client(url: str, auth: AuthSpec | None) -> httpx.Client:
    return admitted_client(base_url=url.rstrip("/"), timeout=LIST_TIMEOUT_S, headers=auth_headers(auth))


def _reachable(client: httpx.Client, url: str) -> None:
    try:
        client.get("/")
    except httpx.HTTPError as exc:
        raise Unreachable(f"nothing answered at {url} ({type(exc).__name__}: {exc}); is the service running, "
                          "and is the URL its base (scheme, host and port)?") from exc


def _get_json(client: httpx.Client, method: str, path: str) -> Any:
    try:
        response = client.request(method, path)
    except httpx.HTTPError:
        return None
    return json_body(response.content) if response.status_code == 200 else None


def _try_rushhour(ask: _Ask) -> Finding:
    target = TargetProtocol(protocol="rushhour", auth=ask.auth)
    return Finding(target, _probe(ask.url, target).line())


def _try_openai(ask: _Ask) -> Finding:
    listed = _get_json(ask.client, "GET", "/v1/models")
    data = listed.get("data") if isinstance(listed, dict) else None
    models = [str(m["id"]) for m in data or [] if isinstance(m, dict) and m.get("id")]
    model = ask.model or (models[0] if models else None)
    streamed = TargetProtocol(protocol="openai-chat", model=model, stream=True, auth=ask.auth)
    try:
        return Finding(streamed, _probe(ask.url, streamed).line(), models)
    except ProbeError as exc:
        if "streamed no token" not in str(exc):
            raise
    plain = streamed.model_copy(update={"stream": False})
    return Finding(plain, _probe(ask.url, plain).line(), models)


def _try_kserve(ask: _Ask) -> Finding:
    models = _kserve_models(ask.client)
    model = ask.model or (models[0] if models else None)
    if model is None:
        raise ProbeError(f"{ask.url} lists no KServe v2 model (GET /v2/models, POST /v2/repository/index); name "
                         "one with --model if it serves v2 inference")
    target = TargetProtocol(protocol="kserve-v2", model=model, input_name=_bytes_input(ask.client, model),
                            auth=ask.auth)
    return Finding(target, _probe(ask.url, target).line(), models)


def _kserve_models(client: httpx.Client) -> list[str]:
    listed = _get_json(client, "GET", "/v2/models")
    if isinstance(listed, dict) and isinstance(listed.get("models"), list):
        return [str(m) for m in listed["models"] if isinstance(m, str)]
    index = _get_json(client, "POST", "/v2/repository/index")
    if isinstance(index, list):
        return [str(m["name"]) for m in index if isinstance(m, dict) and m.get("name")]
    return []


def _bytes_input(client: httpx.Client, model: str) -> str:
    """The model's first BYTES input (its text tensor), from the v2 model metadata; "text" when unknown."""
    meta = _get_json(client, "GET", f"/v2/models/{model}")
    inputs = meta.get("inputs") if isinstance(meta, dict) else None
    names = [i for i in inputs or [] if isinstance(i, dict) and i.get("name")]
    text = next((i for i in names if i.get("datatype") == "BYTES"), names[0] if names else None)
    return str(text["name"]) if text else "text"


_TRIES = {"rushhour": _try_rushhour, "openai-chat": _try_openai, "kserve-v2": _try_kserve}
