"""Fixture models for tests/web (written into the folder given): a corrupt copy of the
digit reader, a valid model with an op the WebAssembly build cannot run
(RegexFullMatch, left out of the wasm build: see src/kernels/reference/string.cc),
Relu + Shape of a vector of any length, and (when its path is given as a third argument)
the transformer encoder saved by onnx with every initializer in one external-data file,
encoder-ext/encoder.onnx + encoder.onnx.data."""
import os
import sys

import onnx
from onnx import TensorProto, helper


def main():
    out, model = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    data = open(model, "rb").read()
    # Truncated in the middle of the weights: not a model any more.
    with open(os.path.join(out, "corrupt.onnx"), "wb") as f:
        f.write(data[: len(data) // 3])
    g = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["t"], name="copy"),
         helper.make_node("RegexFullMatch", ["t"], ["m"], name="match_id", pattern="[0-9]+")],
        "regex",
        [helper.make_tensor_value_info("s", TensorProto.STRING, [3])],
        [helper.make_tensor_value_info("m", TensorProto.BOOL, [3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)], producer_name="tests/web")
    m.ir_version = 9
    with open(os.path.join(out, "regex.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    # y = Relu(x) and n = Shape(x) for any length: inputs and outputs of any size through
    # the worker (its fast lane has a buffer of 1 MiB to begin with).
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu"),
         helper.make_node("Shape", ["x"], ["n"], name="shape")],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"]),
         helper.make_tensor_value_info("n", TensorProto.INT64, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests/web")
    m.ir_version = 8
    with open(os.path.join(out, "relu.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    if len(sys.argv) > 3 and os.path.exists(sys.argv[3]):
        enc = onnx.load(sys.argv[3])
        ext = os.path.join(out, "encoder-ext")
        os.makedirs(ext, exist_ok=True)
        # size_threshold=0: every initializer, small ones too, at its offset in one file.
        onnx.save_model(enc, os.path.join(ext, "encoder.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="encoder.onnx.data", size_threshold=0)


if __name__ == "__main__":
    main()
