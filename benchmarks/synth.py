"""Synthetic results directories, for the benchmark and for end-to-end tests.

The shape mimics a real drill: steady traffic, one fault that fails and slows requests, two
pools scraped every second. Fully vectorised, so a million requests take about a second.

`seed` draws the schedule and each request's own cost, so two runs with the same seed replay the
same schedule request by request (as a same-seed rerun does); `noise` and `noise_seed` add
per-request run-to-run jitter on top, and `slowdown` scales every service time (a planted
regression, or a whole-run noise factor).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

SCENARIO: dict[str, Any] = {
    "name": "synthetic",
    "seed": 7,
    "traffic": {"model": "flat", "time_scale": 60.0, "rate_scale": 1.0, "start_clock_s": 0.0,
                "duration_s": 120.0},
    "load": {"max_lag_p99_ms": 50.0},
    "slos": [
        {"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 1500},
        {"name": "p95-paid", "kind": "latency", "percentile": 95, "threshold_ms": 800, "priority": "paid"},
        {"name": "availability", "kind": "availability", "objective": 0.95},
        {"name": "degraded-share", "kind": "degraded", "max_share": 0.2},
    ],
    "cost": {"source": "synthetic price list", "date": "2026-11",
             "pools": {"quality": {"usd_per_node_hour": 2.5, "kind": "gpu"},
                       "fast": {"usd_per_node_hour": 0.2, "kind": "cpu"}},
             "managed_api_usd_per_1k_chars": 0.02},
    "chaos": [{"name": "kill-gpu", "at_s": 50}],
}
FAULT = (50.0, 65.0)
CLIENT_TIMEOUT_S = 5.0


def make_results(root: Path, *, n_requests: int = 20_000, duration_s: float = 120.0,
                 seed: int = 7, slowdown: float = 1.0, lag_ms: float = 2.0, noise: float = 0.0,
                 noise_seed: int | None = None) -> Path:
    """Write a complete results directory; `slowdown` scales every latency (plant regressions),
    `noise` multiplies each service time by a uniform factor in [1 - noise, 1 + noise]."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    scenario = dict(SCENARIO, seed=seed, traffic=dict(SCENARIO["traffic"], duration_s=duration_s))
    (root / "scenario.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    requests = synth_requests(rng, n_requests, duration_s, slowdown, lag_ms)
    if noise:
        jitter = np.random.default_rng(noise_seed).uniform(1 - noise, 1 + noise, n_requests)
        requests = with_service_factor(requests, jitter)
    requests.drop(columns="text_id").to_parquet(root / "requests.parquet", index=False)
    requests[["intended_s", "kind", "chars", "priority", "mode", "text_id", "tenant", "phase"]].rename(
        columns={"intended_s": "offset_s"}).to_parquet(root / "schedule.parquet", index=False)
    synth_metrics(duration_s).to_parquet(root / "server_metrics.parquet", index=False)
    _write_events(root / "events.jsonl", duration_s)
    (root / "chaos").mkdir(exist_ok=True)
    journal = {"status": "completed", "deviated": False, "experiment": {"title": "kill-gpu"},
               "steady_states": {"before": {"steady_state_met": True}, "after": {"steady_state_met": True}}}
    (root / "chaos" / "kill-gpu.journal.json").write_text(json.dumps(journal))
    return root


def synth_requests(rng: np.random.Generator, n: int, duration_s: float, slowdown: float,
                   lag_ms: float) -> pd.DataFrame:
    """Requests with lognormal latency, a fault window of errors and slowness, and sheds.

    A timeout (status 0) ends when the client gives up, CLIENT_TIMEOUT_S after the send."""
    intended = np.sort(rng.uniform(0, duration_s, n))
    during = (intended >= FAULT[0]) & (intended < FAULT[1])
    service = rng.lognormal(np.log(120), 0.5, n) * np.where(during, 3.0, 1.0) * slowdown
    sent = intended + rng.exponential(lag_ms / 1000.0, n)
    status = np.where(during & (rng.random(n) < 0.04), 503, 200)
    status = np.where(rng.random(n) < 0.001, 0, status)
    done = sent + np.where(status == 0, CLIENT_TIMEOUT_S, service / 1000.0)
    priority = rng.choice(np.array(["paid", "free", "batch"]), n, p=[0.3, 0.5, 0.2])
    degraded = (status == 200) & during & (rng.random(n) < 0.3)
    model = np.where(degraded | (priority == "batch"), "fast", "quality")
    return pd.DataFrame({
        "intended_s": intended, "sent_s": sent, "done_s": done,
        "latency_ms": (done - intended) * 1000.0, "service_ms": (done - sent) * 1000.0,
        "status": status.astype(np.int64), "ok": status == 200,
        "error": np.where(status == 200, "", np.where(status == 0, "timeout", "overloaded")),
        "kind": "translate", "chars": rng.integers(10, 3000, n),
        "priority": priority, "mode": rng.choice(np.array(["auto", "fast", "quality"]), n),
        "model": np.where(status == 200, model, ""), "cached": rng.random(n) < 0.1,
        "degraded": degraded, "node": "quality-0", "tenant": "t1",
        "phase": np.where(intended < duration_s / 2, "ramp", "peak"),
        "text_id": rng.integers(0, 1 << 40, n),
    })


def with_service_factor(requests: pd.DataFrame, factor: np.ndarray) -> pd.DataFrame:
    """The same requests with each answered one's service time multiplied by `factor`."""
    frame = requests.copy()
    answered = frame["status"].to_numpy() != 0
    service = frame["service_ms"].to_numpy() * np.where(answered, factor, 1.0)
    frame["done_s"] = frame["sent_s"] + service / 1000.0
    frame["service_ms"] = service
    frame["latency_ms"] = (frame["done_s"] - frame["intended_s"]) * 1000.0
    return frame


def synth_metrics(duration_s: float) -> pd.DataFrame:
    """Two pools scraped every second; one quality node dies during the fault."""
    t = np.arange(0.0, duration_s, 1.0)
    during = (t >= FAULT[0]) & (t < FAULT[1])
    hits = np.cumsum(np.full(t.size, 10))
    frames = []
    for pool, nodes in (("quality", 2), ("fast", 1)):
        alive = np.where(during & (pool == "quality"), nodes - 1, nodes)
        frames.append(pd.DataFrame({
            "t_s": t, "pool": pool, "nodes_alive": alive, "nodes_ready": alive,
            "breakers_open": np.where(during & (pool == "quality"), 1, 0),
            "queue_depth": np.where(during, 20, 3), "inflight": 4,
            "batch_size_mean": np.where(during, 6.0, 3.0), "provider": "CPUExecutionProvider",
            "cache_hits_total": hits, "cache_misses_total": hits * 4,
            "shed_total": 0, "requests_total": hits * 5,
        }))
    return pd.concat(frames, ignore_index=True)


def _write_events(path: Path, duration_s: float) -> None:
    half = duration_s / 2
    events = [
        {"type": "run_start", "t_s": 0.0, "scenario": "synthetic", "seed": 7,
         "target": "embedded", "processes": 1, "time_scale": 60.0, "rate_scale": 1.0,
         "start_clock_s": 0.0, "env": {"cpu_model": "Synthetic CPU", "cpu_cores": 2,
                                       "python": "3.11", "git_commit": "abc1234"}},
        {"type": "phase", "t_s": 0.0, "name": "ramp", "start_s": 0.0, "end_s": half},
        {"type": "phase", "t_s": half, "name": "peak", "start_s": half, "end_s": duration_s},
        {"type": "fault_start", "t_s": FAULT[0], "name": "kill-gpu", "experiment": "kill-gpu.json",
         "scenario_time": FAULT[0]},
        {"type": "fault_end", "t_s": FAULT[1], "name": "kill-gpu", "experiment": "kill-gpu.json",
         "scenario_time": FAULT[1]},
        {"type": "generator", "t_s": duration_s, "cpu_max": 0.4, "lag_p99_ms": 3.0, "processes": 1},
        {"type": "run_end", "t_s": duration_s, "duration_s": duration_s, "interrupted": False},
    ]
    path.write_text("".join(json.dumps(dict(e, wall="2026-11-30T00:00:00Z")) + "\n" for e in events))


def make_answered_results(root: Path, **kwargs: Any) -> Path:
    """`make_results` in which every request was answered (its fault window's 503s and the client
    timeouts become slow answers), so a P99 is made of latencies, not failures."""
    run = make_results(root, **kwargs)
    requests = pd.read_parquet(run / "requests.parquet")
    requests["ok"], requests["status"] = True, 200
    requests.to_parquet(run / "requests.parquet")
    return run
