"""Benchmark: judge finished gate nights again with another scenario's SLOs, side by side.

    python -m benchmarks.gate_reanalyse WORKDIR [WORKDIR ...] [--scenario scenarios/nightly.yaml]
        [--out results/gate-reanalyse.json]

Each WORKDIR is one `benchmarks.gate_trials` run (its nights/NN-<kind>/results folders). Every
night's results folder is copied, its scenario's SLOs replaced by `--scenario`'s, and the A/B
verdict rebuilt from the same requests (`rushhour.reports.ab.build`): what the gate with those SLOs would
have said on exactly the data those nights measured, so the percentiles a gate compares (medians
beside P99) and the interleaving designs are weighed on one set of real nights. Prints one row
per night and the flagged rates per run and kind; writes JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from rushhour.kernel.contract import SCENARIO_FILE
from rushhour.reports.ab.build import build_ab

REPO = Path(__file__).resolve().parents[1]
KINDS = ("slowed", "same", "small")


def night_folders(workdir: Path) -> list[tuple[str, Path]]:
    """(kind, results folder) of every night of one gate_trials run that left an A/B result."""
    found = []
    for night in sorted((workdir / "nights").glob("*-*")):
        kind = night.name.split("-", 1)[1]
        results = night / "results"
        if kind in KINDS and (results / "requests.parquet").exists():
            found.append((kind, results))
    return found


def rejudge(results: Path, slos: list[dict[str, Any]]) -> dict[str, Any]:
    """The ab.json document of a copy of `results` whose scenario has `slos`."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "night"
        shutil.copytree(results, copy, ignore=shutil.ignore_patterns("ab.*", "junit.xml", "load"))
        scenario = yaml.safe_load((copy / SCENARIO_FILE).read_text())
        scenario["slos"] = slos
        (copy / SCENARIO_FILE).write_text(yaml.safe_dump(scenario, sort_keys=False))
        return build_ab(copy)


def night_row(label: str, kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    design = doc.get("design", {})
    return {"run": label, "kind": kind, "interleave": design.get("interleave", "trials"),
            "exit_code": doc["exit_code"], "verdict": doc["verdict"],
            "groups": [{"slo": g["slo"], "ratio_text": g["ratio_text"], "ci_low": g["ci_low"], "ci_high": g["ci_high"],
                        "mde": g["mde"], "verdict": g["verdict"]} for g in doc["groups"]]}


def rates(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        if mine:
            flagged = sum(r["exit_code"] == 1 for r in mine)
            out[kind] = {"nights": len(mine), "flagged": flagged, "rate": round(flagged / len(mine), 3)}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdirs", nargs="+", type=Path, help="gate_trials work folders")
    parser.add_argument("--scenario", type=Path, default=REPO / "scenarios" / "nightly.yaml",
                        help="whose SLOs judge every night")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "gate-reanalyse.json")
    args = parser.parse_args(argv)
    slos = yaml.safe_load(args.scenario.read_text())["slos"]
    result: dict[str, Any] = {"scenario": str(args.scenario), "slos": [s["name"] for s in slos], "runs": []}
    for workdir in args.workdirs:
        label = "/".join(workdir.resolve().parts[-2:])
        rows = [night_row(label, kind, rejudge(folder, slos)) for kind, folder in night_folders(workdir)]
        for row in rows:
            groups = "; ".join(f"{g['slo']} {g['ratio_text']} {g['verdict']}" for g in row["groups"])
            print(f"{label:<16} {row['interleave']:<9} {row['kind']:<7} exit {row['exit_code']}  {groups}")
        summary = rates(rows)
        print(f"{label}: " + ", ".join(f"{k} {v['flagged']}/{v['nights']}" for k, v in summary.items()))
        result["runs"].append({"workdir": str(workdir), "rates": summary, "nights": rows})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
