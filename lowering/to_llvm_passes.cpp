#include "lowering/to_llvm_passes.h"

namespace fluxion::lowering {

std::string to_llvm_passes(const ToLlvmOptions& o) {
  std::string s =
      "fx-accurate-math,"
      "func.func(fx-math-approx),"
      "func.func(convert-vector-to-scf{full-unroll=1 target-rank=1}),";
  if (o.linalg_to_loops) s += "func.func(convert-linalg-to-loops),";
  s += "lower-affine,"
       "convert-scf-to-cf,"
       "canonicalize,cse,";
  s += o.reassociate_reductions ? "convert-vector-to-llvm{reassociate-fp-reductions=1}," : "convert-vector-to-llvm,";
  s += "func.func(convert-math-to-llvm),"
       "arith-expand{include-bf16=1},"
       "memref-expand,"
       "expand-strided-metadata,"
       // expand-strided-metadata makes affine.apply ops of its own.
       "lower-affine,"
       "finalize-memref-to-llvm{use-generic-functions=1},"
       "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},";
  if (o.complex) s += "convert-complex-to-llvm,";
  s += "convert-arith-to-llvm,"
       "convert-index-to-llvm,"
       "convert-cf-to-llvm,";
  if (o.openmp) s += "convert-openmp-to-llvm,";
  s += "reconcile-unrealized-casts";
  // Last: the translation outlines each parallel region at a cost of its enclosing function's size.
  return o.openmp ? s + ",fx-outline-parallel" : s;
}

}  // namespace fluxion::lowering
