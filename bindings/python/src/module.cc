// The `onyx` Python module (onyx._onyx): InferenceSession with onnxruntime's call shape
// over the public C++ API (include/onyx), numpy values, and onyx's errors as exceptions.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "module.h"
#include "onyx/session.h"

namespace py = pybind11;

namespace onyx::python {

namespace {

// Exception classes per onyx::ErrorCode, created at import.
PyObject* g_base = nullptr;
std::map<ErrorCode, PyObject*> g_by_code;

/// numpy dtype of an onyx element type as held in memory; types numpy lacks come as
/// their storage (bit patterns, one element per byte for the sub-byte ones).
py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::kFloat: return py::dtype::of<float>();
    case DType::kDouble: return py::dtype::of<double>();
    case DType::kInt8: return py::dtype::of<int8_t>();
    case DType::kInt16: return py::dtype::of<int16_t>();
    case DType::kInt32: return py::dtype::of<int32_t>();
    case DType::kInt64: return py::dtype::of<int64_t>();
    case DType::kUint8: return py::dtype::of<uint8_t>();
    case DType::kUint16: return py::dtype::of<uint16_t>();
    case DType::kUint32: return py::dtype::of<uint32_t>();
    case DType::kUint64: return py::dtype::of<uint64_t>();
    case DType::kBool: return py::dtype("bool");
    case DType::kFloat16: return py::dtype("float16");
    case DType::kComplex64: return py::dtype("complex64");
    case DType::kComplex128: return py::dtype("complex128");
    case DType::kString: return py::dtype("object");
    case DType::kBFloat16: return py::dtype::of<uint16_t>();
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0:
    case DType::kFloat4E2M1:
    case DType::kUint4:
    case DType::kUint2: return py::dtype::of<uint8_t>();
    case DType::kInt4:
    case DType::kInt2: return py::dtype::of<int8_t>();
    case DType::kUndefined: break;
  }
  throw Error(ErrorCode::kUnsupported, "no numpy dtype for onyx element type " + std::string(dtype_name(t)));
}

/// The onyx element type of a numpy array given for an input declared `want` (which may be
/// kUndefined): numpy's own type, or `want` where the array holds its storage type.
DType onyx_dtype(const py::dtype& dt, DType want) {
  const char kind = dt.kind();
  const size_t size = static_cast<size_t>(dt.itemsize());
  DType got = DType::kUndefined;
  if (kind == 'f') got = size == 4 ? DType::kFloat : size == 8 ? DType::kDouble : size == 2 ? DType::kFloat16 : got;
  if (kind == 'i')
    got = size == 1 ? DType::kInt8 : size == 2 ? DType::kInt16 : size == 4 ? DType::kInt32 : size == 8 ? DType::kInt64 : got;
  if (kind == 'u')
    got = size == 1 ? DType::kUint8
                    : size == 2 ? DType::kUint16 : size == 4 ? DType::kUint32 : size == 8 ? DType::kUint64 : got;
  if (kind == 'b') got = DType::kBool;
  if (kind == 'c') got = size == 8 ? DType::kComplex64 : size == 16 ? DType::kComplex128 : got;
  if (kind == 'O' || kind == 'U' || kind == 'S') got = DType::kString;
  // bfloat16 / float8 / 4- and 2-bit types travel as their storage (see numpy_dtype).
  if (want != DType::kUndefined && want != got && got != DType::kUndefined && got != DType::kString &&
      want != DType::kString && numpy_dtype(want).is(numpy_dtype(got)) &&
      (want == DType::kBFloat16 || dtype_size(want) == 1))
    return want;
  if (got == DType::kUndefined)
    throw Error(ErrorCode::kInvalidArgument,
                "numpy dtype '" + py::repr(dt).cast<std::string>() + "' has no ONNX element type");
  return got;
}

}  // namespace

void raise_onyx_error(const Error& e) {
  auto it = g_by_code.find(e.code());
  PyErr_SetString(it != g_by_code.end() ? it->second : g_base, e.what());
}

