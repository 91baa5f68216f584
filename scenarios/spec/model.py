"""The scenario file: what one drill replays, against what, judged by which SLOs.

Every file a user writes is validated up front by these pydantic models, and any problem is
raised as one `ScenarioError` whose message names the file and the field, so a drill never
fails twenty minutes in because of a typo.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from rushhour.kernel.clock import parse_clock_s, parse_duration, refuse_unquoted_clock
from rushhour.kernel.textfile import TextFileError, read_text_file
from rushhour.kernel.validation import format_validation_errors
from rushhour.kernel.yamlfile import DuplicateKeyError, load_yaml, yaml_problem
from rushhour.reports.schema import CostModel, SloSpec
from rushhour.scenarios.spec.peak import Calibration, RelativePeak, parse_relative_peak
from rushhour.scenarios.spec.target import TargetMetricsSource, TargetProtocol
from rushhour.scenarios.spec.urls import check_target_url, hide_userinfo, special_address

BUNDLED_DIR = Path(__file__).resolve().parents[1]
DEFAULT_LANGUAGES = ("en-de", "en-fr", "en-es")
RESOLVED_TOP = ("seed",)
RESOLVED_TRAFFIC = ("start_clock_s", "duration_s")
MIN_DURATION_S = 1.0


class ScenarioError(ValueError):
    """A scenario file (or an override of it) is invalid; the message names file and field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TrafficSpec(_Strict):
    """Which traffic model to replay, and how fast and how hard."""

    model: str
    time_scale: float = 1.0
    rate_scale: float | None = None
    peak_rps: float | str | None = Field(default=None, description='req/s, or relative: "0.7x capacity", "0.5x n-1 capacity"')
    start_clock: str = "00:00"
    duration: str | float = "180s"
    seed: int = 0
    calibration: Calibration | None = Field(default=None, description="filled in by the run: what a relative peak_rps resolved to")

    @field_validator("time_scale")
    @classmethod
    def _time_scale_positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be > 0")
        return value

    @field_validator("rate_scale", "peak_rps")
    @classmethod
    def _positive_or_none(cls, value: float | str | None) -> float | str | None:
        if isinstance(value, str):
            return parse_relative_peak(value).text
        if value is not None and value <= 0:
            raise ValueError("must be > 0")
        return value

    @field_validator("start_clock", mode="before")
    @classmethod
    def _quoted_clock(cls, value: object) -> object:
        return refuse_unquoted_clock(value)

    @field_validator("start_clock")
    @classmethod
    def _clock(cls, value: str) -> str:
        parse_clock_s(value)
        return value

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f'{json.dumps(value)} is not a duration; write e.g. "180s", "3m" or "1h".')
        seconds = parse_duration(value)
        if seconds < MIN_DURATION_S:
            raise ValueError(f'"{value}" is {seconds:g} s; a drill runs for at least {MIN_DURATION_S:g} s.')
        return value

    @model_validator(mode="after")
    def _one_rate(self) -> TrafficSpec:
        if self.rate_scale is not None and self.peak_rps is not None:
            raise ValueError("give rate_scale or peak_rps, not both")
        return self

    @property
    def relative_peak(self) -> RelativePeak | None:
        """`peak_rps` when it is given relative to the measured capacity."""
        return parse_relative_peak(self.peak_rps) if isinstance(self.peak_rps, str) else None

    @property
    def duration_s(self) -> float:
        return parse_duration(self.duration)

    @property
    def start_clock_s(self) -> float:
        return parse_clock_s(self.start_clock)


class EmbeddedTarget(_Strict):
    """Boot the bundled reference server for the drill."""

    config: str | None = None
    nodes: int | None = Field(default=None, ge=1)
    max_batch_size: int | None = Field(default=None, ge=1)
    server: dict[str, Any] | None = Field(
        default=None, description="a partial server config, deep-merged onto `config` (see variants.py)")
    require_provider: Literal["cuda"] | None = Field(
        default=None, description="cuda: the server refuses to start unless its quality tier really runs on CUDA")

    @model_validator(mode="before")
    @classmethod
    def _provider_into_server(cls, data: Any) -> Any:
        """`require_provider` is shorthand for `server: {require_provider: ...}`."""
        if isinstance(data, dict) and data.get("require_provider") is not None and isinstance(data.get("server") or {}, dict):
            return {**data, "server": {**(data.get("server") or {}), "require_provider": data["require_provider"]}}
        return data


REFERENCE_CHAT_ROW_HEADERS = {"X-Rushhour-Priority": "priority"}
REFERENCE_CHAT_EXTRA_FIELDS = ("deadline_ms",)


