"""Benchmark: the nightly gate's power and false alarms at the standard of proof, every night kept.

    python -m benchmarks.gate_nights [--same 30] [--cpu 30] [--cpu-small 10] [--fail-same 10] [--fail-slow 10]
        [--factor 1.3] [--small-factor 1.15] [--ref HEAD | --snapshot | --working-tree] [--neighbour-cores 2]
        [--duration 240s] [--seed 1] [--out results/gate-nights.jsonl]

Real nights on this machine, each one appended to `--out` (JSON lines) the moment it ends, so a
trial spread over several invocations keeps every night: run the command again with the same `--out`
and it continues where the file ends (the plan is drawn from `--seed`, so the kinds left to run are
the same). Nothing is dropped after the fact; `--summarise` prints the page's tables from the file.

Kinds of night, in an order drawn from the seed, under a noisy neighbour throughout:

- `same`: `ci/nightly.sh` with both arms the same install, both servers booted fresh for the night.
- `cpu`: the same, the candidate a second install whose quality model does `--factor` times the
  decoding work (its decoder feed-forward widened: a real compute change, CPU-bound, not a
  sleep), booted fresh; `cpu-small` the same at `--small-factor`. The work factor each install
  really has is measured once, on a quiet machine, before the first night, and recorded.
- `fail-same`, `fail-slow`: two ground-truth targets (tests/support/timed_target.py), each
  failing 1 request in 400 at once and answering the rest in `--fail-delay-ms`; the candidate of
  `fail-slow` answers `--factor` times slower. `rushhour ab` on them directly.

Every night records its exit, verdict sentence, seed, error and cache shares per arm, groups, the
statistics' commit and the neighbour's load. Goal: power >= 0.9 and false alarms <= 0.1 at their
one-sided 95% Clopper-Pearson bounds, and at most 1 in 5 same-code nights inconclusive.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from scipy.special import betaincinv

from benchmarks.gate_trials import FOLDERS, PURELIB, load1, make_setup, start_server
from benchmarks.noisy_neighbour import NoisyNeighbour, busy_cores
from rushhour.kernel.processes import die_with_parent, free_port, stop_process
from rushhour.reports.ab.calibration import clopper_pearson_upper

REPO = Path(__file__).resolve().parents[1]
TIMED_TARGET = REPO / "tests" / "support" / "timed_target.py"
NIGHT_TIMEOUT_S = 1200.0
QUALITY_DEC_FFN = 2048
DECODE_WIDTH_PER_WORK = 6300
"""Decoder feed-forward width that adds the decoding work of one whole step of the quality model:
a step projects onto the 8,192-word vocabulary (4.2 M multiply-adds at d_model 512) and through
its feed-forward (2 x 512 x 2,048); widening the feed-forward by f x 6,300 adds about f x one step.
The install's real factor is measured anyway (`measure_work`)."""
KINDS = ("same", "cpu", "cpu-small", "fail-same", "fail-slow")
GOAL_POWER, GOAL_FALSE, GOAL_UNDECIDED = 0.9, 0.1, 0.2


def clopper_pearson_lower(hits: int, n: int, confidence: float = 0.95) -> float:
    """One-sided lower bound on a rate from `hits` in `n`."""
    return 0.0 if hits <= 0 or n <= 0 else float(betaincinv(hits, n - hits + 1, 1.0 - confidence))


