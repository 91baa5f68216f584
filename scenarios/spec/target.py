"""What a scenario says about the protocol its target speaks, and how to reach it.

`TargetProtocol` holds every field a load worker needs to talk to the target: the protocol, the
model name, streaming, extra headers (fixed, or a row's field per request), where the
credential comes from (never the credential itself: an environment variable or a file, read by
whoever sends), a CA bundle for https, and the request template of the `http` protocol.
`rushhour.scenarios.spec.model.TargetSpec` adds where the target is (embedded or a URL).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, get_args
from urllib.parse import urlsplit

from jinja2 import TemplateSyntaxError
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ProtocolName = Literal["rushhour", "openai-chat", "kserve-v2", "http"]
RowField = Literal["text", "source_lang", "target_lang", "mode", "priority", "tenant", "deadline_ms", "max_tokens",
                   "kind", "chars"]
ROW_FIELDS: frozenset[str] = frozenset(get_args(RowField))
"""The fields of one schedule row a protocol may put on the wire."""
HEADER_NAME = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"
PROTOCOL_NAMES: tuple[str, ...] = ("rushhour", "openai-chat", "kserve-v2", "http")
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key",
                            "x-auth-token", "x-access-token", "x-amz-security-token", "x-goog-api-key",
                            "ocp-apim-subscription-key", "x-csrf-token", "x-xsrf-token"})
SECRET_HEADER_WORDS = re.compile(r"auth|token|secret|passw|api-?key|apikey|cookie|credential|session|signature")
"""Words that make a header name a credential's, beyond the well-known names above."""


def is_secret_header(name: str) -> bool:
    """True when a header of this name carries a credential (never written to a scenario or shown)."""
    lowered = name.lower()
    return lowered in SECRET_HEADERS or bool(SECRET_HEADER_WORDS.search(lowered))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AuthSpec(_Strict):
    """Where the target's credential comes from: exactly one of `env` (a variable name) or `file`
    (a path; surrounding whitespace stripped). `scheme: bearer` sends `Authorization: Bearer <x>`,
    `header` sends `<header>: <x>` (e.g. `X-API-Key`), `basic` expects `user:password`."""

    scheme: Literal["bearer", "header", "basic"] = "bearer"
    env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    file: str | None = None
    header: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> AuthSpec:
        if (self.env is None) == (self.file is None):
            raise ValueError("give exactly one of env (a variable name) or file (a path)")
        if self.scheme == "header" and not self.header:
            raise ValueError('scheme "header" needs header, the header name (e.g. X-API-Key)')
        return self


class HttpTemplate(_Strict):
    """The `http` protocol: one request per schedule row from a Jinja2 body template over the
    row's fields (text, chars, kind, priority, tenant, mode, max_tokens, source_lang,
    target_lang, deadline_ms); success is a status in `success_status` and, when
    `json_field` is given, a JSON answer holding that dotted field."""

    method: Literal["POST", "PUT", "GET"] = "POST"
    path: str = Field(default="/", pattern=r"^/")
    body: str = '{"text": {{ text | tojson }}}'
    content_type: str = "application/json"
    success_status: tuple[int, ...] = (200, 201, 202)
    json_field: str | None = None

    @field_validator("body")
    @classmethod
    def _template(cls, value: str) -> str:
        try:
            SandboxedEnvironment().parse(value)
        except TemplateSyntaxError as exc:
            raise ValueError(f"is not a valid Jinja2 template: {exc.message} (line {exc.lineno})") from exc
        return value


