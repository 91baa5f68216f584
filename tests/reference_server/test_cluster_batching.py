"""batching_label: how a node's /health answer is worded in /v1/status and the drill report."""

from __future__ import annotations

import pytest

from rushhour.reference_server.gateway.cluster import batching_label


@pytest.mark.parametrize(("health", "label"), [
    ({"batching": "continuous", "prefill_tokens_per_step": 32}, "continuous, chunked prefill 32 tokens/step"),
    ({"batching": "continuous", "prefill_tokens_per_step": 0}, "continuous"),
    ({"batching": "dynamic", "prefill_tokens_per_step": 0}, "dynamic"),
    ({"batching": "dynamic"}, "dynamic"),
    ({}, "continuous"),  # a node that does not say keeps what was known
])
def test_batching_label_words_the_nodes_mode(health: dict[str, object], label: str) -> None:
    assert batching_label(health, "continuous") == label
