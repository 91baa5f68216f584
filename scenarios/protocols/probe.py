"""The capability probe: one real request through the target's protocol before any load.

`rushhour run` (and `--dry-run`) sends it, so a wrong path, a refused credential or an answer
that is not JSON stops the run at once with a sentence saying which, instead of a drill full of
errors. It also asks whether the target serves what the scenario needs beyond requests: the
jobs API (`GET /v1/jobs/<probe id>` answers in rushhour's error shape) and the admin API the
chaos experiments use (`GET /v1/status` lists nodes). Redirects are not followed and proxy
variables are ignored, like the load itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import httpx

from rushhour.scenarios.protocols.admission import admitted_client
from rushhour.scenarios.protocols.base import (
    WireProtocol,
    WireRequest,
    json_body,
    make_protocol,
    sample_fields,
)
from rushhour.scenarios.protocols.credentials import CredentialError, masked_headers
from rushhour.scenarios.protocols.outcome import Outcome
from rushhour.scenarios.protocols.tls import verify_setting
from rushhour.scenarios.spec.target import TargetProtocol

__all__ = ["ProbeError", "ProbeReport", "probe_target"]

PROBE_TIMEOUT_S = 30.0
BODY_SHOWN = 60
JOB_PROBE_PATH = "/v1/jobs/rushhour-capability-probe"
STATUS_PATH = "/v1/status"


class ProbeError(RuntimeError):
    """The target does not fit the scenario's protocol; the message says what answered and why."""


@dataclass
class ProbeReport:
    """What the probe saw: one answer, its time, tokens, and the extra APIs found."""

    protocol: str
    path: str
    status: int
    elapsed_ms: float
    output_tokens: int | None = None
    ttft_ms: float | None = None
    features: list[str] = field(default_factory=list)

    def line(self) -> str:
        extra = f", {self.output_tokens} token(s)" if self.output_tokens is not None else ""
        ttft = f", first token after {self.ttft_ms:.0f} ms" if self.ttft_ms is not None else ""
        apis = f"; serves {', '.join(self.features)}" if self.features else ""
        return f"probe      {self.protocol}: {self.path} answered {self.status} in {self.elapsed_ms:.0f} ms{extra}{ttft}{apis}"


def probe_target(url: str, target: TargetProtocol, *, features: tuple[str, ...] = (),
                 timeout_s: float = PROBE_TIMEOUT_S) -> ProbeReport:
    """Send one request; raise ProbeError when the answer shows the protocol does not fit."""
    try:
        protocol = make_protocol(target)
    except CredentialError as exc:
        raise ProbeError(str(exc)) from exc
    request = protocol.request(sample_fields())
    with admitted_client(base_url=url.rstrip("/"), verify=verify_setting(target.ca_bundle), timeout=timeout_s) as client:
        report = _exchange(client, protocol, request)
        report.features = [f for f in features if _serves(client, protocol, f)]
    return report


def _exchange(client: httpx.Client, protocol: WireProtocol, request: WireRequest) -> ProbeReport:
    where = f"{request.method} {client.base_url}{request.path}"
    started = time.monotonic()
    try:
        with client.stream(request.method, request.path, content=request.body, headers=request.headers) as response:
            status = response.status_code
            if request.stream and 200 <= status < 300 and "json" not in response.headers.get("content-type", ""):
                outcome, body = _streamed(protocol, response), b""
            else:
                body = response.read()
                outcome = protocol.parse(status, body)
    except httpx.HTTPError as exc:
        raise ProbeError(f"{where} got no answer ({type(exc).__name__}: {exc}); is the target running, "
                         "and is the URL right?") from exc
    elapsed = (time.monotonic() - started) * 1000.0
    _judge(where, protocol, request, status, body, outcome)
    first = outcome.tokens.first_at
    return ProbeReport(protocol.name, request.path, status, elapsed, outcome.tokens.output_tokens,
                       (first - started) * 1000.0 if first is not None else None)


def _streamed(protocol: WireProtocol, response: httpx.Response) -> Outcome:
    parser = protocol.stream_parser()
    for line in response.iter_lines():
        parser.feed(line.encode("utf-8") + b"\n", time.monotonic())
    return parser.outcome(response.status_code)


def _judge(where: str, protocol: WireProtocol, request: WireRequest, status: int, body: bytes,
           outcome: Outcome) -> None:
    if status in (401, 403):
        shown = masked_headers(request.headers)
        credential = next((f"{k}: {v}" for k, v in shown.items() if v.endswith("****") or "****" in v), "none sent")
        raise ProbeError(f"{where} refused the credential (HTTP {status}); check target.auth (sent {credential}).")
    if status in (404, 405):
        said = _error_text(body)
        detail = f' and said "{said}"' if said else ""
        raise ProbeError(f'{where} answered {status}{detail}: the target does not serve this path; is "{protocol.name}" '
                         "the protocol it speaks (target.protocol, --protocol), the URL its base, and target.model "
                         "a model it serves?")
    if 300 <= status < 400:
        raise ProbeError(f"{where} answered a redirect ({status}); rushhour does not follow redirects, so give the "
                         "final URL as the target.")
    if body and json_body(body) is None and protocol.name != "http":
        text = body[:BODY_SHOWN].decode("utf-8", "replace")
        raise ProbeError(f'{where} answered {status} with a body that is not JSON ("{text}"); is "{protocol.name}" '
                         "the protocol the target speaks?")
    if not 200 <= outcome.status < 300:
        raise ProbeError(f'{where} answered {status} and the probe failed ({outcome.error or "no detail"}); the '
                         f'target does not behave like "{protocol.name}".')
    if protocol.streaming and request.stream and outcome.tokens.first_at is None:
        raise ProbeError(f"{where} answered {status} but streamed no token; the streaming metrics would be empty. "
                         "Set target.stream: false for a target that does not stream.")


def _error_text(body: bytes) -> str:
    """What a JSON error body says (`error` as text, or its `message`, or `detail`), shortened; "" if none."""
    data = json_body(body)
    if not isinstance(data, dict):
        return ""
    said = data.get("error") or data.get("detail") or ""
    if isinstance(said, dict):
        said = said.get("message") or said.get("code") or ""
    return str(said)[:BODY_SHOWN]


def _serves(client: httpx.Client, protocol: WireProtocol, feature: str) -> bool:
    """Whether the target has the jobs or admin API (a read-only request each)."""
    path = JOB_PROBE_PATH if feature == "jobs" else STATUS_PATH
    try:
        response = client.get(path, headers=protocol.headers)
    except httpx.HTTPError:
        return False
    data = json_body(response.content)
    if feature == "jobs":
        return isinstance(data, dict) and (response.status_code == 200 or isinstance(data.get("error"), dict))
    return response.status_code == 200 and isinstance(data, dict) and isinstance(data.get("nodes"), list)
