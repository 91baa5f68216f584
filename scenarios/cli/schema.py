"""`rushhour schema`: the JSON Schema of scenario files, made from the pydantic models that
validate them, so an editor can check and complete a scenario with the very rules a drill uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from rushhour.scenarios.cli.errors import BadInput
from rushhour.scenarios.spec.model import BUNDLED_DIR, Scenario

SCHEMA_FILE = BUNDLED_DIR / "scenario.schema.json"
"""The schema as committed beside the bundled scenarios (their `$schema` line points at it)."""


def scenario_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a scenario file."""
    schema = Scenario.model_json_schema(mode="validation")
    body = {k: v for k, v in schema.items() if k != "title"}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "rushhour scenario", **body}


def schema_text() -> str:
    return json.dumps(scenario_schema(), indent=2, sort_keys=False) + "\n"


@click.command()
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the schema to this new file instead of standard output; an existing file is never "
                   "overwritten.")
def schema(out: Path | None) -> None:
    """Print the JSON Schema of scenario files.

    Point an editor at it for checking and completion: with the YAML language server, a first
    line `# yaml-language-server: $schema=PATH` in a scenario file does it (the bundled
    scenarios carry one that names scenarios/scenario.schema.json).
    """
    if out is None:
        click.echo(schema_text(), nl=False)
        return
    _write(out, schema_text())
    click.echo(f"wrote {out}", err=True)


def _write(out: Path, text: str) -> None:
    """Write a new file, as `rushhour init` does: exit 2 naming the file when it exists or cannot be made."""
    try:
        with out.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise BadInput(f'--out: "{out}" already exists; rushhour schema never overwrites a file. Choose another '
                       "--out, remove it first, or redirect standard output (rushhour schema > FILE).") from None
    except OSError as exc:
        why = f'the folder "{out.parent}" does not exist' if not out.parent.is_dir() else exc.strerror
        raise BadInput(f'--out: cannot write "{out}": {why}.') from None
