"""Configuration of the reference server: pools of nodes, batching, caching, admission.

Every field has a default, so `rushhour serve` runs with no file at all; a YAML file
overrides any part of it and is validated with errors that name the file and the field.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rushhour.kernel.validation import format_validation_errors
from rushhour.kernel.yamlfile import load_yaml, yaml_problem
from rushhour.reference_server.defaults import DEFAULT_PREFILL_TOKENS, Batching, default_batching

DEFAULT_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl", "ja", "zh", "ko")
PRIORITIES = ("paid", "free", "batch")
DEFAULT_CACHE_MAX_BYTES = 64 * 1024 * 1024
REDIS_ENV = "RUSHHOUR_REDIS_URL"
MIN_PREFILL_TOKENS = 4


class ConfigError(ValueError):
    """A server configuration file or value is invalid; the message names the file and field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScheduledPeak(_Strict):
    """A known peak: have `nodes` nodes from `warm_ahead_s` before it, so they are warm by then.

    The time is `at_s` (seconds since server start, or since the drill's start once a drill anchors
    the schedule with `POST /admin/autoscale/epoch`) or `at_clock` (an ISO 8601 date-time, or
    "HH:MM[:SS]" local time on the day the server starts, the next day when already past)."""

    at_s: float | None = Field(None, ge=0)
    at_clock: str | None = None
    nodes: int = Field(ge=0, le=64)
    warm_ahead_s: float = Field(0.0, ge=0)

    @model_validator(mode="after")
    def _one_time(self) -> ScheduledPeak:
        if (self.at_s is None) == (self.at_clock is None):
            raise ValueError("give exactly one of at_s and at_clock")
        return self


class AutoscaleConfig(_Strict):
    """Elastic pool sizing: reactive on queue depth and utilisation, predictive from a schedule."""

    min_nodes: int = Field(1, ge=0, le=64)
    max_nodes: int = Field(4, ge=1, le=64)
    target_queue_per_node: float = Field(8.0, gt=0, description="waiting requests per node to aim for")
    target_utilisation: float = Field(0.8, gt=0, le=1, description="busy slots / capacity to aim for")
    scale_up_cooldown_s: float = Field(10.0, ge=0)
    scale_down_cooldown_s: float = Field(60.0, ge=0)
    interval_s: float = Field(1.0, gt=0)
    window_s: float = Field(5.0, gt=0, description="the signal is averaged over this window")
    schedule: list[ScheduledPeak] = Field(default_factory=list)

    @model_validator(mode="after")
    def _bounds(self) -> AutoscaleConfig:
        if self.min_nodes > self.max_nodes:
            raise ValueError(f"min_nodes ({self.min_nodes}) is above max_nodes ({self.max_nodes})")
        return self


class KubernetesEndpoints(_Strict):
    """Remote nodes found in the Endpoints of a headless Service, watched through the Kubernetes API."""

    service: str = Field(min_length=1, description="the headless Service in front of the pool's pods")
    namespace: str | None = Field(None, description="default: the gateway pod's own namespace, else rushhour")
    port: int | str = Field("http", description="the Service port, by name or number")
    scheme: Literal["http", "https"] = "http"


class PoolConfig(_Strict):
    """One pool of identical model replicas ("GPU nodes").

    Local by default: the gateway starts `nodes` node processes and supervises them. A pool with
    `remote` (node URLs) or `kubernetes` (a headless Service) is served by nodes running elsewhere:
    the gateway polls their readiness and guards them with breakers, but does not start, kill or
    scale them; `nodes` is then ignored."""

    model: Literal["quality", "fast"]
    remote: list[str] = Field(default_factory=list, description="base URLs of nodes started elsewhere (`rushhour node`)")
    kubernetes: KubernetesEndpoints | None = None
    nodes: int = Field(1, ge=0, le=64)
    max_batch_size: int = Field(8, ge=1, le=256)
    max_queue_delay_ms: float = Field(10.0, ge=0, le=10_000)
    max_node_queue: int = Field(256, ge=1)
    batching: Batching | None = Field(
        None, description="dynamic: batches decoded to their longest row; continuous: rows join and leave at every "
                          "decode step; unset: continuous for both bundled models")
    max_batch_tokens: int = Field(
        4096, ge=1, le=1_000_000, description="continuous: source tokens (about 4 characters each) the active rows may hold together")
    max_prefill_tokens: int = Field(
        DEFAULT_PREFILL_TOKENS, ge=0, le=1_000_000,
        description="continuous: encoder token-passes one decode step may run for joining rows (chunked prefill); "
                    "0 runs a joining row's whole encoder in the step that admits it")
    intra_op_threads: int = Field(1, ge=1, le=64)
    warmup_lengths: list[int] = Field(
        default_factory=lambda: [32, 256, 1024],
        description="text lengths a node warms before it is ready: each on CUDA, the shortest on the CPU")
    required: bool = True
    autoscale: AutoscaleConfig | None = None

    @property
    def is_remote(self) -> bool:
        return bool(self.remote) or self.kubernetes is not None

    @model_validator(mode="after")
    def _batching_resolved(self) -> PoolConfig:
        if self.batching is None:
            self.batching = default_batching(self.model)
        if 0 < self.max_prefill_tokens < MIN_PREFILL_TOKENS:
            raise ValueError(f"max_prefill_tokens is {self.max_prefill_tokens}; give 0 (no chunked prefill) "
                             f"or at least {MIN_PREFILL_TOKENS}")
        return self

    @model_validator(mode="after")
    def _remote_consistent(self) -> PoolConfig:
        if self.remote and self.kubernetes is not None:
            raise ValueError("give remote (a static list) or kubernetes (a headless Service), not both")
        for url in self.remote:
            if not url.startswith(("http://", "https://")) or len(url.split("://", 1)[1].strip("/")) == 0:
                raise ValueError(f'remote node "{url}" is not an http:// or https:// URL')
        if len(set(self.remote)) != len(self.remote):
            raise ValueError(f"remote lists a node twice: {self.remote}")
        if self.is_remote and self.autoscale is not None:
            raise ValueError("autoscale sizes local pools only; a remote pool is sized where its nodes run "
                             "(e.g. a HorizontalPodAutoscaler on its Deployment)")
        return self


