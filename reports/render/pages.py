"""The rendering step: summary dict (+ charts) in, report.html / report.md / junit.xml out."""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from rushhour.kernel.atomic import write_text_atomic
from rushhour.kernel.contract import JUNIT_FILE, REPORT_HTML_FILE, REPORT_MD_FILE
from rushhour.kernel.safetext import markdown_text
from rushhour.reports.charts.plotting import Chart
from rushhour.reports.estimate.strata import METHOD as STRATIFIED
from rushhour.reports.measures.harness import leak_audit_failure
from rushhour.reports.render.format import DASH, budget, format_sig, ms, num, pct, secs, usd
from rushhour.reports.schema import LATENCY_KINDS

_num, _pct, _usd = num, pct, usd
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""What XML 1.0 allows in no document: C0 controls but tab, newline and CR; surrogates; U+FFFE/F."""


def xml_text(text: str) -> str:
    """`text` fit for an XML attribute or element: each character XML forbids written as its Python
    escape (`\\x1b`, `\\ud800`), so junit.xml stays well-formed and the reader still sees what was there."""
    return _XML_FORBIDDEN.sub(lambda match: repr(match.group())[1:-1], text)


def _measured(slo: dict[str, Any]) -> str:
    """An SLO's measured value in its own unit (ms for latency, % for shares)."""
    if slo["kind"] in LATENCY_KINDS:
        return f"{_num(slo['measured'], 1)} ms"
    if slo["kind"] == "goodput":
        return f"{_num(slo['measured'], 2)} req/s"
    if slo["kind"] == "drift":
        return str(slo.get("measured_text") or DASH)
    return _pct(slo["measured"])


def _good(slo: dict[str, Any]) -> str:
    """A latency SLO's good-events share against what it needs; "—" for other kinds."""
    if slo["kind"] == "goodput":
        return f"{_pct2(slo.get('good_share'))} of attempts good"
    if slo["kind"] not in LATENCY_KINDS:
        return DASH
    return f"{_pct2(slo.get('good_share'))} good (needs {_pct2(slo.get('good_objective'))})"


def _pct2(value: float | None) -> str:
    return DASH if value is None else f"{100 * value:.2f}%"


def _ok_only(slo: dict[str, Any]) -> str:
    """A latency SLO's percentile over successful requests only, with their count."""
    if slo["kind"] not in LATENCY_KINDS:
        return DASH
    return f"{_num(slo.get('measured_ok_only_ms'), 1)} ms (n={slo.get('samples_ok', 0)})"


def _ci(slo: dict[str, Any]) -> str:
    """The interval's two ends; "" where the data could not carry one (the shortfall says why)."""
    low, high = slo["ci"]
    if slo["kind"] in ("goodput", "drift"):
        return DASH
    if low is None and high is None:
        return ""
    if slo["kind"] in LATENCY_KINDS:
        return f"{_num(low, 1)}, {_num(high, 1)}"
    return f"{_pct(low)}, {_pct(high)}"


def _basis(slo: dict[str, Any]) -> str:
    """What an SLO's interval rests on, in words: "batch means over blocks of 512 requests: as sure
    as 1,234 independent requests (of 10,000)"; "" where the row names none or the data could not
    carry the interval (`_shortfall` says so instead)."""
    basis = slo.get("ci_basis")
    if not basis or basis.get("note"):
        return ""
    worth = f"as sure as {basis['effective_samples']:,.0f} independent requests (of {slo['samples']:,})"
    if basis["method"] == STRATIFIED:
        return f"batch means within each stretch of steady load (phases, fault windows), combined: {worth}"
    if basis["method"] != "batch means":
        return f"too few requests, or none that differed, to measure dependence; counted as independent: {worth}"
    block = int(basis["block_requests"])
    return f"batch means over blocks of {block:,} request{'' if block == 1 else 's'}: {worth}"


def _shortfall(slo: dict[str, Any]) -> str:
    """Why an SLO's interval is not trusted: the statistics core's sentence, else "too few samples"."""
    basis = slo.get("ci_basis") or {}
    return str(basis.get("note") or "too few samples")


