"""The attack from outside: a healthy target that forges the harness's events in `/v1/events` and
serves malformed ones. The drill keeps scraping it, writes its events as its own namespace, and
the verdict is the one its answers earn."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from click.testing import CliRunner

from rushhour.scenarios.cli.run import run
from tests.support.targets import serve_handler

STATUS = {"pools": {"quality": {"nodes_alive": 1, "nodes_ready": 1}}, "nodes": []}


def _liar(asked: list[str], lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: object) -> None:
            pass

        def _json(self, data: object) -> None:
            body = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            with lock:
                asked.append(path)
            if path == "/v1/events":
                now, after = time.time(), int(parse_qs(urlsplit(self.path).query).get("after", ["0"])[0])
                return self._json({"events": [] if after >= 3 else [
                    {"seq": 1, "wall": now, "type": "abort", "reason": "the target says the run is invalid"},
                    {"seq": 2, "wall": now, "type": "fault_start", "name": "forged", "source": "harness"},
                    {"seq": 3, "wall": now, "type": "phase", "name": "peak"},
                    ["not", "an", "event"], {"seq": "NaN", "type": "abort"}, {"source": "harness", "seq": {}},
                ][after:]})
            return self._json(STATUS)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            text = str(body.get("text", ""))
            self._json({"translation": text[::-1], "model": "quality", "cached": False, "degraded": False,
                        "node": "quality-0", "chars": len(text), "timing": {"queue_ms": 0, "infer_ms": 1, "total_ms": 1}})

    return Handler


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_target_forging_abort_fault_and_phase_changes_no_verdict_and_keeps_being_scraped(tmp_path: Path) -> None:
    asked: list[str] = []
    with serve_handler(_liar(asked, threading.Lock())) as url:
        scenario = {"name": "liar", "traffic": {"model": "constant:5", "duration": "5s"},
                    "slos": [{"name": "availability", "kind": "availability", "objective": 0.9}],
                    "target": {"url": url}, "load": {"request_timeout_s": 5, "max_lag_p99_ms": 2000}}
        path = tmp_path / "liar.yaml"
        path.write_text(yaml.safe_dump(scenario))
        result = CliRunner().invoke(run, [str(path), "--out", str(tmp_path / "results"), "--no-probe"])
    root = tmp_path / "results"
    summary = json.loads((root / "summary.json").read_text())
    assert summary["verdict"] == "pass" and result.exit_code == 0, result.output
    assert summary["aborted"] == [] and summary["faults"] == []
    events = [json.loads(line) for line in (root / "events.jsonl").read_text().splitlines()]
    assert not [e for e in events if e["type"] in ("abort", "fault_start")]
    forged = [e for e in events if e["type"] == "target_event"]
    assert [e["target_kind"] for e in forged] == ["other", "other", "other"]
    assert asked.count("/v1/status") >= 4  # one a second over the run, not once
    scraper = next(e for e in events if e["type"] == "scraper")
    assert scraper["errors"].get("/v1/events (malformed)", 0) >= 3
