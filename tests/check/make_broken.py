#!/usr/bin/python3
"""Writes the models `onyx check` is tested on (tests/check/broken/*.onnx, tests/check/ok/).

Each broken model holds one deliberate fault (one holds several, to show that all are
reported); tests/check/expected.txt says what `onyx check` must print for it and whether
onnx.checker.check_model(full_check=True) rejects it too. Run with Debian's python3 and
its onnx 1.12 module:

    /usr/bin/python3 tests/check/make_broken.py
"""
import os

import onnx
from onnx import TensorProto as T
from onnx import helper as h

HERE = os.path.dirname(os.path.abspath(__file__))
BROKEN = os.path.join(HERE, "broken")
OK = os.path.join(HERE, "ok")


def vi(name, dtype=T.FLOAT, shape=(2, 3)):
    return h.make_tensor_value_info(name, dtype, None if shape is None else list(shape))


def model(nodes, inputs, outputs, inits=(), opset=17, value_info=(), ir_version=8, extra_opsets=(),
          functions=()):
    g = h.make_graph(list(nodes), "g", list(inputs), list(outputs), list(inits),
                     value_info=list(value_info))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)] + list(extra_opsets),
                     producer_name="onyx-tests", functions=list(functions))
    m.ir_version = ir_version
    return m


def relu(name, x, y):
    return h.make_node("Relu", [x], [y], name=name)


