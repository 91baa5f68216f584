"""Crafted promo-day-shaped results, for the findings' tests and the report screenshot.

Deterministic (no random draws), so a test can count the right answer by hand. Three cases:

- `overlap`: the default drill's story. Base 20 req/s, a ramp to 40 and a peak of 60 req/s in
  130-160 s; a cold-start storm at 110-112 s, a GPU node lost 131-150 s and a partition 147-162 s
  of the quality pool's other node, so for 147-150 s the pool has no healthy node and every
  request there is shed (503). During the node loss every fifth request waits 3 s; during the
  partition every tenth fails with 504.
- `generator`: the same traffic, answered fast, but every request leaves 200 ms late.
- `clean`: steady traffic, one node lost at 60-70 s that no request notices.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

__all__ = ["FAULTS", "PHASES", "make_drill_results"]

DURATION_S = 180.0
PHASES = (("warm-up", 0, 9), ("base", 9, 95), ("peak", 95, 96), ("recovery", 96, 98), ("base", 98, 125),
          ("ramp", 125, 130), ("peak", 130, 160), ("recovery", 160, 170), ("base", 170, 180))
RATES = {"ramp": 40.0, "peak": 60.0}
FAULTS = {"overlap": (("cold-start-storm", 110.0, 112.0), ("gpu-node-loss", 131.0, 150.0),
                      ("network-partition", 147.0, 162.0)),
          "generator": (("gpu-node-loss", 131.0, 150.0),),
          "clean": (("gpu-node-loss", 60.0, 70.0),)}
SCENARIO: dict[str, Any] = {
    "name": "promo-day", "seed": 20261130,
    "traffic": {"model": "promo-day", "time_scale": 360.0, "rate_scale": 1.0, "duration_s": DURATION_S},
    "load": {"max_lag_p99_ms": 50.0},
    "slos": [{"name": "p99-paid", "kind": "latency", "percentile": 99, "threshold_ms": 2000, "priority": "paid"},
             {"name": "availability-paid", "kind": "availability", "objective": 0.99, "priority": "paid"},
             {"name": "availability", "kind": "availability", "objective": 0.95}],
    "cost": {"source": "illustrative", "date": "2026-11-30",
             "pools": {"quality": {"usd_per_node_hour": 2.5, "kind": "gpu"},
                       "fast": {"usd_per_node_hour": 0.2, "kind": "cpu"}}},
}


def make_drill_results(root: Path, case: str = "overlap") -> Path:
    """Write a complete results directory for `case` (overlap, generator or clean)."""
    root.mkdir(parents=True, exist_ok=True)
    faults = FAULTS[case]
    chaos = [{"at": f"{start}s", "experiment": f"experiments/{name}.json", "name": name} for name, start, _ in faults]
    (root / "scenario.yaml").write_text(yaml.safe_dump({**SCENARIO, "chaos": chaos}, sort_keys=False))
    requests = drill_requests(case)
    requests.to_parquet(root / "requests.parquet", index=False)
    requests[["intended_s", "priority", "phase"]].rename(columns={"intended_s": "offset_s"}).to_parquet(
        root / "schedule.parquet", index=False)
    drill_metrics(case).to_parquet(root / "server_metrics.parquet", index=False)
    events = [{"type": "run_start", "t_s": 0.0, "scenario": "promo-day", "seed": 20261130}]
    events += [{"type": "phase", "t_s": float(lo), "name": name, "start_s": float(lo), "end_s": float(hi)}
               for name, lo, hi in PHASES]
    for name, start, end in faults:
        events += [{"type": "fault_start", "t_s": start, "name": name, "experiment": f"{name}.json"},
                   {"type": "fault_end", "t_s": end, "name": name, "experiment": f"{name}.json"}]
    events += [{"type": "generator", "t_s": DURATION_S, "cpu_max": 0.4},
               {"type": "run_end", "t_s": DURATION_S, "duration_s": DURATION_S, "interrupted": False}]
    events.sort(key=lambda e: float(e["t_s"]))  # type: ignore[arg-type]  # every event here has a number
    (root / "events.jsonl").write_text("".join(json.dumps({"wall": "2026-11-30T18:00:00Z", **e}) + "\n"
                                               for e in events))
    return root


def drill_requests(case: str) -> pd.DataFrame:
    """Arrivals at fixed spacing per phase; effects of the faults as the module docstring says."""
    parts = [np.arange(lo, hi, 1.0 / RATES.get(name, 20.0)) for name, lo, hi in PHASES]
    labels = np.concatenate([np.full(p.size, name, dtype=object) for p, (name, _, _) in zip(parts, PHASES)])
    intended = np.concatenate(parts)
    index = np.arange(intended.size)
    service = np.full(intended.size, 100.0)
    status = np.full(intended.size, 200)
    if case == "overlap":
        loss = (intended >= 131) & (intended < 150)
        service = np.where(loss & (index % 5 == 0), 3000.0, service)
        status = np.where((intended >= 150) & (intended < 162) & (index % 10 == 0), 504, status)
        status = np.where((intended >= 147) & (intended < 150), 503, status)
    lag = 0.2 if case == "generator" else 0.001
    sent = intended + lag
    done = sent + service / 1000.0
    return pd.DataFrame({
        "intended_s": intended, "sent_s": sent, "done_s": done, "latency_ms": (done - intended) * 1000.0,
        "service_ms": service, "status": status.astype(np.int64), "ok": status == 200,
        "error": np.where(status == 200, "", "overloaded"), "kind": "translate", "chars": 100,
        "priority": np.array(["paid", "free", "free", "batch"])[index % 4], "mode": "auto",
        "model": np.where(status == 200, "quality", ""), "cached": False, "degraded": False,
        "node": "quality-0", "tenant": "t1", "phase": labels,
    })


def drill_metrics(case: str) -> pd.DataFrame:
    """Quality (2 nodes) and fast (1 node) pools scraped every second."""
    t = np.arange(0.0, DURATION_S, 1.0)
    faults = {name: (start, end) for name, start, end in FAULTS[case]}
    lost = _inside(t, faults.get("gpu-node-loss"))
    cut = _inside(t, faults.get("network-partition"))
    quality = pd.DataFrame({"t_s": t, "pool": "quality", "nodes_alive": np.where(lost, 1, 2),
                            "nodes_ready": np.where(lost, 1, 2), "breakers_open": cut.astype(int),
                            "queue_depth": np.where(lost | cut, 30, 4)})
    fast = pd.DataFrame({"t_s": t, "pool": "fast", "nodes_alive": 1, "nodes_ready": 1, "breakers_open": 0,
                         "queue_depth": 1})
    return pd.concat([quality, fast], ignore_index=True).assign(batch_size_mean=4.0)


def _inside(t: np.ndarray, window: tuple[float, float] | None) -> np.ndarray:
    return np.zeros(t.size, bool) if window is None else (t >= window[0]) & (t < window[1])
