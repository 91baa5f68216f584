"""Benchmark: does the side-by-side nightly gate catch a real compute slowdown, and only that?

    python -m benchmarks.gate_trials [--nights 10] [--factor 1.3] [--small-factor 1.15]
        [--small-nights 10] [--duration 60s] [--ref HEAD | --snapshot | --working-tree] [--neighbour-cores 2]
        [--rate-scale 1] [--fresh-servers] [--seed 1] [--workdir DIR] [--out results/gate-trials.json]

Real nights, no synthetic data. Each night the baseline server and the candidate server run
side by side and `rushhour ab` measures both in the same minutes; its exit code is the night's
verdict (1 flagged). On a slowed night every quality node of the candidate computes `--factor`
times slower for the whole night (the `slowdown` fault through the admin API, as
experiments/gpu-throttle.json injects it); on a same-code night it is untouched. By default both
servers stay up for the whole trial and every night resets the candidate's faults, sets its own,
and runs `rushhour ab`; with `--fresh-servers` each night is a whole `ci/nightly.sh` (both servers
booted for it, the candidate started here so it can be slowed). Same-code, slowed and `--small-factor` nights
come in an order drawn from the seed, so a drift of the machine over the trial weighs on every
kind alike. Both arms run one commit (`--ref`, installed once by ci/baseline_env.sh with shared
dependencies), so a working tree that others edit during the trial cannot make a same-code night
compare two codes; `--snapshot` freezes a copy of this checkout (uncommitted changes included)
the same way, and `--working-tree` uses the checkout itself.

A noisy neighbour (benchmarks.noisy_neighbour: `--neighbour-cores` processes taking cores in
random bursts of 0.2-3 s) runs throughout. Prints one row per night and the detection rate, false
alarm rate, minimum detectable effect and wall time; writes them as JSON and a Markdown table.
Goal: >= 9/10 slowed nights flagged, <= 1/10 same-code nights flagged, a night within 10 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import yaml

from benchmarks.noisy_neighbour import NoisyNeighbour, busy_cores
from rushhour.experiments.local.actions import reset, slow_down_pool
from rushhour.kernel.processes import die_with_parent, free_port, stop_process

REPO = Path(__file__).resolve().parents[1]
GOAL_DETECTED = 0.9
GOAL_FALSE_ALARMS = 0.1
GOAL_NIGHT_S = 600.0
NIGHT_TIMEOUT_S = 900.0
BOOT_TIMEOUT_S = 300.0
PURELIB = 'import sysconfig; print(sysconfig.get_paths()["purelib"])'

FOLDERS = ("kernel", "reference_server", "traffic_models", "scenarios", "experiments", "reports")
"""The top-level folders a copy of the checkout links under `rushhour/`, as setup.py installs them."""


@dataclass(frozen=True)
class Night:
    """One nightly job: its kind and slowdown, exit code, wall time, noise, and the ab groups."""

    index: int
    kind: str  # "same", "slowed" or "small"
    factor: float
    exit_code: int
    wall_s: float
    load1_before: float
    neighbour_cores: float
    verdict: str | None
    groups: list[dict[str, Any]]
    results: str

    @property
    def flagged(self) -> bool:
        return self.exit_code == 1


@dataclass(frozen=True)
class Setup:
    """What every night runs: the `rushhour` command (both servers and ab) and the nightly script."""

    rushhour: str
    nightly: Path
    scenario: Path
    serve_args: list[str]


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def snapshot(workdir: Path) -> str:
    """A frozen copy of this checkout (uncommitted changes included) with its own environment in
    the layout ci/baseline_env.sh makes (shared dependencies); returns its `rushhour` command."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    root = workdir / "snapshot"
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (root / "src" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / "src" / name)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    site = subprocess.run([str(root / "venv" / "bin" / "python"), "-c", PURELIB], capture_output=True, text=True,
                          check=True).stdout.strip()
    shared = subprocess.run([sys.executable, "-c", PURELIB], capture_output=True, text=True, check=True).stdout.strip()
    namespace = root / "ns" / "rushhour"  # the folders read as installed, as ci/baseline_env.sh links them
    namespace.mkdir(parents=True)
    for folder in FOLDERS:
        (namespace / folder).symlink_to(root / "src" / folder)
    Path(site, "rushhour-baseline.pth").write_text(f"{root / 'ns'}\n{shared}\n")
    command = root / "bin" / "rushhour"
    command.parent.mkdir()
    command.write_text(f"#!/usr/bin/env bash\nunset PYTHONPATH\ncd {root / 'src'}\n"
                       f"exec {root / 'venv' / 'bin' / 'python'} -I -m rushhour.scenarios.cli.main \"$@\"\n")
    command.chmod(0o755)
    return str(command)


