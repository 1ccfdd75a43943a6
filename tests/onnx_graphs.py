"""A tiny ONNX graph with no attention in it (one MatMul), shared by the encoder and export tests:
what the transformer optimizer gets when it has nothing to fuse."""

from pathlib import Path


def write_plain_graph(path: Path) -> Path:
    """Save a 1x4 @ 4x4 MatMul model at `path` and return it."""
    import onnx
    from onnx import TensorProto, helper

    weight = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], [0.5] * 16)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "plain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path
