#include "ir/poly_shapes.h"

#include <algorithm>

namespace fluxion {

namespace {
const char* const kComparisons[] = {">=", "<=", "==", "!=", ">", "<"};

/// Splits "b, max(b, 4), 784" at the top-level commas (max/min hold commas of their own).
std::vector<std::string> split_dims(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char ch : text) {
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if (ch == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\n"), b = s.find_last_not_of(" \t\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

/// "b, 784" or "(b, 784)" or "[b, 784]" (a bare "(b)" is one dim, as in JAX's specs).
std::vector<SpecDim> parse_shape(const SpecText& t) {
  std::string s = trim(t.text);
  if (s.size() >= 2 && ((s.front() == '(' && s.back() == ')') || (s.front() == '[' && s.back() == ']'))) {
    // Only strip brackets that enclose the whole text: "(b + 1) // 2" keeps its parentheses.
    int depth = 0;
    bool whole = true;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      if (s[i] == '(' || s[i] == '[') ++depth;
      if (s[i] == ')' || s[i] == ']') --depth;
      if (depth == 0) whole = false;
    }
    if (whole) s = trim(s.substr(1, s.size() - 2));
  }
  std::vector<SpecDim> dims;
  if (s.empty()) return dims;
  for (const std::string& part : split_dims(s)) {
    std::string d = trim(part);
    SpecDim sd;
    if (d == "_") {
      sd.any = true;
    } else {
      try {
        sd.expr = DimExpr::parse(d);
      } catch (const ValueError& e) {
        throw ValueError(std::string(e.what()) + ", in the shape spec '" + t.text + "' at " + t.loc.str());
      }
    }
    dims.push_back(std::move(sd));
  }
  return dims;
}

DimConstraint parse_constraint(const SpecText& t, size_t at, const std::string& op) {
  DimConstraint c;
  c.op = op;
  try {
    c.lhs = DimExpr::parse(t.text.substr(0, at));
    c.rhs = DimExpr::parse(t.text.substr(at + op.size()));
  } catch (const ValueError& e) {
    throw ValueError(std::string(e.what()) + ", in the constraint '" + t.text + "' at " + t.loc.str());
  }
  c.text = c.lhs.str() + " " + op + " " + c.rhs.str();
  return c;
}
}  // namespace

bool DimConstraint::holds(const std::map<std::string, int64_t>& env) const {
  int64_t l = lhs.evaluate(env), r = rhs.evaluate(env);
  if (op == ">=") return l >= r;
  if (op == "<=") return l <= r;
  if (op == "==") return l == r;
  if (op == "!=") return l != r;
  if (op == ">") return l > r;
  return l < r;
}

std::vector<std::string> PolymorphicShapes::symbols() const {
  std::vector<std::string> out;
  for (const auto& spec : specs)
    for (const SpecDim& d : spec)
      for (std::string& s : d.expr.symbols()) out.push_back(std::move(s));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

PolymorphicShapes parse_polymorphic_shapes(std::span<const SpecText> texts) {
  PolymorphicShapes ps;
  if (!texts.empty()) ps.loc = texts.front().loc;
  for (const SpecText& t : texts) {
    bool constraint = false;
    for (const char* op : kComparisons)
      if (size_t at = t.text.find(op); at != std::string::npos) {
        ps.constraints.push_back(parse_constraint(t, at, op));
        constraint = true;
        break;
      }
    if (!constraint) ps.specs.push_back(parse_shape(t));
  }
  std::vector<std::string> syms = ps.symbols();
  for (const DimConstraint& c : ps.constraints)
    for (const DimExpr* side : {&c.lhs, &c.rhs})
      for (const std::string& s : side->symbols())
        if (!std::binary_search(syms.begin(), syms.end(), s))
          throw ValueError("polymorphic_shapes: the constraint '" + c.text + "' names the symbol " + s +
                           ", which no shape spec has, at " + ps.loc.str());
  return ps;
}

namespace {
[[noreturn]] void misfit(const PolymorphicShapes& ps, std::string_view op, size_t arg, const AbstractArray& a,
                         const std::string& why) {
  throw ShapeError(std::string(op) + ": argument " + std::to_string(arg) + " (" + a.str() +
                   ") does not fit the polymorphic shapes given at " + ps.loc.str() + ": " + why);
}
}  // namespace

std::map<std::string, int64_t> bind_symbols(const PolymorphicShapes& ps, std::span<const AbstractArray> actual,
                                            std::string_view op) {
  if (ps.specs.size() != actual.size())
    throw ShapeError(std::string(op) + ": polymorphic_shapes at " + ps.loc.str() + " gives " + std::to_string(ps.specs.size()) +
                     " shape specs for " + std::to_string(actual.size()) + " array arguments");
  std::map<std::string, int64_t> env;
  // First the dims that are a single symbol: they bind it (and must agree where it repeats).
  for (size_t i = 0; i < actual.size(); ++i) {
    const auto& spec = ps.specs[i];
    if (int(spec.size()) != actual[i].ndim())
      misfit(ps, op, i, actual[i], "the spec has rank " + std::to_string(spec.size()));
    for (size_t d = 0; d < spec.size(); ++d) {
      if (spec[d].any) continue;
      std::vector<std::string> syms = spec[d].expr.symbols();
      if (syms.size() != 1 || !(spec[d].expr == DimExpr::symbol(syms[0]))) continue;
      int64_t size = actual[i].shape[d];
      auto [it, fresh] = env.emplace(syms[0], size);
      if (!fresh && it->second != size)
        misfit(ps, op, i, actual[i], "the symbol " + syms[0] + " is " + std::to_string(it->second) + " in an earlier dim and " +
                                        std::to_string(size) + " in dim " + std::to_string(d));
    }
  }
  for (const auto& [sym, v] : env)
    if (v < 1)
      throw ShapeError(std::string(op) + ": the symbol " + sym + " = " + std::to_string(v) + " breaks the constraint " + sym +
                       " >= 1 (implicit for every symbol) of the polymorphic shapes given at " + ps.loc.str());
  // Then every dim: constants and expressions must equal the sizes.
  for (size_t i = 0; i < actual.size(); ++i)
    for (size_t d = 0; d < ps.specs[i].size(); ++d) {
      const SpecDim& sd = ps.specs[i][d];
      if (sd.any) continue;
      for (const std::string& s : sd.expr.symbols())
        if (!env.count(s))
          misfit(ps, op, i, actual[i], "the symbol " + s + " appears only inside the expression " + sd.expr.str() +
                                          " and no dim gives its value by itself");
      int64_t want = sd.expr.evaluate(env);
      if (want != actual[i].shape[d])
        misfit(ps, op, i, actual[i], "dim " + std::to_string(d) + " is " + sd.expr.str() + " = " + std::to_string(want) +
                                        " but the argument has " + std::to_string(actual[i].shape[d]));
    }
  for (const DimConstraint& c : ps.constraints)
    if (!c.holds(env)) {
      std::string vals;
      for (const DimExpr* side : {&c.lhs, &c.rhs})
        for (const std::string& s : side->symbols()) vals += " " + s + " = " + std::to_string(env.at(s));
      throw ShapeError(std::string(op) + ": the symbols (" + trim(vals) + ") break the constraint " + c.text +
                       " of the polymorphic shapes given at " + ps.loc.str());
    }
  return env;
}

std::vector<AbstractArray> symbolic_avals(const PolymorphicShapes& ps, std::span<const AbstractArray> actual) {
  std::vector<AbstractArray> out(actual.begin(), actual.end());
  for (size_t i = 0; i < out.size() && i < ps.specs.size(); ++i)
    for (size_t d = 0; d < ps.specs[i].size(); ++d)
      if (!ps.specs[i][d].any) out[i].shape[d] = encode_dim(ps.specs[i][d].expr);
  return out;
}

}  // namespace fluxion

namespace fluxion {

bool has_symbolic_dim(std::span<const AbstractArray> avals) {
  for (const AbstractArray& a : avals)
    for (int64_t d : a.shape)
      if (d < 0) return true;
  return false;
}

namespace {
bool copies_dims(Prim p) {
  // The enumerators from neg to convert_element_type are the elementwise families (primitive.h).
  if (uint16_t(p) >= uint16_t(Prim::neg) && uint16_t(p) <= uint16_t(Prim::convert_element_type)) return true;
  switch (p) {
    case Prim::broadcast_in_dim: case Prim::transpose: case Prim::squeeze: case Prim::rev:
    case Prim::reduce_sum: case Prim::reduce_max: case Prim::reduce_min: case Prim::reduce_prod:
    case Prim::argmax: case Prim::argmin: case Prim::reduce_and: case Prim::reduce_or:
    case Prim::cumsum: case Prim::cumprod: case Prim::cummax: case Prim::cummin:
    case Prim::dot_general: case Prim::reshape:  // reshape: its rule checks symbolic dims stay dims
    case Prim::scan:  // its length (a symbol when xs's leading dim is one) only compared and copied
    case Prim::cond: case Prim::while_:  // operands flow into the branches and the carry as they are
      return true;
    default:
      return false;
  }
}

std::string first_symbol(std::span<const AbstractArray> in) {
  for (const AbstractArray& a : in)
    for (int64_t d : a.shape)
      if (d < 0) return dim_str(d);
  return "";
}
}  // namespace

std::vector<std::string> symbols_of(std::span<const AbstractArray> avals) {
  std::vector<std::string> out;
  DimExpr e;
  for (const AbstractArray& a : avals)
    for (int64_t d : a.shape)
      if (is_symbolic_dim(d) && decode_dim(d, e))
        for (std::string& name : e.symbols()) out.push_back(std::move(name));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string symbolic_operand_problem(Prim p, std::span<const AbstractArray> in) {
  if (copies_dims(p)) return "";
  return "the operand's symbolic dimension " + first_symbol(in) + " reaches " + std::string(prim_name(p)) +
         ", whose shape rule needs concrete sizes: the polymorphic path does not serve it (docs/shape_polymorphism.md)";
}

std::string symbolic_reshape_problem(const AbstractArray& in, const AbstractArray& out) {
  std::vector<int64_t> sym_in, sym_out;
  int64_t n_in = 1, n_out = 1;
  for (int64_t d : in.shape) d < 0 ? sym_in.push_back(d) : void(n_in *= d);
  for (int64_t d : out.shape) d < 0 ? sym_out.push_back(d) : void(n_out *= d);
  std::sort(sym_in.begin(), sym_in.end());
  std::sort(sym_out.begin(), sym_out.end());
  if (sym_in == sym_out && n_in == n_out) return "";
  return "reshape of " + in.str() + " into " + out.str() +
         ": a symbolic dimension must stay a dimension of its own and the other dimensions hold as many elements";
}

}  // namespace fluxion
