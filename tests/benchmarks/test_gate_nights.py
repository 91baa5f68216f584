"""benchmarks.gate_nights: the plan is fixed by the seed, nights are kept as they end, bounds are exact."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from unittest.mock import patch

import pytest

from benchmarks.gate_nights import (
    DECODE_WIDTH_PER_WORK,
    EXTRA_WIDTH,
    REPO,
    Bench,
    check_work,
    extra_width,
    file_header,
    install_commit,
    parse,
    plan,
    read_nights,
)
from benchmarks.gate_nights_table import clopper_pearson_lower, markdown, summarise
from benchmarks.gate_nights_work import WorkMeasure


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
    rows: list[dict[str, object]] = [{"header": True, "work_factor": {"cpu": 1.29}}]
    cases = [("same", 0, "no_regression", False), ("same", 3, "inconclusive", True), ("same", 3, "invalid", False),
             ("cpu", 1, "regression", False), ("cpu", 0, "no_regression", True)]
    for index, (kind, code, verdict, beside) in enumerate(cases, start=1):
        rows.append({"index": index, "kind": kind, "factor": 1.3 if kind == "cpu" else 1.0, "exit_code": code,
                     "verdict": verdict, "sentence": "s", "seed": index, "neighbour_cores": 1.0, "groups": [],
                     "commit": "abc", "date": "2026-12-04", "beside_other_work": beside,
                     "machine": {"other_cores": 1.2 if beside else 0.1}, "error_share": {"baseline": 0.001,
                                                                                        "candidate": 0.002}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    header, nights = read_nights(path)
    assert header["work_factor"] == {"cpu": 1.29} and len(nights) == 5
    summary = summarise(nights)
    assert summary["same"] == {"nights": 3, "flagged": 0, "passed": 1, "inconclusive": 1, "invalid": 1,
                               "beside_other_work": 1, "false_alarm_bound": pytest.approx(1 - 0.05 ** (1 / 3))}
    assert summary["cpu"]["flagged"] == 1 and summary["cpu"]["power_bound"] == pytest.approx(1 - 0.95 ** 0.5)
    table = markdown(nights, header)
    assert "Commit(s) abc" in table and table.count("| 2026-12-04 |") == 5
    quiet_part = table.split("Nights without other work beside them:")[1].split("| night |")[0]
    assert "| same | 2 | 0 | 1 | 0 | 1 | 0 |" in quiet_part and "| cpu | 1 | 1 | 0 | 0 | 0 | 0 |" in quiet_part
    assert "0.10%/0.20%" in table


def test_a_file_of_one_commit_refuses_nights_of_another(tmp_path: Path) -> None:
    out = tmp_path / "nights.jsonl"
    args = parse(["--out", str(out)])
    bench = Bench(setup=None, candidates={}, workdir=tmp_path, neighbour_log=None, commit="b" * 40)
    with pytest.raises(SystemExit, match="records nights of commit a{40}, and this invocation runs b{40}"):
        file_header(args, [], bench, {"header": True, "commit": "a" * 40})
    header = file_header(args, ["--out", str(out)], bench, {})
    assert read_nights(out) == (header, []) and header["commit"] == "b" * 40


def test_install_commit_is_the_ref_s_commit_and_refuses_a_name_that_is_none() -> None:
    assert install_commit(parse(["--ref", "HEAD"])) == subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    with pytest.raises(SystemExit, match='--ref "no-such-ref-anywhere" is not a commit'):
        install_commit(parse(["--ref", "no-such-ref-anywhere"]))


def test_check_work_refuses_a_candidate_doing_under_a_quarter_of_the_asked_extra_work() -> None:
    check_work("cpu", 1.29, 1.3)
    with pytest.raises(SystemExit, match=r"x0\.438 the baseline's CPU per request, outside x1\.075-x1\.600"):
        check_work("cpu", 0.438, 1.3)
    check_work("cpu-small", 1.08, 1.15)
    with pytest.raises(SystemExit, match=r"x1\.010 the baseline's CPU per request, outside x1\.038-x1\.300"):
        check_work("cpu-small", 1.01, 1.15)


def test_extra_width_uses_the_measured_width_of_a_protocol_factor_and_scales_any_other() -> None:
    assert all(extra_width(factor) == width for factor, width in EXTRA_WIDTH.items())
    assert extra_width(1.2) == round(0.2 * DECODE_WIDTH_PER_WORK) and extra_width(1.0) == 0
    assert EXTRA_WIDTH[1.15] < EXTRA_WIDTH[1.3]


def test_a_file_header_records_each_install_s_width_and_small_width_overrides_the_small_one(tmp_path: Path) -> None:
    measured = WorkMeasure(cpu_ms=(10.0, 12.0), wall_ms=(10.0, 12.0), requests=100)
    bench = Bench(setup=None, candidates={"cpu": "a", "cpu-small": "b"}, workdir=tmp_path, neighbour_log=None,
                  commit="c" * 40)
    for argv, small in (([], EXTRA_WIDTH[1.15]), (["--small-width", "800"], 800)):
        args = parse(["--out", str(tmp_path / f"{small}.jsonl"), *argv])
        with patch("benchmarks.gate_nights.measure_work", return_value=measured):
            header = file_header(args, argv, bench, {})
        assert header["extra_width"] == {"cpu": EXTRA_WIDTH[1.3], "cpu-small": small}