def statistics_commit() -> str:
    """The commit whose statistics judge the nights, with "+dirty" when the tree has changes."""
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "reports", "scenarios"],
                           capture_output=True, text=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def wider_install(base_command: str, workdir: Path, factor: float) -> str:
    """A copy of the baseline's source whose quality decoder does about `factor` times the work,
    with its own environment sharing the installed dependencies; returns its `rushhour` command."""
    source = Path(base_command).parents[1] / "src" if Path(base_command).parents[1].joinpath("src").is_dir() else REPO
    root = workdir / f"cpu-x{factor:g}"
    if not (root / "bin" / "rushhour").exists():
        shutil.copytree(source, root / "src", ignore=shutil.ignore_patterns(
            ".git", ".venv", "results", "build", ".rushhour", "__pycache__", "*.egg-info"))
        spec = root / "src" / "reference_server" / "model" / "spec.py"
        width = int(round(QUALITY_DEC_FFN + (factor - 1.0) * DECODE_WIDTH_PER_WORK))
        text = spec.read_text(encoding="utf-8")
        spec.write_text(text.replace(f"dec_ffn={QUALITY_DEC_FFN},", f"dec_ffn={width},", 1), encoding="utf-8")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
        site = subprocess.run([str(root / "venv" / "bin" / "python"), "-c", PURELIB], capture_output=True, text=True,
                              check=True).stdout.strip()
        shared = subprocess.run([sys.executable, "-c", PURELIB], capture_output=True, text=True,
                                check=True).stdout.strip()
        namespace = root / "ns" / "rushhour"  # the folders read as installed, as ci/baseline_env.sh links them
        namespace.mkdir(parents=True, exist_ok=True)
        for folder in FOLDERS:
            (namespace / folder).symlink_to(root / "src" / folder)
        Path(site, "rushhour-candidate.pth").write_text(f"{root / 'ns'}\n{shared}\n")
        command = root / "bin" / "rushhour"
        command.parent.mkdir(exist_ok=True)
        command.write_text(f"#!/usr/bin/env bash\nunset PYTHONPATH\ncd {root / 'src'}\n"
                           f"exec {root / 'venv' / 'bin' / 'python'} -I -m rushhour.scenarios.cli.main \"$@\"\n")
        command.chmod(0o755)
    return str(root / "bin" / "rushhour")


def measure_work(setup: Any, command: str, workdir: Path, requests: int = 60) -> float:
    """Median quality-tier compute time of `command`'s server over the baseline's, both up at once and
    asked in turn, one request at a time (the machine's moments fall on both alike)."""
    procs, urls = [], []
    try:
        for name, rushhour in (("work-baseline", setup.rushhour), ("work-candidate", command)):
            proc, url = start_server(type(setup)(rushhour, setup.nightly, setup.scenario, setup.serve_args), workdir,
                                     name, "work")
            procs.append(proc)
            urls.append(url)
        text = "the same sentence of about forty words, " * 6
        times: list[list[float]] = [[], []]
        for i in range(requests):
            for arm, url in enumerate(urls):
                body = {"text": f"{i} {text}", "source_lang": "en", "target_lang": "de", "mode": "quality",
                        "priority": "paid", "deadline_ms": 60000}
                times[arm].append(float(httpx.post(f"{url}/v1/translate", json=body, timeout=60).json()["timing"]["infer_ms"]))
    finally:
        for proc in procs:
            stop_process(proc)
    return float(np.median(times[1]) / np.median(times[0]))


def plan(args: argparse.Namespace) -> list[str]:
    counts = {"same": args.same, "cpu": args.cpu, "cpu-small": args.cpu_small, "fail-same": args.fail_same,
              "fail-slow": args.fail_slow}
    nights = [kind for kind in KINDS for _ in range(counts[kind])]
    return [nights[i] for i in np.random.default_rng(args.seed).permutation(len(nights))]


