#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>

#include "onyx/error.h"
#include "tools/onyx/commands.h"

namespace onyx::cli {
void print_error(const std::string& msg) { std::cerr << "onyx: error: " << msg << "\n"; }

/// `onyx --help` lists each command with the first sentence of its description; the whole
/// text stays in `onyx COMMAND --help`.
class BriefFormatter : public CLI::Formatter {
 public:
  std::string make_subcommand(const CLI::App* sub) const override {
    std::string d = sub->get_description();
    d = d.substr(0, d.find("\n\n"));  // the first paragraph, its lines joined
    std::replace(d.begin(), d.end(), '\n', ' ');
    if (size_t dot = d.find(". "); dot != std::string::npos) d = d.substr(0, dot + 1);
    if (d.size() > 110) {  // a long sentence: up to its first colon or parenthesis
      size_t cut = std::min(d.find(": "), d.find(" ("));
      if (cut != std::string::npos) d = d.substr(0, cut) + ".";
    }
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true), d, column_width_);
    return out.str();
  }
};
}  // namespace onyx::cli

int main(int argc, char** argv) {
  using namespace onyx::cli;
  CLI::App app{
      "onyx: run, inspect and check ONNX models.\n"
      "Run 'onyx COMMAND --help' for the options of a command."};
  app.require_subcommand(1);
  app.formatter(std::make_shared<BriefFormatter>());
  app.set_version_flag("--version", "onyx 0.1.0");
  std::map<CLI::App*, Action> actions;
  auto add = [&](Action (*f)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    Action a = f(app);
    actions[app.get_subcommands({})[before]] = a;
  };
  add(add_run);
  add(add_inspect);
  add(add_check);
  add(add_graph);
  add(add_parity);
  add(add_card);
  add(add_ocr);
  add(add_bench);
  add(add_optimize);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // 2: usage error, for every command
  }
  for (auto& [sub, action] : actions) {
    if (!sub->parsed()) continue;
    try {
      return action();
    } catch (const onyx::Error& e) {
      print_error(e.what());
      return 1;
    } catch (const std::exception& e) {
      print_error(e.what());
      return 1;
    }
  }
  return 1;
}
