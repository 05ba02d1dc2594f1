"""Small models built with onnx.helper for the Python module tests."""
import onnx
from onnx import TensorProto, helper


def serialize(nodes, inputs, outputs, initializers=(), opset=17, **model_fields):
    graph = helper.make_graph(nodes, model_fields.pop("graph_name", "g"), inputs, outputs, list(initializers),
                              doc_string=model_fields.pop("graph_doc", ""))
    props = model_fields.pop("metadata_props", {})
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **model_fields)
    model.ir_version = 8
    for k, v in props.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = k, v
    return model.SerializeToString()


def identity(elem, shape=(2, 3)):
    """y = Identity(x) for one element type."""
    return serialize([helper.make_node("Identity", ["x"], ["y"])],
                     [helper.make_tensor_value_info("x", elem, list(shape))],
                     [helper.make_tensor_value_info("y", elem, list(shape))])


def long_loop(trip_count):
    """A Loop of `trip_count` iterations adding 1 to a float accumulator: slow enough to be
    stopped from another thread."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "one"], ["acc_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    return serialize(
        [helper.make_node("Loop", ["n", "c", "x"], ["y"], body=body)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [helper.make_tensor("n", TensorProto.INT64, [], [trip_count]),
         helper.make_tensor("c", TensorProto.BOOL, [], [True])])


def _check(b):
    onnx.checker.check_model(onnx.load_from_string(b))
    return b
