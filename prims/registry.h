// The record of a primitive: every rule and fact about it, written together in one block of its
// family's file (prims/<family>.cpp) with designated initialisers and registered as the library
// loads:
//
//   const Registration neg_registration = PrimitiveRules{
//       .prim = Prim::neg,
//       .shape = &unary_shape<neg_op>,
//       .kernel = &unary_kernel<neg_op>,
//       .jvp = &unary_jvp<neg_op>,
//       .transpose = &neg_transpose,
//       .linear = kLinear,
//       .batch = &batch_elementwise<Prim::neg>,
//   };
//
// (prims/unary.cpp is the model to copy; docs/architecture.md walks through adding a primitive.)
//
// Registering puts each rule into the table of the floor that uses it -- the shape rule, kernel and
// impl into ir's evaluation table (ir/eval_rules.h), the JVP rule into interpreters/jvp.h's, the
// transpose rule into interpreters/transpose.h's, the batching rule into interpreters/vmap.h's, the
// sharding rule into interpreters/partition.h's -- and
// keeps the whole record here, where the registry tests (tests/test_registry.cpp) read it.
// Lowering rules live in lowering/, in a table of their own (prims/ never sees MLIR); `eager_only`
// records which primitives have none.
//
// Blocks register when the library loads (the tables are function-local statics, so the order of
// the translation units does not matter), before user code can bind anything.
#pragma once
#include <cstdint>

#include "ir/eval_rules.h"
#include "interpreters/donation.h"
#include "interpreters/jvp.h"
#include "interpreters/partition.h"
#include "interpreters/transpose.h"
#include "interpreters/vmap.h"

namespace fluxion {

/// Which operands a primitive is linear in, for fixed values of the others: the inputs its
/// transpose rule accepts as linear.
struct Linearity {
  /// Bit i: operand i; kEveryOperand: all of them, however many.
  uint32_t operands = 0;
  /// Linear in each listed operand, but not in two at once (the products mul and dot_general).
  bool one_at_a_time = false;
  /// The params decide which operands (sort: those after the keys; the primitives that hold
  /// sub-programs: those their programs are linear in).
  bool by_params = false;
  constexpr bool any() const { return operands != 0 || by_params; }
};
inline constexpr uint32_t kEveryOperand = ~0u;
inline constexpr Linearity kLinear{kEveryOperand};           // jointly in every operand
inline constexpr Linearity kLinearByParams{0, false, true};  // as the params say

/// How the GPU pipeline lowers a primitive (the registry test reports the column; the GPU op table,
/// on a GPU or the emulated one, checks every claim).
enum class GpuLowering : uint8_t {
  none,     // it does not
  generic,  // its lowering rule maps to blocks and threads (lowering/gpu_passes.cpp): the CPU's --
            // linalg on tensors with arith/math bodies -- as it is, or the rule's GPU form where it
            // has one (the scans and scatters: a thread per line, lowering/gpu_lines.h)
  library,  // its CPU lowering's library call becomes a step of the launch plan that a GPU library
            // does (runtime/gpu_library.h: dot_general's float GEMMs through cuBLAS); the cases
            // the CPU does not send to the library map as generic
};

/// One primitive's rules and facts. Fields are grouped by the floor that consumes them; designated
/// initialisers must follow this order (the compiler checks it), and every field may be omitted.
struct PrimitiveRules {
  Prim prim;
  // ---- evaluation (ir/eval_rules.h) ---------------------------------------------------------
  ShapeRule shape = nullptr;   // every primitive
  Kernel kernel = nullptr;     // the reference kernel...
  ImplRule impl = nullptr;     // ...or, for primitives that hold sub-programs, their interpretation
  std::span<const KernelParam> kernel_params = {};  // for a kernel compiled code calls
  /// An effect beyond the results (debug_callback): passes never drop, merge or hoist the eqn.
  bool effect = false;
  // ---- forward mode (interpreters/jvp.h) ------------------------------------------------------
  JvpRule jvp = nullptr;
  /// Piecewise constant (comparisons, floor, argmax, ...): the derivative is an explicit zero, and
  /// there is no JVP rule.
  bool zero_derivative = false;
  /// The JVP rule computes the primal outputs too (scan: its residuals come out of the same loop).
  bool jvp_computes_primal = false;
  // ---- reverse mode (interpreters/transpose.h) ------------------------------------------------
  TransposeRule transpose = nullptr;  // set exactly when `linear` names some operand
  Linearity linear = {};
  // ---- batching (interpreters/vmap.h) ---------------------------------------------------------
  BatchRule batch = nullptr;  // every primitive with operands
  // ---- partitioning for sharded jit (interpreters/partition.h) ---------------------------------
  /// Which layouts its operands must be in and its results then have; none: the partitioner
  /// computes it replicated (and the dump says so).
  ShardRule shard = nullptr;
  // ---- compilation (lowering/) ---------------------------------------------------------------
  /// No lowering: jit inlines the primitive away (custom derivatives, checkpoint) or refuses it
  /// with a CompileError (custom_vjp_linear).
  bool eager_only = false;
  /// How the GPU pipeline (lowering/pipeline_cuda.cpp) lowers it; `none` is a CompileError naming
  /// the primitive when a program holding it is compiled for a GPU (never a CPU fallback).
  GpuLowering gpu = GpuLowering::none;
  // ---- buffer donation (interpreters/donation.h) ---------------------------------------------------
  Reads reads = Reads::other;
};

/// Registers a block: `const Registration kName = PrimitiveRules{...};` at namespace scope.
struct Registration {
  Registration(const PrimitiveRules& rules);  // NOLINT: the block reads as an assignment
};

/// The record of p, as its block registered it.
const PrimitiveRules& rules(Prim p);
/// How many blocks registered p (the registry test wants exactly one for every primitive).
int registrations(Prim p);

}  // namespace fluxion