@functools.cache
def template_environment(*, markdown: bool = False) -> Environment:
    """Jinja environment over reports/templates with the report's number filters; for Markdown
    templates every printed value goes through `markdown_text` (HTML ones are autoescaped).
    One of each per process, so a template is compiled once however many reports it renders."""
    env = Environment(loader=PackageLoader("rushhour.reports", "templates"),
                      autoescape=select_autoescape(["html", "html.j2"]), finalize=markdown_text if markdown else None,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(sig=format_sig, num=_num, pct=_pct, usd=_usd, measured=_measured, ci=_ci,
                       good=_good, ok_only=_ok_only, secs=secs, ms=ms, budget=budget, basis=_basis,
                       shortfall=_shortfall)
    return env


def render_html(summary: dict[str, Any], charts: Sequence[Chart]) -> str:
    """One self-contained HTML page: inline CSS, charts as data: URIs, no external assets."""
    return template_environment().get_template("report.html.j2").render(s=_with_defaults(summary),
                                                               charts=charts)


def render_markdown(summary: dict[str, Any]) -> str:
    """A short summary fit for a pull-request comment."""
    return template_environment(markdown=True).get_template("report.md.j2").render(s=_with_defaults(summary))


def _with_defaults(summary: dict[str, Any]) -> dict[str, Any]:
    return {"comparison": None, "documents": None, "streaming": None, "goodput": None, "findings": [], "fault_period_s": None, **summary}


def render_junit(summary: dict[str, Any]) -> str:
    """JUnit XML: one testcase per SLO and per fault recovery, the generator's validity, the leak audit."""
    suite = ET.Element("testsuite", name=xml_text(f"rushhour.{summary['scenario']['name']}"))
    for slo in summary["slos"]:
        _case(suite, "slo", slo["name"], None if slo["met"] else _slo_failure(slo))
    for fault in summary["faults"]:
        _case(suite, "fault_recovery", fault["name"], _fault_failure(fault))
    generator = summary["generator"]
    _case(suite, "generator", "load generator kept up",
          None if generator["valid"] else "; ".join(generator["reasons"]) + ".", error=True)
    if summary.get("leak_audit") is not None:
        _case(suite, "harness", "nothing left behind", leak_audit_failure(summary["leak_audit"]), error=True)
    comparison = summary.get("comparison")
    if comparison:
        _case(suite, "regression", "p99 vs baseline",
              comparison["reason"] if comparison["verdict"] == "regression" else None)
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def _slo_failure(slo: dict[str, Any]) -> str:
    if slo["kind"] in LATENCY_KINDS:
        return (f"{slo['name']} missed: {_good(slo)} of {slo['samples']} attempts, objective "
                f"{slo['objective_text']}; over all attempts {_measured(slo)}, successful requests "
                f"only {_ok_only(slo)}; budget consumed {_pct(slo['budget_consumed'])}.")
    return (f"{slo['name']} missed: measured {_measured(slo)}, objective {slo['objective_text']}, "
            f"budget consumed {_pct(slo['budget_consumed'])}.")


def _fault_failure(fault: dict[str, Any]) -> str | None:
    if not fault["recovered"] and fault.get("recovery_unclear"):
        return f"{fault['name']}: its recovery could not be told: {fault['recovery_unclear']}."
    if not fault["recovered"]:
        return f"{fault['name']} did not recover within SLO before the run ended."
    state = fault.get("steady_state")
    if state and (state["deviated"] or state["after_met"] is False):
        return f"{fault['name']}: the steady-state hypothesis was not met after the experiment."
    return None


def _case(suite: ET.Element, classname: str, name: str, failure: str | None,
          error: bool = False) -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=xml_text(name))
    if failure is not None:
        failure = xml_text(failure)
        ET.SubElement(case, "error" if error else "failure", message=failure).text = failure


def write_reports(root: Path, summary: dict[str, Any], charts: Sequence[Chart]) -> None:
    """Write report.html, report.md and junit.xml beside the results."""
    write_text_atomic(render_html(summary, charts), root / REPORT_HTML_FILE)
    write_text_atomic(render_markdown(summary), root / REPORT_MD_FILE)
    write_text_atomic(render_junit(summary), root / JUNIT_FILE)
