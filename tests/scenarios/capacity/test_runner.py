"""A capacity job probes its target through the scenario's protocol before the first step."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pandas as pd
import yaml
from click.testing import CliRunner

from rushhour.scenarios.capacity.conditions import Healthy, NMinusOne
from rushhour.scenarios.capacity.job import CapacityJob
from rushhour.scenarios.capacity.record import step_entry
from rushhour.scenarios.capacity.runner import _before_step, _condition, _keep_cache, _ready_for_step, _start_cache
from rushhour.scenarios.capacity.stepper import StepRecord
from rushhour.scenarios.capacity.steps import Assessment, StepRules
from rushhour.scenarios.capacity.target import Target
from rushhour.scenarios.cli.capacity import capacity
from tests.support.targets import serve_handler, serve_target


def test_capacity_refuses_a_target_that_does_not_speak_the_protocol_before_any_step(tmp_path: Path) -> None:
    with serve_target() as (url, state):
        data = {"name": "own", "traffic": {"model": "constant:1", "duration": "60s"},
                "target": {"url": url, "protocol": "http", "http": {"path": "/nowhere"}},
                "slos": [{"name": "p95", "kind": "latency", "percentile": 95, "threshold_ms": 500}]}
        path = tmp_path / "own.yaml"
        path.write_text(yaml.safe_dump(data))
        result = CliRunner().invoke(capacity, [str(path), "--min-rps", "5", "--step-duration", "15s",
                                               "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    document = json.loads((tmp_path / "out" / "capacity.json").read_text())
    assert "does not fit its protocol" in document["aborted"] and "/nowhere answered 404" in document["aborted"]
    assert document["steps"] == [] and len(state.bodies) == 1  # the probe, and no load


def test_capacity_refuses_a_goodput_slo_named_alone(tmp_path: Path) -> None:
    data = {"name": "own", "traffic": {"model": "constant:1", "duration": "60s"},
            "target": {"url": "http://127.0.0.1:9", "protocol": "openai-chat"},
            "slos": [{"name": "goodput", "kind": "goodput", "min_rps": 5}]}
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(data))
    named = CliRunner().invoke(capacity, [str(path), "--slo", "goodput", "--dry-run"])
    assert named.exit_code == 2 and "goodput objective, a rate" in named.output
    alone = CliRunner().invoke(capacity, [str(path), "--dry-run"])
    assert alone.exit_code == 2 and "no per-request SLO" in alone.output


def test_capacity_refuses_a_results_folder_that_is_not_empty(tmp_path: Path) -> None:
    data = {"name": "own", "traffic": {"model": "constant:1", "duration": "60s"}, "target": {"url": "http://127.0.0.1:9"},
            "slos": [{"name": "p95", "kind": "latency", "percentile": 95, "threshold_ms": 500}]}
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(data))
    used = tmp_path / "used"
    (used / "step-01").mkdir(parents=True)
    result = CliRunner().invoke(capacity, [str(path), "--min-rps", "5", "--out", str(used)])
    assert result.exit_code == 2 and "is not empty (it holds step-01)" in result.output


def test_capacity_waits_for_the_n_minus_one_node_only_when_something_runs_after() -> None:
    """A server the job booted stops after its last condition, so N-1's release does not wait for
    the node to be ready then; before another condition, or on a server the job did not boot, it does."""
    booted = Target("http://127.0.0.1:9", "token", "embedded", server=cast(Any, object()))
    given = Target("http://127.0.0.1:9", "token", "url")

    def waits(conditions: list[str], target: Target) -> bool:
        job = cast(CapacityJob, SimpleNamespace(conditions=conditions))
        condition = _condition("n-1", job, target)
        assert isinstance(condition, NMinusOne)
        return condition.wait_ready

    assert not waits(["none", "n-1"], booted)
    assert waits(["n-1", "none"], booted)
    assert waits(["none", "n-1"], given)


@contextmanager
def _admin_recorder(answers: dict[str, int]) -> Iterator[tuple[str, list[tuple[str, str | None]]]]:
    """A target that records each POST (path, Authorization) and answers `answers[path]` (200 by default)."""
    calls: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            pass

        def _answer(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def do_GET(self) -> None:
            self._answer(404)

        def do_POST(self) -> None:
            calls.append((self.path, self.headers.get("Authorization")))
            self._answer(answers.get(self.path, 200))

    with serve_handler(Handler) as url:
        yield url, calls


def test_each_step_starts_from_the_cache_the_search_kept() -> None:
    """The search keeps the cache once (after the probe); each step asks for it back, and a server
    that cannot give it back is flushed instead, so no step inherits a warmer cache than another."""
    answers: dict[str, int] = {}
    with _admin_recorder(answers) as (url, calls):
        target = Target(url, "secret", "embedded")
        _keep_cache(target)
        _start_cache(target)
        answers["/admin/cache/restore"] = 409
        _start_cache(target)
        _start_cache(Target(url, None, url))  # a target the job holds no token for is left alone
    assert [path for path, _ in calls] == ["/admin/cache/save", "/admin/cache/restore", "/admin/cache/restore",
                                           "/admin/cache/flush"]
    assert {auth for _, auth in calls} == {"Bearer secret"}


def test_each_step_first_stops_the_jobs_left_on_a_server_the_search_booted() -> None:
    """Documents the last step left half done are cancelled before the drain, on the embedded server
    only: a server given by URL may run other people's jobs, whatever token the search holds."""
    with _admin_recorder({}) as (url, calls):
        _ready_for_step(Target(url, "secret", "embedded", server=cast(Any, object())), Healthy())
        booted = [path for path, _ in calls]
        calls.clear()
        _ready_for_step(Target(url, "secret", "url"), Healthy())
        given = [path for path, _ in calls]
    assert booted == ["/admin/jobs/cancel", "/admin/cache/restore"]
    assert given == ["/admin/cache/restore"]


