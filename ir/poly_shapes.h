// PolymorphicShapes: the parsed form of fx::polymorphic_shapes("b, 784", "b", "b % 8 == 0") --
// one shape spec per Array argument and the constraints on its symbols -- and the call-time check
// that binds the symbols to an argument list's sizes (docs/shape_polymorphism.md).
#pragma once
#include <map>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include "ir/dim_expr.h"
#include "ir/error.h"
#include "ir/primitive.h"

namespace fluxion {

/// One text of a polymorphic_shapes call; converting from a string literal records the user's
/// line, so that every error about the spec names it.
struct SpecText {
  std::string text;
  SourceLoc loc;
  SpecText(const char* t, std::source_location l = std::source_location::current()) : text(t), loc(l) {}  // NOLINT
  SpecText(std::string t, std::source_location l = std::source_location::current()) : text(std::move(t)), loc(l) {}  // NOLINT
};

/// A constraint on the symbols: `lhs op rhs` with op one of >=, <=, >, <, ==, !=.
struct DimConstraint {
  DimExpr lhs, rhs;
  std::string op;
  std::string text;  // as written (canonicalised), for errors
  bool holds(const std::map<std::string, int64_t>& env) const;
};

/// A dim of a spec: an expression, or "_" (whatever the argument has, kept concrete).
struct SpecDim {
  bool any = false;
  DimExpr expr;
};

struct PolymorphicShapes {
  std::vector<std::vector<SpecDim>> specs;  // one per Array argument (leaf), in order
  std::vector<DimConstraint> constraints;   // every symbol also has the implicit `sym >= 1`
  SourceLoc loc;                            // the polymorphic_shapes call
  std::vector<std::string> symbols() const;
};

/// Parses the texts: a text with a comparison (">=", "==", ...) is a constraint, any other is the
/// shape of the next argument ("b, 784"; "(b)" and "[b, 784]" too; "" or "()" is a scalar).
/// A mistake is a ValueError naming the text, the position and the user's line.
PolymorphicShapes parse_polymorphic_shapes(std::span<const SpecText> texts);

/// The symbols' values that make `actual` (the arguments' types, in order) fit the specs: a rank,
/// a constant dim, a symbol bound twice to different sizes, an expression that is not a single
/// symbol disagreeing with the sizes, or a broken constraint (the implicit `b >= 1` included) is a
/// ShapeError naming the argument, the symbol, the constraint and the spec's line. An expression
/// dim (say "2*b") is checked against its argument once its symbols are bound by plain-symbol dims.
std::map<std::string, int64_t> bind_symbols(const PolymorphicShapes& ps, std::span<const AbstractArray> actual,
                                            std::string_view op);

/// The arguments' types with the spec's symbolic dims in place of their sizes (after
/// bind_symbols has checked that they fit): what a polymorphic trace runs on.
std::vector<AbstractArray> symbolic_avals(const PolymorphicShapes& ps, std::span<const AbstractArray> actual);

}  // namespace fluxion

namespace fluxion {

/// Whether any of the types has a symbolic dim (the one test bind pays for concrete shapes).
bool has_symbolic_dim(std::span<const AbstractArray> avals);
/// The symbols the types mention, sorted: a polymorphic kernel takes their values in this order
/// after its buffers (runtime/kernel.h), from its inputs' types.
std::vector<std::string> symbols_of(std::span<const AbstractArray> avals);
/// Why primitive `p` cannot be traced over the symbolic operands `in` ("" when it can): only the
/// rules known to copy and compare dims, never compute with them, serve symbolic ones -- any other
/// would fold a symbol's code into a size or a constant, a silent wrong answer.
std::string symbolic_operand_problem(Prim p, std::span<const AbstractArray> in);
/// Why a reshape of `in` into `out` is not one a symbolic dim survives ("" when it is): every
/// symbolic dim must stay a dim of its own and the concrete dims must hold as many elements.
std::string symbolic_reshape_problem(const AbstractArray& in, const AbstractArray& out);

}  // namespace fluxion
