"""junit.xml stays well-formed whatever characters an SLO name, fault name or reason carries.

The attack: a scenario (or a results folder from elsewhere) names an SLO with a NUL or an escape
character, or a reason carries a lone surrogate from a target's answer. ElementTree writes such
characters as they are, and XML 1.0 forbids them: the CI system's JUnit parser rejected the whole
file, so every verdict in it was lost. Each forbidden character is written as its Python escape;
the file parses back and holds the same cases, failures and errors as with plain names.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from rushhour.reports.render.pages import render_junit, xml_text

HOSTILE = "p99\x00\x1b[31m\x08\x0b\x0c\x1f\ud800\ufffe\tend\nline\r"
"""Every kind XML forbids, between the three controls it allows (tab, newline, CR)."""


def _summary(slo_name: str, reason: str) -> dict[str, Any]:
    slos = [{"name": slo_name, "met": True, "kind": "availability"},
            {"name": f"{slo_name}-missed", "met": False, "kind": "availability", "measured": 0.9,
             "objective_text": ">= 99%", "budget_consumed": 3.0}]
    faults = [{"name": f"kill{slo_name}", "recovered": False, "recovery_unclear": reason}]
    generator = {"valid": False, "reasons": [reason]}
    return {"scenario": {"name": slo_name}, "slos": slos, "faults": faults, "generator": generator}


def _parsed(summary: dict[str, Any]) -> ET.Element:
    return ET.fromstring(render_junit(summary).encode("utf-8"))


def test_junit_with_forbidden_characters_parses_back_with_every_verdict() -> None:
    plain = _parsed(_summary("p99", "worker 1 lost"))
    hostile = _parsed(_summary(HOSTILE, f"worker 1 lost {HOSTILE}"))
    for key in ("tests", "failures", "errors"):
        assert hostile.get(key) == plain.get(key)
    assert (plain.get("tests"), plain.get("failures"), plain.get("errors")) == ("4", "2", "1")
    cases = list(hostile.iter("testcase"))
    assert [c.get("classname") for c in cases] == [c.get("classname") for c in plain.iter("testcase")]
    assert [c.find("failure") is not None for c in cases] == [False, True, True, False]
    assert cases[0].get("name") == xml_text(HOSTILE)


def test_junit_writes_each_forbidden_character_as_its_escape_and_keeps_the_rest() -> None:
    shown = xml_text(HOSTILE)
    assert shown.startswith("p99\\x00\\x1b[31m\\x08\\x0b\\x0c\\x1f\\ud800\\ufffe\t")
    assert shown.endswith("\tend\nline\r")
    assert xml_text("plain: ü, 漢字, 🚦") == "plain: ü, 漢字, 🚦"
    reason = _parsed(_summary("p99", f"lost {HOSTILE}")).find("testcase/error")
    assert reason is not None and reason.text is not None and "lost p99\\x00\\x1b" in reason.text