class TargetSpec(TargetProtocol, TargetMetricsSource):
    """Exactly one of: the embedded reference server, or a running service at `url`, plus the
    protocol it speaks (`rushhour.scenarios.spec.target`)."""

    embedded: EmbeddedTarget | None = None
    url: str | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None:
            check_target_url(value)
        return value

    def resolved(self) -> TargetProtocol:
        """The embedded server's chat endpoint reads priority from a header and the deadline from
        the body: an openai-chat drill of it sends both unless the scenario says otherwise (a
        `--target` URL drops the default, since the file's target is then someone else's)."""
        if self.embedded is None or self.protocol != "openai-chat":
            return self
        row_headers = dict(REFERENCE_CHAT_ROW_HEADERS) if self.row_headers is None else self.row_headers
        extra_fields = REFERENCE_CHAT_EXTRA_FIELDS if self.extra_fields is None else self.extra_fields
        return TargetProtocol.model_validate(self.model_dump(include=set(TargetProtocol.model_fields))
                                             | {"row_headers": row_headers, "extra_fields": extra_fields})

    @model_validator(mode="after")
    def _exactly_one(self) -> TargetSpec:
        if (self.embedded is None) == (self.url is None):
            raise ValueError("give exactly one of embedded or url")
        if self.url is not None and "@" in urlsplit(self.url).netloc:
            raise ValueError(f'url "{hide_userinfo(self.url)}" carries credentials (user:password@); give them '
                             "through target.auth (env or file), so they never reach events.jsonl, /sd or the "
                             "Locust command line")
        return self


def jobs_in_use(documents_via_jobs: bool, mode: str) -> bool:
    """Whether documents go through the jobs API: only in open mode, closed-loop personas always
    translate. Every part of the harness asks here, so the rule is written once."""
    return documents_via_jobs and mode == "open"


