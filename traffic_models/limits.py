"""How much a schedule may hold: checked from the integrated rate before a single arrival is drawn."""

from __future__ import annotations

import math

from rushhour.traffic_models.errors import TrafficModelError

MAX_REQUESTS = 200_000_000
"""The most requests one run's schedule may hold.

The 24 h soak (scenarios/soak-24h.yaml, 1,000 req/s) holds about 86.4 million; this is 2.3 times
that. The chunked writer (`rushhour.traffic_models.chunked`) draws a schedule in bounded memory at about
1.6 µs a row (both passes), so the limit takes about five minutes to draw; a whole schedule in
memory (`rushhour traffic`, a plan's `schedule`) peaks near 115 bytes a row, about 23 GB here.
Past it a typo in a rate or a duration (1e12 for 1e2, "99999999h") would otherwise ask numpy for
terabytes or walk the random stream for hours.
"""

MAX_REQUEST_CHARS = 8_000_000
"""The longest text one request may carry: eight million characters, about two million tokens,
past the longest context windows served. A schedule keeps sizes as 32-bit integers (up to
2,147,483,647), so a size past this cap is refused where it is read, never wrapped to a negative
number or handed to the load generator to build a text of gigabytes."""

MAX_OUTPUT_TOKENS = 2_000_000
"""The most output tokens one request may ask for (a trace's logged output length, a mix's
`max_tokens`), for the same reasons."""

MAX_DURATION_S = 366 * 86_400.0
"""The longest run, start clock or replayed log rushhour accepts: a year. Published traces span a
week (Azure LLM inference) to a few months (BurstGPT); a soak runs a day."""


def check_request_count(expected: float, *, what: str) -> None:
    """Refuse a schedule whose expected size (the integral of its rate) passes MAX_REQUESTS.

    `what` says which traffic it is, e.g. 'model "promo-day" for 60 s at rate scale 2'.
    """
    if math.isfinite(expected) and expected <= MAX_REQUESTS:
        return
    raise TrafficModelError(
        f"the schedule would hold about {expected:.1e} requests ({what}); rushhour draws at most "
        f"{MAX_REQUESTS:,} per run: lower the rate or the duration."
    )


def check_duration(name: str, value: float) -> None:
    """Refuse a run length or clock time past MAX_DURATION_S (a year)."""
    if value > MAX_DURATION_S:
        raise TrafficModelError(
            f"{name} is {value:.6g} s, past the {MAX_DURATION_S:.0f} s (366 days) rushhour supports."
        )
