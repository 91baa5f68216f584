"""How report.html and report.md write an SLO's interval."""

from __future__ import annotations

from rushhour.reports.estimate.strata import METHOD
from rushhour.reports.render.pages import _basis, _ci


def test_pages_a_declined_interval_prints_no_empty_brackets() -> None:
    declined = {"kind": "latency", "ci": [None, None]}
    assert _ci(declined) == ""  # the templates then print no brackets; the shortfall sentence says why
    shown = {"kind": "latency", "ci": [90.0, 120.5]}
    assert _ci(shown) == "90.0, 120.5"
    share = {"kind": "availability", "ci": [0.976, 1.0]}
    assert _ci(share) == "97.6%, 100.0%"


def test_pages_a_basis_names_its_block_length_in_words() -> None:
    basis = {"method": "batch means", "block_requests": 1, "effective_samples": 182.0}
    assert _basis({"samples": 185, "ci_basis": basis}) == (
        "batch means over blocks of 1 request: as sure as 182 independent requests (of 185)")
    longer = {"samples": 185, "ci_basis": {**basis, "block_requests": 64}}
    assert _basis(longer).startswith("batch means over blocks of 64 requests:")


def test_pages_a_basis_within_stretches_of_steady_load_says_so() -> None:
    basis = {"method": METHOD, "block_requests": 128, "effective_samples": 86.4}
    assert _basis({"samples": 10_000, "ci_basis": basis}) == (
        "batch means within each stretch of steady load (phases, fault windows), combined: "
        "as sure as 86 independent requests (of 10,000)")
