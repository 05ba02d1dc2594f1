"""onyx.torch.verify: passes on resnet18, a transformer encoder and the digit reader; fails,
naming the output and the sample, on a graph exported with dropout active and on one that
baked a dynamic width into a constant. PyTorch's own outputs are the reference."""
import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

import onyx

from conftest import CLI, SOURCE

torch = pytest.importorskip("torch")
nn = torch.nn
import onyx.torch  # noqa: E402

DIGITS = SOURCE / "models" / "crnn-digits"
DIGITS_ONNX = DIGITS / "crnn-digits-v1-opset17.onnx"


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_files(report, path):
    """parity.json and MODEL.md beside the file, made by the onyx tool for this very file."""
    parity = json.loads((path.parent / "parity.json").read_text())
    assert parity["tool"] == "onyx parity"
    assert parity["model_sha256"] == sha256(path) == report.sha256
    assert parity["pass"] is report.passed
    assert parity["samples"] == len(report.samples)
    subprocess.run([CLI, "card", "--verify", str(path.parent / "MODEL.md"), str(path)], check=True,
                   capture_output=True)


def test_import_onyx_without_torch():
    code = "import sys; sys.modules['torch'] = None; import onyx, onyx.torch; print(onyx.ParityError.__mro__[1].__name__)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "OnyxError"


def test_resnet18(tmp_path):
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.resnet18()  # random weights, in training mode as constructed
    path = tmp_path / "resnet18.onnx"
    r = onyx.torch.verify(model, torch.randn(1, 3, 112, 112), path, input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "N", 2: "H", 3: "W"}, "logits": {0: "N"}})
    assert r.passed and r.samples == ["example", "dynamic"]
    assert r.outputs["logits"].samples == 2 and r.outputs["logits"].within_tolerance == 2
    assert r.versions["torch"] == torch.__version__ and r.versions["torchvision"] == torchvision.__version__
    assert r.opset == 17 and r.worst_sample[1] == "logits"
    assert any("training mode" in w for w in r.warnings)
    assert r.check.strict_ok
    check_files(r, path)


def test_transformer_encoder_warns_of_dropout(tmp_path):
    torch.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True), 2)
    path = tmp_path / "encoder.onnx"
    dataset = [torch.randn(1, 10, 32), torch.randn(1, 7, 32)]
    r = onyx.torch.verify(enc, torch.randn(1, 10, 32), path, input_names=["x"], output_names=["y"], dataset=dataset,
                          dynamic_axes={"x": {0: "N", 1: "S"}, "y": {0: "N", 1: "S"}})
    assert r.passed and r.samples == ["example", "0000", "0001", "dynamic"]
    assert any("training mode" in w and "layers.0.dropout" in w for w in r.warnings)
    assert not enc.training
    check_files(r, path)


def crnn_from_onnx(path):
    """The digit reader's PyTorch network (models/crnn-digits/train.py) with the weights of
    the shipped ONNX file: the convolutions as exported (BatchNorm folded into them, so each
    BatchNorm becomes its bias alone), the LSTM's gates from ONNX's i, o, f, c order back to
    PyTorch's i, f, g, o."""
    import onnx
    import onnx.numpy_helper

    sys.path.insert(0, str(DIGITS))
    from train import CRNN

    m = onnx.load(str(path))
    w = {i.name: onnx.numpy_helper.to_array(i).copy() for i in m.graph.initializer}
    net = CRNN()
    convs = [x for x in net.cnn if isinstance(x, nn.Conv2d)]
    bns = [x for x in net.cnn if isinstance(x, nn.BatchNorm2d)]
    for conv, bn, node in zip(convs, bns, [n for n in m.graph.node if n.op_type == "Conv"]):
        conv.weight.data = torch.from_numpy(w[node.input[1]])
        bn.eps = 0.0
        bn.weight.data.fill_(1)
        bn.bias.data = torch.from_numpy(w[node.input[2]])
        bn.running_mean.zero_()
        bn.running_var.fill_(1)
    lstm = next(n for n in m.graph.node if n.op_type == "LSTM")
    W, R, B = (w[lstm.input[k]] for k in (1, 2, 3))
    h = R.shape[2]

    def gates(a):
        return torch.from_numpy(np.concatenate([a[0:h], a[2 * h:3 * h], a[3 * h:4 * h], a[h:2 * h]]))

    for d, suffix in ((0, ""), (1, "_reverse")):
        getattr(net.rnn, "weight_ih_l0" + suffix).data = gates(W[d])
        getattr(net.rnn, "weight_hh_l0" + suffix).data = gates(R[d])
        getattr(net.rnn, "bias_ih_l0" + suffix).data = gates(B[d][:4 * h])
        getattr(net.rnn, "bias_hh_l0" + suffix).data = gates(B[d][4 * h:])
    matmul = next(n for n in m.graph.node if n.op_type == "MatMul")
    net.fc.weight.data = torch.from_numpy(w[matmul.input[1]].T.copy())
    net.fc.bias.data = torch.from_numpy(w["fc.bias"])
    return net.eval()


