"""`rushhour schema`: the JSON Schema of scenario files, the committed copy the bundled scenarios
name, and every bundled scenario valid against it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
import yaml
from click.testing import CliRunner

from rushhour.scenarios.cli.schema import SCHEMA_FILE, schema
from rushhour.scenarios.spec.model import BUNDLED_DIR

BUNDLED = sorted(BUNDLED_DIR.glob("*.yaml"))
SCHEMA_LINE = "# yaml-language-server: $schema=scenario.schema.json"


def _printed() -> dict[str, Any]:
    result = CliRunner().invoke(schema, [])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_schema_prints_a_valid_json_schema_of_the_scenario() -> None:
    printed = _printed()
    jsonschema.Draft202012Validator.check_schema(printed)
    assert {"name", "traffic"} <= set(printed["required"])
    assert "chaos" in printed["properties"] and printed["additionalProperties"] is False


def test_schema_committed_copy_matches_the_models() -> None:
    assert json.loads(SCHEMA_FILE.read_text()) == _printed(), (
        "scenarios/scenario.schema.json is stale: run `rushhour schema > scenarios/scenario.schema.json`")


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_schema_validates_bundled_scenario(path: Path) -> None:
    lines = path.read_text().splitlines()
    assert lines[0] == SCHEMA_LINE
    jsonschema.Draft202012Validator(_printed()).validate(yaml.safe_load(path.read_text()))


def test_schema_rejects_what_the_model_rejects() -> None:
    validator = jsonschema.Draft202012Validator(_printed())
    bad = {"name": "x", "traffic": {"model": "constant:3"}, "targte": {}}
    assert any("targte" in error.message for error in validator.iter_errors(bad))
    assert not list(validator.iter_errors({"name": "x", "traffic": {"model": "constant:3"}}))


def test_schema_out_writes_the_file(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    result = CliRunner().invoke(schema, ["--out", str(out)])
    assert result.exit_code == 0 and json.loads(out.read_text())["title"] == "rushhour scenario"


def test_schema_out_into_a_missing_folder_exits_2_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "nowhere" / "x.json"
    result = CliRunner().invoke(schema, ["--out", str(out)])
    assert result.exit_code == 2
    assert f'--out: cannot write "{out}": the folder "{out.parent}" does not exist' in result.output


def test_schema_out_refuses_to_overwrite_a_file_as_init_does(tmp_path: Path) -> None:
    out = tmp_path / "mine.yaml"
    out.write_text("keep me\n")
    result = CliRunner().invoke(schema, ["--out", str(out)])
    assert result.exit_code == 2 and f'--out: "{out}" already exists' in result.output
    assert out.read_text() == "keep me\n"


def test_schema_out_writes_a_new_file(tmp_path: Path) -> None:
    out = tmp_path / "scenario.schema.json"
    result = CliRunner().invoke(schema, ["--out", str(out)])
    assert result.exit_code == 0 and json.loads(out.read_text()) == _printed()
