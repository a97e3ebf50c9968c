"""The op_type of every node of an ONNX model's graph, read from the protobuf wire format directly
(the onnx package is not needed: onnxruntime's wheel does not bring it)."""


def _fields(buf):
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield field, value


def _varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def op_types(path):
    with open(path, "rb") as f:
        model = f.read()
    graph = next(v for k, v in _fields(model) if k == 7)       # ModelProto.graph
    for k, node in _fields(graph):
        if k == 1:                                             # GraphProto.node
            yield next(v for f, v in _fields(node) if f == 4).decode()  # NodeProto.op_type
