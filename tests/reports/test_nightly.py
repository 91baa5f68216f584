"""ci/nightly.sh, ci/baseline_env.sh and ci/refresh_baseline.sh, end to end with small stand-ins.

The nightly script's own job is plumbing: build the baseline's environment, start two servers on
free loopback ports, hand both URLs to `rushhour ab`, keep its files, return its exit code, and
stop both servers whatever happens. A stand-in `rushhour` (serve: a tiny HTTP server answering
/readyz; ab: checks both URLs answer, writes ab.json and junit.xml, exits as told) checks that
plumbing in seconds; `rushhour ab` itself is tested in tests/scenarios and tests/reports/ab.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.synth import make_results
from tests.support.processes import pid_alive

REPO = Path(__file__).resolve().parents[2]
FAKE = """#!{python}
import json, os, signal, sys, urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
args = sys.argv[1:]
log = Path(os.environ["FAKE_LOG"])
def record(**entry):
    with log.open("a") as handle:
        handle.write(json.dumps({{"role": os.environ.get("FAKE_ROLE", "candidate"), **entry}}) + "\\n")
if args[0] == "serve":
    if os.environ.get("FAKE_ROLE") == os.environ.get("FAKE_BROKEN"):
        sys.exit(2)
    port = int(args[args.index("--port") + 1])
    class Ready(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"ready")
        def log_message(self, *a):
            pass
    record(command="serve", pid=os.getpid(), port=port, args=args,
           state=os.environ.get("RUSHHOUR_STATE_DIR"))
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    HTTPServer(("127.0.0.1", port), Ready).serve_forever()
if args[0] == "ab":
    base, cand = args[args.index("--baseline") + 1], args[args.index("--candidate") + 1]
    for url in (base, cand):
        urllib.request.urlopen(url + "/readyz", timeout=5).read()
    out = Path(args[args.index("--out") + 1]); out.mkdir(parents=True)
    (out / "ab.json").write_text(json.dumps({{"baseline": base, "candidate": cand, "args": args}}))
    (out / "junit.xml").write_text("<testsuite/>")
    record(command="ab", args=args)
    sys.exit(int(os.environ["FAKE_AB_EXIT"]))
