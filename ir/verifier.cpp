// The program type checker (JAX's core.check_jaxpr): one pass in program order that tracks which
// vars are defined, re-derives every eqn's output types with its primitive's shape rule, and
// descends into the sub-programs held in params. A malformed program is ill-typed, so structural
// faults (undefined or rebound vars, ids out of range) raise TypeError too; a shape rule's own
// ShapeError keeps its kind.
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/dim_expr.h"
#include "ir/array.h"
#include "ir/eval_rules.h"
#include "ir/program.h"

namespace fluxion {

namespace {

std::string types_str(std::span<const AbstractArray> ts) {
  std::string s = "(";
  for (size_t i = 0; i < ts.size(); ++i) {
    if (i) s += ", ";
    s += ts[i].str();
  }
  return s + ")";
}

bool valid_type(const AbstractArray& t) {
  if (size_t(t.dtype) >= size_t(kNumDTypes)) return false;
  DimExpr e;
  for (int64_t d : t.shape)
    if (d < 0 && !(is_symbolic_dim(d) && decode_dim(d, e))) return false;  // an interned symbolic dim is a type
  return true;
}

class Verifier {
 public:
  // `where` prefixes every message: "" at top level, "param 'body' of eqn 3 (while): " inside.
  Verifier(const Program& p, std::string where) : p_(p), where_(std::move(where)), defined_(p.types.size(), 0) {}

  void run() {
    for (size_t v = 0; v < p_.types.size(); ++v)
      if (!valid_type(p_.types[v]))
        fail(ErrorKind::Type, "variable " + std::to_string(v) + " has an invalid type (bad dtype or negative dimension)");
    if (!p_.consts.empty()) {
      if (p_.consts.size() != p_.constvars.size())
        fail(ErrorKind::Type, std::to_string(p_.constvars.size()) + " constvars but " + std::to_string(p_.consts.size()) +
                                  " const values");
    }
    for (size_t i = 0; i < p_.constvars.size(); ++i) {
      define(p_.constvars[i], "constvar " + std::to_string(i));
      if (!p_.consts.empty() && !p_.consts[i].aval().same_type(p_.type(p_.constvars[i])))
        fail(ErrorKind::Type, "constvar " + std::to_string(i) + " has type " + p_.type(p_.constvars[i]).str() +
                                  " but its value is " + p_.consts[i].aval().str());
    }
    for (size_t i = 0; i < p_.invars.size(); ++i) define(p_.invars[i], "invar " + std::to_string(i));
    for (size_t i = 0; i < p_.eqns.size(); ++i) eqn(i, p_.eqns[i]);
    for (size_t i = 0; i < p_.outvars.size(); ++i) use(p_.outvars[i], "output " + std::to_string(i));
  }

 private:
  [[noreturn]] void fail(ErrorKind kind, const std::string& detail) const {
    throw_error(kind, std::string(error_kind_name(kind)) + ": verify: " + where_ + detail);
  }

  void check_id(int32_t v, const std::string& what) const {
    if (v < 0 || size_t(v) >= p_.types.size())
      fail(ErrorKind::Type, what + " is variable " + std::to_string(v) + ", out of range (the program has " +
                                std::to_string(p_.types.size()) + " variables)");
  }
  void define(int32_t v, const std::string& what) {
    check_id(v, what);
    if (defined_[size_t(v)])
      fail(ErrorKind::Type, what + " rebinds variable " + std::to_string(v) + " (" + p_.type(v).str() +
                                "), which is already defined: programs are SSA");
    // Negative dimensions were refused above; a size past int64 is a ShapeError naming its eqn.
    if (std::string why = symbolic_shape_problem(p_.type(v).shape, p_.type(v).dtype); !why.empty())
      fail(ErrorKind::Shape, what + " has type " + p_.type(v).str() + ": " + why);
    defined_[size_t(v)] = 1;
  }
  void use(const Atom& a, const std::string& what) const {
    if (a.is_literal()) {
      if (size_t(a.lit.dtype) >= size_t(kNumDTypes)) fail(ErrorKind::Type, what + " is a literal of an invalid dtype");
      return;
    }
    check_id(a.var, what);
    if (!defined_[size_t(a.var)])
      fail(ErrorKind::Type, what + " uses variable " + std::to_string(a.var) + " (" + p_.type(a.var).str() +
                                ") before it is defined");
  }

  void eqn(size_t index, const Eqn& e) {
    if (size_t(e.prim) >= size_t(kNumPrims)) fail(ErrorKind::Type, "eqn " + std::to_string(index) + " has an invalid primitive");
    const std::string name = "eqn " + std::to_string(index) + " (" + std::string(prim_name(e.prim)) + ")";
    std::vector<AbstractArray> in;
    in.reserve(e.inputs.size());
    for (size_t k = 0; k < e.inputs.size(); ++k) {
      use(e.inputs[k], name + " input " + std::to_string(k));
      in.push_back(p_.aval(e.inputs[k]));
    }
    sub_programs(name, e.params);
    ShapeRule rule = eval_rules(e.prim).shape;
    if (!rule) fail(ErrorKind::Type, name + ": the primitive has no shape rule to check it against");
    std::vector<AbstractArray> expected;
    try {
      expected = rule(in, e.params);
    } catch (const RuleError& r) {
      fail(r.kind, name + " on inputs " + types_str(in) + ": " + r.detail);
    } catch (const std::logic_error& x) {  // a param missing or of the wrong type (Params::get)
      fail(ErrorKind::Type, name + " on inputs " + types_str(in) + ": bad params: " + x.what());
    }
    std::vector<AbstractArray> actual;
    for (size_t k = 0; k < e.outputs.size(); ++k) {
      check_id(e.outputs[k], name + " output " + std::to_string(k));
      actual.push_back(p_.type(e.outputs[k]));
    }
    bool same = expected.size() == actual.size();
    for (size_t k = 0; same && k < actual.size(); ++k) same = actual[k].same_type(expected[k]);
    if (!same)
      fail(ErrorKind::Type, name + " on inputs " + types_str(in) + " declares outputs " + types_str(actual) +
                                " but its shape rule gives " + types_str(expected));
    for (size_t k = 0; k < e.outputs.size(); ++k) define(e.outputs[k], name + " output " + std::to_string(k));
  }

  void sub_programs(const std::string& eqn_name, const Params& params) const {
    for (const auto& [key, value] : params.entries()) {
      std::string where = where_ + "param '" + key + "' of " + eqn_name;
      if (const ProgramRef* ref = std::get_if<ProgramRef>(&value)) {
        if (!*ref) fail(ErrorKind::Type, "param '" + key + "' of " + eqn_name + " is a null program");
        Verifier(**ref, where + ": ").run();
      } else if (const ProgramList* list = std::get_if<ProgramList>(&value)) {
        for (size_t i = 0; i < list->size(); ++i) {
          if (!(*list)[i]) fail(ErrorKind::Type, "param '" + key + "' of " + eqn_name + " holds a null program");
          Verifier(*(*list)[i], where + " [" + std::to_string(i) + "]: ").run();
        }
      }
    }
  }

  const Program& p_;
  std::string where_;
  std::vector<char> defined_;
};

}  // namespace

void verify(const Program& p) { Verifier(p, "").run(); }

}  // namespace fluxion
