"""What a scenario file writes to configure its report: SLOs (`SloSpec`) and prices (`CostModel`).

The scenario loader (`rushhour.scenarios.spec.model`) validates these sections with the models here; the
verdicts and the dollars are computed in `rushhour.reports.measures.slos` and `rushhour.reports.measures.cost`.

One flat SLO model with a `kind` field keeps the YAML readable; a validator checks that each
kind has its own fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SloKind = Literal["latency", "availability", "degraded", "ttft", "tpot", "itl", "goodput", "drift"]
DriftMetric = Literal["latency_p99", "error_rate", "server_memory"]
LATENCY_KINDS = ("latency", "ttft", "tpot", "itl")
"""Per-request time objectives, each a good-events ratio over the column `SloSpec.column` names."""
KIND_LABEL = {"latency": "", "ttft": "TTFT ", "tpot": "TPOT ", "itl": "ITL "}


class SloSpec(BaseModel):
    """One service level objective, evaluated over the whole run and per phase.

    - latency: at least `percentile`% of attempted requests succeeded within `threshold_ms`
      (a good-events ratio: a failure is bad however fast it failed; latency is corrected,
      from the intended send, to the moment the request ended).
    - availability: share of scheduled requests answered ok >= `objective`.
    - degraded: share of ok answers marked degraded <= `max_share`.
    - ttft, tpot, itl (streaming targets): like latency, over time to first token (from the intended
      send), time per output token, or the answer's inter-token gap (`itl_stat`: its median, P99 or
      worst gap); a request without a measured value (failed, no token) is bad.
    - goodput: requests per second that met every per-request objective above (and succeeded)
      >= `min_rps`, over the run and per phase.
    - drift (soak runs): the trend of `metric` (latency_p99 in ms, error_rate as a share, or
      server_memory in MB) per hour stays at or below `max_slope`; it fails when the slope's whole
      95% interval lies above it (rushhour.reports.measures.drift).
    `priority`, `mode`, `phase` and `request_kind` narrow the requests the objective applies to;
    `steady_only` judges it over the steady windows only (rushhour.reports.measures.steady: each phase after its
    detected warm-up), the whole run's figure reported beside.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    kind: SloKind
    percentile: float | None = Field(default=None, gt=0, lt=100)
    threshold_ms: float | None = Field(default=None, gt=0)
    objective: float | None = Field(default=None, gt=0, lt=1)
    max_share: float | None = Field(default=None, gt=0, lt=1)
    itl_stat: Literal["p50", "p99", "max"] = "p99"
    min_rps: float | None = Field(default=None, gt=0)
    priority: str | None = None
    mode: str | None = None
    phase: str | None = None
    request_kind: str | None = None  # e.g. "short": a chat-line latency objective that documents do not count against
    steady_only: bool = False
    metric: DriftMetric | None = None
    max_slope: float | None = None
    ab_threshold: float | None = Field(default=None, gt=1, description=(
        "Latency kinds: the candidate/baseline ratio at which `rushhour ab` flags this percentile (a "
        "regression when the ratio's lower bound lies above 1 and the ratio reaches it; no regression when "
        "the upper bound lies below it); default the run's --threshold."))

    @model_validator(mode="after")
    def _fields_for_kind(self) -> SloSpec:
        needed = {
            **dict.fromkeys(LATENCY_KINDS, ("percentile", "threshold_ms")),
            "availability": ("objective",),
            "degraded": ("max_share",),
            "goodput": ("min_rps",),
            "drift": ("metric", "max_slope"),
        }[self.kind]
        missing = [field for field in needed if getattr(self, field) is None]
        if missing:
            raise ValueError(
                f'SLO "{self.name}" of kind "{self.kind}" needs {", ".join(missing)}.'
            )
        if self.ab_threshold is not None and self.kind not in LATENCY_KINDS:
            raise ValueError(f'SLO "{self.name}" of kind "{self.kind}": ab_threshold is for latency kinds '
                             f"({', '.join(LATENCY_KINDS)}), whose percentile an A/B run compares.")
        if self.steady_only and self.kind == "goodput":
            raise ValueError(f'SLO "{self.name}": steady_only is for per-request objectives; a goodput '
                             "rate is measured over its phases.")
        return self

    @property
    def allowed_bad_share(self) -> float:
        """The share of requests allowed to be bad: the error budget as a fraction."""
        if self.kind in LATENCY_KINDS:
            return 1.0 - float(self.percentile or 0) / 100.0
        if self.kind == "availability":
            return 1.0 - float(self.objective or 0)
        if self.kind == "goodput":
            return 1.0
        return float(self.max_share or 0)

    @property
    def column(self) -> str:
        """The requests.parquet column a per-request time objective reads."""
        return {"latency": "latency_ms", "ttft": "ttft_ms", "tpot": "tpot_ms",
                "itl": f"itl_{self.itl_stat}_ms"}.get(self.kind, "latency_ms")

    @property
    def objective_text(self) -> str:
        """How the objective reads in a table: "P99 <= 1500 ms", ">= 99.00% ok"."""
        if self.kind in LATENCY_KINDS:
            stat = f"({self.itl_stat} gap) " if self.kind == "itl" else ""
            text = f"{KIND_LABEL[self.kind]}{stat}P{self.percentile:g} <= {self.threshold_ms:g} ms"
        elif self.kind == "goodput":
            text = f"goodput >= {self.min_rps:g} req/s"
        elif self.kind == "drift":
            text = f"{self.metric} slope <= {self.max_slope:g}/h"
        elif self.kind == "availability":
            text = f">= {100 * float(self.objective or 0):.2f}% ok"
        else:
            text = f"<= {100 * float(self.max_share or 0):.1f}% degraded"
        scope = [v for v in (self.priority, self.mode, self.request_kind, self.phase) if v]
        scope += ["steady state"] if self.steady_only else []
        return f"{text} ({', '.join(scope)})" if scope else text


class PoolPrice(BaseModel):
    """What one node of a pool costs per hour, and what kind of machine it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    usd_per_node_hour: float = Field(ge=0)
    kind: Literal["gpu", "cpu"] = "gpu"


class CostModel(BaseModel):
    """Prices used to turn node-seconds into dollars; `source` and `date` say where they came from.

    The report prints source and date beside every figure, because a price list without a date
    is a guess that nobody can check later.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = "unspecified"
    date: str = "unspecified"
    pools: dict[str, PoolPrice] = Field(default_factory=dict)
    managed_api_usd_per_1k_chars: float | None = Field(default=None, ge=0)
