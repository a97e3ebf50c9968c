// fx::to_dot (transforms/to_dot.h). Node ids are <program>_<kind><index>: p0 is the program given,
// p1, p2, ... its sub-programs in the order they are met; i<k> an input, c<k> a constant, e<k> an
// equation, l<k>_<j> equation k's literal operand j, o<k> an output, anchor the cluster's handle.
#include "transforms/to_dot.h"

#include <sstream>
#include <variant>

#include "ir/dtype.h"

namespace fluxion {
namespace {

/// Text for a double-quoted dot string: quotes and backslashes escaped, newlines as \n. (Not named
/// `quoted`: an unqualified call with a std::string argument would find std::quoted by ADL.)
std::string dot_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + '"';
}

/// A parameter's value as the text form prints it, cut short when long (a label, not a record).
std::string param_text(const ParamValue& v) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) os << (x ? "True" : "False");
        else if constexpr (std::is_same_v<T, int64_t>) os << x;
        else if constexpr (std::is_same_v<T, double>) os << Literal::of_double(x, DType::float64).value_str();
        else if constexpr (std::is_same_v<T, IntList>) {
          os << '(';
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
          os << (x.size() == 1 ? ",)" : ")");
        } else if constexpr (std::is_same_v<T, DType>) os << dtype_name(x);
        else if constexpr (std::is_same_v<T, std::string>) os << x;
      },
      v);
  std::string s = os.str();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

bool is_program(const ParamValue& v) {
  return std::holds_alternative<ProgramRef>(v) || std::holds_alternative<ProgramList>(v);
}

std::string eqn_label(const Program& p, const Eqn& e) {
  std::string label(prim_name(e.prim));
  for (const auto& [key, value] : e.params.entries())
    if (!is_program(value)) label += "\n" + key + "=" + param_text(value);
  for (size_t k = 0; k < e.outputs.size(); ++k) label += (k ? ", " : "\n") + p.type(e.outputs[k]).str();
  return label;
}

class DotWriter {
 public:
  explicit DotWriter(std::ostringstream& os) : os_(os) {}

  /// Writes program p's nodes and edges under the id prefix `id`, then its sub-programs as clusters.
  void program(const Program& p, const std::string& id, const std::string& indent) {
    std::vector<std::string> producer(p.types.size());  // the node each var comes from
    for (size_t k = 0; k < p.constvars.size(); ++k) {
      producer[size_t(p.constvars[k])] = id + "_c" + std::to_string(k);
      node(indent, producer[size_t(p.constvars[k])],
           "const " + std::to_string(k) + "\n" + p.type(p.constvars[k]).str(),
           "shape=ellipse, style=filled, fillcolor=\"#e8f0e0\"");
    }
    for (size_t k = 0; k < p.invars.size(); ++k) {
      producer[size_t(p.invars[k])] = id + "_i" + std::to_string(k);
      node(indent, producer[size_t(p.invars[k])], "in " + std::to_string(k) + "\n" + p.type(p.invars[k]).str(),
           "shape=ellipse, style=filled, fillcolor=\"#c8ecc8\"");
    }
    for (size_t k = 0; k < p.eqns.size(); ++k) {
      const Eqn& e = p.eqns[k];
      std::string eqn_id = id + "_e" + std::to_string(k);
      node(indent, eqn_id, eqn_label(p, e), "shape=box, style=\"rounded,filled\", fillcolor=\"#dde6f7\"");
      for (size_t j = 0; j < e.inputs.size(); ++j)
        use(p, e.inputs[j], producer, id + "_l" + std::to_string(k) + "_" + std::to_string(j), eqn_id, indent);
      for (int32_t v : e.outputs) producer[size_t(v)] = eqn_id;
      sub_programs(e, eqn_id, indent);
    }
    for (size_t k = 0; k < p.outvars.size(); ++k) {
      std::string out_id = id + "_o" + std::to_string(k);
      node(indent, out_id, "out " + std::to_string(k) + "\n" + p.aval(p.outvars[k]).str(),
           "shape=ellipse, style=filled, fillcolor=\"#f7d0d0\"");
      use(p, p.outvars[k], producer, id + "_lo" + std::to_string(k), out_id, indent);
    }
  }

 private:
  void node(const std::string& indent, const std::string& id, const std::string& label, const std::string& attrs) {
    os_ << indent << id << " [label=" << dot_string(label) << ", " << attrs << "];\n";
  }

  /// One edge for one use of an operand: from the node that makes it (a literal gets its own node).
  void use(const Program& p, const Atom& a, const std::vector<std::string>& producer, const std::string& lit_id,
           const std::string& to, const std::string& indent) {
    std::string from;
    if (a.is_literal()) {
      from = lit_id;
      node(indent, from, a.lit.value_str(), "shape=plaintext, fontcolor=\"#606060\"");
    } else {
      from = producer[size_t(a.var)];
    }
    os_ << indent << from << " -> " << to << " [label=" << dot_string(p.aval(a).str()) << "];\n";
  }

  void sub_programs(const Eqn& e, const std::string& eqn_id, const std::string& indent) {
    for (const auto& [key, value] : e.params.entries()) {
      std::string title = std::string(prim_name(e.prim)) + " " + key;
      if (const ProgramRef* q = std::get_if<ProgramRef>(&value); q && *q) cluster(**q, title, eqn_id, indent);
      if (const ProgramList* list = std::get_if<ProgramList>(&value))
        for (size_t i = 0; i < list->size(); ++i)
          if ((*list)[i]) cluster(*(*list)[i], title + "[" + std::to_string(i) + "]", eqn_id, indent);
    }
  }

  void cluster(const Program& q, const std::string& title, const std::string& eqn_id, const std::string& indent) {
    std::string id = "p" + std::to_string(++programs_);
    os_ << indent << "subgraph cluster_" << id << " {\n";
    std::string inner = indent + "  ";
    os_ << inner << "label=" << dot_string(title) << "; style=dashed; color=\"#808080\";\n";
    node(inner, id + "_anchor", "", "shape=point, width=0.05");
    program(q, id, inner);
    os_ << indent << "}\n";
    os_ << indent << eqn_id << " -> " << id << "_anchor [style=dotted, arrowhead=none, lhead=cluster_" << id << "];\n";
  }

  std::ostringstream& os_;
  int programs_ = 0;
};

}  // namespace

std::string to_dot(const Program& program, const std::string& name) {
  std::ostringstream os;
  os << "digraph " << dot_string(name) << " {\n"
     << "  compound=true; rankdir=TB;\n"
     << "  graph [fontname=\"Helvetica\", fontsize=11];\n"
     << "  node [fontname=\"Helvetica\", fontsize=10];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#505050\"];\n";
  DotWriter(os).program(program, "p0", "  ");
  os << "}\n";
  return os.str();
}

}  // namespace fluxion
