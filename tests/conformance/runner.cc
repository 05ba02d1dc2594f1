// Runs the ONNX backend node test suite (or any folder of cases laid out the same
// way: <case>/model.onnx + test_data_set_N/{input,output}_K.pb) and reports per case
// and per op. Each case runs in a forked child so that a crash or a hang in one case
// is reported as such and does not stop the run.
//
// With --via-cli PATH/onyx, each case instead runs through the CLI: `onyx run model.onnx
// --input NAME=input_K.pb ... --output-format pb|npy -o DIR --json`, and each output file
// it writes is read back (format::read_value_path) and compared with output_K.pb by the
// same comparison. Only the allowlisted cases run: the ones the native runner passes.
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/half.h"
#include "format/loader.h"
#include "format/value_io.h"
#include "ir/graph.h"
#include "onyx/session.h"
#include "runtime/session_internal.h"

namespace fs = std::filesystem;
using namespace onyx;

namespace {

struct Options {
  std::string suite = "../shared/conformance/onnx-node";
  std::string filter;
  std::string allowlist;
  std::string tolerances;
  std::string report;
  std::string json;
  std::string write_allowlist;
  double rtol = 1e-3, atol = 1e-5;
  int64_t ulp = -1;
  int jobs = 2;
  int timeout_s = 60;
  bool verbose = false;
  std::string via_cli;             // path of the onyx CLI: run each case through `onyx run`
  std::string output_format = "pb";  // what `onyx run --output-format` writes in --via-cli mode
  std::string if_missing;  ///< --skip-if-missing: what the suite is and where to get it
};

struct Result {
  std::string name;
  std::string status;  // PASS FAIL ERROR UNSUPPORTED CRASH TIMEOUT
  std::string detail;
  std::string op;
  double seconds = 0;
};

struct Tol {
  double rtol, atol;
};

double to_double(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat: return t.data<float>()[i];
    case DType::kDouble: return t.data<double>()[i];
    case DType::kFloat16: return static_cast<float>(reinterpret_cast<const Float16*>(t.raw())[i]);
    case DType::kBFloat16: return static_cast<float>(reinterpret_cast<const BFloat16*>(t.raw())[i]);
    default: return 0;
  }
}

int64_t ulp_distance(double a, double b, DType dt) {
  if (dt == DType::kFloat) {
    float fa = static_cast<float>(a), fb = static_cast<float>(b);
    int32_t ia, ib;
    std::memcpy(&ia, &fa, 4);
    std::memcpy(&ib, &fb, 4);
    if (ia < 0) ia = static_cast<int32_t>(0x80000000u) - ia;
    if (ib < 0) ib = static_cast<int32_t>(0x80000000u) - ib;
    return std::llabs(static_cast<int64_t>(ia) - ib);
  }
  int64_t ia, ib;
  std::memcpy(&ia, &a, 8);
  std::memcpy(&ib, &b, 8);
  if (ia < 0) ia = INT64_MIN - ia;
  if (ib < 0) ib = INT64_MIN - ib;
  return std::llabs(ia - ib);
}

