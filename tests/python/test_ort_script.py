"""A script written against onnxruntime's Python API runs unchanged with
`import onyx as onnxruntime`, and its outputs equal `onyx run`'s bit for bit.

Models: tests/models' PyTorch exports (build/models, made by the models_export fixture),
models/tiny-cnn and the digit reader (models/crnn-digits). Where the model has a PyTorch
reference the outputs are also compared with it: tiny-cnn's probabilities (1e-5) and the
digit reader's logits (rtol 1e-3, atol 1e-4, as tests/models/crnn_digits_test.py) and
greedy strings."""
import json
import pathlib

import numpy as np
import pytest

import onyx as onnxruntime  # the point of the test: onnxruntime's call shape
from conftest import BUILD, SOURCE, cli_run, safe_file_name

NUMPY_OF_TYPE = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
                 "tensor(double)": np.float64, "tensor(bool)": np.bool_, "tensor(uint8)": np.uint8}


def ort_style_session(path):
    """What an onnxruntime script does: a CPU session, its inputs by name, shape and type."""
    sess = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    return sess


def random_feeds(sess, seed, dim=2):
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in sess.get_inputs():
        shape = [d if isinstance(d, int) else dim for d in inp.shape]
        dtype = NUMPY_OF_TYPE[inp.type]
        if np.issubdtype(dtype, np.floating):
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[inp.name] = rng.integers(0, 10, shape).astype(dtype)
    return feeds


def assert_same_as_cli(sess, model, feeds, outputs, tmp_path):
    out_dir = cli_run(model, feeds, tmp_path / "cli")
    for meta, got in zip(sess.get_outputs(), outputs):
        want = np.load(out_dir / (safe_file_name(meta.name) + ".npy"))
        assert got.dtype == want.dtype and got.shape == want.shape, meta.name
        # Bit for bit: compare the bytes (NaNs included).
        assert got.tobytes() == want.tobytes(), f"{model}: output {meta.name} differs from onyx run's"


def manifest_models():
    path = BUILD / "models" / "manifest.json"
    if not path.exists():
        return []
    return [(m["name"], m) for m in json.loads(path.read_text())]


MANIFEST = manifest_models()


def test_manifest_present():
    # The models_export fixture made them; without torch it skips, and so does this.
    if not (BUILD / "models" / "manifest.json").exists():
        pytest.skip("build/models/manifest.json missing (models_export needs torch)")
    assert len(MANIFEST) >= 3


@pytest.mark.parametrize("name,entry", MANIFEST, ids=[n for n, _ in MANIFEST])
def test_exported_model_matches_cli(name, entry, tmp_path):
    model = pathlib.Path(entry["model"])
    sess = ort_style_session(model)
    inputs = sess.get_inputs()
    assert inputs and all(isinstance(i.name, str) and i.type.startswith("tensor(") for i in inputs)
    assert all(isinstance(d, (int, str)) or d is None for i in inputs for d in i.shape)
    for k, data_set in enumerate(entry["sets"][:2]):
        feeds = {n: np.load(p) for n, p in data_set["inputs"].items()}
        outputs = sess.run(None, feeds)
        assert len(outputs) == len(sess.get_outputs())
        assert_same_as_cli(sess, model, feeds, outputs, tmp_path / str(k))
    # And with random inputs of the declared types (symbolic dims set to 2).
    if all(i.type in NUMPY_OF_TYPE for i in inputs) and name != "lstm":
        feeds = random_feeds(sess, seed=7)
        assert_same_as_cli(sess, model, feeds, sess.run(None, feeds), tmp_path / "random")


def test_tiny_cnn(tmp_path):
    d = SOURCE / "models" / "tiny-cnn"
    model = d / "tiny-cnn-v1-opset17.onnx"
    sess = ort_style_session(model)
    inp = sess.get_inputs()[0]
    assert (inp.name, inp.shape, inp.type) == ("image", ["N", 1, 28, 28], "tensor(float)")
    out = sess.get_outputs()[0]
    assert (out.name, out.shape, out.type) == ("probs", ["N", 10], "tensor(float)")
    image = np.load(d / "image.npy")
    (probs,) = sess.run(None, {inp.name: image})
    np.testing.assert_allclose(probs, np.load(d / "probs.torch.npy"), rtol=0, atol=1e-5)
    assert_same_as_cli(sess, model, {inp.name: image}, [probs], tmp_path)
    # From bytes, outputs by name: the same bits.
    sess_b = onnxruntime.InferenceSession(model.read_bytes())
    (again,) = sess_b.run(["probs"], {"image": image})
    assert again.tobytes() == probs.tobytes()


def test_digit_reader(tmp_path):
    d = SOURCE / "models" / "crnn-digits"
    model = d / "crnn-digits-v1-opset17.onnx"
    sess = ort_style_session(model)
    inp = sess.get_inputs()[0]
    assert inp.type == "tensor(float)" and len(inp.shape) == 4
    import importlib.util
    spec = importlib.util.spec_from_file_location("crnn_preprocess", d / "preprocess.py")
    pre = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pre)
    rows = [line.split("\t") for line in (d / "reference" / "labels.tsv").read_text().splitlines()[1:]]
    for k, row in enumerate(rows[:12]):
        x = pre.preprocess_file(str(d / "reference" / row[0])).astype(np.float32)
        (logits,) = sess.run(None, {inp.name: x})
        want = np.load(d / "reference" / "torch" / (pathlib.Path(row[0]).stem + ".npz"))["logits"]
        np.testing.assert_allclose(logits, want, rtol=1e-3, atol=1e-4)
        assert onnxruntime.ctc_decode(logits, "0123456789", blank=0) == [row[2]]
        if k < 3:
            assert_same_as_cli(sess, model, {inp.name: x}, [logits], tmp_path / str(k))
