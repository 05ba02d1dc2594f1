"""onyx: an ONNX inference runtime in C++, with onnxruntime's Python call shape.

A script written for onnxruntime runs unchanged with ``import onyx as onnxruntime``::

    import numpy as np
    import onyx as ort

    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]            # .name, .shape ([1, 3, 'H', None]), .type ('tensor(float)')
    (probs,) = sess.run(None, {inp.name: np.zeros((1, 3, 224, 224), np.float32)})

Errors are ``onyx.OnyxError`` subclasses, one per onyx error code: ``InvalidGraph``
(invalid model), ``NotImplemented`` (unsupported op/opset/dtype), ``InvalidArgument`` (bad
input), ``NoSuchFile`` (I/O), ``RuntimeException`` (a node failed), ``LimitExceeded`` and
``Cancelled``; each carries onyx's message (the node, the shapes, the layout hint).

Element types: every ONNX type onyx supports maps to numpy; strings are ``object`` arrays
of ``str`` (bytes that are not UTF-8 come back as U+DC80..U+DCFF, as Python's
surrogateescape reads them and as ``onyx run`` writes them; ``bytes`` items are accepted). Types numpy lacks travel as
their bit patterns: bfloat16 as ``uint16``; float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz,
e8m0) and float4e2m1 as ``uint8``, one element per byte; int4/int2 as ``int8`` and
uint4/uint2 as ``uint8``, one element per byte (unpacked). Sequences are lists of arrays,
an empty optional is ``None``.

Also here, from the same C++ as the CLI and the browser: ``ctc_decode``, ``decode_boxes``,
``nms`` and ``preprocess_text_line``.
"""
import enum as _enum

from ._onyx import (  # noqa: F401
    Cancelled,
    GraphOptimizationLevel,
    InferenceSession,
    InvalidArgument,
    InvalidGraph,
    LimitExceeded,
    ModelMetadata,
    NodeArg,
    NoSuchFile,
    NotImplemented,
    OnyxError,
    RunOptions,
    RuntimeException,
    SessionOptions,
    ctc_decode,
    decode_boxes,
    nms,
    preprocess_text_line,
)

__version__ = "0.1.0"

# onyx's own names for the error classes (onyx::ErrorCode), beside onnxruntime's.
InvalidModel = InvalidGraph
Unsupported = NotImplemented
Fail = OnyxError


class ExecutionMode(_enum.IntEnum):
    """Accepted for onnxruntime scripts; onyx runs the nodes of a graph in order."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


def get_available_providers():
    """The execution providers onyx has: the CPU only."""
    return ["CPUExecutionProvider"]


def get_all_providers():
    return ["CPUExecutionProvider"]


def get_device():
    return "CPU"


def get_version_string():
    return __version__
