"""Documents through the jobs API: the follower's polling, and the firer's job rows."""

from __future__ import annotations

import json
import time
from pathlib import Path

import gevent
import numpy as np
import pandas as pd

from rushhour.scenarios.generator.jobs import JOBS_PATH, JobFollower, Reply
from rushhour.scenarios.generator.openloop import OpenLoopFirer
from rushhour.scenarios.load.parts import (
    REQUEST_COLUMNS,
    PartWriter,
    list_parts,
    merge_requests,
    read_parts,
)
from rushhour.scenarios.protocols.outcome import Outcome
from tests.scenarios.generator.truth import share_of


class FakeClock:
    """A clock that only moves when the follower sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _view(state: str, segments: list[dict[str, object]], error: dict[str, str] | None = None) -> Reply:
    body: dict[str, object] = {"id": "j1", "state": state, "segments": segments,
                               "progress": {"done": len(segments), "total": 3}, "eta_s": None}
    if error is not None:
        body["error"] = error
    return Reply(200, json.dumps(body).encode())


def _segment(index: int, model: str = "quality", cached: bool = False, degraded: bool = False) -> dict[str, object]:
    return {"index": index, "translation": "x", "model": model, "cached": cached, "degraded": degraded}


class ScriptedServer:
    """Answers the submit with 202 and each poll with the next scripted view (the last repeats)."""

    def __init__(self, views: list[Reply], submit: Reply | None = None) -> None:
        self.views = views
        self.submit = submit or Reply(202, b'{"id": "j1"}')
        self.calls: list[tuple[str, bool]] = []

    def __call__(self, path: str, body: dict[str, object] | None) -> Reply:
        self.calls.append((path, body is not None))
        if body is not None:
            return self.submit
        polls = sum(1 for _, posted in self.calls if not posted)
        return self.views[min(polls, len(self.views)) - 1]


def _follow(server: ScriptedServer, limit_s: float = 10.0) -> tuple[Outcome, JobFollower, FakeClock]:
    clock = FakeClock()
    follower = JobFollower(server, poll_s=0.1, clock=clock, sleep=clock.sleep)
    return follower.run({"text": "a. b. c."}, limit_s), follower, clock


def test_follower_records_first_segment_then_done() -> None:
    server = ScriptedServer([
        _view("queued", []), _view("running", []), _view("running", [_segment(0)]),
        _view("done", [_segment(0), _segment(1, "fast", degraded=True), _segment(2, cached=True)]),
    ])
    outcome, follower, clock = _follow(server)
    assert server.calls[0] == (JOBS_PATH, True) and server.calls[1] == (f"{JOBS_PATH}/j1", False)
    assert follower.polls == 4
    assert outcome.status == 200 and outcome.model == "quality" and outcome.degraded and not outcome.cached
    assert outcome.first_segment_at is not None
    np.testing.assert_allclose(outcome.first_segment_at, 1000.3)  # third poll, 0.1 s apart
    np.testing.assert_allclose(clock.now, 1000.4)


def test_follower_failed_job_keeps_code_and_first_segment() -> None:
    server = ScriptedServer([
        _view("running", [_segment(0)]),
        _view("failed", [_segment(0)], {"code": "deadline_exceeded", "message": "late"}),
    ])
    outcome, _, _ = _follow(server)
    assert outcome.status == 504 and outcome.error == "deadline_exceeded"
    assert outcome.first_segment_at is not None
    unknown, _, _ = _follow(ScriptedServer([_view("failed", [], {"code": "cancelled", "message": "x"})]))
    assert unknown.status == 500 and unknown.error == "cancelled" and unknown.first_segment_at is None


def test_follower_gives_up_at_its_limit_with_status_zero() -> None:
    server = ScriptedServer([_view("running", [_segment(0)])])
    outcome, follower, clock = _follow(server, limit_s=1.0)
    assert outcome.status == 0 and outcome.error == "timeout"
    assert outcome.first_segment_at is not None
    assert follower.polls == 10 and clock.now <= 1001.0 + 1e-9


def test_follower_passes_on_a_refused_submit() -> None:
    refused = Reply(503, b'{"error": {"code": "too_many_jobs", "message": "busy"}}')
    outcome, follower, _ = _follow(ScriptedServer([], submit=refused))
    assert outcome.status == 503 and outcome.error == "too_many_jobs" and follower.polls == 0
    lost, _, _ = _follow(ScriptedServer([Reply(404, b'{"error": {"code": "unknown_job"}}')]))
    assert lost.status == 404 and lost.error == "unknown_job"


def _rows(kinds: list[str], spacing_s: float) -> pd.DataFrame:
    n = len(kinds)
    return pd.DataFrame({"row": np.arange(n), "offset_s": np.arange(n) * spacing_s, "kind": kinds,
                         "text_id": 1, "chars": np.where(np.array(kinds) == "document", 2000, 20),
                         "mode": "auto", "priority": "paid", "tenant": "a", "deadline_ms": 5000.0})


def test_firer_sends_documents_as_jobs_without_holding_up_the_schedule(tmp_path: Path) -> None:
    kinds = ["document", "short"] * 20
    rows = _rows(kinds, 0.02)
    plan = share_of(rows, documents_via_jobs=True)
    sent_to: list[str] = []

    def send(_payload: dict[str, object], _timeout: float) -> Outcome:
        sent_to.append("translate")
        return Outcome(status=200, model="fast")

    def send_job(_payload: dict[str, object], _timeout: float) -> Outcome:
        sent_to.append("job")
        gevent.sleep(0.2)
        first = time.monotonic()  # first-segment stamps are monotonic, like every duration
        gevent.sleep(0.5)  # a long document: its polls must not delay the rows behind it
        return Outcome(status=200, model="quality", first_segment_at=first)

    OpenLoopFirer(plan, send, PartWriter(tmp_path, 0), send_job=send_job).run(time.time() + 0.05)
    parts = read_parts(list_parts(tmp_path)).sort_values("row")
    assert sent_to.count("job") == 20 and sent_to.count("translate") == 20
    assert list(parts["via"]) == ["job", "translate"] * 20
    docs = parts[parts["via"] == "job"]
    assert docs["first_segment_s"].notna().all() and parts.loc[parts["via"] == "translate", "first_segment_s"].isna().all()
    assert (docs["first_segment_s"] < docs["done_s"]).all()
    lag_ms = (parts["sent_s"] - parts["intended_s"]) * 1000.0
    assert lag_ms.max() < 200.0  # the last row left on time although 20 jobs were still polling


def test_firer_without_jobs_option_sends_documents_to_translate(tmp_path: Path) -> None:
    plan = share_of(_rows(["document", "short"], 0.01))
    job_calls: list[int] = []

    def send_job(_payload: dict[str, object], _timeout: float) -> Outcome:
        job_calls.append(1)
        return Outcome(status=200)

    OpenLoopFirer(plan, lambda _p, _t: Outcome(status=200), PartWriter(tmp_path, 0),
                  send_job=send_job).run(time.time())
    parts = read_parts(list_parts(tmp_path))
    assert not job_calls and set(parts["via"]) == {"translate"}


def test_merge_computes_first_segment_from_intended_and_plans_via() -> None:
    schedule = _rows(["document", "short", "document", "short"], 0.5).drop(columns="row").assign(phase="base")
    parts = pd.DataFrame({"row": [0, 1], "intended_s": [0.0, 0.5], "sent_s": [0.01, 0.51],
                          "done_s": [2.0, 0.6], "status": [200, 200], "error": ["", ""],
                          "model": ["quality", "fast"], "cached": [False, False],
                          "degraded": [False, False], "node": ["", "fast-0"],
                          "first_segment_s": [0.25, float("nan")], "via": ["job", "translate"]})
    merged = merge_requests(schedule, parts, documents_via_jobs=True)
    assert list(merged.columns) == list(REQUEST_COLUMNS)
    np.testing.assert_allclose(merged["first_segment_ms"].iloc[0], 250.0)
    assert merged["first_segment_ms"].iloc[1:].isna().all()
    assert list(merged["via"]) == ["job", "translate", "job", "translate"]  # row 2 never sent: planned
    old = merge_requests(schedule, parts.drop(columns=["first_segment_s", "via"]))
    assert old["first_segment_ms"].isna().all() and set(old["via"]) == {"translate"}
    assert list(old["status"]) == [200, 200, 0, 0]


def test_spec_documents_via_jobs_defaults_off_and_promo_day_turns_it_on() -> None:
    from rushhour.scenarios.spec.model import LoadSpec, load_scenario

    assert LoadSpec().documents_via_jobs is False
    assert load_scenario("promo-day").load.documents_via_jobs is True


def test_follower_reports_its_own_limit_as_a_timeout_not_a_client_error() -> None:
    """geventhttpclient turns a gevent.Timeout raised inside a call into its own RetriesExceeded."""
    clock = [0.0]

    def call(path: str, body: dict[str, object] | None) -> Reply:
        if body is not None:
            return Reply(202, b'{"id": "j1"}')
        clock[0] += 5.0  # the poll outlives the follower's limit
        return Reply(0, None, "RetriesExceeded")

    outcome = JobFollower(call, clock=lambda: clock[0], sleep=lambda s: None).run({"text": "x"}, 3.0)
    assert outcome.status == 0 and outcome.error == "timeout"
