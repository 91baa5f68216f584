"""Benchmark: the nightly gate's power and false alarms at the standard of proof, every night kept.

    python -m benchmarks.gate_nights [--same 30] [--cpu 30] [--cpu-small 10] [--fail-same 10] [--fail-slow 10]
        [--factor 1.3] [--small-factor 1.15] [--small-width N] [--ref HEAD | --snapshot | --working-tree] [--neighbour-cores 2]
        [--duration 240s] [--seed 1] [--quiet-cores 0.5] [--quiet-wait-s 300] [--out results/gate-nights.jsonl]

Real nights on this machine, each one appended to `--out` (JSON lines) the moment it ends, so a
trial spread over several invocations keeps every night: run the command again with the same `--out`
and it continues where the file ends (the plan is drawn from `--seed`, so the kinds left to run are
the same). Nothing is dropped after the fact; `--summarise` prints the page's tables from the file.

Kinds of night, in an order drawn from the seed, under a noisy neighbour throughout:

- `same`: `ci/nightly.sh` with both arms the same install, both servers booted fresh for the night.
- `cpu`: the same, the candidate a second install whose quality model does `--factor` times the
  decoding work (its decoder feed-forward widened: a real compute change, CPU-bound, not a
  sleep), booted fresh; `cpu-small` the same at `--small-factor`. The work factor each install
  really has (its quality nodes' CPU per request, benchmarks.gate_nights_work) is measured before
  the first night and recorded; an install far from its factor stops the trial (`check_work`).
- `fail-same`, `fail-slow`: two ground-truth targets (tests/support/timed_target.py), each
  failing 1 request in 400 at once and answering the rest in `--fail-delay-ms`; the candidate of
  `fail-slow` answers `--factor` times slower. `rushhour ab` on them directly.

Before each night the benchmark waits (at most `--quiet-wait-s`) until other work takes at most
`--quiet-cores` over a 10 s window, and every night records how many cores the machine, this
benchmark's own processes and everything else used while it ran (benchmarks.gate_nights_machine):
the protocol's nights have the neighbour and nothing else, and a night beside other work is kept
and marked, never dropped. It also records its exit, verdict sentence, seed, the generator's lag,
error and cache shares per arm, the compared groups, the commit and the neighbour's cores.

The night keeps the nightly scenario's rate (16 requests a second per arm). Two smoke nights that
failed most requests (503 overloaded and 504 deadline, no 429) or were refused for generator lag
ran while other test suites loaded this 2-core machine (load 9-17, the nights' processes under
`nice`); a night beside 0.9 cores of other work failed 0.05% of requests: the rate fits the
machine with the neighbour, and what breaks a night is other work, which the quiet wait and the
record are for. Goal: power >= 0.9 and false alarms <= 0.1 at their one-sided 95% Clopper-Pearson
bounds, and at most 1 in 5 same-code nights inconclusive (benchmarks.gate_nights_table).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.gate_nights_machine import NightMachine, wait_for_quiet
from benchmarks.gate_nights_table import KINDS, markdown
from benchmarks.gate_nights_work import WorkMeasure, measure_work_on, quality_cpu_reader
from benchmarks.gate_trials import FOLDERS, PURELIB, load1, make_setup, start_server
from benchmarks.noisy_neighbour import NoisyNeighbour, busy_cores
from rushhour.kernel.processes import die_with_parent, free_port, stop_process

REPO = Path(__file__).resolve().parents[1]
TIMED_TARGET = REPO / "tests" / "support" / "timed_target.py"
NIGHT_TIMEOUT_S = 1200.0
QUALITY_DEC_FFN = 2048
DECODE_WIDTH_PER_WORK = 4400
"""Decoder feed-forward width that adds about the quality model's whole work per request of the
nightly's length: a step's multiply-adds are the query (512 x 512), the feed-forward in (1,024 x
2,048) and out (2,048 x 512) and the vocabulary (512 x 8,192), 7.6 M, and each unit of width adds
1,536 (a wider weight also falls out of the caches sooner, so the factor is not linear in it)."""
EXTRA_WIDTH = {1.3: 1320, 1.15: 1000}
"""Widths measured to give the protocol's factors (2026-12-05, median quality-node CPU per
90-character request, 100 requests after 20 of warm-up, `measure_work`): +1,320 gave x1.24, x1.29
and x1.36, +1,000 x1.155 (its median wall time x1.152), +800 x1.08 (over 10 real nights its P50
ratios had a median of x1.12-x1.13), +660 x1.08 and x1.10. Other factors get `(factor - 1) x
DECODE_WIDTH_PER_WORK`. The install's width and its factor, measured again before the first night,
are recorded in the file's header."""


