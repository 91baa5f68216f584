"""The harness's own overhead beside the run's latencies, and the SLOs too tight to judge with it.

A run that measured its overhead first (`rushhour.scenarios.run.overhead`, the `harness_overhead` event)
knows what latency rushhour itself adds at the run's peak rate: the P50/P99/P99.9 of requests to
a target that answers at once. A measured latency close to that figure is mostly the harness, and
an SLO whose threshold is within `TIGHT_FACTOR` times the harness's own P99 cannot be judged on
this machine: meeting or missing it says as much about the client as about the service. Those
SLOs are flagged, in the section and on their own rows; their verdicts are kept.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TIGHT_FACTOR", "TIGHT_TEXT", "flag_tight_slos", "overhead_section"]

TIGHT_FACTOR = 3.0
TIGHT_TEXT = "this SLO is too tight for this machine to judge"
OVERHEAD_KINDS = {"latency": "latency_ms", "ttft": "ttft_ms"}
"""Per-request objectives the overhead applies to, and which of its figures each is held against."""


def overhead_section(events: list[dict[str, Any]], latency_ms: dict[str, float | None],
                     slos: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The report's overhead figures from the run's `harness_overhead` event (None: not measured,
    e.g. `--no-overhead-check`); `error` when the check was tried and failed."""
    event = next((e for e in events if e.get("type") == "harness_overhead"), None)
    if event is None:
        return None
    if event.get("error") or not event.get("latency_ms"):
        return {"measured": False, "error": event.get("error") or "no step of the check carried a request",
                "tight_slos": []}
    harness = event["latency_ms"]
    share = _share(harness.get("p99"), latency_ms.get("p99"))
    section = {
        "measured": True, "error": None,
        "peak_rps": event.get("peak_rps"), "at_rps": event.get("at_rps"),
        "max_valid_rps_per_process": event.get("max_valid_rps_per_process"),
        "latency_ms": harness, "ttft_ms": event.get("ttft_ms"),
        "run_latency_ms": {key: latency_ms.get(key) for key in ("p50", "p99", "p999")},
        "p99_share_of_run": share,
        "measured_at": event.get("measured_at"), "cached": bool(event.get("cached")),
        "steps": event.get("steps") or [],
    }
    section["tight_slos"] = tight_slos(section, slos)
    return section


def tight_slos(section: dict[str, Any], slos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each latency or TTFT SLO whose threshold is under TIGHT_FACTOR x the harness's own P99."""
    found = []
    for slo in slos:
        figures = section.get(OVERHEAD_KINDS.get(str(slo.get("kind")), "")) or (
            section.get("latency_ms") if slo.get("kind") == "ttft" else None)
        p99 = (figures or {}).get("p99")
        threshold = slo.get("objective")
        if p99 is None or not isinstance(threshold, (int, float)) or threshold >= TIGHT_FACTOR * p99:
            continue
        found.append({"name": slo["name"], "threshold_ms": float(threshold), "harness_p99_ms": float(p99),
                      "ratio": round(float(threshold) / float(p99), 2) if p99 > 0 else None,
                      "text": f"{slo['name']}: threshold {threshold:g} ms is within {TIGHT_FACTOR:g}x the harness's "
                              f"own P99 ({p99:g} ms); {TIGHT_TEXT}"})
    return found


def flag_tight_slos(slos: list[dict[str, Any]], section: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The SLO rows with `too_tight` set (the sentence) on those the section flags."""
    flagged = {row["name"]: row["text"] for row in (section or {}).get("tight_slos") or []}
    return [slo | {"too_tight": flagged[slo["name"]]} if slo.get("name") in flagged else slo for slo in slos]


def _share(harness_p99: float | None, run_p99: float | None) -> float | None:
    """The harness's P99 as a share of the run's (how much of the tail may be the client's)."""
    if harness_p99 is None or not run_p99:
        return None
    return round(float(harness_p99) / float(run_p99), 4)
