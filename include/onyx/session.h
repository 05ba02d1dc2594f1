// Session: load a model once, run it many times.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onyx/error.h"
#include "onyx/tensor.h"

namespace onyx {

namespace ir {
struct Model;
}

/// A graph input or output as declared by the model.
struct IoInfo {
  std::string name;
  std::string type;                  ///< "float[N, 3, 224, 224]"
  DType dtype = DType::kUndefined;   ///< element type (tensors) or element of a sequence
  bool is_tensor = true;
  bool has_shape = false;
  std::vector<int64_t> dims;         ///< -1 where symbolic or unknown
  std::vector<std::string> dim_names;  ///< symbol name where symbolic, else ""
  bool has_default = false;          ///< an initializer gives a default value
};

struct SessionOptions {
  int threads = 1;
};

class Session {
 public:
  /// Loads, checks and plans a model file. Throws onyx::Error naming the fault.
  static std::unique_ptr<Session> open(const std::string& path, const SessionOptions& opts = {});
  /// Plans an already loaded model.
  static std::unique_ptr<Session> create(std::shared_ptr<ir::Model> model,
                                         const SessionOptions& opts = {});
  ~Session();

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  const ir::Model& model() const;

  /// Runs the model. `feeds` names every required input; returns the outputs in the
  /// order of outputs(). Throws onyx::Error on a missing/unknown input, a wrong dtype,
  /// rank or fixed dim (naming the input and both shapes), or a failing node.
  std::vector<Value> run(const std::vector<std::pair<std::string, Value>>& feeds);

  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
