// The rules of every primitive, in one table indexed by Prim. Each prims/<family>.cpp fills the
// records of its primitives side by side (shape rule, reference kernel, and -- as the transforms
// land -- jvp, transpose and batching rules); the transforms read them from here.
#pragma once
#include <span>
#include <vector>

#include "ir/array.h"
#include "ir/error.h"
#include "ir/params.h"
#include "ir/primitive.h"
#include "ir/shape.h"
#include "transforms/jvp.h"
#include "transforms/transpose.h"
#include "transforms/vmap.h"

namespace fluxion {

/// Abstract evaluation: the output types for these input types, or rule_error(...) (ir/error.h).
using ShapeRule = std::vector<AbstractArray> (*)(std::span<const AbstractArray> in, const Params& params);

/// A typed view of one kernel operand: contiguous row-major data.
struct View {
  void* data;
  const AbstractArray* aval;
  template <class T>
  T* as() const { return static_cast<T*>(data); }
  int64_t size() const { return aval->size(); }
  const Shape& shape() const { return aval->shape; }
  DType dtype() const { return aval->dtype; }
};

/// The reference CPU kernel: reads `in`, writes every element of `out` (buffers already sized).
using Kernel = void (*)(std::span<const View> in, std::span<const View> out, const Params& params);

/// Eager evaluation of a primitive that holds sub-programs (custom derivatives, control flow): it
/// interprets them on concrete arrays. Such primitives have an impl instead of a kernel.
using ImplRule = std::vector<Array> (*)(std::span<const Array> in, const Params& params, SourceLoc loc);

struct PrimitiveRules {
  ShapeRule shape = nullptr;
  Kernel kernel = nullptr;
  /// Forward-mode derivative (transforms/jvp.h). Primitives whose outputs are never floats, or
  /// whose derivative is zero, need none: see `zero_derivative`.
  JvpRule jvp = nullptr;
  /// Set for primitives that are linear in some inputs (transforms/transpose.h).
  TransposeRule transpose = nullptr;
  /// The primitive is piecewise constant (comparisons, floor, sign, argmax, ...): its derivative is
  /// an explicit zero, and it needs no JVP rule.
  bool zero_derivative = false;
  ImplRule impl = nullptr;
  /// Batching rule (transforms/vmap.h).
  BatchRule batch = nullptr;
  /// The JVP rule also computes the primal outputs: jvp_eval does not bind the eqn first, passes
  /// `outs` empty, and the rule returns the outputs followed by their tangents. For primitives whose
  /// derivative needs values the primal computation produces on the way (scan stores per-step
  /// residuals), so that the primal work is not done twice.
  /// (Last member: some registrations initialise the leading members positionally.)
  bool jvp_computes_primal = false;
};

/// The rules of p (the table is filled once, on first use, by the register_* functions below).
const PrimitiveRules& rules(Prim p);

using RuleTable = std::vector<PrimitiveRules>;  // indexed by Prim
void register_unary_prims(RuleTable& t);
void register_binary_prims(RuleTable& t);
void register_compare_prims(RuleTable& t);
void register_convert_prims(RuleTable& t);
void register_shape_prims(RuleTable& t);
void register_indexing_prims(RuleTable& t);
void register_reduce_prims(RuleTable& t);
void register_sort_prims(RuleTable& t);
void register_dot_general_prims(RuleTable& t);
void register_random_prims(RuleTable& t);
void register_custom_prims(RuleTable& t);
void register_control_prims(RuleTable& t);
void register_control_batching(RuleTable& t);

}  // namespace fluxion
