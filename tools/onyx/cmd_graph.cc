// onyx graph MODEL: a picture of the graph (Graphviz DOT, SVG, or one self-contained
// HTML page with search and a details panel).
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "base/error.h"
#include "check/validate.h"
#include "format/loader.h"
#include "tools/onyx/commands.h"
#include "tools/onyx/util.h"

extern char** environ;

namespace onyx::cli {
namespace {

struct GraphArgs {
  std::string model;
  std::string format = "svg";
  std::string output;
  bool shapes = false;
};

/// Text for an HTML-like Graphviz label (XML escaping; control characters dropped).
std::string xml(const std::string& s, size_t max = 80) {
  std::string out;
  size_t n = 0;
  for (char c : s) {
    if (++n > max) {
      out += "&#8230;";
      break;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
        else out += ' ';
    }
  }
  return out;
}

/// A DOT quoted string.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  return out + "\"";
}

/// The type with the placeholder symbols of inference ("unk__3") shown as "?".
ir::TypeInfo readable(ir::TypeInfo t) {
  for (ir::Dim& d : t.shape)
    if (d.param.rfind("unk__", 0) == 0) d = ir::Dim();
  if (t.inner) t.inner = std::make_shared<ir::TypeInfo>(readable(*t.inner));
  return t;
}

/// "float[1,3,224,224]" (compact form of TypeInfo::str()).
std::string type_short(const ir::TypeInfo* t) {
  if (!t || t->kind == ir::TypeInfo::Kind::kUnknown) return "?";
  std::string s;
  for (char c : readable(*t).str())
    if (c != ' ') s += c;
  return s;
}

std::string fill_for(const std::string& op) {
  static const std::set<std::string> conv = {"Conv", "ConvTranspose", "MatMul", "Gemm", "MatMulInteger",
                                             "QLinearConv", "QLinearMatMul", "ConvInteger", "Einsum"};
  static const std::set<std::string> act = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax",
                                            "Gelu", "Elu", "Selu", "HardSigmoid", "HardSwish", "Mish",
                                            "Softplus", "PRelu", "Clip"};
  static const std::set<std::string> norm = {"BatchNormalization", "LayerNormalization",
                                             "InstanceNormalization", "GroupNormalization",
                                             "LpNormalization", "RMSNormalization"};
  static const std::set<std::string> pool = {"MaxPool", "AveragePool", "GlobalAveragePool",
                                             "GlobalMaxPool", "LpPool", "Resize", "Upsample"};
  static const std::set<std::string> shape = {"Reshape", "Transpose", "Flatten", "Concat", "Split",
                                              "Squeeze", "Unsqueeze", "Gather", "Slice", "Shape",
                                              "Expand", "Constant", "Identity", "Cast", "Pad"};
  static const std::set<std::string> flow = {"If", "Loop", "Scan"};
  if (conv.count(op)) return "#d6e4fa";
  if (act.count(op)) return "#dcf1d8";
  if (norm.count(op)) return "#e7e0f7";
  if (pool.count(op)) return "#fbe7cf";
  if (shape.count(op)) return "#eeeeee";
  if (flow.count(op)) return "#fbd9e3";
  return "#e9f0f8";
}

std::string attr_text(const ir::Attribute& a) {
  using T = ir::Attribute::Type;
  auto list = [](const auto& v) {
    std::ostringstream o;
    o << "[";
    for (size_t k = 0; k < v.size(); ++k) {
      if (k == 16) {
        o << ", ... (" << v.size() << " values)";
        break;
      }
      o << (k ? ", " : "") << v[k];
    }
    o << "]";
    return o.str();
  };
  if (!a.ref_attr_name.empty()) return "(from function attribute '" + a.ref_attr_name + "')";
  switch (a.type) {
    case T::kFloat: return fmt::format("{}", a.f);
    case T::kInt: return std::to_string(a.i);
    case T::kString: return "\"" + a.s.substr(0, 200) + "\"";
    case T::kFloats: return list(a.floats);
    case T::kInts: return list(a.ints);
    case T::kStrings: {
      std::vector<std::string> q;
      for (const auto& s : a.strings) q.push_back("\"" + s.substr(0, 60) + "\"");
      return list(q);
    }
    case T::kTensor:
    case T::kSparseTensor:
      return fmt::format("tensor {}[{}]", dtype_name(a.t.dtype()), fmt::join(a.t.dims(), ","));
    case T::kGraph: return a.g ? fmt::format("graph '{}' ({} nodes)", a.g->name, a.g->nodes.size()) : "graph";
    case T::kGraphs: return fmt::format("{} graphs", a.graphs.size());
    case T::kTensors: return fmt::format("{} tensors", a.tensors.size());
    case T::kTypeProto: return a.tp.str();
    default: return std::string(ir::attribute_type_name(a.type));
  }
}

