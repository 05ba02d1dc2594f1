// The C entry points of onyx-web, the browser module (bindings/js wraps them in
// TypeScript). Every function catches everything: a fault becomes the thread's last error
// (onyx's ErrorCode and message), which the JS side turns into an exception, so no C++
// exception ever crosses into JS as a bare number and nothing aborts.
//
// Protocol: call a function, then onyx_web_last_error_code(); -1 means it succeeded, else it
// is the onyx::ErrorCode (kOutOfMemory for std::bad_alloc) and onyx_web_last_error_message()
// says what went wrong. Dimensions cross the boundary as doubles (exact up to 2^53, and
// no 64-bit integers in the JS calling convention).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "check/validate.h"
#include "format/loader.h"
#include "onyx/preprocess.h"
#include "ir/graph.h"
#include "onyx/error.h"
#include "onyx/session.h"
#include "onyx/ctc.h"
#include "runtime/session_internal.h"

using namespace onyx;

namespace {

/// Not an onyx::ErrorCode: the allocator refused (the page should offer a smaller input).
constexpr int kOutOfMemory = 100;
/// Not an onyx::ErrorCode: an exception that is neither onyx::Error nor std::bad_alloc.
constexpr int kInternal = 101;

thread_local int g_error_code = -1;
thread_local std::string g_error_message;

/// Sets the thread's last error from the exception being handled (called in a catch
/// block: it rethrows to tell the kinds apart). One out-of-line copy of the handlers
/// instead of one per entry point: each inlined set cost the .wasm ~500 bytes. (In the
/// pthreads build typed clauses match only with tools/wasm/wasm_eh_pthreads.cc linked.)
__attribute__((noinline)) void record_current_exception() {
  try {
    throw;
  } catch (const Error& e) {
    g_error_code = static_cast<int>(e.code());
    g_error_message = e.what();
  } catch (const std::bad_alloc&) {
    g_error_code = kOutOfMemory;
    g_error_message = "out of memory: the WebAssembly heap (at most 4 GiB) could not grow enough";
  } catch (const std::exception& e) {
    g_error_code = kInternal;
    g_error_message = std::string("internal error: ") + e.what();
  } catch (...) {
    g_error_code = kInternal;
    g_error_message = "internal error: unknown exception";
  }
}

template <typename F>
auto guarded(F&& f, decltype(f()) on_error) -> decltype(f()) {
  g_error_code = -1;
  g_error_message.clear();
  try {
    return f();
  } catch (...) {
    record_current_exception();
  }
  return on_error;
}

[[noreturn]] void fail_code(ErrorCode code, const std::string& msg) { throw Error(code, msg); }

void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_io(std::string& out, const std::vector<IoInfo>& ios) {
  out += '[';
  for (size_t i = 0; i < ios.size(); ++i) {
    const IoInfo& io = ios[i];
    if (i) out += ',';
    out += "{\"name\":";
    json_string(out, io.name);
    out += ",\"isTensor\":";
    out += io.is_tensor ? "true" : "false";
    out += ",\"dtype\":" + std::to_string(static_cast<int>(io.dtype));
    out += ",\"typeText\":";
    json_string(out, io.type);
    out += ",\"hasShape\":";
    out += io.has_shape ? "true" : "false";
    out += ",\"shape\":[";
    for (size_t d = 0; d < io.dims.size(); ++d) {
      if (d) out += ',';
      if (io.dims[d] >= 0) out += std::to_string(io.dims[d]);
      else if (d < io.dim_names.size() && !io.dim_names[d].empty()) json_string(out, io.dim_names[d]);
      else out += "-1";
    }
    out += "],\"hasDefault\":";
    out += io.has_default ? "true" : "false";
    out += '}';
  }
  out += ']';
}

/// Threads a session of this build can use: the pthreads build runs the pool it is asked
/// for; the single-threaded one always runs on the calling thread.
int usable_threads(int asked) {
#ifdef __EMSCRIPTEN_PTHREADS__
  return asked < 1 ? 1 : asked;
#else
  (void)asked;
  return 1;
#endif
}

Dims read_dims(const double* dims, int rank) {
  if (rank < 0 || rank > 64) fail_code(ErrorCode::kInvalidArgument, "rank " + std::to_string(rank) + " is out of range");
  Dims d(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    double v = dims[i];
    if (!(v >= 0) || v != std::floor(v) || v > 9007199254740992.0)
      fail_code(ErrorCode::kInvalidArgument,
                "dimension " + std::to_string(i) + " is " + std::to_string(v) + "; dims must be non-negative integers");
    d[static_cast<size_t>(i)] = static_cast<int64_t>(v);
  }
  return d;
}

}  // namespace

