"""A runner's calibration record: what same-versus-same nights on it gave, quoted by every verdict.

`rushhour ab calibrate` runs N nights of a version against itself (or two replicas of it) on the
user's own runner. Each night is a false alarm when it says regression; the record keeps every
night, the false-alarm count with its one-sided 95% Clopper-Pearson upper bound, the share of
nights that could not decide, and the runner's minimum detectable effect (the median over the
nights of each night's largest MDE among the compared percentiles).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import betaincinv

from rushhour.kernel.textfile import TextFileError, read_text_file

BOUND_CONFIDENCE = 0.95
RECORD_VERSION = 1
DEFAULT_RECORD = "ab-calibration.json"

__all__ = ["DEFAULT_RECORD", "CalibrationError", "calibration_record", "clopper_pearson_upper", "quote",
           "read_record"]


class CalibrationError(ValueError):
    """A calibration record that cannot be read."""


def clopper_pearson_upper(hits: int, n: int, confidence: float = BOUND_CONFIDENCE) -> float:
    """One-sided upper bound on a rate from `hits` in `n` (exact, via the beta distribution)."""
    if n <= 0:
        return 1.0
    if hits >= n:
        return 1.0
    return float(betaincinv(hits + 1, n - hits, confidence))


def night_row(doc: dict[str, Any]) -> dict[str, Any]:
    """What a calibration keeps of one same-versus-same night's ab.json."""
    mdes = [g["mde"] for g in doc.get("groups", []) if g.get("mde") is not None]
    return {"verdict": doc["verdict"], "exit_code": doc["exit_code"], "sentence": doc["sentence"],
            "seed": (doc.get("design") or {}).get("seed"), "mde": max(mdes) if mdes else None}


def calibration_record(nights: list[dict[str, Any]], *, scenario: str, baseline: str, candidate: str,
                       runner: dict[str, Any]) -> dict[str, Any]:
    """The record of a calibration from its nights (each a `night_row`)."""
    n = len(nights)
    alarms = sum(night["verdict"] == "regression" for night in nights)
    undecided = sum(night["verdict"] in ("inconclusive", "invalid") for night in nights)
    mdes = [night["mde"] for night in nights if night["mde"] is not None]
    return {"version": RECORD_VERSION, "scenario": scenario, "baseline": baseline, "candidate": candidate,
            "runner": runner, "nights": n, "false_alarms": alarms,
            "false_alarm_bound": clopper_pearson_upper(alarms, n), "bound_confidence": BOUND_CONFIDENCE,
            "undecided": undecided, "mde": float(np.median(mdes)) if mdes else None, "night_rows": nights}


def quote(record: dict[str, Any] | None) -> str:
    """The sentence every verdict carries about its runner."""
    if not record:
        return ("this runner is not calibrated: its false-alarm rate is unmeasured "
                "(rushhour ab calibrate measures it)")
    n, alarms = int(record["nights"]), int(record["false_alarms"])
    detects = f"detects x{record['mde']:.2f}" if record.get("mde") else "its detectable change unknown"
    return (f"on this runner: {alarms} false alarm{'s' if alarms != 1 else ''} in {n} night{'s' if n != 1 else ''}, "
            f"<= {100 * float(record['false_alarm_bound']):.1f}% at {100 * float(record['bound_confidence']):.0f}%; "
            f"{detects}")


def read_record(path: Path) -> dict[str, Any]:
    """A calibration record from disk; CalibrationError naming the file and what is wrong."""
    try:
        record = json.loads(read_text_file(path))
    except TextFileError as exc:
        raise CalibrationError(f"The calibration record: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise CalibrationError(f'The calibration record "{path}" is not JSON: {exc}.') from exc
    missing = [k for k in ("nights", "false_alarms", "false_alarm_bound", "bound_confidence")
               if not isinstance(record, dict) or k not in record]
    if missing:
        raise CalibrationError(f'The calibration record "{path}" lacks {", ".join(missing)}; write it with '
                               "rushhour ab calibrate.")
    return dict(record)
