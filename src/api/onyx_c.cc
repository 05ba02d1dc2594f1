// The C API (include/onyx/onyx_c.h) over the public C++ API: every entry point catches
// what the C++ side throws and turns it into an OnyxStatus.
#include "onyx/onyx_c.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "onyx/session.h"

struct OnyxStatus {
  OnyxErrorCode code;
  std::string message;
};

struct OnyxSessionOptions {
  onyx::SessionOptions options;
};

struct OnyxSession {
  std::unique_ptr<onyx::Session> session;
};

struct OnyxValue {
  onyx::Value value;
};

struct OnyxRunOptions {
  onyx::RunOptions options;
};

namespace {

// Handed out when even the status of an allocation failure cannot be allocated;
// onyx_status_free knows not to delete it.
OnyxStatus g_out_of_memory{ONYX_OUT_OF_MEMORY, "out of memory"};

OnyxStatus* make_status(OnyxErrorCode code, const char* message) noexcept {
  try {
    return new OnyxStatus{code, message};
  } catch (...) {
    return &g_out_of_memory;
  }
}

OnyxErrorCode to_c(onyx::ErrorCode code) {
  switch (code) {
    case onyx::ErrorCode::kInvalidModel: return ONYX_INVALID_MODEL;
    case onyx::ErrorCode::kUnsupported: return ONYX_UNSUPPORTED;
    case onyx::ErrorCode::kInvalidArgument: return ONYX_INVALID_ARGUMENT;
    case onyx::ErrorCode::kIo: return ONYX_IO;
    case onyx::ErrorCode::kRuntime: return ONYX_RUNTIME;
    case onyx::ErrorCode::kLimit: return ONYX_LIMIT;
    case onyx::ErrorCode::kCancelled: return ONYX_CANCELLED;
  }
  return ONYX_INTERNAL;
}

/// Runs `f`, turning every exception into a status.
template <typename F>
OnyxStatus* guarded(F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const onyx::Error& e) {
    return make_status(to_c(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return &g_out_of_memory;
  } catch (const std::exception& e) {
    return make_status(ONYX_INTERNAL, e.what());
  } catch (...) {
    return make_status(ONYX_INTERNAL, "unknown exception inside onyx");
  }
}

[[noreturn]] void bad_arg(const std::string& message) {
  throw onyx::Error(onyx::ErrorCode::kInvalidArgument, message);
}

template <typename T>
void need(const T* p, const char* what) {
  if (!p) bad_arg(std::string(what) + " is NULL");
}

onyx::DType checked_dtype(int32_t code) {
  if (!onyx::dtype_valid(code)) bad_arg("unknown element type code " + std::to_string(code));
  return static_cast<onyx::DType>(code);
}

onyx::Dims make_dims(const int64_t* dims, size_t rank) {
  if (rank && !dims) bad_arg("dims is NULL while rank is " + std::to_string(rank));
  onyx::Dims d(dims, dims + rank);
  for (size_t i = 0; i < rank; ++i)
    if (d[i] < 0) bad_arg("dim " + std::to_string(i) + " is negative (" + std::to_string(d[i]) + ")");
  return d;
}

const onyx::IoInfo* io_at(const OnyxSession* s, OnyxIoSide side, size_t index) {
  if (!s || !s->session) return nullptr;
  const auto& list = side == ONYX_OUTPUTS ? s->session->outputs() : s->session->inputs();
  return index < list.size() ? &list[index] : nullptr;
}

const onyx::Tensor* tensor_of(const OnyxValue* v) {
  return v && v->value.is_tensor() ? &v->value.tensor() : nullptr;
}

OnyxStatus* create_session(OnyxSession** out, const OnyxSessionOptions* options,
                           std::unique_ptr<onyx::Session> (*open)(const void*, size_t, const char*,
                                                                   const onyx::SessionOptions&),
                           const void* data, size_t size, const char* path) {
  return guarded([&] {
    need(out, "out");
    *out = nullptr;
    onyx::SessionOptions opts = options ? options->options : onyx::SessionOptions{};
    auto s = std::make_unique<OnyxSession>();
    s->session = open(data, size, path, opts);
    *out = s.release();
  });
}

}  // namespace

extern "C" {

const char* onyx_version(void) { return "0.1.0"; }

OnyxErrorCode onyx_status_code(const OnyxStatus* status) { return status ? status->code : ONYX_OK; }
const char* onyx_status_message(const OnyxStatus* status) { return status ? status->message.c_str() : ""; }
void onyx_status_free(OnyxStatus* status) {
  if (status != &g_out_of_memory) delete status;
}

const char* onyx_dtype_name(int32_t dtype) {
  if (!onyx::dtype_valid(dtype)) return "";
  // dtype_name returns views of string literals, so data() is NUL-terminated.
  return onyx::dtype_name(static_cast<onyx::DType>(dtype)).data();
}

size_t onyx_dtype_size(int32_t dtype) {
  if (!onyx::dtype_valid(dtype) || dtype == ONYX_DTYPE_STRING) return 0;
  return onyx::dtype_size(static_cast<onyx::DType>(dtype));
}

// ---- Session options

OnyxStatus* onyx_session_options_create(OnyxSessionOptions** out) {
  return guarded([&] {
    need(out, "out");
    *out = new OnyxSessionOptions();
  });
}

void onyx_session_options_free(OnyxSessionOptions* options) { delete options; }

OnyxStatus* onyx_session_options_set_threads(OnyxSessionOptions* options, int threads) {
  return guarded([&] {
    need(options, "options");
    if (threads < 1) bad_arg("threads must be at least 1, got " + std::to_string(threads));
    options->options.threads = threads;
  });
}

OnyxStatus* onyx_session_options_set_optimization(OnyxSessionOptions* options, OnyxGraphOptimization level) {
  return guarded([&] {
    need(options, "options");
    switch (level) {
      case ONYX_OPTIMIZE_NONE: options->options.optimize = onyx::GraphOptimization::kNone; return;
      case ONYX_OPTIMIZE_BASIC: options->options.optimize = onyx::GraphOptimization::kBasic; return;
      case ONYX_OPTIMIZE_ALL: options->options.optimize = onyx::GraphOptimization::kAll; return;
    }
    bad_arg("unknown optimization level " + std::to_string(static_cast<int>(level)) + " (0, 1 or 2)");
  });
}

OnyxStatus* onyx_session_options_set_reference_kernels(OnyxSessionOptions* options, int on) {
  return guarded([&] {
    need(options, "options");
    options->options.reference_kernels = on != 0;
  });
}

OnyxStatus* onyx_session_options_set_max_tensor_bytes(OnyxSessionOptions* options, uint64_t bytes) {
  return guarded([&] {
    need(options, "options");
    options->options.max_tensor_bytes = bytes;
  });
}

OnyxStatus* onyx_session_options_set_max_run_bytes(OnyxSessionOptions* options, uint64_t bytes) {
  return guarded([&] {
    need(options, "options");
    options->options.max_run_bytes = bytes;
  });
}

OnyxStatus* onyx_session_options_set_max_loop_iterations(OnyxSessionOptions* options, int64_t iterations) {
  return guarded([&] {
    need(options, "options");
    if (iterations < 0) bad_arg("max_loop_iterations must not be negative");
    options->options.max_loop_iterations = iterations;
  });
}

// ---- Session

OnyxStatus* onyx_session_create(const char* path, const OnyxSessionOptions* options, OnyxSession** out) {
  if (!path) return make_status(ONYX_INVALID_ARGUMENT, "path is NULL");
  return create_session(
      out, options,
      [](const void*, size_t, const char* p, const onyx::SessionOptions& o) { return onyx::Session::open(p, o); },
      nullptr, 0, path);
}

OnyxStatus* onyx_session_create_from_bytes(const void* data, size_t size, const OnyxSessionOptions* options,
                                           OnyxSession** out) {
  if (!data && size) return make_status(ONYX_INVALID_ARGUMENT, "data is NULL");
  return create_session(
      out, options,
      [](const void* d, size_t n, const char*, const onyx::SessionOptions& o) {
        return onyx::Session::open_bytes(d, n, o);
      },
      data, size, nullptr);
}

void onyx_session_free(OnyxSession* session) { delete session; }

size_t onyx_session_io_count(const OnyxSession* s, OnyxIoSide side) {
  if (!s || !s->session) return 0;
  return side == ONYX_OUTPUTS ? s->session->outputs().size() : s->session->inputs().size();
}

const char* onyx_session_io_name(const OnyxSession* s, OnyxIoSide side, size_t index) {
  const onyx::IoInfo* io = io_at(s, side, index);
  return io ? io->name.c_str() : nullptr;
}

const char* onyx_session_io_type(const OnyxSession* s, OnyxIoSide side, size_t index) {
  const onyx::IoInfo* io = io_at(s, side, index);
  return io ? io->type.c_str() : nullptr;
}

const char* onyx_session_io_onnx_type(const OnyxSession* s, OnyxIoSide side, size_t index) {
  const onyx::IoInfo* io = io_at(s, side, index);
  return io ? io->onnx_type.c_str() : nullptr;
}

int32_t onyx_session_io_dtype(const OnyxSession* s, OnyxIoSide side, size_t index) {
  const onyx::IoInfo* io = io_at(s, side, index);
  return io ? static_cast<int32_t>(io->dtype) : ONYX_DTYPE_UNDEFINED;
}

int onyx_session_io_is_tensor(const OnyxSession* s, OnyxIoSide side, size_t index) {
  const onyx::IoInfo* io = io_at(s, side, index);
  return io && io->is_tensor ? 1 : 0;
}

int64_t onyx_session_io_rank(const OnyxSession* s, OnyxIoSide side, size_t index) {
  const onyx::IoInfo* io = io_at(s, side, index);
  return io && io->has_shape ? static_cast<int64_t>(io->dims.size()) : -1;
}

int64_t onyx_session_io_dim(const OnyxSession* s, OnyxIoSide side, size_t index, size_t axis) {
  const onyx::IoInfo* io = io_at(s, side, index);
  return io && io->has_shape && axis < io->dims.size() ? io->dims[axis] : -1;
}

const char* onyx_session_io_dim_name(const OnyxSession* s, OnyxIoSide side, size_t index, size_t axis) {
  const onyx::IoInfo* io = io_at(s, side, index);
  return io && io->has_shape && axis < io->dim_names.size() ? io->dim_names[axis].c_str() : "";
}

int onyx_session_io_has_default(const OnyxSession* s, OnyxIoSide side, size_t index) {
  const onyx::IoInfo* io = io_at(s, side, index);
  return io && io->has_default ? 1 : 0;
}

const char* onyx_session_model_string(const OnyxSession* s, OnyxModelField field) {
  if (!s || !s->session) return nullptr;
  const onyx::ModelMetadata& m = s->session->metadata();
  switch (field) {
    case ONYX_MODEL_PRODUCER_NAME: return m.producer_name.c_str();
    case ONYX_MODEL_PRODUCER_VERSION: return m.producer_version.c_str();
    case ONYX_MODEL_DOMAIN: return m.domain.c_str();
    case ONYX_MODEL_DOC_STRING: return m.doc_string.c_str();
    case ONYX_MODEL_GRAPH_NAME: return m.graph_name.c_str();
    case ONYX_MODEL_GRAPH_DOC_STRING: return m.graph_doc_string.c_str();
  }
  return nullptr;
}

int64_t onyx_session_model_version(const OnyxSession* s) {
  return s && s->session ? s->session->metadata().model_version : 0;
}

int64_t onyx_session_ir_version(const OnyxSession* s) {
  return s && s->session ? s->session->metadata().ir_version : 0;
}

size_t onyx_session_opset_count(const OnyxSession* s) {
  return s && s->session ? s->session->metadata().opset_imports.size() : 0;
}

OnyxStatus* onyx_session_opset(const OnyxSession* s, size_t index, const char** domain, int64_t* version) {
  return guarded([&] {
    need(s, "session");
    const auto& ops = s->session->metadata().opset_imports;
    if (index >= ops.size())
      bad_arg("opset index " + std::to_string(index) + " out of range (" + std::to_string(ops.size()) + " imports)");
    auto it = ops.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(index));
    if (domain) *domain = it->first.c_str();
    if (version) *version = it->second;
  });
}

size_t onyx_session_metadata_count(const OnyxSession* s) {
  return s && s->session ? s->session->metadata().metadata_props.size() : 0;
}

OnyxStatus* onyx_session_metadata(const OnyxSession* s, size_t index, const char** key, const char** value) {
  return guarded([&] {
    need(s, "session");
    const auto& props = s->session->metadata().metadata_props;
    if (index >= props.size())
      bad_arg("metadata index " + std::to_string(index) + " out of range (" + std::to_string(props.size()) +
              " entries)");
    if (key) *key = props[index].first.c_str();
    if (value) *value = props[index].second.c_str();
  });
}

// ---- Values

OnyxStatus* onyx_tensor_create(int32_t dtype, const int64_t* dims, size_t rank, OnyxValue** out) {
  return guarded([&] {
    need(out, "out");
    *out = nullptr;
    onyx::Tensor t(checked_dtype(dtype), make_dims(dims, rank));
    *out = new OnyxValue{onyx::Value(std::move(t))};
  });
}

OnyxStatus* onyx_tensor_create_view(int32_t dtype, const int64_t* dims, size_t rank, void* data, size_t data_bytes,
                                    OnyxValue** out) {
  return guarded([&] {
    need(out, "out");
    *out = nullptr;
    onyx::DType dt = checked_dtype(dtype);
    if (dt == onyx::DType::kString) bad_arg("a string tensor cannot view caller memory; use onyx_tensor_create");
    onyx::Dims d = make_dims(dims, rank);
    const int64_t n = onyx::dims_numel(d);
    const size_t want = static_cast<size_t>(n) * onyx::dtype_size(dt);
    if (data_bytes != want)
      bad_arg("data holds " + std::to_string(data_bytes) + " bytes; a " + std::string(onyx::dtype_name(dt)) +
              onyx::dims_str(d) + " tensor needs " + std::to_string(want));
    if (want && !data) bad_arg("data is NULL");
    // A keepalive that frees nothing still gives the buffer an identity, so Session::run
    // sees when an output would alias this input and copies it.
    std::shared_ptr<void> identity(data, [](void*) {});
    *out = new OnyxValue{onyx::Value(onyx::Tensor::view(dt, std::move(d), data, std::move(identity)))};
  });
}

OnyxStatus* onyx_value_create_none(OnyxValue** out) {
  return guarded([&] {
    need(out, "out");
    *out = new OnyxValue{onyx::Value::none()};
  });
}

OnyxStatus* onyx_sequence_create(int32_t elem_dtype, const OnyxValue* const* items, size_t count, OnyxValue** out) {
  return guarded([&] {
    need(out, "out");
    *out = nullptr;
    onyx::DType dt = checked_dtype(elem_dtype);
    if (count && !items) bad_arg("items is NULL");
    std::vector<onyx::Tensor> ts;
    for (size_t i = 0; i < count; ++i) {
      const onyx::Tensor* t = tensor_of(items[i]);
      if (!t) bad_arg("sequence item " + std::to_string(i) + " is not a tensor");
      if (t->dtype() != dt)
        bad_arg("sequence item " + std::to_string(i) + " is " + std::string(onyx::dtype_name(t->dtype())) +
                ", the sequence holds " + std::string(onyx::dtype_name(dt)));
      ts.push_back(*t);
    }
    *out = new OnyxValue{onyx::Value::sequence(dt, std::move(ts))};
  });
}

void onyx_value_free(OnyxValue* value) { delete value; }

OnyxValueKind onyx_value_kind(const OnyxValue* v) {
  if (!v) return ONYX_VALUE_NONE;
  if (v->value.is_tensor()) return ONYX_VALUE_TENSOR;
  if (v->value.is_sequence()) return ONYX_VALUE_SEQUENCE;
  return ONYX_VALUE_NONE;
}

int32_t onyx_tensor_dtype(const OnyxValue* v) {
  const onyx::Tensor* t = tensor_of(v);
  return t ? static_cast<int32_t>(t->dtype()) : ONYX_DTYPE_UNDEFINED;
}

size_t onyx_tensor_rank(const OnyxValue* v) {
  const onyx::Tensor* t = tensor_of(v);
  return t ? t->rank() : 0;
}

const int64_t* onyx_tensor_dims(const OnyxValue* v) {
  const onyx::Tensor* t = tensor_of(v);
  return t ? t->dims().data() : nullptr;
}

int64_t onyx_tensor_numel(const OnyxValue* v) {
  const onyx::Tensor* t = tensor_of(v);
  return t ? t->numel() : 0;
}

size_t onyx_tensor_nbytes(const OnyxValue* v) {
  const onyx::Tensor* t = tensor_of(v);
  return t && t->dtype() != onyx::DType::kString ? t->nbytes() : 0;
}

void* onyx_tensor_data(OnyxValue* v) {
  if (!v || !v->value.is_tensor()) return nullptr;
  onyx::Tensor& t = v->value.tensor();
  return t.dtype() == onyx::DType::kString ? nullptr : t.raw();
}

OnyxStatus* onyx_tensor_get_string(const OnyxValue* v, size_t index, const char** data, size_t* size) {
  return guarded([&] {
    const onyx::Tensor* t = tensor_of(v);
    if (!t || t->dtype() != onyx::DType::kString) bad_arg("the value is not a string tensor");
    if (index >= static_cast<size_t>(t->numel()))
      bad_arg("string index " + std::to_string(index) + " out of range (" + std::to_string(t->numel()) +
              " elements)");
    const std::string& s = t->data<std::string>()[index];
    if (data) *data = s.data();
    if (size) *size = s.size();
  });
}

OnyxStatus* onyx_tensor_set_string(OnyxValue* v, size_t index, const char* data, size_t size) {
  return guarded([&] {
    if (!v || !v->value.is_tensor() || v->value.tensor().dtype() != onyx::DType::kString)
      bad_arg("the value is not a string tensor");
    onyx::Tensor& t = v->value.tensor();
    if (index >= static_cast<size_t>(t.numel()))
      bad_arg("string index " + std::to_string(index) + " out of range (" + std::to_string(t.numel()) +
              " elements)");
    if (size && !data) bad_arg("data is NULL");
    t.data<std::string>()[index].assign(data ? data : "", size);
  });
}

size_t onyx_sequence_length(const OnyxValue* v) { return v && v->value.is_sequence() ? v->value.seq().size() : 0; }

OnyxStatus* onyx_sequence_item(const OnyxValue* v, size_t index, OnyxValue** out) {
  return guarded([&] {
    need(out, "out");
    *out = nullptr;
    if (!v || !v->value.is_sequence()) bad_arg("the value is not a sequence");
    const auto& items = v->value.seq();
    if (index >= items.size())
      bad_arg("sequence index " + std::to_string(index) + " out of range (" + std::to_string(items.size()) +
              " items)");
    *out = new OnyxValue{onyx::Value(items[index])};
  });
}

// ---- Running

OnyxStatus* onyx_run_options_create(OnyxRunOptions** out) {
  return guarded([&] {
    need(out, "out");
    *out = new OnyxRunOptions();
  });
}

void onyx_run_options_free(OnyxRunOptions* options) { delete options; }

void onyx_run_options_set_terminate(OnyxRunOptions* options, int terminate) {
  if (options) options->options.terminate.store(terminate != 0);
}

OnyxStatus* onyx_session_run(OnyxSession* session, const OnyxRunOptions* run_options,
                             const char* const* input_names, const OnyxValue* const* inputs, size_t input_count,
                             const char* const* output_names, size_t output_count, OnyxValue** outputs) {
  return guarded([&] {
    need(session, "session");
    if (input_count && (!input_names || !inputs)) bad_arg("input_names or inputs is NULL");
    if (output_count && !outputs) bad_arg("outputs is NULL");
    std::vector<std::pair<std::string, onyx::Value>> feeds;
    feeds.reserve(input_count);
    for (size_t i = 0; i < input_count; ++i) {
      if (!input_names[i]) bad_arg("input name " + std::to_string(i) + " is NULL");
      if (!inputs[i]) bad_arg(std::string("input '") + input_names[i] + "' is NULL");
      feeds.emplace_back(input_names[i], inputs[i]->value);
    }
    std::vector<std::string> names;
    if (output_names) {
      for (size_t i = 0; i < output_count; ++i) {
        if (!output_names[i]) bad_arg("output name " + std::to_string(i) + " is NULL");
        names.emplace_back(output_names[i]);
      }
      if (names.empty()) return;  // nothing asked for
    } else if (output_count != session->session->outputs().size()) {
      bad_arg("output_count is " + std::to_string(output_count) + " but the model has " +
              std::to_string(session->session->outputs().size()) + " outputs");
    }
    static const onyx::RunOptions kDefaultRun;
    const onyx::RunOptions& ro = run_options ? run_options->options : kDefaultRun;
    std::vector<onyx::Value> got = session->session->run(feeds, names, ro);
    // Allocate every handle before writing any, so a failure writes none.
    std::vector<std::unique_ptr<OnyxValue>> handles;
    handles.reserve(got.size());
    for (auto& v : got) handles.push_back(std::make_unique<OnyxValue>(OnyxValue{std::move(v)}));
    for (size_t i = 0; i < handles.size(); ++i) outputs[i] = handles[i].release();
  });
}

}  // extern "C"
