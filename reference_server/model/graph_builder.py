"""A thin helper over `onnx.helper` so graph code reads as a list of operations.

Each `op` call appends one node and returns the name of its (single) output, which keeps the
encoder and decoder definitions close to the maths they implement.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["BOOL", "FLOAT", "INT64", "IR_VERSION", "OPSET", "GraphBuilder"]

OPSET = 17
IR_VERSION = 9  # opset 17 needs IR >= 8; staying low keeps older runtimes able to load it


class GraphBuilder:
    """Collects nodes, initializers and graph inputs/outputs for one ONNX graph."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._nodes: list[onnx.NodeProto] = []
        self._inits: list[onnx.TensorProto] = []
        self._inputs: list[onnx.ValueInfoProto] = []
        self._outputs: list[onnx.ValueInfoProto] = []
        self._count = 0

    def _fresh(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}_{self._count}"

    def input(self, name: str, elem_type: int, shape: list[str | int]) -> str:
        """Declare a graph input with symbolic dims (e.g. "batch") and return its name."""
        self._inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def output(self, value: str, name: str, elem_type: int, shape: list[str | int]) -> None:
        """Expose `value` as graph output `name` (through Identity so names stay stable)."""
        self._nodes.append(helper.make_node("Identity", [value], [name]))
        self._outputs.append(helper.make_tensor_value_info(name, elem_type, shape))

    def const(self, value: npt.ArrayLike, prefix: str = "c", dtype: Any = np.float32) -> str:
        """Add an initializer holding `value` and return its name."""
        name = self._fresh(prefix)
        array = np.asarray(value, dtype=dtype)
        self._inits.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        """Append one node with a single output and return that output's name."""
        out = self._fresh(op_type.lower())
        self._nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def model(self) -> onnx.ModelProto:
        """Assemble and check the model."""
        graph = helper.make_graph(
            self._nodes, self.name, self._inputs, self._outputs, initializer=self._inits
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="rushhour",
            ir_version=IR_VERSION,
        )
        onnx.checker.check_model(model)
        return model


BOOL = TensorProto.BOOL
FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64