/// Empty string when equal within tolerance, else what differs.
std::string compare_tensor(const Tensor& exp, const Tensor& got, const Tol& tol, int64_t ulp) {
  if (exp.dtype() != got.dtype())
    return "dtype " + std::string(dtype_name(got.dtype())) + ", expected " + std::string(dtype_name(exp.dtype()));
  if (exp.dims() != got.dims()) return "shape " + dims_str(got.dims()) + ", expected " + dims_str(exp.dims());
  int64_t n = exp.numel();
  DType dt = exp.dtype();
  if (dt == DType::kFloat || dt == DType::kDouble || dt == DType::kFloat16 || dt == DType::kBFloat16) {
    double max_err = 0;
    int64_t worst = -1, max_ulp = 0;
    for (int64_t i = 0; i < n; ++i) {
      double e = to_double(exp, i), g = to_double(got, i);
      if (std::isnan(e) || std::isnan(g)) {
        if (std::isnan(e) != std::isnan(g)) return "NaN mismatch at element " + std::to_string(i);
        continue;
      }
      if (std::isinf(e) || std::isinf(g)) {
        if (e != g) return "inf mismatch at element " + std::to_string(i);
        continue;
      }
      double err = std::fabs(e - g);
      if (ulp >= 0 && (dt == DType::kFloat || dt == DType::kDouble)) {
        int64_t u = ulp_distance(e, g, dt);
        if (u > max_ulp) { max_ulp = u; worst = i; }
        continue;
      }
      if (err > tol.atol + tol.rtol * std::fabs(e) && err - (tol.atol + tol.rtol * std::fabs(e)) > max_err) {
        max_err = err;
        worst = i;
      }
    }
    if (ulp >= 0 && max_ulp > ulp) {
      std::ostringstream s;
      s << "max ulp distance " << max_ulp << " at element " << worst;
      return s.str();
    }
    if (worst >= 0 && ulp < 0) {
      std::ostringstream s;
      s.precision(6);
      s << "max abs error " << max_err << " at element " << worst << " (got " << to_double(got, worst)
        << ", expected " << to_double(exp, worst) << ")";
      return s.str();
    }
    return "";
  }
  if (dt == DType::kString) {
    for (int64_t i = 0; i < n; ++i)
      if (exp.data<std::string>()[i] != got.data<std::string>()[i])
        return "string mismatch at element " + std::to_string(i) + ": got '" + got.data<std::string>()[i] +
               "', expected '" + exp.data<std::string>()[i] + "'";
    return "";
  }
  size_t es = dtype_size(dt);
  if (dt == DType::kComplex64 || dt == DType::kComplex128) {
    for (int64_t i = 0; i < n * 2; ++i) {
      double e = dt == DType::kComplex64 ? exp.data<float>()[i] : exp.data<double>()[i];
      double g = dt == DType::kComplex64 ? got.data<float>()[i] : got.data<double>()[i];
      if (std::fabs(e - g) > tol.atol + tol.rtol * std::fabs(e))
        return "complex mismatch at element " + std::to_string(i / 2);
    }
    return "";
  }
  const auto* a = static_cast<const unsigned char*>(exp.raw());
  const auto* b = static_cast<const unsigned char*>(got.raw());
  for (int64_t i = 0; i < n; ++i)
    if (std::memcmp(a + i * es, b + i * es, es) != 0) {
      int64_t ev = 0, gv = 0;
      std::memcpy(&ev, a + i * es, std::min<size_t>(es, 8));
      std::memcpy(&gv, b + i * es, std::min<size_t>(es, 8));
      return "mismatch at element " + std::to_string(i) + " (got raw " + std::to_string(gv) +
             ", expected raw " + std::to_string(ev) + ")";
    }
  return "";
}

std::string compare_value(const Value& exp, const Value& got, const Tol& tol, int64_t ulp) {
  if (exp.kind() != got.kind()) {
    auto k = [](const Value& v) { return v.is_tensor() ? "tensor" : v.is_sequence() ? "sequence" : "empty optional"; };
    return std::string("got ") + k(got) + ", expected " + k(exp);
  }
  if (exp.is_tensor()) return compare_tensor(exp.tensor(), got.tensor(), tol, ulp);
  if (exp.is_sequence()) {
    if (exp.seq().size() != got.seq().size())
      return "sequence length " + std::to_string(got.seq().size()) + ", expected " + std::to_string(exp.seq().size());
    for (size_t i = 0; i < exp.seq().size(); ++i) {
      std::string d = compare_tensor(exp.seq()[i], got.seq()[i], tol, ulp);
      if (!d.empty()) return "sequence item " + std::to_string(i) + ": " + d;
    }
  }
  return "";
}

/// ONNX <= 1.12 test data stored bfloat16 tensors as uint16 (numpy has no bfloat16):
/// where the model declares bfloat16 and the file holds uint16 of the same shape, the
/// bits are the bfloat16 values, so they are read as such.
Value legacy_bfloat16(Value v, const ir::TypeInfo& declared) {
  if (v.is_tensor() && declared.is_tensor() && declared.elem == DType::kBFloat16 &&
      v.tensor().dtype() == DType::kUint16) {
    Tensor t = v.tensor();
    return Value(Tensor::view(DType::kBFloat16, t.dims(), t.raw(), std::make_shared<Tensor>(t)));
  }
  return v;
}

