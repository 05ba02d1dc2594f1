"""A minimal ONNX protobuf writer (standard library only) for hostile test models.

Writes exactly the fields given, so a test can declare shapes, attributes and lengths that
no exporter would. Field numbers follow ../shared/spec/onnx.proto.
"""
import struct

FLOAT, UINT8, INT8, INT32, INT64, STRING, BOOL = 1, 2, 3, 6, 7, 8, 9


def varint(v):
    v &= (1 << 64) - 1  # negative int64 values are written as 10-byte two's complement
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def key(field, wire):
    return varint((field << 3) | wire)


def f_varint(field, v):
    return key(field, 0) + varint(v)


def f_bytes(field, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return key(field, 2) + varint(len(payload)) + payload


def f_float(field, v):
    return key(field, 5) + struct.pack("<f", v)


def dim(v):
    return f_bytes(1, f_varint(1, v) if isinstance(v, int) else f_bytes(2, v))


def tensor_type(elem, shape):
    """TypeProto of a tensor; shape None = unranked; entries int (dim_value) or str (dim_param)."""
    body = f_varint(1, elem)
    if shape is not None:
        body += f_bytes(2, b"".join(dim(d) for d in shape))
    return f_bytes(1, body)


def value_info(name, elem, shape):
    return f_bytes(1, name) + f_bytes(2, tensor_type(elem, shape))


def tensor(name, elem, dims, raw=None, int64s=None, strings=None, external=None):
    body = b"".join(f_varint(1, d) for d in dims) + f_varint(2, elem)
    for v in int64s or []:
        body += f_varint(7, v)
    for s in strings or []:
        body += f_bytes(6, s)
    if name:
        body += f_bytes(8, name)
    if raw is not None:
        body += f_bytes(9, raw)
    if external is not None:
        for k, v in external.items():
            body += f_bytes(13, f_bytes(1, k) + f_bytes(2, str(v)))
        body += f_varint(14, 1)
    return body


def attr_int(name, v):
    return f_bytes(1, name) + f_varint(3, v) + f_varint(20, 2)


def attr_ints(name, vs):
    return f_bytes(1, name) + b"".join(f_varint(8, v) for v in vs) + f_varint(20, 7)


def attr_string(name, s):
    return f_bytes(1, name) + f_bytes(4, s) + f_varint(20, 3)


def attr_strings(name, ss):
    return f_bytes(1, name) + b"".join(f_bytes(9, s) for s in ss) + f_varint(20, 8)


def attr_tensor(name, t):
    return f_bytes(1, name) + f_bytes(5, t) + f_varint(20, 4)


def node(op, inputs, outputs, name, attrs=(), domain=""):
    body = b"".join(f_bytes(1, i) for i in inputs) + b"".join(f_bytes(2, o) for o in outputs)
    body += f_bytes(3, name) + f_bytes(4, op)
    body += b"".join(f_bytes(5, a) for a in attrs)
    if domain:
        body += f_bytes(7, domain)
    return body


def model(nodes, inputs, outputs, initializers=(), opsets=(("", 17),)):
    g = b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, "g")
    g += b"".join(f_bytes(5, t) for t in initializers)
    g += b"".join(f_bytes(11, v) for v in inputs)
    g += b"".join(f_bytes(12, v) for v in outputs)
    m = f_varint(1, 8) + f_bytes(2, "hostile") + f_bytes(7, g)
    for d, v in opsets:
        m += f_bytes(8, f_bytes(1, d) + f_varint(2, v))
    return m
