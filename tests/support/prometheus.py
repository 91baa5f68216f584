"""Checks on a gateway's `/metrics`: every label value comes from a bounded set the server knows."""

from __future__ import annotations

import re
from typing import get_args

from prometheus_client.parser import text_string_to_metric_families

from rushhour.reference_server.config import PRIORITIES
from rushhour.reference_server.gateway.faults import FaultKind

NODE_ID = re.compile(r"^[a-z][a-z0-9_-]{0,30}-\d{1,2}$")
IDENTIFIER = re.compile(r"^[A-Za-z0-9_.+-]{0,48}$")
ALLOWED: dict[str, set[str]] = {
    "priority": {*PRIORITIES, "invalid"},
    "mode": {"auto", "fast", "quality"},
    "model": {"", "quality", "fast"},
    "kind": set(get_args(FaultKind)),
    "ready": {"true", "false"},
}


def unbounded_labels(text: str, pools: set[str]) -> list[str]:
    """`name{label="value"}` for every sample whose label value is outside its bounded set."""
    bad = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            for label, value in sample.labels.items():
                if not _allowed(label, value, pools):
                    bad.append(f'{sample.name}{{{label}="{value[:80]}"}}')
    return bad


def _allowed(label: str, value: str, pools: set[str]) -> bool:
    if label in ALLOWED:
        return value in ALLOWED[label]
    if label == "pool":
        return value in pools
    if label == "node":
        return NODE_ID.match(value) is not None and value.rsplit("-", 1)[0] in pools
    if label == "status":
        return value.isdigit() and len(value) == 3
    return IDENTIFIER.match(value) is not None