def extra_width(factor: float) -> int:
    """How much wider the candidate's quality decoder feed-forward is for `factor` times the work."""
    return EXTRA_WIDTH.get(factor, int(round((factor - 1.0) * DECODE_WIDTH_PER_WORK)))


def _git(*argv: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *argv], capture_output=True, text=True).stdout.strip()


def install_commit(args: argparse.Namespace) -> str:
    """The commit both arms run and whose statistics judge the nights: `--ref`'s, or with
    `--snapshot`/`--working-tree` this checkout's HEAD, "+dirty" when its packages have changes."""
    if not (args.working_tree or args.snapshot):
        commit = _git("rev-parse", "--verify", "--quiet", f"{args.ref}^{{commit}}")
        if not commit:
            raise SystemExit(f'--ref "{args.ref}" is not a commit of {REPO}.')
        return commit
    return _git("rev-parse", "HEAD") + ("+dirty" if _git("status", "--porcelain", "--", *FOLDERS) else "")


@dataclass(frozen=True)
class Bench:
    """What every night of one invocation shares: the installs, the work folder, the neighbour's log."""

    setup: Any
    candidates: dict[str, str]
    workdir: Path
    neighbour_log: Path | None
    commit: str


def wider_install(base_command: str, workdir: Path, factor: float, commit: str, extra: int) -> str:
    """A copy of the baseline's source whose quality decoder feed-forward is `extra` wider, to do
    about `factor` times the work, with its own environment sharing the installed dependencies;
    returns its `rushhour` command."""
    source = Path(base_command).parents[1] / "src" if Path(base_command).parents[1].joinpath("src").is_dir() else REPO
    width = QUALITY_DEC_FFN + extra
    root = workdir / f"cpu-x{factor:g}-w{width}-{commit[:12]}"
    if not (root / "bin" / "rushhour").exists():
        shutil.copytree(source, root / "src", ignore=shutil.ignore_patterns(
            ".git", ".venv", "results", "build", ".rushhour", "__pycache__", "*.egg-info"))
        spec = root / "src" / "reference_server" / "model" / "spec.py"
        text = spec.read_text(encoding="utf-8")
        if f"dec_ffn={QUALITY_DEC_FFN}," not in text:
            raise SystemExit(f"{spec} has no quality decoder of feed-forward width {QUALITY_DEC_FFN} to widen; "
                             "update QUALITY_DEC_FFN in benchmarks/gate_nights.py.")
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


def measure_work(setup: Any, command: str, workdir: Path, requests: int = 100) -> WorkMeasure:
    """The CPU time `command`'s quality nodes spend per request over the baseline's, both servers up at
    once and asked the same texts in turn (benchmarks.gate_nights_work says why CPU, not wall time)."""
    procs, urls = [], []
    try:
        for name, rushhour in (("work-baseline", setup.rushhour), ("work-candidate", command)):
            proc, url = start_server(type(setup)(rushhour, setup.nightly, setup.scenario, setup.serve_args), workdir,
                                     name, "work")
            procs.append(proc)
            urls.append(url)
        with httpx.Client() as client:
            readers = tuple(quality_cpu_reader(url, client) for url in urls)
            return measure_work_on((urls[0], urls[1]), client, readers, requests=requests)
    finally:
        for proc in procs:
            stop_process(proc)


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