sys.exit(2)
"""


def _fake(tmp_path: Path, role: str) -> Path:
    fake = tmp_path / f"rushhour-{role}"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    wrapper = tmp_path / f"as-{role}"
    wrapper.write_text(f"#!/usr/bin/env bash\nFAKE_ROLE={role} exec {fake} \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper


def _nightly(tmp_path: Path, ab_exit: int = 0, **extra: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    log = tmp_path / "fake.jsonl"
    env = dict(os.environ, RUSHHOUR=str(_fake(tmp_path, "candidate")),
               NIGHTLY_BASELINE_RUSHHOUR=str(_fake(tmp_path, "baseline")), NIGHTLY_PYTHON=sys.executable,
               NIGHTLY_OUT=str(tmp_path / "out"), NIGHTLY_ARTIFACTS=str(tmp_path / "artifacts"),
               NIGHTLY_BOOT_TIMEOUT="60", FAKE_LOG=str(log), FAKE_AB_EXIT=str(ab_exit))
    env.update(extra)
    done = subprocess.run(["bash", str(REPO / "ci" / "nightly.sh")], env=env, text=True, capture_output=True,
                          timeout=120)
    entries = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done, entries


@pytest.mark.slow
@pytest.mark.parametrize("ab_exit", [0, 1, 3])
def test_nightly_serves_both_arms_runs_ab_and_returns_its_exit_code(tmp_path: Path, ab_exit: int) -> None:
    done, entries = _nightly(tmp_path, ab_exit)
    assert done.returncode == ab_exit, done.stdout + done.stderr
    served = {e["role"]: e for e in entries if e["command"] == "serve"}
    [ab] = [e for e in entries if e["command"] == "ab"]
    assert set(served) == {"baseline", "candidate"} and served["baseline"]["port"] != served["candidate"]["port"]
    assert served["baseline"]["state"] != served["candidate"]["state"]
    assert ["--nodes", "2", "--max-batch-size", "8"] == served["baseline"]["args"][-4:]  # scenarios/nightly.yaml
    assert ab["args"][1] == "scenarios/nightly.yaml"
    urls = json.loads((tmp_path / "artifacts" / "ab.json").read_text())
    assert urls["baseline"].endswith(f":{served['baseline']['port']}")
    assert urls["candidate"].endswith(f":{served['candidate']['port']}")
    assert (tmp_path / "artifacts" / "junit.xml").exists()
    assert (tmp_path / "artifacts" / "baseline-server.log").exists()
    assert not any(pid_alive(e["pid"]) for e in served.values())  # both servers stopped by the script


@pytest.mark.slow
def test_nightly_passes_trials_duration_seed_and_an_external_candidate(tmp_path: Path) -> None:
    done, entries = _nightly(tmp_path, NIGHTLY_TRIALS="8", NIGHTLY_DURATION="20s", NIGHTLY_SEED="5",
                             NIGHTLY_SERVE_ARGS="--nodes 1")
    assert done.returncode == 0, done.stdout + done.stderr
    [ab] = [e for e in entries if e["command"] == "ab"]
    assert ab["args"][-6:] == ["--trials", "8", "--duration", "20s", "--seed", "5"]
    assert all(e["args"][-2:] == ["--nodes", "1"] for e in entries if e["command"] == "serve")


@pytest.mark.slow
def test_nightly_exits_3_when_a_server_never_comes_up(tmp_path: Path) -> None:
    done, entries = _nightly(tmp_path, FAKE_BROKEN="baseline")
    assert done.returncode == 3
    assert "the baseline server did not become ready" in done.stderr
    assert not [e for e in entries if e["command"] == "ab"]
    assert not any(pid_alive(e["pid"]) for e in entries if e["command"] == "serve")


@pytest.mark.slow
def test_nightly_refuses_a_baseline_ref_that_is_not_a_commit(tmp_path: Path) -> None:
    done, entries = _nightly(tmp_path, NIGHTLY_BASELINE_REF="no-such-ref-anywhere", NIGHTLY_BASELINE_RUSHHOUR="")
    assert done.returncode == 2
    assert '"no-such-ref-anywhere" is not a commit' in done.stderr and not entries


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, text=True, capture_output=True,
                          env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
                                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")).stdout.strip()


def _version(repo: Path, marker: str) -> str:
    """Commit a `rushhour.scenarios.cli.main` that prints `marker` and where it was imported from."""
    main = repo / "scenarios" / "cli" / "main.py"
    main.parent.mkdir(parents=True, exist_ok=True)
    for package in (repo / "scenarios", main.parent):
        (package / "__init__.py").touch()
    main.write_text(f"import sys\nprint('{marker}', __file__, sys.argv[1:])\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", marker)
    return _git(repo, "rev-parse", "HEAD")


@pytest.mark.slow
def test_baseline_env_builds_once_per_commit_and_isolates_the_ref(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "ci").mkdir(parents=True)
    (repo / "ci" / "baseline_env.sh").write_text((REPO / "ci" / "baseline_env.sh").read_text())
    _git(repo, "init", "-q")
    old = _version(repo, "old-version")
    _version(repo, "new-version")  # the working tree is the new version
    env = dict(os.environ, NIGHTLY_BASELINE_DEPS="shared", NIGHTLY_PYTHON=sys.executable,
               NIGHTLY_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(repo))

    def build(ref: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(repo / "ci" / "baseline_env.sh"), ref], env=env, text=True,
                              capture_output=True, timeout=120)

    first = build(old)
    assert first.returncode == 0, first.stderr
    command = Path(first.stdout.strip())
    assert command == tmp_path / "cache" / old / "bin" / "rushhour" and "building" in first.stderr
    ran = subprocess.run([str(command), "serve"], env=env, cwd=repo, text=True, capture_output=True, timeout=60)
    assert ran.stdout.startswith("old-version") and str(tmp_path / "cache" / old / "src") in ran.stdout
    again = build("HEAD~1")
    assert again.returncode == 0 and Path(again.stdout.strip()) == command and "building" not in again.stderr
    bad = build("nope")
    assert bad.returncode == 2 and '"nope" is not a commit' in bad.stderr


@pytest.mark.slow
def test_refresh_baseline_lays_out_several_runs_for_compare(tmp_path: Path) -> None:
    # ci/refresh_baseline.sh keeps stored runs for `rushhour compare` (history and trends): two
    # same-code runs become run-1 and run-2, and compare pairs a later run with both.
    runs = [make_results(tmp_path / f"night-{i}", n_requests=2000, seed=7, noise=0.1, noise_seed=i)
            for i in (1, 2)]
    baseline = tmp_path / "baseline"
    fake = tmp_path / "rushhour"
    fake.write_text(f"#!{sys.executable}\nimport sys\nfrom rushhour.scenarios.cli.report import compare, report\n"
                    "{'report': report, 'compare': compare}[sys.argv[1]].main(sys.argv[2:], prog_name='rushhour')\n")
    fake.chmod(0o755)
    env = dict(os.environ, RUSHHOUR=str(fake), PYTHONPATH=str(REPO), NIGHTLY_BASELINE=str(baseline))
    refresh = subprocess.run(["bash", str(REPO / "ci" / "refresh_baseline.sh"), *map(str, runs)], env=env,
                             text=True, capture_output=True, timeout=120)
    assert refresh.returncode == 0, refresh.stdout + refresh.stderr
    assert sorted(p.name for p in baseline.iterdir()) == ["run-1", "run-2"]
    assert (baseline / "run-2" / "schedule.parquet").exists()