class CacheConfig(_Strict):
    enabled: bool = True
    max_entries: int = Field(50_000, ge=0)
    max_bytes: int = Field(DEFAULT_CACHE_MAX_BYTES, ge=0, description="L1 memory bound: texts + translations + overhead")
    ttl_s: float = Field(600.0, gt=0)
    stale_ttl_s: float = Field(3600.0, ge=0)
    redis_url: str | None = None


class PriorityClass(_Strict):
    """Admission settings of one priority class (issue: paid first, batch shed first)."""

    rank: int = Field(ge=0)
    max_queue: int = Field(ge=0)
    max_wait_ms: float = Field(gt=0)
    rate_per_tenant: float = Field(gt=0, description="token bucket refill, requests/s")
    burst_per_tenant: float = Field(gt=0)


def _default_classes() -> dict[str, PriorityClass]:
    return {
        "paid": PriorityClass(rank=0, max_queue=512, max_wait_ms=5000, rate_per_tenant=200, burst_per_tenant=400),
        "free": PriorityClass(rank=1, max_queue=256, max_wait_ms=3000, rate_per_tenant=50, burst_per_tenant=100),
        "batch": PriorityClass(rank=2, max_queue=128, max_wait_ms=20000, rate_per_tenant=50, burst_per_tenant=100),
    }


class AdmissionConfig(_Strict):
    classes: dict[str, PriorityClass] = Field(default_factory=_default_classes)
    default_priority: str = "free"
    default_deadline_ms: float = Field(10_000, gt=0)
    early_reject: bool = True
    slots_per_node: int = Field(0, ge=0, description="concurrent requests a node is given; 0 = 2x max_batch_size")

    @model_validator(mode="after")
    def _default_priority_known(self) -> AdmissionConfig:
        if self.default_priority not in self.classes:
            raise ValueError(f'default_priority "{self.default_priority}" is not one of the classes {sorted(self.classes)}')
        return self


class BreakerConfig(_Strict):
    window: int = Field(20, ge=2, description="calls in the sliding window")
    min_calls: int = Field(5, ge=1)
    failure_rate: float = Field(0.5, gt=0, le=1)
    slow_call_ms: float = Field(5000, gt=0)
    slow_call_rate: float = Field(0.8, gt=0, le=1)
    open_s: float = Field(2.0, gt=0)
    half_open_probes: int = Field(3, ge=1)


class RoutingConfig(_Strict):
    """Which tier serves a request: `by_mode` (the mode decides) or `cost_aware` (see placement.py)."""

    policy: Literal["by_mode", "cost_aware"] = "by_mode"
    short_chars: int = Field(200, ge=0, description="cost_aware: auto-mode texts up to this long go to the fast pool")
    cpu_priorities: list[str] = Field(default_factory=lambda: ["batch"])


class JobsConfig(_Strict):
    """Long-document jobs and streams: bounded so that they cannot swallow the gateway."""

    max_chars: int = Field(60_000, ge=1)
    max_jobs: int = Field(1000, ge=1, description="jobs kept; the oldest finished are evicted")
    max_active: int = Field(64, ge=1, description="queued + running jobs and streams; more answer 503")
    reserve_per_rank: float = Field(0.25, ge=0, lt=1, description="share of max_active each lower priority rank may not use")
    max_running: int = Field(16, ge=1, description="jobs and streams translating at once; the rest are queued")
    concurrency: int = Field(8, ge=1, description="segments of one job in flight at once")
    max_bytes: int = Field(64 * 2**20, ge=2**20,
                           description="memory the kept jobs may hold (texts, segments, translations); the oldest finished are evicted")