def make_setup(args: argparse.Namespace, workdir: Path) -> Setup:
    """The environment of `--ref` (built once, shared dependencies), a snapshot, or this working tree."""
    if args.working_tree:
        root, command = REPO, str(Path(sys.executable).with_name("rushhour"))
    elif args.snapshot:
        command = snapshot(workdir)
        root = Path(command).parents[1] / "src"
    else:
        env = dict(os.environ, NIGHTLY_BASELINE_DEPS="shared", NIGHTLY_PYTHON=sys.executable)
        built = subprocess.run(["bash", str(REPO / "ci" / "baseline_env.sh"), args.ref], env=env, text=True,
                               capture_output=True, check=False, timeout=600)
        if built.returncode != 0:
            raise SystemExit(f"Could not build the environment of {args.ref}:\n{built.stderr[-2000:]}")
        command = built.stdout.strip()
        root = Path(command).parents[1] / "src"
    scenario = root / args.scenario
    data = yaml.safe_load(scenario.read_text())
    if args.rate_scale != 1.0:  # a lighter night: the same scenario at a fraction of its rate
        data["traffic"]["rate_scale"] = float(data["traffic"].get("rate_scale", 1.0)) * args.rate_scale
        scenario = workdir / f"{scenario.stem}-x{args.rate_scale:g}.yaml"
        scenario.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    embedded = (data.get("target") or {}).get("embedded") or {}
    serve_args = [f"--{key.replace('_', '-')}={embedded[key]}" for key in ("nodes", "max_batch_size") if key in embedded]
    return Setup(rushhour=command, nightly=root / "ci" / "nightly.sh", scenario=scenario, serve_args=serve_args)


