"""The results contract declares each table's columns once; the writers take theirs from it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from rushhour.kernel import contract
from rushhour.scenarios.generator.partwriter import PART_COLUMNS, PART_SCHEMA, part_batch, write_part
from rushhour.traffic_models.schedule import COLUMNS

_ARROW_NAMES = {"int64": "int64", "float64": "double", "bool": "bool", "object": "string"}


def test_part_files_are_written_with_the_contract_columns_and_types(tmp_path: Path) -> None:
    path = tmp_path / "part-w0-000000.parquet"
    write_part(pa.Table.from_batches([part_batch([{"row": 3, "intended_s": 1.5, "sent_s": 1.6, "done_s": 1.9, "status": 200, "error": "",
                            "model": "quality", "cached": False, "degraded": True, "node": "n0", "via": "translate"}])]), path)
    schema = pq.read_schema(path)
    assert schema.names == list(contract.PART_COLUMNS) == list(PART_COLUMNS)
    assert {f.name: str(f.type) for f in schema} == {k: _ARROW_NAMES[v] for k, v in contract.PART_COLUMNS.items()}
    assert PART_SCHEMA.names == list(contract.PART_COLUMNS)


def test_schedule_columns_come_from_the_contract() -> None:
    assert COLUMNS == list(contract.SCHEDULE_COLUMNS)


def test_columns_of_keeps_a_subset_in_the_order_given() -> None:
    assert contract.columns_of(contract.REQUEST_COLUMNS, "sent_s", "intended_s") == ("sent_s", "intended_s")


def test_columns_of_names_a_column_the_table_does_not_declare() -> None:
    with pytest.raises(LookupError, match="'offset_s'"):
        contract.columns_of(contract.REQUEST_COLUMNS, "intended_s", "offset_s")

