"""The bundled model's builds shared by one test run, so a tier is built once, not once per module.

Tests that load a model without testing its build take their cache folder from `shared_models`;
the tests of the build itself keep a fresh folder of their own. A build is written to a private
folder and renamed into place (`reference_server.model.build`), so workers building the same tier
at once each end with one complete build.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["shared_models"]


def shared_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model cache folder of this pytest run: beside every xdist worker's own temporary
    folder (their common parent), or in the temporary folder of a run without workers."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "models"