def _command(index: int, kind: str, args: argparse.Namespace, bench: Bench, out: Path) -> tuple[list[str], dict[str, str]]:
    setup = bench.setup
    env = dict(os.environ, NIGHTLY_PYTHON=sys.executable, NIGHTLY_SCENARIO=str(setup.scenario),
               NIGHTLY_SERVE_ARGS=" ".join(setup.serve_args), NIGHTLY_OUT=str(out),
               NIGHTLY_ARTIFACTS=str(out.parent / "artifacts"), NIGHTLY_BASELINE_RUSHHOUR=setup.rushhour,
               RUSHHOUR=bench.candidates.get(kind, setup.rushhour))
    if args.duration:
        env["NIGHTLY_DURATION"] = args.duration
    if not kind.startswith("fail"):
        return ["bash", str(setup.nightly)], env
    return [setup.rushhour, "ab", str(args.fail_scenario), "--out", str(out),
            *(["--duration", args.duration] if args.duration else [])], env


def run_night(index: int, kind: str, args: argparse.Namespace, bench: Bench) -> dict[str, Any]:
    """One night, after a bounded wait for a quiet machine; what else the machine did is recorded."""
    night_dir = bench.workdir / "nights" / f"{index:03d}-{kind}"
    night_dir.mkdir(parents=True, exist_ok=True)
    out = night_dir / "results"
    command, env = _command(index, kind, args, bench, out)
    quiet = wait_for_quiet(args.quiet_cores, args.quiet_wait_s)
    before, wall0, started, watch = load1(), time.time(), time.monotonic(), NightMachine().start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        if kind.startswith("fail"):
            procs, urls = _targets(args, kind)
            command += ["--baseline", urls[0], "--candidate", urls[1]]
        done = subprocess.run(command, env=env, text=True, capture_output=True, check=False,
                              timeout=NIGHT_TIMEOUT_S, preexec_fn=die_with_parent)
    finally:
        for proc in procs:
            stop_process(proc)
    machine = watch.stop()
    (night_dir / "night.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    doc = json.loads((out / "ab.json").read_text()) if (out / "ab.json").exists() else {}
    log = bench.neighbour_log
    return {"index": index, "kind": kind, "factor": _factor(args, kind), "exit_code": done.returncode,
            "verdict": doc.get("verdict"), "sentence": doc.get("sentence"),
            "seed": (doc.get("design") or {}).get("seed"), "wall_s": round(time.monotonic() - started, 1),
            "load1_before": before, "load1_after": load1(), "nice": os.nice(0),
            "quiet_wait": {"waited_s": quiet.waited_s, "other_cores": quiet.other_cores, "quiet": quiet.quiet},
            "machine": machine, "beside_other_work": machine["other_cores"] > args.quiet_cores,
            "neighbour_cores": round(busy_cores(log, wall0, time.time()), 2) if log else 0.0,
            "lag_p99_ms": (doc.get("generator") or {}).get("schedule_lag_p99_ms"),
            "error_share": {a: (doc.get("arms") or {}).get(a, {}).get("error_share") for a in ("baseline", "candidate")},
            "cache": {k: (doc.get("cache") or {}).get(k) for k in ("baseline", "candidate", "confounded")},
            "groups": [{k: g.get(k) for k in ("name", "ratio_text", "mde", "verdict", "compared")}
                       for g in doc.get("groups", [])],
            "commit": bench.commit, "date": time.strftime("%Y-%m-%d", time.gmtime()), "results": str(night_dir)}


def _factor(args: argparse.Namespace, kind: str) -> float:
    return {"cpu": args.factor, "cpu-small": args.small_factor, "fail-slow": args.factor}.get(kind, 1.0)


def _width(args: argparse.Namespace, kind: str) -> int:
    small = kind == "cpu-small" and args.small_width is not None
    return int(args.small_width) if small else extra_width(_factor(args, kind))


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
    parser.add_argument("--small-width", type=int, default=None,
                        help="how much wider the cpu-small install's decoder feed-forward is (default: its factor's)")
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
    parser.add_argument("--quiet-cores", type=float, default=0.5,
                        help="before a night, wait until other work takes at most this many cores")
    parser.add_argument("--quiet-wait-s", type=float, default=300.0, help="the longest wait for a quiet machine")
    parser.add_argument("--summarise", action="store_true", help="print the tables of --out and stop")
    parser.add_argument("--workdir", type=Path, default=Path("results/gate-nights"))
    parser.add_argument("--out", type=Path, default=Path("results/gate-nights.jsonl"))
    return parser.parse_args(argv)


def check_work(kind: str, measured: float, factor: float) -> None:
    """Refuse to start a trial whose candidate install does not do clearly more work, about `factor`
    times (the band is wide: on a shared machine one install's CPU per request was measured at
    x1.29, x1.36 and x1.48 of the baseline's within minutes)."""
    low, high = 1.0 + 0.25 * (factor - 1.0), 1.0 + 2.0 * (factor - 1.0)
    if not low <= measured <= high:
        raise SystemExit(f"The {kind} candidate's quality nodes spend x{measured:.3f} the baseline's CPU per request, "
                         f"outside x{low:.3f}-x{high:.3f} around its x{factor:g}; its install does not serve the "
                         "widened model it should, and no night is run.")


def file_header(args: argparse.Namespace, argv: list[str] | None, bench: Bench, header: dict[str, Any]) -> dict[str, Any]:
    """The file's first line, written before its first night: the commit, the command, each install's work."""
    if header:
        if header.get("commit") != bench.commit:
            raise SystemExit(f"{args.out} records nights of commit {header.get('commit')}, and this invocation "
                             f"runs {bench.commit}; every night of one trial runs one commit (give --ref "
                             f"{header.get('commit')}, or another --out).")
        return header
    work = {kind: measure_work(bench.setup, command, bench.workdir) for kind, command in bench.candidates.items()}
    for kind, measured in work.items():
        check_work(kind, measured.cpu_factor, _factor(args, kind))
    header = {"header": True, "command": "python -m benchmarks.gate_nights " + " ".join(argv or sys.argv[1:]),
              "commit": bench.commit, "work_factor": {kind: round(w.cpu_factor, 3) for kind, w in work.items()},
              "work": {kind: w.as_record() for kind, w in work.items()},
              "extra_width": {kind: _width(args, kind) for kind in work},
              "cpu_count": os.cpu_count(), "seed": args.seed}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(header) + "\n", encoding="utf-8")
    return header


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    header, nights = read_nights(args.out)
    if args.summarise:
        print(markdown(nights, header))
        return
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    commit = install_commit(args)
    setup = make_setup(args, workdir)
    candidates = {kind: wider_install(setup.rushhour, workdir, factor, commit, _width(args, kind))
                  for kind, factor, count in (("cpu", args.factor, args.cpu), ("cpu-small", args.small_factor,
                                                                                args.cpu_small)) if count}
    log = workdir / "neighbour.jsonl" if args.neighbour_cores else None
    bench = Bench(setup, candidates, workdir, log, commit)
    header = file_header(args, argv, bench, header)
    todo = plan(args)[len(nights):]
    if args.max_nights is not None:
        todo = todo[:args.max_nights]
    with NoisyNeighbour(cores=args.neighbour_cores, duration_s=len(todo) * (NIGHT_TIMEOUT_S + args.quiet_wait_s),
                        seed=args.seed + len(nights), log=log):
        for offset, kind in enumerate(todo):
            index = len(nights) + 1
            print(f"gate-nights: night {index} ({offset + 1}/{len(todo)} in this invocation): {kind}", flush=True)
            night = run_night(index, kind, args, bench)
            nights.append(night)
            with args.out.open("a", encoding="utf-8") as handle:  # kept the moment it ends
                handle.write(json.dumps(night) + "\n")
            print(f"gate-nights: exit {night['exit_code']}: {night['sentence']}", flush=True)
    print("\n" + markdown(nights, header))


if __name__ == "__main__":
    main()
