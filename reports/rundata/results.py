"""Reading one results directory into typed, validated frames.

Only requests.parquet and scenario.yaml are required; every other file may be missing or empty,
and `RunData.missing` lists what was absent so the report can say so instead of guessing.
Every attempted request leaves here with an end time (see rushhour.reports.rundata.attempts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rushhour.kernel import contract, jsonfile
from rushhour.kernel.clock import parse_clock_s, parse_duration
from rushhour.kernel.eventlines import check_lines
from rushhour.kernel.textfile import TextFileError, read_text_file
from rushhour.kernel.validation import format_validation_errors
from rushhour.kernel.yamlfile import load_yaml
from rushhour.reports.rundata.attempts import fill_missing_ends, latest_end_s
from rushhour.reports.schema import CostModel, SloSpec

REQUIRED_COLUMNS = contract.REQUIRED_REQUEST_COLUMNS
GENERATOR_ONLY_COLUMNS = ("pool_wait_ms", "fired")
"""Columns only rushhour's own load generator knows: a folder without them leaves them unknown."""
_EMPTY_BY_DTYPE: dict[str, Any] = {"float64": float("nan"), "int64": 0, "bool": False, "object": ""}
OPTIONAL_COLUMNS: dict[str, Any] = {
    name: _EMPTY_BY_DTYPE[dtype] for name, dtype in contract.REQUEST_COLUMNS.items()
    if name not in REQUIRED_COLUMNS and name not in GENERATOR_ONLY_COLUMNS
} | {"via": "translate"}
"""What an older or foreign folder's missing columns hold: empty for their type, `via` the plain API."""
DEFAULT_MAX_LAG_P99_MS = 50.0
UNTRUSTED_SOURCES = frozenset({"target", "server"})
"""Sources of events a target sent about itself: kept for the timeline, never read as the harness's."""


class ResultsError(ValueError):
    """A results directory is missing a required file or holds a malformed one."""


@dataclass(frozen=True)
class MalformedEvent:
    """A line of events.jsonl its event's model refused: never read as an event."""

    line: int
    reason: str


class TrafficInfo(BaseModel):
    """The part of the scenario's traffic block the report needs."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    time_scale: float = Field(default=1.0, gt=0)
    rate_scale: float = 1.0
    start_clock_s: float = 0.0
    duration_s: float | None = None
    peak_rps: float | None = None
    calibration: dict[str, Any] | None = None
    """What a relative peak (`0.6x n-1 capacity`) resolved to: factor, condition, capacity_rps, note."""

    @field_validator("peak_rps", mode="before")
    @classmethod
    def _peak(cls, value: Any) -> Any:
        return value if isinstance(value, (int, float)) else None  # a relative one is resolved in calibration

    @field_validator("duration_s", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_duration(value) if isinstance(value, str) else value

    @field_validator("start_clock_s", mode="before")
    @classmethod
    def _clock(cls, value: Any) -> Any:
        return parse_clock_s(value) if isinstance(value, str) and ":" in value else value


class LoadInfo(BaseModel):
    """Load-generator limits; above them the measurement is not trusted."""

    model_config = ConfigDict(extra="ignore")

    max_lag_p99_ms: float = Field(default=DEFAULT_MAX_LAG_P99_MS, gt=0)


class TargetInfo(BaseModel):
    """Where the target's own metrics were scraped from, and which sample names to chart."""

    model_config = ConfigDict(extra="ignore")

    metrics_url: str | None = None
    metrics: list[str] = Field(default_factory=list)


class ReportScenario(BaseModel):
    """The resolved scenario as far as the report reads it; other keys are ignored."""

    model_config = ConfigDict(extra="ignore")

    name: str = "unnamed"
    seed: int | None = None
    traffic: TrafficInfo = Field(default_factory=TrafficInfo)
    load: LoadInfo = Field(default_factory=LoadInfo)
    slos: list[SloSpec] = Field(default_factory=list)
    cost: CostModel | None = None
    target: TargetInfo = Field(default_factory=TargetInfo)
    chaos: list[Any] = Field(default_factory=list)
    fail_on_deviation: bool = False


@dataclass
class RunData:
    """Everything one run left behind, loaded once and shared by every aggregation."""

    root: Path
    scenario: ReportScenario
    requests: pd.DataFrame
    metrics: pd.DataFrame | None
    events: list[dict[str, Any]]
    journals: dict[str, dict[str, Any]]
    missing: list[str] = field(default_factory=list)
    target_metrics: pd.DataFrame | None = None
    """The target's own Prometheus samples (t_s, metric, labels, value), when they were scraped."""
    target_events: list[dict[str, Any]] = field(default_factory=list)
    """What the target said about itself (`source` target or server): kept apart from `events`, so
    no figure is read from it whatever type it claims."""
    malformed_events: list[MalformedEvent] = field(default_factory=list)
    """Lines of events.jsonl of an unknown type or with a malformed field, each with its line number."""

    def events_of(self, kind: str) -> list[dict[str, Any]]:
        """The harness's events of one type, in file order."""
        return [event for event in self.events if event.get("type") == kind]

    @property
    def duration_s(self) -> float:
        """Run length: run_end's duration, else the last thing that happened."""
        ends = self.events_of("run_end")
        if ends and ends[-1].get("duration_s"):
            return float(ends[-1]["duration_s"])
        times = self.requests[["intended_s", "done_s"]].max()
        latest = float(pd.Series(times).max(skipna=True)) if len(self.requests) else 0.0
        return latest if latest == latest else 0.0


