"""ab.json's model against the documents build_ab writes for simulated nights whose answer is known."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rushhour.kernel.contract import AB_JSON_FILE
from rushhour.reports.ab.build import build_ab
from rushhour.reports.ab.document_model import AbDocument, read_ab
from rushhour.reports.ab.render import write_ab_files
from tests.reports.ab.test_build import _folder, _night


def test_ab_document_of_a_slower_candidate_reads_back_as_a_regression(tmp_path: Path) -> None:
    root = _folder(tmp_path, _night(1.5, seed=2))
    doc = build_ab(root)
    model = read_ab(root / AB_JSON_FILE)
    assert (model.verdict, model.exit_code, model.threshold) == ("regression", 1, 1.1)
    [group] = model.groups
    assert group.verdict == "regression" and group.ci_low is not None and group.ci_low > 1.0
    assert group.ratio == pytest.approx(doc["groups"][0]["ratio"]) and group.errors.margin == model.error_margin
    assert model.arms["baseline"].scheduled + model.arms["candidate"].scheduled == sum(t.attempted for t in model.trials)
    assert model.generator.valid and model.design.trials == len(model.trials) == 96
    assert model.model_dump(mode="json", exclude_unset=True) == json.loads((root / AB_JSON_FILE).read_text())


def test_ab_document_of_the_same_code_is_no_regression(tmp_path: Path) -> None:
    model = AbDocument.model_validate(build_ab(_folder(tmp_path, _night(1.0, seed=3))))
    assert model.verdict == "no_regression" and model.groups[0].ci_high is not None
    assert model.groups[0].ci_high < 1.1 and model.errors[0].not_worse


@pytest.mark.parametrize(("where", "value", "named"), [
    (("groups", 0, "verdict"), "maybe", "groups.0.verdict"),
    (("threshold",), "high", "threshold"),
    (("arms", "candidate", "ok"), "all", "arms.candidate.ok"),
    (("generator", "valid"), None, "generator.valid"),
])
def test_ab_document_with_a_malformed_field_is_refused_by_name_before_writing(
        tmp_path: Path, where: tuple[Any, ...], value: object, named: str) -> None:
    root = _folder(tmp_path, _night(1.0, seed=4))
    doc = build_ab(root)
    (root / AB_JSON_FILE).unlink()
    broken = copy.deepcopy(doc)
    part = broken
    for key in where[:-1]:
        part = part[key]
    part[where[-1]] = value
    with pytest.raises(ValidationError, match=named.replace(".", r"\.")):
        write_ab_files(root, broken)
    assert not (root / AB_JSON_FILE).exists()
