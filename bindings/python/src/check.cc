// onyx.check_model: `onyx check --strict` from Python, over the public check API
// (include/onyx/check.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "module.h"
#include "onyx/check.h"

namespace py = pybind11;

namespace onyx::python {

namespace {

std::string place(const std::string& where, const std::string& msg) { return where.empty() ? msg : "in " + where + ": " + msg; }

std::string node_label(const CheckUnsupported& u) {
  std::string s = u.domain.empty() ? u.op_type : u.domain + "." + u.op_type;
  if (!u.node.empty()) s += " '" + u.node + "'";
  return s + " (opset " + std::to_string(u.opset) + ")";
}

/// The lines `onyx check` prints for the problems and unsupported nodes of `r`.
std::vector<std::string> report_lines(const CheckReport& r) {
  std::vector<std::string> lines;
  for (const CheckProblem& p : r.problems)
    if (p.is_error) lines.push_back("error: " + place(p.where, p.message));
  for (const CheckProblem& p : r.problems)
    if (!p.is_error) lines.push_back("warning: " + place(p.where, p.message));
  for (const CheckUnsupported& u : r.unsupported) {
    std::string ins;
    for (const std::string& t : u.input_types) ins += (ins.empty() ? "" : ", ") + t;
    lines.push_back(u.provider + " cannot run " + place(u.where, node_label(u)) + " [" + ins + "]: " + u.reason);
  }
  return lines;
}

}  // namespace

void bind_check(py::module_& m) {
  py::class_<CheckProblem>(m, "CheckProblem", "One problem `onyx check` found: an error, or a warning it could not verify.")
      .def_property_readonly("severity", [](const CheckProblem& p) { return p.is_error ? "error" : "warning"; })
      .def_readonly("where", &CheckProblem::where, "'' for the main graph, else the subgraph or function path")
      .def_readonly("node", &CheckProblem::node)
      .def_readonly("op_type", &CheckProblem::op_type)
      .def_readonly("domain", &CheckProblem::domain)
      .def_readonly("opset", &CheckProblem::opset)
      .def_readonly("message", &CheckProblem::message)
      .def("__repr__", [](const CheckProblem& p) {
        return std::string("<onyx.CheckProblem ") + (p.is_error ? "error" : "warning") + ": " + place(p.where, p.message) + ">";
      });
  py::class_<CheckUnsupported>(m, "CheckUnsupported", "A node a provider has no kernel for.")
      .def_readonly("provider", &CheckUnsupported::provider)
      .def_readonly("where", &CheckUnsupported::where)
      .def_readonly("node", &CheckUnsupported::node)
      .def_readonly("op_type", &CheckUnsupported::op_type)
      .def_readonly("domain", &CheckUnsupported::domain)
      .def_readonly("opset", &CheckUnsupported::opset)
      .def_readonly("input_types", &CheckUnsupported::input_types)
      .def_readonly("reason", &CheckUnsupported::reason)
      .def("__repr__", [](const CheckUnsupported& u) {
        return "<onyx.CheckUnsupported " + u.provider + ": " + place(u.where, node_label(u)) + ": " + u.reason + ">";
      });
  py::class_<CheckReport>(m, "CheckReport", "What onyx.check_model found (`onyx check --json` as an object).")
      .def_readonly("problems", &CheckReport::problems)
      .def_readonly("unsupported", &CheckReport::unsupported)
      .def_readonly("providers", &CheckReport::providers)
      .def_readonly("nodes", &CheckReport::nodes)
      .def_property_readonly("errors", &CheckReport::errors)
      .def_property_readonly("warnings", &CheckReport::warnings)
      .def_property_readonly("valid", &CheckReport::valid, "no error: `onyx check` exits 0")
      .def_property_readonly("strict_ok", &CheckReport::strict_ok,
                             "valid and every node supported: `onyx check --strict` exits 0")
      .def_property_readonly("lines", &report_lines, "the problems and unsupported nodes as `onyx check` prints them")
      .def("__repr__", [](const CheckReport& r) {
        return "<onyx.CheckReport " + std::to_string(r.nodes) + " nodes, " + std::to_string(r.errors()) + " errors, " +
               std::to_string(r.warnings()) + " warnings, " + std::to_string(r.unsupported.size()) + " unsupported>";
      });
  m.def(
      "check_model",
      [](const std::string& path, const std::vector<std::string>& providers) {
        py::gil_scoped_release unlocked;
        return check_model_file(path, providers);
      },
      py::arg("path"), py::arg("providers") = std::vector<std::string>{"cpu"},
      R"(Validates a model file as `onyx check` does: the checks of onnx.checker and strict shape
inference (SSA form, topological order, attributes, type constraints, declared vs inferred
types), every problem reported rather than the first; then, per provider ('cpu', the native
build; 'wasm', the WebAssembly build), the nodes onyx has no kernel for.

Returns a CheckReport: .valid is `onyx check`'s verdict, .strict_ok that of
`onyx check --strict`; .lines holds the messages as the CLI prints them. Raises
onyx.InvalidGraph / onyx.NoSuchFile when the file cannot be read as a model.)");
}

}  // namespace onyx::python