struct Rendered {
  std::string dot;
  nlohmann::json data;  ///< per element id: what the HTML details panel shows
};

Rendered render_dot(const ir::Model& m, const check::Report& report, bool shapes) {
  const ir::Graph& g = *m.graph;
  const auto types_it = report.types.find(&g);
  auto type_of = [&](const std::string& n) -> const ir::TypeInfo* {
    if (types_it == report.types.end()) return nullptr;
    auto it = types_it->second.find(n);
    return it == types_it->second.end() ? nullptr : &it->second;
  };
  std::map<std::string, const Tensor*> inits;
  for (const auto& [n, t] : g.initializers) inits[n] = &t;
  std::map<std::string, std::string> producer;  // value -> element id
  std::ostringstream dot;
  nlohmann::json data = nlohmann::json::object();

  dot << "digraph onyx {\n"
      << "  graph [rankdir=TB, fontname=\"Helvetica\", nodesep=0.3, ranksep=0.35, label="
      << quoted(g.name.empty() ? "graph" : g.name) << ", labelloc=t, fontsize=14];\n"
      << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=11, "
         "color=\"#6b7a90\", margin=\"0.12,0.05\"];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#6b7a90\", fontcolor=\"#44506a\", "
         "arrowsize=0.7];\n";

  size_t k = 0;
  for (const auto& vi : g.inputs) {
    std::string id = "in" + std::to_string(k++);
    if (inits.count(vi.name)) continue;  // an input with a default: drawn as an initializer
    producer[vi.name] = id;
    dot << "  " << id << " [id=" << quoted(id) << ", shape=box, style=\"rounded,filled,bold\", "
        << "fillcolor=\"#d9f2e3\", label=<<b>" << xml(vi.name) << "</b><br/><font point-size=\"9\">"
        << xml(vi.type.str()) << "</font>>, tooltip=" << quoted("graph input " + vi.name) << "];\n";
    data[id] = {{"kind", "input"}, {"name", vi.name}, {"type", vi.type.str()}};
  }

  std::map<std::string, std::vector<std::string>> node_problems;
  for (const auto& p : report.problems)
    if (p.where.empty() && !p.op_type.empty() && !p.node.empty())
      node_problems[p.op_type + "\n" + p.node].push_back(p.message);

  // Constant nodes are summarized on their users, like initializers (unless they feed a
  // graph output directly).
  std::set<std::string> graph_outputs;
  for (const auto& vo : g.outputs) graph_outputs.insert(vo.name);
  std::map<std::string, uint64_t> constants;  // output name -> bytes
  std::vector<bool> folded(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (n.op_type != "Constant" || !n.domain.empty() || !n.inputs.empty() || n.outputs.size() != 1 ||
        n.outputs[0].empty() || graph_outputs.count(n.outputs[0]))
      continue;
    uint64_t bytes = 0;
    for (const auto& a : n.attrs) {
      if (a.type == ir::Attribute::Type::kTensor || a.type == ir::Attribute::Type::kSparseTensor) bytes += a.t.nbytes();
      bytes += a.ints.size() * 8 + a.floats.size() * 4;
      if (a.type == ir::Attribute::Type::kInt) bytes += 8;
      if (a.type == ir::Attribute::Type::kFloat) bytes += 4;
    }
    constants[n.outputs[0]] = bytes;
    folded[i] = true;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    std::string id = "n" + std::to_string(i);
    for (const auto& o : n.outputs)
      if (!o.empty() && !producer.count(o) && !folded[i]) producer[o] = id;
  }

  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (folded[i]) continue;
    const ir::Node& n = g.nodes[i];
    const std::string id = "n" + std::to_string(i);
    const std::string op = n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
    size_t n_init = 0, n_const = 0;
    uint64_t init_bytes = 0;
    nlohmann::json ins = nlohmann::json::array();
    for (const auto& in : n.inputs) {
      if (in.empty()) {
        ins.push_back({{"name", ""}, {"type", "(omitted)"}});
        continue;
      }
      auto it = inits.find(in);
      if (it != inits.end()) {
        ++n_init;
        init_bytes += it->second->nbytes();
        ins.push_back({{"name", in}, {"type", type_short(type_of(in))}, {"initializer", human_bytes(it->second->nbytes())}});
      } else if (auto c = constants.find(in); c != constants.end()) {
        ++n_const;
        init_bytes += c->second;
        ins.push_back({{"name", in}, {"type", type_short(type_of(in))}, {"constant", human_bytes(c->second)}});
      } else {
        ins.push_back({{"name", in}, {"type", type_short(type_of(in))}});
      }
    }
    nlohmann::json outs = nlohmann::json::array();
    for (const auto& o : n.outputs)
      if (!o.empty()) outs.push_back({{"name", o}, {"type", type_short(type_of(o))}});
    nlohmann::json attrs = nlohmann::json::array();
    for (const auto& a : n.attrs) attrs.push_back({{"name", a.name}, {"value", attr_text(a)}});
    auto pit = node_problems.find(n.op_type + "\n" + n.name);
    const bool bad = pit != node_problems.end();

    dot << "  " << id << " [id=" << quoted(id) << ", fillcolor=\"" << fill_for(n.op_type) << "\""
        << (bad ? ", color=\"#c92a2a\", penwidth=2.5" : "") << ", label=<<b>" << xml(op) << "</b>";
    if (!n.name.empty()) dot << "<br/><font point-size=\"9\" color=\"#44506a\">" << xml(n.name, 40) << "</font>";
    if (n_init || n_const) {
      std::string what;
      if (n_init) what = std::to_string(n_init) + (n_init == 1 ? " initializer" : " initializers");
      if (n_const)
        what += (what.empty() ? "" : ", ") + std::to_string(n_const) + (n_const == 1 ? " constant" : " constants");
      dot << "<br/><font point-size=\"8\" color=\"#6b7a90\">+" << what << " (" << human_bytes(init_bytes) << ")</font>";
    }
    for (const auto& a : n.attrs)
      if (a.g)
        dot << "<br/><font point-size=\"8\" color=\"#6b7a90\">" << xml(a.name) << ": subgraph of "
            << a.g->nodes.size() << (a.g->nodes.size() == 1 ? " node" : " nodes") << "</font>";
    dot << ">, tooltip=" << quoted(n.describe()) << "];\n";

    nlohmann::json d = {{"kind", "node"}, {"name", n.name}, {"op", op}, {"opset", n.opset},
                        {"inputs", ins}, {"outputs", outs}, {"attrs", attrs}};
    if (bad) d["problems"] = pit->second;
    data[id] = d;

    std::set<std::string> drawn;
    for (const auto& in : n.inputs) {
      if (in.empty() || inits.count(in) || constants.count(in) || !drawn.insert(in).second) continue;
      auto p = producer.find(in);
      if (p == producer.end()) continue;
      dot << "  " << p->second << " -> " << id;
      if (shapes) dot << " [label=" << quoted(" " + type_short(type_of(in))) << "]";
      dot << ";\n";
    }
    std::set<std::string> captured;
    for (const auto& a : n.attrs)
      if (a.g) captured.merge(ir::free_names(*a.g));
    for (const auto& c : captured) {
      auto p = producer.find(c);
      if (p == producer.end() || drawn.count(c)) continue;
      dot << "  " << p->second << " -> " << id << " [style=dashed, tooltip="
          << quoted("'" + c + "' used inside a subgraph") << "];\n";
    }
  }

  k = 0;
  for (const auto& vo : g.outputs) {
    std::string id = "out" + std::to_string(k++);
    const ir::TypeInfo* t = type_of(vo.name);
    std::string ts = readable(t ? *t : vo.type).str();
    dot << "  " << id << " [id=" << quoted(id) << ", style=\"rounded,filled,bold\", fillcolor=\"#fde8cf\", "
        << "label=<<b>" << xml(vo.name) << "</b><br/><font point-size=\"9\">" << xml(ts)
        << "</font>>, tooltip=" << quoted("graph output " + vo.name) << "];\n";
    data[id] = {{"kind", "output"}, {"name", vo.name}, {"type", ts}};
    auto p = producer.find(vo.name);
    if (p != producer.end()) {
      dot << "  " << p->second << " -> " << id;
      if (shapes) dot << " [label=" << quoted(" " + type_short(type_of(vo.name))) << "]";
      dot << ";\n";
    }
  }
  dot << "}\n";
  return {dot.str(), data};
}

