// onyx.InferenceSession, SessionOptions, RunOptions, NodeArg, ModelMetadata: the shape of
// onnxruntime's Python API over onyx::Session.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "module.h"
#include "onyx/session.h"

namespace py = pybind11;

namespace onyx::python {

namespace {

/// onnxruntime's GraphOptimizationLevel values, mapped onto onyx's levels.
enum class OrtLevel { kDisableAll = 0, kEnableBasic = 1, kEnableExtended = 2, kEnableAll = 99 };

struct PySessionOptions {
  int intra_op_num_threads = 0;  // 0: onyx's default (1 thread)
  int inter_op_num_threads = 0;  // accepted, unused (onyx runs nodes in order)
  OrtLevel graph_optimization_level = OrtLevel::kEnableAll;
  bool reference_kernels = false;
  uint64_t max_tensor_bytes = SessionOptions{}.max_tensor_bytes;
  uint64_t max_run_bytes = SessionOptions{}.max_run_bytes;
  int64_t max_loop_iterations = SessionOptions{}.max_loop_iterations;

  SessionOptions to_onyx() const {
    SessionOptions o;
    if (intra_op_num_threads < 0)
      throw Error(ErrorCode::kInvalidArgument, "intra_op_num_threads must not be negative");
    o.threads = intra_op_num_threads > 0 ? intra_op_num_threads : 1;
    o.optimize = graph_optimization_level == OrtLevel::kDisableAll    ? GraphOptimization::kNone
                 : graph_optimization_level == OrtLevel::kEnableBasic ? GraphOptimization::kBasic
                                                                      : GraphOptimization::kAll;
    o.reference_kernels = reference_kernels;
    o.max_tensor_bytes = max_tensor_bytes;
    o.max_run_bytes = max_run_bytes;
    o.max_loop_iterations = max_loop_iterations;
    return o;
  }
};

struct PyRunOptions {
  // Shared so a run keeps the flag alive even if the Python object goes first.
  std::shared_ptr<RunOptions> flag = std::make_shared<RunOptions>();
};

struct NodeArg {
  std::string name;
  std::string type;
  py::object shape;
};

NodeArg node_arg(const IoInfo& io) {
  NodeArg a;
  a.name = io.name;
  a.type = io.onnx_type;
  py::list shape;
  if (io.has_shape)
    for (size_t i = 0; i < io.dims.size(); ++i) {
      if (io.dims[i] >= 0) {
        shape.append(py::int_(io.dims[i]));
      } else if (!io.dim_names[i].empty()) {
        shape.append(py::str(io.dim_names[i]));
      } else {
        shape.append(py::none());
      }
    }
  a.shape = std::move(shape);
  return a;
}

struct PyModelMetadata {
  std::string producer_name, graph_name, domain, description, graph_description;
  int64_t version = 0;
  py::dict custom_metadata_map;
};

class InferenceSession {
 public:
  InferenceSession(const py::object& path_or_bytes, const py::object& sess_options, const py::object& providers,
                   const py::object& provider_options) {
    if (!sess_options.is_none()) options_ = sess_options.cast<PySessionOptions>();
    check_providers(providers);
    const SessionOptions so = options_.to_onyx();
    if (py::isinstance<py::bytes>(path_or_bytes) || py::isinstance<py::bytearray>(path_or_bytes) ||
        py::isinstance<py::memoryview>(path_or_bytes)) {
      py::buffer_info buf = py::reinterpret_borrow<py::buffer>(
                                py::isinstance<py::memoryview>(path_or_bytes) ? path_or_bytes
                                                                              : py::memoryview(path_or_bytes))
                                .request();
      const void* data = buf.ptr;
      const size_t size = static_cast<size_t>(buf.size * buf.itemsize);
      py::gil_scoped_release nogil;
      session_ = Session::open_bytes(data, size, so);
    } else {
      std::string path = py::str(py::module_::import("os").attr("fspath")(path_or_bytes));
      model_path_ = path;
      py::gil_scoped_release nogil;
      session_ = Session::open(path, so);
    }
    for (const IoInfo& io : session_->inputs())
      is_sequence_.push_back(io.onnx_type.rfind("seq(", 0) == 0 || io.onnx_type.rfind("optional(seq(", 0) == 0);
  }

  py::list get_inputs() const {
    py::list l;
    for (const IoInfo& io : session_->inputs())
      if (!io.has_default) l.append(node_arg(io));
    return l;
  }
  py::list get_overridable_initializers() const {
    py::list l;
    for (const IoInfo& io : session_->inputs())
      if (io.has_default) l.append(node_arg(io));
    return l;
  }
  py::list get_outputs() const {
    py::list l;
    for (const IoInfo& io : session_->outputs()) l.append(node_arg(io));
    return l;
  }