class ServerConfig(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    pools: dict[str, PoolConfig] = Field(
        default_factory=lambda: {
            "quality": PoolConfig(model="quality", nodes=2, max_batch_size=8, max_queue_delay_ms=10),
            "fast": PoolConfig(model="fast", nodes=1, max_batch_size=16, max_queue_delay_ms=5),
        }
    )
    languages: list[str] = Field(default_factory=lambda: list(DEFAULT_LANGUAGES))
    max_chars: int = Field(5000, ge=1)
    max_body_bytes: int = Field(65_536, ge=1024)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    admission: AdmissionConfig = Field(default_factory=AdmissionConfig)
    breaker: BreakerConfig = Field(default_factory=BreakerConfig)
    routing: RoutingConfig = Field(default_factory=RoutingConfig)
    jobs: JobsConfig = Field(default_factory=JobsConfig)
    node_timeout_s: float = Field(30.0, gt=0, description="upper bound on one gateway->node call")
    restart_backoff_s: float = Field(0.5, ge=0)
    max_restart_backoff_s: float = Field(10.0, ge=0)
    model_cache_dir: Path | None = None
    require_provider: Literal["cuda"] | None = Field(
        None, description='"cuda": a quality node that would not run on CUDA refuses to start (the fast tier is '
                          "INT8 on the CPU by design); unset: CUDA when offered, else CPU")
    state_dir: Path = Field(default_factory=lambda: Path(os.environ.get("RUSHHOUR_STATE_DIR", "~/.rushhour")).expanduser())

    @model_validator(mode="after")
    def _pools_for_each_tier(self) -> ServerConfig:
        if not self.pools:
            raise ValueError("at least one pool is needed")
        if self.require_provider is not None and self.pool_for_tier("quality") is None:
            raise ValueError(f'require_provider "{self.require_provider}" applies to quality pools, and there is none '
                             f"(pools: {', '.join(self.pools)}); the fast tier always runs on the CPU")
        return self

    def pool_for_tier(self, tier: str) -> str | None:
        """The first pool serving `tier`, or None when the cluster has none."""
        return next((name for name, pool in self.pools.items() if pool.model == tier), None)


def _format_error(source: str, exc: ValidationError) -> str:
    return format_validation_errors(source, exc)


def merge_pools_onto_defaults(data: dict) -> dict:
    """A file that tunes one field of a default pool keeps the rest of that pool and the other
    pools; `pools: {name: null}` removes a default pool."""
    pools = data.get("pools")
    if not isinstance(pools, dict):
        return data
    merged = {name: pool.model_dump() for name, pool in ServerConfig().pools.items()}
    for name, value in pools.items():
        if value is None:
            merged.pop(name, None)
        elif isinstance(value, dict) and name in merged:
            merged[name] = {**merged[name], **value}
        else:
            merged[name] = value
    return {**data, "pools": merged}


def read_config_file(path: Path) -> dict:
    """The YAML mapping of a server config file, unvalidated; ConfigError names the file."""
    try:
        data = load_yaml(Path(path).read_text()) or {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the file ({exc.strerror}).") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: is not valid YAML ({yaml_problem(exc)}).") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping, not {type(data).__name__}.")
    return data


def apply_environment(data: dict) -> dict:
    """`RUSHHOUR_REDIS_URL`, when set, is the L2 cache's URL (over `cache.redis_url` in the file, as
    the Kubernetes manifests set it); set but empty, it turns the L2 cache off."""
    if REDIS_ENV not in os.environ:
        return data
    cache = data["cache"] if isinstance(data.get("cache"), dict) else {}
    return {**data, "cache": {**cache, "redis_url": os.environ[REDIS_ENV] or None}}


def load_config(path: Path | None = None, **overrides: Any) -> ServerConfig:
    """Read a YAML config (or none), then the environment (`RUSHHOUR_REDIS_URL`), then CLI
    overrides; raise ConfigError naming file and field."""
    source = str(path) if path else "server config"
    data = apply_environment(merge_pools_onto_defaults(read_config_file(path) if path is not None else {}))
    try:
        config = ServerConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_error(source, exc)) from exc
    return apply_overrides(config, **overrides)


def apply_overrides(
    config: ServerConfig,
    *,
    host: str | None = None,
    port: int | None = None,
    nodes: int | None = None,
    max_batch_size: int | None = None,
    require_provider: str | None = None,
) -> ServerConfig:
    """`--nodes` sizes the quality pool; `--max-batch-size` applies to every pool;
    `--require-provider cuda` sets `require_provider`."""
    update = config.model_copy(deep=True)
    if host is not None:
        update.host = host
    if port is not None:
        update.port = port
    if nodes is not None:
        name = update.pool_for_tier("quality") or next(iter(update.pools))
        update.pools[name].nodes = nodes
    if max_batch_size is not None:
        for pool in update.pools.values():
            pool.max_batch_size = max_batch_size
    data = update.model_dump()
    if require_provider is not None:
        data["require_provider"] = require_provider
    try:
        return ServerConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_error("command-line options", exc)) from exc
