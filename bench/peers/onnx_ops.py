"""The op_type of every node of an ONNX model's graph, read with scripts/protobuf_wire.py (the onnx
package is not needed: onnxruntime's wheel does not bring it)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from protobuf_wire import fields  # noqa: E402


def op_types(path):
    with open(path, "rb") as f:
        model = f.read()
    graph = next(v for k, v in fields(model) if k == 7)                # ModelProto.graph
    for k, node in fields(graph):
        if k == 1:                                                     # GraphProto.node
            yield next(v for f, v in fields(node) if f == 4).decode()  # NodeProto.op_type
