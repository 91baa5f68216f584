"""rushhour reports: results directory -> SLO verdicts, fault impact, cost, HTML/JSON/JUnit/Markdown.

Sub-packages from the bottom up (a contract keeps the order):

    rundata/           one run's results folder read into typed frames
    estimate/          the statistics core: every interval, test and effective sample size
    measures/          the figures of one run: SLOs, burn, faults, goodput, cost, warm-up, drift
    charts/            which charts a run shows, their series and the drawing
    render/            report.html, report.md and junit.xml from a summary; how numbers are written
    templates/         the Jinja2 templates of those pages
    gate/              the regression gate of `rushhour compare`
    capacity/          a capacity step's verdict, capacity.json's model and capacity.html
    summary/           summary.json: the aggregation, its typed model and the findings
    ab/                the judgement of an A/B run and its ab.json, ab.md, ab.html
    grafana/           the live dashboard and an example Prometheus scrape config

At the root, calling them:

    build.py           `build_reports`: a results directory into every report file
    large.py           the report of a run too large to load whole, from a narrow projection
    variants.py        the same drill under several server configs, side by side
    variants_model.py  comparison.json as one typed model
    schema.py          what a scenario file writes to configure its report: SLOs and prices

`build_reports` is imported lazily so that `from rushhour.reports.schema import SloSpec` (the scenario
loader's import) does not pull in matplotlib.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rushhour.reports.build import build_reports

__all__ = ["build_reports"]


def __getattr__(name: str) -> Any:
    if name == "build_reports":
        from rushhour.reports.build import build_reports

        return build_reports
    raise AttributeError(f"module 'reports' has no attribute {name!r}")
