"""Fixtures for traffic model tests: model files written on the fly, the shared Azure trace."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

AZURE_TRACE = Path("/work/shared/traces/azure-llm-inference-conv-2023-11-16.csv")


@pytest.fixture
def write_model(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write YAML text to tmp_path/<name> and return the path."""

    def write(text: str, name: str = "model.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def azure_trace() -> Path:
    if not AZURE_TRACE.is_file():
        pytest.skip(f"the shared Azure trace is not at {AZURE_TRACE} on this machine")
    return AZURE_TRACE
