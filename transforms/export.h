// fx::export_: ahead-of-time compilation of a function into an object file and a C header that a
// program links without Fluxion's compiler -- no LLVM, no MLIR at run time (docs/export.md):
//
//   auto exported = fx::export_(mlp, x_example);           // traced once: the types are fixed
//   exported.write_object("mlp.o");                        // the host CPU, or
//   exported.write_object("mlp_v3.o", "x86-64-v3");        // any CPU LLVM knows / x86-64 level
//   exported.write_header("mlp.h", "mlp_forward");         // void mlp_forward(const float* x, float* out)
//   std::string text = exported.serialized();              // ir/serialize.h: load back, compile later
//
//   auto e = fx::export_(mlp, fx::polymorphic_shapes("b, 784"));   // one object for every batch size
//   e.write_header("mlp.h", "mlp_forward");  // void mlp_forward(const float* in0, float* out0, int64_t b)
//
// cc main.c mlp.o libfluxion_aot_rt.a -lstdc++ -lm -lmvec -lpthread links it. Arrays the
// function closes over (weights) are written into the header as static data. The arguments may
// be example Arrays or AbstractArrays (only their types matter). Programs whose compiled code
// calls back into the library (sort, polygamma, debug callbacks) are refused with a CompileError.
#pragma once
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/poly_shapes.h"
#include "ir/program.h"
#include "ir/trace.h"
#include "transforms/make_ir.h"

namespace fluxion {

class Exported {
 public:
  /// `program`: what to compile (the jit's Program-level passes are applied here).
  explicit Exported(Program program);

  const Program& program() const { return program_; }
  /// The object's entry symbol (derived from the program, so that several exported functions can
  /// be linked into one program); write_header wraps it under the name the user chooses.
  const std::string& symbol() const { return symbol_; }
  /// Compiles for `cpu` ("" or "host": this machine; "x86-64-v3", "skylake", ...) and writes a
  /// relocatable ELF object. With `threads` > 1 its large loops and products run on that many
  /// OpenMP threads, and the program links the OpenMP runtime too (`-lomp`: docs/export.md).
  /// CompileError for an unknown CPU or an unexportable program, ValueError if the file cannot be
  /// written or `threads` < 1.
  void write_object(const std::string& path, const std::string& cpu = "", int threads = 1) const;
  /// Writes the C header declaring `entry(inputs..., outputs..., sizes...)` (a C identifier); a
  /// polymorphic program's entry takes each symbol's value (int64_t, sorted by name) last. With
  /// `sparse`, a constant mostly of zeros (pruned weights) is stored as a bitmap of its nonzero
  /// elements and their values where that takes under 3/4 of its bytes, unpacked at the first call
  /// (docs/export.md); without, every constant is written whole.
  void write_header(const std::string& path, const std::string& entry, bool sparse = true) const;
  /// The program and its constants as text (ir/serialize.h).
  std::string serialized() const;

 private:
  Program program_;
  std::string symbol_;
};

namespace export_detail {
/// An example argument: an Array as it is, an AbstractArray as an uninitialised array of its type.
inline Array example(const Array& a) { return a; }
inline Array example(const AbstractArray& a) { return make_uninitialized(a); }
template <class T>
  requires(!std::is_same_v<T, Array> && !std::is_same_v<T, AbstractArray>)
const T& example(const T& t) {
  return t;
}

/// The spec's types when no example is given: float32, every dim from the spec ("_" needs an
/// example: ValueError).
std::vector<AbstractArray> spec_avals(const PolymorphicShapes& ps);

template <class F, size_t... I>
constexpr bool takes_arrays(std::index_sequence<I...>) {
  return std::is_invocable_v<const F&, decltype((void)I, std::declval<const Array&>())...>;
}

/// f traced on `avals`, f taking N plain Arrays: the smallest N it is callable with.
template <size_t N, class F>
Program trace_on_specs(const F& f, const std::vector<AbstractArray>& avals) {
  if constexpr (N > 8) {
    throw ValueError("ValueError: export_: with polymorphic_shapes and no examples, f must take 1 to 8 Arrays; "
                     "give example arguments after the shapes for other signatures");
  } else if constexpr (takes_arrays<F>(std::make_index_sequence<N>{})) {
    if (avals.size() != N)
      throw ValueError("ValueError: export_: polymorphic_shapes gives " + std::to_string(avals.size()) +
                       " argument shapes, f takes " + std::to_string(N) + " Arrays");
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return detail::trace_with_avals(f, avals, ((void)I, Array())...).first;
    }(std::make_index_sequence<N>{});
  } else {
    return trace_on_specs<N + 1>(f, avals);
  }
}
}  // namespace export_detail

/// Traces f on the examples' types for export (see the top of this file).
template <class F, class... Args>
Exported export_(const F& f, const Args&... args) {
  return Exported(detail::trace_to_program(f, export_detail::example(args)...).first);
}

/// export_(f, fx::polymorphic_shapes("b, 784")): one object for every size of the symbols (see the
/// top). Without examples f takes one float32 Array per shape; with examples (after the shapes) the
/// arguments' trees and dtypes are theirs and their sizes must fit the shapes.
template <class F, class... Args>
Exported export_(const F& f, const PolymorphicShapes& shapes, const Args&... examples) {
  if constexpr (sizeof...(Args) == 0) {
    return Exported(export_detail::trace_on_specs<1>(f, export_detail::spec_avals(shapes)));
  } else {
    std::vector<Array> leaves;
    (tree::flatten_into(export_detail::example(examples), leaves), ...);
    std::vector<AbstractArray> actual;
    for (const Array& a : leaves) actual.push_back(a.aval());
    bind_symbols(shapes, actual, "export_");
    return Exported(detail::trace_with_avals(f, symbolic_avals(shapes, actual), export_detail::example(examples)...).first);
  }
}

}  // namespace fluxion