  PyModelMetadata get_modelmeta() const {
    const ModelMetadata& md = session_->metadata();
    PyModelMetadata r;
    r.producer_name = md.producer_name;
    r.graph_name = md.graph_name;
    r.domain = md.domain;
    r.description = md.doc_string;
    r.graph_description = md.graph_doc_string;
    r.version = md.model_version;
    for (const auto& [k, v] : md.metadata_props) r.custom_metadata_map[py::str(k)] = py::str(v);
    return r;
  }

  py::list run(const py::object& output_names, const py::dict& input_feed, const py::object& run_options) {
    std::vector<std::pair<std::string, Value>> feeds;
    feeds.reserve(input_feed.size());
    std::vector<py::object> keep;
    keep.reserve(input_feed.size());
    const auto& inputs = session_->inputs();
    for (const auto& [key, obj] : input_feed) {
      std::string name = py::cast<std::string>(key);
      DType want = DType::kUndefined;
      bool sequence = false;
      for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].name == name) {
          want = inputs[i].dtype;
          sequence = is_sequence_[i];
        }
      feeds.emplace_back(std::move(name), to_value(obj, want, sequence, keep));
    }
    std::vector<std::string> names;
    if (!output_names.is_none())
      for (const py::handle& n : output_names) names.push_back(py::cast<std::string>(n));
    std::shared_ptr<RunOptions> flag;
    if (!run_options.is_none()) flag = run_options.cast<PyRunOptions&>().flag;
    static const RunOptions kDefault;
    std::vector<Value> out;
    {
      py::gil_scoped_release nogil;
      out = session_->run(feeds, names, flag ? *flag : kDefault);
    }
    py::list result;
    for (Value& v : out) result.append(to_python(std::move(v)));
    return result;
  }

  const PySessionOptions& session_options() const { return options_; }
  const std::string& model_path() const { return model_path_; }

 private:
  static void check_providers(const py::object& providers) {
    if (providers.is_none()) return;
    for (const py::handle& p : providers) {
      std::string name = py::isinstance<py::tuple>(p) ? py::cast<std::string>(p[py::int_(0)]) : py::cast<std::string>(p);
      if (name != "CPUExecutionProvider")
        py::module_::import("warnings")
            .attr("warn")("onyx runs on the CPU only: provider '" + name + "' is ignored (CPUExecutionProvider is used)");
    }
  }

  PySessionOptions options_;
  std::unique_ptr<Session> session_;
  std::vector<bool> is_sequence_;  // per input: declared a sequence (a list is its items)
  std::string model_path_;
};

}  // namespace

