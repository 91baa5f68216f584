"""The commented scenario `rushhour init` writes: a first drill of someone's own service.

The text is made here rather than dumped from a model, because its comments are the point: each
section says what to edit. It is validated with the scenario model before it is written, so what
`init` writes always loads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import yaml

from rushhour.scenarios.spec.model import Scenario, parse_scenario
from rushhour.scenarios.spec.target import AuthSpec, HttpTemplate, TargetProtocol

__all__ = ["HTTP_TEMPLATE", "Draft", "render"]

HTTP_TEMPLATE = HttpTemplate(method="POST", path="/", body='{"text": {{ text | tojson }}}')
"""What an unidentified service gets: one JSON field with the request's text, to be edited."""

TRAFFIC = """\
traffic:
  # A flat base, a 2x step and a 3x step (traffic_models/step.yaml): an hour of model clock
  # played in 3 minutes. Other shapes: promo-day, diurnal, flash-crowd, or "constant:RPS".
  model: step
  time_scale: 20
  peak_rps: {peak}              # the highest rate sent, requests/s: start low, then raise it
  duration: 180s
  seed: 1
"""

LOAD = """\
load:
  processes: 1                  # more Locust processes for more than about 1,000 requests/s
stop_conditions:                # end the drill early if the service is clearly down
  - {error_rate_over: 0.5, for_s: 20}
"""

PLACEHOLDER_PID_FILE = "/run/my-service.pid"

CHAOS_HEAD = """\
# Faults in the middle of the load, on the model clock (00:20 is a minute into the 3-minute drill).
# Each one ends by itself, even if the drill is killed: see docs/guides/game-day.md."""

PROCESS_FAULTS = """\
chaos:
  # Your service's process, found by its PID file (whatever supervises it: systemd, a container, ...):
  - at: "00:20"
    experiment: experiments/service-pause.json
    name: pause
    hold: 5m                    # SIGSTOP for the hold, then SIGCONT
    env: {{PID_FILE: {pid_file}}}
  - at: "00:45"
    experiment: experiments/service-kill.json
    name: kill                  # SIGKILL: its supervisor must start it again; the report times the recovery
    env: {{PID_FILE: {pid_file}}}"""

OTHER_FAULTS = """\
  # The network path, through mitmproxy with rushhour's addon, which the drill loads instead of the
  # service (docs/guides/own-service.md; service-network-*.json do the same through Toxiproxy):
  # - {at: "00:30", experiment: experiments/service-proxy-latency.json, hold: 5m, env: {LATENCY_MS: "500"}}
  # A Kubernetes workload, by namespace and label selector:
  # - {at: "00:30", experiment: experiments/kubernetes/workload-pod-kill.json,
  #    env: {RUSHHOUR_K8S_NAMESPACE: shop, RUSHHOUR_K8S_SELECTOR: app=my-service}}"""


@dataclass(frozen=True)
class Draft:
    """What goes into the scenario: its name, the target URL and protocol fields, what was seen, and
    where the JSON Schema lies relative to the file (for editors)."""

    name: str
    url: str
    target: TargetProtocol
    seen: list[str]
    schema_ref: str
    peak_rps: float = 5.0
    pid_file: str | None = None
    """The service's PID file: the chaos section is written live with it (else commented out)."""


def render(draft: Draft) -> str:
    """The scenario text; raises ScenarioError if it would not load (a bug, never the user's)."""
    text = "\n".join([_header(draft), f"name: {draft.name}", TRAFFIC.format(peak=_number(draft.peak_rps)).rstrip(),
                      _target(draft), _slos(draft.target), LOAD.rstrip(), _chaos(draft.pid_file)]) + "\n"
    check(text, draft.name)
    return text


def check(text: str, name: str) -> Scenario:
    return parse_scenario(yaml.safe_load(text), source=f"the scenario rushhour init wrote for {name}")


def _header(draft: Draft) -> str:
    lines = [f"# yaml-language-server: $schema={draft.schema_ref}",
             f"# A first drill of {draft.url}, written by `rushhour init`. What the probe saw:"]
    lines += [f"#   {line}" for line in draft.seen]
    lines += ["# Edit the traffic, the SLOs and the target below; `rushhour schema` prints every field.",
              "# `rushhour run FILE --dry-run` shows the plan and sends one probe request."]
    return "\n".join(lines)


def _target(draft: Draft) -> str:
    t = draft.target
    lines = ["target:", f"  url: {draft.url}", f"  protocol: {t.protocol}"]
    if t.protocol == "openai-chat":
        lines.append(f"  model: {_quote(t.model or 'default')}" + "   # the model field of every request")
        lines.append(f"  stream: {'true' if t.stream else 'false'}" + (
            "                 # server-sent events: TTFT, time per token, inter-token gaps" if t.stream
            else "                # the probe saw no streamed tokens"))
    if t.protocol == "kserve-v2":
        lines.append(f"  model: {_quote(t.model or '')}" + "   # POST /v2/models/<model>/infer")
        lines.append(f"  input_name: {_quote(t.input_name)}" + "   # the BYTES input tensor that gets the text")
    if t.protocol == "http":
        lines += _http_lines(t.http or HTTP_TEMPLATE)
    lines.append(_auth_lines(t.auth))
    return "\n".join(lines)


def _http_lines(http: HttpTemplate) -> list[str]:
    return ["  http:                         # EDIT: the request your service expects",
            f"    method: {http.method}",
            f"    path: {http.path}",
            "    # A Jinja2 template over each request's fields: text, chars, kind, priority, tenant,",
            "    # mode, max_tokens, source_lang, target_lang, deadline_ms.",
            f"    body: {_quote(http.body)}",
            "    success_status: [200]",
            "    # json_field: result.text   # count an answer without this JSON field as a failure"]


def _auth_lines(auth: AuthSpec | None) -> str:
    if auth is None:
        return ("  # auth: {env: MY_SERVICE_KEY}   # a credential from a variable or {file: PATH}; never written "
                "into results")
    return f"  auth: {{scheme: {auth.scheme}, env: {auth.env}}}   # read when the drill sends, shown masked"


def _slos(target: TargetProtocol) -> str:
    lines = ["slos:                           # EDIT: your objectives; each may be narrowed by priority or kind"]
    if target.protocol == "openai-chat" and target.stream:
        lines += ["  - {name: ttft-p95, kind: ttft, percentile: 95, threshold_ms: 2000}   # time to first token",
                  "  - {name: tpot-p95, kind: tpot, percentile: 95, threshold_ms: 100}    # time per output token"]
    else:
        lines.append("  - {name: p99, kind: latency, percentile: 99, threshold_ms: 2000}")
    lines.append("  - {name: availability, kind: availability, objective: 0.99}")
    return "\n".join(lines)


def _chaos(pid_file: str | None) -> str:
    """A pause and a kill of the service's process, live with its PID file; without one, the same
    commented out line by line (uncommenting gives the live text). Network and Kubernetes faults
    are commented out either way."""
    faults = "\n".join([PROCESS_FAULTS.format(pid_file=_quote(pid_file or PLACEHOLDER_PID_FILE)), OTHER_FAULTS])
    if pid_file is None:
        faults = "\n".join(["# Set PID_FILE and uncomment (or write this file with `rushhour init --pid-file FILE`):",
                            *(f"# {line}" for line in faults.splitlines())])
    return "\n".join([CHAOS_HEAD, faults])


def _quote(value: str) -> str:
    """A YAML scalar that reads back as exactly `value` (JSON strings are YAML)."""
    return json.dumps(value)


def _number(value: float) -> str:
    return f"{value:g}"
