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

// Where a polymorphic program's sizes come from and go, decoded once when it is compiled, so that
// a call binds and checks them with integer work only: the dims that are one symbol alone (they
// bind it), the other symbolic dims of the inputs (checked against their expressions), and the
// outputs' symbolic dims (evaluated to size the outputs).
struct SymbolicDims {
  struct Dim {
    size_t array, dim;
    int symbol = -1;  // the index in symbols_ of a dim that is one symbol alone
    DimExpr expr;     // otherwise its expression
  };
  std::vector<Dim> inputs, outputs;

  SymbolicDims(std::span<const AbstractArray> in, std::span<const AbstractArray> out, const std::vector<std::string>& symbols) {
    auto collect = [&](std::span<const AbstractArray> avals, std::vector<Dim>& dims) {
      for (size_t i = 0; i < avals.size(); ++i)
        for (size_t k = 0; k < avals[i].shape.size(); ++k) {
          DimExpr e;
          if (!is_symbolic_dim(avals[i].shape[k]) || !decode_dim(avals[i].shape[k], e)) continue;
          Dim d{i, k, -1, e};
          const std::vector<std::string> names = e.symbols();
          if (names.size() == 1 && e == DimExpr::symbol(names[0]))
            d.symbol = int(std::find(symbols.begin(), symbols.end(), names[0]) - symbols.begin());
          dims.push_back(std::move(d));
        }
    };
    collect(in, inputs);
    collect(out, outputs);
  }

  int64_t value(const Dim& d, std::span<const int64_t> values, const std::vector<std::string>& symbols) const {
    if (d.symbol >= 0) return values[size_t(d.symbol)];
    std::map<std::string, int64_t> env;
    for (size_t j = 0; j < symbols.size(); ++j) env[symbols[j]] = values[j];
    return d.expr.evaluate(env);
  }
};

Executable::Executable(std::vector<AbstractArray> in_avals, std::vector<AbstractArray> out_avals,
                       std::string fingerprint, Platform platform, CompileTimes times)
    : in_avals_(std::move(in_avals)), out_avals_(std::move(out_avals)), symbols_(symbols_of(in_avals_)),
      fingerprint_(std::move(fingerprint)), platform_(platform), times_(times), name_(kernel_name(fingerprint_)) {
  if (!symbols_.empty()) symbolic_ = std::make_shared<const SymbolicDims>(in_avals_, out_avals_, symbols_);
}

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
  constexpr int64_t kUnbound = -1;
  std::vector<int64_t> values(symbols_.size(), kUnbound);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const AbstractArray& want = in_avals_[i];
    if (!inputs[i].valid() || inputs[i].aval().dtype != want.dtype || inputs[i].aval().ndim() != want.ndim())
      argument_error(i, inputs[i], want, "");
  }
  for (const SymbolicDims::Dim& d : symbolic_->inputs)
    if (d.symbol >= 0 && values[size_t(d.symbol)] == kUnbound)
      values[size_t(d.symbol)] = inputs[d.array].aval().shape[d.dim];
  for (size_t j = 0; j < values.size(); ++j)
    if (values[j] == kUnbound)  // only inside expressions: no input gives it (the spec's bind refuses this too)
      throw TypeError("TypeError: jit: no argument has the symbol " + symbols_[j] + " alone as a dim");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& want = in_avals_[i].shape;
    for (size_t k = 0; k < want.size(); ++k)
      if (!is_symbolic_dim(want[k]) && inputs[i].aval().shape[k] != want[k])
        argument_error(i, inputs[i], in_avals_[i], ": dim " + std::to_string(k) + " is " +
                                                        std::to_string(inputs[i].aval().shape[k]));
  }
  for (const SymbolicDims::Dim& d : symbolic_->inputs) {
    const int64_t got = inputs[d.array].aval().shape[d.dim], expected = symbolic_->value(d, values, symbols_);
    if (got != expected)
      argument_error(d.array, inputs[d.array], in_avals_[d.array], ": dim " + std::to_string(d.dim) + " is " +
                                                                       std::to_string(got) + ", the symbols' values give " +
                                                                       std::to_string(expected));
  }
  return values;
}

std::vector<AbstractArray> Executable::concrete_out_avals(std::span<const int64_t> symbol_values) const {
  if (!symbolic_) return out_avals_;
  std::vector<AbstractArray> out = out_avals_;
  for (const SymbolicDims::Dim& d : symbolic_->outputs) {
    const int64_t v = symbolic_->value(d, symbol_values, symbols_);
    if (v < 0)
      throw ShapeError("ShapeError: jit: the output dim " + d.expr.str() + " is " + std::to_string(v) + " for these sizes");
    out[d.array].shape[d.dim] = v;
  }
  return out;
}

}  // namespace fluxion::runtime