/// Runs one case; returns "STATUS\tdetail".
std::string run_case(const fs::path& dir, const Tol& tol, int64_t ulp) {
  std::unique_ptr<Session> session;
  try {
    session = Session::open((dir / "model.onnx").string());
  } catch (const Error& e) {
    return std::string(e.code() == ErrorCode::kUnsupported ? "UNSUPPORTED" : "ERROR") + "\t" + e.what();
  }
  const ir::Graph& g = *session_model(*session).graph;
  std::set<std::string> inits;
  for (const auto& [n, t] : g.initializers) inits.insert(n);
  std::vector<const ir::ValueInfo*> feed_inputs;
  for (const auto& v : g.inputs)
    if (!inits.count(v.name)) feed_inputs.push_back(&v);
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "ERROR\tno test_data_set_* folder";
  for (const auto& set : sets) {
    try {
      std::vector<std::pair<std::string, Value>> feeds;
      for (size_t i = 0;; ++i) {
        fs::path p = set / ("input_" + std::to_string(i) + ".pb");
        if (!fs::exists(p)) break;
        if (i >= feed_inputs.size()) return "ERROR\tmore input files than graph inputs";
        feeds.emplace_back(feed_inputs[i]->name,
                           legacy_bfloat16(format::read_value_file(p.string(), feed_inputs[i]->type),
                                           feed_inputs[i]->type));
      }
      std::vector<Value> outs = session->run(feeds);
      for (size_t i = 0; i < g.outputs.size(); ++i) {
        fs::path p = set / ("output_" + std::to_string(i) + ".pb");
        if (!fs::exists(p)) continue;
        Value exp = legacy_bfloat16(format::read_value_file(p.string(), g.outputs[i].type), g.outputs[i].type);
        std::string d = compare_value(exp, outs[i], tol, ulp);
        if (!d.empty()) return "FAIL\toutput '" + g.outputs[i].name + "': " + d;
      }
    } catch (const Error& e) {
      return std::string(e.code() == ErrorCode::kUnsupported ? "UNSUPPORTED" : "ERROR") + "\t" + e.what();
    } catch (const std::exception& e) {
      return std::string("ERROR\tstd::exception: ") + e.what();
    }
  }
  return "PASS\t";
}

/// Runs `argv` with stdout and stderr into files; kills it after `timeout_s`. Returns
/// the exit status, -1 on a timeout, or 128 + signal.
int run_process(const std::vector<std::string>& argv, const fs::path& out, const fs::path& err, int timeout_s) {
  pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with the case process when the runner kills it
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) _exit(127);
    dup2(o, 1), dup2(e, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  auto start = std::chrono::steady_clock::now();
  for (useconds_t nap = 200;; nap = std::min<useconds_t>(nap * 2, 20000)) {
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (r < 0) return 127;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(timeout_s)) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return -1;
    }
    usleep(nap);
  }
}

std::string file_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// A folder of its own under the system temp folder, removed when it goes out of scope.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "onyx_via_cli_XXXXXX").string();
    if (mkdtemp(t.data())) path = t;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

/// True when a string of `v` ends in a NUL byte (a .npy cannot hold it).
bool ends_in_nul(const Value& v) {
  std::vector<Tensor> ts = v.is_tensor() ? std::vector<Tensor>{v.tensor()} : v.is_sequence() ? v.seq() : std::vector<Tensor>{};
  for (const Tensor& t : ts)
    if (t.dtype() == DType::kString)
      for (int64_t i = 0; i < t.numel(); ++i)
        if (!t.data<std::string>()[i].empty() && t.data<std::string>()[i].back() == '\0') return true;
  return false;
}

