"""The cost schema a scenario file writes; scenarios/spec.py imports `CostModel` from here."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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