/// A session and its metadata, as the JS side holds it.
struct OnyxWebSession {
  std::unique_ptr<Session> session;
  std::string io_json;
  int threads = 1;
  /// Profiling (session.startProfiling / endProfiling): the node times of the runs while
  /// on, and where each run's end in them.
  bool profiling = false;
  std::vector<NodeTime> profile;
  std::vector<size_t> run_ends;
};

/// One run: the feeds being built, then the outputs.
struct OnyxWebRun {
  OnyxWebSession* owner = nullptr;
  std::vector<std::pair<std::string, Value>> feeds;
  std::vector<Value> outputs;
  std::vector<std::vector<double>> out_dims;
};

/// External-data blobs for the next session (InferenceSession.create's externalData):
/// the JS side copies each file into the buffer onyx_web_external_add returns; the model
/// views them (the session keeps them alive), so the weights are in the heap once.
struct OnyxWebExternal {
  format::ExternalBlobs blobs;
};

/// A result buffer (preprocessed tensor or decoded JSON).
struct OnyxWebBuffer {
  Tensor tensor;
  std::string text;
  std::vector<double> dims;
  bool is_text = false;
};

extern "C" {

int onyx_web_last_error_code() { return g_error_code; }
const char* onyx_web_last_error_message() { return g_error_message.c_str(); }

const char* onyx_web_version() {
#ifdef __EMSCRIPTEN_PTHREADS__
  return "onyx-web 0.1.0 (wasm32, simd128, pthreads)";
#else
  return "onyx-web 0.1.0 (wasm32, simd128, single-threaded)";
#endif
}

/// 1 for the single-threaded build; the pthreads build takes any count (its workers are
/// started by the loader).
int onyx_web_max_threads() { return usable_threads(1 << 16); }

OnyxWebExternal* onyx_web_external_new() {
  return guarded([]() -> OnyxWebExternal* { return new OnyxWebExternal; }, nullptr);
}

/// Adds the external-data file the model names `path` (its bytes: `size`); returns where
/// the JS side writes them (null with no error when size is 0).
void* onyx_web_external_add(OnyxWebExternal* e, const char* path, size_t size) {
  return guarded(
      [&]() -> void* {
        std::string key(path);
        if (e->blobs.count(key))
          fail_code(ErrorCode::kInvalidArgument, "externalData: '" + key + "' is given twice");
        std::shared_ptr<uint8_t[]> buf(new uint8_t[size ? size : 1]);
        e->blobs[key] = format::ExternalBlob{std::shared_ptr<const void>(buf, buf.get()), buf.get(), size};
        return size ? buf.get() : nullptr;
      },
      nullptr);
}

void onyx_web_external_free(OnyxWebExternal* e) { delete e; }

/// Loads and plans a model from bytes, its external data from `ext` (null: none).
/// `strict`: first list every node the wasm provider cannot run (as `onyx check --provider
/// wasm --strict`) and refuse the model when there is one. `optimize`: 0 none, 1 basic, 2 all.
OnyxWebSession* onyx_web_session_create(const uint8_t* data, size_t size, int threads, int strict, int optimize,
                                        const OnyxWebExternal* ext) {
  return guarded(
      [&]() -> OnyxWebSession* {
        static const format::ExternalBlobs kNone;
        std::shared_ptr<ir::Model> model = format::load_model_from_bytes(data, size, ext ? ext->blobs : kNone);
        if (strict) {
          check::Options co;
          co.providers = {"wasm"};
          check::Report r = check::check_model(*model, co);
          for (const auto& p : r.problems)
            if (p.severity == check::Problem::Severity::kError)
              fail_code(ErrorCode::kInvalidModel, (p.where.empty() ? "" : "in " + p.where + ": ") + p.message);
          const auto& un = r.providers.at(0).unsupported;
          if (!un.empty()) {
            std::string msg = "strict: the wasm provider cannot run " + std::to_string(un.size()) + " of " +
                              std::to_string(r.providers[0].nodes) + " nodes:";
            for (const auto& u : un) {
              msg += "\n  ";
              if (!u.where.empty()) msg += "in " + u.where + ": ";
              msg += u.domain.empty() ? u.op_type : u.domain + "." + u.op_type;
              if (!u.node.empty()) msg += " '" + u.node + "'";
              msg += " (opset " + std::to_string(u.opset) + "): " + u.reason;
            }
            fail_code(ErrorCode::kUnsupported, msg);
          }
        }
        SessionOptions so;
        so.threads = usable_threads(threads);
        so.optimize = optimize <= 0 ? GraphOptimization::kNone
                      : optimize == 1 ? GraphOptimization::kBasic
                                      : GraphOptimization::kAll;
        auto s = std::make_unique<OnyxWebSession>();
        int64_t opset = 0;
        auto it = model->opset_imports.find("");
        if (it != model->opset_imports.end()) opset = it->second;
        s->session = session_from_model(std::move(model), so);
        s->threads = so.threads;
        std::string& j = s->io_json;
        j = "{\"inputs\":";
        json_io(j, s->session->inputs());
        j += ",\"outputs\":";
        json_io(j, s->session->outputs());
        j += ",\"opset\":" + std::to_string(opset);
        j += ",\"threads\":" + std::to_string(s->threads);
        j += ",\"producer\":";
        const ModelMetadata& md = s->session->metadata();
        json_string(j, md.producer_name + (md.producer_version.empty() ? "" : " " + md.producer_version));
        j += ",\"build\":";
        json_string(j, onyx_web_version());
        j += '}';
        return s.release();
      },
      nullptr);
}

void onyx_web_session_release(OnyxWebSession* s) { delete s; }

/// Profiling: on = 1 starts recording each run's node times (dropping what an earlier
/// start recorded) and returns null; on = 0 stops and returns what was recorded, as JSON
/// {"runs": N, "nodes": [{"run", "index", "node", "opType", "ns"}, ...]} (each run's
/// nodes in the order they ran; ns: wall time in nanoseconds). Null with the last error
/// set on failure.
OnyxWebBuffer* onyx_web_session_profile(OnyxWebSession* s, int on) {
  return guarded(
      [&]() -> OnyxWebBuffer* {
        if (!s) fail_code(ErrorCode::kInvalidArgument, "the session was released");
        s->profiling = on != 0;
        std::unique_ptr<OnyxWebBuffer> b;
        if (!on) {
          b = std::make_unique<OnyxWebBuffer>();
          b->is_text = true;
          std::string& j = b->text;
          j = "{\"runs\":" + std::to_string(s->run_ends.size()) + ",\"nodes\":[";
          size_t run = 0;
          for (size_t i = 0; i < s->profile.size(); ++i) {
            while (run < s->run_ends.size() && s->run_ends[run] <= i) ++run;
            const NodeTime& t = s->profile[i];
            if (i) j += ',';
            j += "{\"run\":" + std::to_string(run) + ",\"index\":" + std::to_string(t.index) + ",\"node\":";
            json_string(j, t.node);
            j += ",\"opType\":";
            json_string(j, t.op_type);
            j += ",\"ns\":" + std::to_string(std::llround(t.ms * 1e6)) + '}';
          }
          j += "]}";
        }
        s->profile = {};
        s->run_ends = {};
        return b.release();
      },
      nullptr);
}
const char* onyx_web_session_io_json(const OnyxWebSession* s) { return s ? s->io_json.c_str() : ""; }

OnyxWebRun* onyx_web_run_begin(OnyxWebSession* s) {
  return guarded(
      [&]() -> OnyxWebRun* {
        if (!s) fail_code(ErrorCode::kInvalidArgument, "the session was released");
        auto r = new OnyxWebRun;
        r->owner = s;
        return r;
      },
      nullptr);
}

/// Adds a numeric/bool feed and returns where its nbytes of data go (the JS side copies
/// the typed array there). Null with no error for an empty tensor.
void* onyx_web_run_input(OnyxWebRun* r, const char* name, int dtype, const double* dims, int rank) {
  return guarded(
      [&]() -> void* {
        if (!dtype_valid(dtype) || dtype == static_cast<int>(DType::kString))
          fail_code(ErrorCode::kInvalidArgument,
                    std::string("input '") + name + "': element type code " + std::to_string(dtype) +
                        " cannot be fed as raw data");
        Tensor t(static_cast<DType>(dtype), read_dims(dims, rank));
        void* p = t.nbytes() ? t.raw() : nullptr;
        r->feeds.emplace_back(name, Value(std::move(t)));
        return p;
      },
      nullptr);
}

/// Adds a string feed: `count` UTF-8 strings at ptrs[i] with lens[i] bytes.
int onyx_web_run_string_input(OnyxWebRun* r, const char* name, const double* dims, int rank, const char* const* ptrs,
                          const uint32_t* lens, int count) {
  return guarded(
      [&]() -> int {
        Tensor t(DType::kString, read_dims(dims, rank));
        if (t.numel() != count)
          fail_code(ErrorCode::kInvalidArgument, std::string("input '") + name + "': " + std::to_string(count) +
                                                      " strings for dims " + dims_str(t.dims()));
        for (int i = 0; i < count; ++i) t.data<std::string>()[i].assign(ptrs[i], lens[i]);
        r->feeds.emplace_back(name, Value(std::move(t)));
        return 0;
      },
      -1);
}

int onyx_web_run_execute(OnyxWebRun* r) {
  return guarded(
      [&]() -> int {
        OnyxWebSession& s = *r->owner;
        RunOptions opts;
        opts.profile = s.profiling ? &s.profile : nullptr;
        try {
          r->outputs = s.session->run(r->feeds, opts);
        } catch (...) {
          if (s.profiling) s.run_ends.push_back(s.profile.size());  // a failed run keeps the nodes it ran
          throw;
        }
        if (s.profiling) s.run_ends.push_back(s.profile.size());
        r->feeds.clear();
        const auto& infos = r->owner->session->outputs();
        r->out_dims.clear();
        for (size_t i = 0; i < r->outputs.size(); ++i) {
          if (!r->outputs[i].is_tensor())
            fail_code(ErrorCode::kUnsupported, "output '" + infos[i].name + "' is " + infos[i].type +
                                                   "; onyx-web returns tensors only");
          const Dims& d = r->outputs[i].tensor().dims();
          r->out_dims.emplace_back(d.begin(), d.end());
        }
        return 0;
      },
      -1);
}

int onyx_web_run_output_count(const OnyxWebRun* r) { return static_cast<int>(r->outputs.size()); }
const char* onyx_web_run_output_name(const OnyxWebRun* r, int i) {
  return r->owner->session->outputs()[static_cast<size_t>(i)].name.c_str();
}
int onyx_web_run_output_dtype(const OnyxWebRun* r, int i) {
  return static_cast<int>(r->outputs[static_cast<size_t>(i)].tensor().dtype());
}
int onyx_web_run_output_rank(const OnyxWebRun* r, int i) {
  return static_cast<int>(r->out_dims[static_cast<size_t>(i)].size());
}
const double* onyx_web_run_output_dims(const OnyxWebRun* r, int i) { return r->out_dims[static_cast<size_t>(i)].data(); }
const void* onyx_web_run_output_data(const OnyxWebRun* r, int i) { return r->outputs[static_cast<size_t>(i)].tensor().raw(); }
size_t onyx_web_run_output_nbytes(const OnyxWebRun* r, int i) {
  const Tensor& t = r->outputs[static_cast<size_t>(i)].tensor();
  return t.dtype() == DType::kString ? 0 : t.nbytes();
}
const char* onyx_web_run_output_string(const OnyxWebRun* r, int i, int k) {
  return r->outputs[static_cast<size_t>(i)].tensor().data<std::string>()[k].data();
}
size_t onyx_web_run_output_string_len(const OnyxWebRun* r, int i, int k) {
  return r->outputs[static_cast<size_t>(i)].tensor().data<std::string>()[k].size();
}
void onyx_web_run_free(OnyxWebRun* r) { delete r; }

/// src/image's text-line preprocessing of RGBA8 pixels: a float32 [1, 1, height, W].
OnyxWebBuffer* onyx_web_preprocess_rgba(const uint8_t* rgba, int width, int height, int out_height, int min_width,
                                 double scale, double mean, double std) {
  return guarded(
      [&]() -> OnyxWebBuffer* {
        image::TextLineParams p;
        p.height = out_height;
        p.min_width = min_width;
        p.scale = scale;
        p.mean = mean;
        p.std = std;
        if (p.height < 1 || p.height > image::kMaxOutputHeight)
          fail_code(ErrorCode::kInvalidArgument, "height " + std::to_string(p.height) + " must be in [1, " +
                                                     std::to_string(image::kMaxOutputHeight) + "]");
        if (p.min_width < 1 || p.min_width > image::kMaxOutputWidth)
          fail_code(ErrorCode::kInvalidArgument, "min width " + std::to_string(p.min_width) + " is out of range");
        if (p.std == 0 || !std::isfinite(p.std) || !std::isfinite(p.mean) || !std::isfinite(p.scale))
          fail_code(ErrorCode::kInvalidArgument, "mean, std and scale must be finite, std non-zero");
        image::GrayImage g = image::rgba_to_gray(rgba, width, height);
        auto b = std::make_unique<OnyxWebBuffer>();
        b->tensor = image::preprocess_gray(g, p);
        b->dims.assign(b->tensor.dims().begin(), b->tensor.dims().end());
        return b.release();
      },
      nullptr);
}

const void* onyx_web_buffer_data(const OnyxWebBuffer* b) { return b->is_text ? b->text.data() : b->tensor.raw(); }
size_t onyx_web_buffer_size(const OnyxWebBuffer* b) { return b->is_text ? b->text.size() : b->tensor.nbytes(); }
const double* onyx_web_buffer_dims(const OnyxWebBuffer* b) { return b->dims.data(); }
void onyx_web_buffer_free(OnyxWebBuffer* b) { delete b; }

/// CTC decoding of one sequence of scores [frames, classes] (src/post): greedy when
/// beam_width is 0, else prefix beam search. `probabilities`: the scores are
/// probabilities, not logits. Returns JSON {"text", "labels", "confidence" (greedy: per
/// character, the highest softmax probability over the frames of its run) or "logProb"}.
OnyxWebBuffer* onyx_web_ctc_decode(const float* scores, int frames, int classes, int blank, int beam_width,
                            int probabilities, const char* alphabet_text) {
  return guarded(
      [&]() -> OnyxWebBuffer* {
        if (frames < 0 || classes < 1)
          fail_code(ErrorCode::kInvalidArgument, "scores must be [frames, classes] with classes >= 1");
        if (blank < 0 || blank >= classes)
          fail_code(ErrorCode::kInvalidArgument, "blank " + std::to_string(blank) + " is outside the " +
                                                     std::to_string(classes) + " classes");
        std::vector<std::string> alphabet = post::parse_alphabet(alphabet_text);
        auto n = static_cast<int64_t>(alphabet.size());
        if (n != classes - 1 && n != classes)
          fail_code(ErrorCode::kInvalidArgument,
                    "the alphabet has " + std::to_string(n) + " symbols but the scores have " + std::to_string(classes) +
                        " classes: it must list the " + std::to_string(classes - 1) + " non-blank classes");
        const auto kind = probabilities ? post::CtcScores::kProbabilities : post::CtcScores::kLogits;
        std::vector<double> lp = post::ctc_log_probs(scores, frames, classes, blank, kind);
        std::string j = "{";
        std::vector<int64_t> labels;
        if (beam_width <= 0) {
          labels = post::ctc_greedy_decode(scores, frames, classes, blank);
          // Per emitted label, the highest probability over the frames of its run.
          std::vector<double> conf;
          int64_t prev = -1;
          for (int64_t t = 0; t < frames; ++t) {
            const float* row = scores + t * classes;
            int64_t best = -1;  // the rule of post::ctc_greedy_decode
            for (int64_t c = 0; c < classes; ++c) {
              if (std::isnan(row[c])) continue;
              if (best < 0 || row[c] > row[best]) best = c;
            }
            if (best < 0) best = blank;
            double p = std::exp(lp[static_cast<size_t>(t * classes + best)]);
            if (best != blank && best != prev) conf.push_back(p);
            else if (best != blank && !conf.empty()) conf.back() = std::max(conf.back(), p);
            prev = best;
          }
          j += "\"confidence\":[";
          for (size_t i = 0; i < conf.size(); ++i) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%s%.9g", i ? "," : "", conf[i]);
            j += buf;
          }
          j += "],";
        } else {
          post::CtcBeamResult r = post::ctc_beam_search(lp.data(), frames, classes, blank, beam_width);
          labels = r.labels;
          char buf[40];
          if (std::isfinite(r.log_prob)) std::snprintf(buf, sizeof buf, "\"logProb\":%.17g,", r.log_prob);
          else std::snprintf(buf, sizeof buf, "\"logProb\":null,");
          j += buf;
        }
        j += "\"labels\":[";
        for (size_t i = 0; i < labels.size(); ++i) j += (i ? "," : "") + std::to_string(labels[i]);
        j += "],\"text\":";
        json_string(j, post::ctc_labels_to_text(labels, alphabet, blank, classes));
        j += '}';
        auto b = std::make_unique<OnyxWebBuffer>();
        b->is_text = true;
        b->text = std::move(j);
        return b.release();
      },
      nullptr);
}

}  // extern "C"
