"""KServe / Triton v2 inference (`POST /v2/models/{model}/infer`): the text as a BYTES tensor.

The row's text is one element of a `[1]`-shaped BYTES input (named by `input_name`, default
"text"), `max_tokens` travels as a request parameter (Triton passes parameters to the model), and
so does every row field that `target.extra_fields` names.
An answer is good when it has a success status and an `outputs` list; errors are `{"error": msg}`.
"""

from __future__ import annotations

from collections.abc import Mapping

from rushhour.scenarios.protocols.base import WireProtocol, WireRequest, json_body
from rushhour.scenarios.protocols.outcome import Outcome

STATUS_BAD_ANSWER = 502


class KServeV2Protocol(WireProtocol):
    """One v2 inference request per schedule row."""

    name = "kserve-v2"
    sends = frozenset({"text", "max_tokens"})

    def build(self, fields: Mapping[str, object]) -> WireRequest:
        body = {
            "inputs": [{"name": self.spec.input_name, "shape": [1], "datatype": "BYTES", "data": [str(fields["text"])]}],
            "parameters": {"max_tokens": self.max_tokens(fields), **self.extras(fields)},
        }
        return self.json_request("POST", f"/v2/models/{self.spec.model}/infer", body)

    def parse(self, status: int, body: bytes | None, error: str = "") -> Outcome:
        data = json_body(body)
        data = data if isinstance(data, dict) else {}
        if not 200 <= status < 300:
            detail = data.get("error")
            return Outcome(status=status, error=str(detail)[:80] if detail else error or f"http {status}")
        if not isinstance(data.get("outputs"), list):
            return Outcome(status=STATUS_BAD_ANSWER, error="answer is not a v2 inference response (no outputs)")
        return Outcome(status=status, model=str(data.get("model_name") or ""))
