#include "runtime/executable.h"

#include <algorithm>
#include <map>

#include "ir/dim_expr.h"
#include "ir/error.h"
#include "ir/poly_shapes.h"

namespace fluxion::runtime {

namespace {
// The primitives of the program text in a fingerprint (each eqn reads "outs = prim[params] ins"),
// repeats counted: "kernel: tanh+mul x2+reduce_sum".
std::string kernel_name(const std::string& fingerprint) {
  std::vector<std::pair<std::string, int>> prims;
  size_t pos = 0;
  while ((pos = fingerprint.find(" = ", pos)) != std::string::npos) {
    pos += 3;
    size_t end = fingerprint.find_first_of("[ \n", pos);
    std::string prim = fingerprint.substr(pos, end - pos);
    if (!prims.empty() && prims.back().first == prim) ++prims.back().second;
    else prims.emplace_back(prim, 1);
  }
  std::string name = "kernel:";
  for (size_t i = 0; i < prims.size(); ++i) {
    if (i == 12) return name + "+... (" + std::to_string(prims.size() - i) + " more)";
    name += (i ? "+" : " ") + prims[i].first;
    if (prims[i].second > 1) name += " x" + std::to_string(prims[i].second);
  }
  return name;
}
}  // namespace

namespace {
[[noreturn]] void argument_error(size_t i, const Array& a, const AbstractArray& expected, const std::string& why) {
  throw TypeError("TypeError: jit: argument " + std::to_string(i) + " has type " +
                  (a.valid() ? a.aval().str() : std::string("<empty>")) + ", the executable expects " +
                  expected.str() + why);
}
}  // namespace

Executable::Executable(std::vector<AbstractArray> in_avals, std::vector<AbstractArray> out_avals,
                       std::string fingerprint, Platform platform, CompileTimes times)
    : in_avals_(std::move(in_avals)), out_avals_(std::move(out_avals)), symbols_(symbols_of(in_avals_)),
      fingerprint_(std::move(fingerprint)), platform_(platform), times_(times), name_(kernel_name(fingerprint_)) {}

std::vector<int64_t> Executable::check_inputs(std::span<const Array> inputs) const {
  if (inputs.size() != in_avals_.size())
    throw TypeError("TypeError: jit: the executable takes " + std::to_string(in_avals_.size()) + " arrays, got " +
                    std::to_string(inputs.size()));
  if (symbols_.empty()) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!inputs[i].valid() || !inputs[i].aval().same_type(in_avals_[i])) argument_error(i, inputs[i], in_avals_[i], "");
    return {};
  }
  // A polymorphic program: the dims that are one symbol alone bind it, then every dim must agree.
  std::map<std::string, int64_t> env;
  DimExpr e;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const AbstractArray& want = in_avals_[i];
    if (!inputs[i].valid() || inputs[i].aval().dtype != want.dtype || inputs[i].aval().ndim() != want.ndim())
      argument_error(i, inputs[i], want, "");
    for (size_t k = 0; k < want.shape.size(); ++k)
      if (is_symbolic_dim(want.shape[k]) && decode_dim(want.shape[k], e) && e.symbols().size() == 1 &&
          e == DimExpr::symbol(e.symbols()[0]))
        env.try_emplace(e.symbols()[0], inputs[i].aval().shape[k]);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const AbstractArray& want = in_avals_[i];
    for (size_t k = 0; k < want.shape.size(); ++k) {
      const int64_t got = inputs[i].aval().shape[k];
      int64_t expected = want.shape[k];
      if (is_symbolic_dim(expected) && decode_dim(expected, e)) {
        for (const std::string& s : e.symbols())
          if (!env.count(s)) argument_error(i, inputs[i], want, ": no argument has the symbol " + s + " alone as a dim");
        expected = e.evaluate(env);
      }
      if (got != expected)
        argument_error(i, inputs[i], want, ": dim " + std::to_string(k) + " is " + std::to_string(got) +
                                               ", the symbols' values give " + std::to_string(expected));
    }
  }
  std::vector<int64_t> values;
  for (const std::string& s : symbols_) values.push_back(env.at(s));
  return values;
}

std::vector<AbstractArray> Executable::concrete_out_avals(std::span<const int64_t> symbol_values) const {
  if (symbols_.empty()) return out_avals_;
  std::map<std::string, int64_t> env;
  for (size_t j = 0; j < symbols_.size(); ++j) env[symbols_[j]] = symbol_values[j];
  std::vector<AbstractArray> out = out_avals_;
  DimExpr e;
  for (AbstractArray& a : out)
    for (size_t k = 0; k < a.shape.size(); ++k)
      if (is_symbolic_dim(a.shape[k]) && decode_dim(a.shape[k], e)) {
        const int64_t v = e.evaluate(env);
        if (v < 0) throw ShapeError("ShapeError: jit: the output dim " + e.str() + " is " + std::to_string(v) + " for these sizes");
        a.shape[k] = v;
      }
  return out;
}

}  // namespace fluxion::runtime