/// Runs `dot -Tsvg` on `dot_text`; returns the SVG.
std::string run_graphviz(const std::string& dot_text) {
  namespace fs = std::filesystem;
  std::string dir_tmpl = (fs::temp_directory_path() / "onyx-graph-XXXXXX").string();
  std::vector<char> buf(dir_tmpl.begin(), dir_tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) fail(ErrorCode::kIo, "cannot create a temporary folder: {}", std::strerror(errno));
  const fs::path dir(buf.data());
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  const std::string in = (dir / "graph.dot").string(), out = (dir / "graph.svg").string(),
                    err = (dir / "dot.err").string();
  {
    std::ofstream f(in, std::ios::binary);
    f << dot_text;
    if (!f) fail(ErrorCode::kIo, "cannot write {}", in);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> argv_s = {"dot", "-Tsvg", in, "-o", out};
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "dot", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    fail(ErrorCode::kIo,
         "cannot run Graphviz 'dot' ({}); install graphviz (apt-get install graphviz) or use "
         "--format dot", std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::ifstream ef(err);
  std::string err_text((std::istreambuf_iterator<char>(ef)), std::istreambuf_iterator<char>());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail(ErrorCode::kIo, "Graphviz 'dot' failed{}", err_text.empty() ? "" : ": " + err_text);
  std::ifstream sf(out, std::ios::binary);
  std::string svg((std::istreambuf_iterator<char>(sf)), std::istreambuf_iterator<char>());
  if (svg.empty()) fail(ErrorCode::kIo, "Graphviz 'dot' wrote no SVG");
  return svg;
}

const char* kHtmlHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>%TITLE%</title>
<style>
*{box-sizing:border-box}
body{margin:0;font:13px/1.4 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1d2433;height:100vh;display:flex;flex-direction:column}
header{display:flex;gap:10px;align-items:center;padding:8px 12px;border-bottom:1px solid #d5dbe5;background:#f6f8fb}
header h1{font-size:15px;margin:0 12px 0 0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;max-width:30vw}
#q{flex:0 1 320px;padding:5px 8px;border:1px solid #b8c2d3;border-radius:4px;font:inherit}
#count{color:#5b6478;min-width:80px}
button{font:inherit;padding:4px 9px;border:1px solid #b8c2d3;background:#fff;border-radius:4px;cursor:pointer}
main{flex:1;display:flex;min-height:0}
#view{flex:1;overflow:auto;background:#fff}
#view svg{display:block;margin:0 auto}
aside{width:360px;border-left:1px solid #d5dbe5;overflow:auto;padding:10px 14px;background:#fbfcfe}
aside h2{font-size:14px;margin:4px 0 8px}
aside h3{font-size:12px;text-transform:uppercase;color:#5b6478;margin:14px 0 4px}
aside table{border-collapse:collapse;width:100%}
aside td{padding:2px 4px;vertical-align:top;border-bottom:1px solid #eceff4;word-break:break-all}
aside td:first-child{color:#44506a;white-space:nowrap;word-break:normal}
#results{margin:0 0 8px;padding:0;list-style:none;max-height:35vh;overflow:auto}
#results li{padding:3px 4px;cursor:pointer;border-bottom:1px solid #eceff4}
#results li:hover{background:#eef3fb}
#results li.cur{background:#dbe8fb;font-weight:600}
.muted{color:#7a8499}
.io{padding:3px 4px;border-bottom:1px solid #eceff4}
.io .nm{word-break:break-all}
.io .ty{color:#44506a;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.bad{color:#c92a2a}
g.node{cursor:pointer}
g.node.hit polygon,g.node.hit path,g.node.hit ellipse{stroke:#e8590c;stroke-width:3px}
g.node.sel polygon,g.node.sel path,g.node.sel ellipse{stroke:#1c7ed6;stroke-width:4px}
</style></head><body>
<header><h1>%TITLE%</h1>
<input id="q" type="search" placeholder="Find nodes by name or op type" autocomplete="off">
<span id="count"></span>
<button id="zin" title="zoom in">+</button><button id="zout" title="zoom out">&minus;</button><button id="zfit" title="fit to width">fit</button>
</header>
<main><div id="view">
)HTML";

const char* kHtmlTail = R"HTML(</div>
<aside id="side"><h2>Details</h2><p class="muted" id="hint">Click a node, or search by name or op type.</p>
<h3 id="rh" hidden>Matches</h3><ul id="results"></ul><div id="details"></div></aside></main>
<script>
// onyx-find begin: ids of the entries of DATA whose name or op type contains the text
// (case-insensitive): inputs, then nodes in graph order, then outputs (the JSON keys come
// sorted as strings, n10 before n9). Pure, so tests/check/graph_test.py runs it under Node.
function onyxFind(data,text){
  var s=String(text).trim().toLowerCase(),hits=[];
  if(!s)return hits;
  Object.keys(data).forEach(function(id){var d=data[id];
    if((d.name||'').toLowerCase().indexOf(s)>=0||(d.op||'').toLowerCase().indexOf(s)>=0)hits.push(id);});
  function rank(id){var m=/^(in|n|out)([0-9]+)$/.exec(id);return m?[{'in':0,n:1,out:2}[m[1]],+m[2]]:[3,0];}
  return hits.sort(function(a,b){var x=rank(a),y=rank(b);return x[0]-y[0]||x[1]-y[1]||(a<b?-1:a>b?1:0);});
}
// onyx-find end
(function(){
var DATA=JSON.parse(document.getElementById('onyx-data').textContent);
var view=document.getElementById('view'),svg=view.querySelector('svg');
var q=document.getElementById('q'),count=document.getElementById('count');
var results=document.getElementById('results'),rh=document.getElementById('rh'),details=document.getElementById('details');
var vb=svg.viewBox.baseVal,scale=1,hits=[],cur=-1;
// Scale 1 is the size Graphviz drew (1 pt = 4/3 CSS px): 9 pt node names read as 12 px.
var PX=4/3;
svg.removeAttribute('width');svg.removeAttribute('height');
function zoom(s){
  var v=view.getBoundingClientRect(),r=svg.getBoundingClientRect();
  var fx=r.width?(v.left+v.width/2-r.left)/r.width:0.5,fy=r.height?(v.top+v.height/2-r.top)/r.height:0;
  scale=Math.max(0.05,Math.min(8,s));
  svg.style.width=(vb.width*PX*scale)+'px';svg.style.height=(vb.height*PX*scale)+'px';
  r=svg.getBoundingClientRect();  // keep the point at the centre of the view in place
  view.scrollLeft+=r.left+fx*r.width-(v.left+v.width/2);view.scrollTop+=r.top+fy*r.height-(v.top+v.height/2);
}
function fitScale(){return (view.clientWidth-20)/(vb.width*PX);}
function fit(){zoom(Math.min(1.1,fitScale()));}
// A graph wider than the view starts at full size (not shrunk to unreadable text), at its first input.
function start(){
  var f=fitScale();zoom(f<0.75?1:Math.min(1.1,f));
  var g=svg.querySelector('g.node[id^="in"]')||svg.querySelector('g.node');if(!g)return;
  var r=g.getBoundingClientRect(),v=view.getBoundingClientRect();
  view.scrollLeft+=r.left-v.left-(v.width-r.width)/2;
  if(r.bottom>v.bottom)view.scrollTop+=r.top-v.top-12;  // inputs are normally at the top: keep the title
}
document.getElementById('zin').onclick=function(){zoom(scale*1.25);};
document.getElementById('zout').onclick=function(){zoom(scale/1.25);};
document.getElementById('zfit').onclick=fit;
function el(tag,text,cls){var e=document.createElement(tag);if(text!=null)e.textContent=text;if(cls)e.className=cls;return e;}
function row(t,a,b){var tr=el('tr');tr.appendChild(el('td',a));tr.appendChild(el('td',b));t.appendChild(tr);}
function io(i,name,type){var e=el('div',null,'io');e.appendChild(el('div',i+': '+name,'nm'));e.appendChild(el('div',type,'ty'));details.appendChild(e);}
function label(d){return d.kind==='node'?d.op+(d.name?" '"+d.name+"'":''):(d.kind==='input'?'input ':'output ')+d.name;}
function show(id){
  var d=DATA[id];if(!d)return;
  document.querySelectorAll('g.node.sel').forEach(function(g){g.classList.remove('sel');});
  var g=document.getElementById(id);if(g)g.classList.add('sel');
  results.querySelectorAll('li').forEach(function(li){li.classList.toggle('cur',li.dataset.id===id);
    if(li.dataset.id===id)li.scrollIntoView({block:'nearest'});});
  document.getElementById('hint').hidden=true;details.innerHTML='';details.appendChild(el('h2',label(d)));
  var t=el('table');
  if(d.kind==='node'){
    row(t,'op type',d.op);row(t,'opset',String(d.opset));row(t,'name',d.name||'(none)');details.appendChild(t);
    if(d.problems){details.appendChild(el('h3','Problems'));d.problems.forEach(function(p){details.appendChild(el('p',p,'bad'));});}
    details.appendChild(el('h3','Inputs'));
    d.inputs.forEach(function(x,i){io(i,x.name||'(omitted)',x.type+(x.initializer?'  initializer, '+x.initializer:'')+(x.constant?'  Constant node, '+x.constant:''));});
    details.appendChild(el('h3','Outputs'));
    d.outputs.forEach(function(x,i){io(i,x.name,x.type);});
    details.appendChild(el('h3','Attributes'));
    if(!d.attrs.length)details.appendChild(el('p','(none)','muted'));
    else{t=el('table');d.attrs.forEach(function(a){row(t,a.name,a.value);});details.appendChild(t);}
  }else{row(t,'name',d.name);row(t,'type',d.type);details.appendChild(t);}
}
function reveal(id){
  var g=document.getElementById(id);if(!g)return;
  var r=g.getBoundingClientRect(),v=view.getBoundingClientRect();
  view.scrollLeft+=r.left-v.left-(v.width-r.width)/2;view.scrollTop+=r.top-v.top-(v.height-r.height)/2;
}
function search(){
  document.querySelectorAll('g.node.hit').forEach(function(g){g.classList.remove('hit');});
  hits=onyxFind(DATA,q.value);cur=-1;results.innerHTML='';
  if(!q.value.trim()){count.textContent='';rh.hidden=true;return;}
  hits.forEach(function(id){var g=document.getElementById(id);if(g)g.classList.add('hit');});
  count.textContent=hits.length+' match'+(hits.length===1?'':'es');rh.hidden=!hits.length;
  hits.slice(0,200).forEach(function(id){var li=el('li',label(DATA[id]));li.dataset.id=id;li.onclick=function(){show(id);reveal(id);};results.appendChild(li);});
}
q.addEventListener('input',search);
q.addEventListener('keydown',function(e){if(e.key==='Enter'&&hits.length){cur=(cur+1)%hits.length;show(hits[cur]);reveal(hits[cur]);}});
svg.addEventListener('click',function(e){var g=e.target.closest('g.node');if(g&&DATA[g.id])show(g.id);});
start();
if(location.hash.length>1){q.value=decodeURIComponent(location.hash.slice(1));search();if(hits.length){cur=0;show(hits[0]);reveal(hits[0]);}}
})();
</script></body></html>
)HTML";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

std::string html_page(const std::string& title, const std::string& svg, const nlohmann::json& data) {
  std::string body = svg;
  size_t start = body.find("<svg");
  if (start != std::string::npos) body = body.substr(start);  // drop the XML prolog and DOCTYPE
  std::string json = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  json = replace_all(json, "</", "<\\/");
  std::string t;
  for (char c : title) t += c == '<' ? std::string("&lt;") : c == '&' ? std::string("&amp;") : std::string(1, c);
  std::string head = replace_all(kHtmlHead, "%TITLE%", t);
  return head + body + "\n<script type=\"application/json\" id=\"onyx-data\">" + json + "</script>\n" + kHtmlTail;
}

int run_graph(const GraphArgs& a) {
  auto model = format::load_model(a.model);
  check::Options opts;
  opts.providers = {};
  const check::Report report = check::check_model(*model, opts);
  Rendered r = render_dot(*model, report, a.shapes);
  std::string out;
  if (a.format == "dot") {
    out = r.dot;
  } else {
    std::string svg = run_graphviz(r.dot);
    out = a.format == "svg" ? svg
                            : html_page(std::filesystem::path(a.model).filename().string(), svg, r.data);
  }
  std::string path = a.output;
  if (path.empty() && a.format != "dot" && isatty(1))  // not into a terminal: next to where we are
    path = std::filesystem::path(a.model).stem().string() + "." + a.format;
  if (path.empty() || path == "-") {
    std::cout << out;
    return 0;
  }
  std::ofstream f(path, std::ios::binary);
  f << out;
  f.close();
  if (!f) fail(ErrorCode::kIo, "cannot write '{}'", path);
  std::cerr << "onyx graph: wrote " << path << " (" << model->graph->nodes.size() << " nodes, "
            << a.format << ")\n";
  if (report.errors())
    std::cerr << "onyx graph: the model has " << report.errors()
              << " problem(s), outlined in red; run 'onyx check " << a.model << "' for details\n";
  return 0;
}

}  // namespace

Action add_graph(CLI::App& app) {
  auto args = std::make_shared<GraphArgs>();
  auto* sub = app.add_subcommand(
      "graph",
      "Draw a model's main graph: inputs and outputs with their shapes, one box per node (op type, "
      "name, and a count/size of the initializers and Constant nodes it reads), edges for the values between them "
      "(dashed: a value used inside the node's subgraph). Nodes that 'onyx check' finds invalid "
      "are outlined in red.\n"
      "Formats: dot (Graphviz source), svg (rendered by Graphviz 'dot', which must be installed), "
      "html (one self-contained page: the SVG, a search box that finds nodes by name or op type, "
      "and a details panel with attributes, dtypes and shapes; no external assets; open it as "
      "FILE.html#TEXT to start with a search for TEXT).");
  sub->add_option("model", args->model, "the .onnx file")->required();
  sub->add_option("--format", args->format, "dot, svg or html")
      ->check(CLI::IsMember({"dot", "svg", "html"}))
      ->capture_default_str();
  sub->add_flag("--shapes", args->shapes, "label edges with inferred dtypes and shapes");
  sub->add_option("-o,--output", args->output,
                  "write here ('-': standard output); default: standard output, or MODEL.svg / "
                  "MODEL.html in the current folder when standard output is a terminal");
  return [args] { return run_graph(*args); };
}

}  // namespace onyx::cli
