"""benchmarks.gate_nights: the plan is fixed by the seed, nights are kept as they end, bounds are exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.gate_nights import clopper_pearson_lower, markdown, parse, plan, read_nights, summarise


def test_plan_holds_every_night_asked_for_in_an_order_fixed_by_the_seed() -> None:
    args = parse(["--same", "3", "--cpu", "2", "--cpu-small", "0", "--fail-same", "1", "--fail-slow", "1"])
    nights = plan(args)
    assert sorted(nights) == sorted(["same"] * 3 + ["cpu"] * 2 + ["fail-same", "fail-slow"])
    assert plan(args) == nights and plan(parse(["--seed", "2", "--same", "3", "--cpu", "2"])) != plan(
        parse(["--seed", "3", "--same", "3", "--cpu", "2"]))


def test_clopper_pearson_lower_bound_of_thirty_of_thirty_is_ninety_point_five() -> None:
    assert clopper_pearson_lower(30, 30) == pytest.approx(0.05 ** (1 / 30))  # 0.905
    assert clopper_pearson_lower(0, 30) == 0.0


def test_summary_and_table_keep_every_night(tmp_path: Path) -> None:
    path = tmp_path / "nights.jsonl"
    rows = [{"header": True, "work_factor": {"cpu": 1.29}}]
    for index, (kind, code) in enumerate([("same", 0), ("same", 3), ("cpu", 1), ("cpu", 0)], start=1):
        rows.append({"index": index, "kind": kind, "factor": 1.3 if kind == "cpu" else 1.0, "exit_code": code,
                     "sentence": "s", "seed": index, "neighbour_cores": 1.0, "groups": [], "commit": "abc",
                     "date": "2026-12-04"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    header, nights = read_nights(path)
    assert header["work_factor"] == {"cpu": 1.29} and len(nights) == 4
    summary = summarise(nights)
    assert summary["same"] == {"nights": 2, "flagged": 0, "passed": 1, "undecided": 1,
                               "false_alarm_bound": pytest.approx(1 - 0.05 ** 0.5)}
    assert summary["cpu"]["flagged"] == 1 and summary["cpu"]["power_bound"] == pytest.approx(1 - 0.95 ** 0.5)
    table = markdown(nights, header)
    assert "Statistics at commit(s) abc" in table and table.count("| 2026-12-04 |") == 4