def load_run(root: Path, *, requests: pd.DataFrame | None = None) -> RunData:
    """Load and validate a results directory; raise ResultsError naming the file and field.

    `requests`, when given, stands in for requests.parquet, which is then not read (a large run's
    narrow projection, `rushhour.reports.large`)."""
    root = Path(root)
    if not root.is_dir():
        raise ResultsError(f'Results directory "{root}" does not exist or is not a directory.')
    missing: list[str] = []
    scenario = _load_scenario(root / contract.SCENARIO_FILE)
    requests = _load_requests(root / contract.REQUESTS_FILE) if requests is None else requests
    metrics = _load_optional_parquet(root / contract.SERVER_METRICS_FILE, missing)
    everything, malformed = _load_events(root / contract.EVENTS_FILE, missing)
    events = [event for event in everything if event.get("source") not in UNTRUSTED_SOURCES]
    target_events = [event for event in everything if event.get("source") in UNTRUSTED_SOURCES]
    requests = fill_missing_ends(requests, latest_end_s(requests, events))
    journals = _load_journals(root / "chaos", missing)
    if not (root / contract.SCHEDULE_FILE).exists():
        missing.append(contract.SCHEDULE_FILE)
    target_metrics = None
    if scenario.target.metrics_url or (root / contract.TARGET_METRICS_FILE).exists():
        target_metrics = _load_optional_parquet(root / contract.TARGET_METRICS_FILE, missing)
    return RunData(root, scenario, requests, metrics, events, journals, missing, target_metrics, target_events,
                   malformed)


def read_text(path: Path) -> str:
    """A results folder's text file; ResultsError naming it when it cannot be read as text."""
    try:
        return read_text_file(path)
    except TextFileError as exc:
        raise ResultsError(f"{exc} The file is corrupt or not the one a run writes.") from exc


def _load_scenario(path: Path) -> ReportScenario:
    if not path.exists():
        raise ResultsError(f'"{path}" is missing; a results directory needs its scenario.yaml.')
    try:
        raw = load_yaml(read_text(path)) or {}
    except yaml.YAMLError as exc:
        raise ResultsError(f'"{path}" is not valid YAML: {exc}') from exc
    if not isinstance(raw, dict):
        raise ResultsError(f'"{path}" must hold a mapping, not {type(raw).__name__}.')
    try:
        return ReportScenario.model_validate(raw)
    except ValidationError as exc:
        raise ResultsError(format_validation_errors(str(path), exc)) from exc


def _load_requests(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise ResultsError(f'"{path}" is missing; a results directory needs its requests.parquet.')
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise ResultsError(f'"{path}" could not be read as parquet: {exc}') from exc
    absent = [column for column in REQUIRED_COLUMNS if column not in frame.columns]
    if absent:
        raise ResultsError(f'"{path}" lacks the column(s) {", ".join(absent)}.')
    return _normalise_requests(frame)


def _normalise_requests(frame: pd.DataFrame) -> pd.DataFrame:
    """Fill optional columns and give every contract column its contract type (`rushhour.kernel.contract`),
    so the aggregations never branch on them."""
    for column, default in OPTIONAL_COLUMNS.items():
        if column not in frame.columns:
            frame[column] = default
    for column, dtype in contract.REQUEST_COLUMNS.items():
        if column not in frame.columns:
            continue
        if dtype == "float64":
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
        elif dtype == "int64":
            frame[column] = pd.to_numeric(frame[column], errors="coerce").fillna(0).astype("int64")
        elif dtype == "bool":
            frame[column] = frame[column].fillna(False).astype(bool)
        else:
            frame[column] = frame[column].fillna("").astype(str)
    return frame


def _load_optional_parquet(path: Path, missing: list[str]) -> pd.DataFrame | None:
    if not path.exists():
        missing.append(path.name)
        return None
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # same reason as above
        raise ResultsError(f'"{path}" could not be read as parquet: {exc}') from exc
    if frame.empty or "t_s" not in frame.columns:
        missing.append(f"{path.name} (empty or without t_s)")
        return None
    return frame.sort_values("t_s", kind="stable").reset_index(drop=True)


def _load_events(path: Path, missing: list[str]) -> tuple[list[dict[str, Any]], list[MalformedEvent]]:
    """Each line read through its event's model (`rushhour.kernel.eventlines`): a line that is not JSON
    is a ResultsError, one the model refuses is set aside as a MalformedEvent and listed as missing."""
    if not path.exists():
        missing.append(path.name)
        return [], []
    read = check_lines(read_text(path).split("\n"))
    malformed = []
    for refused in read.refused:
        if not refused.json:
            raise ResultsError(f'"{path}" line {refused.line} cannot be read: {refused.reason}.')
        malformed.append(MalformedEvent(refused.line, refused.reason))
        missing.append(f"{path.name} line {refused.line} (refused: {refused.reason})")
    if not read.events and not malformed:
        missing.append(f"{path.name} (empty)")
    return read.raw, malformed


def _load_journals(folder: Path, missing: list[str]) -> dict[str, dict[str, Any]]:
    if not folder.is_dir():
        missing.append("chaos/*.journal.json")
        return {}
    journals = {}
    for path in sorted(folder.glob("*.journal.json")):
        try:
            journals[path.name.removesuffix(".journal.json")] = jsonfile.loads(read_text(path))
        except (ValueError, ResultsError):
            missing.append(f"chaos/{path.name} (not JSON)")
    return journals
