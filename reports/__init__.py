"""rushhour reports: results directory -> SLO verdicts, fault impact, cost, HTML/JSON/JUnit/Markdown.

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