class TargetMetricsSource(_Strict):
    """The target's own Prometheus endpoint, scraped every second beside the load
    (`target_metrics.parquet`), and the sample names the report charts besides the ones it
    recognises from vLLM, TGI, Triton and SGLang."""

    metrics_url: str | None = Field(default=None, description="the target's Prometheus text endpoint, "
                                                               "e.g. http://127.0.0.1:8000/metrics")
    metrics: tuple[str, ...] = Field(default=(), description="sample names to chart (a counter as its _total name)")

    @field_validator("metrics_url")
    @classmethod
    def _plain_http(cls, value: str | None) -> str | None:
        if value is None:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f'"{value}" is not an http:// or https:// URL')
        if "@" in parts.netloc:
            raise ValueError("carries credentials (user:password@); a metrics endpoint is scraped without them")
        return value


class TargetProtocol(_Strict):
    """The protocol fields of a target (see the module docstring)."""

    protocol: ProtocolName = "rushhour"
    model: str | None = Field(default=None, description="openai-chat: the model field; kserve-v2: the model name in the path")
    input_name: str = Field(default="text", description="kserve-v2: the name of the BYTES input tensor")
    stream: bool = Field(default=True, description="openai-chat: ask for server-sent events (TTFT, ITL, TPOT)")
    max_tokens: int | None = Field(default=None, ge=1, description="when the schedule gives none (0)")
    ignore_eos: bool = Field(default=False, description="openai-chat: ask the server to generate every token of "
                                                         "max_tokens (vLLM, SGLang), so answers have the trace's lengths")
    headers: dict[str, str] = {}
    row_headers: dict[str, RowField] | None = Field(
        default=None, description="headers whose value is a field of each row (e.g. X-Priority: priority), "
                                  "for gateways that route by tenant or priority")
    extra_fields: tuple[RowField, ...] | None = Field(
        default=None, description="openai-chat: row fields added to the JSON body under their own names "
                                  "(what the openai client calls extra_body); kserve-v2: to the parameters")
    auth: AuthSpec | None = None
    ca_bundle: str | None = Field(default=None, description="https: verify the target against these CA certificates")
    http: HttpTemplate | None = None
    unsupported: Literal["refuse", "warn"] = Field(
        default="refuse", description="a scenario feature the target cannot serve (jobs, chaos through the "
                                      "admin API): refuse the run (exit 2), or switch it off with a warning")

    @field_validator("headers", "row_headers")
    @classmethod
    def _no_secret_headers(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is None:
            return value
        bad = sorted(name for name in value if not re.match(HEADER_NAME, name))
        if bad:
            raise ValueError(f'"{bad[0]}" is not a valid HTTP header name')
        secret = sorted(name for name in value if is_secret_header(name))
        if secret:
            raise ValueError(f"{', '.join(secret)} would write a credential into the scenario and its "
                             "results; use auth (env or file) instead")
        return value

    @field_validator("ca_bundle")
    @classmethod
    def _bundle_exists(cls, value: str | None) -> str | None:
        if value is not None and not Path(value).is_file():
            raise ValueError(f'"{value}" is not a file')
        return value

    @model_validator(mode="after")
    def _template_for_http(self) -> TargetProtocol:
        if self.protocol == "http" and self.http is None:
            raise ValueError('protocol "http" needs an http section (method, path, body template)')
        if self.protocol == "kserve-v2" and not self.model:
            raise ValueError('protocol "kserve-v2" needs model (the name in /v2/models/{model}/infer)')
        if self.ignore_eos and self.protocol != "openai-chat":
            raise ValueError(f'ignore_eos is for openai-chat; protocol "{self.protocol}" has no such field')
        if self.extra_fields and self.protocol not in ("openai-chat", "kserve-v2"):
            raise ValueError(f'extra_fields is for openai-chat and kserve-v2; protocol "{self.protocol}" '
                             + ("sends every field already" if self.protocol == "rushhour"
                                else "sends what its body template says"))
        return self

    def resolved(self) -> TargetProtocol:
        """The protocol fields as sent, defaults that depend on the target filled in."""
        return self

    def wire_dict(self) -> dict[str, object]:
        """The fields a load worker needs, JSON-ready (credential sources only, never values)."""
        return self.resolved().model_dump(mode="json", include=set(TargetProtocol.model_fields))
