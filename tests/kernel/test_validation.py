"""The one error formatter: locations are the fields a person wrote, never pydantic's names for
the members of a union, and a message's own capitals (an acronym) are kept."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, Field, ValidationError, field_validator

from rushhour.kernel.validation import format_validation_errors

Point = tuple[str, Annotated[float, Field(ge=0)]]


class _Model(BaseModel):
    curve: str | list[Point] = "flat"
    duration: str | float = "10s"
    name: str = "x"

    @field_validator("name")
    @classmethod
    def _named(cls, value: str) -> str:
        if value == "bad":
            raise ValueError('SLO "p99" needs percentile.')
        return value


def _message(**data: object) -> str:
    with pytest.raises(ValidationError) as caught:
        _Model.model_validate(data)
    return format_validation_errors("f.yaml", caught.value)


def test_format_validation_errors_names_the_field_inside_a_union_member() -> None:
    assert _message(curve=[["00:00", -1]]) == "f.yaml: curve[0][1]: must be >= 0.0 (got -1)"


def test_format_validation_errors_joins_a_union_type_error_into_one_line() -> None:
    assert _message(duration=[1]) == "f.yaml: duration: input should be a valid string or a valid number"


def test_format_validation_errors_keeps_an_acronym_capitalised() -> None:
    assert _message(name="bad") == 'f.yaml: name: SLO "p99" needs percentile.'
