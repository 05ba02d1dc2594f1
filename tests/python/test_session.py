"""InferenceSession beyond the model runs: metadata, NodeArg shapes, options, threads,
terminate, and the error classes with onyx's messages."""
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onyx
from conftest import SOURCE
from models import long_loop, serialize

TINY = SOURCE / "models" / "tiny-cnn" / "tiny-cnn-v1-opset17.onnx"


def meta_model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, None])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, None])
    w = helper.make_tensor("w", TensorProto.FLOAT, [1], [2.0])
    w_in = helper.make_tensor_value_info("w", TensorProto.FLOAT, [1])
    return serialize([helper.make_node("Mul", ["x", "w"], ["y"])], [x, w_in], [y], [w],
                     producer_name="unit-test", producer_version="4.5", domain="org.example",
                     model_version=3, doc_string="a model doc", graph_name="mul_graph", graph_doc="graph doc",
                     metadata_props={"author": "me", "licence": "none"})


def test_metadata_and_node_args():
    blob = meta_model()
    m = onnx.load_from_string(blob)  # what onnx itself reads from the file
    sess = onyx.InferenceSession(blob)
    meta = sess.get_modelmeta()
    assert (meta.producer_name, meta.domain, meta.version, meta.description) == (
        m.producer_name, m.domain, m.model_version, m.doc_string)
    assert meta.graph_name == m.graph.name
    assert meta.custom_metadata_map == {p.key: p.value for p in m.metadata_props}
    (x,) = sess.get_inputs()  # w has an initializer: overridable, not required
    assert (x.name, x.type, x.shape) == ("x", "tensor(float)", ["N", 3, None])
    assert [a.name for a in sess.get_overridable_initializers()] == ["w"]
    assert "NodeArg(name='x'" in repr(x)
    data = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    (y,) = sess.run(None, {"x": data})
    np.testing.assert_array_equal(y, data * 2)  # Mul by the initializer's 2
    (y3,) = sess.run(["y"], {"x": data, "w": np.array([3], np.float32)})  # initializer overridden
    np.testing.assert_array_equal(y3, data * 3)


def test_session_options_and_providers():
    so = onyx.SessionOptions()
    so.intra_op_num_threads = 2
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3  # an onnxruntime attribute onyx ignores
    sess = onyx.InferenceSession(str(TINY), sess_options=so, providers=["CPUExecutionProvider"])
    assert sess.get_session_options().intra_op_num_threads == 2
    with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
        onyx.InferenceSession(str(TINY), providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert onyx.get_available_providers() == ["CPUExecutionProvider"]


def test_two_threads_one_session():
    sess = onyx.InferenceSession(str(TINY))
    rng = np.random.default_rng(3)
    images = [rng.random((1, 1, 28, 28), dtype=np.float32) for _ in range(8)]
    want = [sess.run(None, {"image": im})[0].tobytes() for im in images]  # one thread
    got = [[] for _ in range(2)]
    errors = []

    def worker(t):
        try:
            for _ in range(25):
                for k, im in enumerate(images):
                    got[t].append((k, sess.run(None, {"image": im})[0].tobytes()))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for t in range(2):
        assert len(got[t]) == 25 * len(images)
        assert all(out == want[k] for k, out in got[t]), f"thread {t} got other outputs than one thread"


def test_terminate_from_another_thread():
    so = onyx.SessionOptions()
    so.max_loop_iterations = 0  # no limit: only terminate can stop it early
    sess = onyx.InferenceSession(long_loop(10**9), sess_options=so)
    ro = onyx.RunOptions()
    timer = threading.Timer(0.2, lambda: setattr(ro, "terminate", True))
    timer.start()
    with pytest.raises(onyx.Cancelled) as e:
        sess.run(None, {"x": np.zeros(1, np.float32)}, ro)
    timer.join()
    assert isinstance(e.value, onyx.OnyxError)
    ro.terminate = False
    short = onyx.InferenceSession(long_loop(5))
    np.testing.assert_array_equal(short.run(None, {"x": np.zeros(1, np.float32)}, ro)[0], [5.0])


def test_errors_carry_the_code_and_message(tmp_path):
    sess = onyx.InferenceSession(str(TINY))
    image = np.zeros((1, 1, 28, 28), np.float32)
    with pytest.raises(onyx.InvalidArgument, match="unknown input 'img'; the model's inputs are: image"):
        sess.run(None, {"img": image})
    with pytest.raises(onyx.InvalidArgument, match="looks like NHWC"):
        sess.run(None, {"image": np.zeros((1, 28, 28, 1), np.float32)})
    with pytest.raises(onyx.InvalidArgument, match="expected dtype float, got double"):
        sess.run(None, {"image": image.astype(np.float64)})
    with pytest.raises(onyx.InvalidArgument, match="missing input 'image'"):
        sess.run(None, {})
    with pytest.raises(onyx.InvalidArgument, match="unknown output 'logits'"):
        sess.run(["logits"], {"image": image})
    missing = tmp_path / "none.onnx"
    with pytest.raises(onyx.NoSuchFile, match=str(missing)):
        onyx.InferenceSession(str(missing))
    blob = TINY.read_bytes()
    with pytest.raises(onyx.InvalidGraph):
        onyx.InferenceSession(blob[: len(blob) // 2])
    with pytest.raises(onyx.NotImplemented, match="opset 99"):
        onyx.InferenceSession(serialize(
            [helper.make_node("Identity", ["x"], ["y"])],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], opset=99))
    so = onyx.SessionOptions()
    so.max_tensor_bytes = 16
    with pytest.raises(onyx.LimitExceeded, match="max_tensor_bytes"):
        onyx.InferenceSession(str(TINY), sess_options=so).run(None, {"image": image})
    # onyx's names for the classes are the same classes.
    assert onyx.InvalidModel is onyx.InvalidGraph and onyx.Unsupported is onyx.NotImplemented
    assert issubclass(onyx.InvalidArgument, RuntimeError)


def test_help_is_useful():
    doc = onyx.InferenceSession.__doc__
    assert "Thread safety" in doc and "path_or_bytes" in doc
    assert "input_feed" in onyx.InferenceSession.run.__doc__
