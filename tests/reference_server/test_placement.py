"""Placement policies: by_mode keeps the mode's pool; cost_aware moves cheap work to the CPU pool."""

from __future__ import annotations

import pytest

from rushhour.reference_server.config import RoutingConfig
from rushhour.reference_server.gateway.api import TranslateRequest
from rushhour.reference_server.gateway.placement import choose_tier
from tests.support.server import RunningServer

SHORT = "Short and sweet."
LONG = "A long paragraph that a customer reads closely, so its quality matters to them. " * 4
COST = RoutingConfig(policy="cost_aware", short_chars=200, cpu_priorities=["batch"])


def _req(text: str, mode: str = "auto") -> TranslateRequest:
    return TranslateRequest(text=text, source_lang="en", target_lang="de", mode=mode)


@pytest.mark.parametrize(("mode", "tier"), [("auto", "quality"), ("quality", "quality"), ("fast", "fast")])
def test_placement_by_mode_follows_the_mode(mode: str, tier: str) -> None:
    assert choose_tier(RoutingConfig(), _req(SHORT, mode), "batch", has_fast_pool=True) == tier


@pytest.mark.parametrize(
    ("text", "mode", "priority", "tier"),
    [
        (SHORT, "auto", "paid", "fast"),       # short: cheap on the CPU
        (LONG, "auto", "batch", "fast"),       # low priority: has time to spare
        (LONG, "auto", "paid", "quality"),     # long and latency-sensitive: GPU
        (LONG, "fast", "paid", "fast"),        # the caller asked for fast
        (SHORT, "quality", "batch", "quality"),  # the caller asked for quality
    ],
)
def test_placement_cost_aware_routes_cheap_work_to_cpu(text: str, mode: str, priority: str, tier: str) -> None:
    assert choose_tier(COST, _req(text, mode), priority, has_fast_pool=True) == tier


def test_placement_cost_aware_stays_on_quality_without_a_fast_pool() -> None:
    assert choose_tier(COST, _req(SHORT), "batch", has_fast_pool=False) == "quality"


def test_placement_short_chars_bound_is_inclusive() -> None:
    routing = RoutingConfig(policy="cost_aware", short_chars=len(SHORT), cpu_priorities=[])
    assert choose_tier(routing, _req(SHORT), "paid", has_fast_pool=True) == "fast"
    assert choose_tier(routing, _req(SHORT + "!"), "paid", has_fast_pool=True) == "quality"


@pytest.mark.slow
def test_placement_live_cost_aware_reports_the_serving_model(server_factory) -> None:
    server: RunningServer = server_factory({"routing": {"policy": "cost_aware", "short_chars": 50}, "cache": {"enabled": False}})
    short = server.translate(SHORT, priority="paid").json()
    batch = server.translate(LONG, priority="batch").json()
    paid = server.translate(LONG, priority="paid").json()
    assert (short["model"], short["node"][:5]) == ("fast", "fast-")
    assert (batch["model"], batch["node"][:5]) == ("fast", "fast-")
    assert (paid["model"], paid["node"][:8]) == ("quality", "quality-")
    # With the fast pool gone, short auto work goes back to the GPU pool instead of failing.
    assert server.admin("POST", "/admin/pools/fast/scale", {"nodes": 0}).status_code == 200
    again = server.translate("Another short one.", priority="paid").json()
    assert again["model"] == "quality" and again["degraded"] is False
