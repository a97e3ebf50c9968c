"""The protobuf wire format read by hand (no protobuf package): TensorBoard event files
(scripts/figures.py) and ONNX models (bench/peers/onnx_ops.py)."""


def varint(buf, i):
    """A protobuf varint at buf[i]: (value, next index)."""
    value = shift = 0
    while True:
        b = buf[i]
        value |= (b & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if b < 0x80:
            return value, i


def fields(buf):
    """A protobuf message's (field number, value) pairs: ints for varints, bytes for the rest."""
    i, out = 0, []
    while i < len(buf):
        key, i = varint(buf, i)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, i = varint(buf, i)
        elif kind == 1:
            value, i = buf[i:i + 8], i + 8
        elif kind == 5:
            value, i = buf[i:i + 4], i + 4
        elif kind == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        else:
            raise ValueError(f"protobuf wire type {kind}")
        out.append((number, value))
    return out