def models():
    m = {}
    # --- structure ---
    m["undefined_input"] = model([relu("relu1", "nope", "y")], [vi("x")], [vi("y")])
    m["not_topological"] = model([relu("second", "t", "y"), relu("first", "x", "t")],
                                 [vi("x")], [vi("y")])
    m["ssa_two_producers"] = model([relu("a", "x", "y"), h.make_node("Sigmoid", ["x"], ["y"], name="b")],
                                   [vi("x")], [vi("y")])
    m["output_redefines_input"] = model([relu("relu1", "x", "x")], [vi("x")], [vi("x")])
    m["cycle"] = model([h.make_node("Add", ["x", "b"], ["a"], name="add_a"),
                        h.make_node("Relu", ["a"], ["b"], name="relu_b")], [vi("x")], [vi("b")])
    m["graph_output_not_produced"] = model([relu("relu1", "x", "y")], [vi("x")], [vi("y"), vi("z")])
    m["duplicate_initializer"] = model(
        [h.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x")], [vi("y")],
        [h.make_tensor("w", T.FLOAT, [3], [1, 2, 3]), h.make_tensor("w", T.FLOAT, [3], [4, 5, 6])])
    m["no_ir_version"] = model([relu("relu1", "x", "y")], [vi("x")], [vi("y")], ir_version=0)
    m["ir3_initializer_not_input"] = model(
        [h.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x")], [vi("y")],
        [h.make_tensor("w", T.FLOAT, [3], [1, 2, 3])], opset=8, ir_version=3)
    m["input_without_shape"] = model([relu("relu1", "x", "y")], [vi("x", shape=None)], [vi("y")])
    m["subgraph_undefined_name"] = model(
        [h.make_node("If", ["c"], ["y"], name="branch",
                     then_branch=h.make_graph([relu("inner", "ghost", "t")], "then", [], [vi("t")]),
                     else_branch=h.make_graph([relu("inner2", "x", "e")], "else", [], [vi("e")]))],
        [vi("c", T.BOOL, []), vi("x")], [vi("y")])
    body = h.make_graph(
        [h.make_node("Identity", ["x"], ["x_out"], name="copy"), h.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [vi("i", T.INT64, []), vi("c_in", T.BOOL, []), vi("x")], [vi("c_out", T.BOOL, []), vi("x_out")])
    m["subgraph_input_shadows_outer"] = model(
        [h.make_node("Loop", ["n", "", "x"], ["y"], name="loop", body=body)], [vi("n", T.INT64, []), vi("x")],
        [vi("y")])
    # --- domains, ops, opsets ---
    m["domain_not_imported"] = model(
        [h.make_node("Frob", ["x"], ["y"], name="custom", domain="com.example")], [vi("x")], [vi("y")])
    m["unknown_op"] = model([h.make_node("Frobnicate", ["x"], ["y"], name="frob")], [vi("x")], [vi("y")])
    m["op_newer_than_opset"] = model([h.make_node("Trilu", ["x"], ["y"], name="tri")], [vi("x")], [vi("y")],
                                     opset=13)
    m["deprecated_op"] = model(
        [h.make_node("Upsample", ["x", "s"], ["y"], name="up")], [vi("x", shape=(1, 1, 2, 2))],
        [vi("y", shape=(1, 1, 4, 4))], [h.make_tensor("s", T.FLOAT, [4], [1, 1, 2, 2])], opset=10)
    # --- counts and attributes ---
    m["missing_required_attribute"] = model([h.make_node("Cast", ["x"], ["y"], name="cast1")],
                                            [vi("x")], [vi("y", T.INT64)])
    m["wrong_attribute_type"] = model(
        [h.make_node("Transpose", ["x"], ["y"], name="tr", perm=[1.0, 0.0])], [vi("x")], [vi("y", shape=(3, 2))])
    m["unknown_attribute"] = model([h.make_node("Relu", ["x"], ["y"], name="relu1", alpha=0.1)],
                                   [vi("x")], [vi("y")])
    m["too_few_inputs"] = model([h.make_node("Conv", ["x"], ["y"], name="conv1")],
                                [vi("x", shape=(1, 1, 4, 4))], [vi("y", shape=(1, 1, 4, 4))])
    m["too_many_outputs"] = model([h.make_node("Relu", ["x"], ["y", "z"], name="relu1")],
                                  [vi("x")], [vi("y")])
    m["required_input_empty"] = model(
        [h.make_node("Conv", ["x", ""], ["y"], name="conv1")], [vi("x", shape=(1, 1, 4, 4))],
        [vi("y", shape=(1, 1, 4, 4))])
    dup = h.make_node("Softmax", ["x"], ["y"], name="sm", axis=1)
    dup.attribute.extend([h.make_attribute("axis", 0)])
    m["duplicate_attribute"] = model([dup], [vi("x")], [vi("y")])
    ref = h.make_node("LeakyRelu", ["x"], ["y"], name="lrelu")
    a = onnx.AttributeProto()
    a.name, a.ref_attr_name, a.type = "alpha", "slope", onnx.AttributeProto.FLOAT
    ref.attribute.extend([a])
    m["ref_attribute_outside_function"] = model([ref], [vi("x")], [vi("y")])
    # --- types ---
    m["input_type_not_allowed"] = model([h.make_node("Sqrt", ["x"], ["y"], name="sqrt1")],
                                        [vi("x", T.INT64)], [vi("y", T.INT64)])
    m["mixed_input_types"] = model([h.make_node("Add", ["a", "b"], ["y"], name="add1")],
                                   [vi("a"), vi("b", T.DOUBLE)], [vi("y")])
    m["initializer_dtype_mismatch"] = model(
        [h.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x", shape=(3,)), vi("w", T.INT64, (3,))],
        [vi("y", shape=(3,))], [h.make_tensor("w", T.FLOAT, [3], [1, 2, 3])])
    m["initializer_shape_mismatch"] = model(
        [h.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x"), vi("w", shape=(3, 2))],
        [vi("y")], [h.make_tensor("w", T.FLOAT, [2, 3], [1, 2, 3, 4, 5, 6])])
    m["value_info_shape_mismatch"] = model([relu("r1", "x", "t"), relu("r2", "t", "y")], [vi("x")], [vi("y")],
                                           value_info=[vi("t", shape=(2, 4))])
    m["output_dtype_mismatch"] = model([relu("relu1", "x", "y")], [vi("x")], [vi("y", T.DOUBLE)])
    m["matmul_shape_mismatch"] = model([h.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
                                       [vi("a", shape=(2, 3)), vi("b", shape=(4, 5))], [vi("y", shape=(2, 5))])
    m["reshape_wrong_size"] = model(
        [h.make_node("Reshape", ["x", "s"], ["y"], name="rs")], [vi("x")], [vi("y", shape=(4, 2))],
        [h.make_tensor("s", T.INT64, [2], [4, 2])])
    # --- opsets after onnx 1.12 (17): schemas from the ONNX 1.22 spec text. Each model has
    # the IR version its opset came with (opset 18: 8, 19-20: 9, 21-22: 10, 23: 11, 24: 12,
    # 25-26: 13; ai.onnx.ml 4: 9, 5: 10). ---
    m["opset18_reducesum_keepdims_float"] = model(
        [h.make_node("ReduceSum", ["x"], ["y"], name="rsum", keepdims=1.0)], [vi("x")], [vi("y", shape=(1, 1))],
        opset=18)
    m["opset18_reducemean_keepdims_float"] = model(
        [h.make_node("ReduceMean", ["x"], ["y"], name="rmean", keepdims=0.0)], [vi("x")], [vi("y", shape=())],
        opset=18)
    m["opset19_resize_mode_int"] = model(
        [h.make_node("Resize", ["x", "", "s"], ["y"], name="resize", mode=1)], [vi("x", shape=(1, 1, 2, 2))],
        [vi("y", shape=(1, 1, 4, 4))], [h.make_tensor("s", T.FLOAT, [4], [1, 1, 2, 2])], opset=19, ir_version=9)
    col2im_in = [vi("x", shape=(1, 4, 4)), vi("shape", T.INT64, (2,))]
    m["opset18_col2im_missing_input"] = model(
        [h.make_node("Col2Im", ["x", "shape"], ["y"], name="col2im")], col2im_in, [vi("y", shape=(1, 1, 3, 3))],
        opset=18)
    m["opset18_col2im_empty_input"] = model(
        [h.make_node("Col2Im", ["x", "", "shape"], ["y"], name="col2im")], col2im_in, [vi("y", shape=(1, 1, 3, 3))],
        opset=18)
    m["opset18_groupnorm_deprecated"] = model(
        [h.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=1)],
        [vi("x", shape=(1, 2, 3)), vi("s", shape=(1,)), vi("b", shape=(1,))], [vi("y", shape=(1, 2, 3))], opset=18)
    m["opset21_dequantize_float_input"] = model(
        [h.make_node("DequantizeLinear", ["x", "sc"], ["y"], name="dq")], [vi("x", shape=(4,))],
        [vi("y", shape=(4,))], [h.make_tensor("sc", T.FLOAT, [], [0.5])], opset=21, ir_version=10)
    m["opset22_conv_int64"] = model(
        [h.make_node("Conv", ["x", "w"], ["y"], name="conv")],
        [vi("x", T.INT64, (1, 1, 3, 3)), vi("w", T.INT64, (1, 1, 1, 1))], [vi("y", T.INT64, (1, 1, 3, 3))],
        opset=22, ir_version=10)
    m["opset23_swish_not_yet"] = model([h.make_node("Swish", ["x"], ["y"], name="swish")], [vi("x")], [vi("y")],
                                       opset=23, ir_version=11)
    m["opset25_swish_int2"] = model([h.make_node("Swish", ["x"], ["y"], name="swish")], [vi("x", 26)],
                                    [vi("y", 26)], opset=25, ir_version=13)
    m["opset25_cast_no_to"] = model([h.make_node("Cast", ["x"], ["y"], name="cast", round_mode="up")],
                                    [vi("x")], [vi("y", 17)], opset=25, ir_version=13)
    m["ml4_label_encoder_attr_type"] = model(
        [h.make_node("LabelEncoder", ["x"], ["y"], name="enc", domain="ai.onnx.ml", keys_strings="a",
                     values_int64s=[1])],
        [vi("x", T.STRING, (2,))], [vi("y", T.INT64, (2,))], opset=20, ir_version=9,
        extra_opsets=[h.make_opsetid("ai.onnx.ml", 4)])
    m["ml5_tree_ensemble_missing_attr"] = model(
        [h.make_node("TreeEnsemble", ["x"], ["y"], name="trees", domain="ai.onnx.ml", leaf_targetids=[0],
                     nodes_falseleafs=[1], nodes_falsenodeids=[0], nodes_featureids=[0], nodes_modes=h.make_tensor(
                         "m", T.UINT8, [1], [0]), nodes_splits=h.make_tensor("v", T.FLOAT, [1], [0.5]),
                     nodes_trueleafs=[1], nodes_truenodeids=[0], tree_roots=[0])],
        [vi("x", shape=(2, 1))], [vi("y", shape=(2, 1))], opset=21, ir_version=10,
        extra_opsets=[h.make_opsetid("ai.onnx.ml", 5)])
    m["preview_flexattention_scale_int"] = model(
        [h.make_node("FlexAttention", ["q", "k", "v"], ["y"], name="flex", domain="ai.onnx.preview", scale=1)],
        [vi(n, shape=(1, 1, 2, 4)) for n in "qkv"], [vi("y", shape=(1, 1, 2, 4))], opset=26, ir_version=13,
        extra_opsets=[h.make_opsetid("ai.onnx.preview", 1)])
    # --- several faults at once: every one must be reported ---
    m["three_faults"] = model(
        [h.make_node("Cast", ["x"], ["c"], name="cast_no_to"),
         h.make_node("Relu", ["missing"], ["r"], name="relu_undefined"),
         h.make_node("Softmax", ["x"], ["y"], name="softmax_bad_attr", axis="one")],
        [vi("x")], [vi("y"), vi("c", T.INT64), vi("r")])
    return m


def ok_models():
    m = {}
    # Valid, but RegexFullMatch (opset 20) is left out of the WebAssembly build.
    m["regex_opset20"] = model(
        [h.make_node("RegexFullMatch", ["x"], ["y"], name="match_mail", pattern=r"\w+@\w+\.com")],
        [vi("x", T.STRING, (2,))], [vi("y", T.BOOL, (2,))], opset=20, ir_version=9)
    # Valid, and every provider runs it.
    m["relu_add"] = model(
        [relu("relu1", "x", "t"), h.make_node("Add", ["t", "w"], ["y"], name="add1")], [vi("x")], [vi("y")],
        [h.make_tensor("w", T.FLOAT, [3], [1, 2, 3])])
    return m


def main():
    for d, ms in ((BROKEN, models()), (OK, ok_models())):
        os.makedirs(d, exist_ok=True)
        for name, mdl in sorted(ms.items()):
            with open(os.path.join(d, name + ".onnx"), "wb") as f:
                f.write(mdl.SerializeToString())


if __name__ == "__main__":
    main()