class _Runner:
    """A step runner that holds the load of a pass at `held` req/s (None: nothing held)."""

    def __init__(self, held: float | None) -> None:
        self.held, self.released = held, 0

    def continues(self, rate: float) -> bool:
        return rate == self.held

    def release(self) -> None:
        self.released += 1
        self.held = None


class _Checked(Healthy):
    checks = 0

    def check(self) -> None:
        self.checks += 1


def test_a_step_going_on_with_a_pass_s_load_is_not_drained_but_gets_the_kept_cache() -> None:
    """The confirmation right after a pass goes on with its load: before it, only the condition's
    check and the cache every step starts from (the pass's window would have warmed it), no
    cancel and no drain. A step at another rate first stops that load, then gets the usual cancel,
    drain and cache."""
    with _admin_recorder({}) as (url, calls):
        target = Target(url, "secret", "embedded", server=cast(Any, object()))
        runner, condition = _Runner(held=30.0), _Checked()
        assert _before_step(cast(Any, runner), 30.0, target, condition) == 0.0
        assert ([path for path, _ in calls], runner.released, condition.checks) == (["/admin/cache/restore"], 0, 1)
        calls.clear()
        _before_step(cast(Any, runner), 33.0, target, condition)
        assert (runner.released, runner.held, condition.checks) == (1, None, 2)
    assert [path for path, _ in calls] == ["/admin/jobs/cancel", "/admin/cache/restore"]


@contextmanager
def _draining_target(busy_s: float) -> Iterator[tuple[str, float]]:
    """A target whose /v1/status shows one request queued until `busy_s` after it was started:
    (its url, the monotonic time its queue empties)."""
    until = time.monotonic() + busy_s

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            pass

        def do_GET(self) -> None:
            queued = 1 if time.monotonic() < until else 0
            body = json.dumps({"pools": {"quality": {"queue_depth": queued, "inflight": 0}}}).encode()
            self.send_response(200 if self.path == "/v1/status" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serve_handler(Handler) as url:
        yield url, until


def test_each_step_records_how_long_the_target_took_to_drain_before_it(tmp_path: Path) -> None:
    with _draining_target(0.8) as (url, until):
        called = time.monotonic()
        drained = _ready_for_step(Target(url, None, url), Healthy())
        again = _ready_for_step(Target(url, None, url), Healthy())
    # it waited out what was still queued when it was called, and not much longer
    assert until - called - 0.05 <= drained < 2.0
    assert until - called > 0.5
    assert again < 0.3  # nothing queued any more: the next step starts at once
    rules = StepRules(measure_s=20.0, warmup_s=5.0)
    early = StepRecord(1, 40.0, Assessment("fail", "p99", "missed", now_s=12.0), pd.DataFrame(), pd.DataFrame(),
                       wall_s=14.5, early=True, work_dir=tmp_path / "step-01", rules=rules)
    entry = step_entry(early, rules=rules, slots_per_node={}, cost_model=None, settle_s=drained)
    assert (entry["warmup_s"], entry["measured_s"], entry["wall_s"]) == (5.0, 7.0, 14.5)
    assert entry["settle_s"] == round(drained, 2)
    in_warmup = StepRecord(2, 40.0, Assessment("fail", "p99", "missed", now_s=3.0), pd.DataFrame(), pd.DataFrame(),
                           wall_s=5.0, early=True, work_dir=tmp_path / "step-02", rules=rules)
    assert step_entry(in_warmup, rules=rules, slots_per_node={}, cost_model=None)["warmup_s"] == 3.0
    assert step_entry(early, rules=rules, slots_per_node={}, cost_model=None)["continues"] is None
    # a step that went on with step 1's load: its window starts where step 1's ended, no warm-up of its own
    went_on = StepRecord(2, 40.0, Assessment("pass", None, "met", now_s=47.0), pd.DataFrame(), pd.DataFrame(),
                         wall_s=22.0, early=False, work_dir=tmp_path / "step-01",
                         rules=dataclasses.replace(rules, warmup_s=25.0), continues=1)
    entry = step_entry(went_on, rules=went_on.rules, slots_per_node={}, cost_model=None)
    assert (entry["continues"], entry["warmup_s"], entry["measured_s"], entry["dir"]) == (1, 0.0, 20.0, "step-01")
