"""summary.json's live section: the metrics endpoint and the drill's wall-clock window."""

from __future__ import annotations

from typing import Any

from rushhour.reports.measures.live import live_section


def test_live_section_records_port_and_window_for_grafana() -> None:
    events: list[dict[str, Any]] = [{"type": "run_start", "wall": "2026-12-01T05:00:00.000Z"},
              {"type": "live_metrics", "port": 9464, "url": "http://127.0.0.1:9464/metrics"},
              {"type": "run_end", "wall": "2026-12-01T05:00:30.500Z"}]
    live = live_section(events)
    assert live["metrics_port"] == 9464 and live["wall_end_ms"] - live["wall_start_ms"] == 30500
    assert live["grafana_query"] == f"/d/rushhour-drill?from={live['wall_start_ms']}&to={live['wall_end_ms']}"


def test_live_section_without_endpoint_keeps_the_window() -> None:
    live = live_section([{"type": "run_start", "wall": "2026-12-01T05:00:00.000Z"}])
    assert live["metrics_port"] is None and live["wall_end"] is None and "grafana_query" not in live
