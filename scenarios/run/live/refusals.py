"""What a drill refused from the parties it does not trust, counted live for its watchers.

Three sources, each already written down by the drill, read here while it runs:

- the target's own events (`target_event` lines of `events.jsonl`): by kind, where `other` is an
  event claiming a kind the target does not have (an `abort`, a `fault_start`, a `phase`);
- the target's events that could not be read at all: the status scraper's `scraper_error` events
  for `/v1/events (malformed)`, each carrying the running total;
- across hosts, the master's `rejections.json` in the load control folder (messages dropped and
  nodes refused), read at each scrape, and its final `cluster_rejections` event.

Every label value is bounded: a target kind outside the reference server's list counts as `other`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rushhour.kernel.events import Counts, Event, TargetEventRecord
from rushhour.scenarios.generator.master_relay import REJECTIONS_FILE
from rushhour.scenarios.run.scraper import MALFORMED_EVENTS
from rushhour.scenarios.run.target_events import OTHER_KIND, TARGET_KINDS

__all__ = ["Refusals"]


@dataclass
class Refusals:
    """Running counts of what the target and the cluster sent that the drill did not take as said."""

    target_kinds: Counter[str] = field(default_factory=Counter)
    malformed_target_events: int = 0
    cluster_dropped: int = 0
    cluster_refused: int = 0
    control_dir: Path | None = None

    def see(self, event: Event) -> None:
        """Fold in one event of `events.jsonl` (any type; those that say nothing here are ignored)."""
        if isinstance(event, TargetEventRecord):
            kind = event.target_kind if event.target_kind in TARGET_KINDS else OTHER_KIND
            self.target_kinds[kind] += 1
        elif isinstance(event, Counts) and event.type == "scraper_error":
            extra = event.model_extra or {}
            if extra.get("endpoint") == MALFORMED_EVENTS:
                self.malformed_target_events = max(self.malformed_target_events, _whole(extra.get("total")))
        elif isinstance(event, Counts) and event.type == "cluster_rejections":
            self._cluster(event.model_extra or {})

    def read_cluster(self) -> None:
        """The master's rejections file as it stands (none across one host, or before any)."""
        if self.control_dir is None:
            return
        try:
            data = json.loads((self.control_dir / REJECTIONS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # not written yet, or caught half-replaced: the next scrape reads it
        if isinstance(data, dict):
            self._cluster(data)

    def _cluster(self, data: dict[str, object]) -> None:
        dropped, refused = data.get("dropped"), data.get("refused")
        if isinstance(dropped, dict):
            self.cluster_dropped = max(self.cluster_dropped, sum(_whole(v) for v in dropped.values()))
        if isinstance(refused, list):
            self.cluster_refused = max(self.cluster_refused, len(refused))


def _whole(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
