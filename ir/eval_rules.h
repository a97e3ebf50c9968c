// The evaluation table: what `bind` and the verifier need of each primitive -- its shape rule, and
// its reference kernel (or, for a primitive that holds sub-programs, its impl). ir/ owns the table
// and declares the rule signatures; prims/ fills it, one block per primitive (prims/registry.h),
// as the library loads. The transforms own their tables the same way (interpreters/jvp.h,
// transpose.h, vmap.h).
#pragma once
#include <span>
#include <string_view>
#include <vector>

#include "ir/array.h"
#include "ir/params.h"
#include "ir/primitive.h"
#include "ir/program.h"
#include "ir/shape.h"

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

/// A param the reference kernel reads, as compiled code passes it when it calls the kernel as a
/// library function (kernels/library_calls.h): an integer; a bool as 0/1; an IntList (is_ints) as
/// its length, then its elements; a string (choices not empty) as its index in `choices`, the
/// values the param can take.
struct KernelParam {
  const char* name;
  bool is_bool = false;
  bool is_ints = false;
  std::span<const std::string_view> choices = {};
};

struct EvalRules {
  ShapeRule shape = nullptr;
  Kernel kernel = nullptr;
  ImplRule impl = nullptr;
  /// For primitives whose compiled code calls the reference kernel: the params it passes, in order.
  std::span<const KernelParam> kernel_params;
  /// Has an effect beyond its results (a host callback): never removed, merged, hoisted or
  /// reordered by a pass, even when nothing reads its outputs.
  bool effect = false;
};

/// The evaluation rules of p (all null for a primitive no block has registered).
const EvalRules& eval_rules(Prim p);
/// Whether running e has an effect: its primitive has one, or a sub-program in its params holds
/// such an eqn (a cond branch, a loop body that prints).
bool has_effect(const Eqn& e);
bool has_effect(const Program& p);
/// Called by prims/registry.cpp when a primitive's block registers.
void register_eval_rules(Prim p, const EvalRules& rules);

}  // namespace fluxion
