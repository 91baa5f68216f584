"""How one load run fires a schedule: the settings, from the scenario to the firer, in one model.

`LoadSettings` is built once from the scenario's `load` section and the run's plan
(`LoadSettings.from_spec`), serialised once as JSON (`to_env`: one environment variable for the
Locust processes on this machine, or the master's config message for a worker on another host),
and validated again where it arrives (`arrive`), so a worker never fires on settings it misread
and a malformed payload is one sentence naming the field. The runner's session, the workers and
the open-loop firer all read this one object: a new setting is a new field here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rushhour.kernel.validation import format_validation_errors
from rushhour.scenarios.spec.model import LoadSpec, jobs_in_use
from rushhour.scenarios.spec.target import TargetProtocol
from rushhour.traffic_models.facts import ScheduleFacts

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DEFAULT_MASTER_BIND", "ENV_SETTINGS", "LoadSettings", "SettingsError", "longest_wait_s"]

ENV_SETTINGS = "RUSHHOUR_LOAD_SETTINGS"
DEFAULT_MASTER_BIND = ("127.0.0.1", 5557)
DEFAULT_MAX_TIMEOUT_S = 30.0


class SettingsError(RuntimeError):
    """Load settings that arrived missing or malformed; the message names the field."""


class LoadSettings(BaseModel):
    """Everything a load run needs, from the runner's Locust command to each row's time-out.

    Frozen and keyword-only (a pydantic model); unknown fields are refused, so a worker of another
    build cannot silently drop a setting it does not know. Paths are made absolute, since the
    Locust processes run in the work folder, not where the runner was started.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = Field(description='the target URL Locust speaks to ("" when every row names its own)')
    schedule_path: Path = Field(description="the schedule every worker cuts its share from")
    work_dir: Path = Field(description="the run's load folder: control/ markers and parts/ results under it")
    duration_s: float = Field(ge=0, description="how long the schedule runs (seconds)")
    processes: int = Field(default=1, ge=1, description="Locust processes on this machine (`--processes`)")
    remote_workers: int = Field(default=0, ge=0, description="across hosts: the `rushhour worker`s a master "
                                                             "waits for (0: one machine)")
    master_bind: tuple[str, int] = Field(default=DEFAULT_MASTER_BIND, description="across hosts: the master's bind")
    mode: Literal["open", "closed"] = Field(default="open", description="open loop, or closed-loop personas")
    languages: tuple[str, ...] = Field(default=("en-de",), min_length=1,
                                       description="language pairs, given to rows in turn by row number")
    timeout_margin_s: float = Field(default=2.0, ge=0, description="a row is given up at its deadline plus this")
    request_timeout_s: float | None = Field(default=None, gt=0, description="a fixed time-out for every row instead")
    max_timeout_s: float = Field(default=DEFAULT_MAX_TIMEOUT_S, ge=0,
                                 description="the longest any row may take (`longest_wait_s`): how long the "
                                             "runner waits for stragglers after the schedule ends")
    documents_via_jobs: bool = Field(default=False, description="documents through the jobs API (open mode only, "
                                                                "see `jobs_in_use`)")
    target: TargetProtocol | None = Field(default=None, description="the target's protocol fields (credential "
                                                                    "sources, never values); None: rushhour")

    @field_validator("schedule_path", "work_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.resolve()

    @classmethod
    def from_spec(cls, load: LoadSpec, schedule: pd.DataFrame | ScheduleFacts, *, host: str, schedule_path: Path, work_dir: Path,
                  duration_s: float, target: TargetProtocol | None, mode: Literal["open", "closed"] | None = None,
                  documents_via_jobs: bool | None = None, remote_workers: int = 0,
                  master_bind: tuple[str, int] = DEFAULT_MASTER_BIND) -> LoadSettings:
        """The settings of a run of `schedule` (its rows, or the facts gathered while it was written
        in chunks) under the scenario's `load` section; `mode` and
        `documents_via_jobs` override the scenario's where a command fires differently (`ab`, `capacity`)."""
        return cls(
            host=host, schedule_path=schedule_path, work_dir=work_dir, duration_s=duration_s,
            processes=load.processes, remote_workers=remote_workers, master_bind=master_bind,
            mode=mode or load.mode, languages=load.languages, timeout_margin_s=load.timeout_margin_s,
            request_timeout_s=load.request_timeout_s,
            max_timeout_s=longest_wait_s(schedule, load.request_timeout_s, load.timeout_margin_s),
            documents_via_jobs=load.documents_via_jobs if documents_via_jobs is None else documents_via_jobs,
            target=TargetProtocol.model_validate(target.wire_dict()) if target is not None else None,
        )

    @property
    def workers(self) -> int:
        """How many shares the schedule is cut into: remote workers, else local processes."""
        return self.remote_workers or self.processes

    @property
    def jobs_in_use(self) -> bool:
        """Documents go through the jobs API (`rushhour.scenarios.spec.model.jobs_in_use`: open mode only)."""
        return jobs_in_use(self.documents_via_jobs, self.mode)

    @property
    def control_dir(self) -> Path:
        return self.work_dir / "control"

    @property
    def parts_dir(self) -> Path:
        return self.work_dir / "parts"

    @property
    def protocol_name(self) -> str:
        return self.target.protocol if self.target is not None else "rushhour"

    @property
    def via_name(self) -> str:
        """What a row's `via` says when it is not sent as a job: `translate`, or the protocol's name."""
        return "translate" if self.protocol_name == "rushhour" else self.protocol_name

    def to_env(self) -> str:
        """The settings as one JSON text (an environment variable's value)."""
        return self.model_dump_json()

    def to_wire(self) -> dict[str, Any]:
        """The settings as JSON-ready fields (a message to a worker on another host)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LoadSettings:
        """The settings the runner put in ENV_SETTINGS, validated (SettingsError names the field)."""
        raw = (os.environ if environ is None else environ).get(ENV_SETTINGS)
        if not raw:
            raise SettingsError(f"{ENV_SETTINGS} is not set; run this locustfile through `rushhour run`.")
        return cls.arrive(raw, source=f"{ENV_SETTINGS} (the runner's load settings)")

    @classmethod
    def arrive(cls, data: str | Mapping[str, Any], *, source: str) -> LoadSettings:
        """Settings that came from elsewhere (JSON text or fields), validated; SettingsError names
        `source` and every wrong field."""
        try:
            if isinstance(data, str):
                return cls.model_validate_json(data)
            return cls.model_validate(data)
        except ValidationError as exc:
            raise SettingsError(format_validation_errors(source, exc)) from exc


def longest_wait_s(schedule: pd.DataFrame | ScheduleFacts, request_timeout_s: float | None,
                   timeout_margin_s: float) -> float:
    """The longest any row of `schedule` may take: the fixed time-out, else the longest deadline
    plus the margin."""
    if isinstance(schedule, ScheduleFacts):
        longest_ms = schedule.longest_deadline_ms
    else:
        longest_ms = float(schedule["deadline_ms"].max()) if len(schedule) else 0.0
    return wait_limit_s(longest_ms, request_timeout_s, timeout_margin_s)


def wait_limit_s(longest_deadline_ms: float, request_timeout_s: float | None, timeout_margin_s: float) -> float:
    """The longest a row may take, given the longest deadline among the rows: the fixed time-out,
    else that deadline plus the margin."""
    if request_timeout_s is not None:
        return request_timeout_s
    return longest_deadline_ms / 1000.0 + timeout_margin_s
