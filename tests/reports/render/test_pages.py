"""How report.html and report.md write an SLO's interval."""

from __future__ import annotations

from rushhour.reports.render.pages import _ci


def test_pages_a_declined_interval_prints_no_empty_brackets() -> None:
    declined = {"kind": "latency", "ci": [None, None]}
    assert _ci(declined) == ""  # the templates then print no brackets; the shortfall sentence says why
    shown = {"kind": "latency", "ci": [90.0, 120.5]}
    assert _ci(shown) == "90.0, 120.5"
    share = {"kind": "availability", "ci": [0.976, 1.0]}
    assert _ci(share) == "97.6%, 100.0%"