void bind_session(py::module_& m) {
  py::enum_<OrtLevel>(m, "GraphOptimizationLevel", "How much the graph is rewritten before planning.")
      .value("ORT_DISABLE_ALL", OrtLevel::kDisableAll)
      .value("ORT_ENABLE_BASIC", OrtLevel::kEnableBasic)
      .value("ORT_ENABLE_EXTENDED", OrtLevel::kEnableExtended)
      .value("ORT_ENABLE_ALL", OrtLevel::kEnableAll);

  py::class_<PySessionOptions>(m, "SessionOptions", py::dynamic_attr(),
                               "Options of an InferenceSession. onnxruntime's other attributes may be set and are "
                               "ignored.")
      .def(py::init<>())
      .def_readwrite("intra_op_num_threads", &PySessionOptions::intra_op_num_threads,
                     "Threads of the session's pool, the calling thread included; 0: onyx's default, 1.")
      .def_readwrite("inter_op_num_threads", &PySessionOptions::inter_op_num_threads,
                     "Accepted for onnxruntime scripts; onyx runs nodes one after the other.")
      .def_readwrite("graph_optimization_level", &PySessionOptions::graph_optimization_level,
                     "ORT_DISABLE_ALL: the graph as the file has it; ORT_ENABLE_BASIC: standard-op rewrites; "
                     "ORT_ENABLE_EXTENDED / ORT_ENABLE_ALL: also onyx's fused kernels.")
      .def_readwrite("reference_kernels", &PySessionOptions::reference_kernels,
                     "onyx only: run every node on its spec-complete reference kernel.")
      .def_readwrite("max_tensor_bytes", &PySessionOptions::max_tensor_bytes,
                     "onyx only: largest tensor one node may create (0: no limit); onyx.LimitExceeded beyond.")
      .def_readwrite("max_run_bytes", &PySessionOptions::max_run_bytes,
                     "onyx only: most bytes the tensors of one run may hold at once (0: no limit).")
      .def_readwrite("max_loop_iterations", &PySessionOptions::max_loop_iterations,
                     "onyx only: most iterations of one Loop/Scan/SequenceMap execution (0: no limit).");

  py::class_<PyRunOptions>(m, "RunOptions", py::dynamic_attr(),
                           "Per-call options of InferenceSession.run. onnxruntime's other attributes may be set and "
                           "are ignored.")
      .def(py::init<>())
      .def_property(
          "terminate", [](const PyRunOptions& r) { return r.flag->terminate.load(); },
          [](PyRunOptions& r, bool v) { r.flag->terminate.store(v); },
          "Set True (from any thread) to stop the runs given these options: they raise onyx.Cancelled before "
          "their next node. Set False again before reusing the options.");

  py::class_<NodeArg>(m, "NodeArg", "A graph input or output: name, type ('tensor(float)') and shape.")
      .def_readonly("name", &NodeArg::name)
      .def_readonly("type", &NodeArg::type)
      .def_readonly("shape", &NodeArg::shape,
                    "One entry per axis: an int, the symbol's name (str) or None where unknown; [] without a "
                    "declared shape.")
      .def("__repr__", [](const NodeArg& a) {
        return "NodeArg(name=" + std::string(py::repr(py::str(a.name))) + ", type=" +
               std::string(py::repr(py::str(a.type))) + ", shape=" + std::string(py::repr(a.shape)) + ")";
      });

  py::class_<PyModelMetadata>(m, "ModelMetadata", "What the model file says about itself.")
      .def_readonly("producer_name", &PyModelMetadata::producer_name)
      .def_readonly("graph_name", &PyModelMetadata::graph_name)
      .def_readonly("domain", &PyModelMetadata::domain)
      .def_readonly("description", &PyModelMetadata::description, "The model's doc_string.")
      .def_readonly("graph_description", &PyModelMetadata::graph_description, "The graph's doc_string: '' today (onyx's loader drops it).")
      .def_readonly("version", &PyModelMetadata::version, "model_version.")
      .def_readonly("custom_metadata_map", &PyModelMetadata::custom_metadata_map, "metadata_props as a dict.");

  py::class_<InferenceSession>(m, "InferenceSession", R"(A loaded, checked and planned ONNX model.

InferenceSession(path_or_bytes, sess_options=None, providers=None, provider_options=None)

path_or_bytes is a file path (str or os.PathLike) or the serialized model (bytes); a model
whose tensors are in external files must be given by path. providers may list
'CPUExecutionProvider' (others are ignored with a warning: onyx runs on the CPU).

Thread safety: run() may be called from any number of Python threads at once on one
session. It releases the GIL while the model runs, so such calls run in parallel; each
keeps its own values and they share the weights and the thread pool.)")
      .def(py::init<const py::object&, const py::object&, const py::object&, const py::object&>(),
           py::arg("path_or_bytes"), py::arg("sess_options") = py::none(), py::arg("providers") = py::none(),
           py::arg("provider_options") = py::none())
      .def("get_inputs", &InferenceSession::get_inputs,
           "The inputs a run must be given (inputs with an initializer as default are left out: see "
           "get_overridable_initializers).")
      .def("get_outputs", &InferenceSession::get_outputs, "The outputs, in model order.")
      .def("get_overridable_initializers", &InferenceSession::get_overridable_initializers,
           "Inputs that an initializer gives a default to; a run may override them.")
      .def("get_modelmeta", &InferenceSession::get_modelmeta)
      .def("get_providers", [](const InferenceSession&) { return std::vector<std::string>{"CPUExecutionProvider"}; })
      .def("get_provider_options",
           [](const InferenceSession&) {
             py::dict d;
             d["CPUExecutionProvider"] = py::dict();
             return d;
           })
      .def("get_session_options", &InferenceSession::session_options)
      .def_property_readonly("model_path", &InferenceSession::model_path, "The file's path ('' when from bytes).")
      .def("run", &InferenceSession::run, py::arg("output_names"), py::arg("input_feed"),
           py::arg("run_options") = py::none(),
           R"(Runs the model and returns the outputs as a list of numpy arrays.

output_names: the outputs wanted, in that order, or None (or []) for all of them.
input_feed: {input name: numpy array}; strings as arrays of str (object or 'U' dtype),
    sequences as lists of arrays, an empty optional as None. Contiguous arrays are read
    in place, without a copy, and never written.
run_options: a RunOptions whose terminate flag can stop the run from another thread.

Raises onyx.InvalidArgument for an unknown, missing or mistyped input (naming the input,
the expected and given shapes, and a hint when the layout looks transposed),
onyx.RuntimeException when a node fails, onyx.LimitExceeded, onyx.Cancelled.)");
}

}  // namespace onyx::python
