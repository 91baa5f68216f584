"""Fixtures for traffic model tests: the shared Azure trace."""

from __future__ import annotations

from pathlib import Path

import pytest

TRACE_NAME = "azure-llm-inference-conv-2023-11-16.csv"
# The shared folder lies beside the checkout (../shared), in development and in CI alike.
_CANDIDATES = [Path(__file__).resolve().parents[3] / "shared" / "traces" / TRACE_NAME,
               Path("/work/shared/traces") / TRACE_NAME]
AZURE_TRACE = next((p for p in _CANDIDATES if p.is_file()), _CANDIDATES[0])


@pytest.fixture
def azure_trace() -> Path:
    if not AZURE_TRACE.is_file():
        pytest.skip(f"the shared Azure trace is not at {AZURE_TRACE} on this machine")
    return AZURE_TRACE