class LoadSpec(_Strict):
    """How the load generator runs and when its own measurements stop being trustworthy."""

    mode: Literal["open", "closed"] = "open"
    processes: int = Field(default=1, ge=1, le=64)
    request_timeout_s: float | None = Field(default=None, gt=0)
    timeout_margin_s: float = Field(default=2.0, ge=0)
    max_lag_p99_ms: float = Field(default=50.0, gt=0)
    languages: tuple[str, ...] = DEFAULT_LANGUAGES
    allowed_hosts: tuple[str, ...] = Field(
        default=(),
        description="private IP addresses the loopback guard lets a target or workers use without "
                    "--allow-remote (e.g. test hosts in network namespaces); none by default")
    documents_via_jobs: bool = Field(
        default=False,
        description="open mode: send `document` requests to POST /v1/jobs and poll them, recording "
                    "time to first segment; closed mode always uses /v1/translate")

    @property
    def jobs_in_use(self) -> bool:
        """Documents go through the jobs API (`jobs_in_use`: open mode only)."""
        return jobs_in_use(self.documents_via_jobs, self.mode)

    @field_validator("allowed_hosts")
    @classmethod
    def _private(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for host in value:
            try:
                address = ipaddress.ip_address(host)
            except ValueError:
                raise ValueError(f'"{host}" is not an IP address; name test hosts by address') from None
            special = special_address(address)
            if special is not None:
                raise ValueError(f'"{host}" is {special}; only private test hosts may be named here')
            if not address.is_private or address.is_loopback:
                raise ValueError(f'"{host}" is not a private (non-loopback) address; only private test '
                                 "hosts may be named here")
        return value

    @field_validator("languages")
    @classmethod
    def _pairs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("needs at least one language pair")
        for pair in value:
            parts = pair.split("-")
            if len(parts) != 2 or not all(parts):
                raise ValueError(f'"{pair}" is not a language pair; write e.g. "en-de"')
        return value


# Drills inject the fault whatever the steady state was before it and judge the hypothesis after.
DRILL_HYPOTHESIS: Final = "after-method-only"
# The drill sets these for every experiment (the guarded target and its token); a scenario may not.
RESERVED_CHAOS_ENV = ("RUSHHOUR_URL", "RUSHHOUR_ADMIN_TOKEN", "RUSHHOUR_FAULT_HOLD_S")


class ChaosEntry(_Strict):
    """Run one Chaos Toolkit experiment at a scenario clock time."""

    at: str
    experiment: str
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                             description="names the journal file; letters, digits, '_', '.', '-'")
    hold: str | None = Field(default=None, description="how long the fault is held, on the scenario clock (e.g. 20m)")
    expect_recovery: str | None = Field(default=None, description="how soon after the fault ends the SLOs should hold "
                                        "again, on the scenario clock (e.g. 10m); the report judges recovery by it")
    recovery_window: str | None = Field(default=None, description="how long the SLOs must hold without a break for "
                                        "the service to count as recovered, on the scenario clock (default 5 s "
                                        "of run time)")
    recovery_min_requests: int | None = Field(default=None, ge=1, description="fewest requests that stretch must "
                                              "hold, so a lone good request never counts as a recovery (default 20)")
    env: dict[str, str] = {}
    hypothesis: Literal["default", "before-method-only", "after-method-only", "during-method-only", "continuously"] = DRILL_HYPOTHESIS

    @field_validator("env")
    @classmethod
    def _no_reserved_env(cls, value: dict[str, str]) -> dict[str, str]:
        reserved = sorted(set(value) & set(RESERVED_CHAOS_ENV))
        if reserved:
            raise ValueError(f"the drill sets {', '.join(reserved)} itself (the guarded target, its token, the "
                             "hold), so a chaos entry may not; use target/--target and hold instead")
        return value

    @field_validator("at", mode="before")
    @classmethod
    def _quoted_clock(cls, value: object) -> object:
        return refuse_unquoted_clock(value)

    @field_validator("at")
    @classmethod
    def _clock(cls, value: str) -> str:
        parse_clock_s(value)
        return value

    @field_validator("hold", "expect_recovery", "recovery_window")
    @classmethod
    def _hold(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @property
    def label(self) -> str:
        return self.name or Path(self.experiment).stem


class StopCondition(_Strict):
    """Abort the drill when the error rate stays above a level for a while."""

    error_rate_over: float = Field(gt=0, le=1)
    for_s: float = Field(default=10.0, gt=0)


class Variant(_Strict):
    """One server policy to compare: a partial server config merged onto the embedded one."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    server: dict[str, Any] = {}


class Scenario(_Strict):
    """One drill: traffic, target, load generator, SLOs, cost model, chaos and stop rules."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    traffic: TrafficSpec
    target: TargetSpec = TargetSpec(embedded=EmbeddedTarget())
    load: LoadSpec = LoadSpec()
    slos: list[SloSpec] = []
    cost: CostModel | None = None
    chaos: list[ChaosEntry] = []
    fail_on_deviation: bool = Field(default=False, description="fail the drill when an experiment's steady-state "
                                    "hypothesis deviates, even with every SLO met")
    stop_conditions: list[StopCondition] = []
    variants: list[Variant] = []

    @field_validator("variants", "slos")
    @classmethod
    def _unique_names(cls, value: list[Variant] | list[SloSpec], info: ValidationInfo) -> list[Variant] | list[SloSpec]:
        """Reports, summaries and JUnit key each SLO and variant by its name: two of one name would merge."""
        names = [item.name for item in value]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            what = "variant" if info.field_name == "variants" else "SLO"
            raise ValueError(f"{what} names must be unique; repeated: {', '.join(repeated)}")
        return value


def format_errors(source: str, exc: ValidationError) -> str:
    """One sentence per problem: `file: field.path: what is wrong`."""
    return format_validation_errors(source, exc)


def _strip_resolved(data: dict) -> dict:
    """Drop the numbers `resolved_dict` adds, so a results dir's scenario.yaml loads again."""
    data = {k: v for k, v in data.items() if k not in RESOLVED_TOP}
    traffic = data.get("traffic")
    if isinstance(traffic, dict):
        data["traffic"] = {k: v for k, v in traffic.items() if k not in RESOLVED_TRAFFIC}
    return data


def parse_scenario(data: object, *, source: str) -> Scenario:
    """Validate already-loaded YAML data, naming `source` in every error."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: (top level): must be a mapping of scenario fields.")
    data = _strip_resolved(data)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(format_errors(source, exc)) from exc


def resolve_path(spec: str | Path) -> Path:
    """A path as given, or the bundled scenario of that name ("promo-day")."""
    path = Path(spec)
    if path.exists():
        return path
    bundled = BUNDLED_DIR / f"{spec}.yaml"
    if bundled.exists():
        return bundled
    raise ScenarioError(f'{spec}: no such scenario file, and no bundled scenario named "{spec}".')


def read_scenario_text(path: Path) -> str:
    """The file's text; one that cannot be read as text is a ScenarioError naming it."""
    try:
        return read_text_file(path)
    except TextFileError as exc:
        raise ScenarioError(f"{exc} A scenario file is YAML text.") from exc


def load_scenario(spec: str | Path) -> Scenario:
    """Read and validate a scenario file (or bundled scenario name)."""
    path = resolve_path(spec)
    try:
        data = load_yaml(read_scenario_text(path))
    except DuplicateKeyError as exc:
        raise ScenarioError(f"{path}: {yaml_problem(exc)}.") from exc
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: (top level): is not valid YAML: {exc}") from exc
    return parse_scenario(data, source=str(path))


def resolved_dict(scenario: Scenario, *, rate_scale: float) -> dict[str, object]:
    """The scenario with every default filled in and the derived numbers readers need."""
    data = scenario.model_dump(mode="json")
    traffic = data["traffic"]
    traffic.update(rate_scale=rate_scale, peak_rps=None, start_clock_s=scenario.traffic.start_clock_s,
                   duration_s=scenario.traffic.duration_s)
    data["seed"] = scenario.traffic.seed
    return data


def dump_scenario(scenario: Scenario, *, rate_scale: float) -> str:
    """The resolved scenario as YAML (loads again with `load_scenario`)."""
    return yaml.safe_dump(resolved_dict(scenario, rate_scale=rate_scale), sort_keys=False)
