"""The `live` section of summary.json: where the drill's live metrics were, and when it ran.

A dashboard opened on exactly this drill needs the harness's metrics endpoint (recorded by the
runner as a `live_metrics` event when `--metrics-port` was given) and the wall-clock window
(from the `run_start` and `run_end` events), here in ISO 8601 and in the epoch milliseconds
Grafana's `from`/`to` URL parameters take.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

DASHBOARD = "reports/grafana/rushhour-drill.json"
DASHBOARD_UID = "rushhour-drill"


def _epoch_ms(stamp: object) -> int | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return int(datetime.fromisoformat(stamp).timestamp() * 1000)
    except ValueError:
        return None


def live_section(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Metrics endpoint (None when the run had none) and the wall-clock window of the run."""
    start = next((e for e in events if e.get("type") == "run_start"), {})
    end: dict[str, Any] = next((e for e in reversed(events) if e.get("type") == "run_end"), {})
    endpoint = next((e for e in events if e.get("type") == "live_metrics"), {})
    start_ms, end_ms = _epoch_ms(start.get("wall")), _epoch_ms(end.get("wall"))
    section: dict[str, Any] = {
        "metrics_port": endpoint.get("port"), "metrics_url": endpoint.get("url"),
        "wall_start": start.get("wall"), "wall_end": end.get("wall"),
        "wall_start_ms": start_ms, "wall_end_ms": end_ms, "dashboard": DASHBOARD,
    }
    if start_ms is not None and end_ms is not None:
        section["grafana_query"] = f"/d/{DASHBOARD_UID}?from={start_ms}&to={end_ms}"
    return section
