// GraphDef of a program (train/summary_graph.h). Field numbers are those of TensorFlow's
// graph.proto (GraphDef.node = 1), node_def.proto (name 1, op 2, input 3, attr 5, a map: entries
// of key 1 and value 2) and attr_value.proto (s = 2).
#include "train/summary_graph.h"

#include <variant>

#include "train/protobuf_wire.h"

namespace fluxion::summary {
namespace {

using protobuf::Message;

class GraphWriter {
 public:
  void program(const Program& p, const std::string& scope, const std::string& caller) {
    std::vector<std::string> producer(p.types.size());
    for (size_t k = 0; k < p.constvars.size(); ++k) {
      const int32_t v = p.constvars[k];
      producer[size_t(v)] = add(scope + "const_" + std::to_string(k), "Const", {caller}, p.type(v).str());
    }
    for (size_t k = 0; k < p.invars.size(); ++k) {
      const int32_t v = p.invars[k];
      producer[size_t(v)] = add(scope + "in_" + std::to_string(k), "Input", {caller}, p.type(v).str());
    }
    for (size_t k = 0; k < p.eqns.size(); ++k) {
      const Eqn& e = p.eqns[k];
      std::string name = scope + std::string(prim_name(e.prim)) + "_" + std::to_string(k);
      std::vector<std::string> inputs;
      for (size_t j = 0; j < e.inputs.size(); ++j) {
        const std::string lit_name = scope + "lit_" + std::to_string(k) + "_" + std::to_string(j);
        inputs.push_back(operand(p, e.inputs[j], producer, lit_name));
      }
      std::string types;
      for (size_t j = 0; j < e.outputs.size(); ++j) {
        types += (j ? ", " : "") + p.type(e.outputs[j]).str();
        producer[size_t(e.outputs[j])] = j ? name + ":" + std::to_string(j) : name;
      }
      add(name, std::string(prim_name(e.prim)), inputs, types);
      for (const auto& [key, value] : e.params.entries()) {
        if (const ProgramRef* q = std::get_if<ProgramRef>(&value); q && *q) program(**q, name + "_" + key + "/", name);
        if (const ProgramList* list = std::get_if<ProgramList>(&value))
          for (size_t i = 0; i < list->size(); ++i)
            if ((*list)[i]) program(*(*list)[i], name + "_" + key + "_" + std::to_string(i) + "/", name);
      }
    }
    for (size_t k = 0; k < p.outvars.size(); ++k) {
      std::string in = operand(p, p.outvars[k], producer, scope + "lit_out_" + std::to_string(k));
      add(scope + "out_" + std::to_string(k), "Output", {in}, p.aval(p.outvars[k]).str());
    }
  }
  std::string str() const { return graph_.str(); }

 private:
  std::string operand(const Program& p, const Atom& a, const std::vector<std::string>& producer,
                      const std::string& lit_name) {
    if (!a.is_literal()) return producer[size_t(a.var)];
    return add(lit_name, "Literal " + a.lit.value_str(), {}, p.aval(a).str());
  }

  std::string add(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                  const std::string& type) {
    Message node;
    node.bytes(1, name).bytes(2, op);
    for (const std::string& in : inputs)
      if (!in.empty()) node.bytes(3, in);
    Message value;
    value.bytes(2, type);
    Message entry;
    entry.bytes(1, "type").message(2, value);
    node.message(5, entry);
    graph_.message(1, node);
    return name;
  }

  Message graph_;
};

}  // namespace

std::string graph_def(const Program& program) {
  GraphWriter w;
  w.program(program, "", "");
  return w.str();
}

}  // namespace fluxion::summary