Value to_value(const py::handle& obj, DType want, bool sequence, std::vector<py::object>& keep) {
  if (obj.is_none()) return Value::none();
  if (sequence && (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj))) {
    std::vector<Tensor> items;
    DType elem = want;
    for (const py::handle& item : obj) {
      Value v = to_value(item, want, false, keep);
      if (!v.is_tensor()) throw Error(ErrorCode::kInvalidArgument, "a sequence may hold only arrays");
      if (elem == DType::kUndefined) elem = v.tensor().dtype();
      items.push_back(v.tensor());
    }
    if (elem == DType::kUndefined) elem = DType::kFloat;
    return Value::sequence(elem, std::move(items));
  }
  py::array arr = py::array::ensure(obj);
  if (!arr) throw Error(ErrorCode::kInvalidArgument, "cannot convert a " + std::string(py::str(obj.get_type())) + " to a numpy array");
  const DType dt = onyx_dtype(arr.dtype(), want);
  Dims dims(arr.shape(), arr.shape() + arr.ndim());
  if (dt == DType::kString) {
    Tensor t(DType::kString, dims);
    std::string* out = t.data<std::string>();
    py::array flat = py::array(py::module_::import("numpy").attr("ravel")(arr, "C"));
    const py::ssize_t n = flat.size();
    for (py::ssize_t i = 0; i < n; ++i) {
      py::object item = flat.attr("item")(i);
      if (py::isinstance<py::bytes>(item)) {
        out[i] = item.cast<std::string>();
      } else if (py::isinstance<py::str>(item)) {
        // surrogateescape: a str read from non-UTF-8 bytes (see to_python) gives them back.
        PyObject* b = PyUnicode_AsEncodedString(item.ptr(), "utf-8", "surrogateescape");
        if (!b) throw py::error_already_set();
        out[i] = py::reinterpret_steal<py::bytes>(b).cast<std::string>();
      } else {
        throw Error(ErrorCode::kInvalidArgument, "a string tensor's items must be str or bytes, got " +
                                                     std::string(py::str(item.get_type())));
      }
    }
    return Value(std::move(t));
  }
  // Contiguous, aligned arrays are read in place; others are copied once to C order.
  if (!(arr.flags() & py::array::c_style) || (reinterpret_cast<uintptr_t>(arr.data()) % arr.itemsize()) != 0)
    arr = py::array(py::module_::import("numpy").attr("ascontiguousarray")(arr));
  keep.push_back(arr);
  void* data = const_cast<void*>(arr.data());
  // The no-op keepalive gives the buffer an identity (outputs never alias it); `keep`
  // holds the array until the run is over.
  return Value(Tensor::view(dt, std::move(dims), data, std::shared_ptr<void>(data, [](void*) {})));
}

py::object to_python(Value v) {
  if (v.is_none()) return py::none();
  if (v.is_sequence()) {
    py::list items;
    for (const Tensor& t : v.seq()) items.append(to_python(Value(t)));
    return items;
  }
  const Tensor& t = v.tensor();
  std::vector<py::ssize_t> shape(t.dims().begin(), t.dims().end());
  if (t.dtype() == DType::kString) {
    py::array out(py::dtype("object"), shape);
    py::object flat = out.attr("reshape")(-1);
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      // Bytes that are not UTF-8 map to U+DC80..U+DCFF, as `onyx run` writes them.
      PyObject* u = PyUnicode_DecodeUTF8(s[i].data(), static_cast<py::ssize_t>(s[i].size()), "surrogateescape");
      if (!u) throw py::error_already_set();
      flat[py::int_(i)] = py::reinterpret_steal<py::object>(u);
    }
    return out;
  }
  // The array views the tensor's buffer (outputs belong to the caller); a capsule keeps
  // the buffer alive as long as the array.
  auto* holder = new Tensor(t);
  py::capsule owner(holder, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(numpy_dtype(t.dtype()), shape, {}, holder->raw(), owner);
}

}  // namespace onyx::python

PYBIND11_MODULE(_onyx, m) {
  using namespace onyx;
  using namespace onyx::python;
  m.doc() = "onyx: an ONNX inference runtime (C++), with onnxruntime's Python call shape.";

  g_base = PyErr_NewExceptionWithDoc("onyx.OnyxError", "Base class of every error onyx raises.",
                                     PyExc_RuntimeError, nullptr);
  m.attr("OnyxError") = py::handle(g_base);
  struct Named {
    ErrorCode code;
    const char* name;
    const char* doc;
  };
  const Named named[] = {
      {ErrorCode::kInvalidModel, "InvalidGraph", "The file is not a valid ONNX model (malformed protobuf, bad graph)."},
      {ErrorCode::kUnsupported, "NotImplemented", "A valid model that uses an op, opset or dtype onyx cannot run."},
      {ErrorCode::kInvalidArgument, "InvalidArgument", "A bad input at run time: name, dtype, shape."},
      {ErrorCode::kIo, "NoSuchFile", "A file could not be read or written."},
      {ErrorCode::kRuntime, "RuntimeException", "A node failed while the model ran."},
      {ErrorCode::kLimit, "LimitExceeded", "A resource limit of SessionOptions was reached (the message names it)."},
      {ErrorCode::kCancelled, "Cancelled", "The run was stopped through RunOptions.terminate."},
  };
  for (const Named& n : named) {
    std::string full = std::string("onyx.") + n.name;
    PyObject* cls = PyErr_NewExceptionWithDoc(full.c_str(), n.doc, g_base, nullptr);
    g_by_code[n.code] = cls;
    m.attr(n.name) = py::handle(cls);
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      raise_onyx_error(e);
    }
  });

  bind_session(m);
  bind_helpers(m);
}