def test_digit_reader(tmp_path):
    sys.path.insert(0, str(DIGITS))
    import preprocess

    net = crnn_from_onnx(DIGITS_ONNX)
    labels = [line.split("\t") for line in (DIGITS / "reference" / "labels.tsv").read_text().splitlines()[1:9]]
    dataset = {row[0][7:11]: torch.from_numpy(preprocess.preprocess_file(str(DIGITS / "reference" / row[0])))
               for row in labels}
    path = tmp_path / DIGITS_ONNX.name
    r = onyx.torch.verify(net, torch.zeros(1, 1, 32, 96), path, input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "N", 3: "W"}, "logits": {0: "N", 1: "T"}}, dataset=dataset,
                          decode="ctc", alphabet="0123456789", meta=DIGITS / "meta.json")
    # The export of the recovered network is the shipped file, byte for byte.
    assert r.sha256 == sha256(DIGITS_ONNX)
    assert r.passed and r.decode["sequences"] == r.decode["exact_matches"] == 11  # the probe has N = 2
    parity = json.loads((tmp_path / "parity.json").read_text())
    assert parity["ctc"]["exact_matches"] == 11
    # PyTorch's greedy decodings in labels.tsv (made with the original weights) are what onyx reads.
    for row in labels:
        logits = onyx.InferenceSession(str(path)).run(None, {"input": dataset[row[0][7:11]].numpy()})[0]
        assert onyx.ctc_decode(logits, "0123456789") == [row[2]]
    check_files(r, path)


class Dropped(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.fc(x))


def test_exported_in_training_mode_fails(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "dropped.onnx"
    with pytest.raises(onyx.ParityError, match=r"output 'y' differs from PyTorch on sample 'example'") as e:
        onyx.torch.verify(Dropped().train(), torch.randn(2, 16), path, input_names=["x"], output_names=["y"],
                          export_options={"training": torch.onnx.TrainingMode.TRAINING})
    r = e.value.report
    assert not r.passed and r.failures[0][:2] == ("example", "y")
    assert any("training mode" in w and "drop" in w for w in r.warnings)
    assert any("training=" in w for w in r.warnings)
    assert json.loads((tmp_path / "parity.json").read_text())["pass"] is False


class BakedScale(nn.Module):
    """Divides by the width as a Python int: the tracer writes the example's width in."""

    def forward(self, x):
        return x.sum(3) / int(x.shape[3])


class BakedView(nn.Module):
    def forward(self, x):
        return x.reshape(int(x.shape[0]), int(x.shape[1]) * int(x.shape[2]) * int(x.shape[3]))


def test_baked_width_fails_on_the_dynamic_probe(tmp_path):
    kw = dict(input_names=["x"], output_names=["y"], dynamic_axes={"x": {3: "W"}})
    x = torch.randn(1, 2, 4, 8)
    with pytest.raises(onyx.ParityError, match=r"output 'y' differs from PyTorch on sample 'dynamic'"):
        onyx.torch.verify(BakedScale(), x, tmp_path / "scale.onnx", write_files=False, **kw)
    with pytest.raises(onyx.ParityError, match=r"onyx failed on sample 'dynamic' \(x \[1, 2, 4, 10\]\), outputs 'y'"
                                               r".*Reshape"):
        onyx.torch.verify(BakedView(), x, tmp_path / "view.onnx", write_files=False, **kw)
    # The same models pass where no axis is claimed dynamic.
    assert onyx.torch.verify(BakedScale(), x, tmp_path / "fixed.onnx", input_names=["x"], output_names=["y"],
                             write_files=False).passed


def test_check_model(tmp_path):
    r = onyx.check_model(str(DIGITS_ONNX))
    assert r.valid and r.strict_ok and r.nodes > 0 and r.errors == 0
    with pytest.raises(onyx.OnyxError):
        onyx.check_model(str(tmp_path / "missing.onnx"))
    with pytest.raises(onyx.InvalidArgument, match="unknown provider"):
        onyx.check_model(str(DIGITS_ONNX), ["gpu"])


def test_check_model_reports_problems(tmp_path):
    from onnx import TensorProto, helper

    from models import serialize

    bad = tmp_path / "bad.onnx"
    bad.write_bytes(serialize([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add0")],
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]))
    r = onyx.check_model(str(bad))
    assert not r.valid and r.errors >= 1
    assert any(p.node == "add0" and "nowhere" in p.message for p in r.problems)
    assert any("nowhere" in line for line in r.lines)
    with pytest.raises(onyx.CheckError, match="nowhere"):
        raise onyx.CheckError("\n".join(r.lines), r)


def test_example_verify_torchvision(tmp_path):
    pytest.importorskip("torchvision")
    out = subprocess.run([sys.executable, str(SOURCE / "examples" / "python" / "verify_torchvision.py"), "--size", "64",
                          "--out", str(tmp_path)], check=True, capture_output=True, text=True).stdout
    assert "<VerifyReport PASS" in out and "top-1" in out
    assert (tmp_path / "resnet18.onnx").exists() and (tmp_path / "MODEL.md").exists()
