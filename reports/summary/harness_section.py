"""The summary sections that repeat what the run recorded about itself, as typed models.

`environment` is `rushhour.reports.measures.environment.describe_environment` (the machine facts of the
`run_start` event, then the server's providers and batching, then the run's own settings); a fact
nobody recorded reads "unknown". `leak_audit` and `scraper` are `rushhour.reports.measures.harness.harness_checks`:
the last `leak_audit` event (or `leak_audit.json` when the event is missing) and the last
`scraper` event with the count and first of the `scraper_error` events. Each model writes its
fields in the order its producer does; fields an event may lack (an event written by hand or
by another tool may carry no `wall` or `source`) are optional and stay absent from summary.json
when absent from the event.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Tag

__all__ = ["AuditFinding", "AuditSkip", "EnvironmentFacts", "FirstScrapeError", "LeakAuditEvent",
           "LeakAuditRecord", "LeakAuditSection", "ScraperHealth"]

Unknown = Literal["unknown"]
"""What a fact reads when the run did not record it."""


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EnvironmentFacts(_Part):
    """Where the run happened: the machine (`rushhour.scenarios.run.envinfo.machine_facts`, recorded by the
    drill in `run_start`), what the server ran on, and the run's seed, target and scales."""

    cpu_model: str
    cpu_cores: int | None | Unknown
    """None where the operating system does not say."""
    gpu: str
    memory_gb: float | Unknown
    os: str
    python: str
    packages: dict[str, str] | Unknown
    """Each package's version, or "not installed"."""
    git_commit: str | None
    """None when the drill ran outside a git checkout."""
    execution_provider: str
    batching: str
    seed: int | None | Unknown
    target: str
    processes: int | Unknown
    time_scale: float | Unknown
    rate_scale: float | None | Unknown
    fault_lease_s: float | str
    """The lease a held fault gets, or the sentence saying why it could not be read."""


class AuditSkip(_Part):
    """A check the leak audit could not do, and why."""

    check: str
    reason: str


class AuditFinding(_Part):
    """Something the audit found left behind: its kind (fault, node, redis, kubernetes, process,
    unverified), where, and a sentence."""

    kind: str
    target: str
    detail: str


class LeakAuditEvent(_Part):
    """The audit as the `leak_audit` event tells it: the event log's time fields first."""

    t_s: float
    wall: str | None = None
    clean: bool
    checked: list[str]
    skipped: list[AuditSkip]
    findings: list[AuditFinding]
    actions: list[str]
    """What the audit did about its findings (a last reset of the target)."""


class LeakAuditRecord(_Part):
    """The audit as `leak_audit.json` holds it, read when the event is missing: the same fields,
    its time last."""

    clean: bool
    checked: list[str]
    skipped: list[AuditSkip]
    findings: list[AuditFinding]
    actions: list[str]
    t_s: float | None


def _audit_shape(value: Any) -> str:
    """leak_audit.json writes `t_s` last; the event log writes it before the audit's fields."""
    if isinstance(value, BaseModel):
        return "record" if isinstance(value, LeakAuditRecord) else "event"
    keys = list(value) if isinstance(value, dict) else []
    return "record" if keys[-1:] == ["t_s"] else "event"


LeakAuditSection = Annotated[Annotated[LeakAuditEvent, Tag("event")] | Annotated[LeakAuditRecord, Tag("record")],
                             Discriminator(_audit_shape)]
"""What the end-of-drill leak audit found (`rushhour.reports.measures.harness`), from the event or the file."""


class FirstScrapeError(_Part):
    """The first `scraper_error` event: which endpoint failed, why, and when."""

    endpoint: str | None
    reason: str | None
    t_s: float | None


class ScraperHealth(_Part):
    """How often the drill's `/v1/status` scraper failed: its `scraper` event (absent when the run
    has only errors), then the count of `scraper_error` events and the first of them."""

    t_s: float | None = None
    wall: str | None = None
    source: str | None = None
    samples: int | None = None
    errors: dict[str, int] | None = None
    """Failures per endpoint."""
    failed: int | None = None
    error_events: int
    first_error: FirstScrapeError | None = None