def _targets(args: argparse.Namespace, kind: str) -> tuple[list[subprocess.Popen[bytes]], list[str]]:
    procs, urls = [], []
    for delay in (args.fail_delay_ms, args.fail_delay_ms * (args.factor if kind == "fail-slow" else 1.0)):
        port = free_port()
        procs.append(subprocess.Popen([sys.executable, str(TIMED_TARGET), str(port), str(delay), "400"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent))
        urls.append(f"http://127.0.0.1:{port}")
    time.sleep(1.0)
    return procs, urls


def run_night(index: int, kind: str, args: argparse.Namespace, setup: Any, candidates: dict[str, str],
              workdir: Path, neighbour_log: Path | None) -> dict[str, Any]:
    night_dir = workdir / "nights" / f"{index:03d}-{kind}"
    night_dir.mkdir(parents=True, exist_ok=True)
    out = night_dir / "results"
    env = dict(os.environ, NIGHTLY_PYTHON=sys.executable, NIGHTLY_SCENARIO=str(setup.scenario),
               NIGHTLY_SERVE_ARGS=" ".join(setup.serve_args), NIGHTLY_OUT=str(out),
               NIGHTLY_ARTIFACTS=str(night_dir / "artifacts"), NIGHTLY_BASELINE_RUSHHOUR=setup.rushhour,
               RUSHHOUR=candidates.get(kind, setup.rushhour))
    if args.duration:
        env["NIGHTLY_DURATION"] = args.duration
    before, wall0, started = load1(), time.time(), time.monotonic()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        if kind.startswith("fail"):
            procs, urls = _targets(args, kind)
            command = [setup.rushhour, "ab", str(args.fail_scenario), "--baseline", urls[0], "--candidate", urls[1],
                       "--out", str(out), *(["--duration", args.duration] if args.duration else [])]
        else:
            command = ["bash", str(setup.nightly)]
        done = subprocess.run(command, env=env, text=True, capture_output=True, check=False,
                              timeout=NIGHT_TIMEOUT_S, preexec_fn=die_with_parent)
    finally:
        for proc in procs:
            stop_process(proc)
    (night_dir / "night.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    doc = json.loads((out / "ab.json").read_text()) if (out / "ab.json").exists() else {}
    return {"index": index, "kind": kind, "factor": _factor(args, kind), "exit_code": done.returncode,
            "verdict": doc.get("verdict"), "sentence": doc.get("sentence"),
            "seed": (doc.get("design") or {}).get("seed"), "wall_s": round(time.monotonic() - started, 1),
            "load1_before": before,
            "neighbour_cores": round(busy_cores(neighbour_log, wall0, time.time()), 2) if neighbour_log else 0.0,
            "error_share": {a: (doc.get("arms") or {}).get(a, {}).get("error_share") for a in ("baseline", "candidate")},
            "cache": {k: (doc.get("cache") or {}).get(k) for k in ("baseline", "candidate", "confounded")},
            "groups": [{k: g.get(k) for k in ("name", "ratio_text", "mde", "verdict", "compared")}
                       for g in doc.get("groups", [])],
            "commit": statistics_commit(), "date": time.strftime("%Y-%m-%d", time.gmtime()), "results": str(night_dir)}


def _factor(args: argparse.Namespace, kind: str) -> float:
    return {"cpu": args.factor, "cpu-small": args.small_factor, "fail-slow": args.factor}.get(kind, 1.0)


def summarise(nights: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind: nights, flagged, passed, undecided, and the one-sided 95% bound that matters."""
    out: dict[str, Any] = {}
    for kind in KINDS:
        chosen = [n for n in nights if n["kind"] == kind]
        n = len(chosen)
        flagged = sum(c["exit_code"] == 1 for c in chosen)
        row = {"nights": n, "flagged": flagged, "passed": sum(c["exit_code"] == 0 for c in chosen),
               "undecided": sum(c["exit_code"] not in (0, 1) for c in chosen)}
        if kind in ("same", "fail-same"):
            row["false_alarm_bound"] = clopper_pearson_upper(flagged, n) if n else None
        else:
            row["power_bound"] = clopper_pearson_lower(flagged, n) if n else None
        out[kind] = row
    return out


def markdown(nights: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    s = summarise(nights)
    lines = [f"Statistics at commit(s) {', '.join(sorted({n['commit'] for n in nights})) or '-'}; measured work "
             f"factor of the CPU-bound candidates: {meta.get('work_factor', {})}.", "",
             "| kind | nights | flagged (exit 1) | passed (exit 0) | inconclusive or invalid | one-sided 95% bound |",
             "| --- | --- | --- | --- | --- | --- |"]
    for kind, r in s.items():
        bound = (f"false alarms <= {100 * r['false_alarm_bound']:.1f}%" if "false_alarm_bound" in r and r["nights"]
                 else f"power >= {100 * r['power_bound']:.1f}%" if r.get("power_bound") is not None else "-")
        lines.append(f"| {kind} | {r['nights']} | {r['flagged']} | {r['passed']} | {r['undecided']} | {bound} |")
    lines += ["", "| night | date | kind | exit | neighbour cores | seed | groups |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for n in nights:
        groups = "; ".join(f"{g['name']} {g['ratio_text']} {g['verdict']}" for g in n["groups"]) or (n["sentence"] or "-")
        lines.append(f"| {n['index']} | {n['date']} | {n['kind']} x{n['factor']:g} | {n['exit_code']} | "
                     f"{n['neighbour_cores']} | {n['seed']} | {groups} |")
    return "\n".join(lines) + "\n"


def read_nights(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The file's header (first line) and every night recorded so far."""
    if not path.exists():
        return {}, []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return (rows[0], rows[1:]) if rows and rows[0].get("header") else ({}, rows)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for kind, default in (("same", 30), ("cpu", 30), ("cpu-small", 10), ("fail-same", 10), ("fail-slow", 10)):
        parser.add_argument(f"--{kind}", type=int, default=default, help=f"nights of kind {kind}")
    parser.add_argument("--factor", type=float, default=1.3)
    parser.add_argument("--small-factor", type=float, default=1.15)
    parser.add_argument("--fail-delay-ms", type=float, default=200.0)
    parser.add_argument("--fail-scenario", type=Path, default=REPO / "scenarios" / "nightly.yaml")
    parser.add_argument("--duration", default=None, help="night length (default: the scenario's)")
    parser.add_argument("--scenario", type=Path, default=Path("scenarios/nightly.yaml"))
    parser.add_argument("--rate-scale", type=float, default=1.0)
    parser.add_argument("--ref", default="HEAD")
    parser.add_argument("--working-tree", action="store_true")
    parser.add_argument("--snapshot", action="store_true")
    parser.add_argument("--neighbour-cores", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-nights", type=int, default=None, help="stop after this many nights in this invocation")
    parser.add_argument("--summarise", action="store_true", help="print the tables of --out and stop")
    parser.add_argument("--workdir", type=Path, default=Path("results/gate-nights"))
    parser.add_argument("--out", type=Path, default=Path("results/gate-nights.jsonl"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    header, nights = read_nights(args.out)
    if args.summarise:
        print(markdown(nights, header))
        return
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    setup = make_setup(args, workdir)
    candidates = {kind: wider_install(setup.rushhour, workdir, factor)
                  for kind, factor, count in (("cpu", args.factor, args.cpu), ("cpu-small", args.small_factor,
                                                                                args.cpu_small)) if count}
    if not header:
        work = {kind: round(measure_work(setup, command, workdir), 3) for kind, command in candidates.items()}
        header = {"header": True, "command": "python -m benchmarks.gate_nights " + " ".join(argv or sys.argv[1:]),
                  "work_factor": work, "cpu_count": os.cpu_count(), "seed": args.seed}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(header) + "\n", encoding="utf-8")
    todo = plan(args)[len(nights):]
    if args.max_nights is not None:
        todo = todo[:args.max_nights]
    log = workdir / "neighbour.jsonl" if args.neighbour_cores else None
    with NoisyNeighbour(cores=args.neighbour_cores, duration_s=len(todo) * NIGHT_TIMEOUT_S, seed=args.seed + len(nights),
                        log=log):
        for offset, kind in enumerate(todo):
            index = len(nights) + 1
            print(f"gate-nights: night {index} ({offset + 1}/{len(todo)} in this invocation): {kind}", flush=True)
            night = run_night(index, kind, args, setup, candidates, workdir, log)
            nights.append(night)
            with args.out.open("a", encoding="utf-8") as handle:  # kept the moment it ends
                handle.write(json.dumps(night) + "\n")
            print(f"gate-nights: exit {night['exit_code']}: {night['sentence']}", flush=True)
    print("\n" + markdown(nights, header))


if __name__ == "__main__":
    main()