/// Runs one case through `onyx run` (o.via_cli) and compares the files it writes;
/// returns "STATUS\tdetail".
std::string run_case_cli(const fs::path& dir, const Tol& tol, const Options& o) {
  std::shared_ptr<ir::Model> model;
  try {
    model = format::load_model((dir / "model.onnx").string());
  } catch (const Error& e) {
    return std::string("ERROR\tloading the model: ") + e.what();
  }
  const ir::Graph& g = *model->graph;
  std::set<std::string> inits;
  for (const auto& [n, t] : g.initializers) inits.insert(n);
  std::vector<const ir::ValueInfo*> feed_inputs;
  for (const auto& v : g.inputs)
    if (!inits.count(v.name)) feed_inputs.push_back(&v);
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "ERROR\tno test_data_set_* folder";
  if (o.output_format == "npy")
    for (const auto& set : sets)
      for (size_t i = 0; i < g.outputs.size(); ++i) {
        fs::path p = set / ("output_" + std::to_string(i) + ".pb");
        if (!fs::exists(p)) continue;
        if (ends_in_nul(format::read_value_file(p.string(), g.outputs[i].type)))
          return "SKIP\tnumpy cannot hold output '" + g.outputs[i].name +
                 "' (a string ends in NUL, which numpy's NUL-padded strings drop); the pb run covers it";
      }
  for (const auto& set : sets) {
    TempDir tmp;
    if (tmp.path.empty()) return "ERROR\tcannot make a temporary folder";
    std::vector<std::string> argv = {o.via_cli, "run", (dir / "model.onnx").string()};
    for (size_t i = 0;; ++i) {
      fs::path p = set / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(p)) break;
      if (i >= feed_inputs.size()) return "ERROR\tmore input files than graph inputs";
      argv.push_back("--input");
      argv.push_back(feed_inputs[i]->name + "=" + p.string());
    }
    fs::path out_dir = tmp.path / "out";
    for (const char* a : {"--output-format", o.output_format.c_str(), "-o", out_dir.c_str(), "--json"}) argv.push_back(a);
    int rc = run_process(argv, tmp.path / "stdout", tmp.path / "stderr", std::max(1, o.timeout_s - 2));
    std::string err = file_text(tmp.path / "stderr");
    while (!err.empty() && err.back() == '\n') err.pop_back();
    if (rc == -1) return "TIMEOUT\tonyx run gave no result after " + std::to_string(o.timeout_s - 2) + " s";
    if (rc != 0) return "ERROR\tonyx run exited with status " + std::to_string(rc) + ": " + err;
    try {
      nlohmann::json j = nlohmann::json::parse(file_text(tmp.path / "stdout"));
      const auto& outs = j.at("outputs");
      if (outs.size() != g.outputs.size())
        return "ERROR\tonyx run --json lists " + std::to_string(outs.size()) + " outputs, the model has " +
               std::to_string(g.outputs.size());
      for (size_t i = 0; i < g.outputs.size(); ++i) {
        fs::path p = set / ("output_" + std::to_string(i) + ".pb");
        if (!fs::exists(p)) continue;
        const ir::ValueInfo& decl = g.outputs[i];
        if (outs[i].at("name").get<std::string>() != decl.name)
          return "ERROR\tonyx run --json names output " + std::to_string(i) + " '" + outs[i].at("name").get<std::string>() +
                 "', the model '" + decl.name + "'";
        std::string file = outs[i].at("file").get<std::string>();
        Value exp = legacy_bfloat16(format::read_value_file(p.string(), decl.type), decl.type);
        Value got = format::read_value_path(file, decl.type, "output '" + decl.name + "'");
        std::string d = compare_value(exp, got, tol, o.ulp);
        if (!d.empty()) return "FAIL\toutput '" + decl.name + "' (" + file + "): " + d;
      }
    } catch (const Error& e) {
      return std::string("ERROR\treading what onyx run wrote: ") + e.what();
    } catch (const std::exception& e) {
      return std::string("ERROR\treading what onyx run wrote: ") + e.what() + " (stderr: " + err + ")";
    }
  }
  return "PASS\t";
}

/// The op a case exercises: the top-level op types of its model (Constant aside).
std::string case_op(const fs::path& dir) {
  std::string name = dir.filename().string();
  bool expanded = name.find("_expanded") != std::string::npos;
  fs::path base = dir;
  if (expanded) base = dir.parent_path() / name.substr(0, name.find("_expanded"));
  try {
    auto m = format::load_model(((fs::exists(base / "model.onnx") ? base : dir) / "model.onnx").string());
    std::set<std::string> ops;
    for (const auto& n : m->graph->nodes)
      if (n.op_type != "Constant" || m->graph->nodes.size() == 1) ops.insert(n.op_type);
    std::string s;
    for (const auto& o : ops) s += (s.empty() ? "" : "+") + o;
    return s + (expanded ? " (expanded)" : "");
  } catch (...) {
    return "?";
  }
}

std::map<std::string, Tol> read_tolerances(const std::string& path, const Tol& def) {
  std::map<std::string, Tol> m;
  if (path.empty()) return m;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    auto h = line.find('#');
    std::string body = line.substr(0, h);
    std::istringstream s(body);
    std::string name;
    Tol t = def;
    if (!(s >> name)) continue;
    if (h == std::string::npos) {
      std::cerr << "tolerances: '" << name << "' has no reason (# ...); ignored\n";
      continue;
    }
    s >> t.rtol >> t.atol;
    m[name] = t;
  }
  return m;
}

