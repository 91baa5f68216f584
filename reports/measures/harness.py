"""What the harness checked about itself: the leak audit at the end of the drill, the scraper.

A drill ends with a leak audit (faults still active, nodes not ready, Redis down, Kubernetes
objects or processes of ours left behind); the scraper reports how often `/v1/status` and
`/v1/events` failed. Both come from `events.jsonl` (the audit also from `leak_audit.json`), and
neither changes the verdict: they say whether the target was left as found and whether the
server-side charts are complete.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rushhour.reports.rundata.results import RunData

__all__ = ["harness_checks", "leak_audit_failure"]


def harness_checks(run: RunData) -> dict[str, Any]:
    """`{"leak_audit": {...} | None, "scraper": {...} | None}` for summary.json."""
    return {"leak_audit": _leak_audit(run), "scraper": _scraper(run)}


def leak_audit_failure(audit: dict[str, Any] | None) -> str | None:
    """A sentence for JUnit and the report when the audit found something; None when clean or absent."""
    if not audit or audit.get("clean", True):
        return None
    found = "; ".join(f"{f.get('kind', '?')} {f.get('target', '')}: {f.get('detail', '')}".strip()
                      for f in audit.get("findings", []))
    healed = f" Healed: {'; '.join(audit['actions'])}." if audit.get("actions") else ""
    return f"The drill left something behind: {found or 'see leak_audit.json'}.{healed}"


def _leak_audit(run: RunData) -> dict[str, Any] | None:
    events = run.events_of("leak_audit")
    if events:
        return {k: v for k, v in events[-1].items() if k != "type"}
    path = Path(run.root) / "leak_audit.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None
    return None


def _scraper(run: RunData) -> dict[str, Any] | None:
    totals = run.events_of("scraper")
    errors = run.events_of("scraper_error")
    if not totals and not errors:
        return None
    summary: dict[str, Any] = {k: v for k, v in totals[-1].items() if k != "type"} if totals else {}
    summary["error_events"] = len(errors)
    if errors:
        summary["first_error"] = {k: errors[0].get(k) for k in ("endpoint", "reason", "t_s")}
    return summary
