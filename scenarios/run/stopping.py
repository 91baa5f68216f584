"""Stop conditions: end a drill early when the service has clearly failed for a while."""

from __future__ import annotations

from collections.abc import Sequence

from rushhour.scenarios.run.live.progress import RunningTally
from rushhour.scenarios.spec.model import StopCondition

__all__ = ["stop_reason"]


def stop_reason(tally: RunningTally, conditions: Sequence[StopCondition], now_s: float) -> str | None:
    """The first stop condition that holds now, as a sentence; None while all is well."""
    for cond in conditions:
        if now_s < cond.for_s:
            continue
        rate = tally.error_rate(now_s, cond.for_s)
        if rate is not None and rate > cond.error_rate_over:
            return (f"error rate {rate:.0%} over the last {cond.for_s:g} s is above the "
                    f"stop condition's {cond.error_rate_over:.0%}")
    return None
