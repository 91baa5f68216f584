"""summary.json's `cost` section as a typed model.

`rushhour.reports.measures.cost.compute_cost` writes it in three shapes: no cost model (the character counts and a
reason), no node counts (the price list's source and date too), or known (dollars per pool, per
priority, per mode and during faults); `rushhour.reports.measures.tokencost` adds `tokens` to a known one. The
fields are declared in the order the producers write them, so one model holds all three, its
optional fields absent where the producer left them out.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ClassTokenPrice", "CostSection", "FaultCost", "ModeCost", "PoolCost", "PoolTokenPrice",
           "PriorityCost", "TokenCost", "TokenDirection", "TokenPrice"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, serialize_by_alias=True)


class PoolCost(_Part):
    """One pool's node-seconds and dollars, and the characters it served and computed."""

    pool: str
    kind: str | None
    node_seconds: float
    usd_per_node_hour: float | None
    usd: float | None
    chars_served: int
    chars_computed: int


class PriorityCost(_Part):
    """The dollars of one priority, each pool's split by the characters it served for it."""

    priority: str
    chars: int
    usd: float
    usd_per_1k_chars: float | None


class ModeCost(_Part):
    """The dollars of one mode, split as for a priority."""

    mode: str
    chars: int
    usd: float
    usd_per_1k_chars: float | None


class FaultCost(_Part):
    """What the time inside fault windows cost, overlapping windows counted once."""

    usd: float
    chars: int
    usd_per_1k_chars: float | None


class TokenPrice(_Part):
    """Dollars per million tokens with the delta-method interval (`rushhour.reports.measures.tokencost.token_price`),
    the method behind it and the effective number of answers it stands on."""

    tokens: int
    usd: float
    usd_per_1m: float | None
    ci: list[float | None]
    method: str | None = None
    effective_answers: float | None = None


class _PoolName(_Part):
    pool: str


class _ClassName(_Part):
    label: str = Field(alias="class")


class PoolTokenPrice(TokenPrice, _PoolName):
    """A pool's price per million tokens. (Its name is written first: pydantic orders the fields of
    the last base first.)"""


class ClassTokenPrice(TokenPrice, _ClassName):
    """A priority's or phase's price per million tokens (written under the key `class`, first); its
    interval is its pools' (`method` says so), so it has no effective number of answers of its own."""


class TokenDirection(_Part):
    """Output or input tokens: a reason when the protocol reported none, else the prices."""

    known: bool
    reason: str | None
    confidence: float | None = None
    whole: TokenPrice | None = None
    by_pool: list[PoolTokenPrice] | None = None
    by_priority: list[ClassTokenPrice] | None = None
    by_phase: list[ClassTokenPrice] | None = None


class TokenCost(_Part):
    """`cost.tokens`: the prices per million output and input tokens."""

    output: TokenDirection
    input: TokenDirection


class CostSection(_Part):
    """Dollars per thousand characters (`rushhour.reports.measures.cost.compute_cost`); `known` False with a `reason`."""

    known: bool
    total_usd: float | None
    chars: int
    chars_served: int
    chars_computed: int
    usd_per_1k_chars: float | None
    usd_per_1k_chars_served: float | None
    usd_per_1k_chars_computed: float | None
    window_s: list[float | None]
    by_pool: list[PoolCost]
    source: str | None = None
    date: str | None = None
    managed_api_usd_per_1k_chars: float | None = None
    node_seconds: float | None = None
    unpriced_pools: list[str] | None = None
    vs_managed_ratio: float | None = None
    reason: str | None
    by_priority: list[PriorityCost] | None = None
    by_mode: list[ModeCost] | None = None
    during_faults: FaultCost | None = None
    tokens: TokenCost | None = None
