"""Builders for small, hand-computable results directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

BASE_SCENARIO: dict[str, Any] = {
    "name": "fixture",
    "seed": 1,
    "traffic": {"model": "flat", "time_scale": 1.0, "rate_scale": 1.0, "start_clock_s": 0.0,
                "duration_s": 10.0},
    "slos": [],
    "chaos": [],
}


def requests_frame(intended: np.ndarray | list[float], latency_ms: np.ndarray | list[float],
                   ok: np.ndarray | list[bool] | None = None, **extra: Any) -> pd.DataFrame:
    """A requests.parquet frame sent on time (no lag) with the given latencies."""
    intended = np.asarray(intended, dtype=float)
    latency = np.asarray(latency_ms, dtype=float)
    ok_mask = np.ones(intended.size, bool) if ok is None else np.asarray(ok, bool)
    frame = pd.DataFrame({
        "intended_s": intended, "sent_s": intended, "done_s": intended + latency / 1000.0,
        "latency_ms": latency, "service_ms": latency,
        "status": np.where(ok_mask, 200, 500).astype(np.int64), "ok": ok_mask,
        "chars": np.full(intended.size, 100, dtype=np.int64),
        "priority": "paid", "mode": "auto", "model": np.where(ok_mask, "quality", ""),
        "degraded": False, "phase": "",
    })
    for column, values in extra.items():
        frame[column] = values
    return frame


def write_run(root: Path, requests: pd.DataFrame, *, scenario: dict[str, Any] | None = None,
              events: list[dict[str, Any]] | None = None,
              metrics: pd.DataFrame | None = None) -> Path:
    """Write a results directory holding only what is given (other files left missing)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "scenario.yaml").write_text(yaml.safe_dump({**BASE_SCENARIO, **(scenario or {})}))
    requests.to_parquet(root / "requests.parquet", index=False)
    if events is not None:
        lines = [json.dumps({"wall": "2026-01-01T00:00:00Z", **event}) for event in events]
        (root / "events.jsonl").write_text("\n".join(lines) + "\n")
    if metrics is not None:
        metrics.to_parquet(root / "server_metrics.parquet", index=False)
    return root
