"""Every element type through Identity (the output must equal the input: ONNX's Identity),
strings as object arrays, bit-pattern types, sequences and optionals, zero-copy inputs,
and the pre/post-processing helpers against their references (models/crnn-digits'
preprocess.py and ctc_decode.py, torchvision's nms)."""
import importlib.util

import numpy as np
import pytest
from onnx import TensorProto, helper

import onyx
from conftest import SOURCE
from models import identity, serialize

NUMPY_TYPES = [
    (TensorProto.FLOAT, np.float32), (TensorProto.DOUBLE, np.float64), (TensorProto.FLOAT16, np.float16),
    (TensorProto.INT8, np.int8), (TensorProto.INT16, np.int16), (TensorProto.INT32, np.int32),
    (TensorProto.INT64, np.int64), (TensorProto.UINT8, np.uint8), (TensorProto.UINT16, np.uint16),
    (TensorProto.UINT32, np.uint32), (TensorProto.UINT64, np.uint64), (TensorProto.BOOL, np.bool_),
]


@pytest.mark.parametrize("elem,dtype", NUMPY_TYPES, ids=[d.__name__ for _, d in NUMPY_TYPES])
def test_identity_numpy_types(elem, dtype):
    sess = onyx.InferenceSession(identity(elem))
    assert sess.get_inputs()[0].type == "tensor(" + TensorProto.DataType.Name(elem).lower() + ")"
    x = (np.arange(6).reshape(2, 3) % 2 == 1) if dtype is np.bool_ else np.arange(6).reshape(2, 3).astype(dtype)
    before = x.copy()
    (y,) = sess.run(None, {"x": x})
    assert y.dtype == x.dtype and y.tobytes() == x.tobytes()
    assert not np.shares_memory(x, y)  # outputs belong to the caller
    assert x.tobytes() == before.tobytes()  # the input is read in place, never written


def test_non_contiguous_input_is_copied_in_order():
    sess = onyx.InferenceSession(identity(TensorProto.FLOAT))
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = base[:2, 1:]  # a strided view
    assert not x.flags.c_contiguous
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.ascontiguousarray(x))


def test_strings():
    sess = onyx.InferenceSession(identity(TensorProto.STRING))
    assert sess.get_inputs()[0].type == "tensor(string)"
    x = np.array([["a", "héllo", ""], ["x" * 100, "日本", "z"]], dtype=object)
    (y,) = sess.run(None, {"x": x})
    assert y.dtype == object and y.shape == (2, 3) and y.tolist() == x.tolist()
    (u,) = sess.run(None, {"x": x.astype(str)})  # numpy unicode arrays work too
    assert u.tolist() == x.tolist()
    raw = np.array([[b"\xff\xfe", b"ok", b""], [b"a", b"b", b"c"]], dtype=object)
    (r,) = sess.run(None, {"x": raw})
    assert r[0, 0].encode("utf-8", "surrogateescape") == b"\xff\xfe" and r[0, 1] == "ok"


def test_bfloat16_and_float8_travel_as_bits():
    # bfloat16 bits of 1.0, -2.0, 0.5; float8e4m3fn bits of 1.0 (0x38), -1.0 (0xb8).
    bf = np.array([0x3F80, 0xC000, 0x3F00], np.uint16)
    sess = onyx.InferenceSession(identity(TensorProto.BFLOAT16, (3,)))
    assert sess.get_inputs()[0].type == "tensor(bfloat16)"
    (y,) = sess.run(None, {"x": bf})
    assert y.dtype == np.uint16 and y.tolist() == bf.tolist()
    cast = onyx.InferenceSession(serialize(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])]))
    assert cast.run(None, {"x": bf})[0].tolist() == [1.0, -2.0, 0.5]


def test_sequences_and_optionals():
    seq = onyx.InferenceSession(serialize(
        [helper.make_node("SequenceConstruct", ["a", "b"], ["s"])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])],
        [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)]))
    assert seq.get_outputs()[0].type == "seq(tensor(float))"
    a, b = np.ones(2, np.float32), np.arange(3, dtype=np.float32)
    (s,) = seq.run(None, {"a": a, "b": b})
    assert isinstance(s, list) and len(s) == 2
    np.testing.assert_array_equal(s[0], a)
    np.testing.assert_array_equal(s[1], b)
    at = onyx.InferenceSession(serialize(
        [helper.make_node("SequenceAt", ["s", "i"], ["y"])],
        [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("i", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]))
    np.testing.assert_array_equal(at.run(None, {"s": [a, b], "i": np.array(1)})[0], b)
    opt_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    has = onyx.InferenceSession(serialize(
        [helper.make_node("OptionalHasElement", ["o"], ["h"])],
        [helper.make_value_info("o", opt_type)],
        [helper.make_tensor_value_info("h", TensorProto.BOOL, [])]))
    assert has.get_inputs()[0].type == "optional(tensor(float))"
    assert has.run(None, {"o": None})[0].item() is False
    assert has.run(None, {"o": a})[0].item() is True


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_preprocess_and_ctc_match_the_numpy_references():
    d = SOURCE / "models" / "crnn-digits"
    pre = load(d / "preprocess.py", "crnn_preprocess")
    ctc = load(d / "ctc_decode.py", "crnn_ctc")
    for name in ["0000.png", "0001.png", "0002.png"]:
        rgba = pre.decode_rgba(str(d / "reference" / "images" / name))
        got = onyx.preprocess_text_line(rgba)
        want = pre.preprocess_file(str(d / "reference" / "images" / name))
        assert got.shape == want.shape and got.dtype == np.float32
        assert np.max(np.abs(got - want)) <= 1e-6  # tests/image/preprocess_test.py's tolerance
        gray = pre.to_gray(rgba)
        assert np.max(np.abs(onyx.preprocess_text_line(gray) - want)) <= 1e-6
    rng = np.random.default_rng(5)
    for _ in range(20):
        logits = rng.standard_normal((1, 30, 11)).astype(np.float32) * 3
        want = ctc.labels_to_text(ctc.greedy_decode(logits[0], 0), "0123456789", 0)
        assert onyx.ctc_decode(logits, "0123456789") == [want]
        want_beam = ctc.labels_to_text(ctc.beam_decode(logits[0], 0, 8), "0123456789", 0)
        assert onyx.ctc_decode(logits, "0123456789", beam_width=8) == [want_beam]


def test_nms_matches_torchvision():
    torch = pytest.importorskip("torch")
    tv_ops = pytest.importorskip("torchvision.ops")
    rng = np.random.default_rng(11)
    for _ in range(10):
        xy = rng.random((40, 2)) * 100
        wh = rng.random((40, 2)) * 30 + 1
        boxes = np.concatenate([xy, xy + wh], axis=1)
        scores = rng.random(40)
        want = tv_ops.nms(torch.from_numpy(boxes), torch.from_numpy(scores), 0.3).tolist()
        assert onyx.nms(boxes, scores, iou_threshold=0.3) == want


def test_helper_errors():
    with pytest.raises(onyx.InvalidArgument, match="layout"):
        onyx.ctc_decode(np.zeros((1, 3, 4), np.float32), "abc", layout="CTN")
    with pytest.raises(onyx.InvalidArgument, match="uint8"):
        onyx.preprocess_text_line(np.zeros((4, 4, 3), np.uint8))
