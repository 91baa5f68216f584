"""Any JSON-over-HTTP service: method, path and a Jinja2 body template over the row's fields.

The template sees text, chars, kind, priority, tenant, mode, max_tokens, source_lang,
target_lang and deadline_ms (use `| tojson` for strings). Success is a status listed in
`success_status` and, when `json_field` names a dotted path ("result.text"), a JSON answer
that holds it. Templates render in Jinja2's sandbox: a scenario file cannot reach Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

from jinja2 import StrictUndefined, Template, UndefinedError
from jinja2.sandbox import SandboxedEnvironment

from rushhour.scenarios.protocols.base import WireProtocol, WireRequest, json_body
from rushhour.scenarios.protocols.outcome import Outcome
from rushhour.scenarios.spec.target import HttpTemplate, TargetProtocol

STATUS_BAD_ANSWER = 502
TEMPLATE_FIELDS = frozenset({"text", "chars", "kind", "priority", "tenant", "mode", "max_tokens",
                             "source_lang", "target_lang", "deadline_ms"})


class HttpTemplateProtocol(WireProtocol):
    """The `http` protocol of a scenario's target."""

    name = "http"
    sends = TEMPLATE_FIELDS

    @classmethod
    def fields_sent(cls, spec: TargetProtocol) -> frozenset[str]:
        """What the body template mentions, and the row headers."""
        body = spec.http.body if spec.http is not None else ""
        return frozenset(f for f in TEMPLATE_FIELDS if f in body) | frozenset((spec.row_headers or {}).values())

    @property
    def template(self) -> HttpTemplate:
        assert self.spec.http is not None  # TargetProtocol's validator guarantees it
        return self.spec.http

    @cached_property
    def _body(self) -> Template:
        return SandboxedEnvironment(undefined=StrictUndefined).from_string(self.template.body)

    def build(self, fields: Mapping[str, object]) -> WireRequest:
        values = {name: fields.get(name) for name in TEMPLATE_FIELDS}
        values["max_tokens"] = self.max_tokens(fields)
        try:
            body = self._body.render(**values).encode("utf-8") if self.template.method != "GET" else None
        except UndefinedError as exc:
            raise ValueError(f"target.http.body: {exc.message}; the template may use {', '.join(sorted(TEMPLATE_FIELDS))}.") from exc
        headers = {"Accept": "application/json", **self.headers}
        if body is not None:
            headers["Content-Type"] = self.template.content_type
        return WireRequest(self.template.method, self.template.path, body, headers)

    def parse(self, status: int, body: bytes | None, error: str = "") -> Outcome:
        if status not in self.template.success_status:
            return Outcome(status=status if status else 0, error=error or f"http {status}")
        field = self.template.json_field
        if field is not None and not has_field(json_body(body), field):
            return Outcome(status=STATUS_BAD_ANSWER, error=f"answer has no {field}")
        return Outcome(status=status if 200 <= status < 300 else 200)


def has_field(data: object, dotted: str) -> bool:
    """Whether the JSON value holds the dotted path ("a.b.0.c": list items by index)."""
    for key in dotted.split("."):
        if isinstance(data, dict) and key in data:
            data = data[key]
        elif isinstance(data, list) and key.isdigit() and int(key) < len(data):
            data = data[int(key)]
        else:
            return False
    return True
