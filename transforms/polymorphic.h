// fx::polymorphic_shapes and the polymorphic eval_shape: tracing a function once for every size
// its symbolic dimensions may take (docs/shape_polymorphism.md).
#pragma once
#include <vector>

#include "ir/poly_shapes.h"
#include "transforms/make_ir.h"

namespace fluxion {

/// fx::polymorphic_shapes("b, 784", "b", "b % 8 == 0"): one shape per Array argument, and any
/// constraints on the symbols. Parsed here, so a mistake in a spec is a ValueError at this line.
template <class... Rest>
PolymorphicShapes polymorphic_shapes(SpecText first, Rest&&... rest) {
  const SourceLoc loc = first.loc;  // every text names the line of the call
  std::vector<SpecText> texts{std::move(first)};
  (texts.push_back(SpecText(std::forward<Rest>(rest))), ...);
  for (SpecText& t : texts) t.loc = loc;
  return parse_polymorphic_shapes(texts);
}

/// eval_shape(f, polymorphic_shapes(...))(args...): f traced on the arguments' types with the
/// spec's symbols in place of their sizes; the result types print as "f32[b,10]". The arguments
/// are checked against the spec and its constraints first (a ShapeError naming the symbol).
template <class F>
auto eval_shape(F f, PolymorphicShapes ps) {
  return [f, ps](const auto&... args) {
    std::vector<Array> in;
    (tree::flatten_into(args, in), ...);
    std::vector<AbstractArray> actual;
    actual.reserve(in.size());
    for (const Array& a : in) actual.push_back(a.aval());
    bind_symbols(ps, actual, "eval_shape");
    auto [p, out] = detail::trace_with_avals(f, symbolic_avals(ps, actual), args...);
    if constexpr (std::is_same_v<std::decay_t<decltype(out)>, Array>)
      return p.out_avals().at(0);
    else
      return p.out_avals();
  };
}

}  // namespace fluxion
