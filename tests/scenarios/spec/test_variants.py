"""Server-policy variants: merging, up-front validation, dry run, and a tiny two-variant drill."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from rushhour.scenarios.cli.run import run
from rushhour.scenarios.spec.model import EmbeddedTarget, parse_scenario
from rushhour.scenarios.spec.variants import deep_merge, embedded_server_data, expand_variants
from tests.support.traffic import short_texts

COST = {"source": "test prices", "date": "2026-11-30",
        "pools": {"quality": {"usd_per_node_hour": 2.5, "kind": "gpu"},
                  "fast": {"usd_per_node_hour": 0.2, "kind": "cpu"}}}


def _scenario(tmp_path: Path, variants: list[dict[str, Any]], **extra: Any) -> Path:
    data = {"name": "pol", "traffic": {"model": str(short_texts(tmp_path, 3)), "duration": "6s", "seed": 5},
            "target": {"embedded": {"nodes": 1, "max_batch_size": 4}},
            "slos": [{"name": "availability", "kind": "availability", "objective": 0.5}],
            "cost": COST, "variants": variants, **extra}
    path = tmp_path / "pol.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


TWO = [{"name": "one", "server": {"pools": {"quality": {"nodes": 1}}}},
       {"name": "two", "server": {"pools": {"quality": {"nodes": 2}}}}]


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(run, list(args))
    return result.exit_code, result.output


def test_variants_deep_merge_merges_maps_and_none_deletes() -> None:
    base: dict[str, Any] = {"pools": {"quality": {"nodes": 2, "max_batch_size": 8}, "fast": {"nodes": 1}}, "max_chars": 10}
    patch = {"pools": {"quality": {"nodes": 3}, "fast": None}, "max_chars": 20}
    assert deep_merge(base, patch) == {"pools": {"quality": {"nodes": 3, "max_batch_size": 8}}, "max_chars": 20}
    assert base["pools"]["quality"]["nodes"] == 2  # the base is not modified


def test_variants_shorthands_fold_in_and_variant_wins(tmp_path: Path) -> None:
    data = embedded_server_data(EmbeddedTarget(nodes=1, max_batch_size=4), source="s", base_dir=tmp_path)
    assert data["pools"]["quality"] == {"max_batch_size": 4, "nodes": 1}
    assert data["pools"]["fast"] == {"max_batch_size": 4}
    scenario = parse_scenario(yaml.safe_load(_scenario(tmp_path, TWO).read_text()), source="s")
    runs = expand_variants(scenario, source="s", base_dir=tmp_path)
    assert [r.server.pools["quality"].nodes for r in runs] == [1, 2]
    assert all(r.server.pools["quality"].max_batch_size == 4 for r in runs)
    assert all(r.scenario.variants == [] and r.scenario.target.embedded is not None and r.scenario.target.embedded.nodes is None
               for r in runs)


def test_variants_bad_field_exits_2_naming_file_and_field(tmp_path: Path) -> None:
    path = _scenario(tmp_path, [TWO[0], {"name": "bad", "server": {"pools": {"quality": {"nodez": 3}}}}])
    code, output = _invoke(str(path), "--dry-run")
    assert code == 2
    assert f"{path}: variants[1].server.pools.quality.nodez" in output


def test_variants_bad_value_in_autoscale_exits_2(tmp_path: Path) -> None:
    scale = {"min_nodes": 3, "max_nodes": 1}
    path = _scenario(tmp_path, [{"name": "r", "server": {"pools": {"quality": {"autoscale": scale}}}}])
    code, output = _invoke(str(path), "--dry-run")
    assert code == 2 and "variants[0].server.pools.quality.autoscale" in output and "min_nodes (3)" in output


def test_variants_repeated_names_exit_2(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path, [TWO[0], TWO[0]])), "--dry-run")
    assert code == 2 and "variants" in output and "repeated: one" in output


def test_variants_unknown_variant_flag_exits_2(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path, TWO)), "--variant", "three", "--dry-run")
    assert code == 2 and '"three"' in output and "one, two" in output


def test_variants_need_the_embedded_target(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path, TWO)), "--target", "http://127.0.0.1:9", "--dry-run")
    assert code == 2 and "target: embedded" in output


def test_variants_dry_run_lists_them(tmp_path: Path) -> None:
    code, output = _invoke(str(_scenario(tmp_path, TWO)), "--dry-run")
    assert code == 0, output
    assert "variants   2" in output and "quality 1 node(s)" in output and "quality 2 node(s)" in output
    code, output = _invoke(str(_scenario(tmp_path, TWO)), "--variant", "two", "--dry-run")
    assert code == 0 and "variants   1" in output and "  two" in output and "  one" not in output


@pytest.mark.slow
@pytest.mark.xdist_group("cpu-a")  # a drill judged on its generator keeping the schedule: in a CPU lane
def test_variants_two_variant_drill_compares_both(tmp_path: Path, drill_process: list) -> None:
    out = tmp_path / "drill"
    # what is tested is the variants' comparison, not the generator: 18 rows per variant make the
    # lag P99 their largest lag, and one late wake-up on two shared cores is over the default 50 ms
    scenario = _scenario(tmp_path, TWO, load={"max_lag_p99_ms": 250})
    argv = [sys.executable, "-m", "rushhour.scenarios.cli.main", "run", str(scenario), "--out", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    drill_process.append(proc)
    output = proc.communicate(timeout=280)[0].decode()
    assert proc.returncode == 0, output
    for name in ("one", "two"):
        assert (out / name / "summary.json").is_file() and (out / name / "report.html").is_file()
        served = yaml.safe_load((out / name / "server-config.yaml").read_text())
        assert served["pools"]["quality"]["nodes"] == (1 if name == "one" else 2)
    comparison = json.loads((out / "comparison.json").read_text())
    rows = {row["name"]: row for row in comparison["variants"]}
    assert list(rows) == ["one", "two"] and {"comparison.html", "comparison.md"} <= {p.name for p in out.iterdir()}
    assert rows["two"]["node_hours"]["quality"] > rows["one"]["node_hours"]["quality"] > 0
    assert rows["two"]["total_usd"] > rows["one"]["total_usd"]
    schedules = [json.loads((out / n / "summary.json").read_text())["requests"]["scheduled"] for n in rows]
    assert schedules[0] == schedules[1] > 0  # same seed, same schedule
    assert f"comparison: {out / 'comparison.html'}" in output and "passed:" in output
