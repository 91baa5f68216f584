"""rushhour's own API: `POST /v1/translate` with every field of the row; jobs and admin served."""

from __future__ import annotations

from collections.abc import Mapping

from rushhour.scenarios.protocols.base import WireProtocol, WireRequest
from rushhour.scenarios.protocols.outcome import Outcome, outcome_from

TRANSLATE_PATH = "/v1/translate"

TRANSLATE_FIELDS = ("text", "source_lang", "target_lang", "mode", "priority", "tenant", "deadline_ms")


def translate_body(fields: Mapping[str, object]) -> dict[str, object]:
    """The `/v1/translate` (and `/v1/jobs`) body: the row's fields the API defines."""
    return {name: fields[name] for name in TRANSLATE_FIELDS if name in fields}


class RushhourProtocol(WireProtocol):
    """The reference server's protocol (and any service that copies it)."""

    name = "rushhour"
    sends = frozenset(TRANSLATE_FIELDS)
    features = frozenset({"jobs", "admin"})

    def build(self, fields: Mapping[str, object]) -> WireRequest:
        return self.json_request("POST", TRANSLATE_PATH, translate_body(fields))

    def parse(self, status: int, body: bytes | None, error: str = "") -> Outcome:
        return outcome_from(status, body, error)
