"""A failed request is a slow request, with ground truth known by construction."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rushhour.reports import build_reports
from rushhour.reports.measures.burn import _rule
from rushhour.reports.rundata.attempts import attempted, fill_missing_ends, latest_end_s
from tests.reports.helpers import requests_frame, write_run

SLOS = {"slos": [
    {"name": "p99-paid", "kind": "latency", "percentile": 99, "threshold_ms": 2000, "priority": "paid"},
    {"name": "availability", "kind": "availability", "objective": 0.99},
]}


def _chat_run(root: Path) -> Path:
    """1,000 paid + 9,000 free chat requests over 100 s; 35 paid (3.5%) answered 504 after 2 s.

    Every other request takes 90-110 ms. A 504 is sent 50 ms late and answered 2,000 ms after the
    send, so it ends 2,050 ms after its intended time.
    """
    rng = np.random.default_rng(11)
    n = 10_000
    intended = np.sort(rng.uniform(0, 100, n))
    priority = np.where(rng.permutation(n) < 1_000, "paid", "free")
    failed = np.zeros(n, bool)
    failed[rng.choice(np.flatnonzero(priority == "paid"), 35, replace=False)] = True
    latency = np.where(failed, 2050.0, rng.uniform(90.0, 110.0, n))
    frame = requests_frame(intended, latency, ok=~failed, priority=priority, kind="short")
    frame["sent_s"] = intended + np.where(failed, 0.05, 0.0)
    frame["service_ms"] = latency - np.where(failed, 50.0, 0.0)
    frame["status"] = np.where(failed, 504, 200)
    events = [{"type": "run_end", "t_s": 102.0, "duration_s": 102.0}]
    return write_run(root, frame, scenario=SLOS | {"traffic": {"duration_s": 100.0}}, events=events)


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = _chat_run(tmp_path_factory.mktemp("chat") / "run")
    return root, build_reports(root)


@pytest.mark.slow
def test_failed_paid_requests_fail_the_paid_p99(chat: tuple[Path, dict]) -> None:
    _, summary = chat
    paid, availability = summary["slos"]
    assert paid["met"] is False and summary["verdict"] == "fail"
    assert paid["good_share"] == pytest.approx(0.965) and paid["samples"] == 1_000 and paid["bad"] == 35
    assert paid["measured_ms"] == paid["measured"] == 2050.0  # rank 990 of 1,000 is a 504
    assert 100.0 <= paid["measured_ok_only_ms"] <= 110.0 and paid["samples_ok"] == 965
    assert paid["budget_consumed"] == pytest.approx(3.5)
    assert availability["met"] is True and availability["measured"] == pytest.approx(0.9965)


def test_report_files_show_and_label_both_views(chat: tuple[Path, dict]) -> None:
    root, summary = chat
    on_disk = json.loads((root / "summary.json").read_text())
    assert on_disk["slos"][0]["measured_ok_only_ms"] == summary["slos"][0]["measured_ok_only_ms"]
    html = (root / "report.html").read_text()
    assert "measured, all attempts" in html and "successful requests only" in html
    assert "2,050.0 ms" in html and "96.50% good (needs 99.00%)" in html
    markdown = (root / "report.md").read_text()
    assert "| measured (all attempts) | successful only |" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| p99-paid"))
    assert "2,050.0 ms" in row and "(n=965)" in row and "❌" in row
    assert "p99-paid missed: 96.50% good" in (root / "junit.xml").read_text()


def test_rows_without_an_end_fail_at_the_latest_end_the_data_allows() -> None:
    frame = requests_frame([0.0, 1.0, 2.0, 3.0], [100.0, 200.0, np.nan, np.nan], ok=[True, True, True, False])
    frame.loc[3, "sent_s"] = np.nan  # never left the generator
    events = [{"type": "run_end", "duration_s": 10.0}]
    end = latest_end_s(frame, events)
    filled = fill_missing_ends(frame, end)
    assert end == 10.0 and attempted(filled).tolist() == [True, True, True, False]
    assert filled["end_imputed"].tolist() == [False, False, True, False]
    assert filled.loc[2, "latency_ms"] == 8000.0 and filled.loc[2, "service_ms"] == 8000.0
    assert not filled.loc[2, "ok"]  # an ok flag without an end is not an answer
    assert filled["latency_ms"].isna()[3]  # not sent: no latency at all
    assert latest_end_s(frame.assign(done_s=[0.1, 12.0, np.nan, np.nan]), events) == 12.0


def test_burn_long_window_alone_cannot_page() -> None:
    # 1,000 good requests in [0, 10), then 10 bad ones in [10, 10.1), then silence. Long window
    # 10 s, short 1 s, page at 14.4x of a 1% budget. While the short window burns (up to 100x,
    # once it holds only the bad ones) the long one holds 900+ good requests and burns about 1x:
    # no page. Ten seconds later the good ones have aged out, the long window holds only the bad
    # ones (100x) and the short one is empty: an empty short window must not let the long one
    # page on its own.
    times = np.r_[np.arange(1_000) * 0.01, 10.0 + np.arange(10) * 0.01]
    bad = np.r_[np.zeros(1_000, bool), np.ones(10, bool)]
    rule = _rule(times, np.ones(times.size, bool), bad, 0.01, 30.0, 10.0, 1.0, 14.4)
    assert rule.worst_long == pytest.approx(100.0) and rule.worst_short == pytest.approx(100.0)
    assert rule.pages is False and rule.first_page_s is None
    assert rule.worst_both is not None and rule.worst_both < 14.4
    hot = _rule(times, np.ones(times.size, bool), np.ones(times.size, bool), 0.01, 30.0, 10.0, 1.0, 14.4)
    # every request bad: it pages, but not before the long window lies wholly inside the run (10 s)
    assert hot.pages and hot.first_page_s == pytest.approx(10.0)
