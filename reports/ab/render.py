"""Rendering an A/B document: ab.json, ab.md (for a pull request), ab.html (with the per-trial
chart) and junit.xml (one test case per comparison, plus the generator's validity)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

from rushhour.kernel import contract
from rushhour.kernel.atomic import write_json_atomic, write_text_atomic
from rushhour.kernel.safetext import markdown_text
from rushhour.reports.ab.document_model import AbDocument
from rushhour.reports.charts.plotting import Chart, encode, missing_chart
from rushhour.reports.render.format import ms, num, pct
from rushhour.reports.render.pages import template_environment

ARM_STYLE = {"baseline": ("#1565c0", "o"), "candidate": ("#ef6c00", "s")}

__all__ = ["render_markdown", "render_junit", "trial_chart", "write_ab_files"]


def trial_chart(doc: dict[str, Any]) -> Chart:
    """Each trial's percentile for both arms over time; failures beyond it drawn at the top."""
    import matplotlib.pyplot as plt

    trials = doc["trials"]
    if not trials:
        return missing_chart("ab_trials", "per-trial percentile", "No trial was run, so there is nothing to draw.")
    values = np.array([t["value_ms"] if t["value_ms"] is not None else np.nan for t in trials], dtype=float)
    mid = np.array([(t["start_s"] + t["end_s"]) / 2.0 for t in trials])
    top = float(np.nanmax(values)) * 1.15 if np.isfinite(values).any() else 1.0
    figure, axes = plt.subplots(figsize=(9.0, 3.2))
    for arm, (color, marker) in ARM_STYLE.items():
        mine = np.array([t["arm"] == arm for t in trials])
        axes.plot(mid[mine], values[mine], marker, color=color, label=arm, linestyle="none")
        failed = mine & np.array([t["failed"] > 0 for t in trials])
        if failed.any():
            axes.plot(mid[failed], np.full(failed.sum(), top), "x", color=color, label=f"{arm}: slice with failures")
    axes.set_xlabel("run time (s)")
    axes.set_ylabel(f"P{trials[0]['percentile']:g} of a slice's answers (ms)")
    axes.set_ylim(bottom=0)
    axes.legend(loc="upper right", fontsize=8)
    axes.grid(alpha=0.3)
    return Chart("ab_trials", "per-trial percentile", encode(figure))


def render_html(doc: dict[str, Any], chart: Chart) -> str:
    env = template_environment()
    env.filters["ms"] = ms
    return env.get_template("ab.html.j2").render(d=doc, chart=chart, design=design_text(doc["design"]))


def design_text(design: dict[str, Any]) -> str:
    """How the run interleaved its arms, in words: slices with random arms, or ABBA trials."""
    trials, seed = int(design.get("trials") or 0), design.get("seed")
    if design.get("interleave") == "requests":
        return (f"{trials // 2} slices of {num(design.get('trial_s'), 2)} s, each request to an arm drawn at random "
                f"(seed {seed})")
    return f"{trials} trials of {num(design.get('trial_s'), 2)} s in ABBA blocks (order from seed {seed})"


def render_markdown(doc: dict[str, Any]) -> str:
    """The verdict sentence, the comparison table and the reasons, fit for a pull-request comment."""
    md = markdown_text  # names, targets and reasons come from files: kept inside their line and cell
    lines = [f"## A/B: {md(doc['scenario'])}", "", f"**{md(doc['sentence'])}**", "",
             f"Baseline {md(doc['targets'].get('baseline', ''))}, candidate {md(doc['targets'].get('candidate', ''))}; "
             f"{design_text(doc['design'])}; "
             f"threshold x{doc['threshold']:g}{_own_thresholds(doc)}; {doc['tests']} tests, a regression shown at "
             f"{pct(1 - (1 - doc['test_confidence']) / 2)} one-sided each (their share of the family's error), a pass at "
             f"{pct(doc.get('pass_confidence', 1 - (1 - doc['test_confidence']) / 2))} one-sided each (every test must "
             "show it).", "",
             f"Failure shares must be shown not worse by more than {100 * doc['error_margin']:.2f} percentage points. "
             f"Runner: {md(doc['runner'])}.", "",
             "| population: SLO | night percentile of answered requests | baseline | candidate | ratio [interval] "
             "| MDE | pairs | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for g in doc["groups"]:
        lines.append(f"| {md(g['name'])} | P{g['percentile']:g} | {ms(g['baseline_ms'])} | {ms(g['candidate_ms'])} | "
                     f"{g['ratio_text']} | {g['mde_text']} | {g['pairs']} | {g['verdict'].replace('_', ' ')} |")
    lines += ["", "Failures:", *[f"- {md(row['population'])}: {md(row['text'])}." for row in doc.get("errors", [])]]
    cache = doc.get("cache") or {}
    if cache.get("reported"):
        lines += ["", f"Answered from cache: baseline {pct(cache['baseline'])}, candidate {pct(cache['candidate'])}."]
    lines += ["", "Why:", *[f"- {md(g['name'])}: {md(g['reason'])}." for g in doc["groups"]]]
    if not doc["generator"]["valid"]:
        lines += ["", "Load generator: " + "; ".join(doc["generator"]["reasons"]) + "."]
    lines += ["", "Each slice's own percentile of its answers in run order (ms; A baseline, B candidate; a slice's "
              "figure, not the night's):", "",
              " ".join(f"{'A' if t['arm'] == 'baseline' else 'B'}:{_trial_value(t['value_ms'])}"
                       for t in doc["trials"] if t["attempted"])]
    return "\n".join(lines) + "\n"


def _own_thresholds(doc: dict[str, Any]) -> str:
    own = doc.get("slo_thresholds") or {}
    return f" ({', '.join(f'{markdown_text(k)} x{v:g}' for k, v in own.items())})" if own else ""


def _trial_value(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def render_junit(doc: dict[str, Any]) -> str:
    """One test case per comparison (regression: failure; inconclusive: error) and the generator."""
    suite = ET.Element("testsuite", name=f"rushhour.ab.{doc['scenario']}")
    for g in doc["groups"]:
        case = ET.SubElement(suite, "testcase", classname="ab", name=g["name"])
        if g["verdict"] != "no_regression":
            tag = "failure" if g["verdict"] == "regression" else "error"
            ET.SubElement(case, tag, message=g["reason"]).text = g["reason"]
    case = ET.SubElement(suite, "testcase", classname="generator", name="load generator kept up")
    if not doc["generator"]["valid"] or doc["aborted"]:
        text = "; ".join(doc["aborted"] + doc["generator"]["reasons"])
        ET.SubElement(case, "error", message=text).text = text
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(c.find("failure") is not None for c in cases)))
    suite.set("errors", str(sum(c.find("error") is not None for c in cases)))
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def write_ab_files(root: Path, doc: dict[str, Any]) -> None:
    """ab.json (strict JSON), ab.md, ab.html and junit.xml into the results folder."""
    AbDocument.model_validate(doc)  # a malformed field is refused by name before anything is written
    write_json_atomic(doc, root / contract.AB_JSON_FILE)
    write_text_atomic(render_markdown(doc), root / contract.AB_MD_FILE)
    write_text_atomic(render_html(doc, trial_chart(doc)), root / contract.AB_HTML_FILE)
    write_text_atomic(render_junit(doc), root / contract.JUNIT_FILE)