def start_server(setup: Setup, workdir: Path, name: str, token: str) -> tuple[subprocess.Popen[bytes], str]:
    """`rushhour serve` on a free port, ready; its admin token is `token`."""
    port = free_port()
    env = dict(os.environ, RUSHHOUR_ADMIN_TOKEN=token, RUSHHOUR_STATE_DIR=str(workdir / f"{name}-state"))
    log = (workdir / f"{name}-server.log").open("ab")
    proc = subprocess.Popen([setup.rushhour, "serve", "--host", "127.0.0.1", "--port", str(port), *setup.serve_args],
                            env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + BOOT_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/readyz", timeout=2.0).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    stop_process(proc)
    raise SystemExit(f"The {name} server did not become ready at {url}; see {workdir / f'{name}-server.log'}.")


@dataclass(frozen=True)
class Servers:
    """Servers kept up across nights (None with --fresh-servers)."""

    baseline: str
    candidate: str
    token: str


def set_slowdown(url: str, token: str, factor: float) -> None:
    """Heal every fault of the candidate, then slow every quality node by `factor` (1: none)."""
    config, secret = {"rushhour_url": url}, {"admin_token": token}
    reset(configuration=config, secrets=secret)
    if factor != 1.0:
        slow_down_pool(pool="quality", factor=factor, ttl_s=NIGHT_TIMEOUT_S, configuration=config, secrets=secret)


def _night_env(setup: Setup, args: argparse.Namespace, night_dir: Path, index: int) -> dict[str, str]:
    env = dict(os.environ, RUSHHOUR=setup.rushhour, NIGHTLY_BASELINE_RUSHHOUR=setup.rushhour,
               NIGHTLY_SCENARIO=str(setup.scenario), NIGHTLY_PYTHON=sys.executable,
               NIGHTLY_SERVE_ARGS=" ".join(setup.serve_args), NIGHTLY_OUT=str(night_dir / "results"),
               NIGHTLY_ARTIFACTS=str(night_dir / "artifacts"), NIGHTLY_SEED=str(args.seed * 1000 + index))
    for key, value in (("NIGHTLY_DURATION", args.duration), ("NIGHTLY_TRIALS", args.trials),
                       ("NIGHTLY_INTERLEAVE", args.interleave)):
        if value:
            env[key] = str(value)
    return env


def _ab_command(setup: Setup, env: dict[str, str], servers: Servers) -> list[str]:
    command = [setup.rushhour, "ab", str(setup.scenario), "--baseline", servers.baseline, "--candidate",
               servers.candidate, "--out", env["NIGHTLY_OUT"], "--seed", env["NIGHTLY_SEED"]]
    for key, option in (("NIGHTLY_DURATION", "--duration"), ("NIGHTLY_TRIALS", "--trials"),
                        ("NIGHTLY_INTERLEAVE", "--interleave")):
        if key in env:
            command += [option, env[key]]
    return command


def run_night(index: int, kind: str, factor: float, setup: Setup, args: argparse.Namespace, workdir: Path,
              servers: Servers | None, neighbour_log: Path | None) -> Night:
    """One night: `rushhour ab` on the kept servers, or a whole `ci/nightly.sh` with fresh ones."""
    night_dir = workdir / "nights" / f"{index:02d}-{kind}"
    night_dir.mkdir(parents=True)
    env = _night_env(setup, args, night_dir, index)
    before, started_wall, started = load1(), time.time(), time.monotonic()
    proc = None
    try:
        if servers is None:
            token = secrets.token_urlsafe(16)
            proc, url = start_server(setup, night_dir, "candidate", token)
            set_slowdown(url, token, factor)
            command = ["bash", str(setup.nightly)]
            env["NIGHTLY_CANDIDATE_URL"] = url
        else:
            set_slowdown(servers.candidate, servers.token, factor)
            command = _ab_command(setup, env, servers)
        done = subprocess.run(command, env=env, text=True, capture_output=True, check=False,
                              timeout=NIGHT_TIMEOUT_S, preexec_fn=die_with_parent)
    finally:
        if proc is not None:
            stop_process(proc)
    wall_s = time.monotonic() - started
    (night_dir / "night.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    ab_path = night_dir / "results" / "ab.json"
    doc = json.loads(ab_path.read_text()) if ab_path.exists() else {}
    groups = [{key: group.get(key) for key in ("name", "ratio", "ci_low", "ci_high", "ratio_text", "mde", "pairs", "verdict")}
              for group in doc.get("groups", [])]
    noise = busy_cores(neighbour_log, started_wall, time.time()) if neighbour_log else 0.0
    return Night(index=index, kind=kind, factor=factor, exit_code=done.returncode, wall_s=round(wall_s, 1),
                 load1_before=before, neighbour_cores=round(noise, 2), verdict=doc.get("verdict"), groups=groups,
                 results=str(night_dir))


def plan(args: argparse.Namespace) -> list[tuple[str, float]]:
    """Every night's kind and slowdown, in an order drawn from the seed."""
    nights = ([("same", 1.0)] * args.nights + [("slowed", args.factor)] * args.nights
              + [("small", args.small_factor)] * args.small_nights)
    order = np.random.default_rng(args.seed).permutation(len(nights))
    return [nights[i] for i in order]


def _rate(nights: list[Night], kind: str) -> dict[str, Any]:
    chosen = [n for n in nights if n.kind == kind]
    flagged = sum(n.flagged for n in chosen)
    return {"nights": len(chosen), "flagged": flagged, "rate": flagged / len(chosen) if chosen else None,
            "inconclusive_or_invalid": sum(n.exit_code not in (0, 1) for n in chosen),
            "factor": chosen[0].factor if chosen else None}


def _mde(night: Night) -> float | None:
    """The smallest change the night could detect in its most sensitive group."""
    found = [g["mde"] for g in night.groups if g.get("mde") is not None]
    return min(found) if found else None


def summarise(nights: list[Night]) -> dict[str, Any]:
    """Detection and false-alarm rates, minimum detectable effect, wall time, goal met or not."""
    same, slowed = _rate(nights, "same"), _rate(nights, "slowed")
    walls = [n.wall_s for n in nights]
    mdes = [m for m in map(_mde, nights) if m is not None]
    goal = (bool(walls) and (slowed["rate"] or 0.0) >= GOAL_DETECTED and (same["rate"] or 0.0) <= GOAL_FALSE_ALARMS
            and max(walls) <= GOAL_NIGHT_S)
    return {"same": same, "slowed": slowed, "small": _rate(nights, "small"),
            "mde": {"median": statistics.median(mdes), "min": min(mdes), "max": max(mdes)} if mdes else None,
            "night_wall_s": {"median": statistics.median(walls), "max": max(walls)} if walls else None,
            "neighbour_cores_mean": round(statistics.fmean(n.neighbour_cores for n in nights), 2) if nights else None,
            "goal_met": goal}


def _ratios(night: Night) -> str:
    return "; ".join(f"{g['name']} {g.get('ratio_text') or '-'} {g.get('verdict') or ''}".rstrip()
                     for g in night.groups) or "no comparison"


def markdown(result: dict[str, Any]) -> str:
    """The benchmarks page's tables: the rates, then one row per night."""
    s, cfg = result["summary"], result["config"]
    walls = s["night_wall_s"] or {"median": 0.0, "max": 0.0}
    mde = s["mde"] or {"median": float("nan"), "min": float("nan"), "max": float("nan")}

    def rate(key: str) -> str:
        r = s[key]
        return f"**{r['flagged']}/{r['nights']}** ({r['inconclusive_or_invalid']} inconclusive or invalid)"

    lines = ["| measure | result | goal |", "| --- | --- | --- |",
             f"| slowed nights flagged (every quality node ×{cfg['factor']:g}) | {rate('slowed')} | ≥ 9/10 |",
             f"| same-code nights flagged (false alarms) | {rate('same')} | ≤ 1/10 |"]
    if s["small"]["nights"]:
        lines.append(f"| nights flagged at ×{cfg['small_factor']:g} | {rate('small')} | |")
    lines += [f"| minimum detectable effect (most sensitive group, per night) | median ×{mde['median']:.2f} "
              f"(×{mde['min']:.2f}–×{mde['max']:.2f}) | |",
              f"| night wall time ({'candidate boot + `ci/nightly.sh`' if cfg.get('fresh_servers') else '`rushhour ab` on kept servers'}) "
              f"| median {walls['median']:.0f} s, "
              f"max {walls['max']:.0f} s | ≤ 600 s |",
              f"| noisy neighbour, mean cores taken | {s['neighbour_cores_mean']} of {cfg['cpu_count']} | |",
              "", "| night | kind | exit | wall s | load1 before | neighbour cores | P ratio [interval] per group |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for night in result["nights"]:
        n = Night(**night)
        lines.append(f"| {n.index} | {n.kind} ×{n.factor:g} | {n.exit_code} | {n.wall_s:.0f} | {n.load1_before:.2f} | "
                     f"{n.neighbour_cores:.2f} | {_ratios(n)} |")
    return "\n".join(lines) + "\n"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=10, help="same-code nights, and as many slowed ones")
    parser.add_argument("--factor", type=float, default=1.3, help="compute slowdown of the slowed nights")
    parser.add_argument("--small-factor", type=float, default=1.15, help="the smaller slowdown whose detection rate is reported")
    parser.add_argument("--small-nights", type=int, default=10, help="nights at --small-factor (0: none)")
    parser.add_argument("--duration", default=None, help="night length passed to rushhour ab (default: the scenario's)")
    parser.add_argument("--trials", type=int, default=None, help="trials per night (default: rushhour ab's)")
    parser.add_argument("--interleave", choices=("trials", "requests"), default=None,
                        help="rushhour ab's --interleave (default: its own)")
    parser.add_argument("--scenario", type=Path, default=Path("scenarios/nightly.yaml"), help="relative to the checkout")
    parser.add_argument("--rate-scale", type=float, default=1.0, help="multiply the scenario's rate (a lighter night)")
    parser.add_argument("--ref", default="HEAD", help="the commit both arms run (built once, shared dependencies)")
    parser.add_argument("--working-tree", action="store_true", help="run this checkout instead of --ref")
    parser.add_argument("--snapshot", action="store_true",
                        help="run a frozen copy of this checkout, uncommitted changes included, instead of --ref")
    parser.add_argument("--neighbour-cores", type=int, default=2, help="noisy neighbour processes (0: none)")
    parser.add_argument("--fresh-servers", action="store_true", help="each night a whole ci/nightly.sh")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=None, help="default results/gate-trials-<UTC time>")
    parser.add_argument("--out", type=Path, default=Path("results/gate-trials.json"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    workdir = (args.workdir or Path(f"results/gate-trials-{stamp}")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    setup = make_setup(args, workdir)
    nights_plan = plan(args)
    log = workdir / "neighbour.jsonl" if args.neighbour_cores else None
    neighbour = NoisyNeighbour(cores=args.neighbour_cores, duration_s=len(nights_plan) * NIGHT_TIMEOUT_S,
                               seed=args.seed, log=log)
    started = time.monotonic()
    nights: list[Night] = []
    kept: list[subprocess.Popen[bytes]] = []
    interrupted = False
    try:
        servers = None
        if not args.fresh_servers:
            token = secrets.token_urlsafe(16)
            base_proc, base_url = start_server(setup, workdir, "baseline", token)
            kept.append(base_proc)
            cand_proc, cand_url = start_server(setup, workdir, "candidate", token)
            kept.append(cand_proc)
            servers = Servers(baseline=base_url, candidate=cand_url, token=token)
        with neighbour:
            for index, (kind, factor) in enumerate(nights_plan, start=1):
                print(f"gate-trials: night {index}/{len(nights_plan)}: {kind} x{factor:g}", flush=True)
                nights.append(run_night(index, kind, factor, setup, args, workdir, servers, log))
                print(f"gate-trials: exit {nights[-1].exit_code} in {nights[-1].wall_s:.0f} s: "
                      f"{_ratios(nights[-1])}", flush=True)
    except KeyboardInterrupt:  # Ctrl-C ends the trial early; the nights finished so far are still written
        interrupted = True
        print(f"gate-trials: interrupted after {len(nights)} of {len(nights_plan)} nights", flush=True)
    finally:
        for proc in kept:
            stop_process(proc)
    result = {"date": time.strftime("%Y-%m-%d", time.gmtime()),
              "command": "python -m benchmarks.gate_trials " + " ".join(argv if argv is not None else sys.argv[1:]),
              "config": {**{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                         "rushhour": setup.rushhour, "cpu_count": os.cpu_count()},
              "summary": summarise(nights), "trial_wall_s": round(time.monotonic() - started, 1),
              "interrupted": interrupted, "planned_nights": len(nights_plan),
              "nights": [asdict(n) for n in nights]}
    table = markdown(result)
    print("\n" + table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(table, encoding="utf-8")
    print(f"wrote {args.out} and {args.out.with_suffix('.md')} (nights in {workdir})")


if __name__ == "__main__":
    main()
