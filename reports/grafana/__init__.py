"""Watching a drill live: the Grafana dashboard (rushhour-drill.json) and an example Prometheus
scrape config (prometheus.yaml), shipped as package data; see docs/live.md."""
