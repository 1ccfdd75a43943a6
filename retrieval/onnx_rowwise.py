"""The ``onnx-rows8`` graph: the float graph's matrix products on int8, with activations quantised per row.

Each MatMul of a constant weight becomes: the row's scale ``s = max|x| / 127`` (one per token, so a
text never shares a scale with the texts batched beside it and its vector does not depend on them),
``x`` quantised to uint8 around 128 by one QuantizeLinear over the rows, ``MatMulInteger`` with the
weights quantised to int8 per output column (onnxruntime runs it on its VNNI/AMX int8 kernels), then
the int32 result times ``s`` and the column's scale. The Attention nodes keep their float QKV
product: per-row int8 there moved vectors four times as far (cosine .9976 mean to the float graph).

Needs the ``onnx`` package to write the graph; running it needs only onnxruntime.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np


def rewrite(source: Path, target: Path, keep_float: str | None = None) -> int:
    """Write ``source``'s graph with its constant-weight MatMuls on per-row int8 to ``target``;
    MatMuls whose node name matches the regex ``keep_float`` stay float. Returns how many were rewritten."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    weights = {i.name: i for i in graph.initializer}
    nodes, added = [], []

    def const(name: str, value) -> str:
        added.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    const("rows8_eps", np.array(1e-12, np.float32))
    const("rows8_127", np.array(127.0, np.float32))
    const("rows8_zero", np.array(128, np.uint8))
    const("rows8_zero_row", np.array([128], np.uint8))
    const("rows8_last", np.array([-1], np.int64))
    const("rows8_first", np.array([0], np.int64))
    rewritten = 0
    for node in graph.node:
        if (node.op_type != "MatMul" or node.input[1] not in weights
                or (keep_float and re.search(keep_float, node.name))):
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)
        scale = np.maximum(np.abs(w).max(axis=0), 1e-12) / 127.0
        p, x = f"rows8_{rewritten}_", node.input[0]
        rewritten += 1
        const(p + "wq", np.clip(np.round(w / scale), -127, 127).astype(np.int8))
        const(p + "ws", scale.astype(np.float32))
        const(p + "rows", np.array([-1, w.shape[0]], np.int64))
        const(p + "cols", np.array([w.shape[1]], np.int64))

        def op(kind: str, inputs: list[str], out: str, **attrs):
            return helper.make_node(kind, inputs, [p + out], **attrs)

        nodes += [
            op("Shape", [x], "shape"), op("Reshape", [x, p + "rows"], "x2"), op("Abs", [p + "x2"], "abs"),
            op("ReduceMax", [p + "abs"], "max", axes=[1], keepdims=0), op("Max", [p + "max", "rows8_eps"], "max2"),
            op("Div", [p + "max2", "rows8_127"], "s"), op("Shape", [p + "s"], "n"),
            op("Expand", ["rows8_zero_row", p + "n"], "zp"),
            op("QuantizeLinear", [p + "x2", p + "s", p + "zp"], "q", axis=0),
            op("MatMulInteger", [p + "q", p + "wq", "rows8_zero"], "int"),
            op("Cast", [p + "int"], "f", to=TensorProto.FLOAT), op("Unsqueeze", [p + "s", "rows8_last"], "s2"),
            op("Mul", [p + "f", p + "s2"], "y1"), op("Mul", [p + "y1", p + "ws"], "y2"),
            op("Slice", [p + "shape", "rows8_first", "rows8_last"], "lead"),
            op("Concat", [p + "lead", p + "cols"], "out", axis=0),
            helper.make_node("Reshape", [p + "y2", p + "out"], [node.output[0]]),
        ]
    used = {i for n in nodes for i in n.input}
    kept = [i for i in graph.initializer if i.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    onnx.save(model, str(target))
    return rewritten