std::set<std::string> read_list(const std::string& path) {
  std::set<std::string> s;
  if (path.empty()) return s;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    auto h = line.find('#');
    line = line.substr(0, h);
    line.erase(line.find_last_not_of(" \t\r") + 1);
    line.erase(0, line.find_first_not_of(" \t"));
    if (!line.empty()) s.insert(line);
  }
  return s;
}

/// `text` as a decimal integer in [lo, hi] (digits only); exits with status 2 otherwise.
int64_t int_arg(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
  bool ok = !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
  int64_t v = ok ? std::stoll(text) : 0;
  if (!ok || v < lo || v > hi) {
    std::cerr << flag << ": '" << text << "' is not an integer in [" << lo << ", " << hi << "]\n";
    std::exit(2);
  }
  return v;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (c == '\n') o += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o;
}

void usage() {
  std::cout << "usage: onyx_conformance [--suite DIR] [--filter REGEX] [--allowlist FILE]\n"
               "         [--tolerances FILE] [--report FILE.md] [--json FILE] [--jobs N]\n"
               "         [--ulp N] [--timeout S] [--write-allowlist FILE] [--verbose]\n"
               "         [--via-cli PATH/onyx] [--output-format pb|npy] [--skip-if-missing WHAT]\n\n"
               "Runs every case of an ONNX node test suite folder and compares the outputs\n"
               "(rtol 1e-3, atol 1e-5 unless a tolerances file gives a case its own, with a\n"
               "reason). --ulp N compares float outputs by ULP distance instead.\n"
               "With --allowlist, exits 1 when a listed case does not pass.\n\n"
               "--via-cli PATH/onyx [--output-format pb|npy]: runs each allowlisted case through\n"
               "`onyx run ... --output-format F --json` instead and compares the files it writes\n"
               "(read back with format::read_value_path) with the expected outputs, by the same\n"
               "comparison and tolerances.\n"
               "--skip-if-missing WHAT: a missing suite folder is reported (WHAT says which suite\n"
               "and where to get it) and the runner exits 77 (ctest's skip), except where the\n"
               "environment has CI=true: there it exits 1.\n";
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--suite") o.suite = next();
    else if (a == "--filter") o.filter = next();
    else if (a == "--allowlist") o.allowlist = next();
    else if (a == "--tolerances") o.tolerances = next();
    else if (a == "--report") o.report = next();
    else if (a == "--json") o.json = next();
    else if (a == "--write-allowlist") o.write_allowlist = next();
    else if (a == "--jobs") o.jobs = static_cast<int>(int_arg(a, next(), 1, 1024));
    else if (a == "--ulp") o.ulp = int_arg(a, next(), 0, INT64_MAX);
    else if (a == "--timeout") o.timeout_s = static_cast<int>(int_arg(a, next(), 3, 86400));
    else if (a == "--via-cli") o.via_cli = next();
    else if (a == "--output-format") o.output_format = next();
    else if (a == "--verbose" || a == "-v") o.verbose = true;
    else if (a == "--skip-if-missing") o.if_missing = next();
    else if (a == "--help" || a == "-h") { usage(); return 0; }
    else { std::cerr << "unknown option " << a << "\n"; usage(); return 2; }
  }
  if (o.output_format != "pb" && o.output_format != "npy") {
    std::cerr << "--output-format must be pb or npy, got '" << o.output_format << "'\n";
    return 2;
  }
  if (!o.via_cli.empty()) {
    std::error_code ec;
    o.via_cli = fs::absolute(o.via_cli, ec).string();
    if (access(o.via_cli.c_str(), X_OK) != 0) {
      std::cerr << "--via-cli '" << o.via_cli << "' is not an executable\n";
      return 2;
    }
  }
  if (!fs::is_directory(o.suite)) {
    if (o.if_missing.empty()) {
      std::cerr << "suite folder '" << o.suite << "' not found\n";
      return 2;
    }
    const char* ci = std::getenv("CI");
    bool in_ci = ci && std::string(ci) == "true";
    std::cout << (in_ci ? "FAIL" : "SKIP") << ": suite folder '" << o.suite << "' not found: "
              << o.if_missing << (in_ci ? " (CI=true: the suite must be present in CI)" : "") << "\n";
    return in_ci ? 1 : 77;
  }
  if (o.tolerances.empty() && !o.allowlist.empty()) {
    fs::path t = fs::path(o.allowlist).parent_path() / "tolerances.txt";
    if (fs::exists(t)) o.tolerances = t.string();
  }
  Tol def{o.rtol, o.atol};
  auto tols = read_tolerances(o.tolerances, def);
  std::regex re(o.filter.empty() ? ".*" : o.filter);
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(o.suite))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx") &&
        std::regex_search(e.path().filename().string(), re))
      cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  auto allow = read_list(o.allowlist);
  if (!o.via_cli.empty() && !allow.empty()) {
    // Through the CLI, the cases the native runner passes (the allowlist); the others keep
    // the reasons tests/conformance/EXCLUDED.md gives.
    std::vector<fs::path> listed;
    for (const auto& c : cases)
      if (allow.count(c.filename().string())) listed.push_back(c);
    cases = std::move(listed);
  }

  std::vector<Result> results(cases.size());
  struct Child { pid_t pid; int fd; size_t idx; std::string buf; std::chrono::steady_clock::time_point start; };
  std::vector<Child> running;
  size_t next_case = 0, done = 0;
  auto t0 = std::chrono::steady_clock::now();
  auto finish = [&](Child& c, const std::string& status_line) {
    Result& r = results[c.idx];
    r.name = cases[c.idx].filename().string();
    auto tab = status_line.find('\t');
    r.status = status_line.substr(0, tab);
    r.detail = tab == std::string::npos ? "" : status_line.substr(tab + 1);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count();
    ++done;
    if (o.verbose || r.status != "PASS")
      std::cout << r.status << " " << r.name << (r.detail.empty() ? "" : ": " + r.detail.substr(0, 400)) << "\n";
  };
  while (done < cases.size()) {
    while (running.size() < static_cast<size_t>(o.jobs) && next_case < cases.size()) {
      int fds[2];
      if (pipe(fds) != 0) { perror("pipe"); return 2; }
      size_t idx = next_case++;
      std::string nm = cases[idx].filename().string();
      Tol tol = tols.count(nm) ? tols[nm] : def;
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        std::string r = o.via_cli.empty() ? run_case(cases[idx], tol, o.ulp) : run_case_cli(cases[idx], tol, o);
        r += "\n";
        (void)!write(fds[1], r.data(), r.size());
        close(fds[1]);
        _exit(0);
      }
      close(fds[1]);
      running.push_back({pid, fds[0], idx, "", std::chrono::steady_clock::now()});
    }
    std::vector<pollfd> pfds;
    for (auto& c : running) pfds.push_back({c.fd, POLLIN, 0});
    poll(pfds.data(), pfds.size(), 200);
    for (size_t k = 0; k < running.size();) {
      Child& c = running[k];
      bool closed = false;
      if (pfds.size() > k && (pfds[k].revents & (POLLIN | POLLHUP))) {
        char buf[4096];
        ssize_t n = read(c.fd, buf, sizeof buf);
        if (n > 0) c.buf.append(buf, static_cast<size_t>(n));
        else closed = true;
      }
      double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count();
      if (!closed && el > o.timeout_s) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, nullptr, 0);
        close(c.fd);
        finish(c, "TIMEOUT\tno result after " + std::to_string(o.timeout_s) + " s");
        running.erase(running.begin() + static_cast<long>(k));
        pfds.erase(pfds.begin() + static_cast<long>(k));
        continue;
      }
      if (closed) {
        int st = 0;
        waitpid(c.pid, &st, 0);
        close(c.fd);
        std::string line = c.buf;
        if (!line.empty() && line.back() == '\n') line.pop_back();
        if (line.empty())
          line = WIFSIGNALED(st) ? "CRASH\tkilled by signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")"
                                 : "CRASH\tno result";
        finish(c, line);
        running.erase(running.begin() + static_cast<long>(k));
        pfds.erase(pfds.begin() + static_cast<long>(k));
        continue;
      }
      ++k;
    }
  }
  double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  for (size_t i = 0; i < cases.size(); ++i) results[i].op = case_op(cases[i]);
  std::map<std::string, int> counts;
  std::map<std::string, std::pair<int, int>> per_op;
  for (const auto& r : results) {
    counts[r.status]++;
    auto& p = per_op[r.op];
    p.second++;
    if (r.status == "PASS") p.first++;
  }

  std::vector<std::string> regressions;
  std::set<std::string> present;
  for (const auto& r : results) present.insert(r.name);
  for (const auto& r : results)
    if (allow.count(r.name) && r.status != "PASS" && r.status != "SKIP") regressions.push_back(r.name + " (" + r.status + ": " + r.detail.substr(0, 200) + ")");
  if (o.filter.empty())
    for (const auto& a : allow)
      if (!present.count(a)) regressions.push_back(a + " (listed but not found in the suite)");

  if (!o.report.empty()) {
    std::ofstream f(o.report);
    f << "# Conformance report\n\n";
    f << "Suite: `" << fs::path(o.suite).filename().string() << "` (" << cases.size() << " cases";
    if (!o.filter.empty()) f << ", filter `" << o.filter << "`";
    f << "). Tolerance rtol " << o.rtol << ", atol " << o.atol
      << " unless `tests/conformance/tolerances.txt` says otherwise for a case.\n\n";
    f << "| status | cases |\n|---|---|\n";
    for (const auto& [k, v] : counts) f << "| " << k << " | " << v << " |\n";
    f << "\n## Per op (passed/total)\n\n| op | passed | total |\n|---|---|---|\n";
    for (const auto& [op, p] : per_op) f << "| " << op << " | " << p.first << " | " << p.second << " |\n";
    f << "\n## Per case\n\n| case | status | detail |\n|---|---|---|\n";
    for (const auto& r : results) {
      std::string d = r.detail.substr(0, 300);
      std::replace(d.begin(), d.end(), '|', '/');
      std::replace(d.begin(), d.end(), '\n', ' ');
      f << "| " << r.name << " | " << r.status << " | " << d << " |\n";
    }
  }
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    f << "{\n  \"suite\": \"" << json_escape(o.suite) << "\",\n  \"total\": " << cases.size() << ",\n";
    f << "  \"counts\": {";
    bool first = true;
    for (const auto& [k, v] : counts) { f << (first ? "" : ", ") << "\"" << k << "\": " << v; first = false; }
    f << "},\n  \"seconds\": " << total_s << ",\n  \"regressions\": " << regressions.size() << ",\n  \"cases\": [\n";
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      f << "    {\"name\": \"" << r.name << "\", \"op\": \"" << json_escape(r.op) << "\", \"status\": \"" << r.status
        << "\", \"detail\": \"" << json_escape(r.detail.substr(0, 300)) << "\"}" << (i + 1 < results.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
  }
  if (!o.write_allowlist.empty()) {
    std::set<std::string> all = allow;
    for (const auto& r : results)
      if (r.status == "PASS") all.insert(r.name);
    std::ofstream f(o.write_allowlist);
    f << "# Cases that must pass (tests/conformance/runner.cc checks them in CI). This list only grows.\n";
    for (const auto& n : all) f << n << "\n";
  }

  std::cout << "\nper op (passed/total):";
  int col = 0;
  for (const auto& [op, p] : per_op) {
    std::cout << (col++ % 4 == 0 ? "\n  " : "   ") << op << " " << p.first << "/" << p.second;
  }
  std::cout << "\n\n";
  for (const auto& [k, v] : counts) std::cout << k << ": " << v << "  ";
  std::cout << "(" << cases.size() << " cases in " << static_cast<int>(total_s) << " s)\n";
  if (!allow.empty()) {
    std::cout << "allowlist: " << allow.size() << " cases, " << regressions.size() << " not passing\n";
    for (const auto& r : regressions) std::cout << "  REGRESSION " << r << "\n";
  }
  std::cout << "conformance: " << counts["PASS"] << " of " << cases.size() << " cases pass\n";
  if (!allow.empty()) {
    int passed = 0, skipped = 0;
    for (const auto& r : results) {
      passed += allow.count(r.name) && r.status == "PASS";
      skipped += allow.count(r.name) && r.status == "SKIP";
    }
    std::cout << "allowlisted cases: " << passed << " passed, " << regressions.size() << " failed";
    if (skipped) std::cout << ", " << skipped << " skipped (the form cannot hold their outputs; listed above)";
    std::cout << "\n";
  }
  return regressions.empty() ? 0 : 1;
}
