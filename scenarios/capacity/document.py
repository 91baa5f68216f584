"""capacity.json as a job writes it: the document assembled from the conditions measured, checked
against `rushhour.reports.capacity.document_model.CapacityDocument`, written with capacity.html."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from rushhour.kernel.atomic import write_text_atomic
from rushhour.kernel.contract import CAPACITY_HTML_FILE, CAPACITY_JSON_FILE
from rushhour.scenarios.capacity.job import CapacityJob
from rushhour.scenarios.capacity.target import Target
from rushhour.scenarios.run.envinfo import machine_facts

__all__ = ["SCHEMA_VERSION", "document_of", "plain", "write_document"]

SCHEMA_VERSION = 1


def document_of(job: CapacityJob, target: Target | None, conditions: list[dict[str, Any]],
                aborted: str | None, wall_s: float) -> dict[str, Any]:
    """The job's capacity.json: the first condition's answer at the top, every condition, the settings."""
    headline = conditions[0] if conditions else {}
    return {
        "schema_version": SCHEMA_VERSION, "scenario": job.scenario.name, "source": job.source,
        "target": target.describe if target else job.target_url,
        **{key: headline.get(key) for key in ("capacity_rps", "bracket", "limiting_slo", "generator_bound")},
        "steps": headline.get("steps", []),
        "conditions": conditions, "require_rps": job.require_rps, "aborted": aborted,
        "slos": [{"name": s.name, "objective": s.objective_text, "kind": s.kind, "threshold_ms": s.threshold_ms,
                  "percentile": s.percentile} for s in job.slos],
        "floors": [f.__dict__ for f in job.floors],
        "settings": {"min_rps": job.settings.min_rps, "max_rps": job.settings.max_rps,
                     "precision": job.settings.precision, "step_duration_s": job.rules.measure_s,
                     "warmup_s": job.rules.warmup_s, "seed": job.seed, "start_rps": job.start_rps,
                     "met_error": job.rules.met_error, "drift_check": job.drift_check,
                     "retry_duration_s": job.retry_rules.measure_s if job.retry_rules is not None else 0.0,
                     "retry_max_s": _retry_max_s(job)},
        "environment": machine_facts(), "wall_s": round(wall_s, 1),
    }


def _retry_max_s(job: CapacityJob) -> float:
    if job.retry_rules is None:
        return 0.0
    return max(job.retry_rules.measure_s, job.retry_max_s or 0.0)


def plain(value: Any) -> Any:
    """JSON-ready: NaN and infinities become null (JSON has neither), tuples lists."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_document(job: CapacityJob, document: dict[str, Any]) -> None:
    """capacity.json and capacity.html into `job.out_dir`; a malformed field is refused by name before writing."""
    from rushhour.reports.capacity.document_model import CapacityDocument

    CapacityDocument.model_validate(plain(document))
    write_text_atomic(json.dumps(plain(document), indent=2, allow_nan=False), job.out_dir / CAPACITY_JSON_FILE)
    from rushhour.reports.capacity.page import write_capacity_html

    write_capacity_html(document, job.out_dir / CAPACITY_HTML_FILE)
